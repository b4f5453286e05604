// FP8 Lab — the FP8 training experiment (see trainer.h).
#include "training/trainer.h"

#include "training/dense.h"
#include "training/random.h"
#include "gemm/gemm_internal.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace fp8lab {

const char* toString(TrainingPrecision p) {
  return p == TrainingPrecision::FP8 ? "fp8" : "fp32";
}

std::string TrainingConfig::validate() const {
  if (layer_sizes.size() < 2) return "layers must list at least an input and an output size";
  for (int s : layer_sizes)
    if (s < 1 || s > 65536) return "every layer size must be in 1..65536";
  if (layer_sizes.back() != 10) return "the last layer must have 10 outputs (the Fashion-MNIST classes)";
  if (batch_size < 1 || batch_size > 65536) return "batch_size must be in 1..65536";
  if (eval_batch_size < 1 || eval_batch_size > 65536) return "eval_batch_size must be in 1..65536";
  if (epochs < 1 || epochs > 1000) return "epochs must be in 1..1000";
  if (!(learning_rate > 0) || !std::isfinite(learning_rate)) return "learning_rate must be a positive number";
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) return "Adam betas must be in [0, 1)";
  if (!(adam_epsilon > 0)) return "Adam epsilon must be positive";
  if (precision == TrainingPrecision::FP8) {
    if (!forward_format || !backward_format) return "FP8 formats missing";
    if (forward_format->bits() > 8 || backward_format->bits() > 8) return "FP8 runs need 8-bit (or narrower) formats";
    if (isDelayed(scaling.kind) && (scaling.history_len < 1 || scaling.history_len > 65536))
      return "amax history length must be in 1..65536";
    if (const std::string why = recipe.validate(); !why.empty()) return "recipe: " + why;
  } else if (recipe.recipe != TrainingRecipe::PerTensor) {
    return "a recipe needs precision fp8";
  }
  if (spike.enabled) {
    if (spike.step < 0) return "spike step must be ≥ 0";
    if (spike.layer < 0 || spike.layer >= static_cast<int>(layer_sizes.size()) - 1)
      return "spike layer must name a Linear layer (0-based)";
    if (!std::isfinite(spike.factor)) return "spike factor must be finite";
    if (spike.row < -1 || spike.col < -1) return "spike row and col must be ≥ 0 (or absent: every element)";
    if (spike.col >= layer_sizes[static_cast<size_t>(spike.layer)])
      return "spike col must be below the layer's input size";
  }
  for (const GemmOptions* g : {&forward_gemm, &backward_gemm}) {
    if (g->output != OutputType::FP32 && g->output != OutputType::BF16 && g->output != OutputType::FP16)
      return "the GEMM output type must be fp32, bf16 or fp16";
    if (g->output != OutputType::FP32 &&
        (precision != TrainingPrecision::FP8 || recipe.recipe != TrainingRecipe::PerTensor))
      return "a GEMM output type other than fp32 applies to the per-tensor FP8 GEMMs only";
  }
  if (precision == TrainingPrecision::FP8 && recipe.recipe != TrainingRecipe::PerTensor && !scaling.saturate)
    return "saturate false applies to the per-tensor FP8 casts (\"scaling\"), not to block recipes";
  if (const std::string why = diagnostics.validate(); !why.empty()) return why;
  return {};
}

std::string trainingScalingName(const TrainingConfig& c) {
  if (c.precision != TrainingPrecision::FP8) return "none";
  if (c.recipe.recipe != TrainingRecipe::PerTensor) return toString(c.recipe.recipe);
  return toString(c.scaling.kind);
}

const OperandHistory* TrainingResult::find(const std::string& name) const {
  for (const auto& o : operands)
    if (o.name() == name) return &o;
  return nullptr;
}

std::pair<double, double> evaluateFp32(const std::vector<LayerWeights>& w, const ImageDataset& test, int batch,
                                       int threads) {
  double loss = 0;
  int64_t correct = 0;
  std::vector<float> x, y;
  for (int64_t s = 0; s < test.count; s += batch) {
    const int64_t b = std::min<int64_t>(batch, test.count - s);
    x.assign(test.pixels.begin() + s * test.features(), test.pixels.begin() + (s + b) * test.features());
    for (size_t l = 0; l < w.size(); ++l) {
      y.resize(static_cast<size_t>(b * w[l].out));
      matmulF32(x.data(), w[l].kernel.data(), y.data(), b, w[l].in, w[l].out, threads);
      for (int64_t i = 0; i < b; ++i)
        for (int64_t j = 0; j < w[l].out; ++j) {
          float& v = y[static_cast<size_t>(i * w[l].out + j)];
          v += w[l].bias[static_cast<size_t>(j)];
          if (l + 1 < w.size()) v = std::max(v, 0.0f);
        }
      x.swap(y);
    }
    const int64_t c = w.back().out;
    for (int64_t i = 0; i < b; ++i) {
      const float* z = x.data() + i * c;
      const float m = *std::max_element(z, z + c);
      double se = 0;
      for (int64_t j = 0; j < c; ++j) se += std::exp(static_cast<double>(z[j] - m));
      const int label = test.labels[static_cast<size_t>(s + i)];
      loss += std::log(se) - static_cast<double>(z[label] - m);
      if (std::max_element(z, z + c) - z == label) ++correct;
    }
  }
  return {loss / static_cast<double>(test.count), static_cast<double>(correct) / static_cast<double>(test.count)};
}

// ---------------------------------------------------------------------------------------------

