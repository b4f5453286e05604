// FP8 Lab — training the tiny transformer language model (see lm_trainer.h).
#include "training/lm_trainer.h"
#include "scaling/delayed_scaling.h"
#include "training/sites.h"

#include "common/worker_pool.h"
#include "training/dense.h"
#include "training/linear_site.h"
#include "training/site_run.h"
#include "training/probes.h"
#include "training/random.h"
#include "training/training_loop.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace fp8lab {

std::string LmTrainingConfig::validate() const {
  if (const std::string why = model.validate(); !why.empty()) return "model: " + why;
  if (batch_size < 1 || batch_size > 4096) return "batch_size must be in 1..4096";
  if (steps < 1 || steps > 10000000) return "steps must be in 1..10000000";
  if (!(optimizer.learning_rate > 0) || !std::isfinite(optimizer.learning_rate))
    return "optimizer.learning_rate must be a positive number";
  if (warmup_steps < 0) return "optimizer.warmup_steps must be ≥ 0";
  if (!(min_lr_ratio >= 0 && min_lr_ratio <= 1)) return "optimizer.min_lr_ratio must be in [0, 1]";
  if (eval_every < 1) return "eval.every must be ≥ 1";
  if (eval_batches < 1 || eval_batches > 10000) return "eval.batches must be in 1..10000";
  if (probes.every < 0 || probes.attention_every < 0) return "probe cadences must be ≥ 0";
  if (!(softmax_scale > 0) || !std::isfinite(softmax_scale)) return "softmax_scale must be a positive number";
  if (model.vocab != 256) return "model.vocab must be 256 for the byte-level text data";
  return validateRun(model.sites());
}

double estimateLmTrainingBytes(const LmTrainingConfig& c) {
  const TransformerConfig& m = c.model;
  const double P = double(m.parameterCount());
  const double N = double(c.batch_size) * double(m.context);
  const double C = double(m.d_model), F = double(m.ffn_hidden), L = double(m.layers), H = double(m.heads);
  const double T = double(m.context);
  // activations per block: ~ 16 tensors of [N, C], 4 of [N, F], P [B, H, T, T]; logits [N, V] x3
  const double acts = L * (16 * N * C + 4 * N * F + double(c.batch_size) * H * T * T) + 3 * N * double(m.vocab);
  const double sites = double(m.sites().size());
  const double history = double(c.steps) * sites * 3 * 48;
  return 4.0 * (6 * P + 2 * acts) + history +
         estimateDiagnosticsBytes(c.diagnostics, c.steps, int64_t(sites * 3), int64_t(4 * N * C * L));
}

struct LmTrainingRun::Impl {
  LmTrainingConfig cfg;
  const TextCorpus* corpus = nullptr;
  GemmBackend* backend = nullptr; // not owned; null: SiteRun's CPU backend
  LmTrainingResult res;
  SiteTable table;
  std::unique_ptr<TransformerModel<float>> model;
  std::unique_ptr<SiteRun> sites;
  SiteRecorder* rec = nullptr;
  SiteLinearOps* ops = nullptr;
  std::unique_ptr<Optimizer> opt;
  bool ran = false;

  bool fp8() const { return cfg.fp8(); }

  void init() {
    table = cfg.model.sites();
    res.sites = table;
    model = std::make_unique<TransformerModel<float>>(cfg.model, cfg.seed);
    model->setThreads(cfg.threads);
    sites = std::make_unique<SiteRun>(cfg, table, cfg.steps, backend, cfg.softmax_scale, res.operands,
                                      res.first_nonfinite, res.gemm_backend, res.gemm_device, res.gemm_algorithm,
                                      res.gemm_runs_gpu, res.gemm_runs_cpu);
    rec = &sites->recorder();
    ops = &sites->ops();
    opt = std::make_unique<Optimizer>(cfg.optimizer);
    res.probes.heads = cfg.model.heads;
  }

  std::vector<ParamRef> paramRefs() {
    std::vector<ParamRef> p;
    for (Param<float>& x : model->params()) p.push_back({&x.value, &x.grad, &x.m, &x.v, x.decay});
    return p;
  }

