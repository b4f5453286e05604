// FP8 Lab — checking a kernel's GEMM output against the CPU reference: the output a kernel
// produced (the "observed" D) compared element by element, in the bits of the GEMM's output type,
// with the D of an accumulation model on the same operands, output type and epilogue; a pass /
// fail rule a CI can use; and a fit of the accumulation model (exact, FP32, split FP32 with its
// promotion interval N_C, the fast-accumulation model with its significant bits b and group g,
// with or without promotion) that explains the observed output best.
//
// Why bits, not SQNR: a kernel with one wrong block scale and one that accumulates in float16 can
// have the same SQNR; the first differs from the reference in the elements of one block row, the
// second in nearly every element. Counting the elements that differ, where, and by how many units
// in the last place of the output type tells them apart and points at the cause.
//
// ULPs: the distance between two values of the output type counted in representable values
// between them (for FP32 / BF16 / FP16 / FP8: the difference of their codes read as signed
// magnitudes, so ±0 are 0 ULP apart and the count crosses binades and zero). An observed value
// that is not a value of the output type (a float32 file for a BF16 output that holds other values)
// is counted as not representable and measured as |observed − model| / ulp(model).
//
// The models are the CPU reference's (gemm.h, accumulation_preset.h); the FastAccum model is a
// MODEL of undocumented hardware, so a fit to it says which parameter set reproduces the kernel's
// bits on these operands, not what the hardware is.
#pragma once

#include "common/progress.h"
#include "gemm/gemm.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// An element of D [rows, cols]; row = −1 when there is none.
struct ElementIndex {
  int64_t row = -1, col = -1;
  bool valid() const { return row >= 0; }
};

/// A kernel's output D [rows, cols], row-major, as values of the GEMM's output type.
struct ObservedOutput {
  int64_t rows = 0, cols = 0;
  /// The values: float32 / BF16 / FP16 values widened exactly to float32; for an FP8 output given
  /// as codes, decode(code) / scale_D (what GemmOutput::d holds for the model).
  std::vector<float> values;
  /// FP8 outputs given as codes: the codes [rows, cols] (of the output type); empty otherwise.
  std::vector<uint8_t> codes;
  std::string origin; ///< where it came from ("d.npy"), for messages
};

/// The distance in ULPs of two codes of a sign-magnitude floating-point format `bits` wide (FP32
/// 32, BF16 / FP16 16, FP8 8): |ord(a) − ord(b)| with ord(c) = magnitude bits of c, negated when the
/// sign bit is set. Codes of NaN or Inf must be handled by the caller.
int64_t ulpDistance(uint32_t a, uint32_t b, int bits);

/// The code of `value` in output type `t` (for FP8: of value · scale_d as the output cast sees it),
/// or nullopt when `value` is not exactly a value of that type (or is NaN). `bits` receives the
/// code width (32, 16 or 8).
std::optional<uint32_t> outputCode(OutputType t, float value, float scale_d, int* bits = nullptr);

/// Options of compareOutputs.
struct CompareOptions {
  int64_t tile = 128;              ///< edge of the tiles the worst tile is chosen among (≥ 1)
  std::optional<double> atol;      ///< with rtol: count elements outside numpy.isclose's band
  std::optional<double> rtol;      ///< |observed − model| ≤ atol + rtol·|model| (absent one = 0)
  float output_quant_scale = 1.0f; ///< scale_D of FP8 outputs (GemmOptions::output_quant_scale)
};

/// Histogram bins of ULP distances: bin 0 holds 0 ULP, bin 1 (0, 1], bin b ≥ 2 (2^(b−2), 2^(b−1)];
/// the last bin also holds everything larger. Non-finite mismatches are not in it.
inline constexpr int kUlpHistogramBins = 40;
/// The bin of a ULP distance u ≥ 0.
int ulpHistogramBin(double u);
/// "0", "1", "2", "3-4", "5-8", ... (the last: "> 2^37").
std::string ulpHistogramLabel(int bin);

/// Optional per-element maps of a comparison, [rows, cols] float32.
struct ComparisonMaps {
  std::vector<float> diff; ///< observed − model (NaN where either is not finite)
  std::vector<float> ulps; ///< ULP distance (NaN where either is not finite)
};

