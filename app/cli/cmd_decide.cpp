// fp8lab-cli decide SESSION.h5 [--metric KEY] — the session's answer to "which recipe?": the GEMM
// recipes ranked with 95 % intervals over seeds beside their cost, the training runs against the FP32
// baseline, the per-layer advice and the checkpoint what-if tables (core/experiment/decision/session_decision.h).
// fp8lab-cli report SESSION.h5 --out report.html|report.pdf — the same as a self-contained report
// (core/experiment/decision/session_report.h; PDF through fp8lab-render, which has Qt's PDF writer).
#include "cli_util.h"
#include "cmd_render.h"
#include "command.h"

#include "experiment/decision/session_decision_text.h"
#include "experiment/decision/session_report.h"

#include <QCommandLineParser>
#include <QFileInfo>
#include <QSaveFile>

#include <cstdio>

namespace fp8lab::cli {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

QCommandLineOption metricOption() {
  return QCommandLineOption(QStringLiteral("metric"),
                            QStringLiteral("Rank by this metric (%1).").arg(qs(rankingMetricKeys())),
                            QStringLiteral("KEY"));
}

int runDecide(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Answers \"which recipe?\" from a session: GEMM recipes ranked by a metric with the mean and 95 % interval over "
      "seeds (recipes whose intervals overlap share a rank: not distinguishable), each with its cost (bytes per "
      "element with scales, the total for the GEMM's operands, where it runs natively); training runs against the "
      "FP32 baseline; the per-layer advice of `fp8lab-cli advise`; the what-if tables of imported checkpoints. "
      "docs/decide.md walks through a decision."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  const QCommandLineOption metricOpt = metricOption();
  const QCommandLineOption js(QStringLiteral("json"), QStringLiteral("Machine-readable JSON output."));
  p.addOptions({metricOpt, js});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() != 1) return fail(QStringLiteral("decide needs one FILE.h5"));
  const QString file = p.positionalArguments()[0];
  auto rd = SessionReader::open(file.toStdString());
  if (!rd.ok()) return fail(qs(rd.errors()));
  SessionDecision d;
  try {
    d = decideSession(rd.value->info().runs, p.value(metricOpt).toStdString(), readerDatasetSource(*rd.value));
  } catch (const std::invalid_argument& e) {
    return fail(QStringLiteral("--metric: %1").arg(QString::fromUtf8(e.what())));
  }
  if (p.isSet(js)) {
    QJsonObject j = toQJson(sessionDecisionJson(d)).toObject();
    j.insert(QStringLiteral("file"), file);
    out(toJsonText(j) + "\n");
    return 0;
  }
  out(sessionDecisionText(d, file.toStdString()));
  return 0;
}

int runReport(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Writes a session report for sharing: one self-contained HTML file (inline figures, no scripts) with the "
      "answer, the GEMM ranking with intervals and cost, the training runs against FP32, the per-layer advice, the "
      "checkpoint what-if tables, every run's config and the versions. An --out ending in .pdf is drawn by "
      "fp8lab-render with Qt's PDF writer."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  const QCommandLineOption outOpt({QStringLiteral("o"), QStringLiteral("out")},
                                  QStringLiteral("The report: FILE.html (or .htm), or FILE.pdf."),
                                  QStringLiteral("FILE"));
  const QCommandLineOption metricOpt = metricOption();
  p.addOptions({outOpt, metricOpt});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() != 1) return fail(QStringLiteral("report needs one FILE.h5"));
  if (!p.isSet(outOpt)) return fail(QStringLiteral("--out FILE.html (or FILE.pdf) is required"));
  const QString file = p.positionalArguments()[0], outPath = p.value(outOpt);
  const QString suffix = QFileInfo(outPath).suffix().toLower();
  if (suffix == QStringLiteral("pdf")) {
    QStringList a{file, QStringLiteral("--report"), outPath};
    if (p.isSet(metricOpt)) a << QStringLiteral("--metric") << p.value(metricOpt);
    return runRenderer(a, QStringLiteral("report --out FILE.pdf"));
  }
  if (suffix != QStringLiteral("html") && suffix != QStringLiteral("htm"))
    return fail(QStringLiteral("--out: '%1' is neither .html nor .pdf").arg(outPath));
  auto rd = SessionReader::open(file.toStdString());
  if (!rd.ok()) return fail(qs(rd.errors()));
  const SessionInfo& info = rd.value->info();
  const ReportInput in =
      reportInput(info, QFileInfo(file).fileName().toStdString(), QFileInfo(file).absoluteFilePath().toStdString(),
                  p.value(metricOpt).toStdString());
  std::string html;
  try {
    html = sessionReportHtml(in, readerDatasetSource(*rd.value));
  } catch (const std::invalid_argument& e) {
    return fail(QStringLiteral("--metric: %1").arg(QString::fromUtf8(e.what())));
  }
  QSaveFile f(outPath); // atomic: the old report stays until the new one is complete
  if (!f.open(QIODevice::WriteOnly) || f.write(QByteArray::fromStdString(html)) < 0 || !f.commit())
    return fail(QStringLiteral("write failed: %1: %2").arg(outPath, f.errorString()));
  std::fprintf(stderr, "%s\n",
               QStringLiteral("report written: %1 (%2 runs)").arg(outPath).arg(info.runs.size()).toUtf8().constData());
  return 0;
}

const CommandRegistrar regDecide({QStringLiteral("decide"),
                                  QStringLiteral("Which recipe: ranking with intervals over seeds, cost, training vs "
                                                 "FP32, per-layer advice"),
                                  runDecide, 42});
const CommandRegistrar regReport({QStringLiteral("report"),
                                  QStringLiteral("A self-contained HTML (or PDF) report of a session for sharing"),
                                  runReport, 43});

} // namespace
} // namespace fp8lab::cli
