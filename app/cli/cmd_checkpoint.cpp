// fp8lab-cli checkpoint — FP8 checkpoints in safetensors (core/io/fp8_checkpoint.h):
//   checkpoint list FILE.safetensors                 the FP8 tensors with their scale layout
//   checkpoint show FILE TENSOR [--scale NAME]       codes, scales and decoded values
//   checkpoint requantize FILE TENSOR --scaling P    what preset P would store; SQNR vs the file
//   checkpoint export SESSION.h5 RUN --layout L --out F.safetensors   a training run's weights
//                                                    (the MLP, or a language model by its sites)
//   checkpoint import FILE --out SESSION.h5 [--tensor T]... [--what-if IDS]   a run of the session
#include "cli_util.h"
#include "session/session_layout.h"
#include "cmd_run.h"
#include "command.h"

#include "experiment/checkpoint_run.h"
#include "formats/format.h"
#include "io/fp8_checkpoint.h"
#include "scaling/scaling.h"
#include "session/session.h"
#include "training/training_session.h"

#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonObject>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace fp8lab::cli {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

QJsonArray shapeJson(const std::vector<int64_t>& s) {
  QJsonArray a;
  for (auto d : s) a.append(qint64(d));
  return a;
}

QString shapeText(const std::vector<int64_t>& s) {
  QStringList t;
  for (auto d : s) t << QString::number(d);
  return QStringLiteral("[") + t.join(QStringLiteral(", ")) + QStringLiteral("]");
}

QString hex2(uint32_t c) {
  return QStringLiteral("0x%1")
      .arg(c, 2, 16, QLatin1Char('0'))
      .toUpper()
      .replace(QStringLiteral("0X"), QStringLiteral("0x"));
}

QJsonArray floats(const std::vector<float>& v) {
  QJsonArray a;
  for (float x : v) a.append(jsonNumber(x));
  return a;
}

/// Prints the warnings of `st` to stderr, one line each ("fp8lab-cli: warning: malformed input at
/// INDEX:T: the shard index puts tensor 'T' in …").
void printWarnings(const Status& st) {
  for (const Issue& i : st.issues)
    if (i.severity == Severity::Warning) std::fprintf(stderr, "fp8lab-cli: %s\n", i.toString().c_str());
}

int runList(const QStringList& pos, bool json) {
  if (pos.size() != 2) return fail(QStringLiteral("usage: checkpoint list FILE.safetensors"));
  auto l = listFp8Checkpoint(pos[1].toStdString());
  if (!l.ok()) return fail(qs(l.errors()));
  printWarnings(l);
  if (json) {
    QJsonArray a;
    for (const auto& e : l.value)
      a.append(QJsonObject{{QStringLiteral("name"), qs(e.name)},
                           {QStringLiteral("dtype"), qs(e.dtype)},
                           {QStringLiteral("shape"), shapeJson(e.shape)},
                           {QStringLiteral("scale"), qs(e.scale_name)},
                           {QStringLiteral("scale_dtype"), qs(e.scale_dtype)},
                           {QStringLiteral("scale_shape"), shapeJson(e.scale_shape)},
                           {QStringLiteral("layout"), qs(e.layout)},
                           {QStringLiteral("problem"), qs(e.problem)}});
    out(toJsonText(a) + "\n");
    return 0;
  }
  if (l.value.empty()) out(QStringLiteral("no FP8 tensors (F8_E4M3, F8_E5M2) in %1\n").arg(pos[1]));
  for (const auto& e : l.value) {
    QString line = qs(e.name) + QStringLiteral("  ") + qs(e.dtype) + QStringLiteral(" ") + shapeText(e.shape);
    if (!e.problem.empty())
      line += QStringLiteral("  not importable: ") + qs(e.problem);
    else
      line += QStringLiteral("  ") + qs(e.layout) + QStringLiteral(": ") + qs(e.scale_name) + QStringLiteral(" ") +
              qs(e.scale_dtype) + QStringLiteral(" ") + shapeText(e.scale_shape);
    out(line + QStringLiteral("\n"));
  }
  return 0;
}

