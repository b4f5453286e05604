// fp8lab-cli checkpoint list | show | requantize | export | import (FP8 safetensors): options, calls, exit
// codes; the reports are core's (io/fp8_checkpoint_report.h, experiment/checkpoint_{export,run}.h).
#include "cli_util.h"
#include "cmd_run.h"
#include "command.h"

#include "experiment/training/checkpoint_export.h"
#include "experiment/training/checkpoint_run.h"
#include "formats/format.h"
#include "io/fp8_checkpoint_report.h"

#include <QCommandLineParser>

#include <cstdio>
#include <stdexcept>

namespace fp8lab::cli {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

/// Prints `j` (JSON) or else `text`; exit code 0.
int print(bool json, const Json& j, const std::string& text) {
  out(json ? toJsonText(toQJson(j)) + "\n" : text);
  return 0;
}

/// Prints the warnings of `st` to stderr ("fp8lab-cli: warning: malformed input at INDEX:T: …").
void printWarnings(const Status& st) {
  for (const Issue& i : st.issues)
    if (i.severity == Severity::Warning) std::fprintf(stderr, "fp8lab-cli: %s\n", i.toString().c_str());
}

/// Reads FP8 weight pos[2] of checkpoint pos[1] (--scale) into *q; 0, or the exit code of the error.
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
  return print(json, fp8CheckpointListJson(l.value), fp8CheckpointListText(pos[1].toStdString(), l.value));
}

int runShow(const QStringList& pos, const QCommandLineParser& p, bool json) {
  if (pos.size() != 3) return fail(QStringLiteral("usage: checkpoint show FILE.safetensors TENSOR [--scale NAME]"));
  QuantizedTensor t;
  if (const int rc = importOrFail(pos, p, &t)) return rc;
  return print(json, fp8TensorJson(pos[2].toStdString(), t), fp8TensorText(t));
}

int runRequantize(const QStringList& pos, const QCommandLineParser& p, bool json) {
  if (pos.size() != 3)
    return fail(QStringLiteral("usage: checkpoint requantize FILE.safetensors TENSOR --scaling PRESET [--format F]"));
  QuantizedTensor t;
  if (const int rc = importOrFail(pos, p, &t)) return rc;
  ScalingConfig preset;
  try { // current scaling only: not the delayed presets
    preset = requireScalingPreset(p.value(QStringLiteral("scaling")).toStdString());
  } catch (const std::invalid_argument& e) {
    return fail(QStringLiteral("--scaling: ") + QString::fromUtf8(e.what()));
  }
  const QString fname = p.isSet(QStringLiteral("format")) ? p.value(QStringLiteral("format")) : qs(t.format->name());
  const Format* f = Format::byName(fname.toStdString());
  if (!f || f->bits() > 8) return fail(QStringLiteral("--format: '%1' is unknown or wider than 8 bits").arg(fname));
  const QString axis = p.value(QStringLiteral("axis"));
  if (axis != QStringLiteral("cols") && axis != QStringLiteral("rows"))
    return fail(QStringLiteral("--axis: expected cols or rows, got '%1'").arg(axis));
  const Axis ax = axis == QStringLiteral("rows") ? Axis::Rows : Axis::Cols;
  if (const std::string why = gemmScalingProblem(preset, ax); !why.empty()) return fail(qs(why));
  const Fp8Requantized rq = requantizeCheckpointTensor(t, *f, preset, ax);
  return print(json, json ? fp8RequantizedJson(pos[2].toStdString(), t.strategy, preset.name, rq) : Json(),
               fp8RequantizedText(t.strategy, preset.name, rq));
}

int runExport(const QStringList& pos, const QCommandLineParser& p, bool json) {
  if (pos.size() != 3)
    return fail(QStringLiteral("usage: checkpoint export SESSION.h5 RUN --layout per_tensor|per_channel|block128 "
                               "[--format E4M3FN|E5M2] --out MODEL.safetensors"));
  const QString lname = p.value(QStringLiteral("layout")), fname = p.value(QStringLiteral("format"));
  const auto layout = parseCheckpointExportLayout(lname.toStdString());
  if (!layout)
    return fail(QStringLiteral("--layout: expected per_tensor, per_channel or block128, got '%1'").arg(lname));
  const Format* fmt = p.isSet(QStringLiteral("format")) ? Format::byName(fname.toStdString()) : &Format::E4M3FN();
  if (fmt != &Format::E4M3FN() && fmt != &Format::E5M2())
    return fail(
        QStringLiteral("--format: a checkpoint stores E4M3FN (F8_E4M3) or E5M2 (F8_E5M2), not '%1'").arg(fname));
  const std::string file = p.value(QStringLiteral("out")).toStdString();
  if (file.empty()) return fail(QStringLiteral("--out MODEL.safetensors is required"));
  std::string why;
  const auto x = exportRunCheckpoint(pos[1].toStdString(), pos[2].toStdString(), *layout, *fmt, file, &why);
  if (!x) return fail(qs(why));
  return print(json, checkpointExportJson(*x, file), checkpointExportText(*x, file));
}