/// The element-by-element comparison of an observed output with a model's output.
struct OutputComparison {
  int64_t rows = 0, cols = 0;
  int64_t elements = 0;
  OutputType output = OutputType::FP32;
  /// Elements holding the same value of the output type: the same code, or both NaN, or the same
  /// infinity. differing = elements − identical.
  int64_t identical = 0;
  int64_t differing = 0;
  int64_t signed_zero_only = 0;     ///< differing elements that are +0 against −0 (0 ULP apart)
  int64_t finite_pairs = 0;         ///< elements where both values are finite (the ULP statistics' base)
  double max_ulps = 0;              ///< over finite pairs; NaN when there is a NaN / Inf mismatch
  double median_ulps = 0;           ///< over finite pairs
  double median_ulps_differing = 0; ///< over the finite pairs that differ (0 when none)
  double mean_ulps = 0;
  ElementIndex first; ///< first differing element in row-major order
  float first_observed = 0, first_model = 0;
  /// The differing element with the most ULPs (the first of ties); a NaN / Inf mismatch outranks
  /// any finite distance.
  ElementIndex worst;
  float worst_observed = 0, worst_model = 0;
  double worst_ulps = 0; ///< its distance (+Inf for a non-finite mismatch)
  /// Tiles of tile_rows × tile_cols (edge tiles partial): the one with the most differing
  /// elements (then the largest ULP distance, then the first), as tile coordinates.
  int64_t tile_rows = 0, tile_cols = 0;
  ElementIndex worst_tile;
  int64_t worst_tile_differing = 0;
  double worst_tile_max_ulps = 0;
  int64_t differing_rows = 0, differing_cols = 0; ///< rows / columns holding a differing element
  int64_t nan_mismatches = 0;                     ///< one side NaN, the other not
  int64_t inf_mismatches = 0;                     ///< one side ±Inf, the other a finite value or the other infinity
  int64_t observed_nan = 0, observed_inf = 0, model_nan = 0, model_inf = 0;
  int64_t not_representable = 0; ///< finite observed values that are not values of the output type
  ElementIndex first_not_representable;
  double max_abs_diff = 0; ///< max |observed − model| over finite pairs
  double sqnr_db = 0;      ///< 10·log10(Σ model² / Σ (observed − model)²) over finite pairs; +Inf if
                           ///< equal; NaN when there is a NaN / Inf mismatch
  /// DeepGEMM's calc_diff (deep_gemm/testing/numeric.py, copied by vLLM's FP8 GEMM tests), in
  /// float64 over finite pairs: 1 − 2·Σ x·y / Σ (x² + y²) with x observed, y model; 0 when both are
  /// all zero; NaN when there is a NaN / Inf mismatch. Those tests pass at < 1e-3, which a 13-bit
  /// and a 25-bit accumulator both meet: a coarse similarity, not a bit check.
  double calc_diff = 0;
  /// Elements outside numpy.isclose(observed, model, rtol, atol) (NaN / Inf count as outside
  /// unless both are the same non-finite value); −1 when neither tolerance was given.
  int64_t outside_tolerance = -1;
  ElementIndex first_outside_tolerance;
  std::vector<int64_t> ulp_histogram; ///< kUlpHistogramBins counts over finite pairs

  double identicalShare() const { return elements > 0 ? double(identical) / double(elements) : 1.0; }
  int64_t nonfiniteMismatches() const { return nan_mismatches + inf_mismatches; }
};

/// Compares `observed` with a model output of the same shape element by element (both row-major
/// [rows, cols]); `model_codes` are the model's FP8 codes (GemmOutput::d_codes) for FP8 outputs,
/// else empty. `maps`, when not null, receives the per-element maps. Throws std::invalid_argument
/// when the shapes differ (naming both) or a value vector does not hold rows·cols values.
OutputComparison compareOutputs(const ObservedOutput& observed, const std::vector<float>& model,
                                const std::vector<uint8_t>& model_codes, OutputType output,
                                const CompareOptions& opt = {}, ComparisonMaps* maps = nullptr);

// ---- the pass / fail rule -----------------------------------------------------------------------

/// What a CI asks of the observed output, against the reference model. Every criterion given must
/// hold; with none given the output must be 0 ULP from the reference (bit-identical up to the sign
/// of zero). Independently, a NaN / Inf mismatch always fails, and so does any NaN / Inf in the
/// observed output unless allow_nonfinite (then it must match the reference's).
struct CheckCriteria {
  std::optional<double> atol, rtol;  ///< numpy.isclose band (an absent one is 0)
  std::optional<double> max_ulp;     ///< max ULPs of the output type, ≥ 0
  std::optional<double> min_sqnr_db; ///< SQNR of observed vs reference, dB
  bool allow_nonfinite = false;
  bool any() const { return atol || rtol || max_ulp || min_sqnr_db; }
  /// "max 1 ULP, SQNR ≥ 60 dB" / "0 ULP (bit-identical; no criterion given)".
  std::string describe() const;
};

