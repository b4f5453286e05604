// FP8 Lab — a training run observed from outside (observed_run.h).
#include "training/observed_run.h"

#include "common/names.h"
#include "session/session_layout.h"
#include "training/linear_site.h"
#include "training/trainer.h"
#include "training/training_session.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

namespace fp8lab {

namespace {

/// The contraction axis of a recorded operand's role (recordedRole, sites.h).
Axis recordedAxis(SiteOperand o) {
  return o == SiteOperand::Input ? Axis::Cols : Axis::Rows;
}

/// Transformer block and view group of a module path: the first all-digit component is the block
/// ("transformer.h.3.attn.c_attn" → 3); the group is "attn" when a component names attention, "head"
/// for an output head, "ffn" for a feed-forward / MLP part, else "linear".
void classify(Site& s) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s.path + ".") {
    if (c == '.') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += char(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  for (const std::string& p : parts)
    if (!p.empty() &&
        std::all_of(p.begin(), p.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      s.block = std::stoi(p.substr(0, 9));
      break;
    }
  auto has = [&](std::initializer_list<const char*> words) {
    for (const std::string& p : parts)
      for (const char* w : words)
        if (p.find(w) != std::string::npos) return true;
    return false;
  };
  s.group = has({"attn", "attention", "q_proj", "k_proj", "v_proj", "o_proj", "qkv"})        ? "attn"
            : has({kLmHeadName, "head", "classifier"})                                       ? "head"
            : has({"mlp", "ffn", "feed_forward", "fc", "up_proj", "down_proj", "gate_proj"}) ? "ffn"
                                                                                             : "linear";
}

} // namespace

std::optional<ObservedRecipe> parseObservedRecipe(const std::string& name, int history_len, int margin,
                                                  std::string* why) {
  ObservedRecipe r;
  const std::string n = normalizedName(name);
  auto perTensor = [&](TrainingScalingKind k, bool pow2) {
    r.fp8 = true;
    r.scaling.kind = k;
    r.scaling.power_of_two = pow2;
    r.scaling.history_len = history_len;
    r.scaling.margin = isDelayed(k) ? margin : 0;
    r.name = toString(k);
    if (pow2) r.name += " pow2";
  };
  auto block = [&](TrainingRecipe rc) {
    r.fp8 = true;
    r.recipe.recipe = rc;
    r.name = toString(rc);
  };
  if (n == "fp32" || n == "none")
    r.name = "fp32";
  else if (n == "current_te" || n == "te_current" || n == "per_tensor" || n == "current")
    perTensor(TrainingScalingKind::CurrentTE, false);
  else if (n == "te_current_pow2")
    perTensor(TrainingScalingKind::CurrentTE, true);
  else if (n == "current_torchao" || n == "torchao_tensorwise")
    perTensor(TrainingScalingKind::CurrentTorchao, false);
  else if (n == "delayed_te" || n == "te_delayed")
    perTensor(TrainingScalingKind::DelayedTE, false);
  else if (n == "delayed_flax" || n == "flax_delayed" || n == "delayed")
    perTensor(TrainingScalingKind::DelayedFlax, false);
  else if (n == "te_float8_block" || n == "float8_block")
    block(TrainingRecipe::TeFloat8Block);
  else if (n == "te_mxfp8" || n == "mxfp8")
    block(TrainingRecipe::TeMxfp8);
  else if (n == "te_nvfp4" || n == "nvfp4")
    block(TrainingRecipe::TeNvfp4);
  else if (n == "deepseek_v3")
    block(TrainingRecipe::DeepSeekV3);
  else {
    if (why)
      *why = "unknown recipe '" + name +
             "' (known: fp32, te_current, te_current_pow2, torchao_tensorwise, te_delayed, flax_delayed, "
             "te_float8_block, te_mxfp8, te_nvfp4, deepseek_v3; also the training config's current-te, "
             "delayed-te, per-tensor, float8-block, mxfp8, nvfp4)";
    return std::nullopt;
  }
  if (r.fp8 && !r.block() && isDelayed(r.scaling.kind) && history_len < 1) {
    if (why) *why = "history_len must be at least 1 (got " + std::to_string(history_len) + ")";
    return std::nullopt;
  }
  return r;
}

struct ObservedRun::Impl {
  ObservedRunConfig cfg;
  SiteTable table;
  std::vector<OperandHistory> operands;
  NonFiniteRecord first;
  std::unique_ptr<SiteRecorder> rec;
  std::vector<OperandScaler> scalers;
  SiteRunContext ctx; // the stochastic-rounding seeds of the engine (srSeed)
  std::vector<uint8_t> seen;
  bool open = false;
  int64_t step = 0; ///< recorded steps done (the index of the open one)
  std::vector<int64_t> recorded_steps;
  std::vector<std::pair<int64_t, float>> loss, val;
  int64_t repeated = 0;
  QuantizedTensor q; // per-tensor quantization buffer
  std::vector<float> transposed;
  bool finished = false;
};

ObservedRun::ObservedRun(ObservedRunConfig cfg, std::vector<ObservedSite> sites) : d(std::make_unique<Impl>()) {
  if (sites.empty()) throw std::invalid_argument("sites: the model has no Linear site to observe");
  std::set<std::string> paths;
  std::vector<Site> table;
  for (const ObservedSite& o : sites) {
    if (o.path.empty()) throw std::invalid_argument("sites: a site has an empty path");
    if (!paths.insert(o.path).second) throw std::invalid_argument("sites: '" + o.path + "' is given twice");
    if (o.in < 1 || o.out < 1)
      throw std::invalid_argument("sites: '" + o.path + "' has weight shape [" + std::to_string(o.in) + ", " +
                                  std::to_string(o.out) + "] (in, out must be ≥ 1)");
    Site s;
    s.path = o.path;
    s.kind = SiteKind::Linear;
    s.in = o.in;
    s.out = o.out;
    classify(s);
    table.push_back(std::move(s));
  }
  if (const std::string e = cfg.diagnostics.validate(); !e.empty()) throw std::invalid_argument(e);
  d->cfg = std::move(cfg);
  d->table = SiteTable(std::move(table));
  const ObservedRecipe& R = d->cfg.recipe;
  const bool fp8 = R.fp8, block = R.block();
  if (block) {
    if (const std::string e = R.recipe.validate(); !e.empty()) throw std::invalid_argument(e);
  } else if (fp8) {
    d->scalers.reserve(d->table.size() * kSiteOperands);
    for (size_t s = 0; s < d->table.size(); ++s) {
      d->scalers.emplace_back(R.scaling, *R.forward_format);
      d->scalers.emplace_back(R.scaling, *R.forward_format);
      d->scalers.emplace_back(R.scaling, *R.backward_format);
    }
  }
  const int hl = fp8 && !block && isDelayed(R.scaling.kind) ? R.scaling.history_len : 0;
  std::vector<DiagnosticsRecorder::Operand> dops;
  for (size_t op = 0; op < d->table.size() * kSiteOperands; ++op) {
    const size_t s = SiteTable::siteOf(op);
    const SiteOperand k = SiteTable::operandOf(op);
    OperandHistory h;
    h.layer = d->table[s].path;
    h.operand = toString(k);
    DiagnosticsRecorder::Operand o;
    o.layer = h.layer;
    o.operand = h.operand;
    o.gradient = k == SiteOperand::OutputGrad;
    if (!fp8) {
      h.format = "FP32";
      o.quantized = false;
      o.quantization = "high precision (FP32)";
    } else if (block) {
      const OperandRole role = recordedRole(k);
      const RoleQuantization rq = R.recipe.role(role);
      h.format = rq.format ? rq.format->name() : std::string("FP32");
      h.quantization = std::string(toString(role)) + ": " + rq.describe();
      o.quantized = rq.kind != RoleKind::HighPrecision;
      o.quantization = h.quantization;
    } else {
      h.format = k == SiteOperand::OutputGrad ? R.backward_format->name() : R.forward_format->name();
      o.quantized = true;
      o.quantization = std::string("per-tensor ") + toString(R.scaling.kind) + " " + h.format;
    }
    h.history_len = hl;
    d->operands.push_back(h);
    dops.push_back(std::move(o));
  }
  d->rec = std::make_unique<SiteRecorder>(d->table, fp8, d->cfg.on_nonfinite, d->operands, d->first);
  // The planned length is unknown: maps at every map_every-th recorded step and at the last one
  // (finish completes it), what-if at every what_if_every-th.
  d->rec->setDiagnostics(std::make_unique<DiagnosticsRecorder>(
      d->cfg.diagnostics, std::move(dops), std::numeric_limits<int64_t>::max() / 4, d->cfg.threads));
  d->ctx.fp8 = fp8;
  d->ctx.recipe = R.recipe;
  d->ctx.scaling = R.scaling;
  d->ctx.seed = d->cfg.seed;
  d->ctx.threads = d->cfg.threads;
  d->seen.assign(d->operands.size(), 0);
}

ObservedRun::~ObservedRun() = default;

const SiteTable& ObservedRun::sites() const {
  return d->table;
}
const ObservedRunConfig& ObservedRun::config() const {
  return d->cfg;
}
bool ObservedRun::inStep() const {
  return d->open;
}
int64_t ObservedRun::recordedSteps() const {
  return d->step;
}
int64_t ObservedRun::repeatedCalls() const {
  return d->repeated;
}
const NonFiniteRecord& ObservedRun::firstNonFinite() const {
  return d->first;
}

void ObservedRun::beginStep(int64_t train_step) {
  if (d->finished) throw std::logic_error("the observed run is closed");
  if (d->open) throw std::logic_error("step " + std::to_string(d->recorded_steps.back()) + " is still open");
  d->open = true;
  d->recorded_steps.push_back(train_step);
  d->rec->setStep(d->step);
  std::fill(d->seen.begin(), d->seen.end(), 0);
}

void ObservedRun::observe(size_t site, SiteOperand operand, const float* x, int64_t rows, int64_t cols,
                          bool transposed) {
  if (!d->open) throw std::logic_error("observe() outside a step: call beginStep() first");
  if (site >= d->table.size())
    throw std::invalid_argument("site " + std::to_string(site) + " is out of range (the run has " +
                                std::to_string(d->table.size()) + " sites)");
  const Site& s = d->table[site];
  const size_t op = SiteTable::operandIndex(site, operand);
  if (d->seen[op]) return;
  // The orientation the engine uses: input [N, in], kernel [in, out], output_grad [N, out].
  if (operand == SiteOperand::Kernel) {
    const int64_t want_r = transposed ? s.out : s.in, want_c = transposed ? s.in : s.out;
    if (rows != want_r || cols != want_c)
      throw std::invalid_argument(s.path + "/kernel: shape [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                  "], expected [" + std::to_string(want_r) + ", " + std::to_string(want_c) + "]");
    if (transposed) {
      d->transposed.resize(static_cast<size_t>(rows * cols));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          d->transposed[static_cast<size_t>(j * rows + i)] = x[static_cast<size_t>(i * cols + j)];
      x = d->transposed.data();
      std::swap(rows, cols);
    }
  } else {
    const int64_t want_c = operand == SiteOperand::Input ? s.in : s.out;
    if (cols != want_c || rows < 1)
      throw std::invalid_argument(s.path + "/" + toString(operand) + ": shape [" + std::to_string(rows) + ", " +
                                  std::to_string(cols) + "], expected [N, " + std::to_string(want_c) + "] with N ≥ 1");
  }
  d->seen[op] = 1;
  SiteRecorder& rec = *d->rec;
  const size_t n = static_cast<size_t>(rows * cols);
  if (rec.checking() && !allFinite(x, n)) {
    const int64_t e = fp8lab::firstNonFinite(x, n);
    rec.startRecord(s.path, toString(operand), "observed_tensor", rows, cols, e, x[e]);
  }
  const ObservedRecipe& R = d->cfg.recipe;
  const Axis axis = recordedAxis(operand);
  if (!R.fp8) {
    rec.recordHighPrecision(op, x, n);
  } else if (R.block()) {
    const OperandRole role = recordedRole(operand);
    const RoleQuantization rq = R.recipe.role(role);
    if (rq.kind == RoleKind::HighPrecision) {
      rec.recordHighPrecision(op, x, n);
    } else {
      RoleQuantRecord rr;
      const QuantizedObserver ob = rec.observer(op);
      (void)quantizeRole(rq, x, rows, cols, axis, d->ctx.srSeed(d->step, site, role), &rr, d->cfg.threads, &ob);
      rec.recordRecipe(op, rr);
    }
  } else {
    OperandStepRecord r;
    d->scalers[op].quantize(x, rows, cols, d->q, &r);
    rec.record(op, r);
    rec.trained(op, x, d->q);
  }
  rec.whatIf(op, x, rows, cols, axis);
}

void ObservedRun::noteRepeatedCall() {
  ++d->repeated;
}

void ObservedRun::endStep() {
  if (!d->open) throw std::logic_error("endStep() without an open step");
  for (size_t op = 0; op < d->operands.size(); ++op)
    if (!d->seen[op]) d->rec->recordUnquantized(op, std::numeric_limits<float>::quiet_NaN());
  d->open = false;
  ++d->step;
}

void ObservedRun::logLoss(int64_t train_step, double loss) {
  d->loss.push_back({train_step, static_cast<float>(loss)});
}

void ObservedRun::logValidation(int64_t train_step, double loss) {
  d->val.push_back({train_step, static_cast<float>(loss)});
}

Run ObservedRun::finish(const std::string& run_id, const std::string& config_json, bool cancelled) {
  if (d->finished) throw std::logic_error("the observed run is already closed");
  if (d->open) {
    // A step left open (an exception in the loop) is completed as it stands.
    endStep();
  }
  d->finished = true;
  const ObservedRunConfig& c = d->cfg;
  const ObservedRecipe& R = c.recipe;
  const int64_t steps = d->step;
  DiagnosticsResult diag = d->rec->diagnostics()->finish(steps);
  Run run;
  run.id = run_id;
  run.type = "training";
  run.config_json = config_json;
  run.seed = c.seed;
  run.backend = "cpu";
  run.device = "observed: PyTorch model, quantized by FP8 Lab's CPU reference";
  run.attrs["label"] = c.label.empty() ? run_id : c.label;
  run.attrs["model"] = std::string("pytorch");
  run.attrs["observed_model"] = c.model;
  run.attrs["observation"] =
      std::string("the model trained in its own precision; each recorded step's operands were quantized under the "
                  "recipe without changing the training (fp8lab.torch.attach)");
  run.attrs["precision"] = std::string(R.fp8 ? "fp8" : "fp32");
  run.attrs["scaling"] = R.fp8 ? R.name : std::string("none");
  if (R.block()) run.attrs["recipe"] = std::string(toString(R.recipe.recipe));
  run.attrs["status"] = std::string(cancelled ? "cancelled" : "completed");
  run.attrs["steps_completed"] = steps;
  run.attrs["record_every"] = c.every;
  run.attrs["parameters"] = c.parameters;
  run.attrs["repeated_calls"] = d->repeated;
  run.attrs["scale_convention"] =
      std::string("dequant_scale: x ≈ decode(code) · scale; quant_scale = the multiplier of the quantize op");
  putSiteTable(run, d->table);
  run.datasets[layout::training("recorded_step")] =
      Dataset::int64({steps}, std::vector<int64_t>(d->recorded_steps.begin(), d->recorded_steps.begin() + steps),
                     "steps", "the training loop's step number of each recorded step (history index → loop step)");
  if (!d->loss.empty()) {
    std::vector<int64_t> st;
    std::vector<float> v;
    for (const auto& [s, l] : d->loss) {
      st.push_back(s);
      v.push_back(l);
    }
    run.putFloat32(layout::training("loss"), v, int64_t(v.size()), -1, "nats",
                   "training loss of each logged step, as the loop reported it");
    run.datasets[layout::training("loss_step")] =
        Dataset::int64({int64_t(st.size())}, st, "steps", "the loop step of each training/loss value");
    run.setMetric("final_loss", v.back(), "nats", "the last logged training loss");
  }
  if (!d->val.empty()) {
    std::vector<int64_t> st;
    std::vector<float> v;
    for (const auto& [s, l] : d->val) {
      st.push_back(s);
      v.push_back(l);
    }
    run.datasets[layout::training("val_step")] =
        Dataset::int64({int64_t(st.size())}, st, "steps", "the steps after which the validation loss was measured");
    run.putFloat32(layout::training("val_loss"), v, int64_t(v.size()), -1, "nats",
                   "validation loss as the loop reported it");
    run.setMetric("final_val_loss", v.back(), "nats", "the last logged validation loss");
  }
  const bool delayed = R.fp8 && !R.block() && isDelayed(R.scaling.kind);
  const OperandTotals totals = putOperandHistories(run, d->operands, steps, R.fp8, R.block(), R.fp8 ? R.name : "none",
                                                   delayed ? R.scaling.history_len : 0);
  putNonFiniteGroup(run, d->first, c.on_nonfinite);
  putDiagnosticsGroups(run, diag);
  run.setMetric("steps", double(steps), "steps", "recorded steps");
  if (R.fp8) {
    run.setMetric("saturated_total", double(totals.saturated), "elements",
                  "elements clipped to ±max finite over all recorded operands and steps");
    run.setMetric("underflow_total", double(totals.underflow), "elements",
                  "non-zero elements that became zero over all recorded operands and steps");
  }
  return run;
}

} // namespace fp8lab
