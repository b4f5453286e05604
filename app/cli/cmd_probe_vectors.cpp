// fp8lab-cli probe-vectors — operands and C that tell the accumulation models apart in one run of a
// kernel (core/gemm/probe_vectors.h), written as .npy for the kernel's test, with the gemm command
// that checks its output.
#include "cli_util.h"
#include "command.h"

#include "gemm/probe_vectors.h"
#include "io/npy_writer.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>

#include <cstdio>

namespace fp8lab::cli {
namespace {

int runProbeVectors(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Write FP8 operands A [M,K], B [K,N] (uint8 codes, per-tensor scale 1) and C [M,N] (float32) that tell the\n"
      "accumulation models apart in one run of your kernel. Run D = A·B + C (alpha 1, beta 1, FP32 D), save D as\n"
      "d.npy and check it:\n"
      "  fp8lab-cli gemm --a-codes DIR/a.npy --a-scales 1 --b-codes DIR/b.npy --b-scales 1 --a-format F \\\n"
      "      --b-format F --c-file DIR/c.npy --beta 1 --observed d.npy\n"
      "The fit line names the model your kernel computes; the verdict compares with --reference (exact by\n"
      "default, which no tensor core matches): pin the named preset with --reference PRESET in CI\n"
      "(docs/gemm.md, \"Which instruction does my kernel use\")."));
  p.addOption({QStringLiteral("out"), QStringLiteral("Folder to write a.npy, b.npy, c.npy and probe.json into."),
               QStringLiteral("DIR")});
  p.addOption({QStringLiteral("format"), QStringLiteral("Element format of A and B: E4M3FN (default) or E5M2."),
               QStringLiteral("F"), QStringLiteral("E4M3FN")});
  p.addOption({QStringLiteral("m"), QStringLiteral("Rows of A and D (default 64)."), QStringLiteral("M"),
               QStringLiteral("64")});
  p.addOption({QStringLiteral("n"), QStringLiteral("Columns of B and D (default 64)."), QStringLiteral("N"),
               QStringLiteral("64")});
  p.addOption({QStringLiteral("k"),
               QStringLiteral("Inner dimension (default 1024: two windows of the largest promotion interval the fit "
                              "tries)."),
               QStringLiteral("K"), QStringLiteral("1024")});
  p.addOption({QStringLiteral("seed"), QStringLiteral("Seed of the random codes (default 1)."), QStringLiteral("S"),
               QStringLiteral("1")});
  p.addOption({QStringLiteral("no-check"),
               QStringLiteral("Skip running every candidate model on the probes (the check of how well they "
                              "separate the models; 20–40 s on 2 cores at the default size).")});
  p.addOption({QStringLiteral("json"), QStringLiteral("Machine-readable JSON: the files, the call, the check.")});
  p.addOption({{QStringLiteral("q"), QStringLiteral("quiet")}, QStringLiteral("No progress output.")});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (!p.positionalArguments().isEmpty())
    return fail(QStringLiteral("unexpected argument '%1'").arg(p.positionalArguments().first()));
  const QString dir = p.value(QStringLiteral("out"));
  if (dir.isEmpty()) return fail(QStringLiteral("probe-vectors needs --out DIR"));
  ProbeOptions o;
  o.format = p.value(QStringLiteral("format")).toStdString();
  bool ok_m = false, ok_n = false, ok_k = false, ok_s = false;
  o.m = p.value(QStringLiteral("m")).toLongLong(&ok_m);
  o.n = p.value(QStringLiteral("n")).toLongLong(&ok_n);
  o.k = p.value(QStringLiteral("k")).toLongLong(&ok_k);
  o.seed = p.value(QStringLiteral("seed")).toULongLong(&ok_s);
  if (!ok_m || !ok_n || !ok_k || o.m < 1 || o.n < 1 || o.m > 4096 || o.n > 4096 || o.k < 32 || o.k > 65536)
    return fail(QStringLiteral("--m and --n must be whole numbers in 1..4096 and --k in 32..65536"));
  if (!ok_s) return fail(QStringLiteral("--seed must be an unsigned 64-bit integer"));
  o.check = !p.isSet(QStringLiteral("no-check"));
  const bool json = p.isSet(QStringLiteral("json")), quiet = p.isSet(QStringLiteral("quiet"));
  if (!QDir().mkpath(dir)) return fail(QStringLiteral("cannot create the folder '%1'").arg(dir));
  TerminalProgress bar(QStringLiteral("probe-vectors"));
  ProbeVectors pv;
  try {
    pv = makeProbeVectors(o, [&](double f, const std::string& st) {
      if (!quiet) bar.update(f, QString::fromStdString(st));
      return true;
    });
  } catch (const std::exception& e) {
    bar.finish();
    return fail(QString::fromStdString(e.what()));
  }
  bar.finish();
  const QString a = QDir(dir).filePath(QStringLiteral("a.npy")), b = QDir(dir).filePath(QStringLiteral("b.npy")),
                c = QDir(dir).filePath(QStringLiteral("c.npy"));
  for (const auto& [path, st] : {std::pair{a, writeNpy(a.toStdString(), {o.m, o.k}, pv.a.codes)},
                                 std::pair{b, writeNpy(b.toStdString(), {o.k, o.n}, pv.b.codes)},
                                 std::pair{c, writeNpy(c.toStdString(), {o.m, o.n}, pv.c)}})
    if (!st.ok()) return fail(QStringLiteral("%1: %2").arg(path, QString::fromStdString(st.errors())));
  const QString check = QStringLiteral("fp8lab-cli gemm --a-codes %1 --a-scales 1 --b-codes %2 --b-scales 1 "
                                       "--a-format %3 --b-format %3 --c-file %4 --beta 1 --observed d.npy")
                            .arg(a, b, QString::fromStdString(pv.a.format->name()), c);
  QJsonObject j{{QStringLiteral("a"), a},
                {QStringLiteral("b"), b},
                {QStringLiteral("c"), c},
                {QStringLiteral("format"), QString::fromStdString(pv.a.format->name())},
                {QStringLiteral("m"), double(o.m)},
                {QStringLiteral("n"), double(o.n)},
                {QStringLiteral("k"), double(o.k)},
                {QStringLiteral("seed"), QString::number(o.seed)},
                {QStringLiteral("call"), QStringLiteral("D = A·B + C: alpha 1, beta 1, A and B scales 1, FP32 D")},
                {QStringLiteral("check"), check}};
  if (o.check) {
    QJsonArray ties;
    for (const auto& t : pv.reference_ties) ties.append(QString::fromStdString(t));
    j[QStringLiteral("candidate_models")] = double(pv.candidates);
    j[QStringLiteral("distinct_outputs")] = double(pv.distinct);
    j[QStringLiteral("reference_ties")] = ties;
  }
  QFile meta(QDir(dir).filePath(QStringLiteral("probe.json")));
  if (!meta.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
      meta.write(QByteArray::fromStdString(toJsonText(j))) < 0)
    return fail(QStringLiteral("cannot write %1").arg(meta.fileName()));
  meta.close();
  if (json) {
    out(toJsonText(j));
    return 0;
  }
  QString t = QStringLiteral("wrote %1 (%2 x %3 %4 codes), %5 (%3 x %6), %7 (%2 x %6 float32) and %8\n")
                  .arg(a)
                  .arg(o.m)
                  .arg(o.k)
                  .arg(QString::fromStdString(pv.a.format->name()))
                  .arg(b)
                  .arg(o.n)
                  .arg(c)
                  .arg(meta.fileName());
  t += QStringLiteral("run your kernel as D = A·B + C (alpha 1, beta 1, unit scales, FP32 D), save D as d.npy, "
                      "then:\n  %1\nthe fit line names your kernel's model (the verdict compares with --reference, "
                      "exact by default: pin the named preset with --reference PRESET in CI)\n")
           .arg(check);
  if (o.check) t += QString::fromStdString(pv.summary) + QLatin1Char('\n');
  out(t);
  return 0;
}

const CommandRegistrar reg({QStringLiteral("probe-vectors"),
                            QStringLiteral("Operands that tell the accumulation models apart in one kernel run."),
                            runProbeVectors, 56});

} // namespace
} // namespace fp8lab::cli
