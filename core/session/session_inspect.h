// FP8 Lab — what a session file holds as the JSON of `fp8lab-cli inspect --json`, `runs list` and
// `merge --json` (the text of `inspect` is session_summary.h's). Non-finite numbers are the strings
// "nan", "inf", "-inf"; objects have their keys sorted (nlohmann::json's std::map).
#pragma once

#include "json/json_document.h"
#include "session/session.h"

#include <string>
#include <vector>

namespace fp8lab {

/// An attribute value as JSON: a string, a double as numberJson (json/json_number.h), or an integer.
Json attrJson(const AttrValue& v);
/// Every attribute of `a` as one object.
Json attrsJson(const Attributes& a);

/// The issues of `st` as an array of {"severity": "error"|"warning"|"info", "what": the code's
/// name (codeName), "where", "detail"}.
Json issuesJson(const Status& st);

/// What `inspect --json` prints for a file that could not be opened: {"file", "ok": false,
/// "issues": issuesJson(st)}.
Json sessionOpenFailureJson(const std::string& file, const Status& st);

/// A run's stored config as JSON: the parsed object when `config_json` is a JSON object (floating-
/// point −0 read as 0 and integers above INT64_MAX as doubles, as Qt's QJsonDocument reads them),
/// else the text itself as a string.
Json storedConfigJson(const std::string& config_json);

/// What `inspect --json` prints for session `info` read from `file` (as named on the command line):
/// {"file", "ok": true, "format_version", "app_version", "created_utc", "modified_utc", "attrs",
/// "runs", "issues": issuesJson(issues)}. Each run (only the run `only` when it is not empty) is
/// {"id", "type", "seed" (a decimal string: a uint64 does not fit a JSON double), "backend",
/// "device", "created_utc", "app_version", "config" (storedConfigJson), "config_text", "attrs",
/// "metrics": {name: {"value", "units", "meaning"}}, "datasets": [{"path", "dtype", "shape",
/// "chunked", "compressed", "attrs"}], "groups": {group: attrs}}.
Json sessionInspectJson(const std::string& file, const SessionInfo& info, const Status& issues,
                        const std::string& only);

/// What `runs list --json` prints: an array of {"id", "type", "created_utc", "datasets": count},
/// in the file's (sorted) order.
Json runListJson(const SessionInfo& info);
/// What `runs list` prints: each run id on a line of its own.
std::string runListText(const SessionInfo& info);

/// What `merge --json` prints: {"file": out, "runs": the output's run count, "notes": [...]}.
Json mergeJson(const std::string& out, size_t runs, const std::vector<std::string>& notes);
/// What `merge` prints: "merged N file(s) -> OUT (R runs)\n".
std::string mergeText(const std::string& out, size_t inputs, size_t runs);

} // namespace fp8lab
