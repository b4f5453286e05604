// FP8 Lab — numbers and table cells as text, for the reports that commands print and views show.
// The rules are those of the reports' first front end (Qt's QString::number and QString::arg), so
// a report reads the same whichever layer writes it; standard C++ only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

/// `s` without the white space at both ends: the Unicode White_Space characters (ASCII tab to
/// carriage return and space, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F,
/// U+205F, U+3000) of the UTF-8 text, the set QString::trimmed() removes.
std::string_view trimmedText(std::string_view s);

/// Parses a number (UTF-8, trimmed()) as double: decimal ("1e-3") in the "C" locale whatever the
/// process locale, C99 hex-float ("0x1.8p3"), "inf", "+inf", "infinity", "-inf", "nan", "-nan"
/// (any case), "-0". The whole text must be consumed; nullopt otherwise. Literals outside
/// float64's range are refused, not rounded to ±inf or 0 ("1e400", "1e-400"); subnormal results
/// such as "1e-310" are kept.
std::optional<double> parseNumber(std::string_view text);

/// Parses a decimal integer (UTF-8, trimmed()): an optional '+' or '-', then ASCII digits only,
/// within int64 ("+4", " 12 ", "-0"; not "4.0", "1e1", "0x4"); nullopt otherwise.
std::optional<int64_t> parseInteger(std::string_view text);

/// Why parseNumber refused `text`, for messages: "not a number: 'x'", "'1e400' is beyond the
/// float64 range (…)", "'1e-400' underflows to 0 in float64 (…)"; the text is quoted trimmed.
std::string numberProblem(std::string_view text);

/// Parses a comma-separated list of numbers ("1,2.5,-3"; "" is the empty list). An empty or blank
/// item ("1,,2", "1,2,", "1, ,2") is an error, as is an item that is not a number. On error
/// returns nullopt and sets *bad (when not null) to the offending item as written and *position
/// (when not null) to its 1-based place in the list; numberListProblem words the reason.
std::optional<std::vector<double>> parseNumberList(std::string_view text, std::string* bad, size_t* position = nullptr);

/// Why parseNumberList refused item `bad` at 1-based `position` of `text`: "item 2 of '1,,2' is
/// empty (one comma between values, none at either end)" for an empty or blank item, else
/// numberProblem(bad).
std::string numberListProblem(std::string_view text, std::string_view bad, size_t position);

/// The words of a list of values: `text` split on ASCII white space (tab to carriage return,
/// space) and commas, empty words dropped.
std::vector<std::string_view> valueWords(std::string_view text);

} // namespace fp8lab
