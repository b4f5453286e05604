// FP8 Lab — the GEMMs of a Linear site and the run's recorder (see linear_site.h).
#include "training/linear_site.h"

#include "training/dense.h"
#include "training/probes.h"
#include "scaling/scaling.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace fp8lab {

namespace {

/// The value of a quantized operand at (i, j) as the GEMM uses it: decode(code) · scale.
float deq(const QuantizedTensor& q, int64_t i, int64_t j) {
  return q.format->decodeTable()[q.codes[static_cast<size_t>(i * q.cols + j)]] * q.dequantScaleAt(i, j);
}

} // namespace

// ---- SiteRecorder ---------------------------------------------------------------------------

SiteRecorder::SiteRecorder(const SiteTable& table, bool fp8, NonFinitePolicy on_nonfinite,
                           std::vector<OperandHistory>& operands, NonFiniteRecord& first)
    : table_(table), fp8_(fp8), on_nonfinite_(on_nonfinite), ops_(operands), first_(first) {}

SiteRecorder::~SiteRecorder() = default;

void SiteRecorder::setDiagnostics(std::unique_ptr<DiagnosticsRecorder> d) {
  diag_ = std::move(d);
}

void SiteRecorder::record(size_t op, const OperandStepRecord& r) {
  OperandHistory& h = ops_.at(op);
  h.amax.push_back(r.amax);
  if (!fp8_) return;
  h.dequant_scale.push_back(r.dequant_scale);
  h.quant_scale.push_back(r.quant_scale);
  h.kept_previous.push_back(r.kept_previous ? 1 : 0);
  h.saturated.push_back(r.saturated);
  h.underflow.push_back(r.underflow);
  if (h.history_len > 0) {
    if (static_cast<int>(r.history.size()) != h.history_len)
      throw std::logic_error("amax history window of " + h.name() + " has the wrong length");
    h.history.insert(h.history.end(), r.history.begin(), r.history.end());
  }
}

void SiteRecorder::recordRecipe(size_t op, const RoleQuantRecord& rq) {
  OperandStepRecord r;
  r.amax = rq.amax;
  r.dequant_scale = rq.dequant_scale;
  r.quant_scale = rq.quant_scale;
  r.kept_previous = !(rq.amax > 0) || !std::isfinite(rq.amax);
  r.saturated = rq.saturated;
  r.underflow = rq.underflow;
  record(op, r);
}

void SiteRecorder::recordHighPrecision(size_t op, const float* x, size_t n) {
  recordUnquantized(op, static_cast<float>(amaxOf(x, n, /*ignore_nan=*/true))); // NaN ignored, as fmaxf
}

void SiteRecorder::recordUnquantized(size_t op, float amax) {
  OperandStepRecord r;
  r.amax = amax;
  r.dequant_scale = 1;
  r.quant_scale = 1;
  const OperandHistory& h = ops_.at(op);
  if (fp8_ && h.history_len > 0) {
    // The window is not advanced by a step that did not quantize: it stays as it was.
    const size_t L = size_t(h.history_len);
    r.history = h.history.size() >= L ? std::vector<float>(h.history.end() - std::ptrdiff_t(L), h.history.end())
                                      : std::vector<float>(L, 0.0f);
  }
  record(op, r);
}

QuantizedObserver SiteRecorder::observer(size_t op) const {
  if (!diag_) return {};
  DiagnosticsRecorder* d = diag_.get();
  const int64_t step = step_;
  return [d, op, step](const float* x, const QuantizedTensor& q) { d->trained(op, step, x, q); };
}

void SiteRecorder::trained(size_t op, const float* x, const QuantizedTensor& q) {
  if (diag_) diag_->trained(op, step_, x, q);
}

void SiteRecorder::whatIf(size_t op, const float* x, int64_t rows, int64_t cols, Axis axis) {
  if (diag_) diag_->whatIf(op, step_, x, rows, cols, axis);
}

