// The JSON of inspect, runs list and merge (session_inspect.h).
#include "session/session_inspect.h"

#include "json/json_number.h"

#include <cstdint>

namespace fp8lab {
namespace {

/// Qt's reading of JSON numbers: −0.0 becomes 0, an integer beyond int64 a double.
void asQtReads(Json& j) {
  if (j.is_structured()) {
    for (auto& v : j) asQtReads(v);
  } else if (j.is_number_float()) {
    if (j.get<double>() == 0) j = 0.0;
  } else if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX)) {
    j = static_cast<double>(j.get<uint64_t>());
  }
}

Json shapeJson(const std::vector<int64_t>& s) {
  Json a = Json::array();
  for (int64_t x : s) a.push_back(x);
  return a;
}

} // namespace

Json attrJson(const AttrValue& v) {
  if (auto s = std::get_if<std::string>(&v)) return *s;
  if (auto d = std::get_if<double>(&v)) return numberJson(*d);
  return std::get<int64_t>(v);
}

Json attrsJson(const Attributes& a) {
  Json o = Json::object();
  for (const auto& [k, v] : a) o[k] = attrJson(v);
  return o;
}

Json issuesJson(const Status& st) {
  Json a = Json::array();
  for (const Issue& i : st.issues)
    a.push_back(
        {{"severity", severityName(i.severity)}, {"what", codeName(i.code)}, {"where", i.where}, {"detail", i.detail}});
  return a;
}

Json sessionOpenFailureJson(const std::string& file, const Status& st) {
  return {{"file", file}, {"ok", false}, {"issues", issuesJson(st)}};
}

Json storedConfigJson(const std::string& config_json) {
  Json cfg = Json::parse(config_json, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object()) return config_json;
  asQtReads(cfg);
  return cfg;
}

Json sessionInspectJson(const std::string& file, const SessionInfo& info, const Status& issues,
                        const std::string& only) {
  Json runs = Json::array();
  for (const RunInfo& r : info.runs) {
    if (!only.empty() && r.id != only) continue;
    Json metrics = Json::object();
    for (const auto& [k, m] : r.metrics)
      metrics[k] = {{"value", numberJson(m.value)}, {"units", m.units}, {"meaning", m.meaning}};
    Json ds = Json::array();
    for (const DatasetInfo& d : r.datasets)
      ds.push_back({{"path", d.path},
                    {"dtype", toString(d.dtype)},
                    {"shape", shapeJson(d.shape)},
                    {"chunked", d.chunked},
                    {"compressed", d.compressed},
                    {"attrs", attrsJson(d.attrs)}});
    Json groups = Json::object();
    for (const auto& [g, a] : r.group_attrs) groups[g] = attrsJson(a);
    runs.push_back({{"id", r.id},
                    {"type", r.type},
                    {"seed", std::to_string(r.seed)},
                    {"backend", r.backend},
                    {"device", r.device},
                    {"created_utc", r.created_utc},
                    {"app_version", r.app_version},
                    {"config", storedConfigJson(r.config_json)},
                    {"config_text", r.config_json},
                    {"attrs", attrsJson(r.attrs)},
                    {"metrics", metrics},
                    {"datasets", ds},
                    {"groups", groups}});
  }
  return {{"file", file},
          {"ok", true},
          {"format_version", info.format_version},
          {"app_version", info.app_version},
          {"created_utc", info.created_utc},
          {"modified_utc", info.modified_utc},
          {"attrs", attrsJson(info.attrs)},
          {"runs", runs},
          {"issues", issuesJson(issues)}};
}

Json runListJson(const SessionInfo& info) {
  Json a = Json::array();
  for (const RunInfo& r : info.runs)
    a.push_back({{"id", r.id}, {"type", r.type}, {"created_utc", r.created_utc}, {"datasets", r.datasets.size()}});
  return a;
}

std::string runListText(const SessionInfo& info) {
  std::string t;
  for (const RunInfo& r : info.runs) t += r.id + '\n';
  return t;
}

Json mergeJson(const std::string& out, size_t runs, const std::vector<std::string>& notes) {
  return {{"file", out}, {"runs", runs}, {"notes", notes}};
}

std::string mergeText(const std::string& out, size_t inputs, size_t runs) {
  return "merged " + std::to_string(inputs) + " file(s) -> " + out + " (" + std::to_string(runs) + " runs)\n";
}

} // namespace fp8lab
