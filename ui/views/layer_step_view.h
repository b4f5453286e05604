// Layer × step map: one statistic of every quantized operand of a training run at every step, as
// a colour map with the operands as rows (fc1 input, fc1 kernel, fc1 output_grad, fc2 …; a
// transformer's sites in recording order: blocks.0.attn.qkv input, …, lm_head output_grad) and the
// steps as columns, read from `block_stats/<site>/<operand>/` (docs/session-format.md, "Per-block
// statistics"). The statistics: underflow % (underflow_fraction × 100), saturation %
// (saturation_fraction × 100), SQNR (dB), mean log2 of the block scales, the largest block dynamic
// range (bits), and the shares of blocks with an underflowed or a saturated element (%).
//
// A language-model run adds its transformer probes (`probes/<tensor>/<probe>` at `probes/steps`,
// docs/training.md "Probes") as further statistics, with the probed tensors as rows: outlier
// kurtosis, max/median, massive activations, the attention sink per head, softmax-cast underflow,
// gradient underflow, the gradient-to-noise ratio and the block outputs' error against float32.
//
// A transformer has ~50 sites: its rows are grouped by block and role (block 0 attention, block 0
// FFN, …, LM head; separators and the group names on the right), a group can be collapsed to one
// row holding the worst value of its rows at each step, and a filter bar (site glob, operand)
// picks rows. A run with more than 30 operand rows opens at the inputs of its sites; still more
// than 40 rows, with every group collapsed. Runs of a dozen rows or fewer (the MLP) show no filter
// bar and no groups: they look as they always did.
//
// A run with what-if recipes (`what_if/`) shows the same statistics under each recipe, at the
// steps `what_if/steps`, and for SQNR the difference "recipe − trained" on a diverging scale
// centred at 0; a table under the map ranks the recipes of each operand by their mean SQNR over
// the what-if steps. The first non-finite value of the run (`nonfinite` group) is marked, with a
// button that takes the Amax history view there. A click on a cell shows that operand at that step
// in the Amax history and the Block map views (View::showOperandRequested); a click on a collapsed
// group expands it. Outlier kurtosis and sink cells past a threshold (layerStatMarkThreshold) carry
// a diamond, so that the outlier and sink sites stand out whatever the colour range.
//
// The numbers come from the free functions below (no widgets); a run holds a few datasets of
// [steps] per operand, small enough to read on the GUI thread.
#pragma once

#include "session/block_stats.h"
#include "views/analysis_view.h"

#include <memory>
#include <optional>
#include <set>
#include <vector>

class QCPAxis;
class QCPAxisRect;
class QCPColorMap;
class QCPColorScale;
class QCPItemRect;
class QComboBox;
class QLabel;
class QLineEdit;
class QMenu;
class QPushButton;
class QTableWidget;
class QToolButton;

