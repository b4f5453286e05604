// Layer × step map: one statistic of every quantized operand of a training run at every step, as
// a colour map with the operands as rows (fc1 input, fc1 kernel, fc1 output_grad, fc2 …) and the
// steps as columns, read from `block_stats/<fcN>/<operand>/` (docs/session-format.md, "Per-block
// statistics"). The statistics: underflow % (underflow_fraction × 100), saturation %
// (saturation_fraction × 100), SQNR (dB), mean log2 of the block scales, the largest block dynamic
// range (bits), and the shares of blocks with an underflowed or a saturated element (%).
//
// A run with what-if recipes (`what_if/`) shows the same statistics under each recipe, at the
// steps `what_if/steps`, and for SQNR the difference "recipe − trained" on a diverging scale
// centred at 0; a table under the map ranks the recipes of each operand by their mean SQNR over
// the what-if steps. The first non-finite value of the run (`nonfinite` group) is marked, with a
// button that takes the Amax history view there. A click on a cell shows that operand at that step
// in the Amax history and the Block map views (View::showOperandRequested).
//
// The numbers come from the free functions below (no widgets); a run holds a few datasets of
// [steps] per operand, small enough to read on the GUI thread.
#pragma once

#include "block_stats.h"
#include "run_access.h"
#include "view.h"

#include <memory>
#include <optional>
#include <vector>

class QCPColorMap;
class QCPColorScale;
class QCPItemRect;
class QComboBox;
class QLabel;
class QPushButton;
class QTableWidget;

namespace fp8lab::ui {

class RunBox;

/// The statistic a layer × step map shows, each in the unit layerStatUnit() names.
enum class LayerStat {
  UnderflowPct,       ///< underflow_fraction × 100: underflowed / non-zero finite elements, %
  SaturationPct,      ///< saturation_fraction × 100: saturated / all elements, %
  SqnrDb,             ///< sqnr_db: 10·log10(Σx² / Σ(x̂ − x)²), dB (+Inf exact, NaN all zero)
  Log2ScaleMean,      ///< log2_scale_mean: mean log2 of the blocks' dequant scales, log2
  MaxDynamicRange,    ///< max_dynamic_range: largest log2(amax / min non-zero) of a block, bits
  UnderflowBlockPct,  ///< underflow_block_share × 100: blocks with an underflowed element, %
  SaturationBlockPct, ///< saturation_block_share × 100: blocks with a saturated element, %
};
/// The dataset of a statistic ("underflow_fraction", ...).
QString layerStatDataset(LayerStat s);
/// The factor from the stored value to the value shown (100 for fractions and shares, else 1).
double layerStatFactor(LayerStat s);
/// Its unit as shown: "%", "dB", "log\u2082" or "bits".
QString layerStatUnit(LayerStat s);
/// Its name for the box and the colour scale ("underflow", "SQNR", ...).
QString layerStatName(LayerStat s);
/// Every statistic, in the order of the view's Statistic box.
const std::vector<LayerStat>& allLayerStats();
/// The statistic whose dataset (layerStatDataset) is `dataset`; nullopt for another name.
std::optional<LayerStat> parseLayerStat(const QString& dataset);

/// A layer × step matrix: `rows` × `steps`, row-major.
struct LayerStepMatrix {
  LayerStat stat = LayerStat::UnderflowPct;
  QString recipe;          ///< "": as trained (block_stats); else the what-if recipe id
  bool difference = false; ///< SQNR under `recipe` minus the trained SQNR at the same step, dB
  std::vector<OperandRow> rows;
  std::vector<int64_t> steps; ///< the step of each column (0..n−1 as trained; what_if/steps)
  /// [rows, steps] in the statistic's unit (NaN where a row has no value at that step); ±Inf and
  /// NaN as stored (an exact SQNR is +Inf; a difference with one is ±Inf or NaN).
  std::vector<double> v;
  /// Difference only: the what-if SQNR and the trained SQNR of each cell, dB.
  std::vector<double> what_if, trained;
  double at(size_t r, size_t c) const { return v[r * steps.size() + c]; }
  /// Whether a value is drawn as "no data" (grey): NaN or ±Inf.
  static bool noData(double x) { return !std::isfinite(x); }
};

/// Reads the matrix of statistic `stat` of every operand (blockStatOperands) of `run`, as trained
/// (`recipe` empty) or under what-if recipe `recipe`; `difference` (SQNR only) gives
/// what_if/<recipe>/<op>/sqnr_db[i] − block_stats/<op>/sqnr_db[what_if/steps[i]]. False and *why
/// (what to do) when the run has no per-block statistics, no such recipe, or `difference` is asked
/// of another statistic; as trained or `difference` also fail for a run with what-if results only
/// (an FP32 run, "block_stats": false).
bool layerStepMatrix(const RunAccess& run, LayerStat stat, const QString& recipe, bool difference, LayerStepMatrix* out,
                     QString* why);

/// One recipe's score for one operand: the mean SQNR over the what-if steps.
struct RecipeScore {
  QString recipe;     ///< what-if recipe id; "" for the recipe the run trained with
  double mean_db = 0; ///< mean of the finite SQNRs over the what-if steps, dB (NaN when none)
  int64_t steps = 0;  ///< how many what-if steps had a finite SQNR
};
/// The recipes of one operand, best first.
struct OperandRanking {
  OperandRow row;
  std::vector<RecipeScore> scores; ///< by descending mean_db; recipes without a finite SQNR last
};
/// For each operand row of `run` (blockStatOperands), the what-if recipes and the trained recipe
/// (its block_stats/<op>/sqnr_db at the what-if steps; absent for a run without statistics as
/// trained) sorted by mean SQNR, best first; ties keep the order trained, then whatIfRecipes().
/// Empty when the run has no what-if recipes.
std::vector<OperandRanking> recipeRanking(const RunAccess& run);

/// The Layer × step map view (id "layers").
class LayerStepView : public View {
  Q_OBJECT
public:
  explicit LayerStepView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("layers"); }
  QString title() const override { return tr("Layer \u00d7 step"); }
  QCustomPlot* exportPlot() const override { return plot_; }
  /// The matrix shown: "operand,step,<statistic column>" then one line per cell.
  QString csv() const override;
  void setSession(SessionDocument* session) override;
  /// Selects run `runId` (when the view lists it) and the cell of `operand` at the column nearest
  /// `step`; emits nothing. False when the run or the operand is not there.
  bool showOperand(const QString& runId, const QString& operand, qint64 step) override;

