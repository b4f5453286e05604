#include "views/amax_history_view.h"
#include "session/run_box.h"
#include "session/session_paths.h"

#include "plot/plot_util.h"
#include "plot/qcp.h"
#include "session/run_model.h"
#include "session/run_sites.h"
#include "session/session_document.h"
#include "plot/style.h"
#include "views/view_registry.h"
#include "views/view_render.h"

#include "experiment/param_schema.h"

#include <QComboBox>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QSpinBox>
#include <QStyle>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cmath>

namespace fp8lab::ui {

std::vector<int64_t> findSpikes(const std::vector<double>& amax, double factor, int lookback) {
  std::vector<int64_t> out;
  std::vector<double> w;
  for (size_t s = 1; s < amax.size(); ++s) {
    const size_t a = s >= size_t(lookback) ? s - size_t(lookback) : 0;
    w.assign(amax.begin() + std::ptrdiff_t(a), amax.begin() + std::ptrdiff_t(s));
    w.erase(std::remove_if(w.begin(), w.end(), [](double x) { return !std::isfinite(x) || x <= 0; }), w.end());
    if (w.empty() || !std::isfinite(amax[s])) continue;
    std::nth_element(w.begin(), w.begin() + std::ptrdiff_t(w.size() / 2), w.end());
    const double med = w[w.size() / 2];
    if (amax[s] > factor * med) out.push_back(int64_t(s));
  }
  return out;
}

std::vector<double> demoAmaxSequence(int64_t steps) {
  std::vector<double> a(size_t(std::max<int64_t>(0, steps)));
  uint64_t x = 0x9E3779B97F4A7C15ull;
  double level = 0;
  for (int64_t s = 0; s < steps; ++s) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17; // xorshift64
    const double u = double(x >> 11) / double(1ull << 53) - 0.5;
    level = 0.98 * level + 0.05 * u; // slow log-level wander
    a[size_t(s)] = 2.0 * std::exp(level + 0.1 * u) * (1.0 - 0.3 * double(s) / double(steps));
  }
  if (steps >= 8) {
    a[size_t(steps / 4)] *= 30;
    a[size_t(steps / 2)] *= 12;
    a[size_t(3 * steps / 4)] *= 50;
  }
  return a;
}