int runImport(const QStringList& pos, const QCommandLineParser& p, bool json) {
  if (pos.size() != 2)
    return fail(QStringLiteral("usage: checkpoint import FILE.safetensors --out SESSION.h5 [--tensor NAME]... "
                               "[--what-if ID,ID] [--id RUN]"));
  const QString outPath = p.value(QStringLiteral("out"));
  if (outPath.isEmpty()) return fail(QStringLiteral("--out SESSION.h5 is required"));
  if (!outputWritableOrFail(outPath)) return 2;
  CheckpointRunOptions o;
  for (const QString& t : p.values(QStringLiteral("tensor"))) o.tensors.push_back(t.toStdString());
  std::string why;
  const auto what_if = parseWhatIfList(p.value(QStringLiteral("what-if")).toStdString(), &why);
  if (!what_if) return fail(QStringLiteral("--what-if: %1").arg(qs(why)));
  o.what_if = *what_if;
  std::vector<std::string> stored;
  QString id = p.value(QStringLiteral("id"));
  if (id.isEmpty()) id = qs(defaultCheckpointRunId(pos[1].toStdString()));
  auto run = checkpointRun(pos[1].toStdString(), id.toStdString(), o);
  printWarnings(run); // tensors not imported, NaN codes; before the error when nothing could be
  if (!run.ok()) return fail(qs(run.errors()));
  if (!appendRunsToFile(outPath, {run.value}, true, &stored)) return 2;
  const std::string rid = stored.empty() ? id.toStdString() : stored.front();
  const int64_t n = attrInt(run.value.attrs, "tensors").value_or(0);
  const auto sqnr = checkpointRunSqnr(run.value);
  return print(json, checkpointImportJson(outPath.toStdString(), rid, n, o.what_if.size(), sqnr),
               checkpointImportText(pos[1].toStdString(), rid, n, o.what_if, sqnr, outPath.toStdString()));
}

/// An option from UTF-8 text: a flag without `value`, else taking one (default `def`).
QCommandLineOption option(const char* name, const char* help, const char* value = "", const char* def = "") {
  return {QString::fromUtf8(name), QString::fromUtf8(help), QString::fromUtf8(value), QString::fromUtf8(def)};
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
  p.addOptions(
      {option("json", "Print JSON."),
       option("scale", "The scale tensor's name (default: by the naming convention).", "NAME"),
       option("scaling", "requantize: the current-scaling preset.", "PRESET", "te_current"),
       option("format", "requantize: element format (default: the stored one); export: E4M3FN (default) or E5M2.", "F"),
       option("axis", "requantize: contraction axis, cols (the tensor is an A [M, K], default) or rows (B).", "AXIS",
              "cols"),
       option("layout",
              "export: per_tensor (TE current scaling), per_channel (one scale per output channel, compressed-tensors) "
              "or block128 (DeepSeek-V3 128x128).",
              "L", "per_tensor"),
       option("out", "export: the safetensors file to write; import: the session file to add the run to.", "FILE"),
       option("tensor", "import: an FP8 tensor to take (repeatable; default: all).", "NAME"),
       option("what-if",
              "import: recipes to re-quantize each tensor with, comma-separated (te_current, mx_rceil, nvfp4_te, ... "
              "as in training diagnostics).",
              "IDS"),
       option("id", "import: the run id (default: the file name without .safetensors / .index.json).", "RUN")});
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

const CommandRegistrar reg({QStringLiteral("checkpoint"),
                            QStringLiteral("FP8 checkpoints (safetensors): list, show, requantize, export a training "
                                           "run, import into a session"),
                            runCheckpoint, 75});

} // namespace
} // namespace fp8lab::cli
