// FP8 Lab — training run ↔ session (see training_session.h).
#include "training/training_session.h"
#include "training/sites.h"
#include "session/session_layout.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

namespace fp8lab {

void putNonFiniteGroup(Run& run, const NonFiniteRecord& n, NonFinitePolicy policy) {
  Attributes a;
  a["policy"] = std::string(toString(policy));
  a["found"] = int64_t{n.found ? 1 : 0};
  a["description"] = policy == NonFinitePolicy::Off ? std::string("not checked (on_nonfinite off)") : n.describe();
  if (n.found) {
    a["step"] = n.step;
    a["layer"] = n.layer;
    a["tensor"] = n.tensor;
    a["kind"] = n.kind;
    a["rows"] = n.rows;
    a["cols"] = n.cols;
    a["row"] = n.row;
    a["col"] = n.col;
    a["value"] = static_cast<double>(n.value);
    a["value_text"] = floatText(n.value);
    if (n.kind == "gemm_output") {
      a["k_len"] = n.k_len;
      a["a_operand"] = n.a_operand;
      a["b_operand"] = n.b_operand;
      a["a_amax"] = static_cast<double>(n.a_amax);
      a["b_amax"] = static_cast<double>(n.b_amax);
      a["a_scale"] = static_cast<double>(n.a_scale);
      a["b_scale"] = static_cast<double>(n.b_scale);
      a["terms_before_quantization"] = int64_t{n.terms_before_quantization ? 1 : 0};
      const int64_t nt = static_cast<int64_t>(n.terms.size());
      std::vector<int64_t> k;
      std::vector<float> ta, tb;
      std::vector<double> tp;
      for (const DotTerm& t : n.terms) {
        k.push_back(t.k);
        ta.push_back(t.a);
        tb.push_back(t.b);
        tp.push_back(t.product);
      }
      if (nt > 0) {
        run.datasets[layout::nonfinite("terms_k")] =
            Dataset::int64({nt}, k, "index", "contraction index k of the largest |a_k·b_k| terms, largest first");
        run.datasets[layout::nonfinite("terms_a")] =
            Dataset::float32({nt}, ta, "1", "A[row, k] as the GEMM used it (dequantized), per term");
        run.datasets[layout::nonfinite("terms_b")] =
            Dataset::float32({nt}, tb, "1", "B[k, col] as the GEMM used it (dequantized), per term");
        run.datasets[layout::nonfinite("terms_product")] =
            Dataset::float64({nt}, tp, "1", "a_k·b_k in float64, per term");
      }
    } else if (!n.inputs.empty()) {
      std::string names;
      for (size_t i = 0; i < n.input_names.size(); ++i) names += (i ? "," : "") + n.input_names[i];
      a["input_names"] = names;
      run.datasets[layout::nonfinite("inputs")] =
          Dataset::float32({static_cast<int64_t>(n.inputs.size())}, n.inputs, "1",
                           "the op's input values at the element, in the order of the group's input_names");
    }
  }
  run.group_attrs[layout::kNonfinite] = a;
}

void putBlockStatsSeries(Run& run, const std::string& group, const OperandBlockSeries& s, int64_t map_every,
                         const Attributes& extra) {
  Attributes a = extra;
  a["layer"] = s.layer;
  a["operand"] = s.operand;
  a["quantization"] = s.quantization;
  a["format"] = s.format;
  a["scale_format"] = s.scale_format;
  a["rows"] = s.rows;
  a["cols"] = s.cols;
  a["block_rows"] = s.block.rows;
  a["block_cols"] = s.block.cols;
  a["grid_rows"] = s.grid_rows;
  a["grid_cols"] = s.grid_cols;
  a["map_every"] = map_every;
  a["scale_convention"] = std::string("dequant scale: x ≈ decode(code) · scale (NVFP4: block scale × tensor factor)");
  run.group_attrs[group] = a;
  const int64_t n = static_cast<int64_t>(s.steps.size());
  struct Field {
    const char* name;
    float BlockStatsSummary::*member;
    const char* units;
    const char* meaning;
  };
  static const Field fields[] = {
      {"log2_scale_min", &BlockStatsSummary::log2_scale_min, "log2",
       "min over blocks of log2(effective dequant scale), positive finite scales only; NaN when none"},
      {"log2_scale_max", &BlockStatsSummary::log2_scale_max, "log2",
       "max over blocks of log2(effective dequant scale)"},
      {"log2_scale_mean", &BlockStatsSummary::log2_scale_mean, "log2",
       "mean over blocks of log2(effective dequant scale)"},
      {"log2_scale_std", &BlockStatsSummary::log2_scale_std, "log2",
       "population standard deviation over blocks of log2(effective dequant scale)"},
      {"max_dynamic_range", &BlockStatsSummary::max_dynamic_range, "bits",
       "max over blocks of log2(max |x| / min non-zero |x|), finite x"},
      {"underflow_block_share", &BlockStatsSummary::underflow_block_share, "1",
       "share of blocks with at least one underflowed element"},
      {"saturation_block_share", &BlockStatsSummary::saturation_block_share, "1",
       "share of blocks with at least one saturated element"},
      {"underflow_fraction", &BlockStatsSummary::underflow_fraction, "1",
       "underflowed elements / non-zero finite elements (x != 0 whose code decodes to 0)"},
      {"saturation_fraction", &BlockStatsSummary::saturation_fraction, "1",
       "saturated elements / elements (scaled |x| rounds beyond max finite)"},
      {"sqnr_db", &BlockStatsSummary::sqnr_db, "dB",
       "10 log10(sum x^2 / sum (dequantized - x)^2) over finite elements; +Inf exact, NaN all zero"},
  };
  for (const Field& f : fields) {
    std::vector<float> v;
    v.reserve(s.steps.size());
    for (const BlockStatsSummary& x : s.steps) v.push_back(x.*(f.member));
    run.datasets[group + "/" + f.name] = Dataset::float32({n}, std::move(v), f.units, f.meaning);
  }
  if (s.maps.empty()) return;
  const int64_t m = static_cast<int64_t>(s.maps.size());
  const std::vector<int64_t> shape = {m, s.grid_rows, s.grid_cols};
  run.datasets[group + "/map_steps"] = Dataset::int64({m}, s.map_steps, "steps", "the steps of the full maps");
  std::vector<float> scale, amax, mn, dr, sq;
  std::vector<uint8_t> code;
  std::vector<int64_t> und, sat;
  for (const BlockStatsMap& b : s.maps) {
    scale.insert(scale.end(), b.scale.begin(), b.scale.end());
    code.insert(code.end(), b.scale_code.begin(), b.scale_code.end());
    amax.insert(amax.end(), b.amax.begin(), b.amax.end());
    mn.insert(mn.end(), b.min_nonzero.begin(), b.min_nonzero.end());
    und.insert(und.end(), b.underflow.begin(), b.underflow.end());
    sat.insert(sat.end(), b.saturated.begin(), b.saturated.end());
    dr.insert(dr.end(), b.dynamic_range.begin(), b.dynamic_range.end());
    sq.insert(sq.end(), b.sqnr_db.begin(), b.sqnr_db.end());
  }
  run.datasets[group + "/map_scale"] =
      Dataset::float32(shape, std::move(scale), "1", "effective dequant scale of each block: x ≈ decode(q) · scale");
  if (!code.empty() && code.size() == static_cast<size_t>(m * s.grid_rows * s.grid_cols)) {
    Dataset c = Dataset::uint8(shape, std::move(code), "code", "the block scale's code in the group's scale_format");
    c.attrs["format"] = s.scale_format;
    run.datasets[group + "/map_scale_code"] = std::move(c);
  }
  run.datasets[group + "/map_amax"] =
      Dataset::float32(shape, std::move(amax), "1 (same units as the tensor)", "max |x| of each block");
  run.datasets[group + "/map_min_nonzero"] = Dataset::float32(
      shape, std::move(mn), "1 (same units as the tensor)", "smallest non-zero finite |x| of each block (0 when none)");
  run.datasets[group + "/map_underflow"] =
      Dataset::int64(shape, std::move(und), "elements", "underflowed elements of each block");
  run.datasets[group + "/map_saturated"] =
      Dataset::int64(shape, std::move(sat), "elements", "saturated elements of each block");
  run.datasets[group + "/map_dynamic_range"] =
      Dataset::float32(shape, std::move(dr), "bits", "log2(max |x| / min non-zero |x|) of each block (0 when none)");
  run.datasets[group + "/map_sqnr_db"] =
      Dataset::float32(shape, std::move(sq), "dB", "SQNR of each block (+Inf exact, NaN all zero)");
}

void putDiagnosticsGroups(Run& run, const DiagnosticsResult& d) {
  for (const OperandBlockSeries& s : d.block_stats)
    if (!s.steps.empty()) putBlockStatsSeries(run, layout::blockStats(s.layer + "/" + s.operand), s, d.map_every);
  if (d.what_if.empty()) return;
  const int64_t w = static_cast<int64_t>(d.what_if_steps.size());
  run.datasets[layout::kWhatIfSteps] =
      Dataset::int64({w}, d.what_if_steps, "steps", "the steps the what-if recipes measured");
  Attributes wa;
  wa["every"] = int64_t{d.what_if_every};
  std::string ids;
  for (const WhatIfSeries& x : d.what_if) ids += (ids.empty() ? "" : ",") + x.id;
  wa["recipes"] = ids;
  wa["meaning"] = std::string("each operand's high-precision tensor quantized under other recipes at these steps, "
                              "without changing the training");
  run.group_attrs[layout::kWhatIf] = wa;
  for (const WhatIfSeries& x : d.what_if)
    for (const OperandBlockSeries& s : x.operands) {
      if (s.steps.empty()) continue;
      Attributes e;
      e["recipe"] = x.id;
      e["semantics"] = x.semantics;
      putBlockStatsSeries(run, layout::whatIf(x.id, s.layer + "/" + s.operand), s, 0, e);
    }
}

OperandTotals putOperandHistories(Run& run, const std::vector<OperandHistory>& operands, int64_t steps, bool fp8,
                                  bool block, const std::string& scaling_name, int history_len) {
  OperandTotals t;
  for (const OperandHistory& h : operands) {
    const std::string op = h.layer + "/" + h.operand, g = layout::history(op);
    Attributes ga;
    ga["format"] = h.format;
    ga["operand"] = h.operand;
    ga["layer"] = h.layer;
    ga["scaling"] = fp8 ? scaling_name : std::string("none (FP32 baseline)");
    if (block) {
      ga["quantization"] = h.quantization;
      ga["scale_source"] =
          std::string("amax: max |x| of the float32 tensor; scale: the lower median of the block dequant scales "
                      "(te_float8_block, te_mxfp8), 1/S_enc with S_enc = 2688/amax of the quantized copy (te_nvfp4), "
                      "1 (high_precision)");
    }
    ga["history_len"] = int64_t{history_len};                    // L of the strategy (0: no history)
    ga["history_recorded"] = int64_t{h.history_len > 0 ? 1 : 0}; // amax_history present (record_history)
    ga["scale_convention"] =
        std::string("scale = dequant_scale (x ≈ decode(q) · scale); quant_scale = quant multiplier");
    ga["history_order"] = std::string(
        "amax_history[t] = the L amaxes a(t-L+1) … a(t), oldest first: the window whose max sets step t+1's scale");
    run.group_attrs[g] = ga;
    const std::string what = h.layer + " " + h.operand;
    run.putFloat32(layout::historyAmax(op), h.amax, steps, -1, "1 (same units as the tensor)",
                   "max |x| of the " + what + " at each step");
    if (!fp8) continue;
    run.putFloat32(layout::historyScale(op), h.dequant_scale, steps, -1, "1",
                   "dequant scale the " + what + " was quantized with at each step: x ≈ decode(code) · scale");
    run.putFloat32(layout::historyQuantScale(op), h.quant_scale, steps, -1, "1",
                   "quant multiplier at each step: x_q = cast(x · quant_scale) (Flax divides by scale instead)");
    if (h.history_len > 0)
      run.putFloat32(layout::historyAmaxHistory(op), h.history, steps, h.history_len, "1",
                     "amax history window after each step, chronological (oldest first)");
    run.datasets[layout::historySaturated(op)] =
        Dataset::int64({steps}, h.saturated, "elements", "elements clipped to ±max finite at each step");
    run.datasets[layout::historyUnderflow(op)] =
        Dataset::int64({steps}, h.underflow, "elements", "non-zero elements that became zero at each step");
    run.datasets[layout::historyKeptPrevious(op)] = Dataset::uint8(
        {steps}, h.kept_previous, "1", "1 where an edge rule (amax 0 / inf / NaN) kept the previous scale");
    for (int64_t v : h.saturated) t.saturated += v;
    for (int64_t v : h.underflow) t.underflow += v;
  }
  return t;
}

namespace {

/// What every training run stores about itself, whatever the model: id, type "training", config,
/// seed, where its GEMMs ran, label, precision, scaling (and block recipe), status (and why it
/// stopped), steps completed, the scale convention and, for low-precision runs, the GEMM algorithm
/// and accumulation models.
Run trainingRunBase(const TrainingRunConfig& c, const std::string& run_id, const std::string& config_json,
                    const std::string& gemm_backend, const std::string& gemm_device, const std::string& gemm_algorithm,
                    int64_t gemm_runs_gpu, int64_t gemm_runs_cpu, bool cancelled, bool stopped_nonfinite,
                    const NonFiniteRecord& first, int64_t steps_done) {
  const bool fp8 = c.fp8();
  Run run;
  run.id = run_id;
  run.type = "training";
  run.config_json = config_json;
  run.seed = c.seed;
  run.backend = fp8 ? (gemm_backend.empty() ? "cpu" : gemm_backend) : "cpu";
  run.device = fp8 ? gemm_device : "CPU (float32 GEMMs)";
  run.attrs["label"] = c.label.empty() ? run_id : c.label;
  run.attrs["precision"] = std::string(toString(c.precision));
  run.attrs["scaling"] = c.scalingName();
  if (c.blockRecipe()) run.attrs["recipe"] = std::string(toString(c.recipe.recipe));
  run.attrs["status"] = std::string(cancelled ? "cancelled" : stopped_nonfinite ? "stopped_nonfinite" : "completed");
  if (stopped_nonfinite)
    run.attrs["status_reason"] = "stopped after the step of the first non-finite value: " + first.describe();
  run.attrs["steps_completed"] = steps_done;
  run.attrs["scale_convention"] =
      std::string("dequant_scale: x ≈ decode(code) · scale; quant_scale = the multiplier of the quantize op");
  if (fp8) {
    run.attrs["gemm_algorithm"] = gemm_algorithm;
    run.attrs["forward_accumulation"] = std::string(toString(c.forward_gemm.accumulation));
    run.attrs["backward_accumulation"] = std::string(toString(c.backward_gemm.accumulation));
    run.attrs["gemm_runs_gpu"] = gemm_runs_gpu;
    run.attrs["gemm_runs_cpu"] = gemm_runs_cpu;
  }
  return run;
}

/// What the sites of every training run recorded: the operand histories, the first non-finite
/// value and the diagnostics; returns the clipping totals.
OperandTotals putSiteRecords(Run& run, const TrainingRunConfig& c, const std::vector<OperandHistory>& operands,
                             int64_t steps, const NonFiniteRecord& first, const DiagnosticsResult& diagnostics) {
  const bool delayed = c.fp8() && !c.blockRecipe() && isDelayed(c.scaling.kind);
  const OperandTotals totals = putOperandHistories(run, operands, steps, c.fp8(), c.blockRecipe(), c.scalingName(),
                                                   delayed ? c.scaling.history_len : 0);
  putNonFiniteGroup(run, first, c.on_nonfinite);
  putDiagnosticsGroups(run, diagnostics);
  return totals;
}

} // namespace

Run trainingRunToSession(const TrainingResult& r, const std::string& run_id, const std::string& config_json) {
  const TrainingConfig& c = r.config;
  const bool fp8 = c.fp8();
  Run run = trainingRunBase(c, run_id, config_json, r.gemm_backend, r.gemm_device, r.gemm_algorithm, r.gemm_runs_gpu,
                            r.gemm_runs_cpu, r.cancelled, r.stopped_nonfinite, r.first_nonfinite, r.steps_done);
  run.attrs["steps_per_epoch"] = r.steps_per_epoch;
  run.attrs["epochs_planned"] = int64_t{c.epochs};
  if (c.spike.enabled) {
    run.attrs["spike_step"] = c.spike.step;
    run.attrs["spike_factor"] = static_cast<double>(c.spike.factor);
    run.attrs["spike_layer"] = int64_t{c.spike.layer};
  }
  const int64_t steps = r.steps_done;
  const int64_t ne = static_cast<int64_t>(r.epochs.size());
  run.putFloat32(layout::training("loss"), r.loss, steps, -1, "nats",
                 "mean softmax cross-entropy of each step's training batch, before that step's update");
  std::vector<float> acc, tl, trl;
  std::vector<int64_t> end_step;
  std::vector<double> secs;
  for (const auto& e : r.epochs) {
    acc.push_back(static_cast<float>(e.test_accuracy));
    tl.push_back(static_cast<float>(e.test_loss));
    trl.push_back(static_cast<float>(e.train_loss));
    end_step.push_back(e.end_step);
    secs.push_back(e.seconds);
  }
  run.putFloat32(layout::training("accuracy"), acc, ne, -1, "1",
                 "fraction of the test images classified correctly after each epoch (FP8 runs: FP8 forward)");
  run.putFloat32(layout::training("test_loss"), tl, ne, -1, "nats",
                 "mean cross-entropy over the test set after each epoch");
  run.putFloat32(layout::training("train_loss"), trl, ne, -1, "nats", "mean of the epoch's step losses");
  run.datasets[layout::training("epoch_end_step")] =
      Dataset::int64({ne}, end_step, "steps", "optimizer steps completed at the end of each epoch");
  for (int64_t e = 0; e < ne;
       ++e) // wall times are metrics (named *seconds), not datasets: reruns compare datasets bit for bit
    run.setMetric("epoch" + std::to_string(e + 1) + "_seconds", secs[static_cast<size_t>(e)], "s",
                  "wall time of epoch " + std::to_string(e + 1) + "'s training steps (evaluation excluded)");

  const OperandTotals totals = putSiteRecords(run, c, r.operands, steps, r.first_nonfinite, r.diagnostics);
  const int64_t sat_total = totals.saturated, und_total = totals.underflow;
  for (size_t l = 0; l < r.weights.size(); ++l) {
    const LayerWeights& w = r.weights[l];
    const std::string layer = mlpLayerName(int64_t(l));
    run.putFloat32(layout::weights(layer + "/kernel"), w.kernel, w.in, w.out, "1",
                   "FP32 master weights [in, out] after the last completed step");
    run.putFloat32(layout::weights(layer + "/bias"), w.bias, w.out, -1, "1",
                   "FP32 bias [out] after the last completed step");
  }
  run.setMetric("steps", static_cast<double>(steps), "steps", "optimizer steps completed");
  run.setMetric("epochs_completed", static_cast<double>(ne), "epochs", "epochs completed (with a test evaluation)");
  run.setMetric("seconds", r.seconds, "s", "wall time of the whole run including evaluation");
  if (ne > 0) {
    double best = 0, train_s = 0;
    for (const auto& e : r.epochs) {
      best = std::max(best, e.test_accuracy);
      train_s += e.seconds;
    }
    run.setMetric("final_test_accuracy", r.epochs.back().test_accuracy, "1",
                  "test accuracy after the last completed epoch");
    run.setMetric("final_test_loss", r.epochs.back().test_loss, "nats",
                  "test cross-entropy after the last completed epoch");
    run.setMetric("best_test_accuracy", best, "1", "best test accuracy over the completed epochs");
    run.setMetric("mean_epoch_seconds", train_s / static_cast<double>(ne), "s",
                  "mean wall time of an epoch's training steps");
  }
  if (!r.loss.empty()) run.setMetric("final_loss", r.loss.back(), "nats", "loss of the last step");
  if (fp8) {
    run.setMetric("saturated_total", static_cast<double>(sat_total), "elements",
                  "clipped elements over all operands and steps");
    run.setMetric("underflow_total", static_cast<double>(und_total), "elements",
                  "flushed-to-zero elements over all operands and steps");
  }
  return run;
}

Result<LayerWeights> trainedWeightsFromRun(const Run& run, const std::string& layer) {
  Result<LayerWeights> res;
  const Dataset* k = run.find(layout::weights(layer + "/kernel"));
  const Dataset* b = run.find(layout::weights(layer + "/bias"));
  if (!k || !b) {
    res.add(Issue::Code::MissingDataset, run.id + "/" + layout::weights(layer),
            "run '" + run.id + "' has no trained weights for layer " + layer);
    return res;
  }
  if (k->dtype != DType::Float32 || k->shape.size() != 2 || b->dtype != DType::Float32 || b->shape.size() != 1 ||
      b->shape[0] != k->shape[1]) {
    res.add(Issue::Code::WrongShape, run.id + "/" + layout::weights(layer),
            "kernel must be float32 [in,out], bias float32 [out]");
    return res;
  }
  res.value.in = k->shape[0];
  res.value.out = k->shape[1];
  res.value.kernel = k->f32;
  res.value.bias = b->f32;
  return res;
}

} // namespace fp8lab