  /// Shows a run directly (tests, the renderer) and draws at once; nullptr clears the view.
  void setRunAccess(std::shared_ptr<RunAccess> run);
  void setStat(LayerStat s);
  /// "" for the recipe the run trained with; `difference` for "<recipe> − trained" (SQNR only).
  /// False when the run has no such recipe.
  bool setRecipe(const QString& recipe, bool difference = false);

  LayerStat stat() const { return stat_; }
  const LayerStepMatrix& matrix() const { return m_; }
  const std::vector<OperandRanking>& ranking() const { return ranking_; }
  const NonfiniteJump& nonfinite() const { return nonfinite_; }
  /// The text in the plot in the empty or failed state ("" when a map is shown).
  QString emptyText() const { return empty_; }
  /// What hovering over cell (row, col) shows; hoverAt is what a mouse move over it does.
  void hoverAt(int row, int col);
  QString hoverText() const;
  /// A click on cell (row, col): selects it and asks the Block map view and then the Amax
  /// history view (which comes to the front) to show that operand at that step.
  void clickCell(int row, int col);
  /// The cell selected (−1, −1 when none).
  std::pair<int, int> selectedCell() const { return {sel_row_, sel_col_}; }
  /// The non-finite button: selects the cell of the first non-finite value and asks the Amax
  /// history view to show it. False when the run has none.
  bool goToNonfinite();
  /// The label of the non-finite button ("" when hidden).
  QString nonfiniteButtonText() const;
  QCustomPlot* plot() const { return plot_; }
  QCPColorMap* colorMap() const { return map_; }

private:
  void runChosen();
  void fillRecipes();
  void reload();
  void draw();
  void drawEmpty(const QString& text);
  void fillRanking();
  void markSelection();
  bool cellAt(const QPoint& pos, int* row, int* col) const;
  int columnOf(int64_t step) const;
  int rowOf(const QString& operand) const;

  std::shared_ptr<RunAccess> run_;
  LayerStat stat_ = LayerStat::UnderflowPct;
  QString recipe_;
  bool difference_ = false;
  LayerStepMatrix m_;
  std::vector<OperandRanking> ranking_;
  NonfiniteJump nonfinite_;
  QString empty_;
  QString hover_text_;
  int sel_row_ = -1, sel_col_ = -1;
  bool updating_ = false;

  RunBox* runs_;
  QComboBox* stat_box_;
  QComboBox* recipe_box_;
  QCustomPlot* plot_;
  QCPColorMap* map_ = nullptr;
  QCPColorScale* scale_ = nullptr;
  QCPItemRect* sel_rect_ = nullptr;
  QLabel* hover_;
  QPushButton* nonfinite_button_;
  QLabel* ranking_note_;
  QTableWidget* ranking_table_;
};

} // namespace fp8lab::ui
