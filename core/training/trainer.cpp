// FP8 Lab — the FP8 training experiment (see trainer.h).
#include "training/trainer.h"
#include "scaling/delayed_scaling.h"

#include "common/worker_pool.h"
#include "training/dense.h"
#include "training/layers.h"
#include "training/linear_site.h"
#include "training/optimizer.h"
#include "training/random.h"

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
    if (isDelayed(scaling.kind) && !(scaling.history_len >= 1 && scaling.history_len <= kMaxAmaxHistoryLen))
      return "amax history length must be in " + amaxHistoryRangeText();
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
  if (const std::string why = policy.validate(SiteTable::mlp(layer_sizes)); !why.empty()) return "policy: " + why;
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

namespace {

/// The MLP's forward pass over `rows` rows of `x0` [rows, sizes[0]] through layers [0, upto):
/// layer l computes y_l = gemm(l, x_l) + b_l (gemm writes x_l · W_l into y_l), and the next
/// layer's input is x_{l+1} = ReLU(y_l); `after_relu(l, x_l)` may change a layer's input before
/// its GEMM (the spike) and `after_gemm(l)` sees y_l before the bias (the checks). The one
/// forward pass of the MLP: training steps and evaluation run it with their sites,
/// evaluateFp32 and layerInputs with float32 GEMMs.
template <class Gemm, class AfterRelu, class AfterGemm>
void mlpForward(size_t upto, const std::vector<const std::vector<float>*>& biases, std::vector<std::vector<float>>& xs,
                std::vector<std::vector<float>>& ys, int64_t rows, const std::vector<int64_t>& outs, Gemm gemm,
                AfterRelu after_relu, AfterGemm after_gemm) {
  for (size_t l = 0; l < upto; ++l) {
    if (l > 0) {
      xs[l].resize(ys[l - 1].size());
      nn::reluForward(ys[l - 1].data(), xs[l].data(), int64_t(ys[l - 1].size()));
    }
    after_relu(l, xs[l]);
    gemm(l, xs[l], ys[l]);
    after_gemm(l);
    nn::biasForward(ys[l].data(), biases[l]->data(), rows, outs[l]);
  }
}

/// mlpForward with float32 GEMMs and no hooks: the logits (upto = all layers) or the input of
/// layer `upto`.
std::vector<float> mlpForwardF32(const std::vector<LayerWeights>& w, const float* x, int64_t rows, size_t upto,
                                 int threads) {
  std::vector<std::vector<float>> xs(upto + 1), ys(upto);
  std::vector<const std::vector<float>*> biases;
  std::vector<int64_t> outs;
  for (size_t l = 0; l < upto; ++l) {
    biases.push_back(&w[l].bias);
    outs.push_back(w[l].out);
  }
  xs[0].assign(x, x + rows * (w.empty() ? 0 : w[0].in));
  mlpForward(
      upto, biases, xs, ys, rows, outs,
      [&](size_t l, const std::vector<float>& in, std::vector<float>& y) {
        y.resize(static_cast<size_t>(rows * w[l].out));
        matmulF32(in.data(), w[l].kernel.data(), y.data(), rows, w[l].in, w[l].out, threads);
      },
      [](size_t, std::vector<float>&) {}, [](size_t) {});
  if (upto == w.size()) return upto == 0 ? xs[0] : ys[upto - 1];
  if (upto > 0) {
    xs[upto].resize(ys[upto - 1].size());
    nn::reluForward(ys[upto - 1].data(), xs[upto].data(), int64_t(ys[upto - 1].size()));
  }
  return xs[upto];
}

std::vector<int32_t> labelsOf(const ImageDataset& d, const std::vector<int64_t>* order, int64_t first, int64_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    t[size_t(i)] = d.labels[static_cast<size_t>(order ? (*order)[static_cast<size_t>(first + i)] : first + i)];
  return t;
}

} // namespace

std::vector<float> mlpLayerInputF32(const std::vector<LayerWeights>& weights, const float* x, int64_t rows,
                                    size_t layer, int threads) {
  return mlpForwardF32(weights, x, rows, layer, threads);
}

