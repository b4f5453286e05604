// fp8lab-cli gemm — the flags of operands given as codes and scales (--a-codes, --a-scales, ...)
// and of the kernel check (--observed, --max-ulp, ...), turned into a GEMM config through the one
// config parser (core/experiment/gemm_config.h). The check's report is core/experiment/kernel_check_report.h.
#pragma once

#include "experiment/gemm_run.h"

#include <QCommandLineParser>
#include <QJsonObject>
#include <QString>

namespace fp8lab::cli {

/// Adds the codes-operand flags (--a-codes, --a-scales, --a-block, --a-scale-format,
/// --a-scale-layout, --a-transpose, --a-packed, --a-tensor-amax, --a-tensor-scale and the --b-*
/// twins) and the kernel-check flags (--observed, --reference, --atol, --rtol, --max-ulp,
/// --min-sqnr, --allow-nonfinite, --no-fit, --fit-bits, --fit-groups, --fit-intervals).
void addKernelCheckOptions(QCommandLineParser& p);

/// Whether operand 'a' or 'b' is given as codes (--a-codes / --b-codes).
bool codesOperand(const QCommandLineParser& p, char operand);

/// Rewrites `cfg` (built from the other flags) with the codes operands and the kernel check of
/// the flags, through parseGemmConfig: the same rules and refusals as a config file. Returns "" or
/// the error, with the config keys named as the flags (a.block → --a-block).
QString applyKernelCheckFlags(const QCommandLineParser& p, GemmExperimentConfig* cfg);

} // namespace fp8lab::cli