NonFiniteRecord& SiteRecorder::startRecord(const std::string& layer, const char* tensor, const char* kind, int64_t rows,
                                           int64_t cols, int64_t index, float value) {
  NonFiniteRecord& r = first_;
  r = NonFiniteRecord{};
  r.found = true;
  r.step = step_;
  r.layer = layer;
  r.tensor = tensor;
  r.kind = kind;
  r.rows = rows;
  r.cols = cols;
  r.row = index / std::max<int64_t>(cols, 1);
  r.col = index % std::max<int64_t>(cols, 1);
  r.value = value;
  return r;
}

void SiteRecorder::checkQuantized(const QuantizedTensor& q, const float* x, const std::string& layer, const char* role,
                                  bool saturate) {
  if (!checking()) return;
  // Non-finite codes are possible only when the input held NaN / ±Inf or a non-saturating cast
  // overflowed — both counted by the quantization (QuantizeStats) — and a non-finite scale makes
  // every element non-finite.
  const QuantizeStats& st = q.stats;
  if (st.nan_inputs == 0 && st.inf_inputs == 0 && (saturate || st.saturated == 0) &&
      std::isfinite(q.dequant_scales.at(0)))
    return;
  const std::vector<float>& table = q.format->decodeTable();
  for (size_t i = 0; i < q.codes.size(); ++i) {
    const int64_t row = static_cast<int64_t>(i) / q.cols, col = static_cast<int64_t>(i) % q.cols;
    const float v = table[q.codes[i]] * q.dequantScaleAt(row, col);
    if (std::isfinite(v)) continue;
    NonFiniteRecord& r = startRecord(layer, role, "quantized_operand", q.rows, q.cols, static_cast<int64_t>(i), v);
    r.input_names = {"x", "quant_scale", "dequant_scale"};
    r.inputs = {x[i], q.quant_scales.empty() ? 1.0f / q.dequant_scales.at(0) : q.quant_scales.at(0),
                q.dequantScaleAt(row, col)};
    return;
  }
}

void SiteRecorder::finishGemmRecord(NonFiniteRecord& r, int64_t k, const std::vector<float>& arow,
                                    const std::vector<float>& bcol, size_t a_op, size_t b_op,
                                    bool before_quantization) {
  r.k_len = k;
  r.terms = largestDotTerms(arow.data(), 1, bcol.data(), 1, k);
  r.terms_before_quantization = before_quantization;
  const OperandHistory& ha = ops_.at(a_op);
  const OperandHistory& hb = ops_.at(b_op);
  r.a_operand = ha.name();
  r.b_operand = hb.name();
  r.a_amax = ha.amax.empty() ? 0.0f : ha.amax.back();
  r.b_amax = hb.amax.empty() ? 0.0f : hb.amax.back();
  r.a_scale = ha.dequant_scale.empty() ? 1.0f : ha.dequant_scale.back();
  r.b_scale = hb.dequant_scale.empty() ? 1.0f : hb.dequant_scale.back();
}

// ---- SiteRunContext -------------------------------------------------------------------------

uint64_t SiteRunContext::srSeed(int64_t step, size_t site, OperandRole role) const {
  uint64_t h = seed;
  for (uint64_t v : {static_cast<uint64_t>(step), static_cast<uint64_t>(site), static_cast<uint64_t>(role)}) {
    h += 0x9E3779B97F4A7C15ull + v;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    h ^= h >> 31;
  }
  return h;
}

// ---- LinearSite -----------------------------------------------------------------------------

LinearSite::LinearSite(size_t site, const SiteRunContext* ctx, OperandScaler* sx, OperandScaler* sw, OperandScaler* sg)
    : site_(site), ctx_(ctx), sx_(sx), sw_(sw), sg_(sg) {}

bool LinearSite::keepsState() const {
  return ctx_->fp8 && !ctx_->blockRecipe() && isDelayed(ctx_->scaling.kind) && !ctx_->policy.rules.empty() &&
         ctx_->policy.mayUseRecipe(info(), ctx_->runDefault());
}

SitePrecision LinearSite::precision(LinearGemm g, int64_t step) const {
  if (!ctx_->fp8) return SitePrecision::FP32;
  return ctx_->policy.rules.empty() ? SitePrecision::Recipe : ctx_->policy.resolve(info(), g, step, ctx_->runDefault());
}