std::pair<double, double> evaluateFp32(const std::vector<LayerWeights>& w, const ImageDataset& test, int batch,
                                       int threads) {
  double loss = 0;
  int64_t correct = 0;
  for (int64_t s = 0; s < test.count; s += batch) {
    const int64_t b = std::min<int64_t>(batch, test.count - s);
    const std::vector<float> z = mlpForwardF32(w, test.pixels.data() + s * test.features(), b, w.size(), threads);
    const std::vector<int32_t> t = labelsOf(test, nullptr, s, b);
    loss = nn::softmaxCrossEntropy<float>(z.data(), t.data(), b, w.back().out, nullptr, b, &correct, loss);
  }
  return {loss / static_cast<double>(test.count), static_cast<double>(correct) / static_cast<double>(test.count)};
}

// ---------------------------------------------------------------------------------------------

namespace {

struct Layer {
  int64_t in = 0, out = 0;
  std::vector<float> w, b;           // master weights
  std::vector<float> mw, vw, mb, vb; // Adam moments
  std::vector<float> gw, gb;         // gradients
};

} // namespace

struct TrainingRun::Impl {
  TrainingConfig cfg;
  const ImageDataset* train = nullptr;
  const ImageDataset* test = nullptr;
  GemmBackend* backend = nullptr;
  std::unique_ptr<GemmBackend> own_backend;
  TrainingResult res;
  SiteTable table;
  std::vector<Layer> layers;
  std::vector<OperandScaler> scalers; // per-tensor FP8: 3 per site, in operand order
  std::unique_ptr<SiteRecorder> rec;
  SiteRunContext ctx;
  std::vector<LinearSite> sites;
  std::unique_ptr<Optimizer> opt;
  std::vector<std::vector<float>> xs, ys; // per layer: input [B, in] (after ReLU and any spike), output [B, out]
  bool ran = false;

  bool fp8() const { return cfg.precision == TrainingPrecision::FP8; }
  bool blockRecipe() const { return fp8() && cfg.recipe.recipe != TrainingRecipe::PerTensor; }
  const std::string& name(size_t l) const { return table[l].path; }

