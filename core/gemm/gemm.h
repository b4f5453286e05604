// FP8 Lab — FP8 GEMM: the backend interface shared by the CPU reference (core/gemm) and the
// CUDA/cuBLASLt backend (gpu/).
//
// Formula (cuBLASLt's FP8 cublasLtMatmul with A/B/D scale pointers and the BIAS epilogue):
//     D = scale_D · ( alpha · (a_scale ⊙ b_scale ⊙ (A_q · B_q)) + beta · C + bias )
//                                                            then, for FP8 D, cast + amax_D
// with A_q [M,K] and B_q [K,N] the decoded codes, a_scale / b_scale the dequant scales of
// each operand's blocks (QuantizedTensor), C [M,N] and bias [N] (broadcast over rows) the
// epilogue inputs, and scale_D the *quant* multiplier of the output (cuBLASLt D_SCALE_POINTER;
// used only for FP8 outputs). The bias is added after alpha, so alpha does not scale it. Block scales are applied where
// the hardware applies them: per promotion window of K for block modes (DeepGEMM / cuBLAS), at the end for per-tensor
// and per-row/column scales.
#pragma once

#include "common/progress.h"
#include "scaling/quantized_tensor.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp8lab {

/// How products are summed along K. docs/gemm.md gives each model as pseudocode; in all of
/// them a product p_k = decode(a[m,k]) · decode(b[k,n]) of two decoded codes is exact (in
/// float32 and double: ≤ 16 significant bits, exponents within range for every ≤ 8-bit
/// format), so the models differ only in how those exact products are added and where the
/// scales are applied.
///
/// Windows: K is cut at every multiple of each operand's scale block along K (when its scales
/// vary along K: 1x128 / 128x128 / MX block-32) and, for SplitFP32 and a promoting FastAccum,
/// at every multiple of `promotion_interval`. Each window's partial sum is promoted into the
/// float32 accumulator as  acc = fma(s_w, partial, acc)  with s_w = float32(sa_w · sb_w) the
/// product of the window's K-varying scales (1 when neither operand's scales vary along K:
/// then acc = acc + partial) — DeepGEMM's `final_accum += scale * accum`, which nvcc contracts
/// to one FFMA. Scales constant along K (per-tensor, per-row of A, per-column of B) are applied
/// once at the end: D = float32(ca · cb) · acc (cuBLASLt SCALAR_32F / outer-vector modes).
enum class Accumulation {
  Exact,     ///< double precision (windows at scale boundaries only, fma promotion in double):
             ///< the reference for "accumulation error"
  FP32,      ///< one float32 running sum per window, k ascending, windows at scale boundaries
             ///< only (per-tensor scales: one window = all of K): deterministic
  SplitFP32, ///< float32 partial per promotion window (N_C = 128 of K), k ascending inside,
             ///< promoted into a float32 accumulator with the window's block scales (cuBLAS
             ///< default, DeepGEMM, DeepSeek-V3 §3.3)
  FastAccum, ///< The tensor-core MMA family (undocumented hardware, measured): inside a window, per
             ///< group of `fast_accum_group` products the running sum and the products are aligned
             ///< to the largest alignment exponent among them and cut toward zero to
             ///< `fast_accum_bits` − 1 fraction bits below it, then added exactly; the group's sum
             ///< becomes the running sum as `MmaRules` say. The rules' defaults are DeepSeek-V3
             ///< §3.3's prose model; the accumulation presets (accumulation_preset.h) set the rules
             ///< measured on real GPUs (docs/gemm.md, "Tensor-core accumulation")
};

/// How the FastAccum family finds a group's alignment exponent E (the terms are cut to multiples
/// of 2^(E − fast_accum_bits + 1)).
enum class MmaAlignment {
  Product,  ///< E = floor(log2 |a·b|) of each exact product (DeepSeek-V3's prose; not what GPUs do)
  Operands, ///< E = e(a) + e(b), each operand's exponent clamped at its format's emin, the product
            ///< significand m(a)·m(b) ∈ [0, 4) not renormalised (MATLAB-tensor-core's measured
            ///< H100 / Ada / B200 FP8 data; MMA-Sim nv_fused_dot_add)
};

/// How a group's exact sum becomes the running sum the next group (or the promotion) reads.
enum class MmaSum {
  Exact, ///< kept exactly (on the group's grid), converted to float32 with RNE only at promotion
  Fp32,  ///< normalised to a binary32 number with `mma_sum_bits` fraction bits (exponent ≥ −126,
         ///< subnormal below; |x| ≥ 2^128 → ±Inf), rounded by `mma_sum_rounding` (H100 wgmma: 13
         ///< bits, toward zero; Blackwell: 23 bits, toward zero)
};

