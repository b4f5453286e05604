// fp8lab-cli run | sweep | rerun — experiments from JSON configs into session files (cmd_run.h).
#include "cmd_run.h"

#include "cli_util.h"
#include "command.h"

#include "experiment/gemm_experiment.h"
#include "formats/format.h"
#include "gemm/gemm.h"
#include "scaling/scaling.h"

#include <QCommandLineParser>
#include <QFile>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <unistd.h>

namespace fp8lab::cli {

std::vector<ExperimentType>& experimentTypes() {
  static std::vector<ExperimentType> t;
  return t;
}

ExperimentTypeRegistrar::ExperimentTypeRegistrar(ExperimentType t) {
  experimentTypes().push_back(std::move(t));
}

namespace {

void err(const QString& s) {
  std::fprintf(stderr, "%s\n", s.toUtf8().constData());
}

QString num(double v) {
  if (std::isnan(v)) return QStringLiteral("nan");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  return QString::fromLatin1(buf, static_cast<qsizetype>(r.ptr - buf));
}

const ExperimentType* findType(const QString& type) {
  for (const auto& t : experimentTypes())
    if (t.type == type) return &t;
  return nullptr;
}

QString typeNames() {
  QStringList n;
  for (const auto& t : experimentTypes()) n << t.type;
  return n.join(QStringLiteral(", "));
}

// ---- config parsing -------------------------------------------------------------------------

bool getInt(const QJsonObject& o, const char* key, int64_t lo, int64_t hi, int64_t* v, QString* error,
            const QString& ctx) {
  const QString k = QString::fromLatin1(key);
  if (!o.contains(k)) return true;
  const QJsonValue j = o.value(k);
  const double d = j.toDouble(std::nan(""));
  if (!j.isDouble() || d != std::floor(d) || d < double(lo) || d > double(hi)) {
    *error = QStringLiteral("%1%2: expected an integer in [%3, %4]").arg(ctx, k).arg(lo).arg(hi);
    return false;
  }
  *v = static_cast<int64_t>(d);
  return true;
}

bool getDouble(const QJsonObject& o, const char* key, double* v, QString* error, const QString& ctx) {
  const QString k = QString::fromLatin1(key);
  if (!o.contains(k)) return true;
  if (!o.value(k).isDouble() || !std::isfinite(o.value(k).toDouble())) {
    *error = QStringLiteral("%1%2: expected a finite number").arg(ctx, k);
    return false;
  }
  *v = o.value(k).toDouble();
  return true;
}

bool getBool(const QJsonObject& o, const char* key, bool* v, QString* error, const QString& ctx) {
  const QString k = QString::fromLatin1(key);
  if (!o.contains(k)) return true;
  if (!o.value(k).isBool()) {
    *error = QStringLiteral("%1%2: expected true or false").arg(ctx, k);
    return false;
  }
  *v = o.value(k).toBool();
  return true;
}

bool getString(const QJsonObject& o, const char* key, std::string* v, QString* error, const QString& ctx) {
  const QString k = QString::fromLatin1(key);
  if (!o.contains(k)) return true;
  if (!o.value(k).isString()) {
    *error = QStringLiteral("%1%2: expected a string").arg(ctx, k);
    return false;
  }
  *v = o.value(k).toString().toStdString();
  return true;
}

bool checkKeys(const QJsonObject& o, const QStringList& allowed, QString* error, const QString& ctx) {
  for (auto it = o.begin(); it != o.end(); ++it)
    if (!allowed.contains(it.key())) {
      *error = QStringLiteral("%1%2: unknown key (known: %3)").arg(ctx, it.key(), allowed.join(QStringLiteral(", ")));
      return false;
    }
  return true;
}

/// A seed: an integer number ≤ 2^53, or a string holding a decimal or 0x-hex uint64.
bool getSeed(const QJsonObject& o, uint64_t* seed, QString* error) {
  if (!o.contains(QStringLiteral("seed"))) return true;
  const QJsonValue v = o.value(QStringLiteral("seed"));
  if (v.isDouble()) {
    const double d = v.toDouble();
    if (d < 0 || d > 9007199254740992.0 || d != std::floor(d)) {
      *error = QStringLiteral("seed: expected an integer in [0, 2^53] (give larger seeds as a string)");
      return false;
    }
    *seed = static_cast<uint64_t>(d);
    return true;
  }
  if (v.isString()) {
    bool ok = false;
    const QString s = v.toString();
    const qulonglong x = s.startsWith(QStringLiteral("0x")) ? s.mid(2).toULongLong(&ok, 16) : s.toULongLong(&ok, 10);
    if (ok) {
      *seed = x;
      return true;
    }
  }
  *error = QStringLiteral("seed: expected an unsigned 64-bit integer (number or string)");
  return false;
}

bool parseOperand(const QJsonObject& o, OperandSource* src, QString* error, const QString& ctx) {
  if (!checkKeys(o,
                 {QStringLiteral("distribution"), QStringLiteral("scale"), QStringLiteral("sigma"),
                  QStringLiteral("outlier_fraction"), QStringLiteral("outlier_factor"), QStringLiteral("tensor"),
                  QStringLiteral("transpose")},
                 error, ctx))
    return false;
  std::string dist;
  if (!getString(o, "distribution", &dist, error, ctx)) return false;
  if (!dist.empty()) {
    auto d = parseDistribution(dist);
    if (!d) {
      *error = QStringLiteral("%1distribution: unknown '%2' (normal, uniform, lognormal, outliers)")
                   .arg(ctx, QString::fromStdString(dist));
      return false;
    }
    src->random.distribution = *d;
  }
  if (!(getDouble(o, "scale", &src->random.scale, error, ctx) &&
        getDouble(o, "sigma", &src->random.sigma, error, ctx) &&
        getDouble(o, "outlier_fraction", &src->random.outlier_fraction, error, ctx) &&
        getDouble(o, "outlier_factor", &src->random.outlier_factor, error, ctx) &&
        getString(o, "tensor", &src->tensor, error, ctx) && getBool(o, "transpose", &src->transpose, error, ctx)))
    return false;
  // The random-data keys describe generated operands; beside a tensor file they would be ignored.
  if (!src->tensor.empty())
    for (const char* k : {"distribution", "scale", "sigma", "outlier_fraction", "outlier_factor"})
      if (o.contains(QString::fromLatin1(k))) {
        *error = QStringLiteral("%1%2: applies to random operands only; this operand is the tensor file '%3'")
                     .arg(ctx, QString::fromLatin1(k), QString::fromStdString(src->tensor));
        return false;
      }
  return true;
}

} // namespace

bool parseGemmConfig(const QJsonObject& o, GemmExperimentConfig* cfg, QString* error) {
  const QString ctx;
  if (!checkKeys(o,
                 {QStringLiteral("type"),
                  QStringLiteral("name"),
                  QStringLiteral("description"),
                  QStringLiteral("m"),
                  QStringLiteral("k"),
                  QStringLiteral("n"),
                  QStringLiteral("seed"),
                  QStringLiteral("format"),
                  QStringLiteral("format_a"),
                  QStringLiteral("format_b"),
                  QStringLiteral("scaling"),
                  QStringLiteral("distribution"),
                  QStringLiteral("a"),
                  QStringLiteral("b"),
                  QStringLiteral("accumulation"),
                  QStringLiteral("promotion_interval"),
                  QStringLiteral("fast_accum_bits"),
                  QStringLiteral("fast_accum_group"),
                  QStringLiteral("fast_accum_promotes"),
                  QStringLiteral("output"),
                  QStringLiteral("output_quant_scale"),
                  QStringLiteral("tile"),
                  QStringLiteral("store_inputs"),
                  QStringLiteral("store_quantized"),
                  QStringLiteral("store_error_maps"),
                  QStringLiteral("sweep")},
                 error, ctx))
    return false;
  const int64_t big = int64_t(1) << 20;
  if (!getInt(o, "m", 1, big, &cfg->m, error, ctx) || !getInt(o, "k", 1, big, &cfg->k, error, ctx) ||
      !getInt(o, "n", 1, big, &cfg->n, error, ctx) || !getSeed(o, &cfg->seed, error))
    return false;
  std::string fmt;
  if (!getString(o, "format", &fmt, error, ctx)) return false;
  if (!fmt.empty()) cfg->format_a = cfg->format_b = fmt;
  if (!getString(o, "format_a", &cfg->format_a, error, ctx) || !getString(o, "format_b", &cfg->format_b, error, ctx) ||
      !getString(o, "scaling", &cfg->scaling, error, ctx))
    return false;
  for (const std::string* f : {&cfg->format_a, &cfg->format_b}) {
    const Format* ff = Format::byName(*f);
    if (!ff || ff->bits() > 8) {
      *error = QStringLiteral("format: '%1' is unknown or wider than 8 bits (known: %2)")
                   .arg(QString::fromStdString(*f), formatHelpList());
      return false;
    }
    noteFormatChoice(*ff);
  }
  if (const auto sp = scalingPreset(cfg->scaling)) {
    for (Axis ax : {Axis::Cols, Axis::Rows})
      if (const std::string why = gemmScalingProblem(*sp, ax); !why.empty()) {
        *error = QStringLiteral("scaling: %1").arg(QString::fromStdString(why));
        return false;
      }
  } else {
    QStringList n;
    for (const auto& p : scalingPresets())
      if (!p.delayed) n << QString::fromStdString(p.name);
    *error = QStringLiteral("scaling: '%1' is not a current-scaling preset (one of: %2)")
                 .arg(QString::fromStdString(cfg->scaling), n.join(QStringLiteral(", ")));
    return false;
  }
  std::string dist;
  if (!getString(o, "distribution", &dist, error, ctx)) return false;
  if (!dist.empty()) {
    auto d = parseDistribution(dist);
    if (!d) {
      *error = QStringLiteral("distribution: unknown '%1' (normal, uniform, lognormal, outliers)")
                   .arg(QString::fromStdString(dist));
      return false;
    }
    cfg->a.random.distribution = cfg->b.random.distribution = *d;
  }
  for (const char* key : {"a", "b"}) {
    const QString k = QString::fromLatin1(key);
    if (!o.contains(k)) continue;
    if (!o.value(k).isObject()) {
      *error = k + QStringLiteral(": expected an object");
      return false;
    }
    if (!parseOperand(o.value(k).toObject(), key[0] == 'a' ? &cfg->a : &cfg->b, error, k + QStringLiteral(".")))
      return false;
  }
  // A tensor operand brings its own shape: A [M, K], B [K, N]. An explicit m / k / n for it would be
  // ignored (or contradict the file), so it is refused, naming the file.
  {
    const std::string& ta = cfg->a.tensor;
    const std::string& tb = cfg->b.tensor;
    for (const char* dim : {"m", "k", "n"}) {
      const QString d = QString::fromLatin1(dim);
      if (!o.contains(d)) continue;
      const bool from_a = !ta.empty() && (d == QStringLiteral("m") || d == QStringLiteral("k"));
      const bool from_b = !tb.empty() && (d == QStringLiteral("k") || d == QStringLiteral("n"));
      if (from_a || from_b) {
        *error = QStringLiteral("%1: comes from the shape of the tensor file '%2'; leave it out")
                     .arg(d, QString::fromStdString(from_a ? ta : tb));
        return false;
      }
    }
  }
  std::string acc, outp;
  if (!getString(o, "accumulation", &acc, error, ctx) || !getString(o, "output", &outp, error, ctx)) return false;
  if (!acc.empty()) {
    auto a = parseAccumulation(acc);
    if (!a) {
      *error = QStringLiteral("accumulation: unknown '%1' (exact, fp32, split_fp32, fast_accum)")
                   .arg(QString::fromStdString(acc));
      return false;
    }
    cfg->gemm.accumulation = *a;
  }
  if (!outp.empty()) {
    auto t = parseOutputType(outp);
    if (!t) {
      *error =
          QStringLiteral("output: unknown '%1' (fp32, bf16, fp16, e4m3fn, e5m2)").arg(QString::fromStdString(outp));
      return false;
    }
    cfg->gemm.output = *t;
  }
  int64_t pi = cfg->gemm.promotion_interval, fb = cfg->gemm.fast_accum_bits, fg = cfg->gemm.fast_accum_group;
  double oqs = cfg->gemm.output_quant_scale;
  if (!getInt(o, "promotion_interval", 1, big, &pi, error, ctx) ||
      !getInt(o, "fast_accum_bits", 2, 24, &fb, error, ctx) ||
      !getInt(o, "fast_accum_group", 1, big, &fg, error, ctx) ||
      !getBool(o, "fast_accum_promotes", &cfg->gemm.fast_accum_promotes, error, ctx) ||
      !getDouble(o, "output_quant_scale", &oqs, error, ctx) || !getInt(o, "tile", 1, big, &cfg->tile, error, ctx) ||
      !getBool(o, "store_inputs", &cfg->store_inputs, error, ctx) ||
      !getBool(o, "store_quantized", &cfg->store_quantized, error, ctx) ||
      !getBool(o, "store_error_maps", &cfg->store_error_maps, error, ctx))
    return false;
  cfg->gemm.promotion_interval = static_cast<int>(pi);
  cfg->gemm.fast_accum_bits = static_cast<int>(fb);
  cfg->gemm.fast_accum_group = static_cast<int>(fg);
  cfg->gemm.output_quant_scale = static_cast<float>(oqs);
  if (o.contains(QStringLiteral("output_quant_scale"))) {
    try {
      checkOutputScale(cfg->gemm);
    } catch (const std::invalid_argument& e) {
      *error = QStringLiteral("output_quant_scale: %1").arg(QString::fromUtf8(e.what()));
      return false;
    }
  }
  if (o.contains(QStringLiteral("type")) && o.value(QStringLiteral("type")).toString() != QStringLiteral("gemm")) {
    *error = QStringLiteral("type: expected \"gemm\"");
    return false;
  }
  return true;
}

bool appendRunsToFile(const QString& out, const std::vector<Run>& runs, bool compress, std::vector<std::string>* ids) {
  WriteOptions wo;
  wo.compress = compress;
  wo.on_conflict = WriteOptions::OnConflict::Rename;
  TerminalProgress bar(QStringLiteral("saving"));
  wo.progress = [&](double f, const std::string& s) {
    bar.update(f, QString::fromStdString(s));
    return true;
  };
  Status st = appendRuns(out.toStdString(), runs, wo, ids);
  bar.finish();
  for (const auto& i : st.issues)
    if (i.severity != Warning::Severity::Error) err(QString::fromStdString(i.toString()));
  if (!st.ok()) {
    fail(QString::fromStdString(st.errors()));
    return false;
  }
  return true;
}

std::optional<DuplicateKey> firstDuplicateKey(const QByteArray& json) {
  struct Frame {
    bool object = false;
    bool expect_key = false;
    std::set<QString> keys;
  };
  std::vector<Frame> stack;
  for (qsizetype i = 0; i < json.size(); ++i) {
    const char ch = json[i];
    if (ch == '{') {
      stack.push_back({true, true, {}});
    } else if (ch == '[') {
      stack.push_back({false, false, {}});
    } else if ((ch == '}' || ch == ']') && !stack.empty()) {
      stack.pop_back();
    } else if (ch == ',' && !stack.empty() && stack.back().object) {
      stack.back().expect_key = true;
    } else if (ch == '"') {
      const qsizetype start = i;
      for (++i; i < json.size() && json[i] != '"'; ++i)
        if (json[i] == '\\') ++i;
      if (stack.empty() || !stack.back().object || !stack.back().expect_key) continue;
      stack.back().expect_key = false;
      // Unescape through Qt's own parser: the token is a valid JSON string.
      const QByteArray token = json.mid(start, i - start + 1);
      const QString key = QJsonDocument::fromJson("[" + token + "]").array().at(0).toString();
      if (!stack.back().keys.insert(key).second) {
        DuplicateKey d;
        d.key = key;
        for (qsizetype k = 0; k < start; ++k) {
          if (json[k] == '\n') {
            ++d.line;
            d.column = 1;
          } else {
            ++d.column;
          }
        }
        return d;
      }
    }
  }
  return std::nullopt;
}

namespace {

// ---- the "gemm" experiment type -------------------------------------------------------------

QString autoGemmId(const GemmExperimentConfig& c) {
  QString fmt = QString::fromStdString(c.format_a);
  if (c.format_b != c.format_a) fmt += QLatin1Char('x') + QString::fromStdString(c.format_b);
  const QString dist =
      c.a.tensor.empty() ? QString::fromLatin1(toString(c.a.random.distribution)) : QStringLiteral("import");
  return QStringLiteral("gemm-%1-%2-%3").arg(fmt, QString::fromStdString(c.scaling), dist);
}

/// Runs one GEMM config into a Run (progress on the terminal); nullopt after printing the error.
/// `backend` null = the CPU reference backend. A fallback of --backend auto to the CPU is noted
/// on stderr (unless quiet) and recorded in the run (recordBackend).
std::optional<Run> gemmRun(const GemmExperimentConfig& cfg, const QString& text, const QString& id, int threads,
                           bool quiet, const ProgressFn& outer = {}, ChosenGemmBackend* chosen = nullptr) {
  GemmExperimentConfig c = cfg;
  c.gemm.threads = threads;
  std::unique_ptr<ChosenGemmBackend> own;
  if (!chosen) {
    own = makeGemmBackend(BackendRequest::Cpu);
    chosen = own.get();
  }
  ChosenGemmBackend* backend = chosen;
  TerminalProgress bar(QStringLiteral("gemm %1").arg(id));
  ProgressFn p = [&](double f, const std::string& s) {
    if (!quiet) bar.update(f, QString::fromStdString(s));
    if (interrupted()) return false; // InterruptGuard: stop at the next check point
    return outer ? outer(f, s) : true;
  };
  Result<Run> r;
  try {
    r = runGemmExperimentRun(c, text.toStdString(), id.toStdString(), *backend, p);
  } catch (const Cancelled&) {
    bar.finish();
    return std::nullopt; // the caller reports the interrupt (interrupted() is set)
  }
  bar.finish();
  for (const auto& i : r.issues)
    if (i.severity != Warning::Severity::Error) err(QString::fromStdString(i.toString()));
  if (!r.ok()) {
    fail(QString::fromStdString(r.errors()));
    return std::nullopt;
  }
  const std::string fallback = backend->lastFallback();
  if (!fallback.empty() && !quiet)
    err(QStringLiteral("note: run %1: --backend %2").arg(id, QString::fromStdString(fallback)));
  recordBackend(r.value, *backend, c.gemm, !fallback.empty() ? fallback : backend->noGpuReason());
  return std::move(r.value);
}

QJsonObject metricsJson(const Run& r) {
  QJsonObject m;
  for (const auto& [k, v] : r.metrics) m.insert(QString::fromStdString(k), jsonNumber(v.value));
  return m;
}

void reportGemmRun(const Run& r, const QString& stored, const GemmExperimentConfig& cfg, const RunCliOptions& opt);

int runGemmType(const QJsonObject& o, const QString& text, const RunCliOptions& opt) {
  GemmExperimentConfig cfg;
  QString e;
  if (!parseGemmConfig(o, &cfg, &e)) return fail(QStringLiteral("config: %1").arg(e));
  if (o.contains(QStringLiteral("sweep")))
    err(QStringLiteral(
        "note: the config has a \"sweep\" object; `run` does one GEMM, `fp8lab-cli sweep` runs the grid"));
  QString id = !opt.run_id.isEmpty() ? opt.run_id : o.value(QStringLiteral("name")).toString();
  if (id.isEmpty()) id = autoGemmId(cfg);
  std::string why;
  if (!isValidRunId(id.toStdString(), &why)) return fail(QString::fromStdString(why));
  auto run = gemmRun(cfg, text, id, opt.threads, opt.quiet, {}, opt.backend);
  if (!run && interrupted()) {
    std::fprintf(stderr,
                 "fp8lab-cli: interrupted by %s: GEMM run '%s' stopped before it finished and was not saved "
                 "(%s keeps what it held, with any runs finished before)\n",
                 interruptName().toUtf8().constData(), id.toUtf8().constData(), opt.out.toUtf8().constData());
    return interruptedExitCode();
  }
  if (!run) return 2;
  auto report = [cfg, opt](const Run& r, const QString& stored) { reportGemmRun(r, stored, cfg, opt); };
  if (opt.batch) {
    opt.batch->push_back({std::move(*run), report});
    return 0;
  }
  std::vector<std::string> ids;
  // A signal during the save does not stop it (the run is finished; saving takes seconds): the
  // command ends after it. Only a third signal ends the process at once (InterruptGuard).
  setInterruptLossNote(QStringLiteral("the save of run '%1' in progress (%2 keeps what it held before; saves are "
                                      "atomic)")
                           .arg(id, opt.out));
  if (!appendRunsToFile(opt.out, {*run}, opt.compress, &ids)) return 2;
  report(*run, QString::fromStdString(ids.empty() ? run->id : ids[0]));
  return 0;
}

/// Prints what `run` reports for a saved GEMM run (JSON object or two text lines).
void reportGemmRun(const Run& r, const QString& stored, const GemmExperimentConfig& cfg, const RunCliOptions& opt) {
  const Run* run = &r;
  if (opt.json) {
    QJsonObject j{
        {QStringLiteral("file"), opt.out},
        {QStringLiteral("run"), stored},
        {QStringLiteral("type"), QStringLiteral("gemm")},
        {QStringLiteral("backend"), QString::fromStdString(run->backend)},
        {QStringLiteral("device"), QString::fromStdString(run->device)},
        {QStringLiteral("algorithm"), QString::fromStdString(attrString(run->attrs, "algorithm").value_or(""))},
        {QStringLiteral("metrics"), metricsJson(*run)}};
    if (opt.backend)
      addBackendJson(j, *opt.backend, run->backend, cfg.gemm, attrString(run->attrs, "backend_note").value_or(""));
    out(toJsonText(j) + "\n");
  } else {
    auto met = [&](const char* k) {
      return run->metrics.count(k) ? num(run->metrics.at(k).value) : QStringLiteral("-");
    };
    out(QStringLiteral("run %1 (gemm %2x%3x%4, %5 x %6, %7, %8 backend: %15) -> %9\n"
                       "  SQNR %10 dB  rel_fro %11  max_abs %12  (quantization %13 dB, accumulation %14 dB)\n")
            .arg(stored)
            // the shape that ran (tensor operands bring their own; the config's m/k/n are defaults)
            .arg(attrInt(run->attrs, "m").value_or(cfg.m))
            .arg(attrInt(run->attrs, "k").value_or(cfg.k))
            .arg(attrInt(run->attrs, "n").value_or(cfg.n))
            .arg(QString::fromStdString(cfg.format_a), QString::fromStdString(cfg.format_b),
                 QString::fromStdString(cfg.scaling), QString::fromStdString(run->backend), opt.out)
            .arg(met("sqnr_db"), met("rel_fro"), met("max_abs"), met("quant_sqnr_db"), met("accum_sqnr_db"))
            .arg(QString::fromStdString(run->device)));
  }
}

std::optional<Run> reproduceGemm(const Run& stored, int threads, const ProgressFn& progress, QString* error) {
  QJsonParseError pe;
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(stored.config_json), &pe);
  if (!doc.isObject()) {
    *error = QStringLiteral("the stored config is not a JSON object: %1").arg(pe.errorString());
    return std::nullopt;
  }
  GemmExperimentConfig cfg;
  if (!parseGemmConfig(doc.object(), &cfg, error)) return std::nullopt;
  if (cfg.seed != stored.seed) {
    *error = QStringLiteral("the stored seed attribute (%1) disagrees with the config's seed (%2)")
                 .arg(stored.seed)
                 .arg(cfg.seed);
    return std::nullopt;
  }
  cfg.gemm.threads = threads;
  auto backend = makeCpuGemmBackend();
  auto r = runGemmExperimentRun(cfg, stored.config_json, stored.id, *backend, progress);
  if (!r.ok()) {
    *error = QString::fromStdString(r.errors());
    return std::nullopt;
  }
  return std::move(r.value);
}

const ExperimentTypeRegistrar gemmType({QStringLiteral("gemm"), runGemmType, reproduceGemm,
                                        [](const QJsonObject& o, QString* error) {
                                          GemmExperimentConfig cfg;
                                          return parseGemmConfig(o, &cfg, error);
                                        }});

// Experiment types provided elsewhere register themselves with an ExperimentTypeRegistrar
// (for example the training path: type "training", runTrainingExperiment /
// reproduceTrainingRun of run_training.h).

// ---- config files ---------------------------------------------------------------------------

struct LoadedConfig {
  QJsonObject root;
  QString text;
  QString origin;
};

bool loadConfig(const QString& path, LoadedConfig* c) {
  QFile f(path);
  if (path.isEmpty()) {
    for (const QString& res :
         {QStringLiteral(":/fp8lab/experiments/default.json"), QStringLiteral(":/experiments/default.json")}) {
      f.setFileName(res);
      if (f.exists()) break;
    }
    if (!f.exists()) {
      fail(QStringLiteral("no CONFIG.json given and this build has no embedded default experiment"));
      return false;
    }
  }
  QByteArray bytes;
  if (path.isEmpty()) { // the embedded default (a Qt resource)
    if (!f.open(QIODevice::ReadOnly)) {
      fail(QStringLiteral("cannot read config '%1': %2").arg(f.fileName(), f.errorString()));
      return false;
    }
    bytes = f.readAll();
  } else { // a regular file of at most 64 MiB: never a FIFO (blocks) or /dev/zero (endless)
    QString err;
    const auto b = readInputFile(path, InputKind::Config, QStringLiteral("config"), kMaxConfigBytes, &err);
    if (!b) {
      fail(err);
      return false;
    }
    bytes = *b;
  }
  QJsonParseError pe;
  const QJsonDocument doc = QJsonDocument::fromJson(bytes, &pe);
  if (pe.error != QJsonParseError::NoError) {
    // line/column of the offset, for humans
    int line = 1, col = 1;
    for (int i = 0; i < pe.offset && i < bytes.size(); ++i) {
      if (bytes[i] == '\n') {
        ++line;
        col = 1;
      } else
        ++col;
    }
    fail(QStringLiteral("config '%1' is not valid JSON: %2 at line %3, column %4")
             .arg(f.fileName(), pe.errorString())
             .arg(line)
             .arg(col));
    return false;
  }
  if (!doc.isObject()) {
    fail(QStringLiteral("config '%1': expected a JSON object at the top").arg(f.fileName()));
    return false;
  }
  if (const auto dup = firstDuplicateKey(bytes)) {
    fail(QStringLiteral("config '%1': key \"%2\" appears twice in the same object (the second at line %3, column %4); "
                        "JSON readers disagree on which one counts, so remove one")
             .arg(f.fileName(), dup->key)
             .arg(dup->line)
             .arg(dup->column));
    return false;
  }
  c->root = doc.object();
  c->text = QString::fromUtf8(bytes);
  c->origin = f.fileName();
  return true;
}

/// The experiment objects of a config and the text to store for each.
std::vector<std::pair<QJsonObject, QString>> experimentsOf(const LoadedConfig& c, QString* error) {
  std::vector<std::pair<QJsonObject, QString>> r;
  if (c.root.contains(QStringLiteral("experiments"))) {
    const QJsonValue v = c.root.value(QStringLiteral("experiments"));
    if (!v.isArray() || v.toArray().isEmpty()) {
      *error = QStringLiteral("experiments: expected a non-empty array of experiment objects");
      return {};
    }
    int i = 0;
    for (const auto& e : v.toArray()) {
      if (!e.isObject()) {
        *error = QStringLiteral("experiments[%1]: expected an object").arg(i);
        return {};
      }
      r.emplace_back(e.toObject(), QString::fromUtf8(QJsonDocument(e.toObject()).toJson(QJsonDocument::Compact)));
      ++i;
    }
    return r;
  }
  r.emplace_back(c.root, c.text);
  return r;
}

QString typeOf(const QJsonObject& o) {
  QString t = o.value(QStringLiteral("type")).toString();
  if (t.isEmpty() && o.contains(QStringLiteral("m"))) t = QStringLiteral("gemm");
  return t;
}

// ---- run ------------------------------------------------------------------------------------

QCommandLineOption outOption() {
  return {{QStringLiteral("o"), QStringLiteral("out")},
          QStringLiteral("Session file to write (created or appended to)."),
          QStringLiteral("FILE.h5")};
}
QCommandLineOption noCompressOption() {
  return {QStringLiteral("no-compress"), QStringLiteral("Store datasets uncompressed (faster, larger).")};
}
QCommandLineOption threadsOption() {
  return {QStringLiteral("threads"), QStringLiteral("Worker threads (0 = all cores; results do not depend on it)."),
          QStringLiteral("N"), QStringLiteral("0")};
}
QCommandLineOption jsonOption() {
  return {QStringLiteral("json"), QStringLiteral("Machine-readable JSON output.")};
}
QCommandLineOption quietOption() {
  return {{QStringLiteral("q"), QStringLiteral("quiet")}, QStringLiteral("No progress output.")};
}

int runRun(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Runs the experiment(s) of CONFIG.json and appends the runs to a session file.\n"
      "CONFIG holds one experiment object ({\"type\": \"gemm\" | \"training\", ...}) or {\"experiments\": [...]};\n"
      "without CONFIG the embedded default experiment runs. Schema: docs/session-format.md."));
  p.addPositionalArgument(QStringLiteral("CONFIG.json"), QStringLiteral("Experiment config (optional)."));
  const auto o = outOption(), nc = noCompressOption(), th = threadsOption(), js = jsonOption(), q = quietOption();
  const QCommandLineOption idOpt(QStringLiteral("id"), QStringLiteral("Run id (single-run configs)."),
                                 QStringLiteral("ID"));
  const QCommandLineOption dataOpt(QStringLiteral("data-dir"), QStringLiteral("Fashion-MNIST directory (training)."),
                                   QStringLiteral("DIR"));
  const QCommandLineOption be = backendOption();
  p.addOptions({o, idOpt, nc, th, dataOpt, be, js, q});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() > 1) return fail(QStringLiteral("run takes at most one CONFIG.json"));
  RunCliOptions opt;
  opt.out = p.value(o);
  if (opt.out.isEmpty()) return fail(QStringLiteral("--out FILE.h5 is required"));
  opt.run_id = p.value(idOpt);
  opt.json = p.isSet(js);
  opt.quiet = p.isSet(q);
  opt.compress = !p.isSet(nc);
  opt.data_dir = p.value(dataOpt);
  opt.threads = parseThreads(p.value(th));
  if (opt.threads < 0) return 2;
  // Refuse an output that cannot be written before computing anything.
  if (!outputWritableOrFail(opt.out)) return 2;
  if (!parseBackendRequest(p.value(be)))
    return fail(QStringLiteral("--backend must be auto, cpu or gpu (got '%1')").arg(p.value(be)));
  LoadedConfig c;
  if (!loadConfig(p.positionalArguments().value(0), &c)) return 2;
  QString e;
  auto exps = experimentsOf(c, &e);
  if (exps.empty()) return fail(QStringLiteral("config: %1").arg(e));
  if (exps.size() > 1 && !opt.run_id.isEmpty())
    return fail(QStringLiteral("--id needs a config with a single experiment"));
  // Check every experiment first (type, then its schema), so a typo in the last experiment does
  // not waste the first ones; errors name the experiment ("experiments[1]: k: ...").
  for (size_t i = 0; i < exps.size(); ++i) {
    const QJsonObject& obj = exps[i].first;
    const QString where = exps.size() > 1 ? QStringLiteral("experiments[%1]").arg(i) : QStringLiteral("config");
    const QString t = typeOf(obj);
    const ExperimentType* type = findType(t);
    if (!type)
      return fail(
          t.isEmpty()
              ? QStringLiteral("%1: missing \"type\" (one of: %2)").arg(where, typeNames())
              : QStringLiteral("%1: unknown experiment type '%2' (this build knows: %3)").arg(where, t, typeNames()));
    QString why;
    if (type->validate && !type->validate(obj, &why)) return fail(QStringLiteral("%1: %2").arg(where, why));
  }
  const auto backend = makeChosenBackend(p.value(be), opt.quiet);
  if (!backend) return 2;
  opt.backend = backend.get();
  InterruptGuard interrupt_guard; // Ctrl-C / SIGTERM / SIGHUP: finish the save in progress, then stop
  // Several experiments: GEMM runs are saved in batches (RunCliOptions::batch), one rewrite each.
  std::vector<RunCliOptions::PendingRun> batch;
  if (exps.size() > 1) opt.batch = &batch;
  auto noteLoss = [&]() {
    setInterruptLossNote(
        batch.empty()
            ? QStringLiteral("the experiment in progress; %1 holds the runs finished before it").arg(opt.out)
            : QStringLiteral("%1 finished run(s) not yet saved and the experiment in progress; %2 keeps what it "
                             "held")
                  .arg(batch.size())
                  .arg(opt.out));
  };
  noteLoss();
  auto flush = [&]() {
    if (batch.empty()) return true;
    std::vector<Run> runs;
    for (auto& b : batch) runs.push_back(std::move(b.run));
    std::vector<std::string> ids;
    setInterruptLossNote(QStringLiteral("the save of %1 finished run(s) in progress (%2 keeps what it held before; "
                                        "saves are atomic)")
                             .arg(runs.size())
                             .arg(opt.out));
    const bool saved = appendRunsToFile(opt.out, runs, opt.compress, &ids);
    if (saved)
      for (size_t i = 0; i < runs.size(); ++i)
        batch[i].report(runs[i], QString::fromStdString(i < ids.size() ? ids[i] : runs[i].id));
    batch.clear();
    noteLoss();
    return saved;
  };
  auto batch_since = std::chrono::steady_clock::now();
  auto batchBytes = [&]() {
    int64_t n = 0;
    for (const auto& b : batch)
      for (const auto& [k, d] : b.run.datasets) n += d.storedCount() * int64_t(d.elementBytes());
    return n;
  };
  for (size_t i = 0; i < exps.size(); ++i) {
    const auto& [obj, text] = exps[i];
    const ExperimentType* type = findType(typeOf(obj));
    // A training experiment saves into the file itself: save what is pending first.
    if (type->type != QStringLiteral("gemm") && !flush()) return 2;
    const int r = type->run(obj, text, opt);
    noteLoss();
    if (r != 0) {
      // Keep the finished runs: save the batch, then report the failure's exit status.
      if (!flush()) return 2;
      return r;
    }
    // GEMM results are printed when their batch is saved; this line says the work goes on.
    if (exps.size() > 1 && !opt.quiet && !opt.json)
      err(QStringLiteral("run: experiment %1/%2 done%3")
              .arg(i + 1)
              .arg(exps.size())
              .arg(batch.empty() ? QString() : QStringLiteral(" (its run is saved with the next batch)")));
    // A batch is saved at least every 30 s, so a kill -9 or a crash loses at most that much work
    // (an append costs a file copy plus the new runs).
    if (batch.empty())
      batch_since = std::chrono::steady_clock::now();
    else if (std::chrono::steady_clock::now() - batch_since > std::chrono::seconds(30) && !flush())
      return 2;
    if (batchBytes() > (int64_t(256) << 20) && !flush()) return 2;
    if (interrupted()) {
      if (!flush()) return 2;
      std::fprintf(stderr, "fp8lab-cli: interrupted by %s; the finished runs are saved in %s\n",
                   interruptName().toUtf8().constData(), opt.out.toUtf8().constData());
      return interruptedExitCode();
    }
  }
  if (!flush()) return 2;
  if (interrupted()) { // arrived during the last experiment's end or the final save: all is saved
    std::fprintf(stderr, "fp8lab-cli: interrupted by %s; the finished runs are saved in %s\n",
                 interruptName().toUtf8().constData(), opt.out.toUtf8().constData());
    return interruptedExitCode();
  }
  if (!opt.json && !opt.quiet) err(QStringLiteral("session written: %1").arg(QFileInfo(opt.out).absoluteFilePath()));
  return 0;
}