  void init() {
    const auto& ls = cfg.layer_sizes;
    table = SiteTable::mlp(ls);
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
    xs.resize(layers.size());
    ys.resize(layers.size());
    if (fp8() && !blockRecipe()) {
      scalers.reserve(layers.size() * kSiteOperands);
      for (size_t l = 0; l < layers.size(); ++l) {
        scalers.emplace_back(cfg.scaling, *cfg.forward_format);
        scalers.emplace_back(cfg.scaling, *cfg.forward_format);
        scalers.emplace_back(cfg.scaling, *cfg.backward_format);
      }
    }
    const int hl =
        fp8() && !blockRecipe() && isDelayed(cfg.scaling.kind) && cfg.record_history ? cfg.scaling.history_len : 0;
    for (size_t op = 0; op < table.size() * kSiteOperands; ++op) {
      const size_t l = SiteTable::siteOf(op);
      const SiteOperand k = SiteTable::operandOf(op);
      OperandHistory h;
      h.layer = name(l);
      h.operand = toString(k);
      h.format =
          fp8() ? (k == SiteOperand::OutputGrad ? cfg.backward_format->name() : cfg.forward_format->name()) : "FP32";
      if (blockRecipe()) {
        const RoleQuantization q = cfg.recipe.role(recordedRole(k));
        h.format = q.format ? q.format->name() : std::string("FP32");
        h.quantization = std::string(toString(recordedRole(k))) + ": " + q.describe();
      }
      h.history_len = hl;
      res.operands.push_back(std::move(h));
    }
    rec = std::make_unique<SiteRecorder>(table, fp8(), cfg.on_nonfinite, res.operands, res.first_nonfinite);
    std::vector<DiagnosticsRecorder::Operand> dops;
    for (size_t i = 0; i < res.operands.size(); ++i) {
      const OperandHistory& h = res.operands[i];
      DiagnosticsRecorder::Operand o;
      o.layer = h.layer;
      o.operand = h.operand;
      o.gradient = SiteTable::operandOf(i) == SiteOperand::OutputGrad;
      if (blockRecipe()) {
        o.quantized = cfg.recipe.role(recordedRole(SiteTable::operandOf(i))).kind != RoleKind::HighPrecision;
        o.quantization = h.quantization;
      } else {
        o.quantized = fp8();
        o.quantization = std::string("per-tensor ") + toString(cfg.scaling.kind) + " " + h.format;
      }
      dops.push_back(std::move(o));
    }
    rec->setDiagnostics(std::make_unique<DiagnosticsRecorder>(cfg.diagnostics, std::move(dops),
                                                              res.steps_per_epoch * cfg.epochs, cfg.threads));
    ctx.fp8 = fp8();
    ctx.scaling = cfg.scaling;
    ctx.recipe = cfg.recipe;
    ctx.block_gemm = cfg.block_gemm;
    ctx.policy = cfg.policy;
    ctx.forward_gemm = cfg.forward_gemm;
    ctx.backward_gemm = cfg.backward_gemm;
    ctx.seed = cfg.seed;
    ctx.threads = cfg.threads;
    ctx.backend = backend;
    ctx.recorder = rec.get();
    ctx.gemm_backend = &res.gemm_backend;
    ctx.gemm_device = &res.gemm_device;
    ctx.gemm_algorithm = &res.gemm_algorithm;
    for (size_t l = 0; l < layers.size(); ++l) {
      OperandScaler* s = scalers.empty() ? nullptr : &scalers[kSiteOperands * l];
      sites.emplace_back(l, &ctx, s, s ? s + 1 : nullptr, s ? s + 2 : nullptr);
    }
    OptimizerConfig oc;
    oc.learning_rate = cfg.learning_rate;
    oc.beta1 = cfg.beta1;
    oc.beta2 = cfg.beta2;
    oc.epsilon = cfg.adam_epsilon;
    opt = std::make_unique<Optimizer>(oc);
  }

  /// The block recipe's role each recorded operand stands for: input records fprop.input, kernel
  /// fprop.weight, output_grad wgrad.grad_output (the one gradient copy every layer has).
  static OperandRole recordedRole(SiteOperand k) {
    return k == SiteOperand::Input    ? OperandRole::FpropInput
           : k == SiteOperand::Kernel ? OperandRole::FpropWeight
                                      : OperandRole::WgradGradOutput;
  }

  std::vector<const std::vector<float>*> biases() const {
    std::vector<const std::vector<float>*> b;
    for (const Layer& L : layers) b.push_back(&L.b);
    return b;
  }
  std::vector<int64_t> outs() const {
    std::vector<int64_t> o;
    for (const Layer& L : layers) o.push_back(L.out);
    return o;
  }