int runShow(const QStringList& pos, const QString& scale, bool json) {
  if (pos.size() != 3) return fail(QStringLiteral("usage: checkpoint show FILE.safetensors TENSOR [--scale NAME]"));
  Fp8ImportOptions opt;
  opt.scale_name = scale.toStdString();
  auto q = importFp8Checkpoint(pos[1].toStdString(), pos[2].toStdString(), opt);
  if (!q.ok()) return fail(qs(q.errors()));
  printWarnings(q);
  const QuantizedTensor& t = q.value;
  constexpr int64_t kShown = 4096;
  const int64_t n = std::min<int64_t>(t.rows * t.cols, kShown);
  if (json) {
    QJsonArray codes, values;
    for (int64_t i = 0; i < n; ++i) {
      codes.append(int(t.codes[static_cast<size_t>(i)]));
      values.append(jsonNumber(t.dequantizedAt(i / t.cols, i % t.cols)));
    }
    out(toJsonText(QJsonObject{{QStringLiteral("tensor"), pos[2]},
                               {QStringLiteral("format"), qs(t.format->name())},
                               {QStringLiteral("shape"), shapeJson({t.rows, t.cols})},
                               {QStringLiteral("block"), shapeJson({t.block.rows, t.block.cols})},
                               {QStringLiteral("strategy"), qs(t.strategy)},
                               {QStringLiteral("dequant_scales"), floats(t.dequant_scales)},
                               {QStringLiteral("codes"), codes},
                               {QStringLiteral("values"), values},
                               {QStringLiteral("shown"), qint64(n)}}) +
        "\n");
    return 0;
  }
  out(QStringLiteral("%1: %2 [%3, %4], scale blocks [%5, %6], x = decode(code) * scale\n")
          .arg(qs(t.strategy), qs(t.format->name()))
          .arg(t.rows)
          .arg(t.cols)
          .arg(t.block.rows)
          .arg(t.block.cols));
  QStringList s;
  for (size_t i = 0; i < std::min<size_t>(t.dequant_scales.size(), 64); ++i) s << shortestFloat(t.dequant_scales[i]);
  out(QStringLiteral("scales: ") + s.join(QStringLiteral(" ")) +
      (t.dequant_scales.size() > 64 ? QStringLiteral(" ...") : QString()) + QStringLiteral("\n"));
  for (int64_t i = 0; i < n; ++i)
    out(QStringLiteral("(%1, %2) %3 = %4\n")
            .arg(i / t.cols)
            .arg(i % t.cols)
            .arg(hex2(t.codes[static_cast<size_t>(i)]))
            .arg(shortestDouble(t.dequantizedAt(i / t.cols, i % t.cols))));
  if (n < t.rows * t.cols) out(QStringLiteral("... (first %1 elements shown)\n").arg(n));
  return 0;
}

