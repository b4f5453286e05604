// FP8 Lab — what `fp8lab-cli run` and `rerun` report for a finished GEMM run and a re-run: the
// JSON result objects (front ends print them; keys are written sorted) and the text report. Non-
// finite numbers are the JSON strings "nan", "inf", "-inf" (JSON has no such numbers).
#pragma once

#include "experiment/experiment_registry.h"
#include "experiment/gemm/gemm_run.h"
#include "json/json_document.h"
#include "session/session.h"

#include <string>

namespace fp8lab {

/// The line a front end prints on stderr for a run that appendRuns stored under another id than
/// its own (WriteOptions::OnConflict::Rename took "-2", "-3", ...): "note: run ID stored as ID-2
/// (id taken)"; "" when `stored_id` is `id`.
std::string renamedRunNote(const std::string& id, const std::string& stored_id);

/// `v` as a JSON value: a number, or "nan", "inf", "-inf" for the non-finite values.
Json reportJsonNumber(double v);

/// `v` as std::to_chars writes it with 6 significant digits (printf's %.6g: "12.3457", "1e-07",
/// "-0"), or "nan", "inf", "-inf": the numbers of the text reports of `run` and `sweep`.
std::string sixDigitText(double v);

/// The run's metrics as a JSON object {name: value} (reportJsonNumber).
Json runMetricsJson(const Run& run);

/// The JSON result of a saved GEMM run: file `file`, run `stored_id` (the id it was stored
/// under), type "gemm", backend, device, algorithm (run attribute, "" when absent), metrics
/// (runMetricsJson), warnings (the run attribute "warnings" when it is a JSON array, else []),
/// and check (the verdict attribute of the run's "check" group) when there is one. The backend
/// request facts are the front end's (backend_choice).
Json gemmRunResultJson(const Run& run, const std::string& file, const std::string& stored_id);

/// The two text lines of a saved GEMM run:
///   "run ID (gemm MxKxN, FA x FB, SCALING, BACKEND backend: DEVICE) -> FILE"
///   "  SQNR s dB  rel_fro r  max_abs m  (quantization q dB, accumulation a dB)"
/// with the shape, formats and scaling the run stored (attributes m, k, n, format_a, format_b,
/// scaling; `cfg`'s where absent: tensor operands bring their own shape), metrics in
/// sixDigitText ("-" when absent); each line ends with a newline.
std::string gemmRunReportText(const Run& run, const std::string& stored_id, const GemmExperimentConfig& cfg,
                              const std::string& file);

/// The JSON result of `rerun` of run `id` of `file`: file, run, type (the stored run's),
/// identical, datasets_compared, metrics_compared, backend "cpu", differences (one string each).
Json rerunResultJson(const std::string& file, const std::string& id, const Run& stored, const RerunResult& r);

} // namespace fp8lab
