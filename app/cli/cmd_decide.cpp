// fp8lab-cli decide SESSION.h5 [--metric KEY] — the session's answer to "which recipe?": the GEMM
// recipes ranked with 95 % intervals over seeds beside their cost, the training runs against the FP32
// baseline, the per-layer advice and the checkpoint what-if tables (core/experiment/session_decision.h).
// fp8lab-cli report SESSION.h5 --out report.html|report.pdf — the same as a self-contained report
// (core/experiment/session_report.h; PDF through fp8lab-render, which has Qt's PDF writer).
#include "cli_util.h"
#include "cmd_render.h"
#include "command.h"

#include "experiment/session_decision.h"
#include "experiment/session_report.h"
#include "session/session.h"

#include <QCommandLineParser>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonObject>
#include <QSaveFile>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace fp8lab::cli {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

void err(const QString& s) {
  std::fprintf(stderr, "%s\n", s.toUtf8().constData());
}

DatasetSource readerSource(SessionReader* rd) {
  return [rd](const std::string& run, const std::string& path) -> std::optional<Dataset> {
    auto r = rd->read(run, path);
    if (!r.ok()) return std::nullopt;
    return std::move(r.value);
  };
}

QString metricHelp() {
  QStringList l;
  for (const RankingMetric& m : rankingMetrics()) l << qs(m.key);
  return l.join(QStringLiteral(", "));
}

QString pad(const QString& s, int w) {
  return s.size() >= w ? s + QLatin1Char(' ') : s.leftJustified(w);
}
QString rpad(const QString& s, int w) {
  return s.size() >= w ? s + QLatin1Char(' ') : s.rightJustified(w);
}

/// Whether every recipe of `setting` has at most one value: no intervals, so the order is no ranking.
bool oneSeedEach(const std::vector<RecipeInterval>& all, const std::string& setting) {
  for (const RecipeInterval& r : all)
    if (r.setting == setting && r.n_values > 1) return false;
  return true;
}