namespace fp8lab::ui {

/// The statistic a layer × step map shows, each in the unit layerStatUnit() names.
enum class LayerStat {
  UnderflowPct,       ///< underflow_fraction × 100: underflowed / non-zero finite elements, %
  SaturationPct,      ///< saturation_fraction × 100: saturated / all elements, %
  SqnrDb,             ///< sqnr_db: 10·log10(Σx² / Σ(x̂ − x)²), dB (+Inf exact, NaN all zero)
  Log2ScaleMean,      ///< log2_scale_mean: mean log2 of the blocks' dequant scales, log2
  MaxDynamicRange,    ///< max_dynamic_range: largest log2(amax / min non-zero) of a block, bits
  UnderflowBlockPct,  ///< underflow_block_share × 100: blocks with an underflowed element, %
  SaturationBlockPct, ///< saturation_block_share × 100: blocks with a saturated element, %
  // The transformer probes (probes/<tensor>/<name>, at probes/steps; docs/training.md "Probes"):
  Kurtosis,         ///< kurtosis: outlier kurtosis of the per-channel mean squares (He et al. 2024), 1
  MaxMedian,        ///< max_median: mean over tokens of max |x| / median |x|, ×
  Massive,          ///< massive: massive activations (Sun et al. 2024), elements
  Sink,             ///< sink × 100: attention mass on key position 0, per head, %
  SoftmaxUnderflow, ///< softmax_underflow × 100: probabilities an E4M3FN cast flushes to zero, %
  GradUnderflow,    ///< grad_underflow × 100: non-zero output-gradient elements flushed to zero, %
  GradNoiseRatio,   ///< grad_noise_ratio: ‖g‖ / ‖Q(g) − g‖ ("FP4 All the Way": stalls below √3), ×
  QuantError,       ///< quant_error × 100: ‖x − x₃₂‖ / ‖x₃₂‖ of a block's output, %
};
/// The dataset of a statistic ("underflow_fraction", ...).
QString layerStatDataset(LayerStat s);
/// The factor from the stored value to the value shown (100 for fractions and shares, else 1).
double layerStatFactor(LayerStat s);
/// Its unit as shown: "%", "dB", "log\u2082", "bits", "\u00d7" (a ratio), "elements" or "" (kurtosis).
QString layerStatUnit(LayerStat s);
/// Its name for the box and the colour scale ("underflow", "SQNR", ...).
QString layerStatName(LayerStat s);
/// Every per-block statistic, in the order of the view's Statistic box.
const std::vector<LayerStat>& allLayerStats();
/// Every probe statistic, in the order the Statistic box lists them for a run with probes.
const std::vector<LayerStat>& allProbeStats();
/// Whether `s` is a transformer probe (read from probes/, as trained, at the probe steps).
bool isProbeStat(LayerStat s);
/// Whether a larger value is the worse one (false for SQNR and the gradient-to-noise ratio): a
/// collapsed group shows the worst value of its rows.
bool layerStatHigherIsWorse(LayerStat s);
/// The value from which a cell of statistic `s` is marked with a diamond on the map, in the unit
/// shown: kurtosis 20 (a channel carrying over half of every token's energy at d_model 64: an
/// outlier feature, the criterion of docs/training.md "A specimen with outliers"), sink 30 % (the
/// threshold ε = 0.3 of Gu et al. 2024, arXiv 2410.10781, for a head to count as a sink); NaN for
/// the others (no marks).
double layerStatMarkThreshold(LayerStat s);
/// The statistic whose dataset (layerStatDataset) is `dataset` (a per-block statistic or a probe);
/// nullopt for another name.
std::optional<LayerStat> parseLayerStat(const QString& dataset);
/// Whether `run` recorded transformer probes (probes/steps).
bool hasProbes(const RunAccess& run);

/// A layer × step matrix: `rows` × `steps`, row-major.
struct LayerStepMatrix {
  LayerStat stat = LayerStat::UnderflowPct;
  QString recipe;          ///< "": as trained (block_stats); else the what-if recipe id
  bool difference = false; ///< SQNR under `recipe` minus the trained SQNR at the same step, dB
  /// The rows: per-block statistics, an operand (site, operand); probes, the probed tensor —
  /// (site, "input") for a site's input, (site, "output_grad") for its gradient, ("blocks.<l>",
  /// "output") for a block's output, ("embedding", "output"), ("blocks.<l>.attn", "head <h>") for
  /// a head's sink and ("blocks.<l>.attn", "softmax P") for the softmax probabilities.
  std::vector<OperandRow> rows;
  /// Per row, the operand ("<site>/<operand>") a click shows in the Amax history and Block map
  /// views; "" when the row is no recorded operand (a block's output, a head).
  std::vector<QString> links;
  std::vector<int64_t> steps; ///< the step of each column (0..n−1 as trained; what_if/steps; probes/steps)
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
/// (an FP32 run, "block_stats": false). A probe statistic reads probes/<tensor>/<probe> of every
/// tensor that has it, at probes/steps, ordered as the model runs (embedding, then block by
/// block the sites' tensors, the heads, the block's output; lm_head last); it takes no recipe.
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
class LayerStepView : public AnalysisView {
  Q_OBJECT
public:
  explicit LayerStepView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("layers"); }
  QString title() const override { return tr("Layer \u00d7 step"); }
  QCustomPlot* exportPlot() const override { return plot_; }
  /// The matrix of the statistic shown, every row whatever the filter and the collapsed groups:
  /// "operand,step,<statistic column>" then one line per cell.
  QString csv() const override;
  /// Selects run `runId` (when the view lists it) and the cell of `operand` at the column nearest
  /// `step`; emits nothing. False when the run or the operand is not there.
  bool showOperand(const QString& runId, const QString& operand, qint64 step) override;

  /// Shows a run directly (tests, the renderer) and draws at once; nullptr clears the view.
  void setRunAccess(std::shared_ptr<RunAccess> run);
  void setStat(LayerStat s);
  /// "" for the recipe the run trained with; `difference` for "<recipe> − trained" (SQNR only).
  /// False when the run has no such recipe.
  bool setRecipe(const QString& recipe, bool difference = false);