void LinearSite::hpGemm(SitePrecision p, const float* a, const float* b, std::vector<float>& d, int64_t m, int64_t k,
                        int64_t n) const {
  d.resize(static_cast<size_t>(m * n));
  if (p == SitePrecision::BF16) {
    std::vector<float> ra(a, a + m * k), rb(b, b + k * n);
    for (float& v : ra) v = roundToBf16(v);
    for (float& v : rb) v = roundToBf16(v);
    matmulF32(ra.data(), rb.data(), d.data(), m, k, n, ctx_->threads);
    return;
  }
  matmulF32(a, b, d.data(), m, k, n, ctx_->threads);
}

void LinearSite::lowGemm(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt,
                         std::vector<float>& d) const {
  GemmOutput o = ctx_->backend->run(a, b, opt);
  if (int64_t* n = o.backend == "cpu" ? ctx_->gemm_runs_cpu : ctx_->gemm_runs_gpu) ++*n;
  if (ctx_->gemm_backend && ctx_->gemm_backend->empty()) {
    *ctx_->gemm_backend = o.backend;
    if (ctx_->gemm_device) *ctx_->gemm_device = o.device;
    if (ctx_->gemm_algorithm) *ctx_->gemm_algorithm = o.algorithm;
  }
  d = std::move(o.d);
}

float LinearSite::fpropA(int64_t i, int64_t k) const {
  return fprop_low_ && have_qx_ ? deq(qx_, i, k) : x_[i * in_ + k];
}

float LinearSite::fpropB(int64_t k, int64_t j) const {
  return fprop_low_ && have_qw_ ? deq(qw_, k, j) : w_[k * out_ + j];
}