  /// B windows of T + 1 bytes of `split` starting at `offsets`: tokens [B, T], targets [B, T].
  void window(const std::vector<uint8_t>& split, const std::vector<int64_t>& offsets, std::vector<int32_t>& tok,
              std::vector<int32_t>& tgt) const {
    const int64_t T = cfg.model.context;
    tok.resize(offsets.size() * size_t(T));
    tgt.resize(offsets.size() * size_t(T));
    for (size_t b = 0; b < offsets.size(); ++b)
      for (int64_t t = 0; t < T; ++t) {
        tok[b * size_t(T) + size_t(t)] = split[size_t(offsets[b] + t)];
        tgt[b * size_t(T) + size_t(t)] = split[size_t(offsets[b] + t + 1)];
      }
  }

  /// The fixed validation windows: eval_batches × batch_size offsets spread evenly over the split.
  /// Document corpora: the n-th offset is the start of usable document ⌊n · (D − 1) / (N − 1)⌋ of
  /// the D there are (documentWindowStarts).
  std::vector<int64_t> valOffsets() const {
    const int64_t n = int64_t(cfg.eval_batches) * cfg.batch_size;
    std::vector<int64_t> o(static_cast<size_t>(n));
    if (corpus->documents()) {
      const std::vector<int64_t> starts =
          documentWindowStarts(corpus->val_docs, int64_t(corpus->val.size()), cfg.model.context + 1);
      const int64_t d = int64_t(starts.size());
      for (int64_t i = 0; i < n; ++i)
        o[size_t(i)] = d == 0 ? 0 : starts[size_t((i * (d - 1)) / std::max<int64_t>(n - 1, 1))];
      return o;
    }
    const int64_t span = int64_t(corpus->val.size()) - cfg.model.context - 1;
    for (int64_t i = 0; i < n; ++i) o[size_t(i)] = span <= 0 ? 0 : (i * span) / std::max<int64_t>(n - 1, 1);
    return o;
  }

  /// The validation loss with the weights of `step` (the policy of that step, copies of the
  /// scaling state).
  double validate(int64_t step) {
    const std::vector<int64_t> all = valOffsets();
    double loss = 0;
    int64_t count = 0;
    std::vector<int32_t> tok, tgt;
    for (size_t s = 0; s < all.size(); s += size_t(cfg.batch_size)) {
      const std::vector<int64_t> off(all.begin() + std::ptrdiff_t(s),
                                     all.begin() + std::ptrdiff_t(std::min(all.size(), s + size_t(cfg.batch_size))));
      window(corpus->val, off, tok, tgt);
      std::vector<OperandScaler> frozen = sites->scalers();
      ops->setStep(step, false, &frozen);
      loss += model->forward(tok.data(), tgt.data(), int64_t(off.size()), cfg.model.context, *ops);
      count += int64_t(tok.size());
    }
    ops->setStep(step, false); // the frozen copies are gone
    return loss / double(std::max<int64_t>(count, 1));
  }

  /// The block outputs of a float32 forward of this step's batch (low-precision runs, probe
  /// steps), before the training forward overwrites the model's activations.
  std::vector<std::vector<float>> ref_blocks;
  void referenceForward(const std::vector<int32_t>& tok, int64_t batch) {
    ref_blocks.clear();
    if (!fp8()) return;
    Fp32LinearOps f(cfg.threads);
    model->forward(tok.data(), nullptr, batch, cfg.model.context, f);
    const TransformerTaps<float> t = model->taps();
    for (const float* b : t.block_out) ref_blocks.emplace_back(b, b + t.n * cfg.model.d_model);
  }

