// Error heatmap view: a colour map of the per-element absolute / relative / ULP error
// of a GEMM run's output D, or the quantization error of A or B; a split view of quantization,
// accumulation and total error side by side on one colour scale; linear or log colour scale with
// units; tile aggregation (mean / max per tile of the run's tile size).
//
// Large matrices: the view first shows a decimated overview (each cell the max of b×b elements,
// so a single large error is never lost), and re-reads the visible window at finer cells after a
// zoom, down to single elements; reads go through RunAccess, which for a session file reads only
// the requested window (HDF5 hyperslabs). NaN elements make their cell NaN: drawn in magenta,
// counted, and left out of the colour range.
//
// Hover shows (i, j), the reference, the tested value and the error; a click shows the element's
// detail (row i of A and column j of B statistics, and the bit layout of D's nearest encoding in
// its output type) with a link to the Bit layout view.
#pragma once

#include "views/heatmap_model.h"
#include "views/analysis_view.h"

#include <memory>

class QCPColorMap;
class QCPColorScale;
class QCPAxisRect;
class QComboBox;
class QLabel;
class QPushButton;
class QTimer;

namespace fp8lab::ui {

class BitCells;

class ErrorHeatmapView : public AnalysisView {
  Q_OBJECT
public:
  /// What the map shows: one quantity, or the three-way split of D's error.
  /// KernelCheck: a kernel's observed D against the check's reference model, beside the histogram
  /// of their ULP distances (runs with observed/D: docs/gemm.md, "Check my kernel in CI").
  enum class Mode { Total, Quantization, Accumulation, Split, OperandA, OperandB, KernelCheck };
  enum class Aggregation { Elements, TileMean, TileMax };

  explicit ErrorHeatmapView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("heatmap"); }
  QString title() const override { return tr("Error heatmap"); }
  QCustomPlot* exportPlot() const override { return plot_; }
  QString csv() const override;

  /// Shows a run directly (the CLI renderer, tests, benchmarks) and draws it at once; nullptr
  /// clears the view.
  void setRunAccess(std::shared_ptr<RunAccess> run);
  /// These setters draw at once (scripts, the renderer); the same choices made in the control bar
  /// read a big map on the thread pool.
  void setMode(Mode m);
  void setKind(ErrorKind k);
  void setLogScale(bool on);
  void setAggregation(Aggregation a);
  /// Largest number of cells per side of the overview (default 512).
  void setOverviewCells(int n);
  /// Shows the window rows [r0, r0+nr) × cols [c0, c0+nc) (as a zoom does) and refines it: a
  /// window of more than 2^20 elements (over the maps shown) on the thread pool (isReading()
  /// until it is back), a smaller one at once.
  void zoomTo(int64_t r0, int64_t c0, int64_t nr, int64_t nc);
  /// Back to the whole map.
  void resetZoom();

  Mode mode() const { return mode_; }
  ErrorKind kind() const { return kind_; }
  /// The grids drawn (one, or three in Split mode: quantization, accumulation, total).
  const QList<HeatmapGrid>& grids() const { return grids_; }
  QList<QCPColorMap*> colorMaps() const { return maps_; }
  QCPColorScale* colorScale() const { return scale_; }
  QCustomPlot* plot() const { return plot_; }
  /// The line below the plot: what a cell is, NaN count, what is missing.
  QString statusText() const;
  /// What hovering shows; hoverAt is what a mouse move over element (i, j) of map `panel` does.
  QString hoverText() const;
  void hoverAt(int64_t i, int64_t j, int panel = 0);
  /// What a click on element (i, j) does: fills the detail panel.
  void selectElement(int64_t i, int64_t j, int panel = 0);
  QString detailText() const;
  /// The format and code of the selected element's nearest encoding (empty format when none).
  QString detailFormat() const { return detail_format_; }
  uint32_t detailCode() const { return detail_code_; }
  /// Redraws now (synchronously), e.g. before rendering offscreen.
  void refresh();
  /// Whether the map shown is being read on the thread pool ("Reading the map…" below the plot).
  bool isReading() const { return reading_ != 0 && reading_ == generation(); }

private:
  /// Where a map is read (Read): on the GUI thread, on the thread pool, or on the pool only when
  /// the window has more than 2^20 elements (over the maps shown; a smaller one is drawn at once).
  void runChosen(Read read) override;
  void drawEmptyState(const QString& text) override;
  void applyMode(Mode m, Read read);
  void applyKind(ErrorKind k, Read read);
  void applyAggregation(Aggregation a, Read read);
  void rebuild(Read read);
  void computeWindow(int64_t r0, int64_t c0, int64_t nr, int64_t nc, bool overview, Read read);
  /// The second line of the first panel's title: the run id and `note`.
  void setTitleNote(const QString& note);
  void draw();
  void onRangeChanged(Read read);
  void mouseMoved(QMouseEvent* e);
  void mouseClicked(QMouseEvent* e);
  bool elementAt(const QPoint& pos, int64_t* i, int64_t* j, int* panel) const;
  QList<ErrorQuantity> quantities() const;
  /// KernelCheck: the ULP histogram (check/ulp_histogram) in row 2 of the plot layout.
  void addUlpHistogram();
  /// KernelCheck: the models table (check/models/*) and the fit's verdict, for the detail pane.
  QString modelsTable() const;
  void openInBitLayout();

  std::shared_ptr<RunAccess> run_;
  std::shared_ptr<HeatmapModel> model_; ///< shared with a refinement running on the pool
  /// Every rebuild and window computation starts a generation (newGeneration); a background read
  /// whose generation is no longer current is dropped (the user zoomed again, changed the map or
  /// the run), and stops early (stillWanted).
  quint64 reading_ = 0;           ///< the generation being read on the thread pool (0: none)
  bool reading_overview_ = false; ///< ... and whether it is the whole-map overview
  Mode mode_ = Mode::Total;
  ErrorKind kind_ = ErrorKind::Abs;
  Aggregation agg_ = Aggregation::Elements;
  bool log_ = true;
  int overview_cells_ = 512;
  QList<HeatmapGrid> grids_;
  QList<HeatmapGrid> overview_;
  QString missing_;
  bool updating_ = false;
  int64_t sel_i_ = -1, sel_j_ = -1;
  QPoint press_pos_;
  double detail_value_ = 0;
  QString detail_format_;
  uint32_t detail_code_ = 0;

  QComboBox* mode_box_;
  QComboBox* kind_box_;
  QComboBox* scale_box_;
  QComboBox* agg_box_;
  QCustomPlot* plot_;
  QList<QCPAxisRect*> rects_;
  QCPAxisRect* hist_rect_ = nullptr; ///< KernelCheck: the ULP histogram under the map
  QList<QCPColorMap*> maps_;
  QCPColorScale* scale_ = nullptr;
  QLabel* status_;
  QLabel* hover_;
  QLabel* detail_;
  BitCells* bits_;
  QPushButton* bits_button_;
  QTimer* refine_;
};

} // namespace fp8lab::ui
