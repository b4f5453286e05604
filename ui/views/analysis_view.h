// The base of the analysis views: those that show one run of the session at a time (block map,
// block scales, error heatmap, ...) and those that show the whole session (Comparison, Decide).
// It owns the view's run box when it has one (a RunBox bound to the session's shared RunSelection
// through a RunFilterProxy of the capabilities the view can show), the asynchronous load of what
// the view draws (a generation counter: a newer choice drops the result of an older load still
// running on the thread pool, so a view never shows stale data) and the text of its empty or
// failed state, which says what to do.
//
// A one-run view builds its control bar with addRunBox() and reads the run in runChosen(); every
// view reads and draws through loadAsync() and draws the texts given to showEmpty() in
// drawEmptyState().
#pragma once

#include "session/run_access.h"
#include "session/run_model.h"
#include "views/view.h"

#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <functional>
#include <memory>

class QHBoxLayout;

namespace fp8lab::ui {

class RunBox;

class AnalysisView : public View {
  Q_OBJECT
public:
  /// Follows `session`: the run box lists its runs the view can show and follows its current run.
  void setSession(SessionDocument* session) override;
  /// The run the run box shows.
  QString shownRunId() const override;
  /// Whether a load for the current choice is running on the thread pool.
  bool isLoading() const { return loading_ != 0 && loading_ == generation_; }
  /// The text of the empty or failed state shown ("" while data is shown).
  QString emptyText() const { return empty_; }
  /// The generation of the newest load (newGeneration() counts them).
  quint64 generation() const { return generation_; }

protected:
  /// How a load reads: at once, on the thread pool when big (a choice in the GUI), or on the
  /// thread pool whatever its size (a change that came from the session: RunBox::chosen).
  enum class Read { Now, BySize, Background };

  /// A view that lists the runs with any of the capabilities `shows` in its run box.
  AnalysisView(RunCaps shows, QWidget* parent);
  /// A view of the whole session: no run box.
  explicit AnalysisView(QWidget* parent);

  /// Adds "&Run:" and the run box (a combo box named "run") to `bar`. The box's choices call
  /// runChosen (Read::Background for a change from the session, Read::BySize for the user's).
  RunBox* addRunBox(QHBoxLayout* bar);
  /// The same for a run box the view placed itself.
  RunBox* bindRunBox(QComboBox* box);
  RunBox* runs() const { return runs_; }
  /// The run shown changed (the box, or the session's current run); the view reads it from runs().
  /// Views without a run box never get it.
  virtual void runChosen(Read) {}

  /// Starts a new generation: whatever is still loading for an older one is dropped when it ends.
  quint64 newGeneration();
  /// A check for work on the thread pool: true while generation `gen` is the newest (long
  /// computations stop when it turns false).
  std::function<bool()> stillWanted(quint64 gen) const;
  /// Whether a read of `elements` goes to the thread pool under `read` (kBackgroundReadElements).
  static bool inBackground(Read read, int64_t elements);

  /// Runs `work` and gives its result to `show` on the GUI thread: at once when `background` is
  /// false; else on the thread pool, showing `busy` meanwhile as the empty state (an empty `busy`:
  /// the view says it is busy where it chooses), and `show` is called only if no newer generation
  /// was started since `gen` (a newer choice made meanwhile).
  template <class R>
  void loadAsync(quint64 gen, bool background, std::function<R()> work, std::function<void(const R&)> show,
                 const QString& busy) {
    if (!background) {
      loading_ = 0;
      show(work());
      return;
    }
    loading_ = gen;
    if (!busy.isEmpty()) showEmpty(busy);
    auto* watcher = new QFutureWatcher<R>(this);
    connect(watcher, &QFutureWatcher<R>::finished, this, [this, watcher, gen, show] {
      watcher->deleteLater();
      if (gen != generation_) return; // another choice was made meanwhile
      loading_ = 0;
      show(watcher->result());
    });
    watcher->setFuture(QtConcurrent::run(std::move(work)));
  }

  /// Draws the empty or failed state `text` (the subclass draws it: drawEmptyState); remembered
  /// as emptyText().
  void showEmpty(const QString& text);
  /// The subclass draws `text` in place of its data.
  virtual void drawEmptyState(const QString& text) = 0;
  /// Data is shown again: emptyText() becomes "".
  void clearEmpty() { empty_.clear(); }
  /// The empty-state text when the box shows no run: when the session's current run is one the
  /// box does not list, why (`why` of its record, else "Run … (kind) cannot be shown here") and
  /// "Choose a run in the Run box above."; else `none`, which says what to run or open.
  QString noRunText(const QString& none, const std::function<QString(const RunRecord&)>& why = {}) const;

private:
  RunCaps shows_;
  RunBox* runs_ = nullptr;
  quint64 generation_ = 0, loading_ = 0;
  std::shared_ptr<std::atomic<quint64>> live_ = std::make_shared<std::atomic<quint64>>(0);
  QString empty_;
};

} // namespace fp8lab::ui
