// fp8lab-cli checkpoint — FP8 checkpoints in safetensors (core/io/fp8_checkpoint.h):
//   checkpoint list FILE.safetensors                 the FP8 tensors with their scale layout
//   checkpoint show FILE TENSOR [--scale NAME]       codes, scales and decoded values
//   checkpoint requantize FILE TENSOR --scaling P    what preset P would store; SQNR vs the file
//   checkpoint export SESSION.h5 RUN --layout L --out F.safetensors   a training run's weights
//                                                    (the MLP, or a language model by its sites)
//   checkpoint import FILE --out SESSION.h5 [--tensor T]... [--what-if IDS]   a run of the session
#include "cli_util.h"
#include "cmd_run.h"
#include "command.h"

#include "experiment/checkpoint_export.h"
#include "experiment/checkpoint_run.h"
#include "formats/format.h"
#include "io/fp8_checkpoint_report.h"

#include <QCommandLineParser>

#include <algorithm>
#include <cstdio>

namespace fp8lab::cli {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

int printJson(const Json& j) {
  out(toJsonText(toQJson(j)) + "\n");
  return 0;
}

/// Prints the warnings of `st` to stderr, one line each ("fp8lab-cli: warning: malformed input at
/// INDEX:T: the shard index puts tensor 'T' in …").
void printWarnings(const Status& st) {
  for (const Issue& i : st.issues)
    if (i.severity == Severity::Warning) std::fprintf(stderr, "fp8lab-cli: %s\n", i.toString().c_str());
}

/// Reads the FP8 weight pos[2] of checkpoint pos[1] with --scale into *q; the exit code of the
/// error printed, or 0.
int importOrFail(const QStringList& pos, const QCommandLineParser& p, QuantizedTensor* q) {
  Fp8ImportOptions opt;
  opt.scale_name = p.value(QStringLiteral("scale")).toStdString();
  auto r = importFp8Checkpoint(pos[1].toStdString(), pos[2].toStdString(), opt);
  if (!r.ok()) return fail(qs(r.errors()));
  printWarnings(r);
  *q = std::move(r.value);
  return 0;
}

int runList(const QStringList& pos, bool json) {
  if (pos.size() != 2) return fail(QStringLiteral("usage: checkpoint list FILE.safetensors"));
  auto l = listFp8Checkpoint(pos[1].toStdString());
  if (!l.ok()) return fail(qs(l.errors()));
  printWarnings(l);
  if (json) return printJson(fp8CheckpointListJson(l.value));
  out(fp8CheckpointListText(pos[1].toStdString(), l.value));
  return 0;
}

int runShow(const QStringList& pos, const QCommandLineParser& p, bool json) {
  if (pos.size() != 3) return fail(QStringLiteral("usage: checkpoint show FILE.safetensors TENSOR [--scale NAME]"));
  QuantizedTensor t;
  if (const int rc = importOrFail(pos, p, &t)) return rc;
  if (json) return printJson(fp8TensorJson(pos[2].toStdString(), t));
  out(fp8TensorText(t));
  return 0;
}

int runRequantize(const QStringList& pos, const QCommandLineParser& p, bool json) {
  if (pos.size() != 3)
    return fail(QStringLiteral("usage: checkpoint requantize FILE.safetensors TENSOR --scaling PRESET [--format F]"));
  QuantizedTensor t;
  if (const int rc = importOrFail(pos, p, &t)) return rc;
  const QString sname = p.value(QStringLiteral("scaling"));
  const auto preset = scalingPreset(sname.toStdString());
  const auto& all = scalingPresets();
  if (!preset || std::any_of(all.begin(), all.end(), [&](auto& pi) { return pi.delayed && pi.name == preset->name; })) {
    QStringList names;
    for (const auto& pi : all)
      if (!pi.delayed) names << qs(pi.name);
    return fail(QStringLiteral("--scaling: '%1' is not a current-scaling preset (%2)")
                    .arg(sname, names.join(QStringLiteral(", "))));
  }
  const QString fname = p.isSet(QStringLiteral("format")) ? p.value(QStringLiteral("format")) : qs(t.format->name());
  const Format* f = Format::byName(fname.toStdString());
  if (!f || f->bits() > 8) return fail(QStringLiteral("--format: '%1' is unknown or wider than 8 bits").arg(fname));
  const QString axis = p.value(QStringLiteral("axis"));
  if (axis != QStringLiteral("cols") && axis != QStringLiteral("rows"))
    return fail(QStringLiteral("--axis: expected cols or rows, got '%1'").arg(axis));
  const Axis ax = axis == QStringLiteral("rows") ? Axis::Rows : Axis::Cols;
  if (const std::string why = gemmScalingProblem(*preset, ax); !why.empty()) return fail(qs(why));
  const Fp8Requantized rq = requantizeCheckpointTensor(t, *f, *preset, ax);
  if (json) return printJson(fp8RequantizedJson(pos[2].toStdString(), t.strategy, preset->name, rq));
  out(fp8RequantizedText(t.strategy, preset->name, rq));
  return 0;
}

int runExport(const QStringList& pos, const QCommandLineParser& p, bool json) {
  if (pos.size() != 3)
    return fail(QStringLiteral("usage: checkpoint export SESSION.h5 RUN --layout per_tensor|per_channel|block128 "
                               "[--format E4M3FN|E5M2] --out MODEL.safetensors"));
  const QString layout_name = p.value(QStringLiteral("layout"));
  const auto layout = parseCheckpointExportLayout(layout_name.toStdString());
  if (!layout)
    return fail(QStringLiteral("--layout: expected per_tensor, per_channel or block128, got '%1'").arg(layout_name));
  const Format* fmt = &Format::E4M3FN();
  if (p.isSet(QStringLiteral("format"))) {
    fmt = Format::byName(p.value(QStringLiteral("format")).toStdString());
    if (fmt != &Format::E4M3FN() && fmt != &Format::E5M2())
      return fail(QStringLiteral("--format: a checkpoint stores E4M3FN (F8_E4M3) or E5M2 (F8_E5M2), not '%1'")
                      .arg(p.value(QStringLiteral("format"))));
  }
  const std::string file = p.value(QStringLiteral("out")).toStdString();
  if (file.empty()) return fail(QStringLiteral("--out MODEL.safetensors is required"));
  std::string why;
  const auto x = exportRunCheckpoint(pos[1].toStdString(), pos[2].toStdString(), *layout, *fmt, file, &why);
  if (!x) return fail(qs(why));
  if (json) return printJson(checkpointExportJson(*x, file));
  out(checkpointExportText(*x, file));
  return 0;
}

int runImport(const QStringList& pos, const QCommandLineParser& p, bool json) {
  if (pos.size() != 2)
    return fail(QStringLiteral("usage: checkpoint import FILE.safetensors --out SESSION.h5 [--tensor NAME]... "
                               "[--what-if ID,ID] [--id RUN]"));
  const QString outPath = p.value(QStringLiteral("out"));
  if (outPath.isEmpty()) return fail(QStringLiteral("--out SESSION.h5 is required"));
  CheckpointRunOptions o;
  std::vector<std::string> ids;
  for (const QString& t : p.values(QStringLiteral("tensor"))) o.tensors.push_back(t.toStdString());
  for (const QString& id : p.value(QStringLiteral("what-if")).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    std::string why;
    const auto r = parseWhatIfRecipe(id.trimmed().toStdString(), &why);
    if (!r) return fail(QStringLiteral("--what-if: %1").arg(qs(why)));
    if (std::find(ids.begin(), ids.end(), r->id) != ids.end())
      return fail(QStringLiteral("--what-if: '%1' is listed twice").arg(qs(r->id)));
    o.what_if.push_back(*r);
    ids.push_back(r->id);
  }
  QString id = p.value(QStringLiteral("id"));
  if (id.isEmpty()) id = qs(defaultCheckpointRunId(pos[1].toStdString()));
  auto run = checkpointRun(pos[1].toStdString(), id.toStdString(), o);
  printWarnings(run); // tensors not imported, NaN codes; before the error when nothing could be
  if (!run.ok()) return fail(qs(run.errors()));
  std::vector<std::string> stored;
  if (!appendRunsToFile(outPath, {run.value}, true, &stored)) return 2;
  const std::string rid = stored.empty() ? id.toStdString() : stored.front();
  const int64_t n = attrInt(run.value.attrs, "tensors").value_or(0);
  const auto sqnr = checkpointRunSqnr(run.value);
  if (json) return printJson(checkpointImportJson(outPath.toStdString(), rid, n, ids.size(), sqnr));
  out(checkpointImportText(pos[1].toStdString(), rid, n, ids, sqnr, outPath.toStdString()));
  return 0;
}

int runCheckpoint(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "FP8 checkpoints in safetensors (docs/checkpoints.md). Scales are dequant factors:\n"
      "w = decode(code) * scale, per tensor (X.weight_scale [] or [1]), per output channel\n"
      "(X.weight_scale [rows, 1]) or per 128x128 block (X.weight_scale_inv [ceil(rows/128), ceil(cols/128)]).\n"
      "FILE.safetensors may also be a Hugging Face shard index (model.safetensors.index.json: {\"weight_map\":\n"
      "{tensor: shard file}}, shards beside it); each tensor is read from its shard.\n"
      "  checkpoint list FILE.safetensors\n"
      "  checkpoint show FILE.safetensors TENSOR [--scale NAME]\n"
      "  checkpoint requantize FILE.safetensors TENSOR --scaling PRESET [--format F] [--axis cols|rows]\n"
      "  checkpoint export SESSION.h5 RUN --layout per_tensor|per_channel|block128 [--format E4M3FN|E5M2] --out "
      "MODEL.safetensors\n"
      "  checkpoint import FILE.safetensors --out SESSION.h5 [--tensor NAME]... [--what-if ID,ID] [--id RUN]"));
  p.addPositionalArgument(QStringLiteral("action"), QStringLiteral("list, show, requantize, export or import."));
  p.addOption({QStringLiteral("json"), QStringLiteral("Print JSON.")});
  p.addOption({QStringLiteral("scale"), QStringLiteral("The scale tensor's name (default: by the naming convention)."),
               QStringLiteral("NAME")});
  p.addOption({QStringLiteral("scaling"), QStringLiteral("requantize: the current-scaling preset."),
               QStringLiteral("PRESET"), QStringLiteral("te_current")});
  p.addOption(
      {QStringLiteral("format"),
       QStringLiteral("requantize: element format (default: the stored one); export: E4M3FN (default) or E5M2."),
       QStringLiteral("F")});
  p.addOption({QStringLiteral("axis"),
               QStringLiteral("requantize: contraction axis, cols (the tensor is an A [M, K], default) or rows (B)."),
               QStringLiteral("AXIS"), QStringLiteral("cols")});
  p.addOption({QStringLiteral("layout"),
               QStringLiteral("export: per_tensor (TE current scaling), per_channel (one scale per output "
                              "channel, compressed-tensors) or block128 (DeepSeek-V3 128x128)."),
               QStringLiteral("L"), QStringLiteral("per_tensor")});
  p.addOption({QStringLiteral("out"),
               QStringLiteral("export: the safetensors file to write; import: the session file to add the run to."),
               QStringLiteral("FILE")});
  p.addOption({QStringLiteral("tensor"), QStringLiteral("import: an FP8 tensor to take (repeatable; default: all)."),
               QStringLiteral("NAME")});
  p.addOption({QStringLiteral("what-if"),
               QStringLiteral("import: recipes to re-quantize each tensor with, comma-separated (te_current, "
                              "mx_rceil, nvfp4_te, ... as in training diagnostics)."),
               QStringLiteral("IDS")});
  p.addOption({QStringLiteral("id"),
               QStringLiteral("import: the run id (default: the file name without .safetensors / .index.json)."),
               QStringLiteral("RUN")});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  const QStringList pos = p.positionalArguments();
  const bool json = p.isSet(QStringLiteral("json"));
  const QString action = pos.isEmpty() ? QString() : pos[0];
  if (action == QStringLiteral("list")) return runList(pos, json);
  if (action == QStringLiteral("show")) return runShow(pos, p, json);
  if (action == QStringLiteral("requantize")) return runRequantize(pos, p, json);
  if (action == QStringLiteral("export")) return runExport(pos, p, json);
  if (action == QStringLiteral("import")) return runImport(pos, p, json);
  return fail(QStringLiteral("usage: checkpoint list|show|requantize|export|import ... (see --help)"));
}

const CommandRegistrar
    reg({QStringLiteral("checkpoint"),
         QStringLiteral(
             "FP8 checkpoints (safetensors): list, show, requantize, export a training run, import into a session"),
         runCheckpoint, 75});

} // namespace
} // namespace fp8lab::cli
