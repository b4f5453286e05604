// Shared look: colours per bit field and per code class, number text, QCustomPlot defaults.
// One place, so every view speaks the same visual language (and screenshots match the docs).
#pragma once

#include "formats/format.h"

#include <QColor>
#include <QString>

class QCustomPlot;

namespace fp8lab::ui {

namespace colors {
QColor sign();      ///< sign bit cells
QColor exponent();  ///< exponent field cells
QColor mantissa();  ///< mantissa field cells
QColor ofClass(CodeClass c); ///< zero, subnormal, normal, max, inf, NaN
QColor series(int i);        ///< categorical palette (colour-blind safe, Okabe–Ito)
} // namespace colors

/// A value as text: the shortest decimal that round-trips, "NaN", "+Inf"/"−Inf", "−0".
QString numberText(double v);
/// An exact value of a format as text, with its power-of-two form when it is one (e.g. "0.001953125 = 2^-9").
QString valueWithPow2(double v);
/// "Zero", "Subnormal", ...
QString classText(CodeClass c);

/// Applies the project's plot defaults (fonts, grid, margins, interactions).
void stylePlot(QCustomPlot* plot);

} // namespace fp8lab::ui