struct CheckVerdict {
  bool passed = false;
  std::vector<std::string> failures; ///< one line per criterion that failed
  std::string line;                  ///< "PASS: ..." / "FAIL: ..." (one line, the reference named)
};

/// Applies `k` to a comparison with the reference model called `reference`.
CheckVerdict judgeOutput(const OutputComparison& c, const CheckCriteria& k, const std::string& reference);

// ---- models and the fit -------------------------------------------------------------------------

/// An accumulation model as GemmOptions' accumulation fields (accumulation, promotion_interval,
/// fast_accum_bits, fast_accum_group, fast_accum_promotes; the others are the run's).
struct AccumulationModel {
  GemmOptions options;
  std::string preset; ///< accumulation preset name when the parameters are one's ("" otherwise)
  /// "exact", "FP32", "split FP32, N_C = 128", "fast, 14 bits, group 32, N_C = 128" (the prose
  /// rules), "MMA e(a)+e(b), 13 fraction bits, group 32, sum binary32 13 bits rz, C inside, N_C =
  /// 128", with " (hopper_fp8)" for a preset.
  std::string name() const;
  /// A key equal for equal parameter sets ("fast/14/32/128").
  std::string key() const;
};

/// The model `name` (exact, fp32, split, fast, or an accumulation preset) on top of `base`: the
/// accumulation parameters of `base` stay where the name does not set them. nullopt for an
/// unknown name.
std::optional<AccumulationModel> namedModel(const std::string& name, const GemmOptions& base);

/// The CPU reference's models on `base`'s output and epilogue: exact, FP32, split FP32 (N_C 128),
/// every accumulation preset (accumulation_preset.h: hopper_fp8, hopper_fp8_fast_accum, …), and
/// DeepSeek-V3's prose model (14 bits, group 32) promoted every 128 and with no promotion, plus
/// `base`'s own model when it is none of these. (Of models that give the same output, the fit
/// names the first in this order.)
std::vector<AccumulationModel> referenceModels(const GemmOptions& base);

/// The grid of the fit. Defaults: bits 10..28, groups 1, 2, 4, ..., 64, N_C 32, 64, ..., 512 and
/// no promotion (FastAccum), N_C of the grid for split FP32; exact and FP32 are always candidates.
struct FitGrid {
  std::vector<int> bits{10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28};
  std::vector<int> groups{1, 2, 4, 8, 16, 32, 64};
  std::vector<int> intervals{32, 64, 128, 256, 512};
  bool no_promotion = true; ///< FastAccum without promotion windows (cuBLASLt FAST_ACCUM = 1)
  /// The rule sets searched at each (bits, group, N_C): the measured NVIDIA rules (operand
  /// alignment, each group's sum a binary32 truncated to min(bits − 1, 23) fraction bits, C inside
  /// the MMA or, when the GEMM reads C, also in the epilogue) and DeepSeek-V3's prose model
  /// (product alignment, exact group sums).
  bool measured_rules = true;
  bool prose_rules = true;
  /// Number of candidate models (the reference models first, then the grid, duplicates removed).
  int64_t candidateCount(const GemmOptions& base) const;
};

/// Every candidate model of the fit on `base`: referenceModels(base), then split × N_C, then the
/// fast family × N_C (and no promotion) × groups × bits × the grid's rule sets; duplicates and
/// parameter sets checkFastAccum refuses left out.
std::vector<AccumulationModel> fitCandidates(const FitGrid& grid, const GemmOptions& base);
/// The same, less the models that cannot run on A and B (presets of block-scaled MMA kinds on
/// operands without block scales, the CDNA3 model on scales that vary along K); the reference
/// models among them stay first, and *reference_count receives how many there are.
std::vector<AccumulationModel> fitCandidates(const FitGrid& grid, const GemmOptions& base, const QuantizedTensor& a,
                                             const QuantizedTensor& b, size_t* reference_count);

