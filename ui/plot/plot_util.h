// Small plotting helpers shared by the analysis views (amax history, scale evolution, error
// heatmap, comparison): empty-state text, the error colour gradient, step markers.
#pragma once

#include <QColor>
#include <QSharedPointer>
#include <QString>

#include <QPen>

#include <cstdint>
#include <functional>

class QCustomPlot;
class QCPAxis;
class QCPAxisRect;
class QCPAxisTicker;
class QCPAxisTickerLog;
class QCPColorGradient;
class QCPColorMap;
class QCPColorMapData;
class QCPColorScale;
class QCPLegend;
class QCPScatterStyle;
class QObject;
class QPoint;

namespace fp8lab::ui {

/// Clears `plot` to a single centred text element saying what to do (the empty state) and queues
/// its replot.
void plotEmptyState(QCustomPlot* plot, const QString& text);
/// Perceptually uniform gradient for non-negative errors (viridis stops), NaN drawn in nanColor().
QCPColorGradient errorGradient();
/// Diverging gradient (blue - white - red) for signed differences, NaN in nanColor().
QCPColorGradient differenceGradient();
/// The colour of NaN cells (magenta: not on either gradient).
QColor nanColor();
/// The colour of cells without data where a missing value is expected (an all-zero block's
/// scale, an exact SQNR): mid grey, apart from the gradients and from nanColor().
QColor noDataColor();

/// What titledColorMap builds.
struct ColorMapLayout {
  QCPAxisRect* rect = nullptr;
  QCPAxis* x = nullptr; ///< bottom axis: the map's key axis
  QCPAxis* y = nullptr; ///< left axis: the map's value axis
  QCPColorMap* map = nullptr;
  QCPColorScale* scale = nullptr;
};
/// Clears `plot` (plottables, items, layout, legend) and lays out a colour map: `title` in bold
/// (`font_family`, 10 pt) in row 0 across the whole width, a WrappedTitle (wrapped_title.h: its
/// lines broken at word boundaries where the plot is narrower, the row as high as they need); in
/// row 1 a grid holding an axis rect with a colour map drawn without interpolation and, on its
/// right, the map's colour scale (a 12 px bar), their top and bottom margins aligned. The caller
/// sets the data, gradient, ranges and labels.
ColorMapLayout titledColorMap(QCustomPlot* plot, const QString& title, const QString& font_family);
/// Sizes `data` to a grid of grid_rows × grid_cols scale blocks of block_rows × block_cols
/// elements in element coordinates: cell centres at (blk − 1) / 2 + i·blk. A grid one block wide
/// along a side gets two cells a quarter block either side of the block's centre (a colour map
/// needs two cells to know its extent); fill cell (c, r) with block (min(r, grid_rows − 1),
/// min(c, grid_cols − 1)).
void setBlockGrid(QCPColorMapData* data, int64_t grid_rows, int64_t grid_cols, int64_t block_rows, int64_t block_cols);
/// Wires the mouse of a plot of cells: a move over cell (r, c) calls hover(r, c); a press and a
/// release less than 4 px apart (a click, not a drag) over cell (r, c) calls click(r, c).
/// `cell_at` maps a widget position to a cell (false: no cell there). The connections live as
/// long as `context`.
void connectCellMouse(QCustomPlot* plot, QObject* context,
                      std::function<bool(const QPoint& pos, int64_t* r, int64_t* c)> cell_at,
                      std::function<void(int64_t r, int64_t c)> hover, std::function<void(int64_t r, int64_t c)> click);
/// A base-10 log ticker whose labels are all different: over a range of several decades the
/// ticks are the decades (10ⁿ, with the axis number format "eb", precision 0); over a range
/// narrower than that, where QCustomPlot puts ticks between decades, each label gets as many
/// significant digits as it takes to tell it from its neighbours (never two ticks "10¹").
QSharedPointer<QCPAxisTickerLog> distinctLogTicker();
/// A round step for an axis of about `ticks` ticks over `span` units: 1, 2 or 5 · 10^k, at least
/// `least` (1 for whole steps).
double roundTickStep(double span, int ticks, double least = 1.0);
/// A linear ticker that puts ticks at whole numbers only (training steps, indices), at a round
/// step (roundTickStep) for about 6 ticks.
QSharedPointer<QCPAxisTicker> wholeNumberTicker();
/// Adds a key entry to `legend` that stands for no single plottable: a line in `pen` (Qt::NoPen:
/// none) with an optional scatter symbol, then `text`. Lets a legend say "colour = tensor, dashed
/// = the compared run" in a few entries instead of one per curve.
void addLegendKey(QCPLegend* legend, const QString& text, const QPen& pen, const QCPScatterStyle* scatter = nullptr);

} // namespace fp8lab::ui