void LinearSite::forward(const float* x, int64_t n, const float* w, std::vector<float>& y, int64_t step, bool recording,
                         OperandScaler* sx, OperandScaler* sw) {
  const Site& s = info();
  const int64_t in = s.in, out = s.out;
  SiteRecorder& rec = *ctx_->recorder;
  if (recording) {
    x_ = x;
    w_ = w;
    n_ = n;
    in_ = in;
    out_ = out;
  }
  const size_t ox = op(SiteOperand::Input), ow = op(SiteOperand::Kernel);
  const SitePrecision p = precision(LinearGemm::Fprop, step);
  const bool low = p == SitePrecision::Recipe;
  y.resize(static_cast<size_t>(n * out));
  if (ctx_->blockRecipe()) {
    const TrainingRecipeConfig& rc = ctx_->recipe;
    const RoleQuantization qa = rc.role(OperandRole::FpropInput), qb = rc.role(OperandRole::FpropWeight);
    if (low) {
      RoleQuantRecord rx, rw;
      const QuantizedObserver obx = recording ? rec.observer(ox) : QuantizedObserver();
      const QuantizedObserver obw = recording ? rec.observer(ow) : QuantizedObserver();
      const uint64_t seed_x = ctx_->srSeed(step, site_, OperandRole::FpropInput);
      const uint64_t seed_w = ctx_->srSeed(step, site_, OperandRole::FpropWeight);
      if (ctx_->block_gemm == BlockGemmPath::Core && qa.kind != RoleKind::HighPrecision &&
          qb.kind != RoleKind::HighPrecision) {
        const QuantizedTensor a =
            quantizeRole(qa, x, n, in, Axis::Cols, seed_x, recording ? &rx : nullptr, ctx_->threads, &obx);
        const QuantizedTensor b =
            quantizeRole(qb, w, in, out, Axis::Rows, seed_w, recording ? &rw : nullptr, ctx_->threads, &obw);
        lowGemm(a, b, ctx_->forward_gemm, y);
      } else {
        recipeLinearGemm(rc, LinearGemm::Fprop, x, w, n, in, out, seed_x, seed_w, y, recording ? &rx : nullptr,
                         recording ? &rw : nullptr, ctx_->threads, &obx, &obw);
      }
      if (recording) {
        rec.recordRecipe(ox, rx);
        rec.recordRecipe(ow, rw);
      }
    } else {
      if (recording) {
        rec.recordHighPrecision(ox, x, size_t(n * in));
        rec.recordHighPrecision(ow, w, size_t(in * out));
      }
      hpGemm(p, x, w, y, n, in, out);
    }
    if (recording) {
      rec.whatIf(ox, x, n, in, Axis::Cols);
      rec.whatIf(ow, w, in, out, Axis::Rows);
    }
    fprop_low_ = false; // the checks see the float32 operands (block operands are not kept)
  } else if (ctx_->fp8) {
    OperandScaler* qsx = sx ? sx : sx_;
    OperandScaler* qsw = sw ? sw : sw_;
    // A delayed-scaling state is fed at every step the site may later quantize, also while the
    // policy keeps it in high precision (a warm-up): its amax history is then ready when FP8 starts.
    const bool keep = keepsState();
    const bool need_x = low || keep || precision(LinearGemm::Wgrad, step) == SitePrecision::Recipe;
    const bool need_w = low || keep || precision(LinearGemm::Dgrad, step) == SitePrecision::Recipe;
    OperandStepRecord rx, rw;
    if (need_x) qsx->quantize(x, n, in, qx_, recording ? &rx : nullptr);
    if (need_w) qsw->quantize(w, in, out, qw_, recording ? &rw : nullptr);
    if (recording) {
      have_qx_ = need_x;
      have_qw_ = need_w;
      const bool sat = ctx_->scaling.saturate;
      if (need_x)
        rec.record(ox, rx);
      else
        rec.recordHighPrecision(ox, x, size_t(n * in));
      if (need_w)
        rec.record(ow, rw);
      else
        rec.recordHighPrecision(ow, w, size_t(in * out));
      if (need_x) rec.checkQuantized(qx_, x, s.path, "fprop.input", sat);
      if (need_w) rec.checkQuantized(qw_, w, s.path, "fprop.weight", sat);
      if (need_x) rec.trained(ox, x, qx_);
      if (need_w) rec.trained(ow, w, qw_);
      rec.whatIf(ox, x, n, in, Axis::Cols);
      rec.whatIf(ow, w, in, out, Axis::Rows);
    }
    if (low)
      lowGemm(qx_, qw_, ctx_->forward_gemm, y);
    else
      hpGemm(p, x, w, y, n, in, out);
    fprop_low_ = low;
  } else {
    if (recording) {
      rec.recordHighPrecision(ox, x, size_t(n * in));
      rec.recordHighPrecision(ow, w, size_t(in * out));
      rec.whatIf(ox, x, n, in, Axis::Cols);
      rec.whatIf(ow, w, in, out, Axis::Rows);
    }
    matmulF32(x, w, y.data(), n, in, out, ctx_->threads);
    fprop_low_ = false;
  }
  if (recording && rec.checking())
    rec.checkGemm(
        y, n, out, in, s.path, "fprop.output", [&](int64_t i, int64_t k) { return fpropA(i, k); },
        [&](int64_t k, int64_t j) { return fpropB(k, j); }, ox, ow, ctx_->blockRecipe());
}

