// FP8 Lab — how the training engine runs the GEMMs of a Linear site under the precision policy,
// and what it records of them.
//
// A Linear site y = x·W (x [N, in], W [in, out], g = ∂loss/∂y [N, out]) has three GEMMs:
//   fprop  y  = x · W      A = x  [N,in],   B = W  [in,out]
//   dgrad  dx = g · Wᵀ     A = g  [N,out],  B = Wᵀ [out,in]
//   wgrad  dW = xᵀ · g     A = xᵀ [in,N],   B = g  [N,out]
// Each runs as the policy says (sites.h) at this step:
//  - Recipe, per-tensor scaling (Flax Fp8DotGeneral / TE HYBRID): x, W and g are each quantized
//    once per step with their own scaling state (operand_scaler.h); the quantized x is reused
//    transposed by wgrad and the quantized W by dgrad, as Flax's custom VJP does; the GEMMs run
//    through core/gemm (GemmBackend) with the run's accumulation model.
//  - Recipe, block scaling (recipe.h: TE Float8BlockScaling, MXFP8BlockScaling,
//    NVFP4BlockScaling): each of the six roles is quantized separately along its contraction axis.
//    BlockGemmPath::FakeQuant multiplies the dequantized operands with a float32 GEMM (faster; the
//    run's accumulation model does not apply and the run says so); BlockGemmPath::Core hands the
//    block-scaled operands to core/gemm, which applies each K-block's scales to its partial sum
//    under the accumulation model, as block-scaled MMA does.
//  - FP32 / BF16: float32 GEMMs (dense.h matmulF32) of the float32 operands, or of copies rounded
//    to bfloat16.
// The site records, per step, its three operands (input, kernel, output_grad: OperandHistory of
// trainer.h) through a SiteRecorder, which also keeps the per-block statistics and what-if
// recipes (diagnostics.h) and finds the first non-finite value (nonfinite.h).
#pragma once

#include "gemm/gemm.h"
#include "training/diagnostics.h"
#include "training/model.h"
#include "training/nonfinite.h"
#include "training/operand_scaler.h"
#include "training/recipe.h"
#include "training/sites.h"
#include "training/trainer.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fp8lab {

/// Records what the sites of a run did at every step: the operand histories, the diagnostics and
/// the first non-finite value. One per run; the sites and the model report to it.
class SiteRecorder {
public:
  /// `table`: the run's sites; `fp8`: whether the run is low precision (FP8 runs record scales,
  /// counts and windows of every operand; FP32 runs the amax only). `operands` (3 per site, in
  /// SiteTable::operandIndex order) and `first` live in the run's result.
  SiteRecorder(const SiteTable& table, bool fp8, NonFinitePolicy on_nonfinite, std::vector<OperandHistory>& operands,
               NonFiniteRecord& first);
  ~SiteRecorder();

  const SiteTable& table() const { return table_; }
  bool fp8() const { return fp8_; }
  /// The step being computed (records name it).
  void setStep(int64_t step) { step_ = step; }
  int64_t step() const { return step_; }
  /// The diagnostics (null until set; then owned here).
  void setDiagnostics(std::unique_ptr<DiagnosticsRecorder> d);
  DiagnosticsRecorder* diagnostics() const { return diag_.get(); }

  /// Appends one step of operand `op`.
  void record(size_t op, const OperandStepRecord& r);
  /// A block recipe's quantization of operand `op` at this step.
  void recordRecipe(size_t op, const RoleQuantRecord& r);
  /// An operand that entered its GEMM in high precision: its amax (scale 1, no counts).
  void recordHighPrecision(size_t op, const float* x, size_t n);
  /// A step of operand `op` that was not quantized, with amax `amax` given (NaN: not seen at all):
  /// scale 1, no counts, a delayed-scaling window kept as it was.
  void recordUnquantized(size_t op, float amax);
  /// The observer handing a block recipe's quantization of `op` to the per-block statistics.
  QuantizedObserver observer(size_t op) const;
  /// Per-tensor quantization of `op` (q made from x): per-block statistics.
  void trained(size_t op, const float* x, const QuantizedTensor& q);
  /// What-if recipes of `op` on its high-precision tensor x [rows, cols] along `axis`.
  void whatIf(size_t op, const float* x, int64_t rows, int64_t cols, Axis axis);

