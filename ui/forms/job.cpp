#include "forms/job.h"

#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

#include <mutex>

namespace fp8lab::ui {

struct Job::Shared {
  std::atomic<bool> cancel{false};
  std::mutex m;
  JobResult result;
  QString error;
  bool was_cancelled = false;
  QElapsedTimer last_report;
};

Job::Job(QObject* parent) : QObject(parent), watcher_(new QFutureWatcher<void>(this)) {
  qRegisterMetaType<fp8lab::ui::JobResult>();
  connect(watcher_, &QFutureWatcher<void>::finished, this, [this] {
    running_ = false;
    auto s = shared_;
    if (!s) return;
    if (s->was_cancelled)
      Q_EMIT cancelled();
    else if (!s->error.isEmpty())
      Q_EMIT failed(s->error);
    else
      Q_EMIT finished(s->result);
    Q_EMIT ended();
  });
}

Job::~Job() {
  cancel();
  waitForFinished();
}

bool Job::start(const QString& title, Work work) {
  if (running_) return false;
  running_ = true;
  title_ = title;
  auto s = std::make_shared<Shared>();
  shared_ = s;
  s->last_report.start();
  QPointer<Job> self(this);
  fp8lab::ProgressFn fn = [s, self](double f, const std::string& stage) {
    if (s->cancel.load()) return false;
    std::lock_guard<std::mutex> lock(s->m);
    if (s->last_report.elapsed() >= 33 || f >= 1.0) {
      s->last_report.restart();
      const QString st = QString::fromStdString(stage);
      QMetaObject::invokeMethod(
          self.data(),
          [self, f, st] {
            if (self) Q_EMIT self->progress(f, st);
          },
          Qt::QueuedConnection);
    }
    return true;
  };
  Q_EMIT started(title);
  watcher_->setFuture(QtConcurrent::run([s, fn, work = std::move(work)] {
    try {
      s->result = work(fn);
      if (s->cancel.load() && !s->result.kept_after_cancel) s->was_cancelled = true;
    } catch (const fp8lab::Cancelled&) {
      s->was_cancelled = true;
    } catch (const std::exception& e) {
      s->error = QString::fromUtf8(e.what());
    } catch (...) {
      s->error = QStringLiteral("unknown error");
    }
  }));
  return true;
}

void Job::cancel() {
  if (shared_) shared_->cancel.store(true);
}

void Job::waitForFinished() {
  watcher_->waitForFinished();
}

} // namespace fp8lab::ui
