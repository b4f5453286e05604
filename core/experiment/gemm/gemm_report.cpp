// The summary of one GEMM error experiment as text and JSON (gemm_report.h).
#include "experiment/gemm/gemm_report.h"
#include "json/json_number.h"

#include "common/number_text.h"
#include "experiment/kernel_check/kernel_check_report.h"
#include "formats/format.h"
#include "session/session_layout.h"

#include <algorithm>
#include <cmath>

namespace fp8lab {

namespace {

std::string num(double v, int prec = 4) {
  return generalText(v, prec);
}

std::string str(int64_t v) {
  return std::to_string(v);
}

/// "count (percent%)" with 3 decimals.
std::string countCell(int64_t c, double percent) {
  return str(c) + " (" + decimalText(percent, 'f', 3) + "%)";
}

} // namespace

int64_t worstTile(const TileMap& tiles) {
  int64_t worst = -1;
  for (size_t i = 0; i < tiles.mean.size(); ++i)
    if (!std::isnan(tiles.mean[i]) && (worst < 0 || tiles.mean[i] > tiles.mean[static_cast<size_t>(worst)]))
      worst = static_cast<int64_t>(i);
  return worst;
}

std::string gemmReportText(const GemmReportInput& in) {
  const GemmExperimentConfig& cfg = *in.config;
  const GemmRunDetails& det = *in.details;
  const GemmOptions& o = in.options;
  const bool fp8_out = o.output == OutputType::E4M3FN || o.output == OutputType::E5M2;
  std::string s;
  s += "GEMM " + str(det.m) + " x " + str(det.n) + " x " + str(det.k) + " (M x N x K), " +
       (in.imported ? std::string("imported") : std::string(toString(cfg.a.random.distribution))) + " data, seed " +
       std::to_string(cfg.seed) + "\n";
  // The formats' canonical names (a config may spell them another way).
  const auto name = [](const std::string& f) { return Format::byName(f) ? Format::byName(f)->name() : f; };
  // A pre-quantized operand was not scaled here: its label says where its scales came from.
  const auto scalingOf = [](const OperandSource& src, const std::string& preset) -> std::string {
    const PreQuantizedSource& pq = src.pre;
    if (!pq.enabled()) return preset;
    if (!pq.checkpoint.empty()) return "pre-quantized, checkpoint scales";
    if (pq.scales.empty()) return "pre-quantized, per-tensor dequant scale " + num(pq.scale, 6);
    const bool per_tensor = pq.block.rows == 0 && pq.block.cols == 0;
    return "pre-quantized, scales from file" +
           (per_tensor ? std::string() : ", block " + str(pq.block.rows) + "x" + str(pq.block.cols));
  };
  s += "A " + name(cfg.format_a) + " (" + scalingOf(cfg.a, in.scaling_a) + "), B " + name(cfg.format_b) + " (" +
       scalingOf(cfg.b, in.scaling_b) + ")\n";
  std::string accs = toString(o.accumulation);
  if (o.accumulation == Accumulation::SplitFP32) accs += " (N_C = " + std::to_string(o.promotion_interval) + ")";
  if (o.accumulation == Accumulation::FastAccum) accs += " — MODEL of undocumented hardware: " + fastAccumText(o);
  s += "accumulation " + accs + ", output " + toString(o.output) +
       (fp8_out ? " (scale_D " + num(o.output_quant_scale, 6) + ")" : std::string()) + "\n";
  if (const auto& ap = in.accumulation_preset)
    s += "accumulation preset " + ap->name + (ap->unsure ? " (UNSURE)" : "") + ": " + ap->summary +
         "\n  source: " + ap->source + "\n";
  const EpilogueSource& c_src = cfg.c_source;
  const EpilogueSource& bias_src = cfg.bias_source;
  if (hasEpilogue(o))
    s += "epilogue D = scale_D·(alpha·(A·B) + beta·C + bias): alpha " + num(o.alpha, 9) + ", beta " + num(o.beta, 9) +
         (c_src.fromFile() ? " (C from " + c_src.file + ")"
          : c_src.enabled  ? " (C seed " + std::to_string(c_src.seed) + ", scale " + num(c_src.scale) + ")"
                           : std::string()) +
         ", bias " +
         (bias_src.enabled ? "seed " + std::to_string(bias_src.seed) + ", scale " + num(bias_src.scale)
                           : std::string("none")) +
         "\n";
  const GemmOutput& out = det.output;
  s += "backend " + out.backend + " (--backend " + in.backend_request + "): " + out.device + "\n  " + out.algorithm +
       "\n";
  if (out.backend == "cuda")
    s += std::string("  FAST_ACCUM ") + (o.accumulation == Accumulation::FastAccum ? "1" : "0") + "\n";
  s += "time: quantize " + num(det.quantize_seconds, 3) + " s, gemm " + num(out.seconds, 3) + " s, ideal " +
       num(det.ideal_seconds, 3) + " s, quantized-exact " + num(det.exact_seconds, 3) + " s\n\n";
  const std::vector<int> widths{-28, 11, 11, 11, 11, 9};
  s += tableLine({"error", "max abs", "max rel", "RMSE", "rel Frob", "SQNR dB"}, widths);
  const auto row = [&](const std::string& name, const ErrorMetrics& m) {
    s += tableLine({name, num(m.max_abs), num(m.max_rel), num(m.rmse), num(m.rel_fro), num(m.sqnr_db, 4)}, widths);
  };
  if (det.total.nan_test > 0)
    s += "D: " + str(det.total.nan_test) + " of " + str(det.m * det.n) + " outputs are NaN" +
         (det.nan_outputs_from_codes > 0 ? " (" + str(det.nan_outputs_from_codes) + " from NaN codes: " +
                                               str(det.a_nan_codes) + " in A, " + str(det.b_nan_codes) + " in B)"
                                         : std::string()) +
         "; the error statistics below leave them out" +
         (in.allow_nonfinite ? std::string() : std::string(" (exit status 1)")) + "\n";
  row("quantization (exact vs ideal)", det.quantization);
  row("accumulation (D vs exact)", det.accumulation);
  row("total (D vs ideal)", det.total);
  if (det.total.nan_test + det.total.inf_test > 0)
    s += "non-finite outputs: " + str(det.total.nan_test) + " NaN, " + str(det.total.inf_test) +
         " Inf (left out of the statistics)\n";
  const std::vector<int> swidths{-8, 20, 20, 20};
  s += "\n" + tableLine({"operand", "saturated", "flushed to zero", "subnormal"}, swidths);
  const auto srow = [&](const std::string& name, const OperandStats& st) {
    s += tableLine({name, countCell(st.saturated, st.percent(st.saturated)),
                    countCell(st.flushed, st.percent(st.flushed)), countCell(st.subnormal, st.percent(st.subnormal))},
                   swidths);
  };
  srow("A", det.a_stats);
  srow("B", det.b_stats);
  if (det.d_saturated >= 0) {
    OperandStats d;
    d.elements = det.m * det.n;
    d.saturated = det.d_saturated;
    s += padded("D", -8) + " " + padded(countCell(d.saturated, d.saturatedPercent()), 20) + "  (the " +
         toString(o.output) + " output cast at scale_D " + num(o.output_quant_scale, 6) +
         ", counted on the quantized-exact D)\n";
  }
  s += "\namax_D " + num(out.amax_d, 8) + "\n";
  const TileMap& tiles = det.tiles;
  if (const int64_t worst = worstTile(tiles); worst >= 0)
    s += "worst " + str(cfg.tile) + "x" + str(cfg.tile) + " tile of |D - ideal|: tile (" +
         str(worst / tiles.grid_cols) + ", " + str(worst % tiles.grid_cols) + "), mean " +
         num(tiles.mean[size_t(worst)]) + ", max " + num(tiles.max[size_t(worst)]) + "\n";
  for (const Issue& w : out.warnings)
    s += (w.severity == Severity::Info ? "note" : "warning") + std::string(": ") + w.what + " (" + w.detail + ")\n";
  if (det.check) s += kernelCheckText(*det.check, cfg.check);
  return s;
}

Json errorMetricsJson(const ErrorMetrics& m) {
  return {{"max_abs", numberJson(m.max_abs)},
          {"max_abs_index", static_cast<double>(m.max_abs_index)},
          {"max_rel", numberJson(m.max_rel)},
          {"max_rel_index", static_cast<double>(m.max_rel_index)},
          {"rmse", numberJson(m.rmse)},
          {"rel_fro", numberJson(m.rel_fro)},
          {"sqnr_db", numberJson(m.sqnr_db)},
          {"ref_rms", numberJson(m.ref_rms)},
          {"finite_pairs", static_cast<double>(m.finite_pairs)},
          {"nan_ref", static_cast<double>(m.nan_ref)},
          {"inf_ref", static_cast<double>(m.inf_ref)},
          {"nan_test", static_cast<double>(m.nan_test)},
          {"inf_test", static_cast<double>(m.inf_test)}};
}

Json operandStatsJson(const OperandStats& s) {
  return {{"elements", static_cast<double>(s.elements)},
          {"saturated", static_cast<double>(s.saturated)},
          {"saturated_percent", s.saturatedPercent()},
          {"flushed_to_zero", static_cast<double>(s.flushed)},
          {"flushed_percent", s.flushedPercent()},
          {"subnormal", static_cast<double>(s.subnormal)},
          {"subnormal_percent", s.subnormalPercent()},
          {"nan", static_cast<double>(s.nan)},
          {"inf", static_cast<double>(s.inf)}};
}

void addScalesJson(Json& o, const QuantizedTensor& q) {
  o["scale_format"] = q.scale_codes.empty() ? std::string("float32") : q.scaleCodeFormat().name();
  if (q.tensor_scale.kind != TensorScale::Kind::None) {
    const TensorScale& t = q.tensor_scale;
    o["tensor_scale"] = {{"kind", t.kind == TensorScale::Kind::TeAmax ? "te_amax" : "torchao_per_tensor_scale"},
                         {"amax", numberJson(t.amax)},
                         {"value", numberJson(t.value)},
                         {"fp4_fp8_max", numberJson(t.fp4_fp8_max)}};
  }
  if (q.scale_codes.empty()) return;
  const Format& f = q.scaleCodeFormat();
  int lo = 255, hi = 0;
  int64_t zero = 0, subnormal = 0, nan = 0;
  for (const uint8_t c : q.scale_codes) {
    lo = std::min(lo, int(c));
    hi = std::max(hi, int(c));
    switch (f.classify(c)) {
    case CodeClass::Zero:
      ++zero;
      break;
    case CodeClass::Subnormal:
      ++subnormal;
      break;
    case CodeClass::NaN:
      ++nan;
      break;
    default:
      break;
    }
  }
  o["block_scale_codes"] = {{"format", f.name()},
                            {"blocks", static_cast<double>(q.scale_codes.size())},
                            {"block_rows", static_cast<double>(q.block.rows)},
                            {"block_cols", static_cast<double>(q.block.cols)},
                            {"min_code", lo},
                            {"max_code", hi},
                            {"zero", static_cast<double>(zero)},
                            {"subnormal", static_cast<double>(subnormal)},
                            {"nan", static_cast<double>(nan)}};
}

Json gemmResultJson(const GemmResultJsonInput& in) {
  const GemmExperimentConfig& cfg = *in.config;
  const GemmRunDetails& det = *in.details;
  Json j = Json::object();
  j["config"] = gemmConfigJson(cfg, in.run_id);
  j["shape"] = {{"m", det.m}, {"n", det.n}, {"k", det.k}};
  if (const auto ap = accumulationPreset(cfg.accumulation_preset))
    j["accumulation_preset"] = {
        {"name", ap->name}, {"summary", ap->summary}, {"source", ap->source}, {"unsure", ap->unsure}};
  j["backend"] = det.output.backend;
  j["device"] = det.output.device;
  j["algorithm"] = det.output.algorithm;
  j["model_of_undocumented_hardware"] = det.output.model_of_undocumented_hardware;
  j["seconds"] = {{"quantize_s", det.quantize_seconds},
                  {"gemm_s", det.output.seconds},
                  {"ideal_s", det.ideal_seconds},
                  {"quantized_exact_s", det.exact_seconds},
                  {"total_s", in.total_seconds}};
  j["errors"] = {{"quantization", errorMetricsJson(det.quantization)},
                 {"accumulation", errorMetricsJson(det.accumulation)},
                 {"total", errorMetricsJson(det.total)}};
  Json ops = Json::object();
  for (const auto& [name, st] : {std::pair{"A", &det.a_stats}, std::pair{"B", &det.b_stats}}) {
    Json op = operandStatsJson(*st);
    if (in.run)
      if (auto q = in.run->getQuantized(layout::quantized(name)); q.ok()) addScalesJson(op, q.value);
    ops[name] = std::move(op);
  }
  j["operands"] = std::move(ops);
  j["amax_d"] = numberJson(det.output.amax_d);
  if (det.d_saturated >= 0) j["d_saturated"] = static_cast<double>(det.d_saturated);
  Json mean = Json::array(), max = Json::array();
  for (size_t i = 0; i < det.tiles.mean.size(); ++i) {
    mean.push_back(numberJson(det.tiles.mean[i]));
    max.push_back(numberJson(det.tiles.max[i]));
  }
  j["tile_map"] = {{"what", "absolute total error |D - ideal|"},
                   {"tile", static_cast<double>(cfg.tile)},
                   {"grid_rows", static_cast<double>(det.tiles.grid_rows)},
                   {"grid_cols", static_cast<double>(det.tiles.grid_cols)},
                   {"mean", std::move(mean)},
                   {"max", std::move(max)}};
  Json warnings = Json::array();
  for (const Issue& w : det.output.warnings)
    warnings.push_back({{"what", w.what}, {"where", w.where}, {"detail", w.detail}});
  j["warnings"] = std::move(warnings);
  Json issues = Json::array();
  for (const Issue& i : in.issues)
    if (i.severity != Severity::Error)
      issues.push_back({{"severity", severityName(i.severity)}, {"where", i.where}, {"detail", i.detail}});
  j["issues"] = std::move(issues);
  if (det.nan_outputs_from_codes > 0 || det.total.nan_test > 0)
    j["nan_outputs"] = static_cast<double>(det.total.nan_test);
  if (det.check) j["check"] = kernelCheckJson(*det.check, cfg.check);
  if (!in.stored_id.empty()) {
    j["file"] = in.file;
    j["run"] = in.stored_id;
  }
  return j;
}

} // namespace fp8lab