AmaxHistoryView::AmaxHistoryView(QWidget* parent) : AnalysisView(RunCap::Histories, parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  auto* bar = new QHBoxLayout;
  auto label = [&](const QString& t, QWidget* buddy) { addLabeled(bar, t, buddy); };
  addRunBox(bar);
  runs()->setExtraItem(tr("Simulated amax sequence (demo)"));
  // After a load, open on a run that kept amax windows (delayed scaling): the session's default
  // current run is often an FP32 baseline or a current-scaling run, whose window is a what-if.
  runs()->setPreferred([this](const QString& id) {
    const int i = session_ ? session_->indexOf(id) : -1;
    return i >= 0 && layout::hasAmaxWindows(
                         layoutPaths(RunAccess::forRecord(session_->run(i), session_->fileName())->datasets()));
  });
  tensor_box_ = new QComboBox(this);
  tensor_box_->setObjectName(QStringLiteral("tensor"));
  label(tr("&Tensor:"), tensor_box_);
  bar->addStretch(1);
  v->addLayout(bar);
  bar = new QHBoxLayout; // second row: the what-if
  preset_box_ = new QComboBox(this);
  preset_box_->setObjectName(QStringLiteral("preset"));
  preset_box_->addItem(tr("Flax (dequant scale)"), int(DelayedPreset::Flax));
  preset_box_->addItem(tr("TE (quant scale)"), int(DelayedPreset::TE));
  label(tr("What-if: &preset"), preset_box_);
  len_spin_ = new QSpinBox(this);
  len_spin_->setObjectName(QStringLiteral("historyLen"));
  // The amax history length every front end takes (core's parameter schema).
  const ParamSpec& history_len = param("history_len", ParamScope::None);
  len_spin_->setRange(int(history_len.min), int(history_len.max));
  len_spin_->setToolTip(tr("Amax history length L (window of the L most recent amaxes)"));
  label(tr("&window L"), len_spin_);
  algo_box_ = new QComboBox(this);
  algo_box_->setObjectName(QStringLiteral("algo"));
  algo_box_->addItem(tr("max"), int(AmaxAlgo::Max));
  algo_box_->addItem(tr("most recent"), int(AmaxAlgo::MostRecent));
  label(tr("&algo"), algo_box_);
  margin_spin_ = new QSpinBox(this);
  margin_spin_->setObjectName(QStringLiteral("margin"));
  margin_spin_->setRange(0, 16);
  margin_spin_->setToolTip(tr("Scale divided by 2^margin"));
  label(tr("&margin"), margin_spin_);
  bar->addStretch(1);
  v->addLayout(bar);

  auto* sbar = new QHBoxLayout;
  play_ = new QToolButton(this);
  play_->setObjectName(QStringLiteral("play"));
  play_->setCheckable(true);
  // Icons from the style, not U+25B6 / U+23F8 in the label: many fonts have no pause glyph.
  play_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  play_->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
  play_->setText(tr("Play"));
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setObjectName(QStringLiteral("step"));
  step_spin_ = new QSpinBox(this);
  step_spin_->setObjectName(QStringLiteral("stepSpin"));
  sbar->addWidget(play_);
  sbar->addWidget(new QLabel(tr("Step:"), this));
  sbar->addWidget(slider_, 1);
  sbar->addWidget(step_spin_);
  v->addLayout(sbar);

  plot_ = new QCustomPlot(this);
  plot_->setAutoAddPlottableToLegend(false); // each plot builds its own legends
  plot_->setObjectName(QStringLiteral("amaxPlot"));
  plot_->setMinimumSize(500, 360);
  v->addWidget(plot_, 1);
  info_ = new QLabel(this);
  info_->setObjectName(QStringLiteral("info"));
  info_->setWordWrap(true);
  v->addWidget(info_);

  timer_ = new QTimer(this);
  timer_->setInterval(33);
  connect(timer_, &QTimer::timeout, this, [this] {
    if (amax_.empty()) return setPlaying(false);
    const int64_t inc = std::max<int64_t>(1, steps() / 600);
    if (step_ + inc >= steps()) {
      setStep(steps() - 1);
      setPlaying(false);
    } else
      setStep(step_ + inc);
  });
  connect(play_, &QToolButton::toggled, this, &AmaxHistoryView::setPlaying);
  connect(slider_, &QSlider::valueChanged, this, [this](int s) { setStep(s); });
  connect(step_spin_, qOverload<int>(&QSpinBox::valueChanged), this, [this](int s) { setStep(s); });
  connect(tensor_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) showTensor(tensor_box_->currentData().toString(), true);
  });
  auto edited = [this] {
    if (updating_) return;
    DelayedScalingConfig c;
    c.preset = DelayedPreset(preset_box_->currentData().toInt());
    c.history_len = len_spin_->value();
    c.algo = AmaxAlgo(algo_box_->currentData().toInt());
    if (c.preset == DelayedPreset::Flax && c.algo == AmaxAlgo::MostRecent) {
      // Flax has only max (fp8_ops.compute_amax_history); show TE for most-recent.
      c.preset = DelayedPreset::TE;
    }
    c.margin = margin_spin_->value();
    setWhatIf(c);
  };
  connect(preset_box_, &QComboBox::currentIndexChanged, this, edited);
  connect(algo_box_, &QComboBox::currentIndexChanged, this, edited);
  connect(len_spin_, qOverload<int>(&QSpinBox::valueChanged), this, edited);
  connect(margin_spin_, qOverload<int>(&QSpinBox::valueChanged), this, edited);

  // Plot: window bars on top, the whole run below (shared nothing but the step marker).
  plot_->plotLayout()->clear();
  setRunAccess(nullptr);
}

void AmaxHistoryView::runChosen(Read read) {
  showRun(read != Read::Now);
}

void AmaxHistoryView::drawEmptyState(const QString&) {
  // drawAll() shows emptyText() while no run is shown
  drawAll();
}

void AmaxHistoryView::showRun(bool pool_if_big) {
  std::shared_ptr<RunAccess> a;
  const QString id = runs()->currentId();
  if (session_ && !id.isEmpty()) {
    const int i = session_->indexOf(id);
    if (i >= 0) a = RunAccess::forRecord(session_->run(i), session_->fileName());
  }
  run_ = std::move(a);
  // No run and not the simulated sequence: the session's current run is one this view cannot show.
  if (!run_ && session_ && !runs()->extraShown())
    showEmpty(noRunText(tr("No training run in this session: the simulated sequence is in the Run box.")));
  else
    clearEmpty();
  QStringList ts = tensors();
  updating_ = true;
  tensor_box_->clear();
  for (const QString& t : ts) tensor_box_->addItem(t, t);
  tensor_box_->setEnabled(!ts.isEmpty());
  updating_ = false;
  showTensor(ts.isEmpty() ? QString() : ts.first(), pool_if_big);
}

void AmaxHistoryView::setRunAccess(std::shared_ptr<RunAccess> run) {
  updating_ = true;
  runs()->showOnly(run ? run->id() : QString());
  if (!run) runs()->box()->addItem(tr("Simulated amax sequence (demo)"), QString());
  updating_ = false;
  clearEmpty();
  run_ = std::move(run);
  QStringList ts = tensors();
  updating_ = true;
  tensor_box_->clear();
  for (const QString& t : ts) tensor_box_->addItem(t, t);
  tensor_box_->setEnabled(!ts.isEmpty());
  updating_ = false;
  showTensor(ts.isEmpty() ? QString() : ts.first(), false);
}

