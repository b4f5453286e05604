// One run of a session as CSV files (session_export.h).
#include "session/session_export.h"

#include "common/number_text.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace fp8lab {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

bool writeText(std::FILE* f, const std::string& s) {
  return std::fwrite(s.data(), 1, s.size(), f) == s.size();
}

std::string shapeText(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

/// Appends row `i` of `d` (as rows of `cols` values) to `s`, with its '\n'.
void appendCsvRow(std::string& s, const Dataset& d, int64_t i, int64_t cols) {
  const bool f32 = d.dtype == DType::Float32;
  for (int64_t j = 0; j < cols; ++j) {
    if (j) s += ',';
    const int64_t k = i * cols + j;
    if (d.dtype == DType::Int64)
      s += std::to_string(d.i64[static_cast<size_t>(k)]); // exact: no trip through double
    else if (d.dtype == DType::UInt8)
      s += std::to_string(d.u8[static_cast<size_t>(k)]);
    else
      s += csvNumber(d.valueAt(k), f32);
  }
  s += '\n';
}

/// Writes `text` to `path` (created or truncated); false when it cannot be opened.
bool writeFile(const std::string& path, const std::string& text) {
  File f(std::fopen(path.c_str(), "wb"));
  if (!f) return false;
  writeText(f.get(), text);
  return true;
}

} // namespace

std::string csvNumber(double v, bool is_float32) {
  return is_float32 ? shortestText(static_cast<float>(v)) : shortestText(v);
}

std::string datasetCsv(const Dataset& d, int64_t rows, int64_t cols) {
  std::string s;
  for (int64_t i = 0; i < rows; ++i) appendCsvRow(s, d, i, cols);
  return s;
}

bool exportDatasetCsv(SessionReader& rd, const std::string& run, const DatasetInfo& d, const std::string& path,
                      std::string* error) {
  File f(std::fopen(path.c_str(), "wb"));
  if (!f) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  auto write = [&](const Dataset& part, int64_t rows, int64_t cols) { // row by row: one line held at a time
    std::string line;
    for (int64_t i = 0; i < rows; ++i) {
      line.clear();
      appendCsvRow(line, part, i, cols);
      if (!writeText(f.get(), line)) return false;
    }
    return true;
  };
  if (d.shape.size() == 2) {
    const int64_t band = std::max<int64_t>(1, (int64_t(8) << 20) / std::max<int64_t>(1, d.shape[1] * 8));
    for (int64_t r0 = 0; r0 < d.shape[0]; r0 += band) {
      Region g;
      g.row0 = r0;
      g.rows = std::min(band, d.shape[0] - r0);
      auto part = rd.readRegion(run, d.path, g);
      if (!part.ok()) {
        *error = part.errors();
        return false;
      }
      if (!write(part.value, g.rows, d.shape[1])) {
        *error = "write error on " + path;
        return false;
      }
    }
  } else {
    auto all = rd.read(run, d.path);
    if (!all.ok()) {
      *error = all.errors();
      return false;
    }
    const int64_t cols = d.shape.size() > 1 ? all.value.elementCount() / d.shape[0] : 1;
    if (!write(all.value, d.shape.empty() ? 1 : d.shape[0], cols)) {
      *error = "write error on " + path;
      return false;
    }
  }
  if (std::fclose(f.release()) != 0) {
    *error = "write error on " + path;
    return false;
  }
  return true;
}

std::string metricsCsv(const RunInfo& run) {
  std::string s = "metric,value,units,meaning\n";
  for (const auto& [name, m] : run.metrics)
    s += name + "," + csvNumber(m.value, false) + "," + m.units + ",\"" + m.meaning + "\"\n";
  return s;
}

std::string attributesCsv(const RunInfo& run) {
  std::string s = "attribute,value\nid," + run.id + "\ntype," + run.type + "\nseed," + std::to_string(run.seed) +
                  "\nbackend," + run.backend + "\ndevice,\"" + run.device + "\"\ncreated_utc," + run.created_utc +
                  "\napp_version," + run.app_version + "\n";
  for (const auto& [name, v] : run.attrs) {
    std::string t;
    if (auto str = std::get_if<std::string>(&v))
      t = *str;
    else if (auto d = std::get_if<double>(&v))
      t = csvNumber(*d, false);
    else
      t = std::to_string(std::get<int64_t>(v));
    std::string quoted;
    for (char c : t) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    s += name + ",\"" + quoted + "\"\n";
  }
  return s;
}

std::optional<std::vector<CsvExportFile>> exportRunCsv(SessionReader& rd, const RunInfo& run, const std::string& prefix,
                                                       const std::vector<std::string>& wanted,
                                                       const ProgressFn& progress, std::string* error) {
  auto isWanted = [&](const std::string& p) {
    return wanted.empty() || std::find(wanted.begin(), wanted.end(), p) != wanted.end();
  };
  for (const std::string& w : wanted)
    if (std::none_of(run.datasets.begin(), run.datasets.end(), [&](const DatasetInfo& d) { return d.path == w; })) {
      *error = "run " + run.id + " has no dataset '" + w + "'";
      return std::nullopt;
    }
  std::vector<CsvExportFile> written;
  size_t k = 0;
  for (const DatasetInfo& d : run.datasets) {
    ++k;
    if (!isWanted(d.path)) continue;
    std::string name = d.path;
    for (size_t p = name.find('/'); p != std::string::npos; p = name.find('/', p + 2)) name.replace(p, 1, "__");
    const std::string path = prefix + name + ".csv";
    reportProgress(progress, double(k) / double(run.datasets.size()), d.path);
    if (!exportDatasetCsv(rd, run.id, d, path, error)) return std::nullopt;
    written.push_back({d.path, path, shapeText(d.shape)});
  }
  const std::pair<const char*, std::string> summaries[] = {
      {"metrics.csv", metricsCsv(run)}, {"attributes.csv", attributesCsv(run)}, {"config.json", run.config_json}};
  for (const auto& [file, text] : summaries)
    if (!writeFile(prefix + file, text)) {
      *error = "cannot write " + prefix + file;
      return std::nullopt;
    }
  return written;
}

Json csvExportJson(const std::string& run_id, const std::string& dir, const std::vector<CsvExportFile>& files) {
  Json a = Json::array();
  for (const CsvExportFile& f : files) a.push_back({{"dataset", f.dataset}, {"file", f.file}, {"shape", f.shape}});
  return {{"run", run_id}, {"dir", dir}, {"files", a}};
}

std::string csvExportText(const std::string& run_id, const std::string& dir, size_t files) {
  return "exported run " + run_id + ": " + std::to_string(files) +
         " dataset(s) + metrics.csv, attributes.csv, config.json -> " + dir + "\n";
}

} // namespace fp8lab