  void probe(int64_t step) {
    const TransformerTaps<float> t = model->taps();
    ProbeSeries& p = res.probes;
    p.steps.push_back(step);
    for (size_t l = 0; l < ref_blocks.size() && l < t.block_out.size(); ++l) {
      double e = 0, r = 0;
      const std::vector<float>& ref = ref_blocks[l];
      for (size_t i = 0; i < ref.size(); ++i) {
        const double d = double(t.block_out[l][i]) - double(ref[i]);
        e += d * d;
        r += double(ref[i]) * double(ref[i]);
      }
      p.quant_error[blockName(int64_t(l))].push_back(float(r > 0 ? std::sqrt(e / r) : 0.0));
    }
    auto outliers = [&](const std::string& name, const float* x, int64_t cols) {
      const OutlierStats o = outlierStats(x, t.n, cols);
      p.kurtosis[name].push_back(float(o.kurtosis));
      p.max_median[name].push_back(float(o.max_median));
      p.massive[name].push_back(
          float(massiveActivations(x, t.n, cols, cfg.probes.massive_threshold, cfg.probes.massive_ratio)));
    };
    outliers("embedding", t.embedding, cfg.model.d_model);
    for (size_t l = 0; l < t.block_out.size(); ++l) {
      const std::string b = blockName(int64_t(l));
      outliers(b, t.block_out[l], cfg.model.d_model);
      const std::vector<double> sink = attentionSink(t.attn_probs[l], t.batch, cfg.model.heads, t.t);
      for (double v : sink) p.sink[b].push_back(float(v));
      const int64_t np = t.batch * cfg.model.heads * t.t * t.t;
      const int context = table.find(b + ".attn.context");
      p.softmax_underflow[b].push_back(
          float(context >= 0 && ops->attentionLow(size_t(context))
                    ? ops->castUnderflow(size_t(context))
                    : softmaxCastUnderflow(t.attn_probs[l], np, Format::E4M3FN(), cfg.softmax_scale)));
    }
    for (size_t s = 0; s < table.size(); ++s)
      if (t.site_input[s]) outliers(table[s].path, t.site_input[s], t.site_input_cols[s]);
  }

  /// Gradient probes of the Linear sites, measured by the sites in the last backward.
  void gradientProbes() {
    ProbeSeries& p = res.probes;
    for (size_t s = 0; s < table.size(); ++s) {
      LinearSite* site = ops->site(s);
      if (!site) continue;
      const OperandHistory& h = res.operands[SiteTable::operandIndex(s, SiteOperand::OutputGrad)];
      const bool quantized = std::isfinite(site->gradNoiseRatio()) || std::isinf(site->gradNoiseRatio());
      float under = std::numeric_limits<float>::quiet_NaN();
      if (quantized && site->gradNonzero() > 0 && !h.underflow.empty())
        under = float(double(h.underflow.back()) / double(site->gradNonzero()));
      p.grad_underflow[table[s].path].push_back(under);
      p.grad_noise_ratio[table[s].path].push_back(float(site->gradNoiseRatio()));
    }
  }

  void snapshot(int64_t step) {
    AttentionSnapshots& a = res.attention;
    const int64_t T = cfg.model.context;
    std::vector<int32_t> tok(static_cast<size_t>(T)), tgt(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) {
      tok[size_t(t)] = corpus->val[size_t(t)];
      tgt[size_t(t)] = corpus->val[size_t(t + 1)];
    }
    if (a.tokens.empty()) a.tokens.assign(corpus->val.begin(), corpus->val.begin() + T);
    std::vector<OperandScaler> frozen = sites->scalers();
    ops->setStep(step, false, &frozen);
    model->forward(tok.data(), tgt.data(), 1, T, *ops);
    ops->setStep(step, false); // the frozen copies are gone
    const TransformerTaps<float> taps = model->taps();
    a.steps.push_back(step);
    if (a.probs.size() < taps.attn_probs.size()) a.probs.resize(taps.attn_probs.size());
    const int64_t n = cfg.model.heads * T * T;
    for (size_t l = 0; l < taps.attn_probs.size(); ++l)
      a.probs[l].insert(a.probs[l].end(), taps.attn_probs[l], taps.attn_probs[l] + n);
  }
};

