// FP8 Lab — one run of a session as CSV files (what `fp8lab-cli export --csv` writes): one file per
// dataset, rows of comma-separated values in the shortest round-trip decimal text, plus
// metrics.csv, attributes.csv and config.json.
#pragma once

#include "common/progress.h"
#include "json/json_document.h"
#include "session/session.h"

#include <string>
#include <vector>

namespace fp8lab {

/// The shortest text that reads back as the same value: a float32 dataset's element as float32
/// (std::to_chars of the float, so "0.1" for 0.1f, not 0.10000000149011612), any other as a
/// double; "nan", "inf", "-inf" for the non-finite values (core/common/number_text.h).
std::string csvNumber(double v, bool is_float32);

/// The CSV text of `d`'s values as `rows` rows of `cols` values (row-major): rows end in '\n',
/// values are separated by ','. UInt8 and Int64 values are written as decimal integers, exactly
/// (an Int64 above 2^53 keeps every digit), Float32 ones as csvNumber(v, true), Float64 ones as csvNumber(v, false).
std::string datasetCsv(const Dataset& d, int64_t rows, int64_t cols);

/// Writes dataset `d` of run `run` as CSV (datasetCsv) to `path`, reading a 2-D dataset band by
/// band (about 8 MiB of float64 per band), never the whole map at once. False with *error: "cannot
/// write PATH: <strerror>", the reader's errors, or "write error on PATH".
bool exportDatasetCsv(SessionReader& rd, const std::string& run, const DatasetInfo& d, const std::string& path,
                      std::string* error);

/// metrics.csv: the header "metric,value,units,meaning", then per metric (sorted by name)
/// "name,value,units,\"meaning\"" with the value as csvNumber(v, false); the meaning is not escaped.
std::string metricsCsv(const RunInfo& run);

/// attributes.csv: the header "attribute,value", the rows id, type, seed, backend, device (quoted),
/// created_utc and app_version, then every run attribute (sorted by name) as name,"value" with '"'
/// doubled; numbers as csvNumber(v, false), integers in decimal.
std::string attributesCsv(const RunInfo& run);

/// One CSV file written by exportRunCsv.
struct CsvExportFile {
  std::string dataset; ///< the dataset's path in the run ("weights/fc1/kernel")
  std::string file;    ///< the file written (`prefix` + the path with '/' as "__" + ".csv")
  std::string shape;   ///< "[784, 130]"
};

/// Exports run `run` of `rd` to CSV: the datasets named in `wanted` (all when empty) in the run's
/// (sorted) order, each to `prefix` + name + ".csv" (`prefix`: the output directory with its
/// trailing '/'; the directory must exist), then metrics.csv, attributes.csv and config.json (the
/// run's config text as stored). Progress: the share of the run's datasets passed, with the
/// dataset's path. Errors (nullopt, *error): "run ID has no dataset 'P'" for a wanted path the run
/// lacks (before anything is written); exportDatasetCsv's; "cannot write FILE" for the three
/// summary files.
std::optional<std::vector<CsvExportFile>> exportRunCsv(SessionReader& rd, const RunInfo& run, const std::string& prefix,
                                                       const std::vector<std::string>& wanted,
                                                       const ProgressFn& progress, std::string* error);

/// What `export --json` prints: {"run": run_id, "dir": dir, "files": [{"dataset", "file", "shape"}…]}.
Json csvExportJson(const std::string& run_id, const std::string& dir, const std::vector<CsvExportFile>& files);

/// What `export` prints: "exported run ID: N dataset(s) + metrics.csv, attributes.csv, config.json
/// -> DIR\n".
std::string csvExportText(const std::string& run_id, const std::string& dir, size_t files);

} // namespace fp8lab