bool AmaxHistoryView::showOperand(const QString& runId, const QString& operand, qint64 step) {
  if (!run_ || run_->id() != runId) {
    if (runId.isEmpty() || !runs()->select(runId)) return false;
    showRun(false);
  }
  if (!operand.isEmpty() && operand != tensor_ && !setTensor(operand)) return false;
  setStep(step);
  return true;
}

QStringList AmaxHistoryView::tensors() const {
  if (!run_) return {};
  QStringList out = viewNames(layout::historyOperands(layoutPaths(run_->datasets())));
  sortOperandPaths(&out, runSites(*run_));
  return out;
}

QString AmaxHistoryView::tensor() const {
  return tensor_;
}

bool AmaxHistoryView::setTensor(const QString& t) {
  return showTensor(t, false);
}

bool AmaxHistoryView::showTensor(const QString& t, bool pool_if_big) {
  if (run_ && !t.isEmpty() && !tensors().contains(t)) return false;
  tensor_ = t;
  const int i = tensor_box_->findData(t);
  if (i >= 0 && tensor_box_->currentIndex() != i) {
    updating_ = true;
    tensor_box_->setCurrentIndex(i);
    updating_ = false;
  }
  loadTensor(pool_if_big);
  return true;
}

void AmaxHistoryView::loadTensor(bool pool_if_big) {
  amax_.clear();
  rec_scale_.clear();
  saturated_.clear();
  rec_hist_ = {};
  ++windows_generation_;
  reading_windows_ = false;
  note_.clear();
  QStringList missing;
  DelayedScalingConfig c;
  format_ = &Format::E4M3FN();
  // An FP32 baseline records amaxes only: it used no scale and kept no window.
  scaled_ = !run_ || run_->attr(QStringLiteral("precision")) != QStringLiteral("fp32");
  windowed_ = !run_;
  if (!run_ && !emptyText().isEmpty()) {
    // no run shown, and not the simulated sequence: drawAll shows the empty state
  } else if (!run_) {
    amax_ = demoAmaxSequence(600);
    c.preset = DelayedPreset::Flax;
    c.history_len = 64;
    note_ = tr("Simulated amax sequence (no training run chosen): 600 steps with spikes at 150, 300 and 450; E4M3FN.");
  } else if (!tensor_.isEmpty()) {
    const std::string op = layoutName(tensor_);
    const QString g = sessionPath(layout::history(op));
    Block b;
    QString err;
    if (run_->readAll(sessionPath(layout::historyAmax(op)), &b, &err))
      amax_ = b.v;
    else
      missing << err;
    if (run_->has(sessionPath(layout::historyScale(op))) &&
        run_->readAll(sessionPath(layout::historyScale(op)), &b, &err))
      rec_scale_ = b.v;
    else if (scaled_)
      missing << sessionPath(layout::historyScale(op));
    if (run_->has(sessionPath(layout::historySaturated(op))) &&
        run_->readAll(sessionPath(layout::historySaturated(op)), &b, &err))
      for (double x : b.v) saturated_.push_back(int64_t(x));
    // The per-step histories are one value a step (a few thousand: read at once, ≤ 9 ms for all of a
    // 10-epoch run's); the windows are L values a step (1407 × 1024 for the default experiment,
    // 6–49 ms to read; 4690 × 1024 for 10 epochs, 53–99 ms).
    const QString hist = sessionPath(layout::historyAmaxHistory(op));
    const QString scaling = run_->groupAttr(g, QStringLiteral("scaling")).toLower();
    int64_t window_len = 0;
    windowed_ = run_->has(hist);
    if (run_->has(hist)) {
      const auto [hr, hc] = run_->dims(hist);
      window_len = hc;
      if (pool_if_big && hr * hc > kBackgroundReadElements)
        readWindowsInBackground(hist);
      else if (!run_->readAll(hist, &rec_hist_, &err))
        missing << err;
    } else if (scaled_ && scaling.contains(QStringLiteral("delayed"))) {
      missing << tr("%1/amax_history (recorded under delayed scaling)").arg(g);
    }
    const QString fmt = run_->groupAttr(g, QStringLiteral("format"));
    if (const Format* f = Format::byName(fmt.toStdString()); f && f->bits() <= 8) format_ = f;
    c.preset = scaling.contains(QStringLiteral("te")) && !scaling.contains(QStringLiteral("flax"))
                   ? DelayedPreset::TE
                   : DelayedPreset::Flax;
    const int L = run_->groupAttr(g, QStringLiteral("history_len")).toInt();
    c.history_len = L > 0 ? L : (window_len > 0 ? int(window_len) : 16);
    if (scaled_ && !windowed_ && !scaling.contains(QStringLiteral("delayed")))
      note_ = tr("%1, %2 scaling recorded: it keeps no amax history, so the window bars and the dashed curve are "
                 "the what-if (delayed scaling replayed on these amaxes)%3")
                  .arg(QString::fromStdString(format_->name()), scaling.isEmpty() ? tr("unknown") : scaling,
                       run_->config().contains(QStringLiteral("recipe"))
                           ? tr("; the recorded dequant scale of a block recipe is the lower median of its block "
                                "scales")
                           : QString());
    else if (scaled_)
      note_ = tr("%1, %2 scaling recorded%3")
                  .arg(QString::fromStdString(format_->name()), scaling.isEmpty() ? tr("unknown") : scaling,
                       L > 0 ? tr(", history %1").arg(L) : QString());
    else
      note_ = tr("FP32 run: no scaling, so no scale and no window were recorded; the window bars and the dashed "
                 "curve are the what-if (delayed scaling replayed on these amaxes, %1)")
                  .arg(QString::fromStdString(format_->name()));
  }
  if (run_ && run_->type() == QStringLiteral("training")) {
    const QString steps = stepsDoneText(*run_, int64_t(amax_.size()));
    if (steps.contains(QLatin1Char('('))) note_ += tr(" \u00b7 ") + steps; // stopped before its plan
  }
  if (!missing.isEmpty())
    note_ += tr(" \u00b7 <span style='color:#b00020'>missing: %1</span>")
                 .arg(missing.join(QStringLiteral("; ")).toHtmlEscaped());
  spikes_ = findSpikes(amax_);
  updating_ = true;
  preset_box_->setCurrentIndex(preset_box_->findData(int(c.preset)));
  len_spin_->setValue(c.history_len);
  algo_box_->setCurrentIndex(algo_box_->findData(int(c.algo)));
  margin_spin_->setValue(c.margin);
  const int n = int(std::max<size_t>(1, amax_.size()) - 1);
  slider_->setRange(0, n);
  step_spin_->setRange(0, n);
  updating_ = false;
  cfg_ = c;
  step_ = std::min<int64_t>(step_, n);
  // Start at the first spike's window when there is one, so the view shows what it is for.
  if (!spikes_.empty()) step_ = std::min<int64_t>(n, spikes_.front() + std::min<int64_t>(c.history_len / 2, 40));
  updating_ = true;
  slider_->setValue(int(step_));
  step_spin_->setValue(int(step_));
  updating_ = false;
  simulate();
}