  /// One optimizer step on the batch idx[s, s+bsz). Returns the batch loss.
  float step(const std::vector<int64_t>& order, int64_t s, int64_t bsz, int64_t global_step) {
    const int64_t F = train->features();
    xs[0].resize(static_cast<size_t>(bsz * F));
    for (int64_t i = 0; i < bsz; ++i) {
      const int64_t src = order[static_cast<size_t>(s + i)];
      std::copy_n(train->pixels.begin() + src * F, F, xs[0].begin() + i * F);
    }
    const bool spike = cfg.spike.enabled && cfg.spike.step == global_step;
    rec->setStep(global_step);
    // ---- forward
    mlpForward(
        layers.size(), biases(), xs, ys, bsz, outs(),
        [&](size_t l, const std::vector<float>& x, std::vector<float>& y) {
          sites[l].forward(x.data(), bsz, layers[l].w.data(), y, global_step, true);
        },
        [&](size_t l, std::vector<float>& x) {
          const Layer& L = layers[l];
          const bool spiked = spike && static_cast<int>(l) == cfg.spike.layer;
          if (spiked) {
            const SpikeConfig& sp = cfg.spike;
            for (int64_t i = 0; i < bsz; ++i)
              for (int64_t j = 0; j < L.in; ++j)
                if ((sp.row < 0 || sp.row == i) && (sp.col < 0 || sp.col == j))
                  x[static_cast<size_t>(i * L.in + j)] *= sp.factor;
          }
          // the images, or a spiked input (otherwise the input is the ReLU of a checked activation)
          if (l == 0 || spiked)
            rec->checkElementwise(x.data(), bsz, L.in, name(l), "input", [&](NonFiniteRecord& r, int64_t, int64_t) {
              if (spiked) {
                r.input_names = {"spike_factor"};
                r.inputs = {cfg.spike.factor};
              }
            });
        },
        [&](size_t l) {
          const Layer& L = layers[l];
          if (!rec->checking()) return;
          // activation = fprop.output + bias: find an overflowing sum before it is written
          const std::vector<float>& y = ys[l];
          uint32_t bad = 0;
          for (int64_t i = 0; i < bsz; ++i)
            for (int64_t j = 0; j < L.out; ++j) {
              const float v = y[static_cast<size_t>(i * L.out + j)] + L.b[static_cast<size_t>(j)];
              bad |= (std::bit_cast<uint32_t>(v) & 0x7F800000u) == 0x7F800000u;
            }
          for (int64_t e = 0; bad && e < bsz * L.out; ++e) {
            const float d0 = y[static_cast<size_t>(e)], b0 = L.b[static_cast<size_t>(e % L.out)];
            if (std::isfinite(d0 + b0)) continue;
            NonFiniteRecord& r = rec->startRecord(name(l), "activation", "elementwise", bsz, L.out, e, d0 + b0);
            r.input_names = {"fprop.output", "bias"};
            r.inputs = {d0, b0};
            break;
          }
        });
    // ---- loss and its gradient w.r.t. the logits: (softmax − onehot) / B
    const size_t lastl = layers.size() - 1;
    const std::vector<float>& logits = ys[lastl];
    const int64_t C = layers[lastl].out;
    std::vector<float> g(static_cast<size_t>(bsz * C));
    const std::vector<int32_t> targets = labelsOf(*train, &order, s, bsz);
    const double loss = nn::softmaxCrossEntropy<float>(logits.data(), targets.data(), bsz, C, g.data(), bsz);
    if (rec->checking()) {
      const float lv = static_cast<float>(loss / static_cast<double>(bsz));
      if (!std::isfinite(lv)) rec->startRecord(name(lastl), "loss", "elementwise", 1, 1, 0, lv);
      rec->checkElementwise(g.data(), bsz, C, name(lastl), "loss_grad", [&](NonFiniteRecord& r, int64_t i, int64_t j) {
        r.input_names = {"logit"};
        r.inputs = {logits[static_cast<size_t>(i * C + j)]};
      });
    }
    // ---- backward
    std::vector<float> dx;
    for (size_t li = layers.size(); li-- > 0;) {
      Layer& L = layers[li];
      // bias gradient: Σ over the batch, float32, from the unquantized g
      std::fill(L.gb.begin(), L.gb.end(), 0.0f);
      nn::biasBackward(g.data(), L.gb.data(), bsz, L.out);
      rec->checkElementwise(L.gb.data(), 1, L.out, name(li), "bias_grad", [](NonFiniteRecord&, int64_t, int64_t) {});
      const bool need_dx = li > 0;
      sites[li].backward(g.data(), L.gw, need_dx ? &dx : nullptr, global_step);
      if (need_dx) {
        // x_li = factor · ReLU(y_(li-1)) at a spike step: the chain rule brings the factor back
        if (spike && static_cast<int>(li) == cfg.spike.layer) {
          const SpikeConfig& sp = cfg.spike;
          for (int64_t i = 0; i < bsz; ++i)
            for (int64_t j = 0; j < L.in; ++j)
              if ((sp.row < 0 || sp.row == i) && (sp.col < 0 || sp.col == j))
                dx[static_cast<size_t>(i * L.in + j)] *= sp.factor;
          rec->checkElementwise(dx.data(), bsz, L.in, name(li), "input_grad",
                                [&](NonFiniteRecord& r, int64_t, int64_t) {
                                  r.input_names = {"spike_factor"};
                                  r.inputs = {sp.factor};
                                });
        }
        // through the ReLU of the previous layer: zero where its pre-activation was ≤ 0
        nn::reluBackward(dx.data(), ys[li - 1].data(), dx.data(), int64_t(dx.size()));
        g.swap(dx);
      }
    }
    // ---- Adam (Kingma & Ba 2015, Algorithm 1, bias-corrected)
    std::vector<ParamRef> params;
    for (Layer& L : layers) {
      params.push_back({&L.w, &L.gw, &L.mw, &L.vw, false});
      params.push_back({&L.b, &L.gb, &L.mb, &L.vb, false});
    }
    opt->step(params, cfg.learning_rate);
    for (size_t l = 0; l < layers.size(); ++l) {
      Layer& L = layers[l];
      // the updated master copies: the inputs of the update at the element (after it: m and v)
      auto adamInputs = [](const std::vector<float>& gr, const std::vector<float>& m, const std::vector<float>& v,
                           int64_t cols) {
        return [&gr, &m, &v, cols](NonFiniteRecord& r, int64_t i, int64_t j) {
          const size_t e = static_cast<size_t>(i * cols + j);
          r.input_names = {"gradient", "adam_m", "adam_v"};
          r.inputs = {gr[e], m[e], v[e]};
        };
      };
      rec->checkElementwise(L.w.data(), L.in, L.out, name(l), "weight", adamInputs(L.gw, L.mw, L.vw, L.out));
      rec->checkElementwise(L.b.data(), 1, L.out, name(l), "bias", adamInputs(L.gb, L.mb, L.vb, L.out));
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
    std::vector<std::vector<float>> ex(layers.size()), ey(layers.size());
    for (int64_t s = 0; s < test->count; s += eb) {
      const int64_t b = std::min(eb, test->count - s);
      std::vector<OperandScaler> frozen = scalers; // each batch sees the training state as is
      ex[0].assign(test->pixels.begin() + s * F, test->pixels.begin() + (s + b) * F);
      mlpForward(
          layers.size(), biases(), ex, ey, b, outs(),
          [&](size_t l, const std::vector<float>& x, std::vector<float>& y) {
            OperandScaler* fs = frozen.empty() ? nullptr : &frozen[kSiteOperands * l];
            sites[l].forward(x.data(), b, layers[l].w.data(), y, 0, false, fs, fs ? fs + 1 : nullptr);
          },
          [](size_t, std::vector<float>&) {}, [](size_t) {});
      const std::vector<int32_t> t = labelsOf(*test, nullptr, s, b);
      loss =
          nn::softmaxCrossEntropy<float>(ey.back().data(), t.data(), b, layers.back().out, nullptr, b, &correct, loss);
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
    const double have = double(limit > 0 ? limit : availableMemoryBytes());
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
  if (d->fp8()) {
    if (!backend) {
      d->own_backend = makeCpuGemmBackend();
      backend = d->own_backend.get();
    }
    d->backend = backend;
  }
  if (d->blockRecipe() && d->cfg.block_gemm == BlockGemmPath::FakeQuant) {
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
    // A stop after the epoch's last step still evaluates the epoch (its steps are complete and
    // the evaluation is deterministic, so a re-run that stops at the same step gives the same
    // record); a non-finite stop never does.
    if (stop && (res.stopped_nonfinite || steps < spe)) break;
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
  res.diagnostics = s.rec->diagnostics()->finish(res.steps_done);
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
  // Stopped after the last step of the last epoch: every step and evaluation is done, the run is
  // complete.
  if (stop && !res.stopped_nonfinite && res.steps_done < total) {
    res.cancelled = true;
    throw Cancelled();
  }
}

} // namespace fp8lab
