// FP8 Lab — the kernel check's report (core/experiment/kernel_check/kernel_check_run.h): the comparison of a
// kernel's output with the CPU reference, the table of fitted accumulation models, the fit and the
// verdict, as the text `fp8lab-cli gemm --observed` prints and as the JSON object "check" of
// `gemm --json`.
#pragma once

#include "experiment/kernel_check/kernel_check_run.h"
#include "json/json_document.h"

#include <string>

namespace fp8lab {

/// The report as text lines (each ending in a newline, starting with an empty line): observed
/// against the reference model (output type, shape), identical share, ULP statistics (units in the
/// last place of the output type, kernel_check.h), first differing element and worst tile as (row,
/// col), NaN / Inf counts, max |observed - reference| and SQNR (dB), the ULP histogram; with a fit,
/// one row per model (identical share, max and median ULP) and the fit's verdict; then the
/// verdict line.
std::string kernelCheckText(const KernelCheckResult& r, const KernelCheckConfig& cfg);

/// The same as a JSON object: observed, reference, criteria, passed, verdict, failures,
/// comparison (counts as numbers; ULPs, values and dB as numbers or the strings "nan", "inf",
/// "-inf"; element indices as [row, col] or null), ulp_histogram_bins (labels) and, with a fit,
/// fit (models, best, runner_up, margin_points, equivalent, ..., seconds).
Json kernelCheckJson(const KernelCheckResult& r, const KernelCheckConfig& cfg);

} // namespace fp8lab