/// Rounding of one step of the MMA model.
enum class MmaRounding {
  TowardZero,  ///< truncation of the magnitude (every measured NVIDIA step)
  NearestEven, ///< IEEE round to nearest, ties to even
};

/// Where the C of beta·C enters.
enum class MmaCEntry {
  Epilogue,    ///< after the MMA: y = alpha·x + beta·C in float32, one RNE per step (cuBLASLt's
               ///< epilogue; the B200 data: tensor-core sum with C = 0, truncated, then + C)
  Accumulator, ///< as the first running sum: the MMA's C operand, aligned with the first group's
               ///< products (Ada mma.sync and the MMA-Sim models of wgmma / tcgen05). Needs alpha = 1
               ///< and no dequant scale other than 1 (a kernel can fold C into its accumulator only
               ///< when D = A·B + beta·C); otherwise C enters in the epilogue and the run says so
};

/// How block scales that vary along K (MX E8M0, NVFP4 UE4M3) enter the sum.
enum class MmaBlockScales {
  Promoted, ///< software: each scale block's partial sum promoted with its scales into a float32
            ///< accumulator (DeepGEMM, cuBLASLt on Hopper; gemm.h's windows)
  Inside,   ///< hardware block-scaled MMA: each term is scaled inside the fused sum, its alignment
            ///< exponent raised by e(sa) + e(sb), one accumulator over all of K (tcgen05.mma
            ///< kind::mxf8f6f4 / mxf4nvf4, MMA-Sim nv_fused_dot_add(_with_block_scale))
};

/// The datapath of one MMA step.
enum class MmaDatapath {
  Fused, ///< NVIDIA: one fused sum of the group's terms and the running sum (the rules above)
  Cdna3, ///< AMD CDNA3 MFMA FP8 (MMA-Sim amd.py mfma + amd_fused_dot_rd_add): groups of 16, even
         ///< and odd products summed apart, each term cut toward zero 24 bits below its half's
         ///< largest exponent (zero operands at exponent −126 taking part), halves and C realigned
         ///< by floor to 31 / 24 bits below the largest, the sum rounded to float32 (RNE)
};

const char* toString(MmaAlignment a);   ///< "product", "operands"
const char* toString(MmaSum s);         ///< "exact", "fp32"
const char* toString(MmaRounding r);    ///< "rz", "rne"
const char* toString(MmaCEntry c);      ///< "epilogue", "accumulator"
const char* toString(MmaBlockScales b); ///< "promoted", "inside"
const char* toString(MmaDatapath d);    ///< "fused", "cdna3"
std::optional<MmaBlockScales> parseMmaBlockScales(std::string_view s);
std::optional<MmaDatapath> parseMmaDatapath(std::string_view s);
std::optional<MmaAlignment> parseMmaAlignment(std::string_view s);
std::optional<MmaSum> parseMmaSum(std::string_view s);
std::optional<MmaRounding> parseMmaRounding(std::string_view s); ///< rz (toward_zero, truncate), rne (nearest_even)
std::optional<MmaCEntry> parseMmaCEntry(std::string_view s);

/// The rules of the FastAccum family besides bits, group and promotion (GemmOptions). The defaults
/// are the earlier prose model (product alignment, exact group sums, C in the epilogue), so configs
/// that do not name them keep their results.
struct MmaRules {
  MmaAlignment alignment = MmaAlignment::Product;
  MmaSum sum = MmaSum::Exact;
  int sum_bits = 23;                                  ///< Fp32 sums: fraction bits kept, 1..23
  MmaRounding sum_rounding = MmaRounding::TowardZero; ///< Fp32 sums
  MmaCEntry c_entry = MmaCEntry::Epilogue;
  MmaBlockScales block_scales = MmaBlockScales::Promoted;
  /// Inside block scales: products summed exactly in chunks of this many before they become one
  /// term (kind::mxf4nvf4: 16; its alignment exponent e(sa) + e(sb) alone, a zero chunk included);
  /// 1 = every product its own term (kind::mxf8f6f4).
  int chunk = 1;
  MmaDatapath datapath = MmaDatapath::Fused;
  bool operator==(const MmaRules&) const = default;
};

/// Output element type of D.
enum class OutputType { FP32, BF16, FP16, E4M3FN, E5M2 };

