// fp8lab-cli run / sweep / rerun / train — experiment configs (JSON) into session runs
// (cmd_run.cpp), and what other commands share with them: reading a config, saving runs.
#pragma once

#include "json/json_document.h"
#include "session/session.h"

#include <QString>

#include <string>
#include <vector>

namespace fp8lab::cli {

/// A config file (or the embedded default when `path` is empty) read and parsed: at most 64 MiB,
/// a regular file (readInputFile), then parseConfigText (valid JSON, an object at the top, no
/// key given twice in one object).
struct LoadedConfig {
  JsonDocument doc;
  std::string text;
  QString origin;
};
/// Loads `path`; false after printing the error (naming the file, line and column).
bool loadConfig(const QString& path, LoadedConfig* c);

/// Appends runs to `out` (Rename on conflict; `ids`, when given, receives the id each run got),
/// printing on stderr a note for each run stored under another id (renamedRunNote: "note: run ID
/// stored as ID-2 (id taken)"); false after printing the error.
bool appendRunsToFile(const QString& out, const std::vector<Run>& runs, bool compress, std::vector<std::string>* ids);

} // namespace fp8lab::cli
