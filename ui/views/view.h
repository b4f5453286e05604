// The common face of every view in the main window's tab area: a name for menus and
// screenshots, and what File → Export can take from it. Views read from the SessionDocument and the
// core; they never own results (docs/architecture.md: every number a view shows is read from a Run).
#pragma once

#include "common/issue.h"

#include <QList>
#include <QWidget>

#include <cstdint>
#include <functional>
#include <map>

class QComboBox;
class QCustomPlot;
class QHBoxLayout;

namespace fp8lab::ui {

class SessionDocument;

class View : public QWidget {
  Q_OBJECT
public:
  using QWidget::QWidget;
  /// Stable identifier used by `fp8lab --grab --view NAME`, QSettings and tests ("bits", ...).
  virtual QString viewId() const = 0;
  /// Title shown on the tab.
  virtual QString title() const = 0;
  /// The plot File → Export plot saves; nullptr: the whole view is rendered instead.
  virtual QCustomPlot* exportPlot() const { return nullptr; }
  /// CSV text for File → Export data (header line first); empty when the view has no table.
  virtual QString csv() const { return {}; }
  /// Called once by the main window so the view can follow the session.
  virtual void setSession(SessionDocument* session) { session_ = session; }
  /// The id of the session run this view shows ("" when it shows none or shows no runs).
  virtual QString shownRunId() const { return {}; }

  /// Whether reloads are waiting for the view to be shown (see whenShown()).
  bool hasPendingReload() const { return !pending_.empty(); }
  /// Runs the reloads waiting for the view to be shown now (the window does before it asks a
  /// hidden view to show an operand, so that the view lists the session's latest runs).
  void runPendingReloads();

  /// Views that show one code of a format (the bit layout, the code grid) show `code` and return
  /// true; the others ignore it. The window calls it for codeSelected and showCodeRequested.
  virtual bool selectCode(const QString& format, uint32_t code) {
    Q_UNUSED(format);
    Q_UNUSED(code);
    return false;
  }
  /// The code this view shows, for a view that leads the others (the bit layout); false if none.
  virtual bool selectedCode(QString* format, uint32_t* code) const {
    Q_UNUSED(format);
    Q_UNUSED(code);
    return false;
  }
  /// Views that show one operand of a run at a step (the amax history, the block map, the layer
  /// × step map) show run `runId`'s operand `operand` ("fc1/input", "fc2/output_grad"; "A" / "B"
  /// of a GEMM run; "" keeps the operand shown) at `step` (a global optimizer step, 0-based; the
  /// nearest one the view has) and return true; false when they cannot (another kind of view, an
  /// unknown run or operand). The window calls it for showOperandRequested.
  virtual bool showOperand(const QString& runId, const QString& operand, qint64 step) {
    Q_UNUSED(runId);
    Q_UNUSED(operand);
    Q_UNUSED(step);
    return false;
  }
  /// Views that draw the values of a format (the number line) mark the magnitudes [lo, hi] of
  /// format `format` (element values after scaling, lo > 0) as a band named `label`, and return
  /// true; the others ignore it. The window calls it for showRangeRequested.
  virtual bool showRange(const QString& format, double lo, double hi, const QString& label) {
    Q_UNUSED(format);
    Q_UNUSED(lo);
    Q_UNUSED(hi);
    Q_UNUSED(label);
    return false;
  }
  /// Views that draw a tensor's histogram (the number line) show `values` (a block's elements, in
  /// the tensor's units) in format `format`, named `label`, and return true; the others ignore
  /// it. The window calls it for showValuesRequested.
  virtual bool showValues(const QString& format, const QList<float>& values, const QString& label) {
    Q_UNUSED(format);
    Q_UNUSED(values);
    Q_UNUSED(label);
    return false;
  }

Q_SIGNALS:
  /// Something worth a line in the Issues panel.
  void issue(fp8lab::Severity severity, const QString& text, const QString& where);
  /// The code this view shows changed: the window passes it to the other views (selectCode).
  void codeSelected(const QString& format, uint32_t code);
  /// Asks the window to show `code` of `format` in the view `viewId` and bring that view to the
  /// front (the code grid's click, the heatmap's "Show in Bit layout").
  void showCodeRequested(const QString& viewId, const QString& format, uint32_t code);
  /// Asks the window to show `operand` of run `runId` at `step` in the view `viewId` (showOperand)
  /// and bring that view to the front (a cell of the layer × step map, its non-finite jump).
  void showOperandRequested(const QString& viewId, const QString& runId, const QString& operand, qint64 step);
  /// Asks the window to mark the magnitudes [lo, hi] of `format` in the view `viewId` (showRange)
  /// and bring it to the front (the block map's "Show on number line").
  void showRangeRequested(const QString& viewId, const QString& format, double lo, double hi, const QString& label);
  /// Asks the window to show `values` in the view `viewId` (showValues) and bring it to the front
  /// (the block map's "Show on number line" for a run that stores the block's elements).
  void showValuesRequested(const QString& viewId, const QString& format, const QList<float>& values,
                           const QString& label);

protected:
  /// Runs `reload` now when the view is on screen or stands alone (a widget of its own, as in
  /// tests and offscreen rendering); a view on a hidden tab of a window instead keeps the latest
  /// `reload` per `key` and runs them, in key order, in its next showEvent. This keeps adding a
  /// run cheap for views the user is not looking at, so the GUI thread never blocks more than
  /// 100 ms while an experiment runs.
  void whenShown(int key, std::function<void()> reload);
  void showEvent(QShowEvent* e) override;
  /// When this view is on screen and the session's current run is a default one (not chosen:
  /// SessionDocument::currentRunChosen) other than the run the view shows (shownRunId), makes
  /// the shown run the session's default current run, so that the session tree highlights what
  /// the view shows. Done from the event loop, after the change that called it has settled.
  void offerShownRun();

  /// Control-bar helpers shared by the views: a combo box of runs (object name `object_name`, for
  /// tests and --grab; wide enough for a 16-character run label), and a label whose mnemonic
  /// (the "&" in `text`) focuses `buddy`, added to `bar` followed by `buddy`.
  QComboBox* runComboBox(const QString& object_name);
  void addLabeled(QHBoxLayout* bar, const QString& text, QWidget* buddy);

  SessionDocument* session_ = nullptr;

private:
  friend class RunBox; // defers its reloads with whenShown
  std::map<int, std::function<void()>> pending_;
};

/// Writes the view's CSV through QSaveFile (never a half-written file).
bool exportCsv(View* view, const QString& fileName, QString* error);

} // namespace fp8lab::ui
