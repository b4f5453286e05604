// FP8 Lab — numbers and table cells as text, for the reports that commands print and views show.
// The rules are those of the reports' first front end (Qt's QString::number and QString::arg), so
// a report reads the same whichever layer writes it; standard C++ only.
#pragma once

#include <string>
#include <vector>

namespace fp8lab {

/// `v` in printf's %.<precision>g (style 'g') or %.<precision>f (style 'f') form, except that a
/// decimal tie (the exact binary value halfway between two results) rounds away from zero, as
/// Qt's QString::number does (printf rounds it to even: 8.0625 at 4 digits is "8.063" here, "8.062"
/// from printf), −0 is written "0", and NaN and ±Inf are "nan", "inf", "-inf".
/// Checked against QString::number for 2.2e7 random and tie values, precisions 2..9.
std::string decimalText(double v, char style, int precision);

/// decimalText(v, 'g', precision), with "nan", "inf" and "-inf" for the non-finite values: the
/// number cells of the reports.
std::string generalText(double v, int precision = 6);

/// The shortest text that reads back as the same double / float (std::to_chars), with "nan",
/// "inf", "-inf" for the non-finite values.
std::string shortestText(double v);
std::string shortestText(float v);

/// The width of UTF-8 text in characters (Unicode code points).
int textWidth(const std::string& s);

/// `s` padded with spaces to `width` characters (Unicode code points of the UTF-8 text): right-
/// aligned for a positive width, left-aligned for a negative one; never cut (QString::arg's
/// field width).
std::string padded(const std::string& s, int width);

/// One table line: each cell padded to its width (padded()), the cells joined by `separator`,
/// then a newline.
std::string tableLine(const std::vector<std::string>& cells, const std::vector<int>& widths,
                      const std::string& separator = " ");

} // namespace fp8lab
