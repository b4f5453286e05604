// FP8 Lab — the FP8 training experiment (see trainer.h).
#include "training/trainer.h"

#include "common/worker_pool.h"
#include "training/dense.h"
#include "training/layers.h"
#include "training/linear_site.h"
#include "training/site_run.h"
#include "training/mlp.h"
#include "training/optimizer.h"
#include "training/random.h"
#include "training/training_loop.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace fp8lab {

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
  if (spike.enabled) {
    if (spike.step < 0) return "spike step must be ≥ 0";
    if (spike.layer < 0 || spike.layer >= static_cast<int>(layer_sizes.size()) - 1)
      return "spike layer must name a Linear layer (0-based)";
    if (!std::isfinite(spike.factor)) return "spike factor must be finite";
    if (spike.row < -1 || spike.col < -1) return "spike row and col must be ≥ 0 (or absent: every element)";
    if (spike.col >= layer_sizes[static_cast<size_t>(spike.layer)])
      return "spike col must be below the layer's input size";
  }
  // The MLP's GEMM output and saturation rules (its block recipes multiply dequantized operands by
  // default, where an output type or saturate false would not apply).
  for (const GemmOptions* g : {&forward_gemm, &backward_gemm}) {
    if (g->output != OutputType::FP32 && g->output != OutputType::BF16 && g->output != OutputType::FP16)
      return "the GEMM output type must be fp32, bf16 or fp16";
    if (g->output != OutputType::FP32 && (!fp8() || recipe.recipe != TrainingRecipe::PerTensor))
      return "a GEMM output type other than fp32 applies to the per-tensor FP8 GEMMs only";
  }
  if (blockRecipe() && !scaling.saturate)
    return "saturate false applies to the per-tensor FP8 casts (\"scaling\"), not to block recipes";
  return validateRun(SiteTable::mlp(layer_sizes));
}

const OperandHistory* TrainingResult::find(const std::string& name) const {
  for (const auto& o : operands)
    if (o.name() == name) return &o;
  return nullptr;
}

namespace {

std::vector<int32_t> labelsOf(const ImageDataset& d, const std::vector<int64_t>* order, int64_t first, int64_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    t[size_t(i)] = d.labels[static_cast<size_t>(order ? (*order)[static_cast<size_t>(first + i)] : first + i)];
  return t;
}

/// The MLP of given weights (float32 master copies).
MlpModel<float> mlpOf(const std::vector<LayerWeights>& w) {
  std::vector<std::vector<float>> kernels, biases;
  std::vector<int> sizes;
  for (const LayerWeights& l : w) {
    if (sizes.empty()) sizes.push_back(int(l.in));
    sizes.push_back(int(l.out));
    kernels.push_back(l.kernel);
    biases.push_back(l.bias);
  }
  return MlpModel<float>(kernels, biases, sizes);
}

} // namespace

std::vector<float> mlpLayerInputF32(const std::vector<LayerWeights>& weights, const float* x, int64_t rows,
                                    size_t layer, int threads) {
  if (weights.empty() || layer == 0) return std::vector<float>(x, x + rows * (weights.empty() ? 0 : weights[0].in));
  MlpModel<float> m = mlpOf(weights);
  Fp32LinearOps ops(threads);
  (void)m.forward(x, nullptr, rows, ops);
  return layer < m.layers() ? m.layerInput(layer) : m.logits();
}

std::pair<double, double> evaluateFp32(const std::vector<LayerWeights>& w, const ImageDataset& test, int batch,
                                       int threads) {
  MlpModel<float> m = mlpOf(w);
  Fp32LinearOps ops(threads);
  double loss = 0;
  int64_t correct = 0;
  for (int64_t s = 0; s < test.count; s += batch) {
    const int64_t b = std::min<int64_t>(batch, test.count - s);
    (void)m.forward(test.pixels.data() + s * test.features(), nullptr, b, ops);
    const std::vector<int32_t> t = labelsOf(test, nullptr, s, b);
    loss = nn::softmaxCrossEntropy<float>(m.logits().data(), t.data(), b, w.back().out, nullptr, b, &correct, loss);
  }
  return {loss / static_cast<double>(test.count), static_cast<double>(correct) / static_cast<double>(test.count)};
}

// ---------------------------------------------------------------------------------------------