int runRequantize(const QStringList& pos, const QCommandLineParser& p, bool json) {
  if (pos.size() != 3)
    return fail(QStringLiteral("usage: checkpoint requantize FILE.safetensors TENSOR --scaling PRESET [--format F]"));
  Fp8ImportOptions opt;
  opt.scale_name = p.value(QStringLiteral("scale")).toStdString();
  auto q = importFp8Checkpoint(pos[1].toStdString(), pos[2].toStdString(), opt);
  if (!q.ok()) return fail(qs(q.errors()));
  printWarnings(q);
  const QString sname = p.value(QStringLiteral("scaling"));
  auto preset = scalingPreset(sname.toStdString());
  bool delayed = false;
  for (const auto& pi : scalingPresets())
    if (preset && pi.name == preset->name) delayed = pi.delayed;
  if (!preset || delayed) {
    QStringList names;
    for (const auto& pi : scalingPresets())
      if (!pi.delayed) names << qs(pi.name);
    return fail(QStringLiteral("--scaling: '%1' is not a current-scaling preset (%2)")
                    .arg(sname, names.join(QStringLiteral(", "))));
  }
  const QString fname =
      p.isSet(QStringLiteral("format")) ? p.value(QStringLiteral("format")) : qs(q.value.format->name());
  const Format* f = Format::byName(fname.toStdString());
  if (!f || f->bits() > 8) return fail(QStringLiteral("--format: '%1' is unknown or wider than 8 bits").arg(fname));
  const QString axis = p.value(QStringLiteral("axis"));
  if (axis != QStringLiteral("cols") && axis != QStringLiteral("rows"))
    return fail(QStringLiteral("--axis: expected cols or rows, got '%1'").arg(axis));
  const Axis ax = axis == QStringLiteral("rows") ? Axis::Rows : Axis::Cols;
  if (const std::string why = gemmScalingProblem(*preset, ax); !why.empty()) return fail(qs(why));
  const Fp8Requantized rq = requantizeCheckpointTensor(q.value, *f, *preset, ax);
  const QuantizedTensor& t = rq.requantized;
  if (json) {
    QJsonArray codes, scale_codes;
    for (auto c : t.codes) codes.append(int(c));
    for (auto c : t.scale_codes) scale_codes.append(int(c));
    QJsonObject o{{QStringLiteral("tensor"), pos[2]},
                  {QStringLiteral("stored"), qs(q.value.strategy)},
                  {QStringLiteral("scaling"), qs(preset->name)},
                  {QStringLiteral("format"), qs(f->name())},
                  {QStringLiteral("block"), shapeJson({t.block.rows, t.block.cols})},
                  {QStringLiteral("dequant_scales"), floats(t.dequant_scales)},
                  {QStringLiteral("sqnr_db"), jsonNumber(rq.sqnr_db)},
                  {QStringLiteral("saturated"), qint64(t.stats.saturated)},
                  {QStringLiteral("underflow"), qint64(t.stats.underflow)},
                  {QStringLiteral("codes"), codes}};
    if (!t.scale_codes.empty()) o[QStringLiteral("scale_codes")] = scale_codes;
    if (rq.same_format) o[QStringLiteral("codes_changed")] = qint64(rq.codes_changed);
    out(toJsonText(o) + "\n");
    return 0;
  }
  out(QStringLiteral("stored:      %1\n").arg(qs(q.value.strategy)));
  out(QStringLiteral("requantized: %1 %2, scale blocks [%3, %4], %5 scales\n")
          .arg(qs(preset->name), qs(f->name()))
          .arg(t.block.rows)
          .arg(t.block.cols)
          .arg(t.dequant_scales.size()));
  out(QStringLiteral("SQNR vs the stored tensor (decode * scale): %1 dB\n").arg(shortestDouble(rq.sqnr_db)));
  if (rq.same_format)
    out(QStringLiteral("codes changed: %1 of %2\n").arg(rq.codes_changed).arg(qint64(t.codes.size())));
  out(QStringLiteral("saturated %1, underflow %2\n").arg(t.stats.saturated).arg(t.stats.underflow));
  return 0;
}

/// The tensors of a language-model run's checkpoint (its weights/<parameter>, docs/session-format.md
/// "Language-model runs"), in the layout PyTorch / Hugging Face modules load: the weight of every
/// Linear site of the run's `sites` list but lm_head, stored [in, out] (y = x · W), becomes
/// "<site>.weight" [out, in] (nn.Linear's layout, y = x · Wᵀ) in FP8 with its scale in `layout`;
/// every other parameter — the Linear biases, the embeddings wte.weight [V, C] and wpe.weight
/// [T, C] (nn.Embedding's layout, as stored), the norms' weights and biases, an untied lm_head
/// (transposed to [V, C]) — in F32, as FP8 checkpoints keep embeddings, norms and the head in high
/// precision (llm-compressor's FP8 scheme, DeepSeek-V3). One entry per quantized site in *layers.
/// False with *why when a weight is not 2-D [in, out], a parameter has rank 0 or above 2, or the run
/// stores no Linear weight.
bool transformerTensors(const Run& run, const std::string& sites, Fp8ScaleLayout layout, const Format& fmt,
                        std::vector<SafetensorsTensor>* tensors, QJsonArray* layers, std::string* why) {
  auto f32of = [](const Dataset& d) {
    std::vector<float> v(size_t(d.elementCount()));
    for (int64_t i = 0; i < d.elementCount(); ++i) v[size_t(i)] = float(d.valueAt(i));
    return v;
  };
  std::set<std::string> linear;
  for (const QString& site : qs(sites).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    const std::string name = site.trimmed().toStdString();
    const Dataset* w = run.find(fp8lab::layout::weights(name + ".weight"));
    if (!w || name == "lm_head") continue; // attention matmuls have no weight; the head stays F32
    if (w->shape.size() != 2) {
      *why = fp8lab::layout::weights(name + ".weight") + " is not 2-D [in, out]";
      return false;
    }
    const int64_t in = w->shape[0], out = w->shape[1];
    const std::vector<float> kernel = f32of(*w);
    std::vector<float> wt(kernel.size());
    for (int64_t i = 0; i < in; ++i)
      for (int64_t j = 0; j < out; ++j) wt[size_t(j * in + i)] = kernel[size_t(i * out + j)];
    const QuantizedTensor q = quantizeForCheckpoint(wt, out, in, layout, fmt);
    for (auto& t : fp8WeightTensors(name, q, layout)) tensors->push_back(std::move(t));
    linear.insert(name + ".weight");
    layers->append(QJsonObject{{QStringLiteral("name"), qs(name)},
                               {QStringLiteral("weight_shape"), shapeJson({out, in})},
                               {QStringLiteral("scales"), qint64(q.dequant_scales.size())},
                               {QStringLiteral("saturated"), qint64(q.stats.saturated)}});
  }
  const std::string prefix = std::string(fp8lab::layout::kWeightsGroup) + "/";
  for (const auto& [path, d] : run.datasets) {
    if (path.rfind(prefix, 0) != 0) continue;
    const std::string name = path.substr(prefix.size());
    if (linear.count(name)) continue;
    if (d.shape.empty() || d.shape.size() > 2) {
      *why = path + " is not a vector or a matrix";
      return false;
    }
    std::vector<float> v = f32of(d);
    int64_t rows = d.shape.size() == 2 ? d.shape[0] : 0, cols = d.shape.back();
    if (name == "lm_head.weight" && d.shape.size() == 2) { // [C, V] → nn.Linear's [V, C]
      std::vector<float> t(v.size());
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) t[size_t(j * rows + i)] = v[size_t(i * cols + j)];
      v = std::move(t);
      std::swap(rows, cols);
    }
    tensors->push_back(float32Tensor(name, v, rows, cols));
  }
  if (layers->isEmpty()) {
    *why = "the run stores no Linear weights (weights/<site>.weight)";
    return false;
  }
  return true;
}

