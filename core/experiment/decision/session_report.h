// FP8 Lab — a session report for sharing: one self-contained HTML file (no scripts, no external
// files; the figures are inline SVG) that a colleague opens in any browser without FP8 Lab. It holds
// the answer (the recipes no other recipe beats, and the cheapest of them), the GEMM ranking with its
// 95 % intervals over seeds and the cost of each recipe, the training runs against their FP32
// baseline (the paired table with each recipe's cost, the loss curves per recipe with the band of
// its seeds and the same-seed differences to FP32 over the steps), the per-layer advice, the checkpoint what-if tables,
// every run's config, and the versions. `fp8lab-cli report` writes it; the desktop app's Decide view saves it as HTML
// or, through Qt's PDF writer, as PDF (ui/session/report_pdf.h).
//
// The file is well-formed XHTML (an XML parser reads it), and every number of its tables carries its
// exact value in a data-* attribute (17 significant digits), so a test or a script can check the
// tables against the session: each row <tr class="recipe"> has data-setting, data-recipe, data-n,
// data-mean, data-half, data-sd, data-rank, data-bytes (GEMM) or data-delta (training, against the
// baseline's mean; with data-paired-*, data-bytes-per-element and data-native), and each curve its
// points (curveChartSvg).
#pragma once

#include "experiment/decision/session_decision.h"
#include "session/session.h"

#include <string>
#include <vector>

namespace fp8lab {

/// What the report is about and how it is dated.
struct ReportInput {
  std::string title;         ///< e.g. the session's file name
  std::string path;          ///< the session file ("" for a session not saved yet)
  int format_version = 0;    ///< the session's format_version
  std::string app_version;   ///< the app version that wrote the session
  std::string created_utc;   ///< when the session was created
  std::string generated_utc; ///< when the report is made ("" = now)
  std::vector<RunInfo> runs; ///< every run's metadata
  std::string metric;        ///< the GEMM or training metric to rank by ("" = defaults)
};

/// The input of a report on a saved session: the session's versions, creation time and runs from
/// `info`, with `title`, `path` and `metric` as given.
ReportInput reportInput(const SessionInfo& info, std::string title, std::string path, std::string metric);

/// The report as XHTML text. Throws std::invalid_argument for an unknown metric (decideSession).
/// `read` reads the datasets of advice and checkpoint runs.
std::string sessionReportHtml(const ReportInput& in, const DatasetSource& read);

/// The same report without the inline SVG figures' markup: each figure is replaced by
/// <img src="figure-N.svg"/> and its SVG text returned in `figures` (index N), for renderers that
/// draw SVG themselves (Qt's QTextDocument, which the PDF export uses).
std::string sessionReportHtml(const ReportInput& in, const DatasetSource& read, std::vector<std::string>* figures);

/// A horizontal interval chart as SVG: one row per recipe (in the order given), a dot at the mean,
/// a bar from lo to hi, rank-1 recipes in green, the others in grey-blue, an optional reference
/// line (a baseline) with its band; the axis labelled `axis_label`. Width 760 px.
std::string intervalChartSvg(const std::vector<RecipeInterval>& rows, const std::string& axis_label,
                             const RecipeInterval* reference = nullptr);

/// Curves over training steps as SVG: per series a line at its mean (the baseline dashed blue, the
/// others in a palette) over a band from lo to hi (series of two or more seeds), a legend under the
/// axes, `zero_line` draws y = 0 darker (and keeps 0 in range). `clip_outliers`: the y axis spans the
/// 2nd to 98th percentile of the mean points widened by that span on each side (at least 10 points),
/// what lies beyond is clipped and its count written in the chart. Each <polyline class="curve"> carries
/// data-recipe, data-seeds and its points' exact values (data-x, data-mean, data-lo, data-hi, space-
/// separated, 17 significant digits). Width 760 px.
std::string curveChartSvg(const std::vector<CurveSeries>& series, const std::string& x_label,
                          const std::string& y_label, bool zero_line = false, bool clip_outliers = false);

/// Escapes &, <, >, " and ' for XML text and attributes.
std::string xmlEscape(const std::string& s);

} // namespace fp8lab
