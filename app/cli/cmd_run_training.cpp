// fp8lab-cli — the training path of `run` / `rerun` (see run_training.h).
#include "run_training.h"

#include "cli_util.h"
#include "cmd_run.h"

#include "scaling/scaling.h"
#include "training/fashion_mnist.h"
#include "training/training_session.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSet>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <map>

namespace fp8lab::cli {

namespace {

// ---- JSON parsing -------------------------------------------------------------------------------

struct Parser {
  QString error;
  bool ok() const { return error.isEmpty(); }
  void fail(const QString& where, const QString& what) {
    if (error.isEmpty()) error = where.isEmpty() ? what : where + QStringLiteral(": ") + what;
  }
  static QString at(const QString& where, const QString& key) {
    return where.isEmpty() ? key : where + QLatin1Char('.') + key;
  }

  void checkKeys(const QJsonObject& o, const QString& where, const QStringList& known) {
    for (auto it = o.begin(); it != o.end(); ++it)
      if (!known.contains(it.key()))
        fail(at(where, it.key()), QStringLiteral("unknown key (known: %1)").arg(known.join(QStringLiteral(", "))));
  }
  int64_t integer(const QJsonObject& o, const QString& key, const QString& where, int64_t def, int64_t lo, int64_t hi) {
    if (!o.contains(key)) return def;
    const QJsonValue v = o.value(key);
    const double d = v.toDouble(std::nan(""));
    if (!v.isDouble() || d != std::floor(d) || d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
      fail(at(where, key), QStringLiteral("must be an integer in %1..%2").arg(lo).arg(hi));
      return def;
    }
    return static_cast<int64_t>(d);
  }
  uint64_t seed(const QJsonObject& o, const QString& key, const QString& where, uint64_t def) {
    if (!o.contains(key)) return def;
    const QJsonValue v = o.value(key);
    if (v.isString()) { // large seeds as decimal text
      bool ok = false;
      const qulonglong s = v.toString().toULongLong(&ok);
      if (!ok) fail(at(where, key), QStringLiteral("must be a non-negative integer"));
      return s;
    }
    const double d = v.toDouble(-1);
    if (!v.isDouble() || d < 0 || d != std::floor(d) || d > 9007199254740992.0) {
      fail(at(where, key), QStringLiteral("must be a non-negative integer ≤ 2^53 (or a decimal string)"));
      return def;
    }
    return static_cast<uint64_t>(d);
  }
  float number(const QJsonObject& o, const QString& key, const QString& where, float def) {
    if (!o.contains(key)) return def;
    const QJsonValue v = o.value(key);
    if (!v.isDouble() || !std::isfinite(v.toDouble())) {
      fail(at(where, key), QStringLiteral("must be a finite number"));
      return def;
    }
    return static_cast<float>(v.toDouble());
  }
  QString string(const QJsonObject& o, const QString& key, const QString& where, const QString& def) {
    if (!o.contains(key)) return def;
    if (!o.value(key).isString()) {
      fail(at(where, key), QStringLiteral("must be a string"));
      return def;
    }
    return o.value(key).toString();
  }
  bool boolean(const QJsonObject& o, const QString& key, const QString& where, bool def) {
    if (!o.contains(key)) return def;
    if (!o.value(key).isBool()) {
      fail(at(where, key), QStringLiteral("must be true or false"));
      return def;
    }
    return o.value(key).toBool();
  }
  QJsonObject object(const QJsonObject& o, const QString& key, const QString& where) {
    if (!o.contains(key)) return {};
    if (!o.value(key).isObject()) fail(at(where, key), QStringLiteral("must be an object"));
    return o.value(key).toObject();
  }
  const Format* format(const QJsonObject& o, const QString& key, const QString& where, const Format* def) {
    if (!o.contains(key)) return def;
    const QString name = string(o, key, where, {});
    const Format* f = Format::byName(name.toStdString());
    if (!f)
      fail(at(where, key), QStringLiteral("unknown format '%1' (known: %2)").arg(name, formatHelpList()));
    else if (f->bits() > 8)
      fail(at(where, key), QStringLiteral("%1 is not an FP8 (≤ 8-bit) format").arg(name));
    else
      noteFormatChoice(*f);
    return f ? f : def;
  }
  Accumulation accumulation(const QString& s, const QString& where, Accumulation def) {
    const QString a = s.toLower();
    if (a == QStringLiteral("exact")) return Accumulation::Exact;
    if (a == QStringLiteral("fp32")) return Accumulation::FP32;
    if (a == QStringLiteral("split") || a == QStringLiteral("split_fp32") || a == QStringLiteral("splitfp32"))
      return Accumulation::SplitFP32;
    if (a == QStringLiteral("fast") || a == QStringLiteral("fast_accum") || a == QStringLiteral("fastaccum"))
      return Accumulation::FastAccum;
    fail(where, QStringLiteral("unknown accumulation '%1' (exact, fp32, split, fast)").arg(s));
    return def;
  }
  GemmOptions gemm(const QJsonObject& o, const QString& key, const QString& where, GemmOptions g) {
    if (!o.contains(key)) return g;
    const QJsonObject go = object(o, key, where);
    const QString w = at(where, key);
    checkKeys(
        go, w,
        {QStringLiteral("accumulation"), QStringLiteral("promotion_interval"), QStringLiteral("fast_accum_bits")});
    if (go.contains(QStringLiteral("accumulation")))
      g.accumulation = accumulation(string(go, QStringLiteral("accumulation"), w, {}),
                                    at(w, QStringLiteral("accumulation")), g.accumulation);
    g.promotion_interval =
        static_cast<int>(integer(go, QStringLiteral("promotion_interval"), w, g.promotion_interval, 1, 1 << 20));
    g.fast_accum_bits = static_cast<int>(integer(go, QStringLiteral("fast_accum_bits"), w, g.fast_accum_bits, 2, 24));
    return g;
  }
};

const QStringList kRunKeys = {QStringLiteral("type"),
                              QStringLiteral("id"),
                              QStringLiteral("label"),
                              QStringLiteral("dataset"),
                              QStringLiteral("data_dir"),
                              QStringLiteral("train_limit"),
                              QStringLiteral("test_limit"),
                              QStringLiteral("precision"),
                              QStringLiteral("scaling"),
                              QStringLiteral("forward_format"),
                              QStringLiteral("backward_format"),
                              QStringLiteral("layers"),
                              QStringLiteral("batch_size"),
                              QStringLiteral("epochs"),
                              QStringLiteral("optimizer"),
                              QStringLiteral("seed"),
                              QStringLiteral("forward_gemm"),
                              QStringLiteral("backward_gemm"),
                              QStringLiteral("spike"),
                              QStringLiteral("eval_batch_size"),
                              QStringLiteral("record_history"),
                              QStringLiteral("threads"),
                              QStringLiteral("description")};

/// Members of `over` replace those of `base` (one level; nested objects are merged one more level).
QJsonObject merged(const QJsonObject& base, const QJsonObject& over) {
  QJsonObject r = base;
  for (auto it = over.begin(); it != over.end(); ++it) {
    if (it.value().isObject() && r.value(it.key()).isObject()) {
      QJsonObject inner = r.value(it.key()).toObject();
      const QJsonObject o = it.value().toObject();
      for (auto j = o.begin(); j != o.end(); ++j) inner.insert(j.key(), j.value());
      r.insert(it.key(), inner);
    } else {
      r.insert(it.key(), it.value());
    }
  }
  return r;
}

QString defaultRunId(const QJsonObject& o, int index) {
  const QString prec = o.value(QStringLiteral("precision")).toString(QStringLiteral("fp8"));
  if (prec == QStringLiteral("fp32")) return QStringLiteral("fp32-baseline");
  const QString strat = o.value(QStringLiteral("scaling"))
                            .toObject()
                            .value(QStringLiteral("strategy"))
                            .toString(QStringLiteral("delayed-flax"));
  return QStringLiteral("fp8-%1").arg(strat) + (index > 0 ? QStringLiteral("-%1").arg(index + 1) : QString());
}

TrainingRunSpec parseRun(Parser& p, const QJsonObject& o, const QString& where, const QString& default_id) {
  TrainingRunSpec s;
  TrainingConfig& c = s.config;
  p.checkKeys(o, where, kRunKeys);
  if (o.contains(QStringLiteral("type")) &&
      p.string(o, QStringLiteral("type"), where, {}) != QStringLiteral("training"))
    p.fail(Parser::at(where, QStringLiteral("type")), QStringLiteral("must be \"training\""));
  if (o.contains(QStringLiteral("dataset")) &&
      p.string(o, QStringLiteral("dataset"), where, {}).toLower() != QStringLiteral("fashion-mnist"))
    p.fail(Parser::at(where, QStringLiteral("dataset")), QStringLiteral("only \"fashion-mnist\" is supported"));
  s.id = p.string(o, QStringLiteral("id"), where, default_id);
  std::string why;
  if (!isValidRunId(s.id.toStdString(), &why))
    p.fail(Parser::at(where, QStringLiteral("id")), QString::fromStdString(why));
  c.label = p.string(o, QStringLiteral("label"), where, s.id).toStdString();
  s.data_dir = p.string(o, QStringLiteral("data_dir"), where, {});
  s.train_limit = p.integer(o, QStringLiteral("train_limit"), where, 0, 0, 60000);
  s.test_limit = p.integer(o, QStringLiteral("test_limit"), where, 0, 0, 10000);
  const QString prec = p.string(o, QStringLiteral("precision"), where, QStringLiteral("fp8")).toLower();
  if (prec == QStringLiteral("fp8"))
    c.precision = TrainingPrecision::FP8;
  else if (prec == QStringLiteral("fp32"))
    c.precision = TrainingPrecision::FP32;
  else
    p.fail(Parser::at(where, QStringLiteral("precision")), QStringLiteral("must be \"fp8\" or \"fp32\""));
  if (o.contains(QStringLiteral("scaling"))) {
    const QString w = Parser::at(where, QStringLiteral("scaling"));
    const QJsonObject so = p.object(o, QStringLiteral("scaling"), where);
    p.checkKeys(so, w,
                {QStringLiteral("strategy"), QStringLiteral("history_len"), QStringLiteral("amax_compute_algo"),
                 QStringLiteral("margin"), QStringLiteral("power_of_two")});
    const QString strat = p.string(so, QStringLiteral("strategy"), w, QStringLiteral("delayed-flax"));
    if (!parseTrainingScalingKind(strat.toLower().toStdString(), &c.scaling.kind))
      p.fail(
          Parser::at(w, QStringLiteral("strategy")),
          QStringLiteral("unknown strategy '%1' (delayed-flax, delayed-te, current-te, current-torchao)").arg(strat));
    c.scaling.history_len = static_cast<int>(p.integer(so, QStringLiteral("history_len"), w, 1024, 1, 65536));
    const QString algo = p.string(so, QStringLiteral("amax_compute_algo"), w, QStringLiteral("max"));
    if (algo == QStringLiteral("most_recent"))
      c.scaling.most_recent = true;
    else if (algo != QStringLiteral("max"))
      p.fail(Parser::at(w, QStringLiteral("amax_compute_algo")), QStringLiteral("must be \"max\" or \"most_recent\""));
    c.scaling.margin = static_cast<int>(p.integer(so, QStringLiteral("margin"), w, 0, 0, 64));
    c.scaling.power_of_two = p.boolean(so, QStringLiteral("power_of_two"), w, false);
    if (c.scaling.kind == TrainingScalingKind::DelayedFlax && (c.scaling.margin != 0 || c.scaling.most_recent))
      p.fail(w, QStringLiteral("the Flax preset has no margin and only amax_compute_algo \"max\" (use delayed-te)"));
  }
  c.forward_format = p.format(o, QStringLiteral("forward_format"), where, c.forward_format);
  c.backward_format = p.format(o, QStringLiteral("backward_format"), where, c.backward_format);
  if (o.contains(QStringLiteral("layers"))) {
    const QJsonValue lv = o.value(QStringLiteral("layers"));
    c.layer_sizes.clear();
    if (!lv.isArray()) p.fail(Parser::at(where, QStringLiteral("layers")), QStringLiteral("must be an array of sizes"));
    for (const QJsonValue& v : lv.toArray()) {
      const double d = v.toDouble(-1);
      if (!v.isDouble() || d != std::floor(d) || d < 1 || d > 65536) {
        p.fail(Parser::at(where, QStringLiteral("layers")), QStringLiteral("sizes must be integers in 1..65536"));
        continue; // p.fail records the error and goes on: never convert an out-of-range double (UB)
      }
      c.layer_sizes.push_back(static_cast<int>(d));
    }
    if (!c.layer_sizes.empty() && c.layer_sizes.front() != 784)
      p.fail(Parser::at(where, QStringLiteral("layers")), QStringLiteral("the first size must be 784 (28×28 pixels)"));
    if (!c.layer_sizes.empty() && c.layer_sizes.back() != 10)
      p.fail(Parser::at(where, QStringLiteral("layers")), QStringLiteral("the last size must be 10 (classes)"));
    if (c.layer_sizes.size() < 2)
      p.fail(Parser::at(where, QStringLiteral("layers")), QStringLiteral("needs at least input and output sizes"));
  }
  c.batch_size = static_cast<int>(p.integer(o, QStringLiteral("batch_size"), where, c.batch_size, 1, 60000));
  c.epochs = static_cast<int>(p.integer(o, QStringLiteral("epochs"), where, c.epochs, 1, 1000));
  c.eval_batch_size =
      static_cast<int>(p.integer(o, QStringLiteral("eval_batch_size"), where, c.eval_batch_size, 1, 10000));
  c.threads = static_cast<int>(p.integer(o, QStringLiteral("threads"), where, 0, 0, 1024));
  c.seed = p.seed(o, QStringLiteral("seed"), where, c.seed);
  c.record_history = p.boolean(o, QStringLiteral("record_history"), where, true);
  if (o.contains(QStringLiteral("optimizer"))) {
    const QString w = Parser::at(where, QStringLiteral("optimizer"));
    const QJsonObject oo = p.object(o, QStringLiteral("optimizer"), where);
    p.checkKeys(oo, w,
                {QStringLiteral("name"), QStringLiteral("learning_rate"), QStringLiteral("beta1"),
                 QStringLiteral("beta2"), QStringLiteral("epsilon")});
    if (p.string(oo, QStringLiteral("name"), w, QStringLiteral("adam")).toLower() != QStringLiteral("adam"))
      p.fail(Parser::at(w, QStringLiteral("name")), QStringLiteral("only \"adam\" is supported"));
    c.learning_rate = p.number(oo, QStringLiteral("learning_rate"), w, c.learning_rate);
    c.beta1 = p.number(oo, QStringLiteral("beta1"), w, c.beta1);
    c.beta2 = p.number(oo, QStringLiteral("beta2"), w, c.beta2);
    c.adam_epsilon = p.number(oo, QStringLiteral("epsilon"), w, c.adam_epsilon);
  }
  c.forward_gemm = p.gemm(o, QStringLiteral("forward_gemm"), where, c.forward_gemm);
  c.backward_gemm = p.gemm(o, QStringLiteral("backward_gemm"), where, c.backward_gemm);
  c.forward_gemm.threads = c.backward_gemm.threads = c.threads;
  if (o.contains(QStringLiteral("spike"))) {
    const QString w = Parser::at(where, QStringLiteral("spike"));
    const QJsonObject so = p.object(o, QStringLiteral("spike"), where);
    p.checkKeys(so, w, {QStringLiteral("step"), QStringLiteral("factor"), QStringLiteral("layer")});
    c.spike.enabled = true;
    c.spike.step = p.integer(so, QStringLiteral("step"), w, 0, 0, int64_t{1} << 40);
    c.spike.factor = p.number(so, QStringLiteral("factor"), w, 1.0f);
    c.spike.layer = static_cast<int>(p.integer(so, QStringLiteral("layer"), w, 0, 0, 64));
  }
  if (p.ok()) {
    if (const std::string v = c.validate(); !v.empty()) p.fail(where, QString::fromStdString(v));
  }
  return s;
}

} // namespace

bool isTrainingConfig(const QJsonObject& config) {
  if (config.value(QStringLiteral("type")).toString() == QStringLiteral("training")) return true;
  const QJsonArray runs = config.value(QStringLiteral("runs")).toArray();
  return !runs.isEmpty() &&
         runs.first().toObject().value(QStringLiteral("type")).toString() == QStringLiteral("training");
}

std::optional<TrainingExperimentSpec> parseTrainingExperiment(const QJsonObject& config, QString* error) {
  Parser p;
  TrainingExperimentSpec spec;
  if (!config.contains(QStringLiteral("runs"))) {
    TrainingRunSpec s = parseRun(p, config, {}, defaultRunId(config, 0));
    spec.runs.push_back(std::move(s));
  } else {
    p.checkKeys(config, {},
                {QStringLiteral("type"), QStringLiteral("name"), QStringLiteral("description"),
                 QStringLiteral("dataset"), QStringLiteral("data_dir"), QStringLiteral("train_limit"),
                 QStringLiteral("test_limit"), QStringLiteral("defaults"), QStringLiteral("runs"),
                 QStringLiteral("gemm_on_trained_weights"), QStringLiteral("notes")});
    spec.name = p.string(config, QStringLiteral("name"), {}, QStringLiteral("training"));
    QJsonObject defaults = p.object(config, QStringLiteral("defaults"), {});
    for (const char* k : {"dataset", "data_dir", "train_limit", "test_limit"})
      if (config.contains(QLatin1String(k))) defaults.insert(QLatin1String(k), config.value(QLatin1String(k)));
    const QJsonValue rv = config.value(QStringLiteral("runs"));
    if (!rv.isArray() || rv.toArray().isEmpty())
      p.fail(QStringLiteral("runs"), QStringLiteral("must be a non-empty array"));
    const QJsonArray runs = rv.toArray();
    QSet<QString> ids;
    for (int i = 0; i < runs.size(); ++i) {
      const QString where = QStringLiteral("runs[%1]").arg(i);
      if (!runs[i].isObject()) {
        p.fail(where, QStringLiteral("must be an object"));
        continue;
      }
      const QJsonObject ro = merged(defaults, runs[i].toObject());
      TrainingRunSpec s = parseRun(p, ro, where, defaultRunId(ro, i));
      if (ids.contains(s.id))
        p.fail(Parser::at(where, QStringLiteral("id")), QStringLiteral("duplicate run id '%1'").arg(s.id));
      ids.insert(s.id);
      spec.runs.push_back(std::move(s));
    }
    if (config.contains(QStringLiteral("gemm_on_trained_weights"))) {
      const QString w = QStringLiteral("gemm_on_trained_weights");
      const QJsonObject go = p.object(config, w, {});
      p.checkKeys(go, w,
                  {QStringLiteral("from_run"), QStringLiteral("layers"), QStringLiteral("rows"),
                   QStringLiteral("scaling"), QStringLiteral("a_format"), QStringLiteral("b_format"),
                   QStringLiteral("accumulation"), QStringLiteral("promotion_interval"),
                   QStringLiteral("fast_accum_bits")});
      WeightGemmSpec g;
      g.from_run = p.string(go, QStringLiteral("from_run"), w, spec.runs.empty() ? QString() : spec.runs.front().id);
      if (!ids.contains(g.from_run))
        p.fail(Parser::at(w, QStringLiteral("from_run")),
               QStringLiteral("no run with id '%1' in this experiment").arg(g.from_run));
      int nlayers = 3;
      for (const auto& r : spec.runs)
        if (r.id == g.from_run) nlayers = static_cast<int>(r.config.layer_sizes.size()) - 1;
      const QJsonArray la = go.value(QStringLiteral("layers")).toArray();
      if (la.isEmpty())
        for (int l = 0; l < nlayers; ++l) g.layers.push_back(l);
      for (const QJsonValue& v : la) {
        const QString name = v.toString();
        bool ok = name.startsWith(QStringLiteral("fc"));
        const int l = name.mid(2).toInt(&ok) - 1;
        if (!ok || l < 0 || l >= nlayers)
          p.fail(Parser::at(w, QStringLiteral("layers")),
                 QStringLiteral("'%1' is not a layer (fc1 … fc%2)").arg(name).arg(nlayers));
        else
          g.layers.push_back(l);
      }
      g.gemm.rows = p.integer(go, QStringLiteral("rows"), w, 1000, 1, 10000);
      g.gemm.scaling = p.string(go, QStringLiteral("scaling"), w, QStringLiteral("te_current")).toStdString();
      if (!scalingPreset(g.gemm.scaling))
        p.fail(Parser::at(w, QStringLiteral("scaling")),
               QStringLiteral("'%1' is not a current-scaling preset (see fp8lab-cli quantize --help)")
                   .arg(QString::fromStdString(g.gemm.scaling)));
      g.gemm.a_format = p.format(go, QStringLiteral("a_format"), w, g.gemm.a_format);
      g.gemm.b_format = p.format(go, QStringLiteral("b_format"), w, g.gemm.b_format);
      if (go.contains(QStringLiteral("accumulation")))
        g.gemm.gemm.accumulation =
            p.accumulation(go.value(QStringLiteral("accumulation")).toString(),
                           Parser::at(w, QStringLiteral("accumulation")), g.gemm.gemm.accumulation);
      g.gemm.gemm.promotion_interval =
          static_cast<int>(p.integer(go, QStringLiteral("promotion_interval"), w, 128, 1, 1 << 20));
      g.gemm.gemm.fast_accum_bits = static_cast<int>(p.integer(go, QStringLiteral("fast_accum_bits"), w, 14, 2, 24));
      spec.weight_gemm = g;
    }
  }
  if (!p.ok()) {
    if (error) *error = p.error;
    return std::nullopt;
  }
  return spec;
}

// ---- running ------------------------------------------------------------------------------------

namespace {

QString pct(double f) {
  return QString::number(100.0 * f, 'f', 2) + QLatin1Char('%');
}

std::string runConfigJson(const TrainingRunSpec& s) {
  return trainingConfigJson(s.config, s.id.toStdString(), s.train_limit, s.test_limit, s.data_dir.toStdString());
}

/// Loads the data set once per distinct directory.
struct DataCache {
  std::map<std::string, FashionMnist> sets;
  const FashionMnist& get(const QString& dir) {
    const std::string key = dir.toStdString();
    auto it = sets.find(key);
    if (it == sets.end()) it = sets.emplace(key, loadFashionMnist(key)).first;
    return it->second;
  }
};

} // namespace

int runTrainingExperiment(const QJsonObject& config, const QString& out_file, const TrainingCliOptions& opt) {
  const QString& out_path_q = out_file;
  QString err;
  auto spec = parseTrainingExperiment(config, &err);
  if (!spec) return fail(QStringLiteral("invalid training config: %1").arg(err));
  if (!opt.data_dir.isEmpty())
    for (auto& r : spec->runs) r.data_dir = opt.data_dir;
  if (opt.threads > 0)
    for (auto& r : spec->runs)
      r.config.threads = r.config.forward_gemm.threads = r.config.backward_gemm.threads = opt.threads;
  if (!opt.run_id.isEmpty()) {
    if (spec->runs.size() != 1) return fail(QStringLiteral("--id needs a training config with a single run"));
    std::string why;
    if (!isValidRunId(opt.run_id.toStdString(), &why)) return fail(QString::fromStdString(why));
    spec->runs.front().id = opt.run_id;
  }
  if (!opt.only_run.isEmpty()) {
    std::erase_if(spec->runs, [&](const TrainingRunSpec& r) { return r.id != opt.only_run; });
    if (spec->runs.empty()) return fail(QStringLiteral("no run '%1' in the config").arg(opt.only_run));
    spec->weight_gemm.reset();
  }
  // Fail early on an output that cannot be saved, before minutes of training.
  if (!outputWritableOrFail(out_path_q)) return 2;

  DataCache data;
  InterruptGuard interrupt_guard; // SIGINT / SIGTERM / SIGHUP: stop after the step, save, exit 128+sig
  const std::string out_path = out_path_q.toStdString();
  QJsonArray summary;
  std::map<QString, std::vector<LayerWeights>> trained;
  std::map<QString, const FashionMnist*> data_of;
  auto save = [&](const Run& run, QString* stored_id) -> bool {
    WriteOptions wo;
    wo.on_conflict = WriteOptions::OnConflict::Rename;
    wo.compress = opt.compress;
    std::vector<std::string> ids;
    setInterruptLossNote(QStringLiteral("the save of training run '%1' in progress (%2 keeps what it held before; "
                                        "saves are atomic)")
                             .arg(QString::fromStdString(run.id), out_path_q));
    const Status st = appendRuns(out_path, {run}, wo, &ids);
    if (!st.ok()) {
      fail(QStringLiteral("could not save run '%1' to %2: %3")
               .arg(QString::fromStdString(run.id), out_path_q, QString::fromStdString(st.firstError())));
      return false;
    }
    *stored_id = ids.empty() ? QString::fromStdString(run.id) : QString::fromStdString(ids.front());
    return true;
  };

  for (size_t i = 0; i < spec->runs.size(); ++i) {
    const TrainingRunSpec& rs = spec->runs[i];
    const FashionMnist* fm = nullptr;
    try {
      fm = &data.get(rs.data_dir);
    } catch (const DatasetMissingError& e) {
      return fail(QString::fromUtf8(e.what()));
    } catch (const IdxError& e) {
      return fail(QStringLiteral("Fashion-MNIST is damaged: %1").arg(QString::fromUtf8(e.what())));
    }
    const ImageDataset train = fm->train.head(rs.train_limit), test = fm->test.head(rs.test_limit);
    data_of[rs.id] = fm;
    const QString label = QStringLiteral("[%1/%2] %3").arg(i + 1).arg(spec->runs.size()).arg(rs.id);
    if (!opt.quiet && !opt.json)
      std::fprintf(stderr, "%s: %s, %d epochs of %lld steps (batch %d, %lld images)\n", label.toUtf8().constData(),
                   rs.config.precision == TrainingPrecision::FP8 ? toString(rs.config.scaling.kind) : "FP32 baseline",
                   rs.config.epochs,
                   static_cast<long long>((train.count + rs.config.batch_size - 1) / rs.config.batch_size),
                   rs.config.batch_size, static_cast<long long>(train.count));
    if (opt.backend) opt.backend->resetCounts();
    TrainingRun run(rs.config, train, test, opt.backend);
    setInterruptLossNote(QStringLiteral("the steps of training run '%1' trained so far; %2 holds the runs finished "
                                        "before it")
                             .arg(rs.id, out_path_q));
    bool cancelled = false;
    {
      TerminalProgress bar(label);
      size_t epochs_reported = 0;
      auto progress = [&](double f, const std::string& stage) {
        bar.update(f, QString::fromStdString(stage));
        const auto& eps = run.result().epochs;
        if (!opt.quiet && !opt.json && eps.size() > epochs_reported) {
          for (; epochs_reported < eps.size(); ++epochs_reported) {
            const auto& e = eps[epochs_reported];
            bar.finish();
            std::fprintf(stderr, "%s: epoch %d: train loss %.4f, test loss %.4f, test accuracy %s (%.1f s)\n",
                         label.toUtf8().constData(), e.epoch, e.train_loss, e.test_loss,
                         pct(e.test_accuracy).toUtf8().constData(), e.seconds);
          }
        }
        return !interrupted();
      };
      try {
        run.run(progress);
        progress(1.0, "done");
      } catch (const Cancelled&) {
        cancelled = true;
      } catch (const std::exception& e) {
        return fail(QStringLiteral("training run '%1' failed: %2").arg(rs.id, QString::fromUtf8(e.what())));
      }
    }
    const TrainingResult& res = run.result();
    QString stored;
    Run session_run = trainingRunToSession(res, rs.id.toStdString(), runConfigJson(rs));
    std::string backend_note;
    if (opt.backend && rs.config.precision == TrainingPrecision::FP8) {
      backend_note = opt.backend->fallbackSummary();
      if (!backend_note.empty() && !opt.quiet && !opt.json)
        std::fprintf(stderr, "%s: note: --backend %s\n", label.toUtf8().constData(), backend_note.c_str());
      recordBackend(session_run, *opt.backend, rs.config.forward_gemm,
                    backend_note.empty() ? opt.backend->noGpuReason() : backend_note);
      if (session_run.backend == "cuda")
        session_run.attrs["fast_accum_backward"] =
            int64_t(rs.config.backward_gemm.accumulation == Accumulation::FastAccum ? 1 : 0);
      session_run.attrs["gemm_runs_gpu"] = opt.backend->gpu_runs;
      session_run.attrs["gemm_runs_cpu"] = opt.backend->cpu_runs;
    }
    if (!save(session_run, &stored)) return 2;
    trained[rs.id] = res.weights;
    QJsonObject js;
    js.insert(QStringLiteral("id"), stored);
    js.insert(QStringLiteral("type"), QStringLiteral("training"));
    js.insert(QStringLiteral("precision"), QString::fromLatin1(toString(rs.config.precision)));
    if (rs.config.precision == TrainingPrecision::FP8)
      js.insert(QStringLiteral("scaling"), QString::fromLatin1(toString(rs.config.scaling.kind)));
    js.insert(QStringLiteral("status"), cancelled ? QStringLiteral("cancelled") : QStringLiteral("completed"));
    js.insert(QStringLiteral("backend"), QString::fromStdString(session_run.backend));
    js.insert(QStringLiteral("device"), QString::fromStdString(session_run.device));
    if (opt.backend) {
      js.insert(QStringLiteral("backend_request"), QString::fromLatin1(toString(opt.backend->request())));
      js.insert(QStringLiteral("backend_note"),
                QString::fromStdString(attrString(session_run.attrs, "backend_note").value_or("")));
    }
    js.insert(QStringLiteral("steps"), static_cast<qint64>(res.steps_done));
    QJsonArray accs;
    for (const auto& e : res.epochs) accs.append(e.test_accuracy);
    js.insert(QStringLiteral("test_accuracy"), accs);
    js.insert(QStringLiteral("seconds"), res.seconds);
    if (!res.epochs.empty()) {
      double s = 0;
      for (const auto& e : res.epochs) s += e.seconds;
      js.insert(QStringLiteral("mean_epoch_seconds"), s / static_cast<double>(res.epochs.size()));
    }
    int64_t sat = 0;
    for (const auto& h : res.operands)
      for (int64_t v : h.saturated) sat += v;
    js.insert(QStringLiteral("saturated_total"), static_cast<qint64>(sat));
    summary.append(js);
    if (cancelled) {
      if (opt.json)
        out(toJsonText(QJsonObject{{QStringLiteral("session"), out_path_q},
                                   {QStringLiteral("interrupted"), true},
                                   {QStringLiteral("runs"), summary}}) +
            "\n");
      std::fprintf(stderr,
                   "fp8lab-cli: interrupted: run '%s' stopped after step %lld of %lld; the session so far (%d run%s) "
                   "is saved in %s\n",
                   stored.toUtf8().constData(), static_cast<long long>(res.steps_done),
                   static_cast<long long>(res.steps_per_epoch * rs.config.epochs), static_cast<int>(summary.size()),
                   summary.size() == 1 ? "" : "s", out_path_q.toUtf8().constData());
      return interruptedExitCode();
    }
    if (interrupted()) break;
  }

  if (spec->weight_gemm && !interrupted()) {
    const WeightGemmSpec& g = *spec->weight_gemm;
    const auto& weights = trained.at(g.from_run);
    const FashionMnist* fm = data_of.at(g.from_run);
    for (int l : g.layers) {
      if (interrupted()) break;
      WeightGemmConfig wc = g.gemm;
      wc.layer = l;
      wc.gemm.threads = opt.threads;
      const QString id = QStringLiteral("gemm-%1-fc%2").arg(g.from_run).arg(l + 1);
      const std::string cfg_json = "{\n  \"type\": \"gemm-trained-weights\",\n  \"from_run\": \"" +
                                   g.from_run.toStdString() + "\",\n  \"layer\": \"fc" + std::to_string(l + 1) +
                                   "\",\n  \"rows\": " + std::to_string(wc.rows) + ",\n  \"scaling\": \"" + wc.scaling +
                                   "\",\n  \"a_format\": \"" + wc.a_format->name() + "\",\n  \"b_format\": \"" +
                                   wc.b_format->name() + "\",\n  \"accumulation\": \"" +
                                   toString(wc.gemm.accumulation) + "\"\n}";
      Run run;
      try {
        TerminalProgress bar(QStringLiteral("GEMM on trained fc%1").arg(l + 1));
        if (opt.backend) opt.backend->resetCounts();
        run = weightGemmRun(weights, fm->test, wc, id.toStdString(), cfg_json, opt.backend,
                            [&](double f, const std::string& s) {
                              bar.update(f, QString::fromStdString(s));
                              return !interrupted();
                            });
      } catch (const Cancelled&) {
        break;
      } catch (const std::exception& e) {
        return fail(QStringLiteral("GEMM on trained weights (%1) failed: %2").arg(id, QString::fromUtf8(e.what())));
      }
      if (opt.backend) {
        const std::string note = opt.backend->fallbackSummary();
        if (!note.empty() && !opt.quiet && !opt.json)
          std::fprintf(stderr, "%s: note: --backend %s\n", id.toUtf8().constData(), note.c_str());
        recordBackend(run, *opt.backend, wc.gemm, note.empty() ? opt.backend->noGpuReason() : note);
      }
      QString stored;
      if (!save(run, &stored)) return 2;
      QJsonObject js;
      js.insert(QStringLiteral("id"), stored);
      js.insert(QStringLiteral("type"), QStringLiteral("gemm-trained-weights"));
      js.insert(QStringLiteral("backend"), QString::fromStdString(run.backend));
      js.insert(QStringLiteral("device"), QString::fromStdString(run.device));
      js.insert(QStringLiteral("layer"), QStringLiteral("fc%1").arg(l + 1));
      for (const char* m : {"total_sqnr_db", "quantization_sqnr_db", "accumulation_sqnr_db", "total_rel_fro"})
        js.insert(QLatin1String(m), jsonNumber(run.metrics.at(m).value));
      summary.append(js);
      if (!opt.quiet && !opt.json)
        std::fprintf(stderr,
                     "GEMM on trained fc%d (%s, %s): SQNR %.2f dB total, %.2f dB quantization, %.2f dB accumulation\n",
                     l + 1, wc.scaling.c_str(), toString(wc.gemm.accumulation), run.metrics.at("total_sqnr_db").value,
                     run.metrics.at("quantization_sqnr_db").value, run.metrics.at("accumulation_sqnr_db").value);
    }
  }
  if (interrupted()) {
    if (opt.json)
      out(toJsonText(QJsonObject{{QStringLiteral("session"), out_path_q},
                                 {QStringLiteral("interrupted"), true},
                                 {QStringLiteral("runs"), summary}}) +
          "\n");
    std::fprintf(stderr, "fp8lab-cli: interrupted; the session so far (%d runs) is saved in %s\n",
                 static_cast<int>(summary.size()), out_path_q.toUtf8().constData());
    return interruptedExitCode();
  }
  if (opt.json) {
    out(toJsonText(QJsonObject{{QStringLiteral("session"), out_path_q},
                               {QStringLiteral("interrupted"), false},
                               {QStringLiteral("runs"), summary}}) +
        "\n");
  } else if (!opt.quiet && opt.print_session_line) {
    std::fprintf(stderr, "session written: %s\n", QFileInfo(out_path_q).absoluteFilePath().toUtf8().constData());
  }
  return 0;
}

std::optional<Run> reproduceTrainingRun(const Run& stored, int threads, const ProgressFn& progress, QString* error) {
  QJsonParseError pe;
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(stored.config_json), &pe);
  if (!doc.isObject()) {
    *error = QStringLiteral("the stored config is not a JSON object: %1").arg(pe.errorString());
    return std::nullopt;
  }
  QString err;
  auto spec = parseTrainingExperiment(doc.object(), &err);
  if (!spec || spec->runs.size() != 1) {
    *error = spec ? QStringLiteral("the stored config holds more than one run") : err;
    return std::nullopt;
  }
  TrainingRunSpec& rs = spec->runs.front();
  if (rs.config.seed != stored.seed) {
    *error = QStringLiteral("the stored seed attribute (%1) disagrees with the config's seed (%2)")
                 .arg(stored.seed)
                 .arg(rs.config.seed);
    return std::nullopt;
  }
  if (threads > 0) rs.config.threads = rs.config.forward_gemm.threads = rs.config.backward_gemm.threads = threads;
  // A run saved after an interrupt is reproduced up to the same step.
  const bool was_cancelled = attrString(stored.attrs, "status").value_or("") == "cancelled";
  const int64_t stop_after = attrInt(stored.attrs, "steps_completed").value_or(-1);
  try {
    const FashionMnist fm = loadFashionMnist(rs.data_dir.toStdString());
    const ImageDataset train = fm.train.head(rs.train_limit), test = fm.test.head(rs.test_limit);
    TrainingRun run(rs.config, train, test);
    try {
      run.run([&](double f, const std::string& st) {
        if (was_cancelled && run.result().steps_done >= stop_after) return false;
        return progress ? progress(f, st) : true;
      });
    } catch (const Cancelled&) {
      if (!was_cancelled || run.result().steps_done != stop_after) {
        *error = QStringLiteral("cancelled");
        return std::nullopt;
      }
    }
    return trainingRunToSession(run.result(), stored.id, stored.config_json);
  } catch (const std::exception& e) {
    *error = QString::fromUtf8(e.what());
  }
  return std::nullopt;
}

