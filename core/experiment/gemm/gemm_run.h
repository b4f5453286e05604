// FP8 Lab — the GEMM error experiment as a session run: operands (seeded random or imported) →
// quantize with a scaling preset (core/scaling) → core/gemm's runGemmExperiment (ideal,
// quantized-exact and backend output, error split into quantization and accumulation) → error
// maps and tile maps (core/metrics) → one session Run
// (core/session), whose datasets are listed in docs/session-format.md ("gemm" runs).
//
// Reproducibility: every number depends only on the config (seed included) — the random
// operands come from randomMatrix() (counter-based, thread-count independent), quantization
// and the CPU backend are deterministic, and the float64 reference sums k ascending per
// element. So re-running a stored config on the CPU backend gives the same bits
// (`fp8lab-cli rerun`, compareRuns()).
#pragma once

#include "common/progress.h"
#include "experiment/kernel_check/kernel_check_run.h"
#include "gemm/accumulation_preset.h"
#include "gemm/gemm.h"
#include "gemm/random_matrix.h"
#include "metrics/distribution_stats.h"
#include "metrics/error_metrics.h"
#include "scaling/kernel_layout.h"
#include "session/session.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// An operand given already quantized: its codes and scales read from files, so a kernel's
/// output can be checked against the reference on the user's own data (docs/gemm.md,
/// "Pre-quantized operands"). The run builds the QuantizedTensor directly; there is no float
/// input, so the run's ideal reference is the float64 product of the dequantized operands and
/// only the accumulation / output part of the error split says anything.
///
/// Shapes: codes [rows, cols] (A: [M, K], B: [K, N]); one scale per block of `block`, row-major
/// over the grid [ceil(rows / block.rows), ceil(cols / block.cols)] (partial edge blocks allowed
/// for float32 scales). Scale convention: dequant factors, x ≈ decode(code) · scale (cuBLASLt
/// A/B_SCALE_POINTER, torch._scaled_mm), whatever the scale format:
///   Float32 — the scales themselves (one `scale` number or a float tensor): per tensor, per row /
///     column, per block;
///   E8M0    — MX scale codes (OCP MX v1.0 §5.4: 2^(code − 127), 0xFF NaN), blocks of 32 along K;
///   E4M3FN  — NVFP4 block scale codes (blocks of 16 along K, E2M1 elements), with the second
///     level: `tensor_amax` (Transformer Engine: effective factor f32(f32(s · amax) ·
///     f32(1/fp4_fp8_max)), GEMM alpha from both amaxes) or `tensor_scale` (torchao
///     per_tensor_scale, a dequant factor: f32(pts · s)), or neither (single level).
struct PreQuantizedSource {
  enum class ScaleFormat { Float32, E8M0, E4M3FN };
  std::string codes;  ///< import spec of the uint8 codes ("c.npy", "m.safetensors:NAME"); "" = not pre-quantized
  std::string format; ///< element format of the codes (canonical name, ≤ 8 bits)
  std::string scales; ///< import spec of the scale tensor; "" = the single `scale`
  double scale = 1.0; ///< the per-tensor dequant scale when `scales` is empty
  ScaleFormat scale_format = ScaleFormat::Float32;
  ScaleBlock block{0, 0}; ///< scale block; {0, 0} = one block over the whole tensor (per tensor)
  TensorScale::Kind tensor_kind = TensorScale::Kind::None; ///< E4M3FN only: TeAmax / TorchaoPts / None
  float tensor_amax = 0.0f;                                ///< TeAmax: the tensor amax
  float tensor_scale = 0.0f;                               ///< TorchaoPts: per_tensor_scale
  float fp4_fp8_max = 2688.0f; ///< TeAmax: 6 · E4M3 max (2688; 1536 for TE 4over6 at the 256 bound)
  /// An FP8 checkpoint instead of `codes` / `scales`: the safetensors file, the FP8 tensor in it and
  /// its scale read by importFp8Checkpoint (core/io/fp8_checkpoint.h: per-tensor / per-channel
  /// `weight_scale`, 128×128 `weight_scale_inv`, all dequant factors). `format` is the tensor's
  /// (E4M3FN or E5M2); `codes`, `scales`, `block` are unused.
  std::string checkpoint;
  std::string checkpoint_tensor; ///< e.g. "layers.0.mlp.down_proj.weight"
  std::string checkpoint_scale;  ///< the scale tensor's name; "" = by the naming convention
  /// Use the stored tensor transposed: a Linear weight W [out, in] is the B = Wᵀ [in, out] of
  /// y = x · Wᵀ (B is [K, N]); for `codes`, B stored [N, K] K-major as kernels hold it. The codes
  /// and a row-major scale grid are transposed together, and `block` is the stored tensor's.
  bool transpose = false;
  /// `codes` holds E2M1 codes packed two to a byte along its rows (the stored tensor is [rows,
  /// cols / 2] bytes): the nibble that holds the first of each pair; nullopt = one code a byte.
  std::optional<NibbleOrder> packed;
  /// How the scale file lays out the scales (scaling/kernel_layout.h): RowMajor = the grid of the
  /// stored codes, row-major (the default); the other layouts are the hardware's, in the (outer,
  /// K-block) orientation, read from the file's flat storage.
  ScaleLayout scale_layout = ScaleLayout::RowMajor;
  bool enabled() const { return !codes.empty() || !checkpoint.empty(); }
  /// The file the operand is read from (for messages).
  const std::string& file() const { return checkpoint.empty() ? codes : checkpoint; }
};

