#include "session/block_stats.h"

#include "session/run_sites.h"
#include "session/session_paths.h"
#include "session/session_document.h"

#include <QJsonObject>

#include <QObject>

#include <algorithm>
#include <set>

namespace fp8lab::ui {

bool mayHoldBlockStats(const RunRecord& r) {
  if (r.kind != QStringLiteral("training")) return false;
  const QJsonObject dg = r.config.value(QStringLiteral("diagnostics")).toObject();
  if (dg.contains(QStringLiteral("what_if"))) return true;
  if (r.config.value(QStringLiteral("precision")).toString() == QStringLiteral("fp32")) return false;
  return dg.value(QStringLiteral("block_stats")).toBool(true);
}

QString noTrainedBlockStatsText(const RunRecord& r) {
  if (r.kind == QStringLiteral("training")) {
    const QJsonObject dg = r.config.value(QStringLiteral("diagnostics")).toObject();
    if (r.config.value(QStringLiteral("precision")).toString() == QStringLiteral("fp32"))
      return QObject::tr(
                 "Run %1 is an FP32 run: it quantizes nothing, so it has no per-block statistics of its own.\n"
                 "Add \"diagnostics\": {\"what_if\": {\"recipes\": [\"te_current\", \"mx_rceil\"]}} to "
                 "its config to measure FP8 recipes on its tensors (docs/training.md, \u201cWhat-if recipes\u201d).")
          .arg(r.id);
    if (!dg.value(QStringLiteral("block_stats")).toBool(true))
      return QObject::tr("Run %1 was trained with \"diagnostics\": {\"block_stats\": false}: no per-block "
                         "statistics.\nRerun it without that setting (block statistics are on by default; "
                         "docs/training.md, \u201cPer-block statistics\u201d).")
          .arg(r.id);
    return QObject::tr("Run %1 has no per-block statistics (block_stats/): it was recorded by an older version.\n"
                       "Rerun it (fp8lab-cli rerun) to record them.")
        .arg(r.id);
  }
  if (r.kind.startsWith(QStringLiteral("gemm")) || r.kind == QStringLiteral("checkpoint"))
    return QObject::tr("Run %1 is a %2 run: one quantization, no training steps.\nIts blocks are in the Block map "
                       "view.")
        .arg(r.id, r.kind);
  return QObject::tr("Run %1 (%2) has no per-block statistics.").arg(r.id, r.kind);
}

bool hasTrainedBlockStats(const RunAccess& run) {
  return !layout::blockStatOperands(layoutPaths(run.datasets())).empty();
}

std::vector<OperandRow> blockStatOperands(const RunAccess& run) {
  const std::vector<std::string> datasets = layoutPaths(run.datasets());
  std::vector<layout::LayerOperand> found = layout::blockStatOperands(datasets);
  if (found.empty()) found = layout::whatIfOperands(datasets);
  QStringList paths;
  for (const auto& [l, o] : found) paths << QString::fromStdString(l + "/" + o);
  sortOperandPaths(&paths, runSites(run));
  std::vector<OperandRow> rows;
  for (const QString& p : paths) rows.push_back({p.section(QLatin1Char('/'), 0, 0), p.section(QLatin1Char('/'), 1)});
  return rows;
}

QStringList whatIfRecipes(const RunAccess& run) {
  QStringList out;
  for (const QString& r :
       run.groupAttr(sessionPath(layout::kWhatIf), QStringLiteral("recipes")).split(QLatin1Char(',')))
    if (!r.trimmed().isEmpty()) out << r.trimmed();
  if (!out.isEmpty()) return out;
  return viewNames(layout::whatIfRecipes(layoutPaths(run.datasets())));
}

NonfiniteJump nonfiniteJump(const RunAccess& run, const std::vector<OperandRow>& given) {
  NonfiniteJump j;
  const QString g = QStringLiteral("nonfinite");
  if (run.groupAttr(g, QStringLiteral("found")).toLongLong() != 1) return j;
  j.found = true;
  j.step = run.groupAttr(g, QStringLiteral("step")).toLongLong();
  j.layer = run.groupAttr(g, QStringLiteral("layer"));
  j.tensor = run.groupAttr(g, QStringLiteral("tensor"));
  j.kind = run.groupAttr(g, QStringLiteral("kind"));
  j.description = run.groupAttr(g, QStringLiteral("description"));
  const std::vector<OperandRow> rows = given.empty() ? blockStatOperands(run) : given;
  auto exists = [&rows](const QString& path) {
    return std::any_of(rows.begin(), rows.end(), [&path](const OperandRow& r) { return r.path() == path; });
  };
  QString layer = j.layer;
  if ((layer == QStringLiteral("loss") || layer == QStringLiteral("loss_grad")) && !rows.empty()) {
    // The loss belongs to the last site (the MLP's layer with the highest number, lm_head).
    layer = rows.back().layer;
  }
  QString op;
  if (j.kind == QStringLiteral("gemm_output")) {
    const QString a = run.groupAttr(g, QStringLiteral("a_operand"));
    if (exists(a)) j.operand = a;
    return j;
  }
  if (j.tensor == QStringLiteral("fprop.input") || j.tensor == QStringLiteral("input"))
    op = QStringLiteral("input");
  else if (j.tensor == QStringLiteral("fprop.weight") || j.tensor == QStringLiteral("weight"))
    op = QStringLiteral("kernel");
  else if (j.tensor == QStringLiteral("wgrad.grad_output") || j.tensor == QStringLiteral("output_grad") ||
           j.tensor == QStringLiteral("loss_grad"))
    op = QStringLiteral("output_grad");
  if (!op.isEmpty() && exists(layer + QLatin1Char('/') + op)) j.operand = layer + QLatin1Char('/') + op;
  return j;
}

} // namespace fp8lab::ui