std::optional<Run> reproduceWeightGemmRun(const Run& stored, int threads, const ProgressFn& progress, QString* error) {
  QJsonParseError pe;
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(stored.config_json), &pe);
  if (!doc.isObject()) {
    *error = QStringLiteral("the stored config is not a JSON object: %1").arg(pe.errorString());
    return std::nullopt;
  }
  const QJsonObject o = doc.object();
  Parser p;
  WeightGemmConfig wc;
  wc.scaling = p.string(o, QStringLiteral("scaling"), {}, QStringLiteral("te_current")).toStdString();
  wc.a_format = p.format(o, QStringLiteral("a_format"), {}, wc.a_format);
  wc.b_format = p.format(o, QStringLiteral("b_format"), {}, wc.b_format);
  if (o.contains(QStringLiteral("accumulation")))
    wc.gemm.accumulation = p.accumulation(o.value(QStringLiteral("accumulation")).toString(),
                                          QStringLiteral("accumulation"), wc.gemm.accumulation);
  wc.gemm.promotion_interval =
      static_cast<int>(p.integer(o, QStringLiteral("promotion_interval"), {}, 128, 1, 1 << 20));
  wc.gemm.fast_accum_bits = static_cast<int>(p.integer(o, QStringLiteral("fast_accum_bits"), {}, 14, 2, 24));
  wc.gemm.threads = threads;
  if (!p.ok()) {
    *error = p.error;
    return std::nullopt;
  }
  const Dataset* a = stored.find("inputs/A");
  const Dataset* b = stored.find("inputs/B");
  if (!a || !b || a->dtype != DType::Float32 || b->dtype != DType::Float32 || a->shape.size() != 2 ||
      b->shape.size() != 2 || a->shape[1] != b->shape[0]) {
    *error = QStringLiteral("the run lacks float32 inputs/A [M,K] and inputs/B [K,N]");
    return std::nullopt;
  }
  try {
    return weightGemmRunFromInputs(a->f32, b->f32, a->shape[0], a->shape[1], b->shape[1],
                                   attrString(stored.attrs, "layer").value_or("fc?"), wc, stored.id, stored.config_json,
                                   nullptr, progress);
  } catch (const std::exception& e) {
    *error = QString::fromUtf8(e.what());
  }
  return std::nullopt;
}

