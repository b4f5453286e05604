#include "session/session_layout.h"

#include <string_view>

namespace fp8lab::layout {

namespace {
std::string join(std::string_view a, std::string_view b) {
  std::string s;
  s.reserve(a.size() + 1 + b.size());
  s.append(a).append("/").append(b);
  return s;
}
} // namespace

std::string runGroup(const std::string& run_id) {
  return join(kRuns, run_id);
}
std::string runPath(const std::string& run_id, const std::string& path) {
  return join(runGroup(run_id), path);
}

std::string inputs(const std::string& operand) {
  return join("inputs", operand);
}
std::string quantized(const std::string& tensor) {
  return join("quantized", tensor);
}
std::string quantizedCodes(const std::string& tensor) {
  return quantized(tensor) + "_codes";
}
std::string quantizedScales(const std::string& tensor) {
  return quantized(tensor) + "_scales";
}
std::string quantizedScaleCodes(const std::string& tensor) {
  return quantized(tensor) + "_scale_codes";
}
std::string quantizedDequantized(const std::string& tensor) {
  return quantized(tensor) + "_dequantized";
}
std::string quantizedRotated(const std::string& operand) {
  return quantized(operand) + "_rotated";
}
std::string checkModels(const std::string& stat) {
  return join(kCheckModels, stat);
}

std::string history(const std::string& operand) {
  return join("history", operand);
}
std::string historyAmax(const std::string& operand) {
  return join(history(operand), "amax");
}
std::string historyScale(const std::string& operand) {
  return join(history(operand), "scale");
}
std::string historyQuantScale(const std::string& operand) {
  return join(history(operand), "quant_scale");
}
std::string historyAmaxHistory(const std::string& operand) {
  return join(history(operand), "amax_history");
}
std::string historySaturated(const std::string& operand) {
  return join(history(operand), "saturated");
}
std::string historyUnderflow(const std::string& operand) {
  return join(history(operand), "underflow");
}
std::string historyKeptPrevious(const std::string& operand) {
  return join(history(operand), "kept_previous");
}

std::string blockStats(const std::string& operand) {
  return join("block_stats", operand);
}
std::string blockStats(const std::string& operand, const std::string& stat) {
  return join(blockStats(operand), stat);
}
std::string whatIf(const std::string& recipe, const std::string& operand) {
  return join(join(kWhatIf, recipe), operand);
}
std::string whatIf(const std::string& recipe, const std::string& operand, const std::string& stat) {
  return join(whatIf(recipe, operand), stat);
}
std::string nonfinite(const std::string& name) {
  return join(kNonfinite, name);
}
std::string training(const std::string& series) {
  return join("training", series);
}
std::string weights(const std::string& name) {
  return join("weights", name);
}
std::string sites(const std::string& field) {
  return join("sites", field);
}
std::string probe(const std::string& tensor, const std::string& name) {
  return join(join(kProbes, tensor), name);
}
std::string attentionProbs(const std::string& block) {
  return join(join("attention", block), "probs");
}
std::string advice(const std::string& series) {
  return join("advice", series);
}

const std::vector<PathPattern>& patterns() {
  // Units and meanings as the writers named in the header give them (docs/session-format.md
  // describes each group in prose).
  static const std::vector<PathPattern> table = {
      {"metrics", "any", "group", "—", "scalar metrics: attributes NAME (float64), NAME.units, NAME.meaning"},
      // GEMM runs
      {"inputs/A", "gemm", "float32", "1", "operand A [M,K] before quantization"},
      {"inputs/B", "gemm", "float32", "1", "operand B [K,N] before quantization"},
      {"inputs/C", "gemm", "float32", "1", "epilogue matrix C [M,N] of beta·C (BF16 values)"},
      {"inputs/bias", "gemm", "float32", "1", "epilogue bias [N], added to every row (BF16 values)"},
      {"quantized/<tensor>_codes", "gemm, checkpoint", "uint8", "code",
       "element bit patterns; attributes format, scaling, block_rows, block_cols, counts"},
      {"quantized/<tensor>_scales", "gemm, checkpoint", "float32", "1",
       "dequant scale per block: x ≈ decode(code) · scale"},
      {"quantized/<tensor>_quant_scales", "gemm, checkpoint", "float32", "1",
       "quant multiplier per block the cast used: x_q = cast(x · q)"},
      {"quantized/<tensor>_scale_codes", "gemm, checkpoint", "uint8", "code",
       "E8M0 (MX) or E4M3 scale codes per block"},
      {"quantized/<tensor>_dequantized", "gemm, checkpoint", "float32", "1",
       "decode(code) · dequant scale, rounded once to float32"},
      {"quantized/<operand>_rotated", "gemm", "float32", "1",
       "the operand rotated along K by diag(s)·H16/4 (BF16), the tensor the codes encode"},
      {"output/D", "gemm", "float32", "1", "D = A_q · B_q as values of the output type"},
      {"output/D_codes", "gemm", "uint8", "code", "FP8 output codes of D · scale_D (attribute quant_scale)"},
      {"reference/D", "gemm", "float64", "1", "ideal D: float64 product of the unquantized operands"},
      {"reference/D_quantized_exact", "gemm", "float64", "1",
       "dequant(A_q) · dequant(B_q) in float64: D without accumulation or output error"},
      {"error/abs", "gemm", "float32", "1", "|D − reference| per element (NaN where either is non-finite)"},
      {"error/rel", "gemm", "float32", "1", "|D − reference| / |reference| per element"},
      {"error/tile_mean_abs", "gemm", "float32", "1",
       "mean |D − reference| per tile (attributes tile_rows, tile_cols)"},
      {"error/tile_max_abs", "gemm", "float32", "1", "max |D − reference| per tile (attributes tile_rows, tile_cols)"},
      // kernel checks
      {"observed/D", "kernel check", "float32", "1", "the kernel's output D [M,N] as values of the output type"},
      {"observed/D_codes", "kernel check", "uint8", "code", "the kernel's FP8 output codes (of D · scale_D)"},
      {"check", "kernel check", "group", "—", "the check's verdict and settings (attributes)"},
      {"check/D_reference", "kernel check", "float32", "1", "D of the reference model the check compares with"},
      {"check/diff", "kernel check", "float32", "1", "observed − reference per element"},
      {"check/ulps", "kernel check", "float32", "varies",
       "ULP distance of observed and reference (ULP of the output type)"},
      {"check/ulp_histogram", "kernel check", "int64", "count",
       "finite elements by ULP distance from the reference (attribute bin_labels)"},
      {"check/models", "kernel check", "group", "—", "fitted accumulation models (attributes names, keys)"},
      {"check/models/identical", "kernel check", "int64", "count", "elements identical to each model's D"},
      {"check/models/identical_share", "kernel check", "float64", "1", "share of elements identical to each model's D"},
      {"check/models/max_ulps", "kernel check", "float64", "varies", "max ULP distance from each model's D"},
      {"check/models/median_ulps", "kernel check", "float64", "varies", "median ULP distance from each model's D"},
      {"check/models/mean_ulps", "kernel check", "float64", "varies", "mean ULP distance from each model's D"},
      {"check/models/nonfinite_mismatches", "kernel check", "int64", "count",
       "NaN / Inf mismatches with each model's D"},
      // training runs
      {"training/loss", "training, lm", "float32", "nats",
       "mean cross-entropy of each step's batch, before its update"},
      {"training/accuracy", "training", "float32", "1", "test accuracy after each epoch"},
      {"training/test_loss", "training", "float32", "nats", "mean cross-entropy over the test set after each epoch"},
      {"training/train_loss", "training", "float32", "nats", "mean of the epoch's step losses"},
      {"training/epoch_end_step", "training", "int64", "steps", "optimizer steps completed at the end of each epoch"},
      {"training/lr", "lm", "float32", "1", "learning rate of each step"},
      {"training/grad_norm", "lm", "float32", "1", "global L2 norm of the gradients of each step, before clipping"},
      {"training/val_step", "lm", "int64", "steps", "the steps after which the validation loss was measured"},
      {"training/val_loss", "lm", "float32", "nats", "mean cross-entropy per byte over the validation windows"},
      {"history/<operand>", "training, lm", "group", "—", "an operand's scaling history (attributes strategy, ...)"},
      {"history/<operand>/amax", "training, lm", "float32", "1 (same units as the tensor)", "max |x| at each step"},
      {"history/<operand>/scale", "training, lm", "float32", "1",
       "dequant scale at each step: x ≈ decode(code) · scale"},
      {"history/<operand>/quant_scale", "training, lm", "float32", "1", "quant multiplier at each step"},
      {"history/<operand>/amax_history", "training, lm", "float32", "1",
       "delayed-scaling amax window after each step [steps, history_len], oldest first"},
      {"history/<operand>/saturated", "training, lm", "int64", "elements",
       "elements clipped to ±max finite at each step"},
      {"history/<operand>/underflow", "training, lm", "int64", "elements",
       "non-zero elements that became zero at each step"},
      {"history/<operand>/kept_previous", "training, lm", "uint8", "1",
       "1 where an edge rule (amax 0 / inf / NaN) kept the previous scale"},
      {"block_stats/<operand>", "training, lm, checkpoint", "group", "—",
       "per-block statistics of an operand (attributes format, block_rows, block_cols, grid, map_every)"},
      {"block_stats/<operand>/log2_scale_min", "training, lm, checkpoint", "float32", "log2",
       "min over blocks of log2(effective dequant scale)"},
      {"block_stats/<operand>/log2_scale_max", "training, lm, checkpoint", "float32", "log2",
       "max over blocks of log2(effective dequant scale)"},
      {"block_stats/<operand>/log2_scale_mean", "training, lm, checkpoint", "float32", "log2",
       "mean over blocks of log2(effective dequant scale)"},
      {"block_stats/<operand>/log2_scale_std", "training, lm, checkpoint", "float32", "log2",
       "standard deviation over blocks of log2(effective dequant scale)"},
      {"block_stats/<operand>/max_dynamic_range", "training, lm, checkpoint", "float32", "bits",
       "max over blocks of log2(max |x| / min non-zero |x|)"},
      {"block_stats/<operand>/underflow_block_share", "training, lm, checkpoint", "float32", "1",
       "share of blocks with at least one underflowed element"},
      {"block_stats/<operand>/saturation_block_share", "training, lm, checkpoint", "float32", "1",
       "share of blocks with at least one saturated element"},
      {"block_stats/<operand>/underflow_fraction", "training, lm, checkpoint", "float32", "1",
       "underflowed elements / non-zero finite elements"},
      {"block_stats/<operand>/saturation_fraction", "training, lm, checkpoint", "float32", "1",
       "saturated elements / elements"},
      {"block_stats/<operand>/sqnr_db", "training, lm, checkpoint", "float32", "dB",
       "SQNR over finite elements at each step (+Inf exact, NaN all zero)"},
      {"block_stats/<operand>/map_steps", "training, lm, checkpoint", "int64", "steps", "the steps of the full maps"},
      {"block_stats/<operand>/map_scale", "training, lm, checkpoint", "float32", "1",
       "effective dequant scale of each block [map step, grid rows, grid cols]"},
      {"block_stats/<operand>/map_scale_code", "training, lm, checkpoint", "uint8", "code",
       "the block scale's code in the group's scale_format"},
      {"block_stats/<operand>/map_amax", "training, lm, checkpoint", "float32", "1 (same units as the tensor)",
       "max |x| of each block"},
      {"block_stats/<operand>/map_min_nonzero", "training, lm, checkpoint", "float32", "1 (same units as the tensor)",
       "smallest non-zero finite |x| of each block"},
      {"block_stats/<operand>/map_underflow", "training, lm, checkpoint", "int64", "elements",
       "underflowed elements of each block"},
      {"block_stats/<operand>/map_saturated", "training, lm, checkpoint", "int64", "elements",
       "saturated elements of each block"},
      {"block_stats/<operand>/map_dynamic_range", "training, lm, checkpoint", "float32", "bits",
       "log2(max |x| / min non-zero |x|) of each block"},
      {"block_stats/<operand>/map_sqnr_db", "training, lm, checkpoint", "float32", "dB", "SQNR of each block"},
      {"what_if", "training, lm, checkpoint", "group", "—", "what-if recipes (attributes recipes, every)"},
      {"what_if/steps", "training, lm, checkpoint", "int64", "steps", "the steps the what-if recipes measured"},
      {"what_if/<recipe>/<operand>/<stat>", "training, lm, checkpoint", "float32", "varies",
       "a block_stats summary of the operand quantized under another recipe (units as in block_stats)"},
      {"nonfinite", "training, lm", "group", "—", "the first non-finite value (attributes: step, op, element, ...)"},
      {"nonfinite/terms_k", "training, lm", "int64", "index", "contraction index k of the largest |a_k·b_k| terms"},
      {"nonfinite/terms_a", "training, lm", "float32", "1", "A[row, k] as the GEMM used it, per term"},
      {"nonfinite/terms_b", "training, lm", "float32", "1", "B[k, col] as the GEMM used it, per term"},
      {"nonfinite/terms_product", "training, lm", "float64", "1", "a_k·b_k in float64, per term"},
      {"nonfinite/inputs", "training, lm", "float32", "1",
       "the op's input values at the element (attribute input_names)"},
      {"weights/<layer>/kernel", "training", "float32", "1", "FP32 master weights [in, out] after the last step"},
      {"weights/<layer>/bias", "training", "float32", "1", "FP32 bias [out] after the last step"},
      {"weights/<parameter>", "lm", "float32", "1", "FP32 master weights by module path after the last step"},
      {"sites/in", "lm", "int64", "1", "per operand site (order of the run's 'sites' attribute): in"},
      {"sites/out", "lm", "int64", "1", "per operand site: out"},
      {"sites/block", "lm", "int64", "1", "per operand site: transformer block (-1: none)"},
      {"probes", "lm", "group", "—", "transformer probes (attributes massive_threshold, massive_ratio, softmax_scale)"},
      {"probes/steps", "lm", "int64", "steps", "the steps the probes measured"},
      {"probes/<tensor>/kurtosis", "lm", "float32", "1",
       "channel kurtosis of the normalised tensor at each probe step"},
      {"probes/<tensor>/max_median", "lm", "float32", "1", "mean over tokens of max |x| / median |x|"},
      {"probes/<tensor>/massive", "lm", "float32", "elements", "massive activations at each probe step"},
      {"probes/<tensor>/sink", "lm", "float32", "1", "attention on key position 0, per head [steps, heads]"},
      {"probes/<tensor>/softmax_underflow", "lm", "float32", "1",
       "share of softmax probabilities an E4M3FN cast flushes"},
      {"probes/<tensor>/grad_underflow", "lm", "float32", "1", "share of the output gradient flushed to zero"},
      {"probes/<tensor>/quant_error", "lm", "float32", "1", "relative error of the block output against float32"},
      {"probes/<tensor>/grad_noise_ratio", "lm", "float32", "1", "||g|| / ||Q(g) − g|| of the output gradient"},
      {"attention/steps", "lm", "int64", "steps", "steps of the attention snapshots"},
      {"attention/tokens", "lm", "uint8", "byte", "the fixed validation sequence (bytes)"},
      {"attention/<block>/probs", "lm", "float32", "1",
       "softmax probabilities [snapshot, head, query, key] of the fixed sequence"},
      // site advice
      {"advice/delta", "advice", "float32", "nats",
       "final loss with only this group in the recipe minus the all-high-precision run's"},
      {"advice/spread", "advice", "float32", "nats", "sample standard deviation of delta over the seeds"},
      {"advice/share", "advice", "float32", "1", "delta / the all-recipe run's delta"},
      {"advice/sqnr_db", "advice", "float32", "dB", "SQNR of the group's operands"},
      {"advice/keep_high", "advice", "uint8", "1", "1: keep the group in high precision"},
  };
  return table;
}

namespace {
// Matches `path` against `pat` from the given positions; a <placeholder> matches one or more
// characters (slashes included), the rest literally.
bool matchFrom(std::string_view pat, std::string_view path) {
  if (pat.empty()) return path.empty();
  if (pat.front() == '<') {
    const size_t close = pat.find('>');
    if (close == std::string_view::npos) return false;
    const std::string_view rest = pat.substr(close + 1);
    for (size_t n = 1; n <= path.size(); ++n)
      if (matchFrom(rest, path.substr(n))) return true;
    return false;
  }
  if (path.empty() || pat.front() != path.front()) return false;
  return matchFrom(pat.substr(1), path.substr(1));
}

// Characters of a pattern outside its placeholders.
size_t literalLength(std::string_view pat) {
  size_t n = 0;
  for (size_t i = 0; i < pat.size(); ++i) {
    if (pat[i] == '<') {
      i = pat.find('>', i);
      if (i == std::string_view::npos) break;
      continue;
    }
    ++n;
  }
  return n;
}
} // namespace

const PathPattern* match(const std::string& path) {
  // The most specific pattern wins: the one with the most literal characters
  // ("history/<operand>/amax" before the group "history/<operand>").
  const PathPattern* best = nullptr;
  size_t best_len = 0;
  for (const PathPattern& p : patterns())
    if (matchFrom(p.pattern, path) && (!best || literalLength(p.pattern) > best_len)) {
      best = &p;
      best_len = literalLength(p.pattern);
    }
  return best;
}

namespace {
// A table cell: '|' escaped so that |x| stays inside its cell.
std::string cell(std::string_view text) {
  std::string s;
  for (char c : text) {
    if (c == '|') s += '\\';
    s += c;
  }
  return s;
}
} // namespace

std::string markdownIndex() {
  std::string s = "| path (under `/runs/<id>/`) | runs | type | units | meaning |\n|---|---|---|---|---|\n";
  for (const PathPattern& p : patterns()) {
    s += "| `" + cell(p.pattern) + "` | " + cell(p.run) + " | " + cell(p.dtype) + " | " + cell(p.units) + " | " +
         cell(p.meaning) + " |\n";
  }
  return s;
}

} // namespace fp8lab::layout
