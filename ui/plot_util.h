// Small plotting helpers shared by the analysis views (amax history, scale evolution, error
// heatmap, comparison): empty-state text, the error colour gradient, step markers.
#pragma once

#include <QColor>
#include <QString>

class QCustomPlot;
class QCPColorGradient;

namespace fp8lab::ui {

/// Clears `plot` to a single centred text element saying what to do (the empty state).
void plotEmptyState(QCustomPlot* plot, const QString& text);
/// Perceptually uniform gradient for non-negative errors (viridis stops), NaN drawn in nanColor().
QCPColorGradient errorGradient();
/// Diverging gradient (blue - white - red) for signed differences, NaN in nanColor().
QCPColorGradient differenceGradient();
/// The colour of NaN cells (magenta: not on either gradient).
QColor nanColor();

} // namespace fp8lab::ui
