// fp8lab-cli scale-layout — the block-scale layouts kernels read (core/scaling/kernel_layout.h):
// where a scale sits (index), and a row-major scale grid written into a layout (pack) or read out of
// one (unpack), bit for bit.
#include "cli_util.h"
#include "command.h"

#include "experiment/scaling_report.h"
#include "io/scale_file.h"
#include "scaling/kernel_layout.h"

#include <QCommandLineParser>

#include <iostream>

namespace fp8lab::cli {
namespace {

QString S(const std::string& s) {
  return QString::fromStdString(s);
}

int runScaleLayout(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(
      QString(QStringLiteral(
          "The block-scale layouts of cuBLASLt and DeepGEMM (docs/gemm.md, \"Scale layouts\").\n"
          "  scale-layout index  --layout L --outer O --k-blocks KB [--at O,KB]   where a scale sits\n"
          "  scale-layout pack   --layout L --outer O --k-blocks KB GRID.npy OUT.npy   row-major grid [O, KB] -> "
          "layout\n"
          "  scale-layout unpack --layout L --outer O --k-blocks KB IN.npy GRID.npy    layout -> row-major grid\n"
          "O = scale rows along M (A) or N (B) (BLK128x128: blocks of 128 of them), KB = blocks along K.\n"
          "Layouts: ")) +
      S(scaleLayoutNames()));
  p.addPositionalArgument(QStringLiteral("ACTION"), QStringLiteral("index | pack | unpack"));
  p.addOption({QStringLiteral("layout"), QStringLiteral("The layout."), QStringLiteral("L")});
  p.addOption({QStringLiteral("outer"), QStringLiteral("Scale rows along M or N."), QStringLiteral("O")});
  p.addOption({QStringLiteral("k-blocks"), QStringLiteral("Scale blocks along K."), QStringLiteral("KB")});
  p.addOption(
      {QStringLiteral("at"), QStringLiteral("index: the grid element O,KB (default: all)."), QStringLiteral("O,KB")});
  p.addOption({QStringLiteral("json"),
               QStringLiteral("Machine-readable JSON: index prints {layout, storage_elements, unit, scales: [{outer, "
                              "k_block, offset}]}, pack and unpack {file}.")});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  const QStringList pos = p.positionalArguments();
  if (pos.isEmpty()) return fail(QStringLiteral("scale-layout needs an action: index, pack or unpack"));
  const QString action = pos[0];
  const auto layout = parseScaleLayout(p.value(QStringLiteral("layout")).toStdString());
  if (!layout)
    return fail(
        QStringLiteral("--layout: unknown '%1' (%2)").arg(p.value(QStringLiteral("layout")), S(scaleLayoutNames())));
  bool ok1 = false, ok2 = false;
  const qlonglong outer = p.value(QStringLiteral("outer")).toLongLong(&ok1);
  const qlonglong kb = p.value(QStringLiteral("k-blocks")).toLongLong(&ok2);
  if (!ok1 || !ok2 || outer < 1 || kb < 1 || outer > (1 << 24) || kb > (1 << 24))
    return fail(QStringLiteral("--outer and --k-blocks must be whole numbers >= 1"));
  const ScaleGridShape g{outer, kb};
  const bool json = p.isSet(QStringLiteral("json"));
  if (action == QStringLiteral("index")) {
    if (pos.size() != 1) return fail(QStringLiteral("index takes no files"));
    std::vector<std::pair<int64_t, int64_t>> at;
    if (p.isSet(QStringLiteral("at"))) {
      const QStringList v = p.value(QStringLiteral("at")).split(QLatin1Char(','));
      bool a = false, b = false;
      const qlonglong o = v.size() == 2 ? v[0].trimmed().toLongLong(&a) : 0;
      const qlonglong k = v.size() == 2 ? v[1].trimmed().toLongLong(&b) : 0;
      if (!a || !b || o < 0 || k < 0 || o >= outer || k >= kb)
        return fail(QStringLiteral("--at must be O,KB inside the grid [%1, %2]").arg(outer).arg(kb));
      at.push_back({o, k});
    } else {
      if (outer * kb > 4096) {
        // Large grids are streamed, one buffer at a time, instead of being built in memory.
        std::fflush(stdout);
        if (!writeScaleIndexGrid(*layout, g, json, std::cout)) return fail(QStringLiteral("could not write the index"));
        std::cout.flush();
        return 0;
      }
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < kb; ++k) at.push_back({o, k});
    }
    out(json ? toJsonText(toQJson(scaleIndexJson(*layout, g, at))) + "\n" : scaleIndexText(*layout, g, at));
    return 0;
  }
  if (action != QStringLiteral("pack") && action != QStringLiteral("unpack"))
    return fail(QStringLiteral("unknown action '%1' (index, pack, unpack)").arg(action));
  if (pos.size() != 3) return fail(QStringLiteral("%1 needs IN.npy and OUT.npy").arg(action));
  const std::string in = pos[1].toStdString(), outp = pos[2].toStdString();
  const std::string e =
      action == QStringLiteral("pack") ? packScaleFile(*layout, g, in, outp) : unpackScaleFile(*layout, g, in, outp);
  if (!e.empty()) return fail(S(e));
  if (!json)
    std::fprintf(stderr, "wrote %s\n", outp.c_str());
  else
    out(toJsonText(QJsonObject{{QStringLiteral("file"), pos[2]}}) + "\n");
  return 0;
}

const CommandRegistrar reg({QStringLiteral("scale-layout"),
                            QStringLiteral("Block-scale layouts of cuBLASLt / DeepGEMM: index, pack, unpack."),
                            runScaleLayout, 55});

} // namespace
} // namespace fp8lab::cli
