// FP8 Lab — the session layout: the name of every group and dataset a run of a session file holds,
// with its units and meaning, in one place. Writers (core/experiment, core/training), readers
// (core/session, core/experiment), the CLI and the GUI's views build paths only through these
// functions; docs/session-format.md's path index is generated from patterns() (tests/core/data/
// test_session_layout.cpp keeps the two equal).
//
// Every path here is relative to the run group /runs/<run_id>/ (runGroup() gives that group's
// absolute path). <operand> is a GEMM operand ("A", "B") or a training operand
// "<layer>/<tensor>" ("fc1/input", "blocks.0.attn.qkv/activation"); <tensor> a quantized
// tensor's name; segments are joined with '/'. No function checks its arguments: a name holding
// '/' nests deeper, as HDF5 paths do.
#pragma once

#include <string>
#include <vector>

namespace fp8lab::layout {

// ---- the file ---------------------------------------------------------------------------------

/// "runs": the group holding one subgroup per run.
inline constexpr const char* kRuns = "runs";
/// "runs/<id>": a run's group, relative to the file's root.
std::string runGroup(const std::string& run_id);
/// "runs/<id>/<path>": a dataset or group of a run, relative to the file's root.
std::string runPath(const std::string& run_id, const std::string& path);
/// "metrics": the group of a run's scalar metrics (attributes NAME, NAME.units, NAME.meaning).
inline constexpr const char* kMetrics = "metrics";

/// Top-level groups a run may hold, for readers that walk every dataset under one of them.
inline constexpr const char* kBlockStatsGroup = "block_stats";
inline constexpr const char* kWeightsGroup = "weights";
inline constexpr const char* kHistoryGroup = "history";
inline constexpr const char* kQuantizedGroup = "quantized";
inline constexpr const char* kErrorGroup = "error";
inline constexpr const char* kAttentionGroup = "attention";

// ---- GEMM runs (core/experiment/gemm/gemm_run.cpp) ------------------------------------------------

/// "inputs/<operand>": an operand before quantization, float32 [M,K] (A), [K,N] (B), [M,N] (C),
/// [1,N] (bias); units "1".
std::string inputs(const std::string& operand);
/// "quantized/<tensor>": the prefix of a quantized tensor's datasets (Run::putQuantized appends
/// _codes, _scales, _quant_scales, _scale_codes, _dequantized).
std::string quantized(const std::string& tensor);
/// "quantized/<tensor>_codes": uint8 element codes; units "code".
std::string quantizedCodes(const std::string& tensor);
/// "quantized/<tensor>_scales": float32 dequant scale per block (x ≈ decode(code) · scale).
std::string quantizedScales(const std::string& tensor);
/// "quantized/<tensor>_scale_codes": uint8 codes of the block scales (E8M0 for MX, E4M3 for NVFP4).
std::string quantizedScaleCodes(const std::string& tensor);
/// "quantized/<tensor>_dequantized": float32 decode(code) · dequant scale.
std::string quantizedDequantized(const std::string& tensor);
/// "quantized/<operand>_rotated": the Hadamard-rotated operand the codes encode (BF16 values).
std::string quantizedRotated(const std::string& operand);
/// "output/D": the GEMM's output as float32 values of the output type.
inline constexpr const char* kOutputD = "output/D";
/// "output/D_codes": FP8 output codes of D · scale_D (attribute quant_scale = scale_D).
inline constexpr const char* kOutputDCodes = "output/D_codes";
/// "reference/D": float64 product of the unquantized operands.
inline constexpr const char* kReferenceD = "reference/D";
/// "reference/D_quantized_exact": float64 product of the dequantized operands.
inline constexpr const char* kReferenceDQuantizedExact = "reference/D_quantized_exact";
/// "error/abs": |D − reference| per element.
inline constexpr const char* kErrorAbs = "error/abs";
/// "error/rel": |D − reference| / |reference| per element.
inline constexpr const char* kErrorRel = "error/rel";
/// "error/tile_mean_abs": mean |D − reference| per tile (attributes tile_rows, tile_cols).
inline constexpr const char* kErrorTileMeanAbs = "error/tile_mean_abs";
/// "error/tile_max_abs": max |D − reference| per tile (attributes tile_rows, tile_cols).
inline constexpr const char* kErrorTileMaxAbs = "error/tile_max_abs";

// ---- kernel checks (core/experiment/kernel_check/kernel_check_run.cpp) -------------------------------------

/// "observed/D": the kernel's output as values of the output type.
inline constexpr const char* kObservedD = "observed/D";
/// "observed/D_codes": the kernel's FP8 output codes.
inline constexpr const char* kObservedDCodes = "observed/D_codes";
/// "check": the kernel check's group (attribute verdict, ...).
inline constexpr const char* kCheck = "check";
/// "check/D_reference": D of the reference model the check compares with.
inline constexpr const char* kCheckDReference = "check/D_reference";
/// "check/diff": observed − reference per element.
inline constexpr const char* kCheckDiff = "check/diff";
/// "check/ulps": ULP distance of observed and reference per element.
inline constexpr const char* kCheckUlps = "check/ulps";
/// "check/ulp_histogram": finite elements by ULP distance (attribute bin_labels).
inline constexpr const char* kCheckUlpHistogram = "check/ulp_histogram";
/// "check/models": the fitted accumulation models' group (attributes names, keys: JSON arrays).
inline constexpr const char* kCheckModels = "check/models";
/// "check/models/<stat>": one value per fitted model (identical, identical_share, max_ulps,
/// median_ulps, mean_ulps, nonfinite_mismatches).
std::string checkModels(const std::string& stat);

// ---- training runs (core/training/training_session.cpp) ---------------------------------------

/// "history/<operand>": an operand's per-step scaling history group (attributes strategy, ...).
std::string history(const std::string& operand);
/// "history/<operand>/amax": max |x| at each step, float32 [steps].
std::string historyAmax(const std::string& operand);
/// "history/<operand>/scale": dequant scale at each step, float32 [steps].
std::string historyScale(const std::string& operand);
/// "history/<operand>/quant_scale": quant multiplier at each step, float32 [steps].
std::string historyQuantScale(const std::string& operand);
/// "history/<operand>/amax_history": the delayed-scaling window after each step, float32
/// [steps, history_len], oldest first.
std::string historyAmaxHistory(const std::string& operand);
/// "history/<operand>/saturated": elements clipped at each step, int64 [steps].
std::string historySaturated(const std::string& operand);
/// "history/<operand>/underflow": non-zero elements that became zero at each step, int64 [steps].
std::string historyUnderflow(const std::string& operand);
/// "history/<operand>/kept_previous": 1 where an edge rule kept the previous scale, uint8 [steps].
std::string historyKeptPrevious(const std::string& operand);

/// "block_stats/<operand>": an operand's per-block statistics group.
std::string blockStats(const std::string& operand);
/// "block_stats/<operand>/<stat>": one series or map (sqnr_db, map_amax, map_steps, ...).
std::string blockStats(const std::string& operand, const std::string& stat);

/// "what_if": the what-if recipes' group (attribute recipes).
inline constexpr const char* kWhatIf = "what_if";
/// "what_if/steps": the steps the what-if statistics were measured at.
inline constexpr const char* kWhatIfSteps = "what_if/steps";
/// "what_if/<recipe>/<operand>": the operand's block statistics under another recipe (a group
/// shaped as block_stats/<operand> without the maps).
std::string whatIf(const std::string& recipe, const std::string& operand);
/// "what_if/<recipe>/<operand>/<stat>": one of those statistics.
std::string whatIf(const std::string& recipe, const std::string& operand, const std::string& stat);

/// "nonfinite": the first non-finite value's group; "nonfinite/<name>" its datasets.
inline constexpr const char* kNonfinite = "nonfinite";
std::string nonfinite(const std::string& name);

/// "training/<series>": loss, accuracy, test_loss, train_loss, epoch_end_step, lr, grad_norm,
/// val_step, val_loss.
std::string training(const std::string& series);
inline constexpr const char* kTrainingLoss = "training/loss";
inline constexpr const char* kTrainingAccuracy = "training/accuracy";

/// "weights/<name>": FP32 master weights ("fc1/kernel", "fc1/bias", "blocks.0.attn.qkv.weight").
std::string weights(const std::string& name);

/// "sites/<field>": per transformer operand site (in, out, block).
std::string sites(const std::string& field);

/// "probes": the transformer probes' group; "probes/steps" the steps they measured;
/// "probes/<tensor>/<probe>" one probe's series.
inline constexpr const char* kProbes = "probes";
inline constexpr const char* kProbesSteps = "probes/steps";
std::string probe(const std::string& tensor, const std::string& name);

/// "attention/steps", "attention/tokens", "attention/<block>/probs" (block "blocks.<l>"):
/// attention snapshots.
inline constexpr const char* kAttentionSteps = "attention/steps";
inline constexpr const char* kAttentionTokens = "attention/tokens";
std::string attentionProbs(const std::string& block);

/// "advice/<series>": a site-advice run's per-group series (delta, spread, share, sqnr_db,
/// keep_high).
std::string advice(const std::string& series);

// ---- the table ----------------------------------------------------------------------------------

/// One kind of path a run may hold: a pattern with <placeholders>, the kind of run that writes
/// it, its element type, its units ("varies" where the writer states them per dataset) and a
/// one-line meaning.
struct PathPattern {
  const char* pattern; ///< relative to /runs/<id>/, e.g. "history/<operand>/amax"
  const char* run;     ///< "gemm", "kernel check", "training", "lm", "checkpoint", "advice", "any"
  const char* dtype;   ///< "float32", "float64", "uint8", "int64", "group"
  const char* units;   ///< the "units" attribute the writer gives it; "varies", "—" for a group
  const char* meaning; ///< one line
};

/// Every path pattern of the layout, grouped by run kind, in the order docs/session-format.md
/// lists them.
const std::vector<PathPattern>& patterns();

/// The pattern a concrete path matches, or nullptr. A placeholder matches one or more characters,
/// slashes included; of several matching patterns the one with the most literal characters wins
/// ("history/fc1/input/amax" is "history/<operand>/amax", not the group "history/<operand>").
const PathPattern* match(const std::string& path);

/// The path index of docs/session-format.md: a Markdown table of patterns(), one row each.
std::string markdownIndex();

} // namespace fp8lab::layout