void LinearSite::measureGradient(const float* g, const QuantizedTensor* q, int64_t n) {
  grad_nonzero_ = 0;
  for (int64_t i = 0; i < n; ++i) grad_nonzero_ += g[i] != 0.0f;
  if (!q || q->rows * q->cols != n) {
    grad_ratio_ = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  const std::vector<float> deqd = q->dequantize();
  grad_ratio_ = gradientNoiseRatio(g, deqd.data(), n);
}

void LinearSite::backward(const float* g, std::vector<float>& gw, std::vector<float>* dx, int64_t step) {
  const Site& s = info();
  const int64_t n = n_, in = in_, out = out_;
  const float* x = x_;
  const float* w = w_;
  if (!x || !w) throw std::logic_error("LinearSite::backward without a recording forward");
  SiteRecorder& rec = *ctx_->recorder;
  const size_t ox = op(SiteOperand::Input), ow = op(SiteOperand::Kernel), og = op(SiteOperand::OutputGrad);
  const SitePrecision pw = precision(LinearGemm::Wgrad, step), pd = precision(LinearGemm::Dgrad, step);
  const bool block = ctx_->blockRecipe();
  if (block) {
    const TrainingRecipeConfig& rc = ctx_->recipe;
    // wgrad dW = xᵀ·g (both copies quantized along N); output_grad records wgrad.grad_output
    if (probe_) measureGradient(g, nullptr, n * out);
    if (pw == SitePrecision::Recipe) {
      RoleQuantRecord rg;
      const QuantizedObserver diag = rec.observer(og);
      const QuantizedObserver obg = !probe_ ? diag : QuantizedObserver([&](const float* x, const QuantizedTensor& q) {
        if (diag) diag(x, q);
        measureGradient(x, &q, q.rows * q.cols);
        grad_nonzero_ = 0;
        for (int64_t i = 0; i < n * out; ++i) grad_nonzero_ += g[i] != 0.0f;
      });
      const uint64_t seed_x = ctx_->srSeed(step, site_, OperandRole::WgradInput);
      const uint64_t seed_g = ctx_->srSeed(step, site_, OperandRole::WgradGradOutput);
      const RoleQuantization qa = rc.role(OperandRole::WgradInput), qb = rc.role(OperandRole::WgradGradOutput);
      if (ctx_->block_gemm == BlockGemmPath::Core && qa.kind != RoleKind::HighPrecision &&
          qb.kind != RoleKind::HighPrecision) {
        std::vector<float> xT(static_cast<size_t>(n * in));
        transposeF32(x, xT.data(), n, in);
        const QuantizedTensor a = quantizeRole(qa, xT.data(), in, n, Axis::Cols, seed_x, nullptr, ctx_->threads);
        const QuantizedTensor b = quantizeRole(qb, g, n, out, Axis::Rows, seed_g, &rg, ctx_->threads, &obg);
        lowGemm(a, b, ctx_->backward_gemm, gw);
      } else {
        recipeLinearGemm(rc, LinearGemm::Wgrad, x, g, n, in, out, seed_x, seed_g, gw, nullptr, &rg, ctx_->threads,
                         nullptr, &obg);
      }
      rec.recordRecipe(og, rg);
    } else {
      rec.recordHighPrecision(og, g, size_t(n * out));
      std::vector<float> xT(static_cast<size_t>(n * in));
      transposeF32(x, xT.data(), n, in);
      hpGemm(pw, xT.data(), g, gw, in, n, out);
    }
    rec.whatIf(og, g, n, out, Axis::Rows);
    rec.checkGemm(
        gw, in, out, n, s.path, "wgrad.output", [&](int64_t i, int64_t k) { return x[k * in + i]; },
        [&](int64_t k, int64_t j) { return g[k * out + j]; }, ox, og, true);
    if (dx) { // dgrad dx = g·Wᵀ (both copies quantized along out)
      if (pd == SitePrecision::Recipe) {
        const uint64_t seed_g = ctx_->srSeed(step, site_, OperandRole::DgradGradOutput);
        const uint64_t seed_w = ctx_->srSeed(step, site_, OperandRole::DgradWeight);
        const RoleQuantization qa = rc.role(OperandRole::DgradGradOutput), qb = rc.role(OperandRole::DgradWeight);
        if (ctx_->block_gemm == BlockGemmPath::Core && qa.kind != RoleKind::HighPrecision &&
            qb.kind != RoleKind::HighPrecision) {
          std::vector<float> wT(static_cast<size_t>(in * out));
          transposeF32(w, wT.data(), in, out);
          const QuantizedTensor a = quantizeRole(qa, g, n, out, Axis::Cols, seed_g, nullptr, ctx_->threads);
          const QuantizedTensor b = quantizeRole(qb, wT.data(), out, in, Axis::Rows, seed_w, nullptr, ctx_->threads);
          lowGemm(a, b, ctx_->backward_gemm, *dx);
        } else {
          recipeLinearGemm(rc, LinearGemm::Dgrad, g, w, n, in, out, seed_g, seed_w, *dx, nullptr, nullptr,
                           ctx_->threads);
        }
      } else {
        std::vector<float> wT(static_cast<size_t>(in * out));
        transposeF32(w, wT.data(), in, out);
        hpGemm(pd, g, wT.data(), *dx, n, out, in);
      }
      rec.checkGemm(
          *dx, n, in, out, s.path, "dgrad.output", [&](int64_t i, int64_t k) { return g[i * out + k]; },
          [&](int64_t k, int64_t j) { return w[j * out + k]; }, og, ow, true);
    }
    return;
  }
  if (ctx_->fp8) {
    const bool need_g = pw == SitePrecision::Recipe || pd == SitePrecision::Recipe || keepsState();
    if (need_g) {
      OperandStepRecord rg;
      sg_->quantize(g, n, out, qg_, &rg);
      if (probe_) measureGradient(g, &qg_, n * out);
      rec.record(og, rg);
      rec.checkQuantized(qg_, g, s.path, "wgrad.grad_output", ctx_->scaling.saturate);
      rec.trained(og, g, qg_);
    } else {
      if (probe_) measureGradient(g, nullptr, n * out);
      rec.recordHighPrecision(og, g, size_t(n * out));
    }
    rec.whatIf(og, g, n, out, Axis::Rows);
    if (pw == SitePrecision::Recipe && have_qx_) {
      transposeQuantized(qx_, qxT_); // xᵀ [in, N]
      lowGemm(qxT_, qg_, ctx_->backward_gemm, gw);
      rec.checkGemm(
          gw, in, out, n, s.path, "wgrad.output", [&](int64_t i, int64_t k) { return deq(qxT_, i, k); },
          [&](int64_t k, int64_t j) { return deq(qg_, k, j); }, ox, og, false);
    } else {
      std::vector<float> xT(static_cast<size_t>(n * in));
      transposeF32(x, xT.data(), n, in);
      hpGemm(pw, xT.data(), g, gw, in, n, out);
      rec.checkGemm(
          gw, in, out, n, s.path, "wgrad.output",
          [&](int64_t i, int64_t k) { return xT[static_cast<size_t>(i * n + k)]; },
          [&](int64_t k, int64_t j) { return g[k * out + j]; }, ox, og, false);
    }
    if (dx) {
      if (pd == SitePrecision::Recipe && have_qw_) {
        transposeQuantized(qw_, qwT_); // Wᵀ [out, in]
        lowGemm(qg_, qwT_, ctx_->backward_gemm, *dx);
        rec.checkGemm(
            *dx, n, in, out, s.path, "dgrad.output", [&](int64_t i, int64_t k) { return deq(qg_, i, k); },
            [&](int64_t k, int64_t j) { return deq(qwT_, k, j); }, og, ow, false);
      } else {
        std::vector<float> wT(static_cast<size_t>(in * out));
        transposeF32(w, wT.data(), in, out);
        hpGemm(pd, g, wT.data(), *dx, n, out, in);
        rec.checkGemm(
            *dx, n, in, out, s.path, "dgrad.output", [&](int64_t i, int64_t k) { return g[i * out + k]; },
            [&](int64_t k, int64_t j) { return wT[static_cast<size_t>(k * in + j)]; }, og, ow, false);
      }
    }
    return;
  }
  // FP32 run
  if (probe_) measureGradient(g, nullptr, n * out);
  rec.recordHighPrecision(og, g, size_t(n * out));
  rec.whatIf(og, g, n, out, Axis::Rows);
  gw.resize(static_cast<size_t>(in * out));
  matmulF32At(x, g, gw.data(), in, n, out, ctx_->threads); // xᵀ·g
  rec.checkGemm(
      gw, in, out, n, s.path, "wgrad.output", [&](int64_t i, int64_t k) { return x[k * in + i]; },
      [&](int64_t k, int64_t j) { return g[k * out + j]; }, ox, og, false);
  if (dx) {
    std::vector<float> wT(static_cast<size_t>(in * out));
    transposeF32(w, wT.data(), in, out);
    dx->resize(static_cast<size_t>(n * in));
    matmulF32(g, wT.data(), dx->data(), n, out, in, ctx_->threads);
    rec.checkGemm(
        *dx, n, in, out, s.path, "dgrad.output", [&](int64_t i, int64_t k) { return g[i * out + k]; },
        [&](int64_t k, int64_t j) { return wT[static_cast<size_t>(k * in + j)]; }, og, ow, false);
  }
}

// ---- SiteLinearOps --------------------------------------------------------------------------

namespace {

/// Per-tensor current scaling of an attention operand in place: quant multiplier
/// s = max_finite / amax (TE Float8CurrentScaling; amax 0 → s = 1), x ← decode(encode(x·s)) / s.
float fakeQuantizeCurrent(float* x, int64_t n, const Format& f) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float s = amax > 0 && std::isfinite(amax) ? float(f.maxFinite() / double(amax)) : 1.0f;
  std::vector<uint8_t> codes(static_cast<size_t>(n));
  f.encodeBulk(x, codes.data(), size_t(n), {}, s);
  const std::vector<float>& t = f.decodeTable();
  for (int64_t i = 0; i < n; ++i) x[i] = t[codes[size_t(i)]] / s;
  return s;
}

/// A fixed quant multiplier s: x ← decode(encode(x·s)) / s (the P cast of FP8 attention).
void fakeQuantizeFixed(float* x, int64_t n, const Format& f, float s) {
  std::vector<uint8_t> codes(static_cast<size_t>(n));
  f.encodeBulk(x, codes.data(), size_t(n), {}, s);
  const std::vector<float>& t = f.decodeTable();
  for (int64_t i = 0; i < n; ++i) x[i] = t[codes[size_t(i)]] / s;
}

int64_t nonZeros(const float* x, int64_t n) {
  int64_t c = 0;
  for (int64_t i = 0; i < n; ++i) c += x[i] != 0.0f;
  return c;
}

/// max |x| with NaN ignored (fmaxf), as float32: scaling.h's vectorised amaxOf.
float amaxOf(const float* x, int64_t n) {
  return static_cast<float>(fp8lab::amaxOf(x, static_cast<size_t>(n), /*ignore_nan=*/true));
}

} // namespace