namespace fp8lab {

void putSiteTable(Run& run, const SiteTable& table) {
  std::string names;
  std::vector<int64_t> in, out, blk;
  for (const Site& s : table.sites()) {
    names += (names.empty() ? "" : ",") + s.path;
    in.push_back(s.in);
    out.push_back(s.out);
    blk.push_back(s.block);
  }
  const int64_t ns = int64_t(table.size());
  run.attrs["sites"] = names;
  run.datasets[layout::sites("in")] =
      Dataset::int64({ns}, in, "1", "per site (order of the run's 'sites' attribute): in");
  run.datasets[layout::sites("out")] = Dataset::int64({ns}, out, "1", "per site: out");
  run.datasets[layout::sites("block")] = Dataset::int64({ns}, blk, "1", "per site: transformer block (-1: none)");
}

Run lmRunToSession(const LmTrainingResult& r, const std::string& run_id, const std::string& config_json) {
  const LmTrainingConfig& c = r.config;
  Run run = trainingRunBase(c, run_id, config_json, r.gemm_backend, r.gemm_device, r.gemm_algorithm, r.gemm_runs_gpu,
                            r.gemm_runs_cpu, r.cancelled, r.stopped_nonfinite, r.first_nonfinite, r.steps_done);
  run.attrs["model"] = std::string("transformer");
  if (c.blockRecipe()) run.attrs["block_gemm"] = std::string(toString(c.block_gemm));
  run.attrs["steps_planned"] = c.steps;
  run.attrs["corpus"] = r.corpus_source;
  run.attrs["train_bytes"] = r.train_bytes;
  run.attrs["val_bytes"] = r.val_bytes;
  run.attrs["parameters"] = c.model.parameterCount();
  if (!c.policy.rules.empty()) {
    std::string p;
    for (const PolicyRule& x : c.policy.rules) p += (p.empty() ? "" : "; ") + x.describe();
    run.attrs["policy"] = p;
  }
  if (!r.sample.empty()) run.attrs["sample"] = r.sample;
  const int64_t steps = r.steps_done;
  run.putFloat32(layout::training("loss"), r.loss, steps, -1, "nats",
                 "mean cross-entropy per byte of each step's training batch, before that step's update");
  run.putFloat32(layout::training("lr"), r.lr, steps, -1, "1", "learning rate of each step (warm-up, cosine decay)");
  run.putFloat32(layout::training("grad_norm"), r.grad_norm, steps, -1, "1",
                 "global L2 norm of the parameter gradients of each step, before clipping");
  const int64_t nv = int64_t(r.val_steps.size());
  run.datasets[layout::training("val_step")] =
      Dataset::int64({nv}, r.val_steps, "steps", "the steps after which the validation loss was measured");
  run.putFloat32(layout::training("val_loss"), r.val_loss, nv, -1, "nats",
                 "mean cross-entropy per byte over the fixed validation windows");
  putSiteTable(run, r.sites);
  const OperandTotals totals = putSiteRecords(run, c, r.operands, steps, r.first_nonfinite, r.diagnostics);
  // probes
  const ProbeSeries& p = r.probes;
  if (!p.steps.empty()) {
    const int64_t np = int64_t(p.steps.size());
    run.datasets[layout::kProbesSteps] = Dataset::int64({np}, p.steps, "steps", "the steps the probes measured");
    Attributes pa;
    pa["massive_threshold"] = c.probes.massive_threshold;
    pa["massive_ratio"] = c.probes.massive_ratio;
    pa["softmax_scale"] = double(c.softmax_scale);
    pa["meaning"] = std::string("transformer probes (docs/training.md \"Probes\"): per tensor and step");
    run.group_attrs[layout::kProbes] = pa;
    auto put = [&](const std::map<std::string, std::vector<float>>& m, const char* name, const char* units,
                   const char* meaning, int64_t cols) {
      for (const auto& [tensor, v] : m) {
        if (int64_t(v.size()) != np * cols) continue;
        run.putFloat32(layout::probe(tensor, name), v, np, cols > 1 ? cols : -1, units, meaning);
      }
    };
    put(p.kurtosis, "kurtosis", "1",
        "variance over channels of the per-channel mean squares of the width-centred, RMS-normalised tensor "
        "(He et al. 2024)",
        1);
    put(p.max_median, "max_median", "1", "mean over tokens of max |x| / median |x| over the width (He et al. 2024)", 1);
    put(p.massive, "massive", "elements",
        "elements with |x| > massive_threshold and >= massive_ratio x the median |x| of their token (Sun et al. 2024)",
        1);
    put(p.sink, "sink", "1", "mean probability on key position 0 over queries t >= 1, per head [steps, heads]",
        p.heads);
    put(p.softmax_underflow, "softmax_underflow", "1",
        "share of non-zero softmax probabilities an E4M3FN cast with softmax_scale flushes to zero", 1);
    put(p.grad_underflow, "grad_underflow", "1",
        "share of the output gradient's non-zero elements its cast flushed to zero (NaN: not quantized)", 1);
    put(p.quant_error, "quant_error", "1",
        "||x - x32|| / ||x32|| of the block output against a float32 forward of the same weights and batch", 1);
    put(p.grad_noise_ratio, "grad_noise_ratio", "1",
        "||g|| / ||Q(g) - g|| of the output gradient (FP4 All the Way: below ~sqrt(3) training stalls; NaN: not "
        "quantized, +Inf: exact)",
        1);
  }
  // attention snapshots of the fixed validation sequence
  const AttentionSnapshots& a = r.attention;
  if (!a.steps.empty()) {
    const int64_t ns = int64_t(a.steps.size()), H = c.model.heads, T = c.model.context;
    run.datasets[layout::kAttentionSteps] = Dataset::int64({ns}, a.steps, "steps", "steps of the attention snapshots");
    run.datasets[layout::kAttentionTokens] =
        Dataset::uint8({T}, a.tokens, "byte", "the fixed validation sequence (bytes)");
    for (size_t l = 0; l < a.probs.size(); ++l) {
      Dataset d = Dataset::float32({ns, H, T, T}, a.probs[l], "1",
                                   "softmax probabilities [snapshot, head, query, key] of the fixed sequence");
      run.datasets[layout::attentionProbs(blockName(int64_t(l)))] = std::move(d);
    }
  }
  // weights: the FP32 master weights by their module paths
  for (const Param<float>& w : r.params) {
    Dataset d;
    d.dtype = DType::Float32;
    d.shape = w.shape;
    d.f32 = w.value;
    d.attrs["units"] = std::string("1");
    d.attrs["meaning"] = std::string("FP32 master weights after the last completed step ([in, out] for Linear)");
    run.datasets[layout::weights(w.name)] = std::move(d);
  }
  run.setMetric("steps", double(steps), "steps", "optimizer steps completed");
  run.setMetric("seconds", r.seconds, "s", "wall time of the whole run including evaluation");
  run.setMetric("step_seconds", r.step_seconds, "s", "mean wall time of a training step (no evaluation or probes)");
  if (!r.loss.empty()) run.setMetric("final_loss", r.loss.back(), "nats", "training loss of the last step");
  if (!r.val_loss.empty()) {
    run.setMetric("final_val_loss", r.val_loss.back(), "nats", "validation loss per byte after the last step");
    run.setMetric("final_val_bits_per_byte", r.val_loss.back() / std::log(2.0), "bits",
                  "validation loss in bits per byte");
    run.setMetric("best_val_loss", *std::min_element(r.val_loss.begin(), r.val_loss.end()), "nats",
                  "lowest validation loss of the run");
  }
  run.setMetric("unigram_bits_per_byte", r.unigram_bits, "bits",
                "entropy of the training split's byte frequencies: a model must get well below it");
  if (c.fp8()) {
    run.setMetric("saturated_total", double(totals.saturated), "elements",
                  "clipped elements over all operands and steps");
    run.setMetric("underflow_total", double(totals.underflow), "elements",
                  "flushed-to-zero elements over all operands and steps");
  }
  return run;
}

} // namespace fp8lab