struct TrainingRun::Impl {
  TrainingConfig cfg;
  const ImageDataset* train = nullptr;
  const ImageDataset* test = nullptr;
  GemmBackend* backend = nullptr; // not owned; null: SiteRun's CPU backend
  TrainingResult res;
  SiteTable table;
  std::unique_ptr<MlpModel<float>> model;
  std::unique_ptr<SiteRun> sites;
  SiteRecorder* rec = nullptr;
  SiteLinearOps* ops = nullptr;
  std::unique_ptr<Optimizer> opt;
  std::vector<float> batch; // the step's images [B, features]
  bool ran = false;

  const std::string& name(size_t l) const { return table[l].path; }
  size_t layers() const { return table.size(); }

  void init() {
    model = std::make_unique<MlpModel<float>>(cfg.layer_sizes, cfg.seed);
    table = model->sites();
    sites = std::make_unique<SiteRun>(cfg, table, res.steps_per_epoch * cfg.epochs, backend, 256.0f, res.operands,
                                      res.first_nonfinite, res.gemm_backend, res.gemm_device, res.gemm_algorithm,
                                      res.gemm_runs_gpu, res.gemm_runs_cpu);
    rec = &sites->recorder();
    ops = &sites->ops();
    OptimizerConfig oc;
    oc.learning_rate = cfg.learning_rate;
    oc.beta1 = cfg.beta1;
    oc.beta2 = cfg.beta2;
    oc.epsilon = cfg.adam_epsilon;
    opt = std::make_unique<Optimizer>(oc);
  }

  /// One optimizer step on the batch order[s, s+bsz). Returns the batch loss.
  float step(const std::vector<int64_t>& order, int64_t s, int64_t bsz, int64_t global_step) {
    const int64_t F = train->features();
    batch.resize(static_cast<size_t>(bsz * F));
    for (int64_t i = 0; i < bsz; ++i) {
      const int64_t src = order[static_cast<size_t>(s + i)];
      std::copy_n(train->pixels.begin() + src * F, F, batch.begin() + i * F);
    }
    MlpSpike spike;
    if (cfg.spike.enabled && cfg.spike.step == global_step)
      spike = {cfg.spike.layer, cfg.spike.row, cfg.spike.col, cfg.spike.factor};
    rec->setStep(global_step);
    ops->setStep(global_step, true);
    model->zeroGrad();
    const std::vector<int32_t> targets = labelsOf(*train, &order, s, bsz);
    const double loss = model->forward(batch.data(), targets.data(), bsz, *ops, spike);
    if (rec->checking()) {
      const float lv = static_cast<float>(loss / static_cast<double>(bsz));
      if (!std::isfinite(lv)) rec->startRecord(name(layers() - 1), "loss", "elementwise", 1, 1, 0, lv);
    }
    model->backward(bsz, *ops);
    // ---- Adam (Kingma & Ba 2015, Algorithm 1, bias-corrected)
    std::vector<ParamRef> params;
    for (Param<float>& p : model->params()) params.push_back({&p.value, &p.grad, &p.m, &p.v, p.decay});
    opt->step(params, cfg.learning_rate);
    for (size_t l = 0; l < layers(); ++l) {
      const Param<float>& w = model->weight(l);
      const Param<float>& b = model->bias(l);
      // the updated master copies: the inputs of the update at the element (after it: m and v)
      auto adamInputs = [](const Param<float>& p, int64_t cols) {
        return [&p, cols](NonFiniteRecord& r, int64_t i, int64_t j) {
          const size_t e = static_cast<size_t>(i * cols + j);
          r.input_names = {"gradient", "adam_m", "adam_v"};
          r.inputs = {p.grad[e], p.m[e], p.v[e]};
        };
      };
      const int64_t in = w.shape[0], out = w.shape[1];
      rec->checkElementwise(w.value.data(), in, out, name(l), "weight", adamInputs(w, out));
      rec->checkElementwise(b.value.data(), 1, out, name(l), "bias", adamInputs(b, out));
    }
    return static_cast<float>(loss / static_cast<double>(bsz));
  }

  /// Test loss and accuracy with the current weights: FP8 runs quantize with copies of the
  /// scaling states (so evaluation never advances the training state); FP32 runs in float32.
  std::pair<double, double> evaluate() {
    Fp32LinearOps fp32(cfg.threads);
    LinearOps<float>& eval_ops = cfg.fp8() ? static_cast<LinearOps<float>&>(*ops) : fp32;
    double loss = 0;
    int64_t correct = 0;
    const int64_t F = test->features();
    const int64_t eb = cfg.eval_batch_size;
    for (int64_t s = 0; s < test->count; s += eb) {
      const int64_t b = std::min(eb, test->count - s);
      std::vector<OperandScaler> frozen = sites->scalers(); // each batch sees the training state as is
      ops->setStep(0, false, &frozen);
      (void)model->forward(test->pixels.data() + s * F, nullptr, b, eval_ops);
      const std::vector<int32_t> t = labelsOf(*test, nullptr, s, b);
      loss = nn::softmaxCrossEntropy<float>(model->logits().data(), t.data(), b, cfg.layer_sizes.back(), nullptr, b,
                                            &correct, loss);
    }
    ops->setStep(0, false); // the frozen copies are gone
    return {loss / static_cast<double>(test->count), static_cast<double>(correct) / static_cast<double>(test->count)};
  }