  // ---- the first non-finite value (nonfinite.h). Each check returns at once when the policy is
  // Off or the first value has been recorded; a failing tensor is scanned a second time.
  bool checking() const { return on_nonfinite_ != NonFinitePolicy::Off && !first_.found; }
  NonFiniteRecord& startRecord(const std::string& layer, const char* tensor, const char* kind, int64_t rows,
                               int64_t cols, int64_t index, float value);
  /// An elementwise float32 result x [rows, cols] of `layer`; inputs(r, i, j) fills the op's
  /// inputs at (i, j).
  template <class Inputs>
  void checkElementwise(const float* x, int64_t rows, int64_t cols, const std::string& layer, const char* tensor,
                        Inputs inputs) {
    if (!checking() || allFinite(x, static_cast<size_t>(rows * cols))) return;
    const int64_t e = firstNonFinite(x, static_cast<size_t>(rows * cols));
    NonFiniteRecord& r = startRecord(layer, tensor, "elementwise", rows, cols, e, x[e]);
    inputs(r, r.row, r.col);
  }
  /// A per-tensor quantized operand (decode(code) · scale) of `layer`.
  void checkQuantized(const QuantizedTensor& q, const float* x, const std::string& layer, const char* role,
                      bool saturate);
  /// A GEMM output d [m, n] = A [m, k] · B [k, n] of `layer`; a(i, kk) and b(kk, j) give the
  /// operand values the GEMM used; a_op / b_op index the recorded operands.
  template <class A, class B>
  void checkGemm(const std::vector<float>& d, int64_t m, int64_t n, int64_t k, const std::string& layer,
                 const char* tensor, A a, B b, size_t a_op, size_t b_op, bool before_quantization) {
    if (!checking() || allFinite(d.data(), static_cast<size_t>(m * n))) return;
    const int64_t e = firstNonFinite(d.data(), d.size());
    NonFiniteRecord& r = startRecord(layer, tensor, "gemm_output", m, n, e, d[static_cast<size_t>(e)]);
    std::vector<float> arow(static_cast<size_t>(k)), bcol(static_cast<size_t>(k));
    for (int64_t kk = 0; kk < k; ++kk) {
      arow[static_cast<size_t>(kk)] = a(r.row, kk);
      bcol[static_cast<size_t>(kk)] = b(kk, r.col);
    }
    finishGemmRecord(r, k, arow, bcol, a_op, b_op, before_quantization);
  }

private:
  void finishGemmRecord(NonFiniteRecord& r, int64_t k, const std::vector<float>& arow, const std::vector<float>& bcol,
                        size_t a_op, size_t b_op, bool before_quantization);

  const SiteTable& table_;
  bool fp8_;
  NonFinitePolicy on_nonfinite_;
  std::vector<OperandHistory>& ops_;
  NonFiniteRecord& first_;
  int64_t step_ = 0;
  std::unique_ptr<DiagnosticsRecorder> diag_;
};