/// Parses "10..28", "1,2,4,8", "32" into ascending distinct integers in [lo, hi]; nullopt with
/// *error on a malformed list or a value out of range.
std::optional<std::vector<int>> parseIntList(const std::string& text, int lo, int hi, std::string* error);

struct FitOptions {
  FitGrid grid;
  /// The screening sample: every candidate runs on the sample_rows × sample_cols outputs at evenly
  /// spread rows and columns (a sub-GEMM of the same K, with the same scales, epilogue and output
  /// cast, so each sampled output is bit for bit the full model's).
  int sample_rows = 32, sample_cols = 32;
  /// The refinement sample for the best candidates: a second, larger set of rows and columns.
  int refine_rows = 96, refine_cols = 96;
  int refine_candidates = 32; ///< how many of the best candidates are screened again
  int full_checks = 3;        ///< how many distinct best candidates are compared on all of D
  int threads = 0;            ///< workers of the screening (0: GemmOptions::threads of the GEMM, 0 there = all cores)
  CompareOptions compare;
};

/// One model compared with the observed output.
struct ModelFit {
  AccumulationModel model;
  OutputComparison comparison; ///< on all of D (models table, best, runner-up)
};

/// The fit's result.
struct FitResult {
  std::vector<ModelFit> models; ///< referenceModels(), each on all of D, in that order
  ModelFit best;                ///< the best candidate on all of D
  bool has_runner_up = false;
  ModelFit runner_up;       ///< the best candidate whose output differs from best's
  double margin_points = 0; ///< best's identical share minus runner_up's, percentage points
  /// Other candidates whose outputs equal best's on every sampled output (the fit cannot tell them
  /// apart on these operands): their names, and the same set summarised ("fast, 26..28 bits,
  /// group 32, N_C = 128").
  std::vector<AccumulationModel> equivalent;
  std::string equivalent_summary;
  bool all_equivalent = false; ///< every candidate gave the same sampled output
  /// Candidates equal to the best on the first sample that the refinement did not screen again
  /// (more than FitOptions::refine_candidates tied): not in `equivalent`.
  int64_t unscreened_equivalent = 0;
  int64_t candidates = 0;
  int64_t sample_elements = 0;        ///< outputs every candidate was screened on
  int64_t refine_elements = 0;        ///< outputs the best candidates were screened on again
  bool explained_within_1ulp = false; ///< best has no non-finite mismatch and max_ulps ≤ 1
  /// "bit-identical to split FP32, N_C = 128 (100% of 65536)" / "best fit: fast, 14 bits, group 32,
  /// N_C = 128: 97.3% identical, max 2 ULP" + runner-up and margin.
  std::string verdict;
  std::string warning; ///< non-empty when no model explains the output within 1 ULP
  double seconds = 0;
};

/// Compares `observed` with every reference model and searches the grid for the model that
/// explains it best: most identical elements, then the smallest max ULP, then the smallest mean
/// ULP. A, B and `base` (output type, scale_D, epilogue, threads) are those of the kernel's GEMM.
/// Models run on the CPU reference backend. Throws std::invalid_argument for a shape mismatch,
/// Cancelled when progress returns false.
FitResult fitAccumulation(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& base,
                          const ObservedOutput& observed, const FitOptions& opt = {}, const ProgressFn& progress = {});

// ---- the whole check ----------------------------------------------------------------------------

struct KernelCheckOptions {
  std::string reference = "exact"; ///< namedModel() name the verdict compares with
  CheckCriteria criteria;
  bool fit = true;
  FitOptions fit_options;
  bool maps = true; ///< fill KernelCheckResult::maps
};

struct KernelCheckResult {
  AccumulationModel reference;
  std::vector<float> reference_d;       ///< the reference model's D [rows, cols] (GemmOutput::d)
  std::vector<uint8_t> reference_codes; ///< its FP8 codes (FP8 outputs)
  OutputComparison comparison;          ///< observed vs the reference model
  ComparisonMaps maps;
  CheckVerdict verdict;
  bool fitted = false;
  FitResult fit;
};

/// The check a CI runs: the reference model's D, the comparison, the verdict and (opt.fit) the
/// fit. Throws std::invalid_argument for an unknown reference name or a shape mismatch, Cancelled
/// when progress returns false.
KernelCheckResult checkKernelOutput(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& base,
                                    const ObservedOutput& observed, const KernelCheckOptions& opt = {},
                                    const ProgressFn& progress = {});

} // namespace fp8lab