  std::vector<LayerWeights> currentWeights() const {
    std::vector<LayerWeights> w;
    for (size_t l = 0; l < layers(); ++l) {
      const Param<float>& k = model->params()[2 * l];
      w.push_back({k.shape[0], k.shape[1], k.value, model->params()[2 * l + 1].value});
    }
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
  d->backend = backend;
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

/// The MLP's run as the training loop drives it: epochs of shuffled batches, the test set after
/// each epoch.
struct TrainingRun::Loop : TrainingLoopModel {
  using clock = std::chrono::steady_clock;
  Impl& s;
  TrainingRng shuffle_rng; // the data order: a stream of its own (see random.h)
  std::vector<int64_t> order;
  std::string label;
  clock::time_point t_epoch;
  double loss_sum = 0;
  int64_t epoch_steps = 0;

  explicit Loop(Impl& impl)
      : s(impl), shuffle_rng(impl.cfg.seed + 1), order(static_cast<size_t>(impl.train->count)),
        label(impl.cfg.label.empty() ? std::string(toString(impl.cfg.precision)) : impl.cfg.label) {}
  int64_t spe() const { return s.res.steps_per_epoch; }
  int64_t totalSteps() const override { return spe() * s.cfg.epochs; }
  float trainStep(int64_t step) override {
    const int64_t st = step % spe();
    if (st == 0) {
      std::iota(order.begin(), order.end(), int64_t{0});
      shuffle_rng.shuffle(order);
      t_epoch = clock::now();
      loss_sum = 0;
      epoch_steps = 0;
    }
    const int64_t first = st * s.cfg.batch_size;
    const int64_t bsz = std::min<int64_t>(s.cfg.batch_size, s.train->count - first);
    const float loss = s.step(order, first, bsz, step);
    s.res.loss.push_back(loss);
    s.res.steps_done = step + 1;
    loss_sum += loss;
    ++epoch_steps;
    return loss;
  }
  std::string progressLine(int64_t step, float loss) const override {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s: epoch %d/%d, step %lld/%lld, loss %.4f", label.c_str(), int(step / spe()) + 1,
                  s.cfg.epochs, static_cast<long long>(step % spe() + 1), static_cast<long long>(spe()),
                  static_cast<double>(loss));
    return buf;
  }
  bool evaluationDue(int64_t step) const override { return (step + 1) % spe() == 0; }
  std::string evaluationStage() const override { return label + ": evaluating on the test set"; }
  void evaluate(int64_t step) override {
    EpochRecord er;
    er.epoch = int(step / spe()) + 1;
    er.end_step = step + 1;
    er.train_loss = loss_sum / static_cast<double>(std::max<int64_t>(epoch_steps, 1));
    er.seconds = std::chrono::duration<double>(clock::now() - t_epoch).count();
    const auto [tl, ta] = s.evaluate();
    er.test_loss = tl;
    er.test_accuracy = ta;
    s.res.epochs.push_back(er);
  }
};

void TrainingRun::run(const ProgressFn& progress) {
  if (d->ran) throw std::logic_error("TrainingRun::run called twice");
  d->ran = true;
  using clock = std::chrono::steady_clock;
  const auto t_start = clock::now();
  Impl& s = *d;
  TrainingResult& res = s.res;
  Loop loop(s);
  const TrainingLoopOutcome out = runTrainingLoop(loop, s.cfg.on_nonfinite, res.first_nonfinite, progress);
  res.stopped_nonfinite = out.stopped_nonfinite;
  res.weights = s.currentWeights();
  res.diagnostics = s.rec->diagnostics()->finish(res.steps_done);
  res.seconds = std::chrono::duration<double>(clock::now() - t_start).count();
  res.warnings = trainingRunIssues(res.operands, res.steps_done, res.first_nonfinite, res.stopped_nonfinite);
  if (out.cancelled) {
    res.cancelled = true;
    throw Cancelled();
  }
}

} // namespace fp8lab
