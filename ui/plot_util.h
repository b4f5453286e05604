// Small plotting helpers shared by the analysis views (amax history, scale evolution, error
// heatmap, comparison): empty-state text, the error colour gradient, step markers.
#pragma once

#include <QColor>
#include <QSharedPointer>
#include <QString>

#include <QPen>

class QCustomPlot;
class QCPAxisTickerLog;
class QCPColorGradient;
class QCPLegend;
class QCPScatterStyle;

namespace fp8lab::ui {

/// Clears `plot` to a single centred text element saying what to do (the empty state).
void plotEmptyState(QCustomPlot* plot, const QString& text);
/// Perceptually uniform gradient for non-negative errors (viridis stops), NaN drawn in nanColor().
QCPColorGradient errorGradient();
/// Diverging gradient (blue - white - red) for signed differences, NaN in nanColor().
QCPColorGradient differenceGradient();
/// The colour of NaN cells (magenta: not on either gradient).
QColor nanColor();
/// A base-10 log ticker whose labels are all different: over a range of several decades the
/// ticks are the decades (10ⁿ, with the axis number format "eb", precision 0); over a range
/// narrower than that, where QCustomPlot puts ticks between decades, each label gets as many
/// significant digits as it takes to tell it from its neighbours (never two ticks "10¹").
QSharedPointer<QCPAxisTickerLog> distinctLogTicker();
/// Adds a key entry to `legend` that stands for no single plottable: a line in `pen` (Qt::NoPen:
/// none) with an optional scatter symbol, then `text`. Lets a legend say "colour = tensor, dashed
/// = the compared run" in a few entries instead of one per curve.
void addLegendKey(QCPLegend* legend, const QString& text, const QPen& pen, const QCPScatterStyle* scatter = nullptr);

} // namespace fp8lab::ui