/// What every site of a run shares: the run's recipe and GEMM options, the policy, the backend
/// and the recorder.
struct SiteRunContext {
  bool fp8 = true;               ///< the run is low precision (else every site is FP32)
  TrainingScalingConfig scaling; ///< per-tensor runs
  TrainingRecipeConfig recipe;   ///< PerTensor, or the block recipe
  BlockGemmPath block_gemm = BlockGemmPath::FakeQuant;
  GemmOptions forward_gemm, backward_gemm;
  PrecisionPolicy policy;
  uint64_t seed = 1; ///< stochastic rounding seeds derive from it
  int threads = 0;
  GemmBackend* backend = nullptr; ///< per-tensor and core block GEMMs (not owned)
  SiteRecorder* recorder = nullptr;
  /// Where the GEMMs ran (the first low-precision GEMM's backend, device and algorithm).
  std::string* gemm_backend = nullptr;
  std::string* gemm_device = nullptr;
  std::string* gemm_algorithm = nullptr;
  /// How many of the run's low-precision GEMMs ran on a GPU and on the CPU (the backend each GEMM
  /// output names; null: not counted).
  int64_t* gemm_runs_gpu = nullptr;
  int64_t* gemm_runs_cpu = nullptr;

  bool blockRecipe() const { return fp8 && recipe.recipe != TrainingRecipe::PerTensor; }
  SitePrecision runDefault() const { return fp8 ? SitePrecision::Recipe : SitePrecision::FP32; }
  /// The stochastic-rounding seed of one quantization: splitmix64 over (seed, step, site, role).
  uint64_t srSeed(int64_t step, size_t site, OperandRole role) const;
};

/// The GEMMs of one Linear site (see the top of this file). The model owns x, W and g; the site
/// keeps the quantized copies between forward and backward of a step.
class LinearSite {
public:
  /// `sx`, `sw`, `sg`: the per-tensor scaling states of the site's three operands (per-tensor FP8
  /// runs; null otherwise), owned by the run.
  LinearSite(size_t site, const SiteRunContext* ctx, OperandScaler* sx = nullptr, OperandScaler* sw = nullptr,
             OperandScaler* sg = nullptr);

  size_t site() const { return site_; }
  const Site& info() const { return ctx_->recorder->table()[site_]; }

  /// y [n, out] = x [n, in] · W [in, out] at `step` (y resized). x and W must stay unchanged
  /// until backward(). `recording`: a training step (records, checks, advances the scaling
  /// state); false: an evaluation forward, which quantizes with `sx` / `sw` when given (copies of
  /// the states, so evaluation never advances training) and records nothing.
  void forward(const float* x, int64_t n, const float* w, std::vector<float>& y, int64_t step, bool recording,
               OperandScaler* sx = nullptr, OperandScaler* sw = nullptr);
  /// gw [in, out] (written) = xᵀ·g and, when dx is not null, dx [n, in] = g·Wᵀ, for the x and W
  /// of the last recording forward().
  void backward(const float* g, std::vector<float>& gw, std::vector<float>* dx, int64_t step);

  /// While set, backward() also measures the output gradient's quantization for the probes:
  /// gradNoiseRatio() = ‖g‖ / ‖Q(g) − g‖ of the copy wgrad used (NaN when g was not quantized)
  /// and gradNonzero() = the non-zero elements of g.
  void setProbe(bool on) { probe_ = on; }
  double gradNoiseRatio() const { return grad_ratio_; }
  int64_t gradNonzero() const { return grad_nonzero_; }

  /// The value A[i, k] / B[k, j] the fprop GEMM used (for checks after it).
  float fpropA(int64_t i, int64_t k) const;
  float fpropB(int64_t k, int64_t j) const;

private:
  SitePrecision precision(LinearGemm g, int64_t step) const;
  /// Per-tensor delayed scaling on a site the policy may put in the recipe: its scaling states
  /// are fed every step, also in high-precision steps.
  bool keepsState() const;
  void hpGemm(SitePrecision p, const float* a, const float* b, std::vector<float>& d, int64_t m, int64_t k,
              int64_t n) const;
  void lowGemm(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt, std::vector<float>& d) const;
  size_t op(SiteOperand o) const { return SiteTable::operandIndex(site_, o); }