// ---- sweep ----------------------------------------------------------------------------------

QStringList jsonStrings(const QJsonValue& v) {
  QStringList r;
  if (v.isString()) r << v.toString();
  for (const auto& x : v.toArray()) r << x.toString();
  return r;
}

int runSweep(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(
      QStringLiteral("Runs a grid of GEMM experiments: formats x scalings x distributions, one run each.\n"
                     "CONFIG.json is a GEMM config with a \"sweep\" object, e.g.\n"
                     "  {\"type\": \"gemm\", \"m\": 256, \"k\": 256, \"n\": 256, \"seed\": 1,\n"
                     "   \"sweep\": {\"formats\": [\"E4M3FN\", \"E5M2\", \"E4M3FN:E5M2\"], \"scalings\": "
                     "[\"te_current\", \"mx_rceil\"],\n"
                     "             \"distributions\": [\"normal\", \"lognormal\"]}}\n"
                     "(\"A:B\" gives A and B different formats). Options override the sweep lists.\n"
                     "--shard i/n runs the grid points g with g mod n == i (0-based), so shards can run on\n"
                     "separate machines (e.g. a Slurm array: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT);\n"
                     "join their files with `fp8lab-cli merge`."));
  p.addPositionalArgument(QStringLiteral("CONFIG.json"), QStringLiteral("GEMM config with a sweep object."));
  const auto o = outOption(), nc = noCompressOption(), th = threadsOption(), js = jsonOption(), q = quietOption();
  const QCommandLineOption shardOpt(QStringLiteral("shard"), QStringLiteral("Run slice i of n (0 <= i < n)."),
                                    QStringLiteral("i/n"));
  const QCommandLineOption fOpt(QStringLiteral("formats"), QStringLiteral("Comma-separated formats (A or A:B)."),
                                QStringLiteral("LIST"));
  const QCommandLineOption sOpt(QStringLiteral("scalings"), QStringLiteral("Comma-separated scaling presets."),
                                QStringLiteral("LIST"));
  const QCommandLineOption dOpt(QStringLiteral("distributions"), QStringLiteral("Comma-separated distributions."),
                                QStringLiteral("LIST"));
  const QCommandLineOption dryOpt(QStringLiteral("dry-run"),
                                  QStringLiteral("List the grid points of this shard and exit."));
  const QCommandLineOption recomputeOpt(
      QStringLiteral("recompute"),
      QStringLiteral("Also run grid points already in --out with the same configuration (by default they are "
                     "skipped, so a sweep run again after an interruption resumes); new copies get -2 ids."));
  const QCommandLineOption be = backendOption();
  p.addOptions({o, shardOpt, fOpt, sOpt, dOpt, nc, th, be, js, q, dryOpt, recomputeOpt});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (p.positionalArguments().size() != 1) return fail(QStringLiteral("sweep needs exactly one CONFIG.json"));
  const QString outPath = p.value(o);
  if (outPath.isEmpty() && !p.isSet(dryOpt)) return fail(QStringLiteral("--out FILE.h5 is required"));
  if (!p.isSet(dryOpt) && !outputWritableOrFail(outPath)) return 2;
  const int threads = parseThreads(p.value(th));
  if (threads < 0) return 2;
  int shard = 0, shards = 1;
  if (p.isSet(shardOpt)) {
    static const QRegularExpression re(QStringLiteral("^(\\d+)/(\\d+)$"));
    const auto m = re.match(p.value(shardOpt));
    shard = m.captured(1).toInt();
    shards = m.captured(2).toInt();
    if (!m.hasMatch() || shards < 1 || shard >= shards)
      return fail(QStringLiteral("--shard: expected i/n with 0 <= i < n, got '%1'").arg(p.value(shardOpt)));
  }
  if (!outPath.isEmpty() && (QFileInfo(outPath).isDir() || !QFileInfo(outPath).absoluteDir().exists()))
    return fail(QStringLiteral("write failed: --out %1 is a directory or its directory does not exist").arg(outPath));
  LoadedConfig c;
  if (!loadConfig(p.positionalArguments()[0], &c)) return 2;
  QJsonObject base = c.root;
  if (typeOf(base) != QStringLiteral("gemm"))
    return fail(QStringLiteral("sweep: the config must be a GEMM experiment (\"type\": \"gemm\")"));
  const QJsonObject sw = base.value(QStringLiteral("sweep")).toObject();
  for (auto it = sw.begin(); it != sw.end(); ++it)
    if (it.key() != QStringLiteral("formats") && it.key() != QStringLiteral("scalings") &&
        it.key() != QStringLiteral("distributions"))
      return fail(QStringLiteral("sweep.%1: unknown key (formats, scalings, distributions)").arg(it.key()));
  base.remove(QStringLiteral("sweep"));
  base.remove(QStringLiteral("name"));
  GemmExperimentConfig probe;
  QString e;
  if (!parseGemmConfig(base, &probe, &e)) return fail(QStringLiteral("config: %1").arg(e));
  QString list_error; // an axis given but empty ("--formats ''", "formats": []) is a mistake, not the default
  auto listOf = [&](const QCommandLineOption& opt, const char* key, const QString& dflt) {
    const bool given = p.isSet(opt) || sw.contains(QString::fromLatin1(key));
    QStringList l = p.isSet(opt) ? p.value(opt).split(QLatin1Char(','), Qt::SkipEmptyParts)
                                 : jsonStrings(sw.value(QString::fromLatin1(key)));
    for (auto& x : l) x = x.trimmed();
    l.removeAll(QString());
    if (l.isEmpty() && given && list_error.isEmpty())
      list_error = (p.isSet(opt) ? QStringLiteral("--%1").arg(QString::fromLatin1(key))
                                 : QStringLiteral("sweep.%1").arg(QString::fromLatin1(key))) +
                   QStringLiteral(": an empty list (leave it out to use the config's own value)");
    if (l.isEmpty()) l << dflt;
    return l;
  };
  const QStringList formats = listOf(
      fOpt, "formats",
      QString::fromStdString(probe.format_a) +
          (probe.format_b != probe.format_a ? QLatin1Char(':') + QString::fromStdString(probe.format_b) : QString()));
  const QStringList scalings = listOf(sOpt, "scalings", QString::fromStdString(probe.scaling));
  const QStringList dists = listOf(dOpt, "distributions", QString::fromLatin1(toString(probe.a.random.distribution)));
  if (!list_error.isEmpty()) return fail(list_error);
  for (const QString& f : formats) {
    const QStringList ab = f.split(QLatin1Char(':'));
    if (ab.size() > 2 || ab.contains(QString()))
      return fail(QStringLiteral("formats: '%1' is not FORMAT or FORMAT_A:FORMAT_B").arg(f));
  }

  struct Point {
    int index;
    QString id;
    QJsonObject obj;
    QString fmt, scaling, dist;
  };
  std::vector<Point> grid;
  int g = 0;
  for (const auto& f : formats)
    for (const auto& s : scalings)
      for (const auto& d : dists) {
        Point pt{g++, {}, base, f, s, d};
        const QStringList ab = f.split(QLatin1Char(':'));
        pt.obj.remove(QStringLiteral("format"));
        pt.obj.insert(QStringLiteral("format_a"), ab[0]);
        pt.obj.insert(QStringLiteral("format_b"), ab.value(1, ab[0]));
        pt.obj.insert(QStringLiteral("scaling"), s);
        pt.obj.insert(QStringLiteral("distribution"), d);
        for (const char* op : {"a", "b"}) { // the grid's distribution wins over per-operand ones
          QJsonObject oo = pt.obj.value(QString::fromLatin1(op)).toObject();
          if (oo.contains(QStringLiteral("distribution"))) {
            oo.remove(QStringLiteral("distribution"));
            pt.obj.insert(QString::fromLatin1(op), oo);
          }
        }
        QString fid = ab[0] + (ab.size() > 1 && ab[1] != ab[0] ? QLatin1Char('x') + ab[1] : QString());
        pt.id = QStringLiteral("sweep-%1-%2-%3").arg(fid, s, d);
        pt.obj.insert(QStringLiteral("name"), pt.id);
        GemmExperimentConfig cc;
        if (!parseGemmConfig(pt.obj, &cc, &e))
          return fail(QStringLiteral("grid point %1 (%2): %3").arg(pt.index).arg(pt.id, e));
        std::string why;
        if (!isValidRunId(pt.id.toStdString(), &why)) return fail(QString::fromStdString(why));
        if (pt.index % shards == shard) grid.push_back(pt);
      }
  const bool json = p.isSet(js), quiet = p.isSet(q);
  if (!parseBackendRequest(p.value(be)))
    return fail(QStringLiteral("--backend must be auto, cpu or gpu (got '%1')").arg(p.value(be)));
  if (p.isSet(dryOpt)) {
    for (const auto& pt : grid) out(QStringLiteral("%1 %2\n").arg(pt.index).arg(pt.id));
    return 0;
  }
  // Resume: grid points whose run is already in the file with the same configuration (the stored
  // config object equals the point's, name included) are skipped and reported.
  QStringList skipped;
  if (!p.isSet(recomputeOpt) && QFileInfo::exists(outPath)) {
    auto rd = SessionReader::open(outPath.toStdString());
    if (!rd.ok()) return fail(QString::fromStdString(rd.errors()));
    std::vector<QJsonObject> stored;
    for (const RunInfo& ri : rd.value->info().runs) {
      const QJsonDocument d = QJsonDocument::fromJson(QByteArray::fromStdString(ri.config_json));
      if (ri.type == "gemm" && d.isObject()) stored.push_back(d.object());
    }
    std::erase_if(grid, [&](const Point& pt) {
      const bool done = std::find(stored.begin(), stored.end(), pt.obj) != stored.end();
      if (done) skipped << pt.id;
      return done;
    });
    if (!skipped.isEmpty() && !quiet)
      err(QStringLiteral("sweep: %1 grid point(s) already in %2 with the same configuration, skipped (--recompute "
                         "runs them again): %3")
              .arg(skipped.size())
              .arg(outPath, skipped.size() <= 12
                                ? skipped.join(QStringLiteral(", "))
                                : skipped.mid(0, 12).join(QStringLiteral(", ")) + QStringLiteral(", ...")));
  }
  if (grid.empty() && !skipped.isEmpty()) {
    if (json)
      out(toJsonText(QJsonObject{{QStringLiteral("file"), outPath},
                                 {QStringLiteral("shard"), shard},
                                 {QStringLiteral("shards"), shards},
                                 {QStringLiteral("grid_size"), g},
                                 {QStringLiteral("skipped"), QJsonArray::fromStringList(skipped)},
                                 {QStringLiteral("runs"), QJsonArray()}}) +
          "\n");
    else
      err(QStringLiteral("sweep: nothing to run: every grid point of this shard is already in %1 (file unchanged)")
              .arg(outPath));
    return 0;
  }
  const auto backend = makeChosenBackend(p.value(be), quiet);
  if (!backend) return 2;
  std::set<std::string> noted;  // each fallback reason once on stderr
  std::set<std::string> ran_on; // "backend (device)" of the runs
  if (!quiet)
    err(QStringLiteral("sweep: %1 of %2 grid points (shard %3/%4) -> %5")
            .arg(grid.size())
            .arg(g)
            .arg(shard)
            .arg(shards)
            .arg(outPath));

  InterruptGuard interrupt_guard; // Ctrl-C / SIGTERM / SIGHUP: save the finished points, then stop
  const bool stderr_tty = ::isatty(2) == 1;
  TerminalProgress bar(QStringLiteral("sweep"));
  std::vector<Run> pending;
  int64_t pending_bytes = 0;
  QJsonArray rows;
  struct Row {
    QString id, fmt, scaling, dist;
    double sqnr, rel_fro, max_rel, sat;
  };
  std::vector<Row> table;
  auto noteLoss = [&]() {
    setInterruptLossNote(QStringLiteral("%1 finished grid point(s) not yet saved and the point in progress; %2 keeps "
                                        "what it held")
                             .arg(pending.size())
                             .arg(outPath));
  };
  noteLoss();
  auto flush = [&]() {
    if (pending.empty()) return true;
    std::vector<std::string> ids;
    setInterruptLossNote(QStringLiteral("the save of %1 finished grid point(s) in progress (%2 keeps what it held "
                                        "before; saves are atomic)")
                             .arg(pending.size())
                             .arg(outPath));
    WriteOptions wo;
    wo.compress = !p.isSet(nc);
    wo.on_conflict = WriteOptions::OnConflict::Rename;
    Status st = appendRuns(outPath.toStdString(), pending, wo, &ids);
    if (!st.ok()) {
      fail(QString::fromStdString(st.errors()));
      return false;
    }
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] != pending[i].id)
        err(QStringLiteral("note: run %1 stored as %2 (id taken)")
                .arg(QString::fromStdString(pending[i].id), QString::fromStdString(ids[i])));
    pending.clear();
    pending_bytes = 0;
    noteLoss();
    return true;
  };
  for (size_t i = 0; i < grid.size(); ++i) {
    const auto& pt = grid[i];
    GemmExperimentConfig cc;
    parseGemmConfig(pt.obj, &cc, &e);
    const QString text = QString::fromUtf8(QJsonDocument(pt.obj).toJson(QJsonDocument::Compact));
    ProgressFn outer = [&](double f, const std::string&) {
      if (!quiet)
        bar.update((double(i) + f) / double(grid.size()),
                   QStringLiteral("%1/%2 %3").arg(i + 1).arg(grid.size()).arg(pt.id));
      return true;
    };
    auto run = gemmRun(cc, text, pt.id, threads, true, outer, backend.get());
    if (run && !quiet) {
      const auto note = attrString(run->attrs, "backend_note");
      if (note && run->backend == "cpu" && backend->hasGpu() && noted.insert(*note).second)
        err(QStringLiteral("note: %1: --backend %2").arg(pt.id, QString::fromStdString(*note)));
    }
    if (!run) {
      const bool saved = flush(); // keep what is done
      if (interrupted()) {
        bar.finish();
        std::fprintf(stderr,
                     "fp8lab-cli: interrupted by %s at grid point %zu of %zu (%s); %s the %zu finished point%s in %s\n",
                     interruptName().toUtf8().constData(), i + 1, grid.size(), pt.id.toUtf8().constData(),
                     saved ? "saved" : "could not save", i, i == 1 ? "" : "s", outPath.toUtf8().constData());
        return interruptedExitCode();
      }
      return 2;
    }
    auto met = [&](const char* k) { return run->metrics.count(k) ? run->metrics.at(k).value : std::nan(""); };
    ran_on.insert(run->backend + " (" + run->device + ")");
    table.push_back({pt.id, pt.fmt, pt.scaling, pt.dist, met("sqnr_db"), met("rel_fro"), met("max_rel"),
                     met("a_saturated") + met("b_saturated")});
    rows.append(QJsonObject{
        {QStringLiteral("run"), pt.id},
        {QStringLiteral("grid_index"), pt.index},
        {QStringLiteral("format"), pt.fmt},
        {QStringLiteral("scaling"), pt.scaling},
        {QStringLiteral("distribution"), pt.dist},
        {QStringLiteral("backend"), QString::fromStdString(run->backend)},
        {QStringLiteral("device"), QString::fromStdString(run->device)},
        {QStringLiteral("backend_note"), QString::fromStdString(attrString(run->attrs, "backend_note").value_or(""))},
        {QStringLiteral("metrics"), metricsJson(*run)}});
    // Without a terminal (a log file, CI, Slurm) there is no progress bar: one line per point.
    if (!quiet && !stderr_tty)
      err(QStringLiteral("sweep: %1/%2 %3 done (SQNR %4 dB)")
              .arg(i + 1)
              .arg(grid.size())
              .arg(pt.id, num(met("sqnr_db"))));
    for (const auto& [k, d] : run->datasets) pending_bytes += d.storedCount() * int64_t(d.elementBytes());
    pending.push_back(std::move(*run));
    noteLoss();
    if (pending_bytes > (int64_t(256) << 20) && !flush()) return 2;
    if (interrupted() && i + 1 < grid.size()) { // arrived after the point's last check
      const bool saved = flush();
      bar.finish();
      std::fprintf(stderr, "fp8lab-cli: interrupted by %s after grid point %zu of %zu; %s the finished points in %s\n",
                   interruptName().toUtf8().constData(), i + 1, grid.size(), saved ? "saved" : "could not save",
                   outPath.toUtf8().constData());
      return interruptedExitCode();
    }
  }
  if (!flush()) return 2;
  bar.finish();
  if (interrupted()) { // arrived after the last point's last check: everything is saved
    std::fprintf(stderr, "fp8lab-cli: interrupted by %s after the last grid point; all %zu points are saved in %s\n",
                 interruptName().toUtf8().constData(), grid.size(), outPath.toUtf8().constData());
    return interruptedExitCode();
  }
  if (json) {
    out(toJsonText(QJsonObject{{QStringLiteral("file"), outPath},
                               {QStringLiteral("shard"), shard},
                               {QStringLiteral("shards"), shards},
                               {QStringLiteral("backend_request"), QString::fromLatin1(toString(backend->request()))},
                               {QStringLiteral("grid_size"), g},
                               {QStringLiteral("skipped"), QJsonArray::fromStringList(skipped)},
                               {QStringLiteral("runs"), rows}}) +
        "\n");
    return 0;
  }
  QString t = QStringLiteral("%1  %2  %3  %4  %5  %6  %7\n")
                  .arg(QStringLiteral("run"), -40)
                  .arg(QStringLiteral("format"), -14)
                  .arg(QStringLiteral("scaling"), -22)
                  .arg(QStringLiteral("distribution"), -12)
                  .arg(QStringLiteral("SQNR dB"), 9)
                  .arg(QStringLiteral("rel_fro"), 11)
                  .arg(QStringLiteral("saturated"), 9);
  for (const auto& r : table)
    t += QStringLiteral("%1  %2  %3  %4  %5  %6  %7\n")
             .arg(r.id, -40)
             .arg(r.fmt, -14)
             .arg(r.scaling, -22)
             .arg(r.dist, -12)
             .arg(num(r.sqnr), 9)
             .arg(num(r.rel_fro), 11)
             .arg(num(r.sat), 9);
  for (const auto& b : ran_on) t += QStringLiteral("backend %1\n").arg(QString::fromStdString(b));
  out(t);
  err(QStringLiteral("session written: %1").arg(QFileInfo(outPath).absoluteFilePath()));
  return 0;
}

