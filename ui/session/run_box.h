// The run box of an analysis view: a combo box that lists the session's runs a view can show
// (GEMM runs, training runs with per-block statistics, ...: a RunFilterProxy over the session's
// RunListModel) and follows the session's current run (the shared RunSelection) when it lists it.
// One implementation for the views that pick one run from the session (AnalysisView).
#pragma once

#include <functional>

#include "session/run_model.h"

#include <QObject>
#include <QString>

#include <memory>

class QComboBox;

namespace fp8lab::ui {

class RunAccess;
class SessionDocument;
class View;

class RunBox : public QObject {
  Q_OBJECT
public:
  /// Drives `box` (a child of `view`, e.g. View::runComboBox) for `view`; the box lists the runs
  /// with any of the capabilities `lists`, shows "label (id)" and holds the run id as its item data.
  RunBox(View* view, QComboBox* box, RunCaps lists);

  /// Follows `session` (its run model, filtered, and its run selection): its changes (reset, a run added, removed or
  /// changed) rebuild the list, keeping the run shown, else taking the current run; a new current run is shown when the
  /// box lists it, and none when it does not (unlistedId()). While the view is on a hidden tab both wait for its next
  /// show (View::whenShown). Fills the box now and emits chosen(false).
  void setSession(SessionDocument* session);
  /// The box holds exactly `id` (a run shown directly: tests, the renderer), or nothing for an
  /// empty id; emits nothing.
  void showOnly(const QString& id);
  /// Shows run `id` when the box lists it (emits nothing; the caller redraws); false if not listed.
  bool select(const QString& id);

  QComboBox* box() const { return box_; }
  /// The id of the run shown ("" when none).
  QString currentId() const;
  /// A reader for the run shown (RunAccess::forRecord over the session); nullptr when none.
  std::shared_ptr<RunAccess> access() const;
  /// The session's runs the box lists (nullptr before setSession).
  RunFilterProxy* proxy() const { return proxy_; }
  /// Whether the session holds run `id` and the box would list it.
  bool lists(const QString& id) const;
  /// The runs the view would rather open on: while the session's current run is a load's default
  /// (not chosen by the user), a rebuild that has no run to keep shows the first listed run `p`
  /// accepts (else the current run), and a new default current run does not replace the run
  /// shown. Unset: the current run, as for every view.
  void setPreferred(std::function<bool(const QString& id)> p) { preferred_ = std::move(p); }
  /// An item after the runs that stands for no run of the session (e.g. the Amax view's simulated
  /// sequence): its id is "" and choosing it does not change the session's current run. A
  /// session without a run the box lists shows it. Set before setSession.
  void setExtraItem(const QString& text) { extra_ = text; }
  /// Whether the extra item is the one shown.
  bool extraShown() const;
  /// The session's current run when the box does not list it: the box then shows no run (so the
  /// view does not go on showing another one as if it were that run) until the user picks one or
  /// the current run changes; "" otherwise.
  QString unlistedId() const { return unlisted_; }

Q_SIGNALS:
  /// The run shown changed or the list was rebuilt. `background`: the change came from the
  /// session (a run added while an experiment runs, a load, a new current run), so big reads go
  /// to the thread pool whatever their size; false: the user chose in the box, or setSession's
  /// first fill (read by size).
  void chosen(bool background);

private:
  void rebuild(bool background);
  void follow(int index);

  View* view_;
  QComboBox* box_;
  RunCaps lists_;
  SessionDocument* session_ = nullptr;
  RunFilterProxy* proxy_ = nullptr;
  RunSelection* selection_ = nullptr;
  bool updating_ = false;
  QString unlisted_;
  std::function<bool(const QString& id)> preferred_;
  QString extra_;
};

} // namespace fp8lab::ui