namespace {

/// THE adapter to core/gemm: D[M,N] = A·B for two quantized operands, as float32.
void fp8Gemm(GemmBackend& backend, const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt,
             std::vector<float>& out, TrainingResult& res) {
  GemmOutput o = backend.run(a, b, opt);
  if (res.gemm_backend.empty()) {
    res.gemm_backend = o.backend;
    res.gemm_device = o.device;
    res.gemm_algorithm = o.algorithm;
  }
  out = std::move(o.d);
}

struct Layer {
  int64_t in = 0, out = 0;
  std::vector<float> w, b;           // master weights
  std::vector<float> mw, vw, mb, vb; // Adam moments
  std::vector<float> gw, gb;         // gradients
  // per-step buffers
  std::vector<float> x; // input [B, in] (after any spike)
  std::vector<float> y; // output [B, out] (pre-activation)
  QuantizedTensor qx, qw, qg, qxT, qwT;
  OperandScaler* sx = nullptr;
  OperandScaler* sw = nullptr;
  OperandScaler* sg = nullptr;
};

} // namespace

struct TrainingRun::Impl {
  TrainingConfig cfg;
  const ImageDataset* train = nullptr;
  const ImageDataset* test = nullptr;
  GemmBackend* backend = nullptr;
  std::unique_ptr<GemmBackend> own_backend;
  TrainingResult res;
  std::vector<Layer> layers;
  std::vector<OperandScaler> scalers; // 3 per layer: x, w, g
  bool ran = false;
  int64_t adam_t = 0;
  int64_t cur_step = 0; // the global step being computed (non-finite records)
  std::unique_ptr<DiagnosticsRecorder> diag;

  /// The observer that hands the trained quantization of operand `op` at `step` to the diagnostics.
  QuantizedObserver observer(size_t op, int64_t step) {
    return [this, op, step](const float* x, const QuantizedTensor& q) { diag->trained(op, step, x, q); };
  }

  // ---- the first non-finite value (nonfinite.h). Every check returns at once when the policy
  // is Off or the first value has been recorded; a failing tensor is scanned a second time.
  bool checking() const { return cfg.on_nonfinite != NonFinitePolicy::Off && !res.first_nonfinite.found; }

  NonFiniteRecord& startRecord(size_t li, const char* tensor, const char* kind, int64_t rows, int64_t cols,
                               int64_t index, float value) {
    NonFiniteRecord& r = res.first_nonfinite;
    r = NonFiniteRecord{};
    r.found = true;
    r.step = cur_step;
    r.layer = "fc" + std::to_string(li + 1);
    r.tensor = tensor;
    r.kind = kind;
    r.rows = rows;
    r.cols = cols;
    r.row = index / std::max<int64_t>(cols, 1);
    r.col = index % std::max<int64_t>(cols, 1);
    r.value = value;
    return r;
  }

  /// An elementwise float32 result x [rows, cols]; inputs(i, j) gives the op's inputs at (i, j)
  /// as {names, values}.
  template <class Inputs>
  void checkElementwise(const float* x, int64_t rows, int64_t cols, size_t li, const char* tensor, Inputs inputs) {
    if (!checking() || allFinite(x, static_cast<size_t>(rows * cols))) return;
    const int64_t e = firstNonFinite(x, static_cast<size_t>(rows * cols));
    NonFiniteRecord& r = startRecord(li, tensor, "elementwise", rows, cols, e, x[e]);
    inputs(r, r.row, r.col);
  }

  /// A per-tensor quantized GEMM operand (decode(code) · scale): non-finite codes are possible
  /// only when its input held NaN / ±Inf or a non-saturating cast overflowed — both counted by the
  /// quantization (QuantizeStats) — and a non-finite scale makes every element non-finite.
  void checkQuantized(const QuantizedTensor& q, const float* x, size_t li, const char* role) {
    if (!checking()) return;
    const QuantizeStats& st = q.stats;
    if (st.nan_inputs == 0 && st.inf_inputs == 0 && (cfg.scaling.saturate || st.saturated == 0) &&
        std::isfinite(q.dequant_scales.at(0)))
      return;
    const std::vector<float>& table = q.format->decodeTable();
    for (size_t i = 0; i < q.codes.size(); ++i) {
      const int64_t row = static_cast<int64_t>(i) / q.cols, col = static_cast<int64_t>(i) % q.cols;
      const float v = table[q.codes[i]] * q.dequantScaleAt(row, col);
      if (std::isfinite(v)) continue;
      NonFiniteRecord& r = startRecord(li, role, "quantized_operand", q.rows, q.cols, static_cast<int64_t>(i), v);
      r.input_names = {"x", "quant_scale", "dequant_scale"};
      r.inputs = {x[i], q.quant_scales.empty() ? 1.0f / q.dequant_scales.at(0) : q.quant_scales.at(0),
                  q.dequantScaleAt(row, col)};
      return;
    }
  }

  /// A GEMM output d [m, n] = A [m, k] · B [k, n]; a(i, kk) and b(kk, j) give the operand values
  /// the GEMM used; a_op / b_op index the recorded operands (amax, scale of this step).
  template <class A, class B>
  void checkGemm(const std::vector<float>& d, int64_t m, int64_t n, int64_t k, size_t li, const char* tensor, A a, B b,
                 size_t a_op, size_t b_op) {
    if (!checking() || allFinite(d.data(), static_cast<size_t>(m * n))) return;
    const int64_t e = firstNonFinite(d.data(), d.size());
    NonFiniteRecord& r = startRecord(li, tensor, "gemm_output", m, n, e, d[static_cast<size_t>(e)]);
    std::vector<float> arow(static_cast<size_t>(k)), bcol(static_cast<size_t>(k));
    for (int64_t kk = 0; kk < k; ++kk) {
      arow[static_cast<size_t>(kk)] = a(r.row, kk);
      bcol[static_cast<size_t>(kk)] = b(kk, r.col);
    }
    r.k_len = k;
    r.terms = largestDotTerms(arow.data(), 1, bcol.data(), 1, k);
    r.terms_before_quantization = blockRecipe();
    const OperandHistory& ha = res.operands[a_op];
    const OperandHistory& hb = res.operands[b_op];
    r.a_operand = ha.name();
    r.b_operand = hb.name();
    r.a_amax = ha.amax.empty() ? 0.0f : ha.amax.back();
    r.b_amax = hb.amax.empty() ? 0.0f : hb.amax.back();
    r.a_scale = ha.dequant_scale.empty() ? 1.0f : ha.dequant_scale.back();
    r.b_scale = hb.dequant_scale.empty() ? 1.0f : hb.dequant_scale.back();
  }