void AmaxHistoryView::readWindowsInBackground(const QString& path) {
  struct Result {
    Block windows;
    QString error;
  };
  const quint64 gen = windows_generation_;
  reading_windows_ = true;
  auto* watcher = new QFutureWatcher<Result>(this);
  connect(watcher, &QFutureWatcher<Result>::finished, this, [this, watcher, gen] {
    watcher->deleteLater();
    if (gen != windows_generation_) return; // another run or tensor was chosen meanwhile
    reading_windows_ = false;
    Result r = watcher->result();
    if (r.error.isEmpty())
      rec_hist_ = std::move(r.windows);
    else
      note_ += tr(" \u00b7 <span style='color:#b00020'>missing: %1</span>").arg(r.error.toHtmlEscaped());
    setInfo();
  });
  watcher->setFuture(QtConcurrent::run([run = run_, path] {
    Result r;
    if (!run->readAll(path, &r.windows, &r.error) && r.error.isEmpty()) r.error = path;
    return r;
  }));
}

void AmaxHistoryView::setWhatIf(const DelayedScalingConfig& c) {
  cfg_ = c;
  if (cfg_.preset == DelayedPreset::Flax) cfg_.algo = AmaxAlgo::Max;
  updating_ = true;
  preset_box_->setCurrentIndex(preset_box_->findData(int(cfg_.preset)));
  len_spin_->setValue(cfg_.history_len);
  algo_box_->setCurrentIndex(algo_box_->findData(int(cfg_.algo)));
  margin_spin_->setValue(cfg_.margin);
  updating_ = false;
  simulate();
}

void AmaxHistoryView::simulate() {
  sim_scale_.clear();
  sim_hist_.clear();
  if (!amax_.empty()) {
    const auto ups = DelayedScaling::simulate(*format_, cfg_, amax_, &sim_hist_);
    sim_scale_.reserve(ups.size());
    // Dequant scale used for each step's tensor: Flax stores dequant; TE stores quant (used = the
    // scale before its end-of-step update, delayed_scaling.h "Timing").
    for (const auto& u : ups)
      sim_scale_.push_back(cfg_.preset == DelayedPreset::Flax ? double(u.scale_used) : 1.0 / double(u.scale_used));
  }
  drawAll();
}

