// FP8 Lab — what a session file holds, as the text `fp8lab-cli inspect` prints: the file's
// metadata, a table of its runs, and per run its attributes, first non-finite value (training),
// metrics with units and meanings, and optionally its config and datasets; then the issues found
// while opening it.
#pragma once

#include "common/issue.h"
#include "session/session.h"

#include <string>

namespace fp8lab {

/// The summary of `info` (read from `file`, as named in the first line). `only` = one run's id
/// ("" = every run; with an id the runs table is left out and that run's config and datasets are
/// shown); `verbose` shows every run's config and datasets. `issues`: what opening found (listed
/// at the end). Metric values are the shortest round-trip text of the double; unit "1" is
/// written as none. Column widths follow the longest run id and type.
std::string sessionSummaryText(const std::string& file, const SessionInfo& info, const Status& issues,
                               const std::string& only, bool verbose);

} // namespace fp8lab