SiteLinearOps::SiteLinearOps(const SiteTable& table, SiteRunContext& ctx, std::vector<OperandScaler>& scalers,
                             float softmax_scale)
    : table_(table), ctx_(ctx), softmax_scale_(softmax_scale), cast_nonzero_(new std::atomic<int64_t>[table.size()]()),
      cast_flushed_(new std::atomic<int64_t>[table.size()]()) {
  for (size_t i = 0; i < table.size(); ++i) {
    if (table[i].kind != SiteKind::Linear) {
      sites_.push_back(nullptr);
      continue;
    }
    OperandScaler* s = scalers.empty() ? nullptr : &scalers[kSiteOperands * i];
    sites_.push_back(std::make_unique<LinearSite>(i, &ctx, s, s ? s + 1 : nullptr, s ? s + 2 : nullptr));
  }
}

SiteLinearOps::~SiteLinearOps() = default;

void SiteLinearOps::setStep(int64_t step, bool recording, std::vector<OperandScaler>* frozen) {
  step_ = step;
  recording_ = recording;
  frozen_ = frozen;
}

void SiteLinearOps::countCasts(bool on) {
  count_casts_ = on;
  for (size_t i = 0; i < table_.size(); ++i) cast_nonzero_[i] = cast_flushed_[i] = 0;
}