std::vector<float> AmaxHistoryView::window() const {
  if (step_ < 0 || size_t(step_) >= sim_hist_.size()) return {};
  return sim_hist_[size_t(step_)];
}

std::vector<float> AmaxHistoryView::recordedWindow() const {
  if (rec_hist_.rows <= step_ || rec_hist_.cols == 0) return {};
  std::vector<float> w(size_t(rec_hist_.cols));
  for (int64_t k = 0; k < rec_hist_.cols; ++k) w[size_t(k)] = float(rec_hist_.at(step_, k));
  return w;
}

double AmaxHistoryView::takenValue() const {
  std::vector<float> w = window();
  if (w.empty()) return 0;
  // TE keeps its staging slot last (cleared after the update): not part of the next window.
  if (cfg_.preset == DelayedPreset::TE && w.size() > 1) w.pop_back();
  if (cfg_.algo == AmaxAlgo::MostRecent) return w.back();
  return *std::max_element(w.begin(), w.end());
}

void AmaxHistoryView::setPlaying(bool on) {
  if (on && amax_.empty()) on = false;
  if (on && step_ >= steps() - 1) setStep(0);
  if (on)
    timer_->start();
  else
    timer_->stop();
  play_->blockSignals(true);
  play_->setChecked(on);
  play_->setIcon(style()->standardIcon(on ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
  play_->setText(on ? tr("Pause") : tr("Play"));
  play_->blockSignals(false);
}

bool AmaxHistoryView::isPlaying() const {
  return timer_->isActive();
}

void AmaxHistoryView::setStep(int64_t t) {
  t = std::clamp<int64_t>(t, 0, std::max<int64_t>(0, steps() - 1));
  if (t == step_ && bars_) return;
  step_ = t;
  updating_ = true;
  slider_->setValue(int(t));
  step_spin_->setValue(int(t));
  updating_ = false;
  drawStep();
}

void AmaxHistoryView::drawAll() {
  plot_->clearPlottables();
  plot_->clearItems();
  plot_->plotLayout()->clear();
  bars_ = spike_bars_ = taken_bar_ = nullptr;
  taken_line_ = step_line_ = nullptr;
  taken_text_ = nullptr;
  if (amax_.empty() && !emptyText().isEmpty()) {
    plotEmptyState(plot_, emptyText());
    info_->setText(emptyText().section(QLatin1Char('\n'), 0, 0));
    plot_->replot();
    return;
  }
  if (amax_.empty()) {
    plotEmptyState(plot_, tr("This run has no amax history for the chosen tensor.\n"
                             "Train with FP8 (fp8lab-cli train, or resources/experiments/default.json) to record one,\n"
                             "or choose \u201cSimulated amax sequence\u201d above."));
    setInfo();
    plot_->replot();
    return;
  }
  auto* layout = plot_->plotLayout();
  top_ = new QCPAxisRect(plot_);
  bottom_ = new QCPAxisRect(plot_);
  const QString who = run_ ? tr("%1 · %2").arg(run_->id(), tensor_) : tr("simulated amax sequence");
  auto* title = new QCPTextElement(plot_,
                                   (!scaled_     ? tr("Amax history window — %1 (FP32 run; what-if in %2)")
                                    : !windowed_ ? tr("Amax history window — %1 (no window recorded; what-if in %2)")
                                                 : tr("Amax history window — %1 (%2)"))
                                       .arg(who, QString::fromStdString(format_->name())),
                                   QFont(font().family(), 10, QFont::Bold));
  // Legends in rows of their own, beside no data: the window bars reach the top right corner
  // and the spike markers the bottom one.
  auto* topLegend = new QCPLegend;
  auto* legend = new QCPLegend;
  layout->addElement(0, 0, title);
  layout->addElement(1, 0, topLegend);
  layout->addElement(2, 0, top_);
  layout->addElement(3, 0, bottom_);
  layout->addElement(4, 0, legend);
  layout->setRowStretchFactors({0.001, 0.001, 1.0, 1.0, 0.001});
  for (QCPLegend* l : {topLegend, legend}) {
    l->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    l->setWrap(3);
    l->setBorderPen(Qt::NoPen);
    l->setLayer(QStringLiteral("legend"));
  }
  auto* group = new QCPMarginGroup(plot_);
  top_->setMarginGroup(QCP::msLeft | QCP::msRight, group);
  bottom_->setMarginGroup(QCP::msLeft | QCP::msRight, group);
  QCPAxis* tx = top_->axis(QCPAxis::atBottom);
  QCPAxis* ty = top_->axis(QCPAxis::atLeft);
  tx->setLabel(tr("step at which the amax was recorded (window after step t, oldest left)"));
  ty->setLabel(tr("amax (tensor units)"));
  bars_ = new QCPBars(tx, ty);
  bars_->setName(tr("amax in the window"));
  bars_->setPen(Qt::NoPen);
  bars_->setBrush(QColor(0x56, 0x8f, 0xc8));
  bars_->setWidthType(QCPBars::wtPlotCoords);
  bars_->setWidth(0.9);
  spike_bars_ = new QCPBars(tx, ty);
  spike_bars_->setName(tr("spike (amax > 2\u00d7 median of the previous 16 steps)"));
  spike_bars_->setPen(Qt::NoPen);
  spike_bars_->setBrush(QColor(0xd5, 0x5e, 0x00));
  spike_bars_->setWidthType(QCPBars::wtPlotCoords);
  spike_bars_->setWidth(0.9);
  taken_bar_ = new QCPBars(tx, ty);
  taken_bar_->setName(tr("value the strategy takes"));
  taken_bar_->setPen(QPen(Qt::black, 1.5));
  taken_bar_->setBrush(Qt::NoBrush);
  taken_bar_->setWidthType(QCPBars::wtPlotCoords);
  taken_bar_->setWidth(0.9);
  taken_line_ = new QCPItemStraightLine(plot_);
  taken_line_->setClipAxisRect(top_);
  taken_line_->point1->setAxes(tx, ty);
  taken_line_->point2->setAxes(tx, ty);
  taken_line_->setPen(QPen(Qt::black, 1, Qt::DashLine));
  taken_text_ = new QCPItemText(plot_);
  taken_text_->setClipAxisRect(top_);
  taken_text_->position->setType(QCPItemPosition::ptAxisRectRatio);
  taken_text_->position->setAxisRect(top_);
  taken_text_->position->setCoords(0.01, 0.02);
  taken_text_->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
  taken_text_->setTextAlignment(Qt::AlignLeft);
  taken_text_->setBrush(QColor(255, 255, 255, 220));
  taken_text_->setPadding(QMargins(4, 2, 4, 2));
  for (auto* b : {bars_, spike_bars_, taken_bar_}) b->addToLegend(topLegend);

  // Bottom: the whole run.
  QCPAxis* bx = bottom_->axis(QCPAxis::atBottom);
  QCPAxis* by = bottom_->axis(QCPAxis::atLeft);
  bx->setLabel(tr("training step"));
  by->setLabel(tr("amax, dequant scale (1)"));
  by->setScaleType(QCPAxis::stLogarithmic);
  by->setTicker(distinctLogTicker());
  by->setNumberFormat(QStringLiteral("eb"));
  by->setNumberPrecision(0);
  QVector<double> xs(int(amax_.size())), ya(int(amax_.size()));
  for (int i = 0; i < xs.size(); ++i) {
    xs[i] = i;
    ya[i] = amax_[size_t(i)] > 0 ? amax_[size_t(i)] : std::nan("");
  }
  auto* ga = new QCPGraph(bx, by);
  ga->setName(tr("amax"));
  ga->setPen(QPen(QColor(0x99, 0x99, 0x99), 1));
  ga->setData(xs, ya, true);
  if (!rec_scale_.empty()) {
    QVector<double> ys(int(rec_scale_.size())), xr(int(rec_scale_.size()));
    for (int i = 0; i < ys.size(); ++i) {
      xr[i] = i;
      ys[i] = rec_scale_[size_t(i)] > 0 ? rec_scale_[size_t(i)] : std::nan("");
    }
    auto* gr = new QCPGraph(bx, by);
    gr->setName(tr("recorded dequant scale"));
    gr->setPen(QPen(colors::series(0), 2));
    gr->setData(xr, ys, true);
  }
  QVector<double> yw(int(sim_scale_.size()));
  for (int i = 0; i < yw.size(); ++i) yw[i] = sim_scale_[size_t(i)] > 0 ? sim_scale_[size_t(i)] : std::nan("");
  auto* gw = new QCPGraph(bx, by);
  gw->setName(tr("what-if dequant scale (%1, L=%2, %3, margin %4)")
                  .arg(QString::fromLatin1(toString(cfg_.preset)))
                  .arg(cfg_.history_len)
                  .arg(QString::fromLatin1(toString(cfg_.algo)))
                  .arg(cfg_.margin));
  gw->setPen(QPen(colors::series(1), 1.5, Qt::DashLine));
  gw->setData(xs.mid(0, yw.size()), yw, true);
  // Spikes: where they enter and leave the what-if window.
  const int64_t L = cfg_.history_len - (cfg_.preset == DelayedPreset::TE ? 1 : 0);
  QVector<double> ex, ey, lx, ly;
  for (int64_t s : spikes_) {
    ex << double(s);
    ey << amax_[size_t(s)];
    const int64_t leave = s + std::max<int64_t>(1, L);
    if (leave < steps()) {
      lx << double(leave);
      ly << amax_[size_t(s)];
    }
  }
  auto* ge = new QCPGraph(bx, by);
  ge->setName(tr("spike enters the window"));
  ge->setLineStyle(QCPGraph::lsNone);
  ge->setScatterStyle(
      QCPScatterStyle(QCPScatterStyle::ssTriangle, QColor(0xd5, 0x5e, 0x00), QColor(0xd5, 0x5e, 0x00), 8));
  ge->setData(ex, ey);
  auto* gl = new QCPGraph(bx, by);
  gl->setName(tr("spike leaves the window"));
  gl->setLineStyle(QCPGraph::lsNone);
  gl->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangleInverted, QColor(0xd5, 0x5e, 0x00), Qt::white, 8));
  gl->setData(lx, ly);
  if (!saturated_.empty()) {
    QVector<double> sx, sy;
    for (size_t i = 0; i < saturated_.size() && i < amax_.size(); ++i)
      if (saturated_[i] > 0 && amax_[i] > 0) sx << double(i), sy << amax_[i];
    auto* gs = new QCPGraph(bx, by);
    gs->setName(tr("saturation (elements clipped)"));
    gs->setLineStyle(QCPGraph::lsNone);
    gs->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCross, QColor(0xcc, 0x00, 0x00), 6));
    gs->setData(sx, sy);
  }
  step_line_ = new QCPItemStraightLine(plot_);
  step_line_->setClipAxisRect(bottom_);
  step_line_->point1->setAxes(bx, by);
  step_line_->point2->setAxes(bx, by);
  step_line_->setPen(QPen(QColor(0x20, 0x20, 0x20), 1));
  plot_->rescaleAxes();
  bx->setRange(-0.5, double(steps()) - 0.5);
  // Log axis: a factor of 3 of head room above the largest value (room for the spike markers).
  if (by->range().lower > 0) by->setRange(by->range().lower / 2, by->range().upper * 3);
  for (int i = 0; i < plot_->plottableCount(); ++i)
    if (plot_->plottable(i)->keyAxis() == bx) plot_->plottable(i)->addToLegend(legend);
  stylePlot(plot_);
  top_->setRangeDrag(Qt::Horizontal);
  top_->setRangeZoom(Qt::Horizontal);
  bottom_->setRangeDrag(Qt::Horizontal);
  bottom_->setRangeZoom(Qt::Horizontal);
  QFont lf = font();
  lf.setPointSizeF(8.5);
  legend->setFont(lf);
  topLegend->setFont(lf);
  taken_text_->setFont(lf);
  drawStep();
}