/// Where one operand comes from.
struct OperandSource {
  RandomMatrixOptions random; ///< used when `tensor` is empty
  /// Import spec for importTensor() ("w.npy", "m.safetensors:NAME", "f.h5:/path"); empty = random.
  /// An imported operand fixes that operand's shape (A: [M,K], B: [K,N]).
  std::string tensor;
  bool transpose = false; ///< use the imported tensor transposed
  /// An operand computed by the caller (the trained-weights GEMM: layer inputs and a trained
  /// kernel), row-major [rows, cols]; not owned, must outlive the run; used when not null (then
  /// `tensor` and `random` are not). Configs cannot name it: the caller stores its own config.
  const std::vector<float>* values = nullptr;
  int64_t rows = 0, cols = 0;
  std::string origin; ///< what `values` is, stored as the operand's origin
  /// Codes and scales from files (used when pre.enabled(); `tensor`, `random` and the run's
  /// format / scaling for this operand are not).
  PreQuantizedSource pre;
  /// Whether the operand's shape comes from a file (an imported tensor or pre-quantized codes).
  bool fromFile() const { return !tensor.empty() || pre.enabled(); }
};

/// A random epilogue input (C [M,N] or bias [N]): normal(0, scale) values of randomMatrix(seed,
/// stream 3 for C, 4 for bias), each rounded to the nearest BF16 value (RNE), so that a backend
/// that takes the epilogue inputs in BF16 (cuBLASLt's FP8 GEMMs, bias always, C for FP8 outputs)
/// receives the same numbers as the CPU reference.
struct EpilogueSource {
  bool enabled = false; ///< false: no C (beta must be 0) / no bias
  uint64_t seed = 1;
  double scale = 1.0; ///< standard deviation, > 0
  /// C only: a tensor spec (importTensor: "C.npy", "F.safetensors:NAME", "F.h5:/PATH") of float32
  /// [M,N] holding the kernel's C as it was, used as is (no BF16 rounding; float64 files must hold
  /// float32 values). "" = seeded values.
  std::string file;
  /// C [M,N] or bias [N] given in memory by the caller (the Python module), float32, used as is (no
  /// BF16 rounding); configs cannot name it. Null: `file` or the seeded values.
  std::shared_ptr<const std::vector<float>> values;
  bool fromFile() const { return !file.empty(); }
};

/// A GEMM experiment, as parsed from its JSON config (docs/session-format.md, "configs").
struct GemmExperimentConfig {
  int64_t m = 256, k = 256, n = 256;
  uint64_t seed = 1; ///< A uses stream 1, B stream 2 of randomMatrix(seed, stream)
  OperandSource a, b;
  std::string format_a = "E4M3FN", format_b = "E4M3FN";
  /// A's preset: a current-scaling preset (scalingPresets()) or an NVFP4 preset (nvfp4Presets():
  /// E2M1 elements, A quantized along K with Axis::Cols, B along K with Axis::Rows).
  std::string scaling = "te_current";
  std::string scaling_b; ///< B's preset when it differs from A's; "" = `scaling`
  GemmOptions gemm;      ///< accumulation model, promotion interval, output type, threads,
                         ///< alpha, beta (its c / bias come from c_source / bias_source)
  /// The accumulation preset (accumulation_preset.h) gemm's accumulation parameters were set from;
  /// "" = none (the parameters as given).
  std::string accumulation_preset;
  EpilogueSource c_source;    ///< C of beta·C
  EpilogueSource bias_source; ///< the bias vector
  /// FP8 outputs: scale_D = max finite / amax of the quantized-exact D (current scaling of the
  /// output) instead of gemm.output_quant_scale.
  bool output_scale_auto = false;
  int64_t tile = 128;           ///< tile of error/tile_* maps
  bool store_inputs = true;     ///< inputs/A, inputs/B
  bool store_quantized = true;  ///< quantized/A_*, quantized/B_*
  bool store_error_maps = true; ///< error/abs, error/rel (the tile maps are always stored)
  /// Element rounding of the operands the run quantizes with a current-scaling preset: false =
  /// RNE (every preset's cast); true = stochastic rounding (Format's EncodeOptions: the discarded
  /// significand truncated to `stochastic_bits` bits plus as many random bits, rounding up on a
  /// carry), element i of A drawing Format::counterRandom(2·seed, i) and of B (2·seed + 1, i), so a
  /// run repeats bit for bit. NVFP4 presets have their own rounding (nvfp4_te_sr: TE's 8-bit model).
  bool stochastic_rounding = false;
  int stochastic_bits = 16; ///< random bits per element for stochastic rounding, 1..32
  /// A kernel's output to check against the CPU reference (config "observed" and "check").
  KernelCheckConfig check;
};