  /// The value of a quantized operand at (i, j) as the GEMM uses it: decode(code) · scale.
  static float deq(const QuantizedTensor& q, int64_t i, int64_t j) {
    return q.format->decodeTable()[q.codes[static_cast<size_t>(i * q.cols + j)]] * q.dequantScaleAt(i, j);
  }

  /// The float32 forward GEMM's output check (fprop.output) for layer li, whichever path ran.
  void checkForward(Layer& L, int64_t bsz, size_t li) {
    if (!checking()) return;
    if (fp8() && !blockRecipe())
      checkGemm(
          L.y, bsz, L.out, L.in, li, "fprop.output", [&](int64_t i, int64_t k) { return deq(L.qx, i, k); },
          [&](int64_t k, int64_t j) { return deq(L.qw, k, j); }, 3 * li, 3 * li + 1);
    else
      checkGemm(
          L.y, bsz, L.out, L.in, li, "fprop.output",
          [&](int64_t i, int64_t k) { return L.x[static_cast<size_t>(i * L.in + k)]; },
          [&](int64_t k, int64_t j) { return L.w[static_cast<size_t>(k * L.out + j)]; }, 3 * li, 3 * li + 1);
  }

  bool fp8() const { return cfg.precision == TrainingPrecision::FP8; }
  bool blockRecipe() const { return fp8() && cfg.recipe.recipe != TrainingRecipe::PerTensor; }

  /// The stochastic-rounding seed of one quantization: splitmix64 over (run seed, step, layer,
  /// role), so every step, layer and role draws its own random bytes and a run is reproducible.
  uint64_t srSeed(int64_t step, size_t layer, OperandRole role) const {
    uint64_t h = cfg.seed;
    for (uint64_t v : {static_cast<uint64_t>(step), static_cast<uint64_t>(layer), static_cast<uint64_t>(role)}) {
      h += 0x9E3779B97F4A7C15ull + v;
      h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
      h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
      h ^= h >> 31;
    }
    return h;
  }

  /// Block recipes: the record of operand `op_index` from what its quantization did.
  void recordRecipe(size_t op_index, const RoleQuantRecord& rq) {
    OperandStepRecord r;
    r.amax = rq.amax;
    r.dequant_scale = rq.dequant_scale;
    r.quant_scale = rq.quant_scale;
    r.kept_previous = !(rq.amax > 0) || !std::isfinite(rq.amax);
    r.saturated = rq.saturated;
    r.underflow = rq.underflow;
    record(op_index, r);
  }

  void init() {
    const auto& ls = cfg.layer_sizes;
    TrainingRng rng(cfg.seed);
    layers.resize(ls.size() - 1);
    for (size_t l = 0; l + 1 < ls.size(); ++l) {
      Layer& L = layers[l];
      L.in = ls[l];
      L.out = ls[l + 1];
      const float bound = std::sqrt(6.0f / static_cast<float>(L.in));
      L.w.resize(static_cast<size_t>(L.in * L.out));
      for (float& v : L.w) v = rng.uniform(-bound, bound);
      L.b.assign(static_cast<size_t>(L.out), 0.0f);
      L.mw.assign(L.w.size(), 0.0f);
      L.vw.assign(L.w.size(), 0.0f);
      L.mb.assign(L.b.size(), 0.0f);
      L.vb.assign(L.b.size(), 0.0f);
      L.gw.resize(L.w.size());
      L.gb.resize(L.b.size());
    }
    if (fp8() && !blockRecipe()) {
      scalers.reserve(layers.size() * 3);
      for (size_t l = 0; l < layers.size(); ++l) {
        scalers.emplace_back(cfg.scaling, *cfg.forward_format);
        scalers.emplace_back(cfg.scaling, *cfg.forward_format);
        scalers.emplace_back(cfg.scaling, *cfg.backward_format);
      }
      for (size_t l = 0; l < layers.size(); ++l) {
        layers[l].sx = &scalers[3 * l];
        layers[l].sw = &scalers[3 * l + 1];
        layers[l].sg = &scalers[3 * l + 2];
      }
    }
    const int hl =
        fp8() && !blockRecipe() && isDelayed(cfg.scaling.kind) && cfg.record_history ? cfg.scaling.history_len : 0;
    for (size_t l = 0; l < layers.size(); ++l) {
      const char* names[3] = {"input", "kernel", "output_grad"};
      for (int k = 0; k < 3; ++k) {
        OperandHistory h;
        h.layer = "fc" + std::to_string(l + 1);
        h.operand = names[k];
        h.format = fp8() ? (k == 2 ? cfg.backward_format->name() : cfg.forward_format->name()) : "FP32";
        if (blockRecipe()) {
          const OperandRole role = k == 0   ? OperandRole::FpropInput
                                   : k == 1 ? OperandRole::FpropWeight
                                            : OperandRole::WgradGradOutput;
          const RoleQuantization q = cfg.recipe.role(role);
          h.format = q.format ? q.format->name() : std::string("FP32");
          h.quantization = std::string(toString(role)) + ": " + q.describe();
        }
        h.history_len = hl;
        res.operands.push_back(std::move(h));
      }
    }
    std::vector<DiagnosticsRecorder::Operand> dops;
    for (size_t i = 0; i < res.operands.size(); ++i) {
      const OperandHistory& h = res.operands[i];
      DiagnosticsRecorder::Operand o;
      o.layer = h.layer;
      o.operand = h.operand;
      o.gradient = i % 3 == 2;
      if (blockRecipe()) {
        const OperandRole role = i % 3 == 0   ? OperandRole::FpropInput
                                 : i % 3 == 1 ? OperandRole::FpropWeight
                                              : OperandRole::WgradGradOutput;
        o.quantized = cfg.recipe.role(role).kind != RoleKind::HighPrecision;
        o.quantization = h.quantization;
      } else {
        o.quantized = fp8();
        o.quantization = std::string("per-tensor ") + toString(cfg.scaling.kind) + " " + h.format;
      }
      dops.push_back(std::move(o));
    }
    diag = std::make_unique<DiagnosticsRecorder>(cfg.diagnostics, std::move(dops), res.steps_per_epoch * cfg.epochs,
                                                 cfg.threads);
  }