LmTrainingRun::LmTrainingRun(LmTrainingConfig config, const TextCorpus& corpus, GemmBackend* backend)
    : d(std::make_unique<Impl>()) {
  if (const std::string why = config.validate(); !why.empty()) throw std::invalid_argument("training config: " + why);
  const int64_t need = 2 * (config.model.context + 1);
  if (int64_t(corpus.train.size()) < need || int64_t(corpus.val.size()) < need)
    throw std::invalid_argument("training config: the text is too short for context " +
                                std::to_string(config.model.context) + " (each split needs at least " +
                                std::to_string(need) + " bytes)");
  if (corpus.documents() &&
      (documentWindowStarts(corpus.train_docs, int64_t(corpus.train.size()), config.model.context + 1).empty() ||
       documentWindowStarts(corpus.val_docs, int64_t(corpus.val.size()), config.model.context + 1).empty()))
    throw std::invalid_argument(
        "training config: no document of the text has " + std::to_string(config.model.context + 1) +
        " tokens from its start to the end of its split (context " + std::to_string(config.model.context) + ")");
  const double est = estimateLmTrainingBytes(config);
  const int64_t limit = config.forward_gemm.memory_limit_bytes;
  const double have = double(limit > 0 ? limit : availableMemoryBytes());
  if (est > have) {
    char t[160];
    std::snprintf(t, sizeof t, "needs about %.3g GiB, more than the %.3g GiB %s", est / 0x1p30, have / 0x1p30,
                  limit > 0 ? "allowed" : "of memory available");
    throw std::invalid_argument("training run '" + config.label + "' " + t +
                                "; use a smaller model, batch or context, or fewer steps");
  }
  d->cfg = std::move(config);
  d->corpus = &corpus;
  d->backend = backend;
  d->res.config = d->cfg;
  d->res.corpus_source = corpus.source;
  d->res.train_bytes = int64_t(corpus.train.size());
  d->res.val_bytes = int64_t(corpus.val.size());
  d->res.unigram_bits = corpus.unigram_bits;
  d->init();
}

LmTrainingRun::~LmTrainingRun() = default;
const LmTrainingResult& LmTrainingRun::result() const {
  return d->res;
}
LmTrainingResult LmTrainingRun::takeResult() {
  return std::move(d->res);
}

/// The language model's run as the training loop drives it: batches of windows drawn from the
/// corpus, probes and attention snapshots at their cadence, validation every eval_every steps.
struct LmTrainingRun::Loop : TrainingLoopModel {
  using clock = std::chrono::steady_clock;
  Impl& s;
  const LmTrainingConfig& cfg;
  TrainingRng data_rng;
  std::vector<int64_t> doc_starts;
  std::vector<int32_t> tok, tgt;
  std::vector<int64_t> off;
  std::vector<ParamRef> params;
  double step_time = 0;
  std::string label;

  explicit Loop(Impl& impl)
      : s(impl), cfg(impl.cfg), data_rng(impl.cfg.seed + 1), off(static_cast<size_t>(impl.cfg.batch_size)),
        params(impl.paramRefs()), label(impl.cfg.label.empty() ? std::string("lm") : impl.cfg.label) {
    // Document corpora: each window starts at a document's BOS token, drawn uniformly among the
    // documents with T + 1 tokens from their start.
    if (s.corpus->documents())
      doc_starts = documentWindowStarts(s.corpus->train_docs, int64_t(s.corpus->train.size()), cfg.model.context + 1);
  }
  int64_t totalSteps() const override { return cfg.steps; }
  float trainStep(int64_t step) override {
    LmTrainingResult& res = s.res;
    const int64_t T = cfg.model.context, B = cfg.batch_size;
    const auto ts = clock::now();
    for (int64_t b = 0; b < B; ++b)
      off[size_t(b)] = drawWindowStart(doc_starts, int64_t(s.corpus->train.size()), T + 1, data_rng);
    s.window(s.corpus->train, off, tok, tgt);
    s.rec->setStep(step);
    s.ops->setStep(step, true);
    const bool probing = cfg.probes.every > 0 && (step % cfg.probes.every == 0 || step == cfg.steps - 1);
    step_time += std::chrono::duration<double>(clock::now() - ts).count();
    if (probing) s.referenceForward(tok, B);
    s.ops->countCasts(probing);
    const auto tf = clock::now();
    s.model->zeroGrad();
    const double loss_sum = s.model->forward(tok.data(), tgt.data(), B, T, *s.ops);
    const float loss = float(loss_sum / double(B * T));
    if (s.rec->checking() && !std::isfinite(loss))
      s.rec->startRecord(kLmHeadName, "loss", "elementwise", 1, 1, 0, loss);
    step_time += std::chrono::duration<double>(clock::now() - tf).count();
    if (probing) s.probe(step);
    s.ops->setProbe(probing);
    const auto tb = clock::now();
    s.model->backward(B * T, *s.ops);
    const double norm = clipGradNorm(params, cfg.clip_norm);
    const float lr =
        scheduledLearningRate(cfg.optimizer.learning_rate, step, cfg.steps, cfg.warmup_steps, cfg.min_lr_ratio);
    s.opt->step(params, lr);
    if (s.rec->checking())
      for (Param<float>& p : s.model->params())
        s.rec->checkElementwise(p.value.data(), 1, int64_t(p.value.size()), p.name, "weight",
                                [](NonFiniteRecord&, int64_t, int64_t) {});
    step_time += std::chrono::duration<double>(clock::now() - tb).count();
    if (probing) s.gradientProbes();
    res.loss.push_back(loss);
    res.lr.push_back(lr);
    res.grad_norm.push_back(float(norm));
    res.steps_done = step + 1;
    if (cfg.probes.attention_every > 0 && (step % cfg.probes.attention_every == 0 || step == cfg.steps - 1))
      s.snapshot(step);
    return loss;
  }
  std::string progressLine(int64_t step, float loss) const override {
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s: step %lld/%lld, loss %.4f (%.3f bits/byte)", label.c_str(),
                  static_cast<long long>(step + 1), static_cast<long long>(cfg.steps), double(loss),
                  double(loss) / std::log(2.0));
    return buf;
  }
  bool evaluationDue(int64_t step) const override { return (step + 1) % cfg.eval_every == 0 || step == cfg.steps - 1; }
  std::string evaluationStage() const override { return label + ": validation"; }
  void evaluate(int64_t step) override {
    s.res.val_steps.push_back(step);
    s.res.val_loss.push_back(float(s.validate(step)));
  }
};