/// Whether `name` is an NVFP4 preset (nvfp4Preset()), not a scaling preset.
bool isNvfp4Scaling(const std::string& name);

/// A problem of a config's operand quantization: the config key it is about and why.
struct GemmConfigProblem {
  std::string key; ///< e.g. "scaling_b", "k", "format_a"
  std::string why;
};

/// Why the operand quantization of `cfg` cannot run as a GEMM, or nullopt when it can; the
/// dimensions checked are m, k, n as given (the caller passes the loaded shapes at run time).
/// NVFP4 rules (docs/gemm.md, "NVFP4 operands"): an NVFP4 preset needs format E2M1 (key
/// format_a / format_b); K a multiple of 16 (2-D presets: M for A, N for B too); NVFP4 on one
/// operand and FP8 on the other is refused (no block-scaled MMA mixes them); the Hadamard
/// presets (rht) on one operand only is refused (the rotation cancels only when both operands
/// are rotated along K by the same R). Pre-quantized operands count as NVFP4 when their
/// scale_format is E4M3FN.
std::optional<GemmConfigProblem> gemmOperandProblem(const GemmExperimentConfig& cfg, int64_t m, int64_t k, int64_t n);

/// What a run computed beyond what it stores, for a front end to print (`fp8lab-cli gemm`).
struct GemmRunDetails {
  int64_t m = 0, k = 0, n = 0;
  ErrorMetrics quantization, accumulation, total; ///< as in GemmExperimentResult
  OperandStats a_stats, b_stats;
  int64_t d_saturated = -1;     ///< FP8 outputs: elements of D the output cast clips, else −1
  float output_quant_scale = 1; ///< scale_D used (auto or given)
  TileMap tiles;                ///< of |D − ideal|, tile edge cfg.tile
  double quantize_seconds = 0, ideal_seconds = 0, exact_seconds = 0;
  /// The backend's result (amax_D, algorithm, warnings, seconds). Its `d` and `d_codes` are empty:
  /// D moved into the run's output/D (and output/D_codes) dataset.
  GemmOutput output;
  int64_t a_nonfinite = 0, b_nonfinite = 0;
  /// Pre-quantized operands: NaN codes in A / B, and the outputs they make NaN (every output of a
  /// row of A or a column of B that holds one).
  int64_t a_nan_codes = 0, b_nan_codes = 0, nan_outputs_from_codes = 0;
  /// The kernel check, when the config has an observed output.
  std::shared_ptr<KernelCheckResult> check;
};

/// Runs the experiment and packs it into a Run. `config_json` is stored verbatim as the run's config. Errors (unknown
/// format or preset, bad shape, import failure, unsupported by the backend) come back as
/// InvalidArgument / the importer's issues; Cancelled is thrown when progress returns false.
/// The run's id is `run_id`, type "gemm", seed = cfg.seed.
/// Limits: a GEMM whose buffers (≈ 21 B per operand element + 36 B per output
/// element) exceed the memory available — or cfg.gemm.memory_limit_bytes when > 0 — is refused
/// with InvalidArgument naming both sizes before anything is allocated; an empty imported operand
/// is InvalidArgument; NaN / Inf in an imported or given operand give a Computation warning and
/// metrics a_nonfinite / b_nonfinite; a random operand whose scale overflows float32 (values ±Inf)
/// is InvalidArgument at "a.scale" / "b.scale", naming the scale and the count of such elements.
/// `details`, when not null, receives what the run computed beyond its datasets.
Result<Run> runGemmExperimentRun(const GemmExperimentConfig& cfg, const std::string& config_json,
                                 const std::string& run_id, GemmBackend& backend, const ProgressFn& progress = {},
                                 GemmRunDetails* details = nullptr);

/// Compares two runs bit for bit: every dataset (dtype, shape, every element's bits) and every
/// metric value. Attributes that record time or place (created_utc, app_version, device, and the
/// "seconds" metric family) are not compared. Returns one line per difference (empty = same).
/// `compared` receives how many datasets and metrics were compared.
std::vector<std::string> compareRuns(const Run& stored, const Run& fresh, int* compared_datasets = nullptr,
                                     int* compared_metrics = nullptr);

} // namespace fp8lab
