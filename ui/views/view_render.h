// Offscreen rendering and sized export of the analysis views: every view to PNG /
// PDF / SVG at a chosen size plus its data as CSV, and the scripted report renderer behind
// `fp8lab-render FILE.h5 --run ID --png DIR` (which `fp8lab-cli render` and `fp8lab-cli export
// ... --png DIR` run). Needs a QApplication (fp8lab-render creates one on the offscreen platform).
#pragma once

#include <QDialog>
#include <QSize>
#include <QString>
#include <QStringList>

#include <functional>
#include <memory>

class QSpinBox;

namespace fp8lab::ui {

class View;
class RunAccess;

/// Writes `view` at `size` (logical pixels; PNG at device pixel ratio 1) to PNG / PDF / SVG,
/// chosen by the file suffix. A view with an exportPlot() is drawn as that plot (vectors in PDF /
/// SVG); other views are rendered as widgets. Writes beside and renames (never a half file).
bool exportViewSized(View* view, const QString& fileName, QSize size, QString* error);

/// The size step of File → Export plot, which exports at a chosen size: width and height spin
/// boxes in logical pixels (16..20000, the range exportViewSized accepts), preset to `initial`
/// (the view's current size). Object names "width" and "height" for tests.
class ExportSizeDialog : public QDialog {
public:
  explicit ExportSizeDialog(QSize initial, QWidget* parent = nullptr);
  QSize chosenSize() const;
  QSpinBox* widthBox() const { return w_; }
  QSpinBox* heightBox() const { return h_; }

private:
  QSpinBox* w_;
  QSpinBox* h_;
};

struct RenderRequest {
  QString session;   ///< session file (.h5)
  QString run;       ///< run id; empty: every run
  QString dir;       ///< output directory (created)
  QStringList views; ///< "heatmap", "split", "block_scales", "amax", "scales", "layers", "block_map", "attention",
                     ///< "compare", "decide"; empty: all that apply
  QStringList formats{QStringLiteral("png")}; ///< any of png, pdf, svg
  QSize size{1400, 900};
  bool csv = true; ///< also write each view's CSV
  /// The diagnostic views' choices (the boxes of their control bars); empty / −1: the view's
  /// default. layer_stat: a layerStatDataset name ("sqnr_db"); recipe: a what-if recipe id of the
  /// run, with `difference` for "recipe − trained" (SQNR); operand: a block map operand
  /// ("fc1/input", "A"), or the attention view's layer ("blocks.1"); step: the map step (the
  /// attention snapshot) nearest it; block_stat: a blockStatKey name.
  QString layer_stat, recipe, operand, block_stat;
  /// compare and decide: the metric of the comparison's bar chart (ComparisonView::setMetric keys)
  /// and of the Decide view's GEMM ranking or training comparison (rankingMetrics() keys); empty:
  /// each view's default.
  QString metric;
  bool difference = false;
  qint64 step = -1;
};

struct RenderedFile {
  QString run, view, file; ///< view: the RenderRequest view name that wrote it
  QSize size;
};

/// One set of files renderViews() writes: a view made fresh with the request's choices, saved in
/// each requested format (and as CSV).
struct RenderJob {
  QString run;  ///< the run's id; empty for a whole-session view ("compare.png")
  QString name; ///< the file name's view part: "heatmap", "block_scales-A", "decide-gemm-2"
  std::function<std::unique_ptr<View>()> make;
  QString view{}; ///< the RenderRequest view name the files belong to; empty: `name`
};

/// What a view's render hooks (ViewRendering, view_registry.h) read: the request (its choices
/// checked against the known names already), every run of the session, and where a hook reports a
/// choice that a run cannot show (--recipe, --operand): an error, not a silent default.
struct RenderScope {
  const RenderRequest& req;
  QString session;                       ///< the session file
  QList<std::shared_ptr<RunAccess>> all; ///< every run of the session, in its order
  QString* choice_error;                 ///< the first refused choice ends up here
  /// Whether `view` was asked for (every view when the request names none).
  bool wants(const QString& view) const { return req.views.isEmpty() || req.views.contains(view); }
  /// Whether `view` was named in --views (not only implied by an empty list).
  bool named(const QString& view) const { return req.views.contains(view); }
  void refuse(const QString& why) const {
    if (choice_error->isEmpty()) *choice_error = why;
  }
};

/// Whether a run has what the diagnostic views (layers, block_map) read: per-block statistics,
/// what-if recipes or probes.
bool hasDiagnostics(const RunAccess& run);

/// Renders the views of the chosen run(s) of a session file offscreen: for each run, its views in
/// the view registry's tab order; then the views of the whole session. Each file is named
/// "<run>-<view>.<ext>" ("compare.<ext>" for the whole-session comparison; "decide-<part>.<ext>"
/// for each part of the Decide view that has data — gemm, training, advice, what_if — with
/// "-<n>" for the n-th operand setting, model, advice run or checkpoint after the first, or
/// "decide.<ext>" showing what to run when no part has any; without a views list only for sessions
/// with something to decide: DecideView::opensOn, or a checkpoint's what-if); block_scales writes,
/// per operand X with block scale codes, "<run>-block_scales-X.<ext>" (the histogram of its
/// codes) and, when the run stores inputs/X and its dequantized values,
/// "<run>-block_error-X.<ext>" (SQNR per block); their RenderedFile::view is "block_scales". Reads only what each
/// view needs (RunAccess over SessionReader). Returns false and *error on the first failure
/// (unreadable file, unknown run or view, unwritable directory). `progress(fraction, what)`
/// returning false cancels.
bool renderViews(const RenderRequest& req, QList<RenderedFile>* written, QString* error,
                 const std::function<bool(double, const QString&)>& progress = {});

/// The view names renderViews() knows: every registered view's ViewRendering::names, in the
/// registry's order.
QStringList renderableViews();

} // namespace fp8lab::ui
