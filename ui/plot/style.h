// Shared look: colours per bit field and per code class, number text, QCustomPlot defaults.
// One place, so every view speaks the same visual language (and screenshots match the docs).
#pragma once

#include "formats/format.h"

#include <QColor>
#include <QString>

class QCustomPlot;

namespace fp8lab::ui {

namespace colors {
QColor sign();               ///< sign bit cells
QColor exponent();           ///< exponent field cells
QColor mantissa();           ///< mantissa field cells
QColor ofClass(CodeClass c); ///< zero, subnormal, normal, max, inf, NaN
QColor series(int i);        ///< categorical palette (colour-blind safe, Okabe–Ito)
} // namespace colors

/// A value as text: the shortest decimal that round-trips, "NaN", "+Inf"/"−Inf", "−0".
QString numberText(double v);
/// An exact value of a format as text, with its power-of-two form when it is one (e.g. "0.001953125 = 2^-9").
QString valueWithPow2(double v);
/// A float32 value as its shortest round-trip float32 decimal (0.001f -> "0.001").
QString floatText(float v);
/// An error or ratio with 4 significant digits ("0.03448", "1.2e-05").
QString errorText(double v);
/// "2" followed by a superscript exponent, e.g. 2⁻⁹.
QString pow2Text(int e);
/// The digits of v as superscript characters.
QString superscript(int v);
/// "Zero", "Subnormal", ...
QString classText(CodeClass c);

/// Applies the project's plot defaults (fonts, grid, margins, interactions).
void stylePlot(QCustomPlot* plot);
/// Replots when the plot has a size (a plot in a hidden tab is drawn when it is first shown).
void replot(QCustomPlot* plot);

} // namespace fp8lab::ui