/// Which CPU kernel runs the FP32 / SplitFP32 models. All give bit-identical results (the tests
/// check it): each adds the exact products in the same ascending k order per output and promotes
/// windows with the same FMA.
enum class CpuKernel {
  Auto,       ///< Avx512Fma or Avx512Bf16 (whichever is faster here) at CPU level avx512, else
              ///< Avx2Fma at level avx2, else Portable (common/cpu_level.h: FP8LAB_CPU)
  Portable,   ///< standard C++ (auto-vectorised), every model
  Avx512Bf16, ///< _mm512_dpbf16_ps on BF16 pairs of decoded codes (FP8 values are exact in BF16;
              ///< the instruction adds its two products one after the other, Intel SDM); falls
              ///< back to Portable, with a Warning, where windows start at odd k
  Avx512Fma,  ///< _mm512_fmadd_ps on decoded float32 codes: fma(a, b, acc) = acc + a·b because
              ///< a·b is exact. Default: on Sapphire Rapids VDPBF16PS retires at about half the
              ///< MAC rate of two FMA ports (measured), so this is the faster path
  Avx2Fma,    ///< _mm256_fmadd_ps on decoded float32 codes, the same arithmetic as Avx512Fma on
              ///< 256-bit vectors (CPU level avx2 and above: Haswell and later, Zen); falls back
              ///< to Portable, with a Warning, for formats whose products are not exact in float32
};

/// The canonical names: "exact", "fp32", "split", "fast" (the ones configs are written with).
const char* toString(Accumulation a);
/// "fp32", "bf16", "fp16", "e4m3fn", "e5m2".
const char* toString(OutputType t);
const char* toString(CpuKernel k);

/// The one spelling table of the accumulation models, for flags, configs and the desktop app
/// alike (case-insensitive, '-' and '_' the same): exact (also double), fp32, split (split_fp32,
/// splitfp32), fast (fast_accum, fastaccum). nullopt for anything else.
std::optional<Accumulation> parseAccumulation(std::string_view s);
/// "exact, fp32, split (split_fp32), fast (fast_accum)" — for error messages and help.
std::string accumulationNames();
/// fp32 (float32), bf16 (bfloat16), fp16 (float16), e4m3fn (e4m3), e5m2; case-insensitive.
std::optional<OutputType> parseOutputType(std::string_view s);

/// Largest `fast_accum_bits` the FastAccum model takes. Its double accumulator adds a group of g
/// products and the running sum, all truncated onto one grid of 2^(E − bits + 1), exactly when
/// bits + bit_width(g) ≤ 53 (g + 1 terms below 2^bits grid units each); 48 leaves room for groups
/// up to 31 and covers every accumulation preset (accumulation_preset.h). Larger groups with many
/// bits are refused by checkFastAccum.
inline constexpr int kFastAccumMaxBits = 48;

struct GemmOptions {
  Accumulation accumulation = Accumulation::SplitFP32;
  int promotion_interval = 128;    ///< N_C, elements of K per promotion window (SplitFP32/FastAccum), ≥ 1
  int fast_accum_bits = 14;        ///< significant bits kept by the FastAccum model, 2..kFastAccumMaxBits
  int fast_accum_group = 32;       ///< products aligned together by the FastAccum model (one Hopper
                                   ///< FP8 WGMMA covers K = 32), ≥ 1
  bool fast_accum_promotes = true; ///< FastAccum: promote per window (false: whole K in one window,
                                   ///< like cuBLASLt FAST_ACCUM=1; scale-block boundaries still cut)
  MmaRules mma;                    ///< FastAccum: alignment, group-sum normalisation, where C enters
  OutputType output = OutputType::FP32;
  /// scale_D, the quant multiplier of FP8 outputs (E4M3FN, E5M2): d = cast(D · scale_D). cuBLASLt
  /// applies D_SCALE only when D is FP8, so any other value than 1 with a BF16 / FP16 / FP32 output
  /// is refused (checkOutputScale) rather than ignored.
  float output_quant_scale = 1.0f;
  /// Epilogue (cuBLASLt's alpha, beta·C and CUBLASLT_EPILOGUE_BIAS), applied to the accumulated,
  /// dequantized result x = a_scale ⊙ b_scale ⊙ (A_q·B_q) before scale_D and the output cast, in
  /// this order, each step one rounding in the accumulator's precision (float32; double for Exact):
  ///     y = alpha · x;   y = y + beta · C[m,n]  (only when beta ≠ 0);   y = y + bias[n]  (only
  /// when a bias is given). alpha = 1, beta = 0 and no bias leave x untouched (bit for bit).
  float alpha = 1.0f;
  float beta = 0.0f; ///< ≠ 0 needs `c`; with beta = 0, C is not read (as cuBLASLt)
  /// C, float32 [M,N] row-major (M·N values); read only when beta ≠ 0. Shared, not copied.
  std::shared_ptr<const std::vector<float>> c;
  /// bias, float32 [N], broadcast over the M rows; null = no bias epilogue.
  std::shared_ptr<const std::vector<float>> bias;
  int threads = 0;                        ///< 0 = all hardware threads
  CpuKernel cpu_kernel = CpuKernel::Auto; ///< CPU backend only
  /// Refuse GEMMs whose buffers need more bytes than this; 0 = the memory available now
  /// (MemAvailable of /proc/meminfo, else physical memory).
  int64_t memory_limit_bytes = 0;
};

