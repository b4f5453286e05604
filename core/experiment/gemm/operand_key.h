// FP8 Lab — which GEMM runs multiplied the same operands: the key by which the Compare view groups
// runs recipe against recipe (and any front end that ranks GEMM runs on the same A and B).
#pragma once

#include "json/json_document.h"

#include <cstdint>
#include <string>
#include <utility>

namespace fp8lab {

/// What a GEMM run says about its operands (a stored run's type, config and attributes; the
/// shapes of its inputs/A and inputs/B datasets where they are stored).
struct GemmOperandFacts {
  std::string type;               ///< the run type: "gemm", "gemm-trained-weights", ...
  Json config = Json::object();   ///< the stored config (an object; anything else counts as empty)
  std::string a_origin, b_origin; ///< the run attributes a_origin / b_origin ("" when absent)
  std::string m, k, n;            ///< the run attributes m, k, n as text ("" when absent)
  std::pair<int64_t, int64_t> a_dims{0, 0}, b_dims{0, 0}; ///< inputs/A [M, K], inputs/B [K, N]; 0: not stored
};

/// What makes two GEMM runs' operands the same, as a key (compact JSON; equal keys: same
/// operands): M×K×N (the attributes, else the stored inputs' shapes, else the config's m, k, n),
/// where A and B came from (a_origin / b_origin: distribution, seed and stream of random operands,
/// the file of imported ones) and the config keys that change them without showing in the origin
/// (the "a" / "b" objects — scale, sigma, outliers, transpose —, the legacy "sigma",
/// "distribution", "input", "import_path*", "session_file", "training_run", and the epilogue
/// alpha, beta, c, bias); the config's seed when no origin is stored. "" for runs that are not
/// GEMMs (type not starting with "gemm") or do not say where their operands came from (no origin
/// attributes, and no seed, tensor or import path in the config): such runs are never grouped.
std::string gemmOperandKey(const GemmOperandFacts& run);

} // namespace fp8lab