void AmaxHistoryView::drawStep() {
  if (!bars_) {
    setInfo();
    return;
  }
  const std::vector<float> w = window();
  const int64_t n = int64_t(w.size());
  const bool te = cfg_.preset == DelayedPreset::TE;
  // Chronological window after step t: Flax holds steps t−L+1 .. t; TE holds t−L+2 .. t and the
  // cleared staging slot last (drawn at t+1).
  const int64_t first = te ? step_ - n + 2 : step_ - n + 1;
  QVector<double> x, y, sx, sy, kx, ky;
  const double taken = takenValue();
  int64_t takenAt = -1;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t s = first + k;
    const double a = w[size_t(k)];
    if (s < 0 || (te && k == n - 1)) continue;
    const bool spike = std::binary_search(spikes_.begin(), spikes_.end(), s);
    (spike ? sx : x) << double(s);
    (spike ? sy : y) << a;
    if (a == taken && a > 0) takenAt = s; // latest occurrence
  }
  bars_->setData(x, y, true);
  spike_bars_->setData(sx, sy, true);
  if (takenAt >= 0) kx << double(takenAt), ky << taken;
  taken_bar_->setData(kx, ky, true);
  taken_line_->point1->setCoords(0, taken);
  taken_line_->point2->setCoords(1, taken);
  const float fmax = float(format_->maxFinite());
  const double next = taken > 0 ? taken / fmax * std::ldexp(1.0, cfg_.margin) : 0;
  // Six significant digits on the plot (two short lines, clear of the legend); the CSV keeps
  // full precision.
  auto g6 = [](double v) { return QString::number(v, 'g', 6); };
  if (scaled_ && windowed_)
    taken_text_->setText(tr("after step %1: %2 of the window = %3\n\u2192 next dequant scale %4 = %5 / %6 \u00b7 2^%7")
                             .arg(step_)
                             .arg(cfg_.algo == AmaxAlgo::Max ? tr("max") : tr("most recent"), g6(taken), g6(next),
                                  g6(taken), numberText(fmax))
                             .arg(cfg_.margin));
  else if (scaled_)
    taken_text_->setText(tr("after step %1: %2 of the what-if window = %3 \u2192 what-if dequant scale %4\n(the run "
                            "kept no window: it scaled from each step's own amaxes)")
                             .arg(step_)
                             .arg(cfg_.algo == AmaxAlgo::Max ? tr("max") : tr("most recent"), g6(taken), g6(next)));
  else
    taken_text_->setText(tr("after step %1: %2 of the what-if window = %3\n(this FP32 run used no scale)")
                             .arg(step_)
                             .arg(cfg_.algo == AmaxAlgo::Max ? tr("max") : tr("most recent"), g6(taken)));
  QCPAxis* tx = top_->axis(QCPAxis::atBottom);
  tx->setRange(double(first) - 0.5, double(step_) + 0.5 + (te ? 1 : 0));
  // Whole steps only on the window axis, at round multiples (1, 2 or 5 · 10^k) giving about 8
  // ticks over the window.
  auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
  ticker->setTickStep(roundTickStep(double(n), 8));
  ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  tx->setTicker(ticker);
  double ymax = 0;
  for (float a : w) ymax = std::max(ymax, double(a));
  // Head room above the tallest bar for the two-line text in the top left corner.
  top_->axis(QCPAxis::atLeft)->setRange(0, ymax > 0 ? ymax * 1.45 : 1);
  step_line_->point1->setCoords(double(step_), 1);
  step_line_->point2->setCoords(double(step_), 2);
  setInfo();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void AmaxHistoryView::setInfo() {
  QStringList t;
  if (!note_.isEmpty()) t << note_;
  if (reading_windows_) t << tr("reading the recorded windows\u2026");
  if (!amax_.empty()) {
    t << tr("step %1 of %2: amax %3").arg(step_).arg(steps() - 1).arg(QString::number(amax_[size_t(step_)], 'g', 6));
    if (size_t(step_) < rec_scale_.size())
      t << tr("recorded dequant scale %1").arg(errorText(rec_scale_[size_t(step_)]));
    if (size_t(step_) < sim_scale_.size()) t << tr("what-if %1").arg(errorText(sim_scale_[size_t(step_)]));
    const auto rw = recordedWindow();
    if (!rw.empty()) {
      const bool same = rw == window();
      t << (same ? tr("what-if window = recorded amax_history") : tr("what-if window differs from the recorded one"));
    }
    t << tr("%n spike(s)", nullptr, int(spikes_.size()));
  }
  info_->setText(t.join(QStringLiteral(" \u00b7 ")));
}