  size_t site_;
  const SiteRunContext* ctx_;
  OperandScaler *sx_, *sw_, *sg_;
  const float* x_ = nullptr; ///< this step's input [n, in]
  const float* w_ = nullptr; ///< this step's weight [in, out]
  int64_t n_ = 0, in_ = 0, out_ = 0;
  bool fprop_low_ = false; ///< the fprop GEMM used the quantized operands
  QuantizedTensor qx_, qw_, qg_, qxT_, qwT_;
  bool have_qx_ = false, have_qw_ = false;
  bool probe_ = false;
  double grad_ratio_ = 0;
  int64_t grad_nonzero_ = 0;
  void measureGradient(const float* g, const QuantizedTensor* q, int64_t n);
};

/// A model's GEMMs as the training run's sites (model.h LinearOps, T = float): every Linear site
/// through a LinearSite under the precision policy; attention matmuls (scores Q·Kᵀ, context P·V)
/// fake-quantized when the policy puts them in the recipe — Q, K, V per tensor (current scaling,
/// E4M3FN) and each softmax row P with the fixed quant multiplier `softmax_scale` (cuDNN's FP8
/// attention) —, the backward passing straight through the casts. On training steps every
/// operand is recorded and every elementwise result checked (SiteRecorder); evaluation forwards
/// record nothing and quantize with copies of the scaling states.
class SiteLinearOps : public LinearOps<float> {
public:
  /// `scalers`: the run's per-tensor scaling states, kSiteOperands per site in site order (empty
  /// for block recipes and FP32 runs). `table`, `ctx` and `scalers` must outlive this.
  SiteLinearOps(const SiteTable& table, SiteRunContext& ctx, std::vector<OperandScaler>& scalers,
                float softmax_scale = 256.0f);
  ~SiteLinearOps() override;

  /// The step the next forward / backward computes. `recording`: a training step (records,
  /// checks, advances the scaling states); false: an evaluation, which quantizes with `frozen`
  /// (copies of the states, kSiteOperands per site; null or empty: the run's own states are
  /// read, as block recipes and FP32 runs have none).
  void setStep(int64_t step, bool recording, std::vector<OperandScaler>* frozen = nullptr);
  /// Count, in the next forward, the softmax probabilities the P cast of FP8 attention receives
  /// non-zero and flushes to zero (the softmax_underflow probe of blocks whose attention runs in
  /// FP8, where the stored probabilities are the cast ones). Rows are cast concurrently, hence
  /// the atomics.
  void countCasts(bool on);
  /// The share of non-zero probabilities the last counted forward's P cast of `site` flushed to
  /// zero; NaN when the site cast nothing.
  double castUnderflow(size_t site) const;
  /// Measure the output gradients of every Linear site in the next backward (the probes).
  void setProbe(bool on);
  /// The LinearSite of Linear site `i` (null for attention sites).
  LinearSite* site(size_t i) { return sites_[i].get(); }

  void linearForward(size_t site, const float* x, int64_t n, const float* w, int64_t in, int64_t out,
                     std::vector<float>& y) override;
  void linearBackward(size_t site, const float* g, std::vector<float>& gw, std::vector<float>* dx) override;
  bool attentionLow(size_t site) override;
  void quantize(size_t site, SiteOperand operand, float* x, int64_t n) override;
  void observe(size_t site, SiteOperand operand, const float* x, int64_t n) override;
  void observeAmax(size_t site, SiteOperand operand, double amax) override;
  void check(const std::string& where, const char* tensor, const float* x, int64_t rows, int64_t cols,
             const OpInputs& inputs = {}) override;
  void checkBiasAdd(const std::string& where, const float* y, const float* bias, int64_t rows, int64_t cols) override;

private:
  const SiteTable& table_;
  SiteRunContext& ctx_;
  float softmax_scale_;
  std::vector<std::unique_ptr<LinearSite>> sites_;
  int64_t step_ = 0;
  bool recording_ = false;
  std::vector<OperandScaler>* frozen_ = nullptr;
  std::map<size_t, float> scaled_;
  bool count_casts_ = false;
  std::unique_ptr<std::atomic<int64_t>[]> cast_nonzero_, cast_flushed_;
};

} // namespace fp8lab
