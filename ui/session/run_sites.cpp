#include "session/run_sites.h"
#include "session/session_paths.h"

#include "training/sites.h"

#include <QObject>

#include <algorithm>
#include <limits>
#include <set>

namespace fp8lab::ui {

namespace {

/// The number at the end of "fc12" (12), for sorting fc2 before fc10; −1 when there is none.
int trailingNumber(const QString& layer) {
  qsizetype i = layer.size();
  while (i > 0 && layer[i - 1].isDigit()) --i;
  return i < layer.size() && layer.size() - i < 10 ? layer.mid(i).toInt() : -1;
}

} // namespace

QStringList runSites(const RunAccess& run) {
  QStringList out;
  for (const QString& s : run.attr(QStringLiteral("sites")).split(QLatin1Char(','), Qt::SkipEmptyParts))
    if (!s.trimmed().isEmpty()) out << s.trimmed();
  if (!out.isEmpty()) return out;
  out = viewNames(layout::operandLayers(layoutPaths(run.datasets())));
  std::stable_sort(out.begin(), out.end(), [](const QString& a, const QString& b) {
    const int na = trailingNumber(a), nb = trailingNumber(b);
    if (na != nb) return na < nb;
    return a < b;
  });
  return out;
}

int operandRank(const QString& op) {
  if (op == QStringLiteral("input")) return 0;
  if (op == QStringLiteral("kernel")) return 1;
  if (op == QStringLiteral("output_grad")) return 2;
  return 3;
}

SiteGroup siteGroup(const QString& path) {
  const SitePlace p = sitePlace(path.toStdString());
  SiteGroup g;
  g.block = p.block;
  g.key = QString::fromStdString(p.key);
  g.role = QString::fromStdString(p.role);
  if (p.role == "output")
    g.label = QObject::tr("block %1 output").arg(g.block);
  else if (p.role == "attn")
    g.label = QObject::tr("block %1 attention").arg(g.block);
  else if (p.role == "ffn")
    g.label = QObject::tr("block %1 FFN").arg(g.block);
  else if (p.block >= 0)
    g.label = QObject::tr("block %1 %2").arg(g.block).arg(g.role);
  else if (p.role == "head")
    g.label = QObject::tr("LM head");
  else if (p.role == "embedding")
    g.label = QObject::tr("embedding");
  return g;
}

double tensorOrder(const QString& tensor, const QStringList& sites) {
  const qsizetype i = sites.indexOf(tensor);
  if (i >= 0) return double(i);
  const SiteGroup g = siteGroup(tensor);
  if (g.role == QStringLiteral("embedding")) return -1.0;
  if (g.block >= 0) {
    // A block's output after the last site of its block; another tensor of the block (a norm's
    // gain) before its first.
    qsizetype first = -1, last = -1;
    for (qsizetype k = 0; k < sites.size(); ++k)
      if (siteGroup(sites[k]).block == g.block) {
        if (first < 0) first = k;
        last = k;
      }
    if (first >= 0) return g.role == QStringLiteral("output") ? double(last) + 0.5 : double(first) - 0.25;
  }
  return double(sites.size()) + 1.0;
}

void sortOperandPaths(QStringList* paths, const QStringList& sites) {
  std::stable_sort(paths->begin(), paths->end(), [&sites](const QString& a, const QString& b) {
    const QString la = a.section(QLatin1Char('/'), 0, 0), lb = b.section(QLatin1Char('/'), 0, 0);
    if (la != lb) {
      const double oa = tensorOrder(la, sites), ob = tensorOrder(lb, sites);
      if (oa != ob) return oa < ob;
      const int na = trailingNumber(la), nb = trailingNumber(lb);
      if (na != nb) return na < nb;
      return la < lb;
    }
    const QString opa = a.section(QLatin1Char('/'), 1), opb = b.section(QLatin1Char('/'), 1);
    const int ra = operandRank(opa), rb = operandRank(opb);
    if (ra != rb) return ra < rb;
    return opa < opb;
  });
}

} // namespace fp8lab::ui
