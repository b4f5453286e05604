// FP8 Lab — the decision of a session (session_decision.h) as the text and JSON that
// `fp8lab-cli decide` prints: the GEMM recipes ranked with their 95 % intervals over seeds and
// their cost, the training runs against the FP32 baseline, the per-layer advice and the
// checkpoint what-if tables.
#pragma once

#include "experiment/decision/session_decision.h"
#include "json/json_document.h"

#include <string>

namespace fp8lab {

/// The decision as text: four parts (GEMM recipes, training runs, per-layer advice, checkpoint
/// what-if), each with its hint when empty. Numbers: intervals by intervalText, sd with 3
/// significant digits, Δ vs FP32 with a sign and 4 significant digits, advice Δ and spread with
/// 4 decimals, SQNR (dB) with 2 decimals, losses with 5 significant digits. `session_path` names
/// the session in the advice hint's commands (hintAdvice(d, session_path)).
std::string sessionDecisionText(const SessionDecision& d, const std::string& session_path = "SESSION.h5");

/// The decision as a JSON object: gemm_metric, gemm_higher_is_better, gemm (one object per
/// recipe: recipe, setting, rank, place, n, mean, sd, half_width_95, lo, hi,
/// not_distinguishable_from, runs, seeds, values and its cost), training_metric, training (the
/// same plus baseline and delta_vs_fp32), advice and what_if. Non-finite numbers are the strings
/// "nan", "inf", "-inf".
Json sessionDecisionJson(const SessionDecision& d);

} // namespace fp8lab