namespace {

int runTrainingType(const QJsonObject& config, const QString& /*text: each run stores its own full config*/,
                    const RunCliOptions& o) {
  TrainingCliOptions t;
  t.json = o.json;
  t.quiet = o.quiet;
  t.data_dir = o.data_dir;
  t.run_id = o.run_id;
  t.threads = o.threads;
  t.compress = o.compress;
  t.print_session_line = false;
  t.backend = o.backend;
  return runTrainingExperiment(config, o.out, t);
}

int runWeightGemmType(const QJsonObject&, const QString&, const RunCliOptions&) {
  return fail(
      QStringLiteral("\"gemm-trained-weights\" runs are made by a training experiment's \"gemm_on_trained_weights\" "
                     "(see docs/training.md); they can be re-run with `fp8lab-cli rerun`"));
}

const ExperimentTypeRegistrar
    trainingType({QStringLiteral("training"), runTrainingType, reproduceTrainingRun,
                  [](const QJsonObject& o, QString* error) { return parseTrainingExperiment(o, error).has_value(); }});
const ExperimentTypeRegistrar weightGemmType({QStringLiteral("gemm-trained-weights"), runWeightGemmType,
                                              reproduceWeightGemmRun, nullptr});

} // namespace

} // namespace fp8lab::cli
