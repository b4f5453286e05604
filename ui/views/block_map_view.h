// Block map: the grid of scale blocks of one quantized operand at one step, drawn with the true
// block geometry (a 1×32 grid as thin stripes, 128×128 as tiles) and coloured by a per-block
// statistic of `block_stats/<fcN>/<operand>/map_*` (training runs, at the steps `map_steps`) or
// `block_stats/A`, `block_stats/B` (GEMM runs, one map); docs/session-format.md, "Per-block
// statistics". Hover shows every number of a block; a click shows its scale, the bits of the
// scale code, and links to the Bit layout view (the code) and the Number line view (the range
// of the block's elements after scaling, min non-zero / scale … amax / scale).
//
// Maps are read by readBlockMap (no widgets), on the thread pool when big (kBackgroundReadElements).
#pragma once

#include "views/analysis_view.h"

#include <memory>
#include <optional>
#include <vector>

class QCPColorMap;
class QCPColorScale;
class QCPItemRect;
class QComboBox;
class QLabel;
class QPushButton;

namespace fp8lab::ui {

/// An operand with block maps: group `block_stats/<fcN>/<operand>` or `block_stats/A` / `B`.
struct MapOperand {
  QString group;   ///< "block_stats/fc1/input", "block_stats/A"
  QString operand; ///< "fc1/input" (View::showOperand's name), "A"
  QString label;   ///< "fc1 input", "A"
};
/// The operands of `run` that have block maps (a `map_scale` dataset): the training operands in
/// blockStatOperands order, then A and B.
std::vector<MapOperand> blockMapOperands(const RunAccess& run);
/// The steps with a full map of `group` (`map_steps`; GEMM runs without one: {0}).
std::vector<int64_t> blockMapSteps(const RunAccess& run, const QString& group);

/// What a block map is coloured by.
enum class BlockStat {
  Log2Scale,    ///< log2 of the block's effective dequant scale (map_scale), log2
  Log2Amax,     ///< log2 of the block's max |x| (map_amax), log2 (no data for an all-zero block)
  UnderflowPct, ///< map_underflow / the block's elements × 100, % (edge blocks hold fewer)
  Saturated,    ///< map_saturated, elements
  DynamicRange, ///< map_dynamic_range: log2(amax / min non-zero), bits
  SqnrDb,       ///< map_sqnr_db, dB (+Inf exact and NaN all zero: no data)
};
QString blockStatName(BlockStat s);
QString blockStatUnit(BlockStat s);
/// The statistic's CSV column name: log2_scale, log2_amax, underflow_percent, saturated,
/// dynamic_range_bits, sqnr_db.
QString blockStatKey(BlockStat s);
/// The statistic of CSV column name `key`; nullopt for another name.
std::optional<BlockStat> parseBlockStat(const QString& key);
/// Every statistic, in the order of the view's Colour box.
const std::vector<BlockStat>& allBlockStats();

/// One full map: every number of every block of one operand at one step.
struct BlockMap {
  QString group, operand, label;
  QString quantization, format, scale_format;
  int64_t rows = 0, cols = 0;             ///< the tensor as quantized, elements
  int64_t block_rows = 1, block_cols = 1; ///< elements per block
  int64_t grid_rows = 0, grid_cols = 0;   ///< blocks
  int64_t step = 0;                       ///< the map's step (map_steps[index])
  bool stepped = false;                   ///< maps by step (training); false: one map (GEMM, checkpoint)
  int64_t index = 0;                      ///< its plane in the map datasets
  /// [grid_rows, grid_cols] each, row-major: as stored in the map_* datasets; `code` is empty for
  /// float32 scales (no map_scale_code).
  std::vector<double> scale, code, amax, min_nonzero, underflow, saturated, dynamic_range, sqnr;
  size_t at(int64_t r, int64_t c) const { return size_t(r * grid_cols + c); }
  /// Elements of block (r, c): block_rows × block_cols, fewer at the bottom and right edges.
  int64_t elements(int64_t r, int64_t c) const;
  /// ", step N" for maps by step, "" for a run's one map: for titles and labels.
  QString stepSuffix() const;
  /// The value of statistic `s` of block (r, c) in blockStatUnit(s); NaN / ±Inf: no data.
  double value(BlockStat s, int64_t r, int64_t c) const;
};

/// Reads plane `index` of the map datasets of `group` of `run` (every map_* of the doc), with the
/// group's attributes. False and *why when the run has no such map. Reads whole map datasets
/// from a session file: call it on the thread pool when mapCost() is big.
/// The dataset holding the elements of one-level operand `operand` ("A", a checkpoint weight):
/// `inputs/<operand>` (GEMM runs: the high-precision input), else `quantized/<operand>_dequantized`
/// (checkpoint runs: the stored weight, dequantized); "" when the run stores neither (training).
QString blockElementsDataset(const RunAccess& run, const QString& operand);

bool readBlockMap(const RunAccess& run, const QString& group, int64_t index, BlockMap* out, QString* why);
/// The elements readBlockMap reads for `group` (every plane of its eight maps).
int64_t mapCost(const RunAccess& run, const QString& group);

/// The Block map view (id "block_map").
class BlockMapView : public AnalysisView {
  Q_OBJECT
public:
  explicit BlockMapView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("block_map"); }
  QString title() const override { return tr("Block map"); }
  QCustomPlot* exportPlot() const override { return plot_; }
  /// The grid shown: "block_row,block_col,<statistic>" then one line per block.
  QString csv() const override;
  /// Shows run `runId`'s operand `operand` ("fc1/input", "A"; "" keeps the operand) at the map
  /// step nearest `step`, reading the map at once. False when the run or operand has no map.
  bool showOperand(const QString& runId, const QString& operand, qint64 step) override;