void LmTrainingRun::run(const ProgressFn& progress) {
  if (d->ran) throw std::logic_error("LmTrainingRun::run called twice");
  d->ran = true;
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  Impl& s = *d;
  LmTrainingResult& res = s.res;
  const LmTrainingConfig& cfg = s.cfg;
  const int64_t T = cfg.model.context;
  Loop loop(s);
  // A run trains alone (docs/training.md), and its steps are dozens of short parallel loops.
  const WorkerPoolBurst burst;
  const TrainingLoopOutcome out = runTrainingLoop(loop, cfg.on_nonfinite, res.first_nonfinite, progress);
  res.stopped_nonfinite = out.stopped_nonfinite;
  const double step_time = loop.step_time;
  res.step_seconds = step_time / double(std::max<int64_t>(res.steps_done, 1));
  res.diagnostics = s.rec->diagnostics()->finish(res.steps_done);
  for (const Param<float>& p : s.model->params()) {
    Param<float> q;
    q.name = p.name;
    q.shape = p.shape;
    q.value = p.value;
    q.decay = p.decay;
    res.params.push_back(std::move(q));
  }
  if (cfg.sample_bytes > 0 && !out.cancelled && !res.stopped_nonfinite) {
    std::vector<int32_t> prompt;
    const int64_t plen = std::min<int64_t>(T / 2, int64_t(s.corpus->val.size()));
    for (int64_t i = 0; i < plen; ++i) prompt.push_back(s.corpus->val[size_t(i)]);
    std::vector<OperandScaler> frozen = s.sites->scalers();
    s.ops->setStep(res.steps_done, false, &frozen);
    const std::vector<int32_t> gen =
        s.model->generate(prompt, cfg.sample_bytes, cfg.sample_temperature, cfg.seed, *s.ops);
    s.ops->setStep(res.steps_done, false); // the frozen copies are gone
    std::vector<uint8_t> bytes(prompt.begin(), prompt.end());
    bytes.insert(bytes.end(), gen.begin(), gen.end());
    res.sample = printableText(bytes);
  }
  res.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  res.warnings = trainingRunIssues(res.operands, res.steps_done, res.first_nonfinite, res.stopped_nonfinite);
  if (out.cancelled) {
    res.cancelled = true;
    throw Cancelled();
  }
}

} // namespace fp8lab