  /// The filter bar: rows whose site matches the glob `glob` ('*' any run of characters, '?' one;
  /// "" or "*": all), and operand `operand` ("input", "kernel", "output_grad"; "": all; probes
  /// ignore it). Redraws.
  void setSiteFilter(const QString& glob);
  void setOperandFilter(const QString& operand);
  QString siteFilter() const { return site_glob_; }
  QString operandFilter() const { return operand_filter_; }
  /// Collapses group `key` (SiteGroup::key: "blocks.0.attn", "head") to one row, or expands it.
  void setGroupCollapsed(const QString& key, bool collapsed);
  void setAllGroupsCollapsed(bool collapsed);
  bool isGroupCollapsed(const QString& key) const { return collapsed_.count(key) > 0; }
  /// The groups of the run's rows in order (keys; empty for a run without groups, the MLP).
  QStringList groups() const;
  /// Whether the filter bar is shown (a run of more than 12 rows).
  bool filterBarShown() const;

  /// The rows drawn, top to bottom: a matrix row, or a collapsed group standing for several.
  struct ShownRow {
    int row = -1;             ///< the matrix row (−1: a collapsed group)
    QString group;            ///< SiteGroup::key ("" when the run has no groups)
    QString label;            ///< the row's tick label
    std::vector<int> members; ///< a collapsed group: its matrix rows (after the filter)
  };
  const std::vector<ShownRow>& shownRows() const { return shown_; }
  /// The value drawn in shown row `row`, column `col`: the matrix value, or for a collapsed group
  /// the worst finite value of its rows (layerStatHigherIsWorse; NaN when none is finite).
  double shownValue(int row, int col) const;

  LayerStat stat() const { return stat_; }
  const LayerStepMatrix& matrix() const { return m_; }
  const std::vector<OperandRanking>& ranking() const { return ranking_; }
  const NonfiniteJump& nonfinite() const { return nonfinite_; }
  /// The text in the plot in the empty or failed state ("" when a map is shown).
  /// What hovering over cell (row, col) of the shown rows shows; hoverAt is what a mouse move over
  /// it does.
  void hoverAt(int row, int col);
  QString hoverText() const;
  /// A click on cell (row, col) of the shown rows: selects it and asks the Block map view and then
  /// the Amax history view (which comes to the front) to show that operand at that step; a click
  /// on a collapsed group expands it.
  void clickCell(int row, int col);
  /// The cell selected in the shown rows (−1, −1 when none).
  std::pair<int, int> selectedCell() const { return {sel_row_, sel_col_}; }
  /// The non-finite button: selects the cell of the first non-finite value and asks the Amax
  /// history view to show it. False when the run has none.
  bool goToNonfinite();
  /// The label of the non-finite button ("" when hidden).
  QString nonfiniteButtonText() const;
  QCustomPlot* plot() const { return plot_; }
  QCPColorMap* colorMap() const { return map_; }
  /// The cells marked (shown row, column): value ≥ layerStatMarkThreshold(stat()), as trained.
  const std::vector<std::pair<int, int>>& markedCells() const { return marked_; }

private:
  void runChosen(Read read = Read::Now) override;
  void fillStats();
  void fillRecipes();
  /// The filters and collapsed groups a run opens with (see the file comment).
  void defaultFilters();
  void fillGroupsMenu();
  /// Rebuilds shown_ from m_, the filters and the collapsed groups.
  void rebuildShown();
  void reload();
  void draw();
  void drawGroups(QCPAxisRect* rect, QCPAxis* x, QCPAxis* y);
  void drawMarks(QCPAxis* x, QCPAxis* y, double mark);
  void drawFirstNonFinite(QCPAxisRect* rect, QCPAxis* x, QCPAxis* y);
  void redrawShown();
  /// Row labels every label_every_ rows, as many as the axis rect's height holds.
  void labelRows();
  void drawEmptyState(const QString& text) override;
  void fillRanking();
  void markSelection();
  bool cellAt(const QPoint& pos, int* row, int* col) const;
  int columnOf(int64_t step) const;
  int rowOf(const QString& operand) const;

  std::shared_ptr<RunAccess> run_;
  QString defaults_for_; // the run whose default filters are set
  QString site_glob_, operand_filter_;
  std::set<QString> collapsed_;
  std::vector<ShownRow> shown_;
  int label_every_ = 0;
  LayerStat stat_ = LayerStat::UnderflowPct;
  QString recipe_;
  bool difference_ = false;
  LayerStepMatrix m_;
  std::vector<OperandRanking> ranking_;
  NonfiniteJump nonfinite_;
  QString hover_text_;
  int sel_row_ = -1, sel_col_ = -1;
  std::vector<std::pair<int, int>> marked_;
  bool updating_ = false;

  QComboBox* stat_box_;
  QComboBox* recipe_box_;
  QWidget* filter_bar_;
  QLineEdit* site_edit_;
  QComboBox* operand_box_;
  QToolButton* groups_button_;
  QMenu* groups_menu_;
  QLabel* shown_note_;
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
