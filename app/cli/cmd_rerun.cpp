// fp8lab-cli rerun — re-runs a stored run and compares it bit for bit (the work is core/experiment's; run_common.h
// holds what the experiment commands share on the terminal).
#include "run_common.h"

#include "command.h"

#include "experiment/run_results.h"

#include <QCommandLineParser>

namespace fp8lab::cli {
namespace {

int runRerun(const QStringList& args) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "Re-runs a stored run from its configuration and seed on the CPU backend and compares every\n"
      "dataset and metric bit for bit with the stored one. Exit 0: identical; 1: differences (listed).\n"
      "Always the CPU reference backend: the bit-for-bit promise is for the CPU; a run stored from the GPU\n"
      "(backend \"cuda\") is compared with the CPU model, and the differences are listed."));
  p.addPositionalArgument(QStringLiteral("FILE.h5"), QStringLiteral("Session file."));
  p.addPositionalArgument(QStringLiteral("RUN_ID"), QStringLiteral("Run to reproduce."));
  [[maybe_unused]] const auto& [o_, nc_, be_, th, js, q] = SharedOptions{};
  const auto saveOpt = cliOption("out", "Also save the new run into this session file.", "FILE.h5"),
             be = cliOption("backend", "Only cpu: rerun reproduces on the CPU reference backend.", "cpu", "cpu");
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
  // Refuse an output the save could not write before re-running.
  if (p.isSet(saveOpt) && !outputWritableOrFail(p.value(saveOpt))) return 2;
  auto rd = SessionReader::open(file.toStdString());
  if (!rd.ok()) return fail(QString::fromStdString(rd.errors()));
  auto stored = rd.value->readRun(id.toStdString());
  if (!stored.ok()) return fail(QString::fromStdString(stored.errors()));
  rd.value.reset();
  const Run& s = stored.value;
  Bar bar(p.isSet(q), p.isSet(q));
  bar.start("rerun " + id.toStdString());
  std::string e;
  const auto res = rerunStoredRun(
      s, threads, [&](double f, const std::string& st) { return bar.update(f, st); }, &e);
  bar.bar.reset();
  if (!res) return fail(QString::fromStdString(e));
  std::vector<std::string> ids;
  if (p.isSet(saveOpt) && !appendRunsToFile(p.value(saveOpt), {res->fresh}, true, &ids)) return 2;
  if (p.isSet(js))
    printJson(rerunResultJson(file.toStdString(), id.toStdString(), s, *res));
  else
    out(rerunReportText(s, *res));
  return res->differences.empty() ? 0 : 1;
}

const CommandRegistrar reg({QStringLiteral("rerun"),
                            QStringLiteral("Re-run a stored run and check it reproduces bit for bit"), runRerun, 62});

} // namespace
} // namespace fp8lab::cli