int runExport(const QStringList& pos, const QCommandLineParser& p, bool json) {
  if (pos.size() != 3)
    return fail(QStringLiteral("usage: checkpoint export SESSION.h5 RUN --layout per_tensor|per_channel|block128 "
                               "[--format E4M3FN|E5M2] --out MODEL.safetensors"));
  const QString layout_name = p.value(QStringLiteral("layout"));
  Fp8ScaleLayout layout;
  if (layout_name == QStringLiteral("per_tensor"))
    layout = Fp8ScaleLayout::PerTensor;
  else if (layout_name == QStringLiteral("per_channel"))
    layout = Fp8ScaleLayout::PerChannel;
  else if (layout_name == QStringLiteral("block128") || layout_name == QStringLiteral("block128x128"))
    layout = Fp8ScaleLayout::Block;
  else
    return fail(QStringLiteral("--layout: expected per_tensor, per_channel or block128, got '%1'").arg(layout_name));
  const Format* fmt = &Format::E4M3FN();
  if (p.isSet(QStringLiteral("format"))) {
    fmt = Format::byName(p.value(QStringLiteral("format")).toStdString());
    if (fmt != &Format::E4M3FN() && fmt != &Format::E5M2())
      return fail(QStringLiteral("--format: a checkpoint stores E4M3FN (F8_E4M3) or E5M2 (F8_E5M2), not '%1'")
                      .arg(p.value(QStringLiteral("format"))));
  }
  const QString outPath = p.value(QStringLiteral("out"));
  if (outPath.isEmpty()) return fail(QStringLiteral("--out MODEL.safetensors is required"));
  auto rd = SessionReader::open(pos[1].toStdString());
  if (!rd.ok()) return fail(qs(rd.errors()));
  auto run = rd.value->readRun(pos[2].toStdString());
  if (!run.ok()) return fail(qs(run.errors()));
  if (run.value.type != "training")
    return fail(QStringLiteral("run '%1' is a %2 run; checkpoints are exported from training runs")
                    .arg(pos[2], qs(run.value.type)));
  std::vector<SafetensorsTensor> tensors;
  QJsonArray layers;
  const std::string sites = attrString(run.value.attrs, "sites").value_or("");
  const bool lm = !sites.empty();
  if (lm) {
    std::string why;
    if (!transformerTensors(run.value, sites, layout, *fmt, &tensors, &layers, &why)) return fail(qs(why));
  }
  for (int l = 1; !lm; ++l) {
    const std::string name = "fc" + std::to_string(l);
    if (!run.value.find(fp8lab::layout::weights(name + "/kernel"))) break;
    auto w = trainedWeightsFromRun(run.value, name);
    if (!w.ok()) return fail(qs(w.errors()));
    const LayerWeights& lw = w.value;
    // The run stores kernel [in, out] (y = x · kernel); a checkpoint stores nn.Linear's weight
    // [out, in] = kernelᵀ (y = x · Wᵀ).
    std::vector<float> wt(lw.kernel.size());
    for (int64_t i = 0; i < lw.in; ++i)
      for (int64_t j = 0; j < lw.out; ++j)
        wt[static_cast<size_t>(j * lw.in + i)] = lw.kernel[static_cast<size_t>(i * lw.out + j)];
    const QuantizedTensor q = quantizeForCheckpoint(wt, lw.out, lw.in, layout, *fmt);
    for (auto& t : fp8WeightTensors(name, q, layout)) tensors.push_back(std::move(t));
    tensors.push_back(float32Tensor(name + ".bias", lw.bias, 0, lw.out));
    layers.append(QJsonObject{{QStringLiteral("name"), qs(name)},
                              {QStringLiteral("weight_shape"), shapeJson({lw.out, lw.in})},
                              {QStringLiteral("scales"), qint64(q.dequant_scales.size())},
                              {QStringLiteral("saturated"), qint64(q.stats.saturated)}});
  }
  if (tensors.empty())
    return fail(QStringLiteral("run '%1' stores no trained weights (weights/fc1/kernel)").arg(pos[2]));
  std::map<std::string, std::string> meta = {{"format", "pt"},
                                             {"producer", "fp8lab-cli checkpoint export"},
                                             {"layout", layout == Fp8ScaleLayout::PerTensor    ? "per_tensor"
                                                        : layout == Fp8ScaleLayout::PerChannel ? "per_channel"
                                                                                               : "block128x128"},
                                             {"quantization", layout == Fp8ScaleLayout::PerTensor ? "te_current"
                                                              : layout == Fp8ScaleLayout::PerChannel
                                                                  ? "per_row"
                                                                  : "deepgemm_128x128"},
                                             {"element_format", fmt->name()},
                                             {"scale_convention", "dequant: w = decode(weight) * scale"},
                                             {"source", pos[1].toStdString() + "#/runs/" + pos[2].toStdString()}};
  if (lm) {
    QStringList quantized;
    for (const QJsonValue& v : layers) quantized << v.toObject().value(QStringLiteral("name")).toString();
    meta["model"] = "transformer";
    meta["quantized_modules"] = quantized.join(QLatin1Char(',')).toStdString();
    meta["tied_embeddings"] = run.value.find(fp8lab::layout::weights("lm_head.weight")) ? "false" : "true";
  }
  const Status st = writeSafetensors(outPath.toStdString(), std::move(tensors), meta);
  if (!st.ok()) return fail(qs(st.errors()));
  if (json)
    out(toJsonText(QJsonObject{{QStringLiteral("file"), outPath},
                               {QStringLiteral("layout"), qs(meta.at("layout"))},
                               {QStringLiteral("layers"), layers}}) +
        "\n");
  else
    out(lm ? QStringLiteral("wrote %1 (%2 Linear weights in FP8, %3; embeddings, norms, biases%4 in F32)\n")
                 .arg(outPath)
                 .arg(layers.size())
                 .arg(qs(meta.at("layout")))
                 .arg(meta.at("tied_embeddings") == "false" ? QStringLiteral(", lm_head") : QString())
           : QStringLiteral("wrote %1 (%2 layers, %3)\n").arg(outPath).arg(layers.size()).arg(qs(meta.at("layout"))));
  return 0;
}