QString AmaxHistoryView::infoText() const {
  return info_->text();
}

QString AmaxHistoryView::windowText() const {
  return taken_text_ ? taken_text_->text() : QString();
}

QString AmaxHistoryView::csv() const {
  if (amax_.empty()) return {};
  QString out = QStringLiteral("step,amax,recorded_dequant_scale,whatif_dequant_scale,spike\n");
  for (size_t i = 0; i < amax_.size(); ++i) {
    out += QStringLiteral("%1,%2,%3,%4,%5\n")
               .arg(i)
               .arg(amax_[i], 0, 'g', 9)
               .arg(i < rec_scale_.size() ? QString::number(rec_scale_[i], 'g', 9) : QString())
               .arg(i < sim_scale_.size() ? QString::number(sim_scale_[i], 'g', 9) : QString())
               .arg(std::binary_search(spikes_.begin(), spikes_.end(), int64_t(i)) ? 1 : 0);
  }
  return out;
}

FP8LAB_REGISTER_VIEW(AmaxHistoryView, "amax", 50);

// fp8lab-render: a training run's amax history, on a tensor with a recorded window (delayed
// scaling) when it has one.
FP8LAB_REGISTER_RENDER(AmaxHistoryView, "amax", {QStringLiteral("amax")},
                       [](const RenderScope& scope, const std::shared_ptr<RunAccess>& a, QList<RenderJob>& jobs) {
                         if (a->type() != QStringLiteral("training") || !scope.wants(QStringLiteral("amax"))) return;
                         jobs << RenderJob{a->id(), QStringLiteral("amax"), [a] {
                                             auto v = std::make_unique<AmaxHistoryView>();
                                             v->setRunAccess(a);
                                             for (const QString& t : v->tensors())
                                               if (a->has(sessionPath(layout::historyAmaxHistory(layoutName(t))))) {
                                                 v->setTensor(t);
                                                 break;
                                               }
                                             return std::unique_ptr<View>(std::move(v));
                                           }};
                       },
                       {});

} // namespace fp8lab::ui