// ---- rerun ----------------------------------------------------------------------------------

int runRerun(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Re-runs a stored run from its configuration and seed on the CPU backend and compares every\n"
      "dataset and metric bit for bit with the stored one. Exit 0: identical; 1: differences (listed).\n"
      "Always the CPU reference backend: the bit-for-bit promise is for the CPU; a run stored from the GPU\n"
      "(backend \"cuda\") is compared with the CPU model, and the differences are listed."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  p.addPositionalArgument(QStringLiteral("RUN_ID"), QStringLiteral("Run to reproduce."));
  const auto th = threadsOption(), js = jsonOption(), q = quietOption();
  const QCommandLineOption saveOpt(QStringLiteral("out"),
                                   QStringLiteral("Also save the new run into this session file."),
                                   QStringLiteral("FILE.h5"));
  const QCommandLineOption be(QStringLiteral("backend"),
                              QStringLiteral("Only cpu: rerun reproduces on the CPU reference backend."),
                              QStringLiteral("cpu"), QStringLiteral("cpu"));
  p.addOptions({saveOpt, th, be, js, q});
  int rc = 0;
  if (!parseArgs(p, args, &rc)) return rc;
  if (parseBackendRequest(p.value(be)) != BackendRequest::Cpu)
    return fail(
        QStringLiteral("rerun reproduces on the CPU reference backend only (its bit-for-bit promise is for the CPU); "
                       "to repeat a run on the GPU, run its config again: fp8lab-cli run CONFIG.json --backend gpu"));
  if (p.positionalArguments().size() != 2) return fail(QStringLiteral("rerun needs FILE.h5 and RUN_ID"));
  const QString file = p.positionalArguments()[0], id = p.positionalArguments()[1];
  const int threads = parseThreads(p.value(th));
  if (threads < 0) return 2;
  auto rd = SessionReader::open(file.toStdString());
  if (!rd.ok()) return fail(QString::fromStdString(rd.errors()));
  auto stored = rd.value->readRun(id.toStdString());
  if (!stored.ok()) return fail(QString::fromStdString(stored.errors()));
  rd.value.reset();
  const Run& s = stored.value;
  const ExperimentType* t = findType(QString::fromStdString(s.type));
  if (!t || !t->reproduce)
    return fail(QStringLiteral("run %1 has type '%2', which this build cannot re-run (known: %3)")
                    .arg(id, QString::fromStdString(s.type), typeNames()));
  TerminalProgress bar(QStringLiteral("rerun %1").arg(id));
  const bool quiet = p.isSet(q);
  QString e;
  auto fresh = t->reproduce(
      s, threads,
      [&](double f, const std::string& st) {
        if (!quiet) bar.update(f, QString::fromStdString(st));
        return true;
      },
      &e);
  bar.finish();
  if (!fresh) return fail(QStringLiteral("cannot re-run %1: %2").arg(id, e));
  int nd = 0, nm = 0;
  const auto diffs = compareRuns(s, *fresh, &nd, &nm);
  if (p.isSet(saveOpt)) {
    std::vector<std::string> ids;
    if (!appendRunsToFile(p.value(saveOpt), {*fresh}, true, &ids)) return 2;
  }
  const bool same = diffs.empty();
  const QString backendNote =
      s.backend == "cpu" || s.backend.empty()
          ? QString()
          : QStringLiteral(" (the stored run used the %1 backend; the re-run used the CPU backend)")
                .arg(QString::fromStdString(s.backend));
  if (p.isSet(js)) {
    QJsonArray d;
    for (const auto& x : diffs) d.append(QString::fromStdString(x));
    out(toJsonText(QJsonObject{{QStringLiteral("file"), file},
                               {QStringLiteral("run"), id},
                               {QStringLiteral("type"), QString::fromStdString(s.type)},
                               {QStringLiteral("identical"), same},
                               {QStringLiteral("datasets_compared"), nd},
                               {QStringLiteral("metrics_compared"), nm},
                               {QStringLiteral("backend"), QStringLiteral("cpu")},
                               {QStringLiteral("differences"), d}}) +
        "\n");
  } else if (same) {
    out(QStringLiteral("reproduced bit for bit: run %1 (%2, seed %3) — %4 datasets and %5 metrics identical on the CPU "
                       "backend%6\n")
            .arg(id, QString::fromStdString(s.type))
            .arg(s.seed)
            .arg(nd)
            .arg(nm)
            .arg(backendNote));
  } else {
    QString t2 =
        QStringLiteral("NOT reproduced: run %1 differs in %2 place(s)%3:\n").arg(id).arg(diffs.size()).arg(backendNote);
    for (const auto& x : diffs) t2 += QStringLiteral("  ") + QString::fromStdString(x) + QLatin1Char('\n');
    out(t2);
  }
  return same ? 0 : 1;
}

const CommandRegistrar regRun({QStringLiteral("run"),
                               QStringLiteral("Run an experiment config (GEMM or training) into a session file"),
                               runRun, 60});
const CommandRegistrar regSweep({QStringLiteral("sweep"),
                                 QStringLiteral("Grid of GEMM runs: formats x scalings x distributions (--shard i/n)"),
                                 runSweep, 61});
const CommandRegistrar regRerun({QStringLiteral("rerun"),
                                 QStringLiteral("Re-run a stored run and check it reproduces bit for bit"), runRerun,
                                 62});

} // namespace
} // namespace fp8lab::cli