double SiteLinearOps::castUnderflow(size_t site) const {
  const int64_t nz = cast_nonzero_[site];
  return nz > 0 ? double(cast_flushed_[site]) / double(nz) : std::numeric_limits<double>::quiet_NaN();
}

void SiteLinearOps::setProbe(bool on) {
  for (auto& s : sites_)
    if (s) s->setProbe(on);
}

void SiteLinearOps::linearForward(size_t site, const float* x, int64_t n, const float* w, int64_t, int64_t,
                                  std::vector<float>& y) {
  OperandScaler* fs = frozen_ && !frozen_->empty() ? &(*frozen_)[kSiteOperands * site] : nullptr;
  sites_[site]->forward(x, n, w, y, step_, recording_, fs, fs ? fs + 1 : nullptr);
}

void SiteLinearOps::linearBackward(size_t site, const float* g, std::vector<float>& gw, std::vector<float>* dx) {
  sites_[site]->backward(g, gw, dx, step_);
}

bool SiteLinearOps::attentionLow(size_t site) {
  return ctx_.fp8 &&
         ctx_.policy.resolve(table_[site], LinearGemm::Fprop, step_, ctx_.runDefault()) == SitePrecision::Recipe;
}

void SiteLinearOps::quantize(size_t site, SiteOperand operand, float* x, int64_t n) {
  if (table_[site].kind == SiteKind::AttentionContext && operand == SiteOperand::Input) {
    if (!count_casts_) {
      fakeQuantizeFixed(x, n, Format::E4M3FN(), softmax_scale_);
      return;
    }
    const int64_t before = nonZeros(x, n);
    fakeQuantizeFixed(x, n, Format::E4M3FN(), softmax_scale_);
    cast_nonzero_[site] += before;
    cast_flushed_[site] += before - nonZeros(x, n);
    return;
  }
  scaled_[SiteTable::operandIndex(site, operand)] = fakeQuantizeCurrent(x, n, Format::E4M3FN());
}

