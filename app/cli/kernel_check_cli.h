// fp8lab-cli gemm — the flags of operands given as codes (--a-codes, --a-scales, ...) and of the
// kernel check (--observed, --max-ulp, ...): their table and the config they give are core's
// (core/experiment/kernel_check/kernel_check_flags.h), the check's report too (kernel_check_report.h).
#pragma once

#include "experiment/gemm/gemm_run.h"

#include <QCommandLineParser>
#include <QString>

namespace fp8lab::cli {

/// Adds the flags of kernelCheckFlags(): the codes operands' and the kernel check's.
void addKernelCheckOptions(QCommandLineParser& p);

/// Whether operand 'a' or 'b' is given as codes (--a-codes / --b-codes).
bool codesOperand(const QCommandLineParser& p, char operand);

/// Rewrites `cfg` (built from the other flags) with the codes operands and the kernel check of
/// the flags (fp8lab::applyKernelCheckFlags; numbers read by parseNumber). Returns "" or the error.
QString applyKernelCheckFlags(const QCommandLineParser& p, GemmExperimentConfig* cfg);

} // namespace fp8lab::cli
