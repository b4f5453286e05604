#include "forms/live_experiment.h"

#include <QCoreApplication>
#include <QFutureWatcher>
#include <QThread>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <cmath>

namespace fp8lab::ui {

namespace {
/// What a live run hands back to the GUI thread: the result, or why there is none.
struct LiveOutcome {
  JobResult result;
  QString error;
  bool cancelled = false;
};
} // namespace

LiveExperiment::LiveExperiment(ExperimentRunner runner, QObject* parent)
    : QObject(parent), runner_(std::move(runner)), debounce_(new QTimer(this)) {
  debounce_->setSingleShot(true);
  debounce_->setInterval(kDefaultDebounceMs);
  connect(debounce_, &QTimer::timeout, this, &LiveExperiment::startNow);
}

LiveExperiment::~LiveExperiment() {
  stop();
  // The runs in flight stop at their next progress check; their results are dropped with the
  // watchers (children of this object).
  while (executing_->load() > 0) QThread::msleep(1);
}

void LiveExperiment::setEnabled(bool on) {
  enabled_ = on;
  if (!on) stop();
}

void LiveExperiment::setDebounceMs(int ms) {
  debounce_->setInterval(std::max(0, ms));
}

int LiveExperiment::debounceMs() const {
  return debounce_->interval();
}

double LiveExperiment::workOf(const QJsonObject& c) {
  return c.value(QStringLiteral("m")).toDouble() * c.value(QStringLiteral("n")).toDouble() *
         c.value(QStringLiteral("k")).toDouble();
}

QString LiveExperiment::whyNotLive(const QJsonObject& c) const {
  if (!enabled_) return tr("live mode is off");
  // The shape of an imported tensor or of trained weights comes from the file, not from M, N, K.
  auto tensor = [&](const char* k) { return c.value(QLatin1String(k)).toObject().contains(QStringLiteral("tensor")); };
  if (tensor("a") || tensor("b"))
    return tr("live mode runs on generated operands; an imported tensor or trained weights run with Run");
  const double w = workOf(c);
  if (w > limit_)
    // (The cube sign is appended after arg(): QString::arg reads a superscript digit after %3 as
    // part of the placeholder number.)
    return tr("M\u00b7N\u00b7K = %1 is above the live limit %2 (= %3")
               .arg(w, 0, 'g', 4)
               .arg(limit_, 0, 'g', 4)
               .arg(std::cbrt(limit_), 0, 'f', 0) +
           QStringLiteral("\u00b3): ") + tr("press Run");
  return {};
}

void LiveExperiment::request(const GemmRunRequest& request) {
  pending_ = request;
  if (!enabled_) return;
  // Leading edge: a first edit after a quiet moment starts at once (no debounce delay on a single
  // change). Within a burst — a run in flight or a request pending — the timer restarts, so the
  // burst's later edits start one run, with the last configuration, when it ends.
  if (!debounce_->isActive() && running_ == 0 && (!quiet_.isValid() || quiet_.elapsed() >= debounce_->interval())) {
    startNow();
    return;
  }
  debounce_->start();
}

bool LiveExperiment::isPending() const {
  return debounce_->isActive();
}

void LiveExperiment::stop() {
  debounce_->stop();
  if (cancel_) cancel_->store(true);
  ++generation_; // whatever is in flight is no longer current
}

void LiveExperiment::waitForIdle() {
  while (running_ > 0) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
    if (running_ > 0) QThread::msleep(1);
  }
}

std::optional<JobResult> LiveExperiment::keepLast() {
  if (!last_ || last_kept_) return std::nullopt;
  last_kept_ = true;
  return last_;
}

void LiveExperiment::startNow() {
  const GemmRunRequest cfg = pending_;
  if (const QString why = whyNotLive(cfg.config); !why.isEmpty()) {
    Q_EMIT skipped(why);
    return;
  }
  if (!runner_) {
    Q_EMIT failed(tr("this build cannot run experiments"));
    return;
  }
  quiet_.start();
  if (cancel_) cancel_->store(true); // the previous run stops at its next progress check
  auto flag = std::make_shared<std::atomic<bool>>(false);
  cancel_ = flag;
  const quint64 gen = ++generation_;
  ++running_;
  ++started_;
  auto* watcher = new QFutureWatcher<LiveOutcome>(this);
  QElapsedTimer clock;
  clock.start();
  connect(watcher, &QFutureWatcher<LiveOutcome>::finished, this, [this, watcher, gen, clock] {
    --running_;
    watcher->deleteLater();
    const LiveOutcome o = watcher->result();
    if (gen != generation_ || o.cancelled) return; // superseded by a newer configuration
    if (!o.error.isEmpty()) {
      Q_EMIT failed(o.error);
      return;
    }
    last_ = o.result;
    last_kept_ = false;
    last_time_ = QTime::currentTime();
    last_ms_ = clock.elapsed();
    ++delivered_;
    Q_EMIT updated(*last_, last_ms_);
  });
  const ExperimentRunner runner = runner_;
  auto executing = executing_;
  ++*executing;
  watcher->setFuture(QtConcurrent::run([runner, cfg, flag, executing] {
    struct Done {
      std::atomic<int>& n;
      ~Done() { --n; }
    } done{*executing};
    LiveOutcome o;
    try {
      o.result = runner(cfg, [flag](double, const std::string&) { return !flag->load(); });
    } catch (const Cancelled&) {
      o.cancelled = true;
    } catch (const std::exception& e) {
      o.error = QString::fromUtf8(e.what());
    }
    if (flag->load()) o.cancelled = true;
    return o;
  }));
  Q_EMIT runStarted(cfg.config);
}

} // namespace fp8lab::ui