QJsonObject intervalJson(const RecipeInterval& r) {
  QJsonArray runs, seeds, values, ties;
  for (const auto& x : r.runs) runs.append(qs(x));
  for (uint64_t s : r.seeds) seeds.append(qint64(s));
  for (double v : r.values) values.append(jsonNumber(v));
  for (const auto& t : r.ties) ties.append(qs(t));
  return QJsonObject{{QStringLiteral("recipe"), qs(r.label)},
                     {QStringLiteral("setting"), qs(r.setting_label)},
                     {QStringLiteral("rank"), r.rank},
                     {QStringLiteral("place"), r.place},
                     {QStringLiteral("n"), r.n_values},
                     {QStringLiteral("mean"), jsonNumber(r.mean)},
                     {QStringLiteral("sd"), jsonNumber(r.sd)},
                     {QStringLiteral("half_width_95"), jsonNumber(r.half)},
                     {QStringLiteral("lo"), jsonNumber(r.lo)},
                     {QStringLiteral("hi"), jsonNumber(r.hi)},
                     {QStringLiteral("not_distinguishable_from"), ties},
                     {QStringLiteral("runs"), runs},
                     {QStringLiteral("seeds"), seeds},
                     {QStringLiteral("values"), values}};
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
  const QCommandLineOption metricOpt(
      QStringLiteral("metric"), QStringLiteral("Rank by this metric (%1).").arg(metricHelp()), QStringLiteral("KEY"));
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
    d = decideSession(rd.value->info().runs, p.value(metricOpt).toStdString(), readerSource(rd.value.get()));
  } catch (const std::invalid_argument& e) {
    return fail(QStringLiteral("--metric: %1").arg(QString::fromUtf8(e.what())));
  }
  if (p.isSet(js)) {
    QJsonArray gemm, training, advice, whatif;
    for (size_t i = 0; i < d.gemm.size(); ++i) {
      QJsonObject o = intervalJson(d.gemm[i]);
      if (const auto& c = d.gemm_cost[i]) {
        o.insert(QStringLiteral("cost"),
                 QJsonObject{{QStringLiteral("bytes_per_element"), jsonNumber(c->bytesPerElement())},
                             {QStringLiteral("bytes"), qint64(c->bytes())},
                             {QStringLiteral("a_bytes"), qint64(c->a.bytes())},
                             {QStringLiteral("b_bytes"), qint64(c->b.bytes())},
                             {QStringLiteral("a_scales"), qs(c->a.block + " " + c->a.kind->scale_format)},
                             {QStringLiteral("b_scales"), qs(c->b.block + " " + c->b.kind->scale_format)},
                             {QStringLiteral("native"), qs(c->native)},
                             {QStringLiteral("hardware"), qs(c->hardware)},
                             {QStringLiteral("source"), qs(c->source)}});
      }
      gemm.append(o);
    }
    for (size_t i = 0; i < d.training.size(); ++i) {
      QJsonObject o = intervalJson(d.training[i]);
      o.insert(QStringLiteral("baseline"), d.training[i].baseline);
      const int b = d.baselineOf(i);
      o.insert(QStringLiteral("delta_vs_fp32"),
               jsonNumber(b >= 0 ? d.training[i].mean - d.training[size_t(b)].mean : NAN));
      training.append(o);
    }
    for (const AdviceTable& a : d.advice) {
      QJsonArray groups;
      for (const AdviceGroupRow& g : a.groups)
        groups.append(QJsonObject{{QStringLiteral("group"), qs(g.group)},
                                  {QStringLiteral("delta"), jsonNumber(g.delta)},
                                  {QStringLiteral("spread"), jsonNumber(g.spread)},
                                  {QStringLiteral("share"), jsonNumber(g.share)},
                                  {QStringLiteral("sqnr_db"), jsonNumber(g.sqnr_db)},
                                  {QStringLiteral("keep_high"), g.keep_high}});
      advice.append(QJsonObject{{QStringLiteral("run"), qs(a.run_id)},
                                {QStringLiteral("advised_run"), qs(a.advised_run)},
                                {QStringLiteral("policy"), qs(a.policy)},
                                {QStringLiteral("groups"), groups}});
    }
    for (const WhatIfTable& t : d.what_if) {
      QJsonArray rows;
      for (const CheckpointSqnr& r : t.rows) {
        QJsonObject w;
        for (const auto& [id, v] : r.what_if_db) w.insert(qs(id), jsonNumber(v));
        rows.append(QJsonObject{{QStringLiteral("tensor"), qs(r.tensor)},
                                {QStringLiteral("stored_db"), jsonNumber(r.stored_db)},
                                {QStringLiteral("what_if_db"), w}});
      }
      whatif.append(QJsonObject{{QStringLiteral("run"), qs(t.run_id)}, {QStringLiteral("tensors"), rows}});
    }
    out(toJsonText(QJsonObject{{QStringLiteral("file"), file},
                               {QStringLiteral("gemm_metric"), qs(d.gemm_metric->key)},
                               {QStringLiteral("gemm_higher_is_better"), d.gemm_metric->higher_better},
                               {QStringLiteral("gemm"), gemm},
                               {QStringLiteral("training_metric"), qs(d.training_metric->key)},
                               {QStringLiteral("training"), training},
                               {QStringLiteral("advice"), advice},
                               {QStringLiteral("what_if"), whatif}}) +
        "\n");
    return 0;
  }
  QString t;
  const RankingMetric& gm = *d.gemm_metric;
  const QString gunit = gm.unit == "1" ? QString() : QStringLiteral(" (%1)").arg(qs(gm.unit));
  t += QStringLiteral("GEMM recipes ranked by %1%2, %3 is better: mean ± 95 % interval over seeds\n")
           .arg(qs(gm.label), gunit, gm.higher_better ? QStringLiteral("higher") : QStringLiteral("lower"));
  if (d.gemm.empty()) t += QStringLiteral("  %1\n").arg(qs(hintGemmRanking()));
  std::string setting;
  for (size_t i = 0; i < d.gemm.size(); ++i) {
    const RecipeInterval& r = d.gemm[i];
    if (r.setting != setting) {
      setting = r.setting;
      t += QStringLiteral("\n  %1 (%2×%3 · %3×%4)\n").arg(qs(r.setting_label)).arg(r.m).arg(r.k).arg(r.n);
      if (oneSeedEach(d.gemm, r.setting))
        t += QStringLiteral("  one seed per recipe: no intervals, the order is not a ranking (sweep with \"seeds\": "
                            "[1, 2, 3, 4, 5] or --seeds 1-5)\n");
      t += QStringLiteral("  ") + pad(QStringLiteral("rank"), 6) + pad(QStringLiteral("recipe"), 42) +
           rpad(QStringLiteral("mean ± 95 %"), 18) + rpad(QStringLiteral("sd"), 9) + rpad(QStringLiteral("n"), 4) +
           rpad(QStringLiteral("B/elem"), 9) + rpad(QStringLiteral("A+B"), 12) + QStringLiteral("  native\n");
    }
    const auto& c = d.gemm_cost[i];
    t += QStringLiteral("  ") + pad(qs(rankText(r, d.gemm)), 6) + pad(qs(r.label), 42) + rpad(qs(intervalText(r)), 18) +
         rpad(std::isfinite(r.sd) ? QString::number(r.sd, 'g', 3) : QStringLiteral("—"), 9) +
         rpad(QString::number(r.n_values), 4) +
         rpad(c ? qs(bytesPerElementText(c->bytesPerElement())) : QStringLiteral("—"), 9) +
         rpad(c ? qs(bytesText(double(c->bytes()))) : QStringLiteral("—"), 12) + QStringLiteral("  ") +
         (c ? qs(c->hardware) : QStringLiteral("—")) + QLatin1Char('\n');
  }
  if (!d.gemm.empty())
    t += QStringLiteral("\n  rank = 1 + the recipes whose whole 95 % interval is better; '=' marks a rank shared by "
                        "recipes whose intervals overlap (not distinguishable). B/elem: bytes per element of A and B "
                        "with their scales in the native layout; `--json` gives each recipe's layout and hardware in "
                        "full.\n");
  const RankingMetric& tm = *d.training_metric;
  const QString tunit = tm.unit == "1" ? QString() : QStringLiteral(" (%1)").arg(qs(tm.unit));
  t += QStringLiteral("\nTraining runs: %1%2 against the FP32 baseline, %3 is better\n")
           .arg(qs(tm.label), tunit, tm.higher_better ? QStringLiteral("higher") : QStringLiteral("lower"));
  if (d.training.empty()) t += QStringLiteral("  %1\n").arg(qs(hintTraining()));
  std::string tsetting;
  int label_width = 0; // the widest recipe label of the setting, so the columns line up
  for (size_t i = 0; i < d.training.size(); ++i) {
    const RecipeInterval& r = d.training[i];
    if (r.setting != tsetting) {
      tsetting = r.setting;
      label_width = 6;
      for (const RecipeInterval& o : d.training)
        if (o.setting == r.setting) label_width = std::max(label_width, int(qs(o.label).size()) + 2);
      t += QStringLiteral("\n  %1%2\n")
               .arg(qs(r.setting_label),
                    d.baselineOf(i) < 0 ? QStringLiteral(" (no FP32 run: no baseline)") : QString());
      if (oneSeedEach(d.training, r.setting))
        t += QStringLiteral("  one seed per recipe: no intervals, the order is not a ranking (differences this small "
                            "may be seed noise: repeat the runs with other seeds)\n");
      t += QStringLiteral("  ") + pad(QStringLiteral("rank"), 6) + pad(QStringLiteral("recipe"), label_width) +
           rpad(QStringLiteral("mean ± 95 %"), 18) + rpad(QStringLiteral("Δ vs FP32"), 12) + QStringLiteral("  n\n");
    }
    const int b = d.baselineOf(i);
    const double delta = b >= 0 && r.n_values > 0 ? r.mean - d.training[size_t(b)].mean : NAN;
    t += QStringLiteral("  ") + pad(qs(rankText(r, d.training)), 6) + pad(qs(r.label), label_width) +
         rpad(qs(intervalText(r)), 18) +
         rpad(r.baseline             ? QStringLiteral("baseline")
              : std::isfinite(delta) ? QString::asprintf("%+.4g", delta)
                                     : QStringLiteral("—"),
              12) +
         QStringLiteral("  %1\n").arg(r.n_values);
  }
  t += QStringLiteral("\nPer-layer advice\n");
  if (d.advice.empty()) t += QStringLiteral("  %1\n").arg(qs(hintAdvice()));
  for (const AdviceTable& a : d.advice) {
    t += QStringLiteral("  run %1 (%2 seed(s), %3 steps): %4 all high %5, all in the recipe %6\n")
             .arg(qs(a.advised_run))
             .arg(a.seeds)
             .arg(a.steps)
             .arg(qs(a.loss_name), QString::number(a.high_loss, 'g', 5), QString::number(a.full_loss, 'g', 5));
    for (const AdviceGroupRow& g : a.groups)
      t += QStringLiteral("    %1 Δ %2 ± %3  %4\n")
               .arg(pad(qs(g.group), 18), QString::asprintf("%+.4f", g.delta), QString::asprintf("%.4f", g.spread),
                    g.keep_high ? QStringLiteral("keep in high precision") : QStringLiteral("low precision"));
    t += QStringLiteral("    policy: %1\n").arg(a.policy.empty() ? QStringLiteral("(none)") : qs(a.policy));
  }
  t += QStringLiteral("\nCheckpoint what-if\n");
  if (d.what_if.empty()) t += QStringLiteral("  %1\n").arg(qs(hintWhatIf()));
  for (const WhatIfTable& w : d.what_if) {
    t += QStringLiteral("  %1: SQNR (dB) stored").arg(qs(w.run_id));
    for (const auto& id : w.recipes) t += QStringLiteral(" | %1").arg(qs(id));
    t += QLatin1Char('\n');
    for (const CheckpointSqnr& r : w.rows) {
      t += QStringLiteral("    %1 %2").arg(pad(qs(r.tensor), 40), QString::number(r.stored_db, 'f', 2));
      for (const auto& [id, v] : r.what_if_db) t += QStringLiteral(" | %1").arg(QString::number(v, 'f', 2));
      t += QLatin1Char('\n');
    }
  }
  out(t);
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
  const QCommandLineOption metricOpt(
      QStringLiteral("metric"), QStringLiteral("Rank by this metric (%1).").arg(metricHelp()), QStringLiteral("KEY"));
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
  ReportInput in;
  in.title = QFileInfo(file).fileName().toStdString();
  in.path = QFileInfo(file).absoluteFilePath().toStdString();
  in.format_version = info.format_version;
  in.app_version = info.app_version;
  in.created_utc = info.created_utc;
  in.runs = info.runs;
  in.metric = p.value(metricOpt).toStdString();
  std::string html;
  try {
    html = sessionReportHtml(in, readerSource(rd.value.get()));
  } catch (const std::invalid_argument& e) {
    return fail(QStringLiteral("--metric: %1").arg(QString::fromUtf8(e.what())));
  }
  QSaveFile f(outPath); // atomic: the old report stays until the new one is complete
  if (!f.open(QIODevice::WriteOnly) || f.write(QByteArray::fromStdString(html)) < 0 || !f.commit())
    return fail(QStringLiteral("write failed: %1: %2").arg(outPath, f.errorString()));
  err(QStringLiteral("report written: %1 (%2 runs)").arg(outPath).arg(info.runs.size()));
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