  void record(size_t op_index, const OperandStepRecord& r) {
    OperandHistory& h = res.operands[op_index];
    h.amax.push_back(r.amax);
    if (!fp8()) return;
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

  static float amaxOf(const std::vector<float>& v) {
    float m = 0;
    for (float x : v) {
      const float a = std::fabs(x);
      m = a > m ? a : m; // NaN ignored, as fmaxf
    }
    return m;
  }

  /// y = x·W (+ b added by the caller) for one layer; FP8 quantizes x and W (advancing the state
  /// when `rec` is set, else with `sx`/`sw` given explicitly — evaluation copies).
  void forwardGemm(Layer& L, int64_t bsz, OperandScaler* sx, OperandScaler* sw, bool recording, size_t li,
                   int64_t step = 0) {
    L.y.resize(static_cast<size_t>(bsz * L.out));
    if (blockRecipe()) {
      RoleQuantRecord rx, rw;
      const QuantizedObserver ox = recording ? observer(3 * li, step) : QuantizedObserver();
      const QuantizedObserver ow = recording ? observer(3 * li + 1, step) : QuantizedObserver();
      recipeLinearGemm(cfg.recipe, LinearGemm::Fprop, L.x.data(), L.w.data(), bsz, L.in, L.out,
                       srSeed(step, li, OperandRole::FpropInput), srSeed(step, li, OperandRole::FpropWeight), L.y,
                       recording ? &rx : nullptr, recording ? &rw : nullptr, cfg.threads, &ox, &ow);
      if (recording) {
        recordRecipe(3 * li, rx);
        recordRecipe(3 * li + 1, rw);
        diag->whatIf(3 * li, step, L.x.data(), bsz, L.in, Axis::Cols);
        diag->whatIf(3 * li + 1, step, L.w.data(), L.in, L.out, Axis::Rows);
      }
    } else if (fp8()) {
      OperandStepRecord rx, rw;
      sx->quantize(L.x.data(), bsz, L.in, L.qx, recording ? &rx : nullptr);
      sw->quantize(L.w.data(), L.in, L.out, L.qw, recording ? &rw : nullptr);
      if (recording) {
        record(3 * li, rx);
        record(3 * li + 1, rw);
        checkQuantized(L.qx, L.x.data(), li, "fprop.input");
        checkQuantized(L.qw, L.w.data(), li, "fprop.weight");
        diag->trained(3 * li, step, L.x.data(), L.qx);
        diag->trained(3 * li + 1, step, L.w.data(), L.qw);
        diag->whatIf(3 * li, step, L.x.data(), bsz, L.in, Axis::Cols);
        diag->whatIf(3 * li + 1, step, L.w.data(), L.in, L.out, Axis::Rows);
      }
      fp8Gemm(*backend, L.qx, L.qw, cfg.forward_gemm, L.y, res);
    } else {
      if (recording) {
        OperandStepRecord rx, rw;
        rx.amax = amaxOf(L.x);
        rw.amax = amaxOf(L.w);
        record(3 * li, rx);
        record(3 * li + 1, rw);
        diag->whatIf(3 * li, step, L.x.data(), bsz, L.in, Axis::Cols);
        diag->whatIf(3 * li + 1, step, L.w.data(), L.in, L.out, Axis::Rows);
      }
      matmulF32(L.x.data(), L.w.data(), L.y.data(), bsz, L.in, L.out, cfg.threads);
    }
  }

  /// One optimizer step on the batch idx[s, s+bsz). Returns the batch loss.
  float step(const std::vector<int64_t>& order, int64_t s, int64_t bsz, int64_t global_step) {
    const int64_t F = train->features();
    Layer& first = layers.front();
    first.x.resize(static_cast<size_t>(bsz * F));
    for (int64_t i = 0; i < bsz; ++i) {
      const int64_t src = order[static_cast<size_t>(s + i)];
      std::copy_n(train->pixels.begin() + src * F, F, first.x.begin() + i * F);
    }
    const bool spike = cfg.spike.enabled && cfg.spike.step == global_step;
    cur_step = global_step;
    // ---- forward
    for (size_t l = 0; l < layers.size(); ++l) {
      Layer& L = layers[l];
      if (l > 0) {
        const Layer& P = layers[l - 1];
        L.x.resize(P.y.size());
        for (size_t i = 0; i < P.y.size(); ++i) L.x[i] = std::max(P.y[i], 0.0f); // ReLU
      }
      const bool spiked = spike && static_cast<int>(l) == cfg.spike.layer;
      if (spiked) {
        const SpikeConfig& sp = cfg.spike;
        for (int64_t i = 0; i < bsz; ++i)
          for (int64_t j = 0; j < L.in; ++j)
            if ((sp.row < 0 || sp.row == i) && (sp.col < 0 || sp.col == j))
              L.x[static_cast<size_t>(i * L.in + j)] *= sp.factor;
      }
      // the images, or a spiked input (otherwise the input is the ReLU of a checked activation)
      if (l == 0 || spiked)
        checkElementwise(L.x.data(), bsz, L.in, l, "input", [&](NonFiniteRecord& r, int64_t, int64_t) {
          if (spiked) {
            r.input_names = {"spike_factor"};
            r.inputs = {cfg.spike.factor};
          }
        });
      forwardGemm(L, bsz, L.sx, L.sw, true, l, global_step);
      checkForward(L, bsz, l);
      if (checking()) { // activation = fprop.output + bias: find an overflowing sum before it is written
        uint32_t bad = 0;
        for (int64_t i = 0; i < bsz; ++i)
          for (int64_t j = 0; j < L.out; ++j) {
            const float v = L.y[static_cast<size_t>(i * L.out + j)] + L.b[static_cast<size_t>(j)];
            bad |= (std::bit_cast<uint32_t>(v) & 0x7F800000u) == 0x7F800000u;
          }
        for (int64_t e = 0; bad && e < bsz * L.out; ++e) {
          const float d0 = L.y[static_cast<size_t>(e)], b0 = L.b[static_cast<size_t>(e % L.out)];
          if (std::isfinite(d0 + b0)) continue;
          NonFiniteRecord& r = startRecord(l, "activation", "elementwise", bsz, L.out, e, d0 + b0);
          r.input_names = {"fprop.output", "bias"};
          r.inputs = {d0, b0};
          break;
        }
      }
      for (int64_t i = 0; i < bsz; ++i)
        for (int64_t j = 0; j < L.out; ++j) L.y[static_cast<size_t>(i * L.out + j)] += L.b[static_cast<size_t>(j)];
    }
    // ---- loss and its gradient w.r.t. the logits: (softmax − onehot) / B
    Layer& last = layers.back();
    const int64_t C = last.out;
    std::vector<float> g(static_cast<size_t>(bsz * C));
    double loss = 0;
    for (int64_t i = 0; i < bsz; ++i) {
      const float* z = last.y.data() + i * C;
      const float m = *std::max_element(z, z + C);
      double se = 0;
      for (int64_t j = 0; j < C; ++j) se += std::exp(static_cast<double>(z[j] - m));
      const int label = train->labels[static_cast<size_t>(order[static_cast<size_t>(s + i)])];
      loss += std::log(se) - static_cast<double>(z[label] - m);
      for (int64_t j = 0; j < C; ++j) {
        const double p = std::exp(static_cast<double>(z[j] - m)) / se;
        g[static_cast<size_t>(i * C + j)] =
            static_cast<float>((p - (j == label ? 1.0 : 0.0)) / static_cast<double>(bsz));
      }
    }
    const size_t lastl = layers.size() - 1;
    if (checking()) {
      const float lv = static_cast<float>(loss / static_cast<double>(bsz));
      if (!std::isfinite(lv)) startRecord(lastl, "loss", "elementwise", 1, 1, 0, lv);
      checkElementwise(g.data(), bsz, C, lastl, "loss_grad", [&](NonFiniteRecord& r, int64_t i, int64_t j) {
        r.input_names = {"logit"};
        r.inputs = {last.y[static_cast<size_t>(i * C + j)]};
      });
    }
    // ---- backward
    std::vector<float> dx;
    for (size_t li = layers.size(); li-- > 0;) {
      Layer& L = layers[li];
      // bias gradient: Σ over the batch, float32, from the unquantized g
      std::fill(L.gb.begin(), L.gb.end(), 0.0f);
      for (int64_t i = 0; i < bsz; ++i)
        for (int64_t j = 0; j < L.out; ++j) L.gb[static_cast<size_t>(j)] += g[static_cast<size_t>(i * L.out + j)];
      checkElementwise(L.gb.data(), 1, L.out, li, "bias_grad", [](NonFiniteRecord&, int64_t, int64_t) {});
      const bool need_dx = li > 0;
      if (blockRecipe()) {
        // wgrad dW = xᵀ·g (both copies quantized along B); output_grad records wgrad.grad_output
        RoleQuantRecord rg;
        const QuantizedObserver og = observer(3 * li + 2, global_step);
        recipeLinearGemm(cfg.recipe, LinearGemm::Wgrad, L.x.data(), g.data(), bsz, L.in, L.out,
                         srSeed(global_step, li, OperandRole::WgradInput),
                         srSeed(global_step, li, OperandRole::WgradGradOutput), L.gw, nullptr, &rg, cfg.threads,
                         nullptr, &og);
        recordRecipe(3 * li + 2, rg);
        diag->whatIf(3 * li + 2, global_step, g.data(), bsz, L.out, Axis::Rows);
        checkGemm(
            L.gw, L.in, L.out, bsz, li, "wgrad.output",
            [&](int64_t i, int64_t k) { return L.x[static_cast<size_t>(k * L.in + i)]; },
            [&](int64_t k, int64_t j) { return g[static_cast<size_t>(k * L.out + j)]; }, 3 * li, 3 * li + 2);
        if (need_dx) { // dgrad dx = g·Wᵀ (both copies quantized along out)
          recipeLinearGemm(cfg.recipe, LinearGemm::Dgrad, g.data(), L.w.data(), bsz, L.in, L.out,
                           srSeed(global_step, li, OperandRole::DgradGradOutput),
                           srSeed(global_step, li, OperandRole::DgradWeight), dx, nullptr, nullptr, cfg.threads);
          checkGemm(
              dx, bsz, L.in, L.out, li, "dgrad.output",
              [&](int64_t i, int64_t k) { return g[static_cast<size_t>(i * L.out + k)]; },
              [&](int64_t k, int64_t j) { return L.w[static_cast<size_t>(j * L.out + k)]; }, 3 * li + 2, 3 * li + 1);
        }
      } else if (fp8()) {
        OperandStepRecord rg;
        L.sg->quantize(g.data(), bsz, L.out, L.qg, &rg);
        record(3 * li + 2, rg);
        checkQuantized(L.qg, g.data(), li, "wgrad.grad_output");
        diag->trained(3 * li + 2, global_step, g.data(), L.qg);
        diag->whatIf(3 * li + 2, global_step, g.data(), bsz, L.out, Axis::Rows);
        transposeQuantized(L.qx, L.qxT);                              // xᵀ [in, B]
        fp8Gemm(*backend, L.qxT, L.qg, cfg.backward_gemm, L.gw, res); // wgrad [in, out]
        checkGemm(
            L.gw, L.in, L.out, bsz, li, "wgrad.output", [&](int64_t i, int64_t k) { return deq(L.qxT, i, k); },
            [&](int64_t k, int64_t j) { return deq(L.qg, k, j); }, 3 * li, 3 * li + 2);
        if (need_dx) {
          transposeQuantized(L.qw, L.qwT);                            // Wᵀ [out, in]
          fp8Gemm(*backend, L.qg, L.qwT, cfg.backward_gemm, dx, res); // dgrad [B, in]
          checkGemm(
              dx, bsz, L.in, L.out, li, "dgrad.output", [&](int64_t i, int64_t k) { return deq(L.qg, i, k); },
              [&](int64_t k, int64_t j) { return deq(L.qwT, k, j); }, 3 * li + 2, 3 * li + 1);
        }
      } else {
        OperandStepRecord rg;
        rg.amax = amaxOf(g);
        record(3 * li + 2, rg);
        diag->whatIf(3 * li + 2, global_step, g.data(), bsz, L.out, Axis::Rows);
        std::vector<float> xT(L.x.size());
        transposeF32(L.x.data(), xT.data(), bsz, L.in);
        matmulF32(xT.data(), g.data(), L.gw.data(), L.in, bsz, L.out, cfg.threads);
        checkGemm(
            L.gw, L.in, L.out, bsz, li, "wgrad.output",
            [&](int64_t i, int64_t k) { return xT[static_cast<size_t>(i * bsz + k)]; },
            [&](int64_t k, int64_t j) { return g[static_cast<size_t>(k * L.out + j)]; }, 3 * li, 3 * li + 2);
        if (need_dx) {
          std::vector<float> wT(L.w.size());
          transposeF32(L.w.data(), wT.data(), L.in, L.out);
          dx.resize(static_cast<size_t>(bsz * L.in));
          matmulF32(g.data(), wT.data(), dx.data(), bsz, L.out, L.in, cfg.threads);
          checkGemm(
              dx, bsz, L.in, L.out, li, "dgrad.output",
              [&](int64_t i, int64_t k) { return g[static_cast<size_t>(i * L.out + k)]; },
              [&](int64_t k, int64_t j) { return wT[static_cast<size_t>(k * L.in + j)]; }, 3 * li + 2, 3 * li + 1);
        }
      }
      if (need_dx) {
        // x_li = factor · ReLU(y_(li-1)) at a spike step: the chain rule brings the factor back
        if (spike && static_cast<int>(li) == cfg.spike.layer) {
          const SpikeConfig& sp = cfg.spike;
          for (int64_t i = 0; i < bsz; ++i)
            for (int64_t j = 0; j < L.in; ++j)
              if ((sp.row < 0 || sp.row == i) && (sp.col < 0 || sp.col == j))
                dx[static_cast<size_t>(i * L.in + j)] *= sp.factor;
          checkElementwise(dx.data(), bsz, L.in, li, "input_grad", [&](NonFiniteRecord& r, int64_t, int64_t) {
            r.input_names = {"spike_factor"};
            r.inputs = {sp.factor};
          });
        }
        // through the ReLU of the previous layer: zero where its pre-activation was ≤ 0
        const Layer& P = layers[li - 1];
        for (size_t i = 0; i < dx.size(); ++i)
          if (!(P.y[i] > 0)) dx[i] = 0;
        g.swap(dx);
      }
    }
    // ---- Adam (Kingma & Ba 2015, Algorithm 1, bias-corrected)
    ++adam_t;
    const double bc1 = 1.0 - std::pow(static_cast<double>(cfg.beta1), static_cast<double>(adam_t));
    const double bc2 = 1.0 - std::pow(static_cast<double>(cfg.beta2), static_cast<double>(adam_t));
    const float step_size = static_cast<float>(cfg.learning_rate / bc1);
    const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
    auto adam = [&](std::vector<float>& p, std::vector<float>& m, std::vector<float>& v, const std::vector<float>& gr) {
      const float b1 = cfg.beta1, b2 = cfg.beta2, eps = cfg.adam_epsilon;
      for (size_t i = 0; i < p.size(); ++i) {
        m[i] = b1 * m[i] + (1 - b1) * gr[i];
        v[i] = b2 * v[i] + (1 - b2) * gr[i] * gr[i];
        p[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + eps);
      }
    };
    for (size_t l = 0; l < layers.size(); ++l) {
      Layer& L = layers[l];
      adam(L.w, L.mw, L.vw, L.gw);
      adam(L.b, L.mb, L.vb, L.gb);
      // the updated master copies: the inputs of the update at the element (after it: m and v)
      auto adamInputs = [](const std::vector<float>& gr, const std::vector<float>& m, const std::vector<float>& v,
                           int64_t cols) {
        return [&gr, &m, &v, cols](NonFiniteRecord& r, int64_t i, int64_t j) {
          const size_t e = static_cast<size_t>(i * cols + j);
          r.input_names = {"gradient", "adam_m", "adam_v"};
          r.inputs = {gr[e], m[e], v[e]};
        };
      };
      checkElementwise(L.w.data(), L.in, L.out, l, "weight", adamInputs(L.gw, L.mw, L.vw, L.out));
      checkElementwise(L.b.data(), 1, L.out, l, "bias", adamInputs(L.gb, L.mb, L.vb, L.out));
    }
    return static_cast<float>(loss / static_cast<double>(bsz));
  }

  /// Test loss and accuracy with the current weights: FP8 runs quantize with copies of the
  /// scaling states (so evaluation never advances the training state); FP32 runs in float32.
  std::pair<double, double> evaluate() {
    if (!fp8()) return evaluateFp32(currentWeights(), *test, cfg.eval_batch_size, cfg.threads);
    double loss = 0;
    int64_t correct = 0;
    const int64_t F = test->features();
    const int64_t eb = cfg.eval_batch_size;
    std::vector<Layer> ev(layers.size());
    for (size_t l = 0; l < layers.size(); ++l) {
      ev[l].in = layers[l].in;
      ev[l].out = layers[l].out;
    }
    for (int64_t s = 0; s < test->count; s += eb) {
      const int64_t b = std::min(eb, test->count - s);
      std::vector<OperandScaler> frozen = scalers; // each batch sees the training state as is
      const bool block = blockRecipe();            // block recipes have no state
      for (size_t l = 0; l < layers.size(); ++l) {
        Layer& E = ev[l];
        if (l == 0)
          E.x.assign(test->pixels.begin() + s * F, test->pixels.begin() + (s + b) * F);
        else {
          E.x.resize(ev[l - 1].y.size());
          for (size_t i = 0; i < E.x.size(); ++i) E.x[i] = std::max(ev[l - 1].y[i], 0.0f);
        }
        E.w = layers[l].w; // cheap relative to the GEMMs; keeps forwardGemm's layout
        forwardGemm(E, b, block ? nullptr : &frozen[3 * l], block ? nullptr : &frozen[3 * l + 1], false, l);
        for (int64_t i = 0; i < b; ++i)
          for (int64_t j = 0; j < E.out; ++j)
            E.y[static_cast<size_t>(i * E.out + j)] += layers[l].b[static_cast<size_t>(j)];
      }
      const int64_t C = ev.back().out;
      for (int64_t i = 0; i < b; ++i) {
        const float* z = ev.back().y.data() + i * C;
        const float m = *std::max_element(z, z + C);
        double se = 0;
        for (int64_t j = 0; j < C; ++j) se += std::exp(static_cast<double>(z[j] - m));
        const int label = test->labels[static_cast<size_t>(s + i)];
        loss += std::log(se) - static_cast<double>(z[label] - m);
        if (std::max_element(z, z + C) - z == label) ++correct;
      }
    }
    return {loss / static_cast<double>(test->count), static_cast<double>(correct) / static_cast<double>(test->count)};
  }

  std::vector<LayerWeights> currentWeights() const {
    std::vector<LayerWeights> w;
    for (const Layer& L : layers) w.push_back({L.in, L.out, L.w, L.b});
    return w;
  }
};

double estimateTrainingBytes(const TrainingConfig& c, int64_t train_images) {
  double weights = 0, acts = 0;
  for (size_t l = 0; l + 1 < c.layer_sizes.size(); ++l) {
    weights += double(c.layer_sizes[l]) * double(c.layer_sizes[l + 1]);
    acts += double(c.layer_sizes[l]) + double(c.layer_sizes[l + 1]);
  }
  const double layers = double(c.layer_sizes.size() > 0 ? c.layer_sizes.size() - 1 : 0);
  const double batch = std::max(1, c.batch_size);
  const double steps = double(std::max(1, c.epochs)) * std::ceil(double(std::max<int64_t>(1, train_images)) / batch);
  const bool window = c.precision == TrainingPrecision::FP8 && c.recipe.recipe == TrainingRecipe::PerTensor &&
                      c.record_history && isDelayed(c.scaling.kind);
  const double per_step = 3.0 * layers * (40.0 + (window ? 8.0 * double(std::max(0, c.scaling.history_len)) : 0.0));
  double operand_elements = 0; // x [B,in], W [in,out], g [B,out] of every layer
  for (size_t l = 0; l + 1 < c.layer_sizes.size(); ++l)
    operand_elements += batch * double(c.layer_sizes[l]) + double(c.layer_sizes[l]) * double(c.layer_sizes[l + 1]) +
                        batch * double(c.layer_sizes[l + 1]);
  const double diagnostics =
      estimateDiagnosticsBytes(c.diagnostics, static_cast<int64_t>(steps), static_cast<int64_t>(3 * layers),
                               static_cast<int64_t>(operand_elements));
  return 24.0 * weights + 12.0 * (batch + double(std::max(1, c.eval_batch_size))) * acts + steps * (per_step + 8.0) +
         diagnostics;
}

TrainingRun::TrainingRun(TrainingConfig config, const ImageDataset& train, const ImageDataset& test,
                         GemmBackend* backend)
    : d(std::make_unique<Impl>()) {
  if (const std::string why = config.validate(); !why.empty()) throw std::invalid_argument("training config: " + why);
  if (train.features() != config.layer_sizes.front() || test.features() != config.layer_sizes.front())
    throw std::invalid_argument("training config: the first layer size (" + std::to_string(config.layer_sizes.front()) +
                                ") must equal the image size (" + std::to_string(train.features()) + ")");
  if (train.count < 1 || test.count < 1)
    throw std::invalid_argument("training needs at least one training and one test image");
  {
    const double need = estimateTrainingBytes(config, train.count);
    const int64_t limit = config.forward_gemm.memory_limit_bytes;
    const double have = double(limit > 0 ? limit : gemm_detail::availableMemoryBytes());
    if (need > have) {
      auto size = [](double b) {
        char t[40];
        std::snprintf(t, sizeof t, b >= 0x1p30 ? "%.3g GiB" : "%.3g MiB", b / (b >= 0x1p30 ? 0x1p30 : 0x1p20));
        return std::string(t);
      };
      throw std::invalid_argument(
          "training run '" + config.label + "' needs about " + size(need) +
          " (weights, optimizer state, activations, per-step history), more than the " + size(have) +
          (limit > 0 ? " allowed" : " of memory available") +
          "; use fewer or smaller layers, fewer epochs, a shorter history_len or record_history false");
    }
  }
  d->cfg = std::move(config);
  d->train = &train;
  d->test = &test;
  if (d->fp8() && !d->blockRecipe()) {
    if (!backend) {
      d->own_backend = makeCpuGemmBackend();
      backend = d->own_backend.get();
    }
    d->backend = backend;
  } else if (d->blockRecipe()) {
    d->res.gemm_backend = "cpu";
    d->res.gemm_device = "CPU (float32 GEMMs of the dequantized operands)";
    d->res.gemm_algorithm = "fake quantization: float32 GEMM, k ascending, one float32 accumulator";
  }
  d->res.config = d->cfg;
  d->res.steps_per_epoch = (train.count + d->cfg.batch_size - 1) / d->cfg.batch_size;
  d->init();
}

TrainingRun::~TrainingRun() = default;
const TrainingResult& TrainingRun::result() const {
  return d->res;
}
TrainingResult TrainingRun::takeResult() {
  return std::move(d->res);
}

void TrainingRun::run(const ProgressFn& progress) {
  if (d->ran) throw std::logic_error("TrainingRun::run called twice");
  d->ran = true;
  using clock = std::chrono::steady_clock;
  const auto t_start = clock::now();
  Impl& s = *d;
  TrainingResult& res = s.res;
  const int64_t n = s.train->count;
  const int64_t spe = res.steps_per_epoch;
  const int64_t total = spe * s.cfg.epochs;
  TrainingRng shuffle_rng(s.cfg.seed + 1); // the data order: a stream of its own (see random.h)
  std::vector<int64_t> order(static_cast<size_t>(n));
  const std::string label = s.cfg.label.empty() ? std::string(toString(s.cfg.precision)) : s.cfg.label;
  bool stop = false;
  for (int e = 0; e < s.cfg.epochs && !stop; ++e) {
    std::iota(order.begin(), order.end(), int64_t{0});
    shuffle_rng.shuffle(order);
    const auto t_epoch = clock::now();
    double loss_sum = 0;
    int64_t steps = 0;
    for (int64_t st = 0; st < spe; ++st) {
      const int64_t first = st * s.cfg.batch_size;
      const int64_t bsz = std::min<int64_t>(s.cfg.batch_size, n - first);
      const float loss = s.step(order, first, bsz, res.steps_done);
      res.loss.push_back(loss);
      ++res.steps_done;
      loss_sum += loss;
      ++steps;
      if (s.cfg.on_nonfinite == NonFinitePolicy::Stop && res.first_nonfinite.found) {
        res.stopped_nonfinite = true; // this step is complete; the epoch is not evaluated
        stop = true;
        break;
      }
      if (progress) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "%s: epoch %d/%d, step %lld/%lld, loss %.4f", label.c_str(), e + 1, s.cfg.epochs,
                      static_cast<long long>(st + 1), static_cast<long long>(spe), static_cast<double>(loss));
        if (!progress(static_cast<double>(res.steps_done) / static_cast<double>(total), buf)) {
          stop = true;
          break;
        }
      }
    }
    if (stop) break;
    EpochRecord er;
    er.epoch = e + 1;
    er.end_step = res.steps_done;
    er.train_loss = loss_sum / static_cast<double>(std::max<int64_t>(steps, 1));
    er.seconds = std::chrono::duration<double>(clock::now() - t_epoch).count();
    // Progress only: cancellation is honoured after steps, so a stopped run always ends at a step
    // boundary that a re-run can reproduce (the flag stays set and the next step stops).
    if (progress)
      (void)progress(static_cast<double>(res.steps_done) / static_cast<double>(total),
                     label + ": evaluating on the test set");
    const auto [tl, ta] = s.evaluate();
    er.test_loss = tl;
    er.test_accuracy = ta;
    res.epochs.push_back(er);
  }
  res.weights = s.currentWeights();
  res.diagnostics = s.diag->finish(res.steps_done);
  res.seconds = std::chrono::duration<double>(clock::now() - t_start).count();
  // warnings: saturation / underflow summaries per operand
  for (const auto& h : res.operands) {
    int64_t sat = 0, sat_steps = 0, und = 0;
    for (size_t i = 0; i < h.saturated.size(); ++i) {
      sat += h.saturated[i];
      sat_steps += h.saturated[i] > 0;
      und += h.underflow[i];
    }
    if (sat > 0)
      res.warnings.push_back({Severity::Warning, "saturated", h.name(),
                              std::to_string(sat) + " elements clipped to ±max finite in " + std::to_string(sat_steps) +
                                  " of " + std::to_string(res.steps_done) + " steps"});
    if (und > 0)
      res.warnings.push_back({Severity::Info, "underflow", h.name(),
                              std::to_string(und) + " non-zero elements flushed to zero over " +
                                  std::to_string(res.steps_done) + " steps"});
  }
  if (res.first_nonfinite.found)
    res.warnings.push_back({Severity::Error, "nonfinite", res.first_nonfinite.layer + "/" + res.first_nonfinite.tensor,
                            "first non-finite value: " + res.first_nonfinite.describe() +
                                (res.stopped_nonfinite ? "; the run stopped after that step" : "")});
  if (stop && !res.stopped_nonfinite) {
    res.cancelled = true;
    throw Cancelled();
  }
}

} // namespace fp8lab