int runImport(const QStringList& pos, const QCommandLineParser& p, bool json) {
  if (pos.size() != 2)
    return fail(QStringLiteral("usage: checkpoint import FILE.safetensors --out SESSION.h5 [--tensor NAME]... "
                               "[--what-if ID,ID] [--id RUN]"));
  const QString outPath = p.value(QStringLiteral("out"));
  if (outPath.isEmpty()) return fail(QStringLiteral("--out SESSION.h5 is required"));
  CheckpointRunOptions o;
  for (const QString& t : p.values(QStringLiteral("tensor"))) o.tensors.push_back(t.toStdString());
  for (const QString& id : p.value(QStringLiteral("what-if")).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    std::string why;
    const auto r = parseWhatIfRecipe(id.trimmed().toStdString(), &why);
    if (!r) return fail(QStringLiteral("--what-if: %1").arg(qs(why)));
    for (const WhatIfRecipe& before : o.what_if)
      if (before.id == r->id) return fail(QStringLiteral("--what-if: '%1' is listed twice").arg(qs(r->id)));
    o.what_if.push_back(*r);
  }
  QString id = p.value(QStringLiteral("id"));
  if (id.isEmpty()) id = qs(defaultCheckpointRunId(pos[1].toStdString()));
  auto run = checkpointRun(pos[1].toStdString(), id.toStdString(), o);
  printWarnings(run); // tensors not imported, NaN codes; before the error when nothing could be
  if (!run.ok()) return fail(qs(run.errors()));
  std::vector<std::string> ids;
  if (!appendRunsToFile(outPath, {run.value}, true, &ids)) return 2;
  const QString stored = ids.empty() ? id : qs(ids.front());
  const qint64 n = attrInt(run.value.attrs, "tensors").value_or(0);
  const std::vector<CheckpointSqnr> sqnr = checkpointRunSqnr(run.value);
  if (json) {
    QJsonArray rows;
    for (const CheckpointSqnr& r : sqnr) {
      QJsonObject w;
      for (const auto& [rid, db] : r.what_if_db) w[qs(rid)] = jsonNumber(db);
      rows.append(QJsonObject{{QStringLiteral("tensor"), qs(r.tensor)},
                              {QStringLiteral("stored_sqnr_db"), jsonNumber(r.stored_db)},
                              {QStringLiteral("what_if_sqnr_db"), w}});
    }
    out(toJsonText(QJsonObject{{QStringLiteral("file"), outPath},
                               {QStringLiteral("run"), stored},
                               {QStringLiteral("tensors"), n},
                               {QStringLiteral("what_if"), qint64(o.what_if.size())},
                               {QStringLiteral("sqnr"), rows}}) +
        "\n");
    return 0;
  }
  const qsizetype nw = static_cast<qsizetype>(o.what_if.size());
  out(QStringLiteral("%1: run %2 (%3 FP8 %4%5) written to %6\n")
          .arg(pos[1], stored)
          .arg(n)
          .arg(n == 1 ? QStringLiteral("tensor") : QStringLiteral("tensors"))
          .arg(nw == 0   ? QString()
               : nw == 1 ? QStringLiteral(", 1 what-if recipe")
                         : QStringLiteral(", %1 what-if recipes").arg(nw))
          .arg(outPath));
  if (o.what_if.empty() || sqnr.empty()) return 0;
  // One row per tensor: the stored quantization's SQNR and each what-if recipe's, all against the
  // float32 dequantized weight (block_stats/<tensor>/sqnr_db, what_if/<id>/<tensor>/sqnr_db).
  QStringList head{QStringLiteral("tensor"), QStringLiteral("stored")};
  for (const WhatIfRecipe& r : o.what_if) head << qs(r.id);
  std::vector<QStringList> cells{head};
  for (const CheckpointSqnr& r : sqnr) {
    QStringList row{qs(r.tensor), shortestFloat(r.stored_db)};
    for (const auto& wi : r.what_if_db) row << shortestFloat(wi.second);
    cells.push_back(row);
  }
  std::vector<qsizetype> width(static_cast<size_t>(head.size()), 0);
  for (const QStringList& row : cells)
    for (qsizetype c = 0; c < row.size(); ++c)
      width[static_cast<size_t>(c)] = std::max(width[static_cast<size_t>(c)], row[c].size());
  out(QStringLiteral("SQNR (dB) vs the weight as stored (decode * scale, float32):\n"));
  for (const QStringList& row : cells) {
    QString line;
    for (qsizetype c = 0; c < row.size(); ++c)
      line += (c ? QStringLiteral("  ") : QString()) +
              (c + 1 < row.size() ? row[c].leftJustified(width[static_cast<size_t>(c)]) : row[c]);
    out(line + QStringLiteral("\n"));
  }
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
  if (action == QStringLiteral("show")) return runShow(pos, p.value(QStringLiteral("scale")), json);
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
