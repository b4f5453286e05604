// fp8lab-cli — the training path of `run` / `rerun` (see run_training.h): a terminal front end
// over core/experiment's training runner.
#include "run_training.h"
#include "session/session_layout.h"

#include "cli_util.h"
#include "cmd_run.h"
#include <algorithm>

#include "experiment/training_experiment.h"

#include <QFileInfo>
#include <QJsonArray>

#include <cmath>
#include <cstdio>
#include <map>

namespace fp8lab::cli {

namespace {

QString pct(double f) {
  return QString::number(100.0 * f, 'f', 2) + QLatin1Char('%');
}

QJsonObject outcomeJson(const TrainingRunOutcome& o, const FallbackGemmBackend* backend, const std::string& note) {
  QJsonObject js;
  js.insert(QStringLiteral("id"), QString::fromStdString(o.stored_id));
  js.insert(QStringLiteral("type"), QString::fromStdString(o.type));
  js.insert(QStringLiteral("backend"), QString::fromStdString(o.backend));
  js.insert(QStringLiteral("device"), QString::fromStdString(o.device));
  if (o.type == "gemm-trained-weights") {
    js.insert(QStringLiteral("layer"), QString::fromStdString(o.layer));
    // The summary's keys name the error split; the run's metrics are those of every GEMM run.
    for (const auto& [key, metric] : {std::pair{"total_sqnr_db", "sqnr_db"},
                                      {"quantization_sqnr_db", "quant_sqnr_db"},
                                      {"accumulation_sqnr_db", "accum_sqnr_db"},
                                      {"total_rel_fro", "rel_fro"}})
      js.insert(QLatin1String(key), jsonNumber(o.metrics.count(metric) ? o.metrics.at(metric) : std::nan("")));
    return js;
  }
  const TrainingConfig& c = o.spec->config;
  if (o.spec->lm) {
    const LmTrainingConfig& lm = *o.spec->lm;
    js.insert(QStringLiteral("model"), QStringLiteral("transformer"));
    js.insert(QStringLiteral("precision"), QString::fromLatin1(toString(lm.precision)));
    if (lm.precision == TrainingPrecision::FP8)
      js.insert(QStringLiteral("scaling"), QString::fromStdString(lm.scalingName()));
    QJsonArray vl;
    for (float v : o.val_loss) vl.append(double(v));
    js.insert(QStringLiteral("val_loss"), vl);
    if (!o.val_loss.empty()) js.insert(QStringLiteral("val_bits_per_byte"), double(o.val_loss.back()) / std::log(2.0));
    js.insert(QStringLiteral("unigram_bits_per_byte"), o.unigram_bits);
    js.insert(QStringLiteral("step_seconds"), o.step_seconds);
    js.insert(QStringLiteral("sample"), QString::fromStdString(o.sample));
  } else {
    js.insert(QStringLiteral("precision"), QString::fromLatin1(toString(c.precision)));
    if (c.precision == TrainingPrecision::FP8)
      js.insert(QStringLiteral("scaling"), QString::fromStdString(trainingScalingName(c)));
  }
  js.insert(QStringLiteral("status"), o.cancelled           ? QStringLiteral("cancelled")
                                      : o.stopped_nonfinite ? QStringLiteral("stopped_nonfinite")
                                                            : QStringLiteral("completed"));
  if (o.first_nonfinite.found)
    js.insert(QStringLiteral("first_nonfinite"), QString::fromStdString(o.first_nonfinite.describe()));
  if (backend) {
    js.insert(QStringLiteral("backend_request"), QString::fromLatin1(toString(backend->request())));
    js.insert(QStringLiteral("backend_note"), QString::fromStdString(note));
  }
  js.insert(QStringLiteral("steps"), static_cast<qint64>(o.steps_done));
  QJsonArray accs;
  for (double a : o.test_accuracy) accs.append(a);
  js.insert(QStringLiteral("test_accuracy"), accs);
  js.insert(QStringLiteral("seconds"), o.seconds);
  if (!o.test_accuracy.empty()) js.insert(QStringLiteral("mean_epoch_seconds"), o.mean_epoch_seconds);
  js.insert(QStringLiteral("saturated_total"), static_cast<qint64>(o.saturated_total));
  return js;
}

} // namespace

int runTrainingExperiment(const Json& config, const ConfigPath& at, const JsonDocument* doc, const QString& out_file,
                          const TrainingCliOptions& opt) {
  std::string perr;
  auto spec = parseTrainingExperiment(config, &perr, doc, at);
  if (!spec) return fail(QStringLiteral("invalid training config: %1").arg(QString::fromStdString(perr)));
  if (!opt.data_dir.isEmpty())
    for (auto& r : spec->runs) r.data_dir = opt.data_dir.toStdString();
  if (opt.threads > 0)
    for (auto& r : spec->runs) {
      r.config.threads = r.config.forward_gemm.threads = r.config.backward_gemm.threads = opt.threads;
      if (r.lm) r.lm->threads = r.lm->forward_gemm.threads = r.lm->backward_gemm.threads = opt.threads;
    }
  if (!opt.run_id.isEmpty()) {
    if (spec->runs.size() != 1) return fail(QStringLiteral("--id needs a training config with a single run"));
    std::string why;
    if (!isValidRunId(opt.run_id.toStdString(), &why)) return fail(QString::fromStdString(why));
    spec->runs.front().id = opt.run_id.toStdString();
  }
  if (!opt.only_run.isEmpty()) {
    std::erase_if(spec->runs, [&](const TrainingRunSpec& r) { return r.id != opt.only_run.toStdString(); });
    if (spec->runs.empty()) return fail(QStringLiteral("no run '%1' in the config").arg(opt.only_run));
    spec->weight_gemm.reset();
  }
  // Fail early on an output that cannot be saved, before minutes of training.
  if (!outputWritableOrFail(out_file)) return 2;

  InterruptGuard interrupt_guard; // SIGINT / SIGTERM / SIGHUP: stop after the step, save, exit 128+sig
  const std::string out_path = out_file.toStdString();
  const bool lines = !opt.quiet && !opt.json;
  QJsonArray summary;
  QString label;
  std::unique_ptr<TerminalProgress> bar;
  std::map<std::string, std::string> backend_notes; // by stored id, for the JSON summary

  TrainingHooks hooks;
  hooks.run_started = [&](size_t i, size_t n, const TrainingRunSpec& rs, int64_t steps_per_epoch, int64_t images) {
    label = QStringLiteral("[%1/%2] %3").arg(i + 1).arg(n).arg(QString::fromStdString(rs.id));
    if (lines && rs.lm) {
      const LmTrainingConfig& lm = *rs.lm;
      std::fprintf(stderr,
                   "%s: transformer LM (%lld parameters: d_model %lld, %lld layers, %lld heads, context %lld, %s, "
                   "%s %s-norm), %s, %lld steps of batch %d on %lld bytes of text\n",
                   label.toUtf8().constData(), static_cast<long long>(lm.model.parameterCount()),
                   static_cast<long long>(lm.model.d_model), static_cast<long long>(lm.model.layers),
                   static_cast<long long>(lm.model.heads), static_cast<long long>(lm.model.context),
                   toString(lm.model.ffn), toString(lm.model.norm), lm.model.pre_norm ? "pre" : "post",
                   lm.precision == TrainingPrecision::FP8 ? lm.scalingName().c_str() : "FP32 baseline",
                   static_cast<long long>(steps_per_epoch), lm.batch_size, static_cast<long long>(images));
    } else if (lines)
      std::fprintf(stderr, "%s: %s, %d epochs of %lld steps (batch %d, %lld images)\n", label.toUtf8().constData(),
                   rs.config.precision == TrainingPrecision::FP8 ? trainingScalingName(rs.config).c_str()
                                                                 : "FP32 baseline",
                   rs.config.epochs, static_cast<long long>(steps_per_epoch), rs.config.batch_size,
                   static_cast<long long>(images));
    if (opt.backend) opt.backend->resetCounts();
    setInterruptLossNote(QStringLiteral("the steps of training run '%1' trained so far; %2 holds the runs finished "
                                        "before it")
                             .arg(QString::fromStdString(rs.id), out_file));
    bar = std::make_unique<TerminalProgress>(label);
  };
  hooks.epoch_done = [&](const TrainingRunSpec&, const EpochRecord& e) {
    if (!lines) return;
    if (bar) bar->finish();
    std::fprintf(stderr, "%s: epoch %d: train loss %.4f, test loss %.4f, test accuracy %s (%.1f s)\n",
                 label.toUtf8().constData(), e.epoch, e.train_loss, e.test_loss,
                 pct(e.test_accuracy).toUtf8().constData(), e.seconds);
  };
  hooks.progress = [&](double f, double, const std::string& stage) {
    if (!bar) bar = std::make_unique<TerminalProgress>(QStringLiteral("GEMM on trained weights"));
    bar->update(f, QString::fromStdString(stage));
    return !interrupted();
  };
  hooks.finish_run = [&](Run& run, const TrainingRunSpec* rs) {
    if (bar) bar->finish();
    bar.reset();
    if (!opt.backend) return;
    if (rs && (rs->lm ? rs->lm->precision : rs->config.precision) != TrainingPrecision::FP8) return;
    const std::string note = opt.backend->fallbackSummary();
    if (!note.empty() && lines)
      std::fprintf(stderr, "%s: note: --backend %s\n", rs ? label.toUtf8().constData() : run.id.c_str(), note.c_str());
    recordBackend(run, *opt.backend, rs ? rs->config.forward_gemm : GemmOptions{},
                  note.empty() ? opt.backend->noGpuReason() : note);
    if (rs) {
      if (run.backend == "cuda")
        run.attrs["fast_accum_backward"] =
            int64_t(rs->config.backward_gemm.accumulation == Accumulation::FastAccum ? 1 : 0);
      run.attrs["gemm_runs_gpu"] = opt.backend->gpu_runs;
      run.attrs["gemm_runs_cpu"] = opt.backend->cpu_runs;
    } else {
      opt.backend->resetCounts();
    }
  };
  hooks.save = [&](const Run& run, std::string* stored, std::string* error) {
    WriteOptions wo;
    wo.on_conflict = WriteOptions::OnConflict::Rename;
    wo.compress = opt.compress;
    wo.lock = sessionLockWait();
    std::vector<std::string> ids;
    setInterruptLossNote(QStringLiteral("the save of run '%1' in progress (%2 keeps what it held before; saves are "
                                        "atomic)")
                             .arg(QString::fromStdString(run.id), out_file));
    const Status st = appendRuns(out_path, {run}, wo, &ids);
    if (!st.ok()) {
      *error = "to " + out_path + ": " + st.firstError();
      return false;
    }
    *stored = ids.empty() ? run.id : ids.front();
    backend_notes[*stored] = attrString(run.attrs, "backend_note").value_or("");
    if (const auto nf = run.group_attrs.find("nonfinite");
        nf != run.group_attrs.end() && attrInt(nf->second, "found").value_or(0) == 1)
      std::fprintf(stderr, "%s: first non-finite value: %s%s\n", stored->c_str(),
                   attrString(nf->second, "description").value_or("?").c_str(),
                   attrString(run.attrs, "status").value_or("") == "stopped_nonfinite"
                       ? "; run stopped (on_nonfinite stop)"
                       : "");
    if (lines && run.group_attrs.count(layout::kWhatIf)) {
      // one line per run: the mean SQNR over every operand and what-if step, per recipe and the
      // recipe that trained, best first
      const Dataset* steps = run.find(layout::kWhatIfSteps);
      std::map<std::string, std::pair<double, int>> mean; // recipe → (Σ, n)
      for (const auto& [path, d] : run.datasets) {
        const std::string wi_prefix = std::string(layout::kWhatIf) + "/";
        const bool wi = path.rfind(wi_prefix, 0) == 0,
                   bs = path.rfind(std::string(layout::kBlockStatsGroup) + "/", 0) == 0;
        if ((!wi && !bs) || path.size() < 8 || path.compare(path.size() - 8, 8, "/sqnr_db") != 0) continue;
        std::string recipe = "trained";
        if (wi) recipe = path.substr(wi_prefix.size(), path.find('/', wi_prefix.size()) - wi_prefix.size());
        auto& m = mean[recipe];
        if (wi) {
          for (float v : d.f32)
            if (std::isfinite(v)) m.first += v, ++m.second;
        } else if (steps) {
          for (int64_t t : steps->i64)
            if (t >= 0 && t < static_cast<int64_t>(d.f32.size()) && std::isfinite(d.f32[static_cast<size_t>(t)]))
              m.first += d.f32[static_cast<size_t>(t)], ++m.second;
        }
      }
      std::vector<std::pair<double, std::string>> rank;
      for (const auto& [k, v] : mean)
        if (v.second > 0) rank.push_back({v.first / v.second, k});
      std::sort(rank.rbegin(), rank.rend());
      std::string line;
      for (const auto& [v, k] : rank)
        line += (line.empty() ? "" : ", ") + k + " " + QString::number(v, 'f', 2).toStdString();
      std::fprintf(stderr, "%s: what-if, mean SQNR over the operands at %lld steps (dB): %s\n", stored->c_str(),
                   static_cast<long long>(steps ? steps->i64.size() : 0), line.c_str());
    }
    if (lines && attrString(run.attrs, "model").value_or("") == "transformer") {
      const auto m = [&](const char* k) { return run.metrics.count(k) ? run.metrics.at(k).value : std::nan(""); };
      std::fprintf(stderr,
                   "%s: validation loss %.4f nats/byte = %.3f bits/byte (unigram entropy of the text: %.3f "
                   "bits/byte), %.1f ms per step\n",
                   stored->c_str(), m("final_val_loss"), m("final_val_bits_per_byte"), m("unigram_bits_per_byte"),
                   1000.0 * m("step_seconds"));
      if (const auto sample = attrString(run.attrs, "sample"); sample && !sample->empty())
        std::fprintf(stderr, "%s: sample (after a validation prompt):\n%s\n", stored->c_str(), sample->c_str());
    }
    if (run.type == "gemm-trained-weights" && lines)
      std::fprintf(stderr, "GEMM on trained %s: SQNR %.2f dB total, %.2f dB quantization, %.2f dB accumulation\n",
                   attrString(run.attrs, "layer").value_or("?").c_str(), run.metrics.at("sqnr_db").value,
                   run.metrics.at("quant_sqnr_db").value, run.metrics.at("accum_sqnr_db").value);
    return true;
  };
  TrainingRunnerOptions ro;
  ro.backend = opt.backend;
  ro.threads = opt.threads;
  const TrainingExperimentOutcome res = runTrainingExperiment(*spec, ro, hooks);
  if (bar) bar->finish();
  for (const auto& o : res.runs) summary.append(outcomeJson(o, opt.backend, backend_notes[o.stored_id]));
  if (!res.weight_gemm_skipped.empty()) std::fprintf(stderr, "note: %s\n", res.weight_gemm_skipped.c_str());
  if (res.status == TrainingExperimentOutcome::Status::Failed) return fail(QString::fromStdString(res.error));
  if (res.status == TrainingExperimentOutcome::Status::Cancelled) {
    if (opt.json)
      emitJson(opt.json_out, QJsonObject{{QStringLiteral("session"), out_file},
                                         {QStringLiteral("interrupted"), true},
                                         {QStringLiteral("runs"), summary}});
    if (!res.runs.empty() && res.runs.back().cancelled) {
      const auto& o = res.runs.back();
      std::fprintf(stderr,
                   "fp8lab-cli: interrupted: run '%s' stopped after %lld of %lld steps%s; the session so far (%d "
                   "run%s) is saved in %s\n",
                   o.stored_id.c_str(), static_cast<long long>(o.steps_done), static_cast<long long>(o.steps_total),
                   o.steps_done > 0
                       ? (" (steps 0 to " + std::to_string(o.steps_done - 1) + ", 0-based as in the session)").c_str()
                       : "",
                   static_cast<int>(summary.size()), summary.size() == 1 ? "" : "s", out_file.toUtf8().constData());
    } else {
      std::fprintf(stderr, "fp8lab-cli: interrupted; the session so far (%d runs) is saved in %s\n",
                   static_cast<int>(summary.size()), out_file.toUtf8().constData());
    }
    return interruptedExitCode();
  }
  if (interrupted()) { // arrived after the last piece of work: everything is saved
    if (opt.json)
      emitJson(opt.json_out, QJsonObject{{QStringLiteral("session"), out_file},
                                         {QStringLiteral("interrupted"), true},
                                         {QStringLiteral("runs"), summary}});
    std::fprintf(stderr, "fp8lab-cli: interrupted; the session so far (%d runs) is saved in %s\n",
                 static_cast<int>(summary.size()), out_file.toUtf8().constData());
    return interruptedExitCode();
  }
  if (opt.json) {
    emitJson(opt.json_out, QJsonObject{{QStringLiteral("session"), out_file},
                                       {QStringLiteral("interrupted"), false},
                                       {QStringLiteral("runs"), summary}});
  } else if (!opt.quiet && opt.print_session_line) {
    std::fprintf(stderr, "session written: %s\n", QFileInfo(out_file).absoluteFilePath().toUtf8().constData());
  }
  return 0;
}

namespace {

int runTrainingType(const Json& config, const std::string& /*text: each run stores its own full config*/,
                    const ConfigPath& at, const RunCliOptions& o) {
  TrainingCliOptions t;
  t.json = o.json;
  t.quiet = o.quiet;
  t.data_dir = o.data_dir;
  t.run_id = o.run_id;
  t.threads = o.threads;
  t.compress = o.compress;
  t.print_session_line = false;
  t.backend = o.backend;
  t.json_out = o.json_out;
  return runTrainingExperiment(config, at, o.doc, o.out, t);
}

int runWeightGemmType(const Json&, const std::string&, const ConfigPath&, const RunCliOptions&) {
  return fail(
      QStringLiteral("\"gemm-trained-weights\" runs are made by a training experiment's \"gemm_on_trained_weights\" "
                     "(see docs/training.md); they can be re-run with `fp8lab-cli rerun`"));
}

const ExperimentTypeRegistrar trainingType({QStringLiteral("training"), runTrainingType});
const ExperimentTypeRegistrar weightGemmType({QStringLiteral("gemm-trained-weights"), runWeightGemmType});

} // namespace

} // namespace fp8lab::cli
