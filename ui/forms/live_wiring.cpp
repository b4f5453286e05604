#include "forms/live_wiring.h"

#include "views/block_map_view.h"
#include "views/block_scale_view.h"
#include "views/error_heatmap_view.h"
#include "forms/experiment_panel.h"
#include "forms/live_experiment.h"
#include "main_window.h"
#include "session/run_access.h"
#include "session/session_document.h"

#include <QAction>
#include <QEvent>
#include <QKeySequence>
#include <QStatusBar>

#include <cmath>
#include <functional>
#include <memory>

namespace fp8lab::ui {

namespace {

/// Hands a live result to a view that shows one GEMM run: at once when the view is on screen, else
/// when it is next shown (the newest result then), so that hidden tabs cost the update nothing.
class LiveDelivery : public QObject {
public:
  LiveDelivery(View* view, std::function<void(std::shared_ptr<RunAccess>)> apply, QObject* parent)
      : QObject(parent), view_(view), apply_(std::move(apply)) {
    view_->installEventFilter(this);
  }
  void deliver(std::shared_ptr<RunAccess> access) {
    if (view_->isVisible()) {
      pending_.reset();
      apply_(std::move(access));
    } else {
      pending_ = std::move(access);
    }
  }
  /// The view follows the session again: a pending live result is dropped.
  void clear() { pending_.reset(); }
  bool eventFilter(QObject* o, QEvent* e) override {
    if (o == view_ && e->type() == QEvent::Show && pending_) {
      auto access = std::move(pending_);
      pending_.reset();
      apply_(std::move(access));
    }
    return false;
  }

private:
  View* view_;
  std::function<void(std::shared_ptr<RunAccess>)> apply_;
  std::shared_ptr<RunAccess> pending_;
};

/// The deliveries of a window: the views that show one GEMM run.
QList<LiveDelivery*> deliveries(MainWindow* w, QObject* parent) {
  QList<LiveDelivery*> d;
  if (auto* v = qobject_cast<ErrorHeatmapView*>(w->view(QStringLiteral("heatmap"))))
    d << new LiveDelivery(
        v, [v](std::shared_ptr<RunAccess> a) { v->setRunAccess(std::move(a)); }, parent);
  if (auto* v = qobject_cast<BlockScaleView*>(w->view(QStringLiteral("block_scales"))))
    d << new LiveDelivery(
        v, [v](std::shared_ptr<RunAccess> a) { v->setRunAccess(std::move(a)); }, parent);
  if (auto* v = qobject_cast<BlockMapView*>(w->view(QStringLiteral("block_map"))))
    d << new LiveDelivery(
        v, [v](std::shared_ptr<RunAccess> a) { v->setRunAccess(std::move(a)); }, parent);
  return d;
}

/// Back to following the session (live mode off, or a live result kept).
void followSession(MainWindow* w, const QList<LiveDelivery*>& d) {
  for (LiveDelivery* x : d) x->clear();
  for (const char* id : {"heatmap", "block_scales", "block_map"})
    if (View* v = w->view(QString::fromLatin1(id))) v->setSession(w->session());
}

QString limitText(const LiveExperiment* live) {
  // The cube sign is appended after arg(): QString::arg would read it as a digit of the placeholder.
  return QObject::tr("up to M\u00b7N\u00b7K = %1").arg(std::cbrt(live->workLimit()), 0, 'f', 0) +
         QStringLiteral("\u00b3");
}

} // namespace

LiveExperiment* attachLiveExperiment(MainWindow* w) {
  auto* live = new LiveExperiment(w->experimentRunner(), w);
  ExperimentPanel* panel = w->experimentPanel();
  const QList<LiveDelivery*> views = deliveries(w, live);
  live->setEnabled(panel->isLive());
  // The panel sets its own first status line. (Setting the label's text here, while the window is
  // still being built, leaves Qt 6.4's accessibility cache an interface that crashes when the
  // window is destroyed.)

  QObject::connect(panel, &ExperimentPanel::configChanged, live, [w, live, panel](const QJsonObject& c) {
    if (panel->currentTab() != ExperimentPanel::Tab::Gemm || !live->isEnabled()) return;
    for (const ConfigProblem& p : panel->problems())
      if (p.blocking) {
        panel->setLiveStatus(QObject::tr("Live: waiting for a valid configuration (%1)").arg(p.reason),
                             live->last().has_value());
        return;
      }
    GemmRunRequest request{c, panel->backend()};
    request.config[QStringLiteral("name")] = w->session()->nextRunId();
    live->setRunner(w->experimentRunner());
    live->request(request);
  });
  QObject::connect(live, &LiveExperiment::runStarted, panel, [panel, live] {
    panel->setLiveStatus(QObject::tr("Live: updating\u2026"), live->last().has_value());
  });
  QObject::connect(live, &LiveExperiment::updated, w, [live, panel, views](const JobResult& r, qint64 ms) {
    RunRecord rec = r.run;
    rec.label = QObject::tr("live, not kept");
    const auto access = RunAccess::forRecord(rec, QString());
    for (LiveDelivery* d : views) d->deliver(access);
    panel->setLiveStatus(QObject::tr("Live (%1): updated %2, in %3 ms. Not in the session: Keep (Ctrl+K) adds it.")
                             .arg(limitText(live), live->lastTime().toString(QStringLiteral("HH:mm:ss")))
                             .arg(ms),
                         true);
  });
  QObject::connect(live, &LiveExperiment::skipped, panel, [panel, live](const QString& why) {
    panel->setLiveStatus(QObject::tr("Live: %1.").arg(why), live->last().has_value());
  });
  QObject::connect(live, &LiveExperiment::failed, panel, [panel, live](const QString& why) {
    panel->setLiveStatus(QObject::tr("Live run failed: %1").arg(why), live->last().has_value());
  });
  QObject::connect(panel, &ExperimentPanel::liveToggled, live, [w, live, panel, views](bool on) {
    live->setEnabled(on);
    if (!on) {
      followSession(w, views);
      panel->setLiveStatus(QObject::tr("Live off: press Run to run the experiment."), false);
      return;
    }
    panel->setLiveStatus(QObject::tr("Live %1.").arg(limitText(live)), false);
    Q_EMIT panel->configChanged(panel->config());
  });
  auto keep = [w, live, panel, views] {
    std::optional<JobResult> r = live->keepLast();
    if (!r) {
      w->statusBar()->showMessage(QObject::tr("No live result to keep"), 3000);
      return;
    }
    RunRecord rec = r->run;
    // The id was the session's next one when the run started; another run may have taken it.
    if (w->session()->indexOf(rec.id) >= 0) {
      rec.id = w->session()->nextRunId();
#ifdef FP8LAB_HAVE_HDF5
      if (rec.core) {
        auto c = std::make_shared<fp8lab::Run>(*rec.core);
        c->id = rec.id.toStdString();
        rec.core = c;
      }
#endif
    }
    w->session()->addRun(rec);
    w->session()->setCurrentRun(w->session()->indexOf(rec.id));
    followSession(w, views);
    panel->setLiveStatus(QObject::tr("Kept as %1 (%2). Change a field to continue live.").arg(rec.label, rec.id),
                         false);
    w->statusBar()->showMessage(QObject::tr("Live result kept: %1").arg(rec.id), 5000);
  };
  QObject::connect(panel, &ExperimentPanel::keepRequested, w, keep);
  auto* act = new QAction(QObject::tr("&Keep live result"), w);
  act->setObjectName(QStringLiteral("keepLiveAction"));
  act->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_K));
  act->setShortcutContext(Qt::WindowShortcut);
  QObject::connect(act, &QAction::triggered, w, keep);
  w->addAction(act);
  return live;
}

} // namespace fp8lab::ui