void SiteLinearOps::observe(size_t site, SiteOperand operand, const float* x, int64_t n) {
  if (!recording_) return;
  const size_t op = SiteTable::operandIndex(site, operand);
  OperandStepRecord r;
  r.amax = amaxOf(x, n);
  const bool low = attentionLow(site) && operand != SiteOperand::OutputGrad;
  float q = 1;
  if (low) {
    const bool p_cast = table_[site].kind == SiteKind::AttentionContext && operand == SiteOperand::Input;
    q = p_cast ? softmax_scale_ : scaled_.count(op) ? scaled_.at(op) : 1.0f;
  }
  r.quant_scale = q;
  r.dequant_scale = 1.0f / q;
  ctx_.recorder->record(op, r);
}

void SiteLinearOps::observeAmax(size_t site, SiteOperand operand, double amax) {
  if (!recording_) return;
  OperandStepRecord r;
  r.amax = float(amax);
  r.dequant_scale = 1;
  r.quant_scale = 1;
  ctx_.recorder->record(SiteTable::operandIndex(site, operand), r);
}

void SiteLinearOps::check(const std::string& where, const char* tensor, const float* x, int64_t rows, int64_t cols,
                          const OpInputs& inputs) {
  if (!recording_) return;
  ctx_.recorder->checkElementwise(x, rows, cols, where, tensor, [&](NonFiniteRecord& r, int64_t i, int64_t j) {
    if (inputs) inputs(i, j, r.input_names, r.inputs);
  });
}

void SiteLinearOps::checkBiasAdd(const std::string& where, const float* y, const float* bias, int64_t rows,
                                 int64_t cols) {
  if (!recording_ || !ctx_.recorder->checking()) return;
  // activation = fprop.output + bias: find an overflowing sum before it is written
  uint32_t bad = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const float v = y[i * cols + j] + bias[j];
      bad |= (std::bit_cast<uint32_t>(v) & 0x7F800000u) == 0x7F800000u;
    }
  for (int64_t e = 0; bad && e < rows * cols; ++e) {
    const float d0 = y[e], b0 = bias[e % cols];
    if (std::isfinite(d0 + b0)) continue;
    NonFiniteRecord& r = ctx_.recorder->startRecord(where, "activation", "elementwise", rows, cols, e, d0 + b0);
    r.input_names = {"fprop.output", "bias"};
    r.inputs = {d0, b0};
    break;
  }
}

} // namespace fp8lab
