// What a session file holds, as text (session_summary.h).
#include "session/session_summary.h"

#include "common/number_text.h"

#include <algorithm>

namespace fp8lab {

namespace {

std::string attrText(const AttrValue& v) {
  if (auto s = std::get_if<std::string>(&v)) return *s;
  if (auto d = std::get_if<double>(&v)) return shortestText(*d);
  return std::to_string(std::get<int64_t>(v));
}

std::string shapeText(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

/// `s` without leading and trailing whitespace, each newline followed by `indent`.
std::string indentedBlock(const std::string& s, const std::string& indent) {
  const auto space = [](unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  size_t a = 0, b = s.size();
  while (a < b && space(s[a])) ++a;
  while (b > a && space(s[b - 1])) --b;
  std::string t;
  for (size_t i = a; i < b; ++i) t += s[i] == '\n' ? "\n" + indent : std::string(1, s[i]);
  return t;
}

} // namespace

std::string sessionSummaryText(const std::string& file, const SessionInfo& info, const Status& issues,
                               const std::string& only, bool verbose) {
  std::string t = file + ": FP8 Lab session, format_version " + std::to_string(info.format_version) + ", written by " +
                  info.app_version + ", created " + info.created_utc + ", modified " + info.modified_utc + "\n";
  t += std::to_string(info.runs.size()) + " run(s)\n";
  if (only.empty() && !info.runs.empty()) {
    // Columns as wide as their longest entry (a 10-letter "checkpoint" ran into the seed).
    int id_w = 3, type_w = 4;
    for (const auto& r : info.runs) {
      id_w = std::max(id_w, textWidth(r.id));
      type_w = std::max(type_w, textWidth(r.type));
    }
    const std::vector<int> w{-id_w, -type_w, -20, -8, -20, 0};
    t += "\n  " + tableLine({"run", "type", "seed", "backend", "created", "datasets"}, w, "  ");
    for (const auto& r : info.runs)
      t += "  " + tableLine({r.id, r.type, std::to_string(r.seed), r.backend, r.created_utc,
                             std::to_string(r.datasets.size())},
                            w, "  ");
  }
  for (const auto& r : info.runs) {
    if (!only.empty() && r.id != only) continue;
    t += "\nrun " + r.id + " (" + r.type + ")\n";
    for (const auto& [k, v] : r.attrs) t += "  " + k + " = " + attrText(v) + "\n";
    if (const auto nf = r.group_attrs.find("nonfinite"); nf != r.group_attrs.end()) {
      // training runs: where the first NaN / ±Inf appeared (group nonfinite, docs/session-format.md)
      const bool found = attrInt(nf->second, "found").value_or(0) == 1;
      t += "  first non-finite value: " +
           (found ? attrString(nf->second, "description").value_or("?")
                  : attrString(nf->second, "description").value_or("none")) +
           "\n";
    }
    if (!r.metrics.empty()) {
      t += "  metrics:\n";
      int name_w = 16;
      for (const auto& [k, m] : r.metrics) name_w = std::max(name_w, textWidth(k));
      // Unit "1" (a ratio, a fraction) prints as none: "0.789 1" read as two numbers.
      for (const auto& [k, m] : r.metrics)
        t += "    " + padded(k, -name_w) + " " + padded(shortestText(m.value), 24) + " " +
             padded(m.units == "1" ? std::string() : m.units, -6) + "  " + m.meaning + "\n";
    }
    if (verbose || !only.empty()) {
      t += "  config: " + indentedBlock(r.config_json, "          ") + "\n";
      t += "  datasets:\n";
      for (const auto& d : r.datasets)
        t += "    " + padded(d.path, -36) + " " + padded(toString(d.dtype), -8) + " " +
             padded(shapeText(d.shape), -14) + (d.compressed ? " gzip" : "") + "  " +
             attrString(d.attrs, "meaning").value_or("") + "\n";
    }
  }
  if (!issues.issues.empty()) {
    t += "\nissues:\n";
    for (const auto& i : issues.issues) t += "  " + i.toString() + '\n';
  }
  return t;
}

} // namespace fp8lab