/// Throws std::invalid_argument when `opt.output_quant_scale` cannot apply: not finite and > 0 for
/// an FP8 output, or other than 1 for a BF16 / FP16 / FP32 output (cuBLASLt multiplies by
/// CUBLASLT_MATMUL_DESC_D_SCALE_POINTER only when D is FP8). Both backends call it.
void checkOutputScale(const GemmOptions& opt);

/// Throws std::invalid_argument when the FastAccum parameters cannot be modelled exactly:
/// fast_accum_bits outside 2..kFastAccumMaxBits, fast_accum_group < 1, or bits +
/// bit_width(group) > 53 (the group sum would round in the model's double accumulator); the
/// message names the values. Checked for every model, like the other options.
void checkFastAccum(const GemmOptions& opt);

/// The FastAccum family's parameters in words: "groups of 32 products aligned to the largest e(a) +
/// e(b), 13 fraction bits kept (truncated), each group's sum a binary32 with 13 fraction bits
/// (truncated), C in the accumulator, promoted into float32 every 128 of K".
std::string fastAccumText(const GemmOptions& opt);

/// True when `opt` asks for any epilogue step (alpha ≠ 1, beta ≠ 0 or a bias).
bool hasEpilogue(const GemmOptions& opt);

/// Throws std::invalid_argument when the epilogue inputs do not fit D [m,n]: alpha or beta not
/// finite, beta ≠ 0 without C, C with other than m·n values, a bias with other than n values
/// (the messages name both sizes). Both backends call it.
void checkEpilogue(const GemmOptions& opt, int64_t m, int64_t n);

/// Applies the epilogue of `opt` (see GemmOptions::alpha) in place to d [m,n] row-major, float32
/// arithmetic for the float form and double arithmetic for the double form (C and bias are
/// float32 values, exact in double). Validates with checkEpilogue first.
void applyEpilogue(const GemmOptions& opt, float* d, int64_t m, int64_t n, int threads = 0);
void applyEpilogue(const GemmOptions& opt, double* d, int64_t m, int64_t n, int threads = 0);

/// The result of one GEMM.
struct GemmOutput {
  int64_t m = 0, n = 0;
  /// D as float32 [M,N] row-major: the output type's values (BF16/FP16/FP8 decoded exactly;
  /// for FP8 outputs the decoded codes divided by scale_D, i.e. what a consumer dequantizes).
  std::vector<float> d;
  std::vector<uint8_t> d_codes; ///< FP8 outputs: the codes [M,N]; empty otherwise
  float amax_d = 0;             ///< max |D| after the epilogue, before scale_D and the output cast (cuBLASLt AMAX_D)
  double seconds = 0;           ///< wall time of the GEMM including the output cast and amax_D
  std::string backend;          ///< "cpu" or "cuda"
  std::string device;           ///< CPU model or GPU name
  std::string algorithm;        ///< e.g. "avx512-bf16 blocked, 2 threads" or the cuBLASLt algo id
  bool model_of_undocumented_hardware = false; ///< true for Accumulation::FastAccum
  std::vector<Issue> warnings;
};

/// A place GEMMs run. Implementations: CPU reference (makeCpuGemmBackend) and CUDA (gpu/).
class GemmBackend {
public:
  virtual ~GemmBackend() = default;
  virtual std::string name() const = 0;   ///< "cpu" / "cuda"
  virtual std::string device() const = 0; ///< human-readable device name
  /// Empty when (A, B, options) can run here; otherwise why not (shapes, formats, scale modes,
  /// accumulation models, memory), e.g. "E5M2 × E5M2 is not supported by cuBLASLt".
  virtual std::string unsupportedReason(const QuantizedTensor& a, const QuantizedTensor& b,
                                        const GemmOptions& opt) const = 0;
  /// Runs D = A·B with the epilogue of `opt`. Throws std::invalid_argument on shape mismatch (A.cols != B.rows, K = 0),
  /// std::runtime_error with the reason when unsupported or out of memory, Cancelled when
  /// progress returned false.
  virtual GemmOutput run(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt,
                         const ProgressFn& progress = {}) = 0;
};

/// The CPU reference backend (bit-exact models of every accumulation mode).
std::unique_ptr<GemmBackend> makeCpuGemmBackend();

} // namespace fp8lab
