// FP8 Lab — the session report (session_report.h).
#include "experiment/decision/session_report.h"

#include "json/json_document.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

namespace fp8lab {

std::string xmlEscape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
    case '&':
      o += "&amp;";
      break;
    case '<':
      o += "&lt;";
      break;
    case '>':
      o += "&gt;";
      break;
    case '"':
      o += "&quot;";
      break;
    case '\'':
      o += "&#39;";
      break;
    default:
      o += c;
    }
  }
  return o;
}

namespace {

std::string fmt(const char* f, double v) {
  char t[64];
  std::snprintf(t, sizeof t, f, v);
  return t;
}
/// The exact value for data-* attributes: 17 significant digits, "nan" / "inf" / "-inf".
std::string exact(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt("%.17g", v);
}
std::string g4(double v) {
  return std::isfinite(v) ? fmt("%.4g", v) : std::isnan(v) ? "—" : (v > 0 ? "+∞" : "−∞");
}

/// Tick positions of a "nice" axis over [lo, hi]: steps of 1, 2 or 5 × 10^k, at most 7 ticks.
std::vector<double> niceTicks(double lo, double hi) {
  std::vector<double> t;
  if (!(hi > lo)) return {lo};
  const double span = hi - lo;
  const double base = std::pow(10.0, std::floor(std::log10(span / 5.0)));
  double step = base;
  for (double m : {1.0, 2.0, 5.0, 10.0, 20.0}) {
    step = m * base;
    if (span / step <= 6.0) break;
  }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

const char* kCss = R"(
body { font-family: "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 1.8em; }
h3 { font-size: 1.05em; margin-bottom: 0.3em; }
p.meta, p.note { color: #555; font-size: 0.9em; }
p.empty { color: #555; font-style: italic; }
table { border-collapse: collapse; margin: 0.5em 0 1em 0; font-size: 0.88em; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.best td { background: #e3f2e6; }
tr.baseline td { background: #eef3fb; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: 0.5em; font-size: 0.8em; overflow-x: auto;
      white-space: pre-wrap; }
ul.answer li { margin-bottom: 0.4em; }
p.config { font-family: "DejaVu Sans Mono", monospace; font-size: 0.78em; background: #f6f6f6; padding: 0.4em; }
svg { max-width: 100%; height: auto; }
@media print { body { max-width: none; margin: 0; padding: 0; font-size: 9pt; } table { font-size: 7.5pt; } }
)";

/// The rows of one setting, in the ranked order.
std::vector<std::vector<size_t>> bySetting(const std::vector<RecipeInterval>& all) {
  std::vector<std::vector<size_t>> groups;
  std::vector<std::string> keys;
  for (size_t i = 0; i < all.size(); ++i) {
    const auto it = std::find(keys.begin(), keys.end(), all[i].setting);
    if (it == keys.end()) {
      keys.push_back(all[i].setting);
      groups.push_back({i});
    } else {
      groups[size_t(it - keys.begin())].push_back(i);
    }
  }
  return groups;
}

/// Compact JSON with a space after each ',' and ':' outside strings, so a long config wraps in a
/// browser and in Qt's layout alike.
std::string spacedJson(const Json& j) {
  const std::string t = j.dump();
  std::string o;
  bool in_string = false, escaped = false;
  for (char c : t) {
    o += c;
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == ',' || c == ':') {
      o += ' ';
    }
  }
  return o;
}

struct Html {
  std::string s;
  std::vector<std::string>* figures = nullptr; ///< when set: figures go here, the page gets <img/>
  Html& operator<<(const std::string& t) {
    s += t;
    return *this;
  }
  void figure(const std::string& svg, const std::string& alt) {
    if (!figures) {
      s += "<div class=\"figure\">" + svg + "</div>\n";
      return;
    }
    s += "<p><img src=\"figure-" + std::to_string(figures->size()) + ".svg\" alt=\"" + xmlEscape(alt) + "\"/></p>\n";
    figures->push_back(svg);
  }
};

/// The short verdict ("Hopper", "Blackwell", "emulation") with the cuBLASLt modes in words as its
/// title; the Versions and sources table has each scale layout's mode and source.
/// The first at most `bytes` bytes of UTF-8 text `s`, ending on a character boundary (a cut inside
/// a multi-byte character such as "→" would make the file ill-formed XML).
std::string utf8Prefix(const std::string& s, size_t bytes) {
  if (s.size() <= bytes) return s;
  while (bytes > 0 && (static_cast<unsigned char>(s[bytes]) & 0xC0) == 0x80) --bytes;
  return s.substr(0, bytes);
}

/// The most seeds (finite values) a recipe of the group `g` has.
int maxSeeds(const std::vector<RecipeInterval>& all, const std::vector<size_t>& g) {
  int n = 0;
  for (size_t i : g) n = std::max(n, all[i].n_values);
  return n;
}

std::string nativeCell(const std::optional<RecipeCost>& c) {
  return c ? "<td title=\"" + xmlEscape(c->native) + "\">" + xmlEscape(c->hardware) + "</td>" : "<td>—</td>";
}

} // namespace

std::string intervalChartSvg(const std::vector<RecipeInterval>& rows, const std::string& axis_label,
                             const RecipeInterval* reference) {
  // The labels' column as wide as the longest label needs (about 7.5 px a character at 12 px), 400 at most.
  size_t longest = 0;
  for (const RecipeInterval& r : rows) longest = std::max(longest, std::min<size_t>(r.label.size(), 52));
  const double W = 760, left = std::clamp(24.0 + 7.5 * double(longest), 160.0, 400.0), right = 24, top = 12, rh = 24,
               axis_h = 46;
  const double H = top + rh * double(std::max<size_t>(rows.size(), 1)) + axis_h;
  double lo = INFINITY, hi = -INFINITY;
  for (const RecipeInterval& r : rows)
    if (r.n_values > 0) lo = std::min(lo, r.lo), hi = std::max(hi, r.hi);
  if (reference && reference->n_values > 0) lo = std::min(lo, reference->lo), hi = std::max(hi, reference->hi);
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) lo -= 0.5, hi += 0.5;
  const double pad = 0.06 * (hi - lo);
  lo -= pad;
  hi += pad;
  auto X = [&](double v) { return left + (v - lo) / (hi - lo) * (W - left - right); };
  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", W) + "\" height=\"" + fmt("%.0f", H) +
       "\" viewBox=\"0 0 " + fmt("%.0f", W) + " " + fmt("%.0f", H) +
       "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + fmt("%.0f", W) + "\" height=\"" + fmt("%.0f", H) + "\" fill=\"white\"/>\n";
  const double y0 = top, y1 = top + rh * double(rows.size());
  // The best recipe's interval as a band: the recipes whose bars reach into it are not distinguishable from it.
  const RecipeInterval* best = nullptr;
  for (const RecipeInterval& r : rows)
    if (r.n_values > 0 && !r.baseline && (!best || r.place < best->place)) best = &r;
  if (reference && reference->n_values > 0) {
    s += "<rect x=\"" + fmt("%.1f", X(reference->lo)) + "\" y=\"" + fmt("%.1f", y0) + "\" width=\"" +
         fmt("%.1f", std::max(1.0, X(reference->hi) - X(reference->lo))) + "\" height=\"" + fmt("%.1f", y1 - y0) +
         "\" fill=\"#dbe6f6\"/>\n";
    s += "<line x1=\"" + fmt("%.1f", X(reference->mean)) + "\" y1=\"" + fmt("%.1f", y0) + "\" x2=\"" +
         fmt("%.1f", X(reference->mean)) + "\" y2=\"" + fmt("%.1f", y1) +
         "\" stroke=\"#3465a4\" stroke-dasharray=\"5,3\"/>\n";
  } else if (best && best->n_values > 1) {
    s += "<rect x=\"" + fmt("%.1f", X(best->lo)) + "\" y=\"" + fmt("%.1f", y0) + "\" width=\"" +
         fmt("%.1f", std::max(1.0, X(best->hi) - X(best->lo))) + "\" height=\"" + fmt("%.1f", y1 - y0) +
         "\" fill=\"#e3f2e6\"/>\n";
  }
  // Grid and axis.
  for (double t : niceTicks(lo, hi)) {
    const std::string x = fmt("%.1f", X(t));
    s += "<line x1=\"" + x + "\" y1=\"" + fmt("%.1f", y0) + "\" x2=\"" + x + "\" y2=\"" + fmt("%.1f", y1 + 4) +
         "\" stroke=\"#e2e2e2\"/>\n";
    s += "<text x=\"" + x + "\" y=\"" + fmt("%.1f", y1 + 18) + "\" text-anchor=\"middle\" fill=\"#333\">" +
         fmt("%g", t) + "</text>\n";
  }
  s += "<line x1=\"" + fmt("%.1f", left) + "\" y1=\"" + fmt("%.1f", y1) + "\" x2=\"" + fmt("%.1f", W - right) +
       "\" y2=\"" + fmt("%.1f", y1) + "\" stroke=\"#555\"/>\n";
  s += "<text x=\"" + fmt("%.1f", (left + W - right) / 2) + "\" y=\"" + fmt("%.1f", y1 + 38) +
       "\" text-anchor=\"middle\" fill=\"#222\">" + xmlEscape(axis_label) + "</text>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const RecipeInterval& r = rows[i];
    const double y = top + rh * (double(i) + 0.5);
    std::string label = r.label;
    if (label.size() > 52) label = utf8Prefix(label, 51) + "…";
    s += "<text x=\"" + fmt("%.1f", left - 8) + "\" y=\"" + fmt("%.1f", y + 4) + "\" text-anchor=\"end\" fill=\"" +
         (r.rank == 1 ? "#1b5e20" : "#333") + "\">" + xmlEscape(label) + "</text>\n";
    if (r.n_values == 0) {
      s += "<text x=\"" + fmt("%.1f", left + 6) + "\" y=\"" + fmt("%.1f", y + 4) + "\" fill=\"#888\">no value</text>\n";
      continue;
    }
    const char* colour = r.baseline ? "#3465a4" : r.rank == 1 ? "#2e7d32" : "#6b7c93";
    if (r.n_values > 1)
      s += "<line x1=\"" + fmt("%.1f", X(r.lo)) + "\" y1=\"" + fmt("%.1f", y) + "\" x2=\"" + fmt("%.1f", X(r.hi)) +
           "\" y2=\"" + fmt("%.1f", y) + "\" stroke=\"" + colour + "\" stroke-width=\"2.5\"/>\n" + "<line x1=\"" +
           fmt("%.1f", X(r.lo)) + "\" y1=\"" + fmt("%.1f", y - 5) + "\" x2=\"" + fmt("%.1f", X(r.lo)) + "\" y2=\"" +
           fmt("%.1f", y + 5) + "\" stroke=\"" + colour + "\" stroke-width=\"1.5\"/>\n" + "<line x1=\"" +
           fmt("%.1f", X(r.hi)) + "\" y1=\"" + fmt("%.1f", y - 5) + "\" x2=\"" + fmt("%.1f", X(r.hi)) + "\" y2=\"" +
           fmt("%.1f", y + 5) + "\" stroke=\"" + colour + "\" stroke-width=\"1.5\"/>\n";
    s += "<circle cx=\"" + fmt("%.1f", X(r.mean)) + "\" cy=\"" + fmt("%.1f", y) + "\" r=\"4.5\" fill=\"" + colour +
         "\"/>\n";
  }
  s += "</svg>";
  return s;
}

std::string curveChartSvg(const std::vector<CurveSeries>& series, const std::string& x_label,
                          const std::string& y_label, bool zero_line, bool clip_outliers) {
  static const char* kColours[] = {"#cc0000", "#4e9a06", "#f57900", "#75507b", "#c4a000",
                                   "#06989a", "#8f5902", "#5c3566", "#a40000", "#204a87"};
  const double W = 760, left = 64, right = 16, top = 12, plot_h = 260, axis_h = 44;
  // The legend under the axes: as many columns as the longest entry leaves room for (about 7 px a
  // character at 12 px, after a 28 px line sample).
  size_t longest = 0;
  for (const CurveSeries& c : series) longest = std::max(longest, std::min<size_t>(c.label.size(), 40) + 10);
  const double col_w = std::max(150.0, 36.0 + 7.0 * double(longest));
  const size_t cols = std::max<size_t>(1, size_t((W - left - right) / col_w));
  const double legend_rows = double((series.size() + cols - 1) / cols), legend_h = 8 + 18 * legend_rows;
  const double H = top + plot_h + axis_h + legend_h;
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (const CurveSeries& c : series)
    for (size_t i = 0; i < c.x.size(); ++i) {
      xlo = std::min(xlo, c.x[i]), xhi = std::max(xhi, c.x[i]);
      ylo = std::min(ylo, c.lo[i]), yhi = std::max(yhi, c.hi[i]);
    }
  // With clip_outliers, the y range is the middle of the mean points (2nd to 98th percentile) widened
  // by its own span on each side, so that a short spike does not flatten the rest; what lies
  // beyond is clipped and counted.
  int clipped = 0;
  if (clip_outliers && std::isfinite(ylo)) {
    std::vector<double> means;
    for (const CurveSeries& c : series)
      for (double v : c.mean)
        if (std::isfinite(v)) means.push_back(v);
    std::sort(means.begin(), means.end());
    if (means.size() >= 10) {
      const double qlo = means[means.size() * 2 / 100], qhi = means[(means.size() - 1) * 98 / 100];
      const double span = std::max(qhi - qlo, 1e-12);
      ylo = std::max(ylo, qlo - span);
      yhi = std::min(yhi, qhi + span);
      for (double v : means) clipped += v < ylo || v > yhi;
    }
  }
  if (zero_line && std::isfinite(ylo)) ylo = std::min(ylo, 0.0), yhi = std::max(yhi, 0.0);
  if (!std::isfinite(xlo)) xlo = 0, xhi = 1, ylo = 0, yhi = 1;
  if (!(xhi > xlo)) xlo -= 0.5, xhi += 0.5;
  if (!(yhi - ylo > 1e-12 * std::max(1.0, std::fabs(yhi)))) ylo -= 0.5, yhi += 0.5;
  const double ypad = 0.04 * (yhi - ylo);
  ylo -= ypad;
  yhi += ypad;
  const double y0 = top, y1 = top + plot_h;
  auto X = [&](double v) { return left + (v - xlo) / (xhi - xlo) * (W - left - right); };
  auto Y = [&](double v) { return y1 - (v - ylo) / (yhi - ylo) * plot_h; };
  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"curves\" width=\"" + fmt("%.0f", W) + "\" height=\"" +
       fmt("%.0f", H) + "\" viewBox=\"0 0 " + fmt("%.0f", W) + " " + fmt("%.0f", H) +
       "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + fmt("%.0f", W) + "\" height=\"" + fmt("%.0f", H) + "\" fill=\"white\"/>\n";
  for (double t : niceTicks(ylo, yhi)) {
    const std::string y = fmt("%.1f", Y(t));
    s += "<line x1=\"" + fmt("%.1f", left - 4) + "\" y1=\"" + y + "\" x2=\"" + fmt("%.1f", W - right) + "\" y2=\"" + y +
         "\" stroke=\"" + (zero_line && t == 0 ? "#555" : "#e2e2e2") + "\"/>\n";
    s += "<text x=\"" + fmt("%.1f", left - 8) + "\" y=\"" + fmt("%.1f", Y(t) + 4) +
         "\" text-anchor=\"end\" fill=\"#333\">" + fmt("%g", t) + "</text>\n";
  }
  for (double t : niceTicks(xlo, xhi)) {
    const std::string x = fmt("%.1f", X(t));
    s += "<line x1=\"" + x + "\" y1=\"" + fmt("%.1f", y1) + "\" x2=\"" + x + "\" y2=\"" + fmt("%.1f", y1 + 4) +
         "\" stroke=\"#555\"/>\n";
    s += "<text x=\"" + x + "\" y=\"" + fmt("%.1f", y1 + 18) + "\" text-anchor=\"middle\" fill=\"#333\">" +
         fmt("%g", t) + "</text>\n";
  }
  s += "<rect x=\"" + fmt("%.1f", left) + "\" y=\"" + fmt("%.1f", y0) + "\" width=\"" + fmt("%.1f", W - left - right) +
       "\" height=\"" + fmt("%.1f", plot_h) + "\" fill=\"none\" stroke=\"#555\"/>\n";
  s += "<text x=\"" + fmt("%.1f", (left + W - right) / 2) + "\" y=\"" + fmt("%.1f", y1 + 36) +
       "\" text-anchor=\"middle\" fill=\"#222\">" + xmlEscape(x_label) + "</text>\n";
  s += "<text transform=\"translate(14," + fmt("%.1f", (y0 + y1) / 2) + ") rotate(-90)\" text-anchor=\"middle\" " +
       "fill=\"#222\">" + xmlEscape(y_label) + "</text>\n";
  auto path = [&](const std::vector<double>& xs, const std::vector<double>& ys) {
    std::string p;
    for (size_t i = 0; i < xs.size(); ++i) p += (i ? " " : "") + fmt("%.1f", X(xs[i])) + "," + fmt("%.1f", Y(ys[i]));
    return p;
  };
  auto list = [](const std::vector<double>& v) {
    std::string o;
    for (double x : v) o += (o.empty() ? "" : " ") + exact(x);
    return o;
  };
  size_t colour = 0;
  std::vector<std::string> colours;
  for (const CurveSeries& c : series) colours.push_back(c.baseline ? "#3465a4" : kColours[colour++ % 10]);
  // The bands and lines are drawn inside the plot area only (a clipped spike leaves it).
  std::string all_means;
  for (const CurveSeries& c : series) all_means += c.label + list(c.mean);
  const std::string clip_id = "plot-" + std::to_string(std::hash<std::string>{}(y_label + all_means) % 1000000007u);
  s += "<clipPath id=\"" + clip_id + "\"><rect x=\"" + fmt("%.1f", left) + "\" y=\"" + fmt("%.1f", y0) + "\" width=\"" +
       fmt("%.1f", W - left - right) + "\" height=\"" + fmt("%.1f", plot_h) + "\"/></clipPath>\n<g clip-path=\"url(#" +
       clip_id + ")\">\n";
  // Bands first, so that no band covers another recipe's mean line.
  for (size_t k = 0; k < series.size(); ++k) {
    const CurveSeries& c = series[k];
    if (c.seeds < 2 || c.x.empty()) continue;
    std::vector<double> xs = c.x, ys = c.hi;
    for (size_t i = c.x.size(); i-- > 0;) xs.push_back(c.x[i]), ys.push_back(c.lo[i]);
    s += "<polygon class=\"band\" points=\"" + path(xs, ys) + "\" fill=\"" + colours[k] +
         "\" fill-opacity=\"0.18\" stroke=\"none\"/>\n";
  }
  for (size_t k = 0; k < series.size(); ++k) {
    const CurveSeries& c = series[k];
    s += "<polyline class=\"curve\" data-recipe=\"" + xmlEscape(c.label) + "\" data-seeds=\"" +
         std::to_string(c.seeds) + "\" data-x=\"" + list(c.x) + "\" data-mean=\"" + list(c.mean) + "\" data-lo=\"" +
         list(c.lo) + "\" data-hi=\"" + list(c.hi) + "\" points=\"" + path(c.x, c.mean) + "\" fill=\"none\" stroke=\"" +
         colours[k] + "\" stroke-width=\"1.6\"" + (c.baseline ? " stroke-dasharray=\"6,3\"" : "") + "/>\n";
  }
  s += "</g>\n";
  if (clipped > 0)
    s += "<text x=\"" + fmt("%.1f", W - right - 6) + "\" y=\"" + fmt("%.1f", y0 + 16) +
         "\" text-anchor=\"end\" fill=\"#555\">" + std::to_string(clipped) + (clipped == 1 ? " point" : " points") +
         " beyond the axis (clipped)</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const double lx = left + double(k % cols) * col_w, ly = y1 + axis_h + 12 + 18 * double(k / cols);
    s += "<line x1=\"" + fmt("%.1f", lx) + "\" y1=\"" + fmt("%.1f", ly) + "\" x2=\"" + fmt("%.1f", lx + 22) +
         "\" y2=\"" + fmt("%.1f", ly) + "\" stroke=\"" + colours[k] + "\" stroke-width=\"2\"" +
         (series[k].baseline ? " stroke-dasharray=\"6,3\"" : "") + "/>\n";
    std::string label = series[k].label;
    if (label.size() > 40) label = utf8Prefix(label, 39) + "…";
    s += "<text x=\"" + fmt("%.1f", lx + 28) + "\" y=\"" + fmt("%.1f", ly + 4) + "\" fill=\"#222\">" +
         xmlEscape(label + " (" + std::to_string(series[k].seeds) + (series[k].seeds == 1 ? " seed)" : " seeds)")) +
         "</text>\n";
  }
  s += "</svg>";
  return s;
}

ReportInput reportInput(const SessionInfo& info, std::string title, std::string path, std::string metric) {
  ReportInput in;
  in.title = std::move(title);
  in.path = std::move(path);
  in.format_version = info.format_version;
  in.app_version = info.app_version;
  in.created_utc = info.created_utc;
  in.runs = info.runs;
  in.metric = std::move(metric);
  return in;
}

namespace {

/// The report's sections, in order. Each writes its own heading, and an empty section says what would
/// fill it (the hint* texts).
struct ReportContext {
  const SessionDecision& d;
  std::vector<std::vector<size_t>> gemm_groups, train_groups; ///< recipes grouped by setting (bySetting)
  const RankingMetric &gm, &tm;                               ///< the GEMM and training metrics
  std::string gunit, tunit;                                   ///< " (unit)", or empty for unit 1
};

void writeHeader(Html& h, const ReportInput& in) {
  const std::string title = in.title.empty() ? std::string("FP8 Lab session") : in.title;
  h << "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
    << "<title>" << xmlEscape("FP8 Lab report: " + title) << "</title>\n<style>" << kCss
    << "</style>\n</head>\n<body>\n";
  h << "<h1>" << xmlEscape("FP8 Lab report: " + title) << "</h1>\n";
  h << "<p class=\"meta\">Session " << xmlEscape(in.path.empty() ? std::string("(not saved)") : in.path)
    << (in.created_utc.empty() ? "" : " · created " + xmlEscape(in.created_utc))
    << (in.app_version.empty() ? "" : " · written by FP8 Lab " + xmlEscape(in.app_version))
    << (in.format_version > 0 ? " · session format " + std::to_string(in.format_version) : "") << " · "
    << std::to_string(in.runs.size()) << " runs · report by FP8 Lab " << FP8LAB_VERSION << " on "
    << xmlEscape(in.generated_utc.empty() ? utcNow() : in.generated_utc) << "</p>\n";
}

/// "The answer": per setting, the best GEMM recipes and the cheapest of them; per training setting,
/// each recipe's same-seed verdict against FP32; per advised run, the groups to keep high.
void writeAnswer(Html& h, const ReportContext& c) {
  const SessionDecision& d = c.d;
  const RankingMetric &gm = c.gm, &tm = c.tm;
  const std::string& gunit = c.gunit;
  h << "<h2>The answer</h2>\n<ul class=\"answer\">\n";
  bool said = false;
  for (const auto& g : c.gemm_groups) {
    std::vector<const RecipeInterval*> top;
    for (size_t i : g)
      if (d.gemm[i].rank == 1) top.push_back(&d.gemm[i]);
    if (g.size() < 2 || top.empty()) continue;
    said = true;
    const RecipeInterval& first = d.gemm[g.front()];
    if (maxSeeds(d.gemm, g) < 2) {
      // One value per recipe: the order is not a ranking (no interval to tell a difference from luck).
      h << "<li><b>" << xmlEscape(first.setting_label) << "</b>, by " << xmlEscape(gm.label)
        << ": one seed per recipe, so no ranking: the best value is " << xmlEscape(first.label) << "'s ("
        << xmlEscape(intervalText(first)) << xmlEscape(gunit)
        << "), but without intervals a difference cannot be told from the luck of one draw. Sweep with "
           "\"seeds\": [1, 2, 3, 4, 5] to rank.</li>\n";
      continue;
    }
    std::string names;
    for (const RecipeInterval* r : top) names += (names.empty() ? "" : ", ") + r->label;
    // The cheapest of the recipes no other beats (bytes per element with scales).
    const RecipeInterval* cheap = nullptr;
    double cheap_b = INFINITY;
    for (size_t i : g)
      if (d.gemm[i].rank == 1 && d.gemm_cost[i] && d.gemm_cost[i]->bytesPerElement() < cheap_b)
        cheap = &d.gemm[i], cheap_b = d.gemm_cost[i]->bytesPerElement();
    h << "<li><b>" << xmlEscape(first.setting_label) << "</b>, by " << xmlEscape(gm.label) << ": "
      << (top.size() == 1 ? "best: " : std::to_string(top.size()) + " recipes not distinguishable from the best: ")
      << xmlEscape(names) << " (mean over " << std::to_string(first.n_values) << " seed"
      << (first.n_values == 1 ? "" : "s") << ", 95 % intervals overlap).";
    if (cheap) {
      const size_t ci = size_t(cheap - d.gemm.data());
      h << " Cheapest of them: <b>" << xmlEscape(cheap->label) << "</b>, " << fmt("%.3f", cheap_b)
        << " bytes per element with its scales; " << xmlEscape(d.gemm_cost[ci]->native) << ".";
    }
    h << "</li>\n";
  }
  for (const auto& g : c.train_groups) {
    const int bi = d.baselineOf(g.front());
    if (bi < 0 || g.size() < 2) continue;
    said = true;
    const RecipeInterval& base = d.training[size_t(bi)];
    if (maxSeeds(d.training, g) < 2) {
      std::string deltas;
      for (size_t i : g) {
        const RecipeInterval& r = d.training[i];
        if (r.baseline || r.n_values == 0) continue;
        deltas += (deltas.empty() ? "" : ", ") + r.label + " " + fmt("%+.4g", r.mean - base.mean);
      }
      h << "<li><b>" << xmlEscape(base.setting_label) << "</b>, " << xmlEscape(tm.label) << ": FP32 baseline "
        << g4(base.mean) << "; against it: " << xmlEscape(deltas)
        << ". One seed: no interval, and no rank: differences this small may be seed noise; repeat the runs "
           "with other seeds (`fp8lab-cli sweep CONFIG --seeds 1-3`) to tell.</li>\n";
      continue;
    }
    // The verdicts of the same-seed pairs (pairRecipes), each recipe with its Δ and interval.
    std::string worse, better, same, single;
    for (size_t i : g) {
      const RecipeInterval& r = d.training[i];
      if (r.baseline || r.n_values == 0) continue;
      const std::string item =
          r.label + " " +
          (r.comparison == Comparison::Paired ? "Δ " + pairedText(*r.paired)
           : r.comparison == Comparison::Unpaired
               ? "Δ of the means " + fmt("%+.4g", r.mean - base.mean) + ", unpaired: no two seeds in common"
               : "Δ " + fmt("%+.4g", r.paired && r.paired->n_pairs > 0 ? r.paired->mean_diff : r.mean - base.mean));
      const std::string cost = d.training_cost[i] ? " (" + bytesPerElementText(d.training_cost[i]->bytesPerElement()) +
                                                        " B/elem, " + d.training_cost[i]->hardware + ")"
                                                  : std::string();
      std::string& list = r.verdict == Verdict::Worse     ? worse
                          : r.verdict == Verdict::Better  ? better
                          : r.verdict == Verdict::OneSeed ? single
                                                          : same;
      list += (list.empty() ? "" : "; ") + item + cost;
    }
    h << "<li><b>" << xmlEscape(base.setting_label) << "</b>, " << xmlEscape(tm.label) << ": FP32 baseline "
      << g4(base.mean) << ", each recipe against it by same-seed pairs (mean difference ± 95 % interval). "
      << (worse.empty() ? "" : "Worse than FP32: " + xmlEscape(worse) + ". ")
      << (better.empty() ? "" : "Better than FP32: " + xmlEscape(better) + ". ")
      << (same.empty() ? "" : "Not distinguishable from FP32: " + xmlEscape(same) + ". ")
      << (single.empty() ? "" : "One seed: no interval: " + xmlEscape(single) + ".") << "</li>\n";
  }
  for (const AdviceTable& a : d.advice) {
    said = true;
    std::string kept;
    for (const AdviceGroupRow& r : a.groups)
      if (r.keep_high) kept += (kept.empty() ? "" : ", ") + r.group;
    h << "<li>Per-layer advice for run <b>" << xmlEscape(a.advised_run) << "</b>: "
      << (kept.empty() ? std::string("every group may stay in the recipe")
                       : "keep in high precision: " + xmlEscape(kept))
      << " (" << std::to_string(a.seeds) << " seed" << (a.seeds == 1 ? "" : "s") << ", " << std::to_string(a.steps)
      << " steps per run).</li>\n";
  }
  if (!said) h << "<li>Nothing to decide yet: the session has no recipes to compare.</li>\n";
  h << "</ul>\n";
}

/// The GEMM recipes of each setting ranked: chart and table with cost and native hardware.
void writeGemmRanking(Html& h, const ReportContext& c) {
  const SessionDecision& d = c.d;
  const RankingMetric& gm = c.gm;
  const std::string& gunit = c.gunit;
  h << "<h2>GEMM recipes ranked by " << xmlEscape(gm.label) << "</h2>\n";
  if (d.gemm.empty()) {
    h << "<p class=\"empty\">" << xmlEscape(hintGemmRanking()) << "</p>\n";
  } else {
    h << "<p class=\"note\">" << xmlEscape(gm.meaning) << "; " << (gm.higher_better ? "higher" : "lower")
      << " is better. Each recipe: the mean over its seeds ± the 95 % confidence interval of the mean "
         "(Student's t, t<sub>0.975, n−1</sub>·sd/√n). Rank = 1 + the recipes whose whole interval is better; "
         "recipes whose intervals overlap are not distinguishable and can share a rank (marked =). Cost: the "
         "bytes a GEMM reads per element of A and B, element codes and scales in the native layout; native "
         "hardware: where the pair of scale layouts runs natively (the cuBLASLt modes under Versions and "
         "sources).</p>\n";
    for (const auto& g : c.gemm_groups) {
      const RecipeInterval& first = d.gemm[g.front()];
      h << "<h3>" << xmlEscape(first.setting_label) << "</h3>\n";
      std::vector<RecipeInterval> rows;
      for (size_t i : g) rows.push_back(d.gemm[i]);
      h.figure(intervalChartSvg(rows, gm.label + gunit + ", mean ± 95 % interval over seeds"),
               "ranking of " + first.setting_label);
      h << "<table class=\"ranking\">\n<tr><th>Rank</th><th>Recipe</th><th>" << xmlEscape(gm.label + gunit)
        << "<br/>mean ± 95 %</th><th>sd</th><th>seeds</th><th>bytes / element<br/>(A+B, with scales)</th>"
        << "<th>A + B bytes<br/>(" << std::to_string(first.m) << "×" << std::to_string(first.k) << ", "
        << std::to_string(first.k) << "×" << std::to_string(first.n)
        << ")</th><th>scales (A / B)</th><th>native hardware</th></tr>\n";
      for (size_t i : g) {
        const RecipeInterval& r = d.gemm[i];
        const auto& c = d.gemm_cost[i];
        h << "<tr class=\"recipe" << (r.rank == 1 ? " best" : "") << "\" data-setting=\"" << xmlEscape(r.setting)
          << "\" data-recipe=\"" << xmlEscape(r.label) << "\" data-n=\"" << std::to_string(r.n_values)
          << "\" data-mean=\"" << exact(r.mean) << "\" data-half=\"" << exact(r.half) << "\" data-sd=\"" << exact(r.sd)
          << "\" data-rank=\"" << std::to_string(r.rank) << "\" data-bytes=\""
          << (c ? std::to_string(c->bytes()) : std::string("nan")) << "\">";
        h << "<td>" << xmlEscape(rankText(r, d.gemm)) << "</td><td>" << xmlEscape(r.label) << "</td><td class=\"num\">"
          << xmlEscape(intervalText(r)) << "</td><td class=\"num\">" << g4(r.sd) << "</td><td class=\"num\">"
          << std::to_string(r.n_values) << "</td>";
        if (c) {
          h << "<td class=\"num\">" << bytesPerElementText(c->bytesPerElement()) << "</td><td class=\"num\">"
            << xmlEscape(bytesText(double(c->bytes()))) << "</td><td>" << xmlEscape(c->a.block) << " "
            << xmlEscape(c->a.kind->scale_format) << " / " << xmlEscape(c->b.block) << " "
            << xmlEscape(c->b.kind->scale_format) << "</td>" << nativeCell(c);
        } else {
          h << "<td>—</td><td>—</td><td>—</td><td>—</td>";
        }
        h << "</tr>\n";
      }
      h << "</table>\n";
    }
  }
}

/// One recipe's row of a training table: its value, Δ vs the FP32 baseline (same-seed pairs), cost.
void writeTrainingRow(Html& h, const SessionDecision& d, size_t i, const RecipeInterval* base) {
  const RecipeInterval& r = d.training[i];
  const double delta = base && r.n_values > 0 ? r.mean - base->mean : NAN;
  std::string runs;
  for (const std::string& id : r.runs) runs += (runs.empty() ? "" : ", ") + id;
  const PairedDifference* p = r.paired ? &*r.paired : nullptr;
  std::string per_seed_data;
  if (p)
    for (size_t k = 0; k < p->diffs.size(); ++k)
      per_seed_data += (per_seed_data.empty() ? "" : " ") + std::to_string(p->seeds[k]) + ":" + exact(p->diffs[k]);
  const std::string delta_cell = r.baseline                             ? std::string("baseline")
                                 : r.comparison == Comparison::Paired   ? pairedText(*p)
                                 : r.comparison == Comparison::Unpaired ? fmt("%+.4g", delta) + " (means)"
                                 : p && p->n_pairs == 1                 ? fmt("%+.4g", p->mean_diff)
                                 : std::isfinite(delta)                 ? fmt("%+.4g", delta)
                                                                        : std::string("—");
  h << "<tr class=\"recipe"
    << (r.baseline    ? " baseline"
        : r.rank == 1 ? " best"
                      : "")
    << "\" data-setting=\"" << xmlEscape(r.setting) << "\" data-recipe=\"" << xmlEscape(r.label) << "\" data-n=\""
    << std::to_string(r.n_values) << "\" data-mean=\"" << exact(r.mean) << "\" data-half=\"" << exact(r.half)
    << "\" data-sd=\"" << exact(r.sd) << "\" data-rank=\"" << std::to_string(r.rank) << "\" data-delta=\""
    << exact(delta) << "\" data-comparison=\"" << xmlEscape(comparisonName(r.comparison))
    << "\" data-bytes-per-element=\""
    << (d.training_cost[i] ? exact(d.training_cost[i]->bytesPerElement())
        : r.baseline       ? exact(4.0)
                           : "nan")
    << "\" data-native=\"" << xmlEscape(d.training_cost[i] ? d.training_cost[i]->hardware : "") << "\"";
  if (p)
    h << " data-paired-mean=\"" << exact(p->mean_diff) << "\" data-paired-lo=\"" << exact(p->ci_low)
      << "\" data-paired-hi=\"" << exact(p->ci_high) << "\" data-n-pairs=\"" << std::to_string(p->n_pairs)
      << "\" data-per-seed=\"" << per_seed_data << "\"";
  h << ">";
  h << "<td>" << xmlEscape(rankText(r, d.training)) << "</td><td>" << xmlEscape(r.label) << "</td><td class=\"num\">"
    << xmlEscape(intervalText(r)) << "</td><td class=\"num\">" << xmlEscape(delta_cell) << "</td><td>"
    << xmlEscape(p && r.comparison == Comparison::Paired ? perSeedText(*p) : std::string()) << "</td><td class=\"num\">"
    << std::to_string(r.n_values) << "</td><td>" << xmlEscape(comparisonText(r)) << "</td>";
  const auto& c = d.training_cost[i];
  if (c)
    h << "<td class=\"num\">" << bytesPerElementText(c->bytesPerElement()) << "</td><td>" << xmlEscape(c->a.block)
      << " " << xmlEscape(c->a.kind->scale_format) << " / " << xmlEscape(c->b.block) << " "
      << xmlEscape(c->b.kind->scale_format) << "</td>" << nativeCell(c);
  else
    h << "<td class=\"num\">" << (r.baseline ? bytesPerElementText(4.0) : "—") << "</td><td>"
      << (r.baseline ? "float32 elements, no scales" : "—") << "</td><td>" << (r.baseline ? "any" : "—") << "</td>";
  h << "<td>" << xmlEscape(runs) << "</td></tr>\n";
}

/// The training runs of each setting against FP32: interval chart, loss curves, and the table.
void writeTraining(Html& h, const ReportContext& c, const DatasetSource& read) {
  const SessionDecision& d = c.d;
  const RankingMetric& tm = c.tm;
  const std::string& tunit = c.tunit;
  h << "<h2>Training against the FP32 baseline: " << xmlEscape(tm.label) << "</h2>\n";
  if (d.training.empty()) {
    h << "<p class=\"empty\">" << xmlEscape(hintTraining()) << "</p>\n";
  } else {
    for (const auto& g : c.train_groups) {
      const int bi = d.baselineOf(g.front());
      const RecipeInterval* base = bi >= 0 ? &d.training[size_t(bi)] : nullptr;
      h << "<h3>" << xmlEscape(d.training[g.front()].setting_label) << "</h3>\n";
      std::vector<RecipeInterval> rows;
      for (size_t i : g) rows.push_back(d.training[i]);
      h.figure(intervalChartSvg(rows, tm.label + tunit + (base ? "; dashed: the FP32 baseline" : ""), base),
               "training runs against FP32");
      if (!base)
        h << "<p class=\"note\">No FP32 run in this session: add one (\"precision\": \"fp32\") with the same seed "
             "to see the cost of low precision.</p>\n";
      // The loss over training: each recipe's mean over its seeds with the seeds' band, and the
      // same-seed difference to FP32 over the steps.
      const TrainingCurves tc = trainingCurves(d, g, read);
      if (!tc.loss.empty()) {
        const std::string per = tc.bin > 1 ? "; each point the mean of " + std::to_string(tc.bin) + " steps" : "";
        h << "<p class=\"note\">Training loss per step" << xmlEscape(per)
          << ": the line is the mean over the recipe's seeds, the shaded band spans its seeds (lowest to highest)."
          << (tc.delta.empty() ? "" : " Below: each recipe minus the FP32 run of the same seed (above 0: worse).")
          << "</p>\n";
        h.figure(curveChartSvg(tc.loss, "step", tc.loss_name + " (nats)"), "loss curves per recipe");
        if (!tc.delta.empty())
          h.figure(curveChartSvg(tc.delta, "step", "Δ loss vs FP32, same seed (nats)", true, true),
                   "loss difference to FP32 per recipe");
      }
      if (base && maxSeeds(d.training, g) >= 2)
        h << "<p class=\"note\">Δ vs FP32: runs that differ only in the recipe and share a seed (the same initial "
             "weights and data order) are pairs; Δ is the mean of the per-seed differences with its 95 % interval "
             "(Student's t, n − 1 degrees of freedom), and a recipe is worse or better than FP32 only when that "
             "interval excludes 0. Rank = 1 + the recipes whose paired interval against it is wholly better. "
             "Recipes without two seeds in common with another fall back to the intervals over seeds "
             "(unpaired).</p>\n";
      h << "<p class=\"note\">Cost: the bytes the fprop GEMM reads per element of the activation and the weight, "
           "element codes and scales in the native layout, at 4096×4096 · 4096×4096 (a small layer pads its "
           "scale blocks); native hardware: where that pair of scale layouts runs without emulation.</p>\n";
      h << "<table class=\"training\">\n<tr><th>Rank</th><th>Recipe</th><th>" << xmlEscape(tm.label + tunit)
        << "<br/>mean ± 95 %</th><th>Δ vs FP32 ± 95 %<br/>(same-seed pairs)</th><th>per seed</th><th>seeds</th>"
           "<th>comparison</th><th>bytes / element<br/>(fprop, with scales)</th><th>scales (activation / "
           "weight)</th><th>native hardware</th><th>runs</th></tr>\n";
      for (size_t i : g) writeTrainingRow(h, d, i, base);
      h << "</table>\n";
    }
  }
}

/// The per-layer advice tables (one per advised run).
void writeAdvice(Html& h, const SessionDecision& d, const ReportInput& in) {
  h << "<h2>Per-layer advice</h2>\n";
  if (d.advice.empty())
    h << "<p class=\"empty\">" << xmlEscape(hintAdvice(d, in.path.empty() ? std::string("SESSION.h5") : in.path))
      << "</p>\n";
  for (const AdviceTable& a : d.advice) {
    h << "<h3>Run " << xmlEscape(a.advised_run) << " (advice run " << xmlEscape(a.run_id) << ")</h3>\n";
    h << "<p class=\"note\">" << xmlEscape(a.loss_name) << ": every site in high precision " << g4(a.high_loss)
      << ", every site in the recipe " << g4(a.full_loss) << " (Δ "
      << xmlEscape(adviceDeltaText(a.full_delta, a.full_ci_low, a.full_ci_high))
      << ", 95 % t-interval of the same-seed differences); " << std::to_string(a.seeds) << " seed(s), "
      << std::to_string(a.steps) << " steps per run."
      << (a.problem.empty() ? "" : " Incomplete: " + xmlEscape(a.problem)) << "</p>\n";
    h << "<table class=\"advice\">\n<tr><th>group</th><th>Δ loss [95 % interval]</th><th>sd over seeds</th>"
         "<th>share of the full Δ</th><th>mean block SQNR (dB)</th><th>advice</th></tr>\n";
    for (const AdviceGroupRow& r : a.groups)
      h << "<tr data-group=\"" << xmlEscape(r.group) << "\" data-delta=\"" << exact(r.delta) << "\" data-spread=\""
        << exact(r.spread) << "\" data-ci-low=\"" << exact(r.ci_low) << "\" data-ci-high=\"" << exact(r.ci_high)
        << "\"><td>" << xmlEscape(r.group) << "</td><td class=\"num\">"
        << xmlEscape(adviceDeltaText(r.delta, r.ci_low, r.ci_high)) << "</td><td class=\"num\">"
        << fmt("%.4f", r.spread) << "</td><td class=\"num\">"
        << (std::isfinite(r.share) ? fmt("%.1f %%", 100 * r.share) : std::string("—")) << "</td><td class=\"num\">"
        << g4(r.sqnr_db) << "</td><td>" << xmlEscape(adviceVerdictText(r)) << "</td></tr>\n";
    h << "</table>\n<p>Policy: "
      << xmlEscape(a.policy.empty() ? std::string("(none: every site in the recipe)") : a.policy)
      << "</p>\n<details><summary>The advised config</summary><pre>" << xmlEscape(a.config) << "</pre></details>\n";
  }
}

/// The checkpoint what-if tables: each weight's SQNR as stored and re-quantized by each recipe.
void writeWhatIf(Html& h, const SessionDecision& d) {
  h << "<h2>Checkpoint what-if</h2>\n";
  if (d.what_if.empty()) h << "<p class=\"empty\">" << xmlEscape(hintWhatIf()) << "</p>\n";
  for (const WhatIfTable& t : d.what_if) {
    h << "<h3>" << xmlEscape(t.run_id) << (t.source.empty() ? "" : " (" + xmlEscape(t.source) + ")") << "</h3>\n";
    h << "<p class=\"note\">SQNR (dB) of each weight against its float32 dequantized value: as stored, and "
         "re-quantized by each recipe.</p>\n<table class=\"what-if\">\n<tr><th>tensor</th><th>stored</th>";
    for (const std::string& id : t.recipes) h << "<th>" << xmlEscape(id) << "</th>";
    h << "</tr>\n";
    for (const CheckpointSqnr& row : t.rows) {
      h << "<tr data-tensor=\"" << xmlEscape(row.tensor) << "\"><td>" << xmlEscape(row.tensor)
        << "</td><td class=\"num\">" << g4(row.stored_db) << "</td>";
      for (const std::string& id : t.recipes) {
        const auto it =
            std::find_if(row.what_if_db.begin(), row.what_if_db.end(), [&](const auto& p) { return p.first == id; });
        h << "<td class=\"num\">" << (it == row.what_if_db.end() ? std::string("—") : g4(it->second)) << "</td>";
      }
      h << "</tr>\n";
    }
    h << "</table>\n";
  }
}

/// The configs without seed and name, each once, with the runs that used it (a sweep's seeds share one).
void writeConfigs(Html& h, const ReportInput& in) {
  std::vector<std::string> configs;
  std::vector<std::vector<const RunInfo*>> users;
  for (const RunInfo& r : in.runs) {
    std::string c = r.config_json;
    try {
      Json j = JsonDocument::parse(r.config_json).root();
      if (j.is_object()) {
        j.erase("seed");
        j.erase("name");
        j.erase("id");
      }
      c = spacedJson(j);
    } catch (const JsonTextError&) {
    }
    const auto it = std::find(configs.begin(), configs.end(), c);
    if (it == configs.end()) {
      configs.push_back(c);
      users.push_back({&r});
    } else {
      users[size_t(it - configs.begin())].push_back(&r);
    }
  }
  h << "<h2>Configs</h2>\n<p class=\"note\">Each distinct config once (without its seed and name), with the runs "
       "that used it.</p>\n";
  for (size_t i = 0; i < configs.size(); ++i) {
    std::string ids, seeds;
    for (const RunInfo* r : users[i]) {
      ids += (ids.empty() ? "" : ", ") + r->id;
      seeds += (seeds.empty() ? "" : ", ") + std::to_string(r->seed);
    }
    const RunInfo& f = *users[i].front();
    h << "<h3>" << xmlEscape(f.type) << " config " << std::to_string(i + 1) << ": " << std::to_string(users[i].size())
      << " run" << (users[i].size() == 1 ? "" : "s") << ", seed" << (users[i].size() == 1 ? " " : "s ")
      << xmlEscape(seeds) << "</h3>\n<p class=\"note\">" << xmlEscape(ids) << " · "
      << xmlEscape(f.backend + (f.device.empty() ? "" : " (" + f.device + ")")) << "</p>\n<p class=\"config\"><code>"
      << xmlEscape(configs[i]) << "</code></p>\n";
  }
}

/// The app versions of the runs, and where each scale layout runs natively (recipe_cost.h).
void writeVersionsAndSources(Html& h, const ReportInput& in) {
  std::set<std::string> versions;
  for (const RunInfo& r : in.runs)
    if (!r.app_version.empty()) versions.insert(r.app_version);
  std::string vs;
  for (const std::string& v : versions) vs += (vs.empty() ? "" : ", ") + v;
  h << "<h2>Versions and sources</h2>\n<p>Runs written by FP8 Lab " << xmlEscape(vs.empty() ? std::string("?") : vs)
    << "; this report by FP8 Lab " << FP8LAB_VERSION
    << ". Where each scale layout runs natively, and why (the table of core/scaling/recipe_cost.h):</p>\n";
  h << "<table class=\"sources\">\n<tr><th>scales</th><th>cuBLASLt mode</th><th>hardware</th><th>source</th></tr>\n";
  for (const ScaleKind& k : scaleKinds())
    h << "<tr><td>" << xmlEscape(k.layout) << "</td><td>" << xmlEscape(k.lt_mode.empty() ? std::string("—") : k.lt_mode)
      << "</td><td>" << xmlEscape(k.hardware) << "</td><td>" << xmlEscape(k.source) << "</td></tr>\n";
  h << "</table>\n</body>\n</html>\n";
}

} // namespace

std::string sessionReportHtml(const ReportInput& in, const DatasetSource& read) {
  return sessionReportHtml(in, read, nullptr);
}

std::string sessionReportHtml(const ReportInput& in, const DatasetSource& read, std::vector<std::string>* figures) {
  const SessionDecision d = decideSession(in.runs, in.metric, read);
  Html h;
  h.figures = figures;
  writeHeader(h, in);
  const RankingMetric &gm = *d.gemm_metric, &tm = *d.training_metric;
  const ReportContext c{d,
                        bySetting(d.gemm),
                        bySetting(d.training),
                        gm,
                        tm,
                        gm.unit == "1" ? "" : " (" + gm.unit + ")",
                        tm.unit == "1" ? "" : " (" + tm.unit + ")"};
  writeAnswer(h, c);
  writeGemmRanking(h, c);
  writeTraining(h, c, read);
  writeAdvice(h, d, in);
  writeWhatIf(h, d);
  writeConfigs(h, in);
  writeVersionsAndSources(h, in);
  return h.s;
}

} // namespace fp8lab
