// FP8 Lab — the sites of one training run (see site_run.h).
#include "training/site_run.h"

#include "scaling/delayed_scaling.h"

namespace fp8lab {

SiteRun::SiteRun(const TrainingRunConfig& cfg, const SiteTable& table, int64_t total_steps, GemmBackend* backend,
                 float softmax_scale, std::vector<OperandHistory>& operands, NonFiniteRecord& first,
                 std::string& gemm_backend, std::string& gemm_device, std::string& gemm_algorithm,
                 int64_t& gemm_runs_gpu, int64_t& gemm_runs_cpu) {
  const bool fp8 = cfg.fp8(), block = cfg.blockRecipe();
  if (!fp8) backend = nullptr; // FP32 runs multiply in float32 on the CPU
  if (fp8 && !backend) {
    own_backend_ = makeCpuGemmBackend();
    backend = own_backend_.get();
  }
  if (block && cfg.block_gemm == BlockGemmPath::FakeQuant) {
    gemm_backend = "cpu";
    gemm_device = "CPU (float32 GEMMs of the dequantized operands)";
    gemm_algorithm = "fake quantization: float32 GEMM, k ascending, one float32 accumulator";
  }
  if (fp8 && !block) {
    scalers_.reserve(table.size() * kSiteOperands);
    for (size_t s = 0; s < table.size(); ++s) {
      scalers_.emplace_back(cfg.scaling, *cfg.forward_format);
      scalers_.emplace_back(cfg.scaling, *cfg.forward_format);
      scalers_.emplace_back(cfg.scaling, *cfg.backward_format);
    }
  }
  const int hl = fp8 && !block && isDelayed(cfg.scaling.kind) && cfg.record_history ? cfg.scaling.history_len : 0;
  std::vector<DiagnosticsRecorder::Operand> dops;
  for (size_t op = 0; op < table.size() * kSiteOperands; ++op) {
    const size_t s = SiteTable::siteOf(op);
    const SiteOperand k = SiteTable::operandOf(op);
    const bool linear = table[s].kind == SiteKind::Linear;
    const bool may_use_recipe = cfg.policy.mayUseRecipe(table[s], SitePrecision::Recipe);
    OperandHistory h;
    h.layer = table[s].path;
    h.operand = toString(k);
    if (!fp8)
      h.format = "FP32";
    else if (!linear)
      h.format = may_use_recipe && k != SiteOperand::OutputGrad ? "E4M3FN" : "FP32";
    else if (block) {
      const RoleQuantization q = cfg.recipe.role(recordedRole(k));
      h.format = q.format ? q.format->name() : std::string("FP32");
      h.quantization = std::string(toString(recordedRole(k))) + ": " + q.describe();
    } else {
      h.format = k == SiteOperand::OutputGrad ? cfg.backward_format->name() : cfg.forward_format->name();
    }
    h.history_len = linear ? hl : 0;
    DiagnosticsRecorder::Operand o;
    o.layer = h.layer;
    o.operand = h.operand;
    o.gradient = k == SiteOperand::OutputGrad;
    if (!linear) {
      o.quantized = false;
      o.quantization = h.format == "FP32" ? std::string("high precision (FP32)")
                                          : std::string("per-tensor current E4M3FN (attention in the recipe)");
    } else if (block) {
      o.quantized = cfg.recipe.role(recordedRole(k)).kind != RoleKind::HighPrecision && may_use_recipe;
      o.quantization = h.quantization;
    } else {
      o.quantized = fp8 && may_use_recipe;
      o.quantization = std::string("per-tensor ") + toString(cfg.scaling.kind) + " " + h.format;
    }
    operands.push_back(std::move(h));
    dops.push_back(std::move(o));
  }
  rec_ = std::make_unique<SiteRecorder>(table, fp8, cfg.on_nonfinite, operands, first);
  rec_->setDiagnostics(
      std::make_unique<DiagnosticsRecorder>(cfg.diagnostics, std::move(dops), total_steps, cfg.threads));
  ctx_.fp8 = fp8;
  ctx_.scaling = cfg.scaling;
  ctx_.recipe = cfg.recipe;
  ctx_.block_gemm = cfg.block_gemm;
  ctx_.forward_gemm = cfg.forward_gemm;
  ctx_.backward_gemm = cfg.backward_gemm;
  ctx_.policy = cfg.policy;
  ctx_.seed = cfg.seed;
  ctx_.threads = cfg.threads;
  ctx_.backend = backend;
  ctx_.recorder = rec_.get();
  ctx_.gemm_backend = &gemm_backend;
  ctx_.gemm_device = &gemm_device;
  ctx_.gemm_algorithm = &gemm_algorithm;
  ctx_.gemm_runs_gpu = &gemm_runs_gpu;
  ctx_.gemm_runs_cpu = &gemm_runs_cpu;
  ops_ = std::make_unique<SiteLinearOps>(table, ctx_, scalers_, softmax_scale);
}

SiteRun::~SiteRun() = default;

std::vector<Issue> trainingRunIssues(const std::vector<OperandHistory>& operands, int64_t steps_done,
                                     const NonFiniteRecord& first, bool stopped_nonfinite) {
  std::vector<Issue> out;
  for (const auto& h : operands) {
    int64_t sat = 0, sat_steps = 0, und = 0;
    for (size_t i = 0; i < h.saturated.size(); ++i) {
      sat += h.saturated[i];
      sat_steps += h.saturated[i] > 0;
      und += i < h.underflow.size() ? h.underflow[i] : 0;
    }
    if (sat > 0)
      out.push_back({Severity::Warning, "saturated", h.name(),
                     std::to_string(sat) + " elements clipped to ±max finite in " + std::to_string(sat_steps) + " of " +
                         std::to_string(steps_done) + " steps"});
    if (und > 0)
      out.push_back(
          {Severity::Info, "underflow", h.name(),
           std::to_string(und) + " non-zero elements flushed to zero over " + std::to_string(steps_done) + " steps"});
  }
  if (first.found)
    out.push_back({Severity::Error, "nonfinite", first.layer + "/" + first.tensor,
                   "first non-finite value: " + first.describe() +
                       (stopped_nonfinite ? "; the run stopped after that step" : "")});
  return out;
}

} // namespace fp8lab