  /// Shows a run directly (tests, the renderer) and draws at once; nullptr clears the view.
  void setRunAccess(std::shared_ptr<RunAccess> run);
  /// These draw at once; the same choices in the control bar read big maps on the thread pool.
  bool setOperand(const QString& operand);
  void setStat(BlockStat s);
  /// Picks the map step nearest `step`.
  void setStep(int64_t step);

  const BlockMap& map() const { return map_; }
  BlockStat stat() const { return stat_; }
  QString operand() const;
  int64_t step() const { return map_.step; }
  /// The plot's title as drawn (what an exported picture shows above the map); "" when empty.
  QString plotTitle() const;
  bool isReading() const { return isLoading(); }

  /// What hovering over block (r, c) shows; hoverAt is what a mouse move over it does.
  void hoverAt(int64_t r, int64_t c);
  QString hoverText() const { return hover_text_; }
  /// A click on block (r, c): fills the side panel (scale, scale code bits, links).
  void selectBlock(int64_t r, int64_t c);
  QString detailText() const;
  /// The selected block's links: "Show in Bit layout" (emits showCodeRequested("bits",
  /// scale_format, code); false when the scale has no code in a format the bit layout shows) and
  /// "Show on number line" (emits showRangeRequested("numberline", format, min_nonzero/scale,
  /// amax/scale, label); false for an all-zero block).
  bool showScaleBits();
  bool showOnNumberLine();
  QCustomPlot* plot() const { return plot_; }
  QCPColorMap* colorMap() const { return cmap_; }

private:
  void runChosen(Read read) override;
  void fillOperands();
  void fillSteps();
  void load(Read read);
  void draw();
  void drawEmptyState(const QString& text) override;
  bool blockAt(const QPoint& pos, int64_t* r, int64_t* c) const;
  QString currentGroup() const;

  std::shared_ptr<RunAccess> run_;
  std::vector<MapOperand> operands_;
  std::vector<int64_t> steps_;
  BlockStat stat_ = BlockStat::Log2Scale;
  BlockMap map_;
  QString hover_text_;
  int64_t sel_r_ = -1, sel_c_ = -1;
  bool updating_ = false;

  QComboBox* operand_box_;
  QComboBox* step_box_;
  QComboBox* stat_box_;
  QCustomPlot* plot_;
  QCPColorMap* cmap_ = nullptr;
  QCPColorScale* scale_ = nullptr;
  QCPItemRect* sel_rect_ = nullptr;
  QLabel* hover_;
  QLabel* detail_;
  QPushButton* bits_button_;
  QPushButton* line_button_;
};

} // namespace fp8lab::ui
