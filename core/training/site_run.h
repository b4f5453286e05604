// FP8 Lab — the sites of one training run, wired the same way for every model: the per-tensor
// scaling states of every operand, the recorder (operand histories, per-block statistics and
// what-if recipes, the first non-finite value), the context the sites share and the LinearOps
// the model runs its GEMMs through (SiteLinearOps). A model's run (trainer.cpp, lm_trainer.cpp)
// builds one SiteRun from its TrainingRunConfig and its SiteTable, and hands ops() to the model.
//
// What each operand records (OperandHistory, diagnostics): per-tensor runs the run's formats
// (forward_format for input and kernel, backward_format for the output gradient, TE HYBRID) and
// their scaling states; block recipes the role each recorded operand stands for — input records
// fprop.input, kernel fprop.weight, output_grad wgrad.grad_output (the one gradient copy every
// Linear layer has). Attention matmuls are FP32 unless the policy puts them in the recipe: then
// their inputs are cast to E4M3FN (per-tensor current scaling; the softmax with its fixed
// multiplier) and their gradients stay FP32; they keep no amax history.
#pragma once

#include "common/issue.h"
#include "gemm/gemm.h"
#include "training/linear_site.h"
#include "training/run_config.h"

#include <memory>
#include <string>
#include <vector>

namespace fp8lab {

class SiteRun {
public:
  /// `table`: the model's sites (must outlive this); `total_steps`: the run's optimizer steps
  /// (the diagnostics' cadence). `operands` (filled here: kSiteOperands per site, in
  /// SiteTable::operandIndex order) and `first` live in the run's result, and so do `gemm_backend`,
  /// `gemm_device` and `gemm_algorithm` (where the GEMMs ran: set here for fake-quantized block
  /// recipes, else by the first low-precision GEMM), and `gemm_runs_gpu` / `gemm_runs_cpu` (how
  /// many of its low-precision GEMMs ran on each side). `backend` (not owned; null: the CPU
  /// reference backend) runs low-precision runs' GEMMs. `softmax_scale`: the quant multiplier of
  /// FP8 attention's P cast.
  SiteRun(const TrainingRunConfig& cfg, const SiteTable& table, int64_t total_steps, GemmBackend* backend,
          float softmax_scale, std::vector<OperandHistory>& operands, NonFiniteRecord& first, std::string& gemm_backend,
          std::string& gemm_device, std::string& gemm_algorithm, int64_t& gemm_runs_gpu, int64_t& gemm_runs_cpu);
  ~SiteRun();
  SiteRun(const SiteRun&) = delete;
  SiteRun& operator=(const SiteRun&) = delete;

  SiteRecorder& recorder() { return *rec_; }
  SiteLinearOps& ops() { return *ops_; }
  /// The per-tensor scaling states (kSiteOperands per site; empty for block recipes and FP32
  /// runs). Evaluation copies them, so it never advances the training state.
  const std::vector<OperandScaler>& scalers() const { return scalers_; }

private:
  std::unique_ptr<GemmBackend> own_backend_;
  std::vector<OperandScaler> scalers_;
  std::unique_ptr<SiteRecorder> rec_;
  SiteRunContext ctx_;
  std::unique_ptr<SiteLinearOps> ops_;
};

/// The end-of-run issues of a training run: per operand, the elements clipped to ±max finite
/// (Warning) and the non-zero elements flushed to zero (Info) over `steps_done` steps; the first
/// non-finite value (Error, saying whether the run stopped there).
std::vector<Issue> trainingRunIssues(const std::vector<OperandHistory>& operands, int64_t steps_done,
                                     const NonFiniteRecord& first, bool stopped_nonfinite);

} // namespace fp8lab
