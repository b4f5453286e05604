// `fp8lab-cli render` and `fp8lab-cli export --png` run fp8lab-render, the program that draws the
// desktop app's views offscreen, so that fp8lab-cli itself links Qt Core only. Checked here:
// fp8lab-render is found beside fp8lab-cli before PATH, gets the arguments unchanged (and
// --untrusted when fp8lab-cli was given it), its exit code comes back, a signal that ends it comes
// back as 128 + the signal, SIGTERM sent to fp8lab-cli reaches it, and without one there is a
// clear error (exit 2). These use a copy of fp8lab-cli in a directory of its own, with stand-in
// renderers (shell scripts). With the desktop app built, the real fp8lab-render: the same files,
// CSV and JSON through fp8lab-cli as run directly, without a display and without QT_QPA_PLATFORM,
// and the argument checks (one FILE.h5, --png required, --csv with --png refused, --size range).
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>

namespace {

const QString kCli = QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli");
const QString kRender = QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-render");

struct Result {
  QProcess::ExitStatus status = QProcess::CrashExit;
  int code = -1;
  QString out, err;
};

Result run(const QString& program, const QStringList& args, const QProcessEnvironment& env) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  Result r;
  if (!p.waitForFinished(120000)) {
    p.kill();
    p.waitForFinished();
    r.err = QStringLiteral("timed out");
    return r;
  }
  r.status = p.exitStatus();
  r.code = p.exitCode();
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

/// The environment of a headless machine: no display, no platform chosen.
QProcessEnvironment headless() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* k : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) env.remove(QString::fromLatin1(k));
  return env;
}

/// `env` with PATH set to `path` alone.
QProcessEnvironment withPath(QProcessEnvironment env, const QString& path) {
  env.insert(QStringLiteral("PATH"), path);
  return env;
}

bool writeFile(const QString& path, const QByteArray& text, bool executable = false) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size()) return false;
  f.close();
  return !executable || f.setPermissions(f.permissions() | QFileDevice::ExeOwner | QFileDevice::ExeUser);
}

#ifdef FP8LAB_HAVE_RENDER
QByteArray readFile(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

/// Width and height from a PNG's IHDR chunk; (0, 0) when the file is not a PNG.
QSize pngSize(const QString& path) {
  const QByteArray b = readFile(path);
  if (b.size() < 24 || !b.startsWith("\x89PNG\r\n\x1a\n")) return {};
  auto be32 = [&](int at) {
    return int((uchar(b[at]) << 24) | (uchar(b[at + 1]) << 16) | (uchar(b[at + 2]) << 8) | uchar(b[at + 3]));
  };
  return QSize(be32(16), be32(20));
}
#endif

} // namespace

class TestRenderCli : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString alone_;   // a directory holding a copy of fp8lab-cli and nothing else
  QString cliCopy_; // that copy
  QString empty_;   // an empty directory, for PATH
  QString session_; // a session with one GEMM run
  QString runId_;

  /// A stand-in fp8lab-render in `where` running the shell `body`; returns its path.
  QString fakeRenderer(const QString& where, const QByteArray& body) {
    QDir().mkpath(where);
    const QString p = QDir(where).filePath(QStringLiteral("fp8lab-render"));
    QFile::remove(p);
    if (!writeFile(p, "#!/bin/sh\n" + body + "\n", true)) qFatal("cannot write %s", qPrintable(p));
    return p;
  }
  /// A directory holding a copy of fp8lab-cli and a stand-in fp8lab-render beside it.
  QString cliWithFake(const QString& name, const QByteArray& body) {
    const QString d = dir_.filePath(name);
    QDir().mkpath(d);
    const QString cli = QDir(d).filePath(QStringLiteral("fp8lab-cli"));
    QFile::remove(cli);
    if (!QFile::copy(kCli, cli)) qFatal("cannot copy fp8lab-cli to %s", qPrintable(d));
    fakeRenderer(d, body);
    return cli;
  }

private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(QFileInfo(kCli).isExecutable(), qPrintable(kCli + QStringLiteral(" not built (target fp8lab-cli)")));
    alone_ = dir_.filePath(QStringLiteral("alone"));
    empty_ = dir_.filePath(QStringLiteral("empty"));
    QVERIFY(QDir().mkpath(alone_) && QDir().mkpath(empty_));
    cliCopy_ = QDir(alone_).filePath(QStringLiteral("fp8lab-cli"));
    QVERIFY(QFile::copy(kCli, cliCopy_));
    const QString config = dir_.filePath(QStringLiteral("gemm.json"));
    QVERIFY(writeFile(config, R"({"type": "gemm", "m": 64, "k": 128, "n": 32, "seed": 5, "format": "E4M3FN",
                                 "scaling": "te_current"})"));
    session_ = dir_.filePath(QStringLiteral("s.h5"));
    const auto env = QProcessEnvironment::systemEnvironment();
    const Result made =
        run(kCli, {QStringLiteral("run"), config, QStringLiteral("--out"), session_, QStringLiteral("-q")}, env);
    QVERIFY2(made.status == QProcess::NormalExit && made.code == 0, qPrintable(made.err));
    const Result info = run(kCli, {QStringLiteral("inspect"), session_, QStringLiteral("--json")}, env);
    QVERIFY2(info.code == 0, qPrintable(info.err));
    const QJsonArray runs = QJsonDocument::fromJson(info.out.toUtf8()).object()[QStringLiteral("runs")].toArray();
    QCOMPARE(runs.size(), 1);
    runId_ = runs[0].toObject()[QStringLiteral("id")].toString();
    QVERIFY(!runId_.isEmpty());
  }

  // A build without the desktop app has no fp8lab-render: the CLI says what is missing and how to
  // get it, and its other commands work.
  void missingRendererIsAClearError_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("command");
    QTest::newRow("render") << QStringList{QStringLiteral("render"), session_, QStringLiteral("--png"),
                                           dir_.filePath(QStringLiteral("no"))}
                            << QStringLiteral("render");
    QTest::newRow("render --help") << QStringList{QStringLiteral("render"), QStringLiteral("--help")}
                                   << QStringLiteral("render");
    QTest::newRow("export --png") << QStringList{QStringLiteral("export"), session_,
                                                 QStringLiteral("--run"),  runId_,
                                                 QStringLiteral("--png"),  dir_.filePath(QStringLiteral("no"))}
                                  << QStringLiteral("export --png");
  }
  void missingRendererIsAClearError() {
    QFETCH(QStringList, args);
    QFETCH(QString, command);
    const Result r = run(cliCopy_, args, withPath(headless(), empty_));
    QCOMPARE(r.status, QProcess::NormalExit);
    QCOMPARE(r.code, 2);
    QCOMPARE(r.out, QString());
    QVERIFY2(r.err.startsWith(QStringLiteral("fp8lab-cli: error: %1 needs fp8lab-render").arg(command)),
             qPrintable(r.err));
    for (const QString& must : {QFileInfo(alone_).canonicalFilePath(), QStringLiteral("PATH"),
                                QStringLiteral("-DFP8LAB_BUILD_GUI=ON"), QStringLiteral("fp8lab package")})
      QVERIFY2(r.err.contains(must), qPrintable(must + QStringLiteral(" not in: ") + r.err));
    QVERIFY(!QFileInfo::exists(dir_.filePath(QStringLiteral("no"))));
    const Result other = run(cliCopy_, {QStringLiteral("formats")}, withPath(headless(), empty_));
    QVERIFY2(other.code == 0 && other.out.contains(QStringLiteral("E4M3FN")), qPrintable(other.err));
  }

  // The renderer beside fp8lab-cli comes before one on PATH; without one beside, PATH is searched.
  void rendererBesideThenOnPath() {
    const QString onPath = dir_.filePath(QStringLiteral("path-bin"));
    fakeRenderer(onPath, "echo on-path");
    const Result viaPath = run(cliCopy_, {QStringLiteral("render")}, withPath(headless(), onPath));
    QVERIFY2(viaPath.code == 0, qPrintable(viaPath.err));
    QCOMPARE(viaPath.out, QStringLiteral("on-path\n"));
    const QString cli = cliWithFake(QStringLiteral("beside"), "echo beside");
    const Result beside = run(cli, {QStringLiteral("render")}, withPath(headless(), onPath));
    QVERIFY2(beside.code == 0, qPrintable(beside.err));
    QCOMPARE(beside.out, QStringLiteral("beside\n"));
  }

  // The arguments after the command word arrive unchanged, one by one; fp8lab-cli's global
  // --untrusted (before or after the command) comes first; stdout, stderr and the exit code are the
  // renderer's.
  void argumentsOutputAndExitCodePassThrough_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expected");
    const QString spaced = QStringLiteral("a dir/with 'quotes'");
    QTest::newRow("render") << QStringList{QStringLiteral("render"), QStringLiteral("s.h5"),
                                           QStringLiteral("--png"),  spaced,
                                           QStringLiteral("--"),     QStringLiteral("-x")}
                            << QStringLiteral("[s.h5][--png][%1][--][-x]").arg(spaced);
    QTest::newRow("export --png") << QStringList{QStringLiteral("export"), QStringLiteral("s.h5"),
                                                 QStringLiteral("--run"), QStringLiteral("r1"),
                                                 QStringLiteral("--png=out")}
                                  << QStringLiteral("[s.h5][--run][r1][--png=out]");
    QTest::newRow("--untrusted before") << QStringList{QStringLiteral("--untrusted"), QStringLiteral("render"),
                                                       QStringLiteral("s.h5")}
                                        << QStringLiteral("[--untrusted][s.h5]");
    QTest::newRow("--untrusted after") << QStringList{QStringLiteral("export"), QStringLiteral("s.h5"),
                                                      QStringLiteral("--untrusted"), QStringLiteral("--png"),
                                                      QStringLiteral("d")}
                                       << QStringLiteral("[--untrusted][s.h5][--png][d]");
  }
  void argumentsOutputAndExitCodePassThrough() {
    QFETCH(QStringList, args);
    QFETCH(QString, expected);
    const QString cli = cliWithFake(QStringLiteral("echo-args"), R"(for a in "$@"; do printf '[%s]' "$a"; done
echo
echo "to stderr" >&2
exit 7)");
    const Result r = run(cli, args, withPath(headless(), empty_));
    QCOMPARE(r.status, QProcess::NormalExit);
    QCOMPARE(r.code, 7);
    QCOMPARE(r.out, expected + QLatin1Char('\n'));
    QCOMPARE(r.err, QStringLiteral("to stderr\n"));
  }

  // A renderer ended by a signal: fp8lab-cli exits with 128 + the signal, as a shell reports it.
  void signalOfTheRendererBecomesTheExitCode_data() {
    QTest::addColumn<int>("sig");
    QTest::newRow("SIGTERM") << int(SIGTERM);
    QTest::newRow("SIGKILL") << int(SIGKILL);
    QTest::newRow("SIGSEGV") << int(SIGSEGV);
  }
  void signalOfTheRendererBecomesTheExitCode() {
    QFETCH(int, sig);
    const QString cli = cliWithFake(QStringLiteral("killed"), "kill -" + QByteArray::number(sig) + " $$");
    const Result r = run(cli, {QStringLiteral("render")}, withPath(headless(), empty_));
    QCOMPARE(r.status, QProcess::NormalExit);
    QCOMPARE(r.code, 128 + sig);
  }

  // SIGTERM sent to fp8lab-cli alone (timeout, Slurm) reaches the renderer, and fp8lab-cli ends
  // with the renderer's status.
  void sigtermReachesTheRenderer() {
    const QString cli = cliWithFake(QStringLiteral("trap"), R"(sleep 60 &
trap 'kill $!; echo got SIGTERM >&2; exit 42' TERM
echo ready
wait)");
    QProcess p;
    p.setProcessEnvironment(withPath(headless(), QStringLiteral("/usr/bin:/bin")));
    p.start(cli, {QStringLiteral("render")});
    QVERIFY(p.waitForStarted());
    QByteArray out;
    while (!out.contains("ready\n") && p.waitForReadyRead(20000)) out += p.readAllStandardOutput();
    QVERIFY2(out.contains("ready\n"), out.constData());
    p.terminate(); // SIGTERM to fp8lab-cli only
    QVERIFY(p.waitForFinished(20000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 42);
    QCOMPARE(p.readAllStandardError(), QByteArray("got SIGTERM\n"));
  }

#ifdef FP8LAB_HAVE_RENDER
  // The real renderer through fp8lab-cli on a headless machine (no display, no QT_QPA_PLATFORM):
  // the files of one GEMM run and the comparison, at the size asked, the same list and CSV as
  // fp8lab-render run directly.
  void renderThroughTheCli() {
    QVERIFY2(QFileInfo(kRender).isExecutable(), qPrintable(kRender + QStringLiteral(" not built")));
    const QString viaCli = dir_.filePath(QStringLiteral("via-cli")), direct = dir_.filePath(QStringLiteral("direct"));
    const QStringList opts{QStringLiteral("--size"), QStringLiteral("400x300")};
    const Result a =
        run(kCli, QStringList{QStringLiteral("render"), session_, QStringLiteral("--png"), viaCli} + opts, headless());
    QCOMPARE(a.status, QProcess::NormalExit);
    QVERIFY2(a.code == 0, qPrintable(a.err));
    const Result b = run(kRender, QStringList{session_, QStringLiteral("--png"), direct} + opts, headless());
    QVERIFY2(b.code == 0, qPrintable(b.err));
    QStringList names;
    for (const QString& line : a.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
      QCOMPARE(QFileInfo(line).absolutePath(), QFileInfo(viaCli).absoluteFilePath());
      names << QFileInfo(line).fileName();
    }
    // The run's views in the tab order of the view registry (heatmap 70, block_map 90; a GEMM run
    // stores the per-block statistics of A and B, so it has a block map), then the session's.
    const QStringList expected{runId_ + QStringLiteral("-heatmap.png"),
                               runId_ + QStringLiteral("-heatmap.csv"),
                               runId_ + QStringLiteral("-split.png"),
                               runId_ + QStringLiteral("-split.csv"),
                               runId_ + QStringLiteral("-block_map.png"),
                               runId_ + QStringLiteral("-block_map.csv"),
                               QStringLiteral("compare.png"),
                               QStringLiteral("compare.csv")};
    QCOMPARE(names, expected);
    QCOMPARE(QString(b.out).replace(direct, viaCli), a.out);
    for (const QString& n : expected) {
      const QString f = QDir(viaCli).filePath(n);
      if (n.endsWith(QStringLiteral(".png"))) {
        QCOMPARE(pngSize(f), QSize(400, 300));
      } else {
        QVERIFY2(!readFile(f).isEmpty(), qPrintable(n));
        QCOMPARE(readFile(f), readFile(QDir(direct).filePath(n)));
      }
    }
  }

  // The diagnostic views' choices: the block map of B coloured by block SQNR (its CSV column).
  void diagnosticChoices() {
    const QString out = dir_.filePath(QStringLiteral("choices"));
    const Result r = run(kRender,
                         {session_, QStringLiteral("--png"), out, QStringLiteral("--run"), runId_,
                          QStringLiteral("--views"), QStringLiteral("block_map"), QStringLiteral("--operand"),
                          QStringLiteral("B"), QStringLiteral("--block-stat"), QStringLiteral("sqnr_db")},
                         headless());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QByteArray csv = readFile(QDir(out).filePath(runId_ + QStringLiteral("-block_map.csv")));
    QVERIFY2(csv.startsWith("block_row,block_col,sqnr_db\n"), csv.constData());
  }

  void exportPngThroughTheCli() {
    const QString out = dir_.filePath(QStringLiteral("export-png"));
    const Result r = run(kCli,
                         {QStringLiteral("export"), session_, QStringLiteral("--run"), runId_, QStringLiteral("--png"),
                          out, QStringLiteral("--views"), QStringLiteral("heatmap"), QStringLiteral("--json")},
                         headless());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(o[QStringLiteral("session")].toString(), session_);
    const QJsonArray files = o[QStringLiteral("files")].toArray();
    QCOMPARE(files.size(), 2); // the PNG and its CSV
    const QJsonObject png = files[0].toObject();
    QCOMPARE(png[QStringLiteral("view")].toString(), QStringLiteral("heatmap"));
    QCOMPARE(png[QStringLiteral("run")].toString(), runId_);
    QCOMPARE(png[QStringLiteral("width")].toInt(), 1400);
    QCOMPARE(png[QStringLiteral("height")].toInt(), 900);
    QCOMPARE(pngSize(png[QStringLiteral("file")].toString()), QSize(1400, 900));
  }

  // The argument checks, through fp8lab-cli (render and export --png) and run directly: exit 2, one
  // error line from fp8lab-render, nothing on stdout, nothing written.
  void refusedArguments_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("error");
    const QString out = dir_.filePath(QStringLiteral("refused"));
    const QString png = QStringLiteral("--png");
    QTest::newRow("--csv with --png") << QStringList{session_, png, out, QStringLiteral("--csv"), out}
                                      << QStringLiteral("--csv and --png cannot be combined");
    QTest::newRow("no --png") << QStringList{session_} << QStringLiteral("--png DIR is required");
    QTest::newRow("no file") << QStringList{png, out} << QStringLiteral("render needs one FILE.h5");
    QTest::newRow("two files") << QStringList{session_, session_, png, out}
                               << QStringLiteral("render needs one FILE.h5");
    QTest::newRow("--size 3x3") << QStringList{session_, png, out, QStringLiteral("--size"), QStringLiteral("3x3")}
                                << QStringLiteral("--size must be WxH with 16..20000 pixels each");
    QTest::newRow("--size 800") << QStringList{session_, png, out, QStringLiteral("--size"), QStringLiteral("800")}
                                << QStringLiteral("--size must be WxH");
    QTest::newRow("unknown option") << QStringList{session_, png, out, QStringLiteral("--datasets"),
                                                   QStringLiteral("x")}
                                    << QStringLiteral("Unknown option 'datasets'");
    QTest::newRow("unknown view") << QStringList{session_, png, out, QStringLiteral("--views"), QStringLiteral("bogus")}
                                  << QStringLiteral("unknown view 'bogus'");
    QTest::newRow("unknown format") << QStringList{session_, png, out, QStringLiteral("--formats"),
                                                   QStringLiteral("gif")}
                                    << QStringLiteral("unknown format 'gif'");
    QTest::newRow("unknown run") << QStringList{session_, png, out, QStringLiteral("--run"), QStringLiteral("nope")}
                                 << QStringLiteral("nope");
    QTest::newRow("missing file") << QStringList{dir_.filePath(QStringLiteral("missing.h5")), png, out}
                                  << QStringLiteral("missing.h5");
    QTest::newRow("--recipe without --run")
        << QStringList{session_, png, out, QStringLiteral("--recipe"), QStringLiteral("mx_rceil")}
        << QStringLiteral("--recipe, --operand and --step choose within one run: give --run ID");
    QTest::newRow("unknown layer statistic")
        << QStringList{session_, png, out, QStringLiteral("--layer-stat"), QStringLiteral("sqnr")}
        << QStringLiteral("unknown layer statistic 'sqnr' (underflow_fraction, saturation_fraction, sqnr_db,");
    QTest::newRow("unknown block statistic")
        << QStringList{session_, png, out, QStringLiteral("--block-stat"), QStringLiteral("scale")}
        << QStringLiteral("unknown block statistic 'scale' (log2_scale, log2_amax, underflow_percent,");
    QTest::newRow("--difference alone") << QStringList{session_, png, out, QStringLiteral("--difference")}
                                        << QStringLiteral("--difference needs --recipe");
    QTest::newRow("operand the run lacks") << QStringList{session_,
                                                          png,
                                                          out,
                                                          QStringLiteral("--run"),
                                                          runId_,
                                                          QStringLiteral("--operand"),
                                                          QStringLiteral("fc1/input")}
                                           << QStringLiteral("has no block map of 'fc1/input' (its operands: A, B)");
    QTest::newRow("--step -1") << QStringList{session_,
                                              png,
                                              out,
                                              QStringLiteral("--run"),
                                              runId_,
                                              QStringLiteral("--step"),
                                              QStringLiteral("-1")}
                               << QStringLiteral("--step must be a step number");
  }
  void refusedArguments() {
    QFETCH(QStringList, args);
    QFETCH(QString, error);
    const QString out = dir_.filePath(QStringLiteral("refused"));
    const QList<QPair<QString, QStringList>> calls{{kRender, args},
                                                   {kCli, QStringList{QStringLiteral("render")} + args}};
    QList<QPair<QString, QStringList>> all = calls;
    if (args.contains(QStringLiteral("--png"))) all.append({kCli, QStringList{QStringLiteral("export")} + args});
    for (const auto& [program, a] : all) {
      const Result r = run(program, a, headless());
      const QString what = QFileInfo(program).fileName() + QLatin1Char(' ') + a.join(QLatin1Char(' '));
      QCOMPARE(r.status, QProcess::NormalExit);
      QVERIFY2(r.code == 2, qPrintable(what + QStringLiteral(": exit %1").arg(r.code)));
      QCOMPARE(r.out, QString());
      QVERIFY2(r.err.contains(QStringLiteral("fp8lab-render: error: ")) && r.err.contains(error),
               qPrintable(what + QStringLiteral(": ") + r.err));
      QVERIFY2(!QFileInfo::exists(out), qPrintable(what));
    }
  }

  void helpAndVersion() {
    const Result help = run(kCli, {QStringLiteral("render"), QStringLiteral("--help")}, headless());
    QVERIFY2(help.code == 0, qPrintable(help.err));
    for (const char* opt :
         {"FILE.h5", "--run <ID>", "--png <DIR>", "--views <LIST>", "--size <WxH>", "--formats <LIST>", "--no-csv",
          "--json", "--untrusted", "fp8lab-cli render", "block_scales"})
      QVERIFY2(help.out.contains(QLatin1String(opt)), opt);
    const Result direct = run(kRender, {QStringLiteral("--help")}, headless());
    QCOMPARE(direct.out.section(QLatin1Char('\n'), 1), help.out.section(QLatin1Char('\n'), 1)); // all but Usage:
    const Result v = run(kRender, {QStringLiteral("--version")}, headless());
    QVERIFY2(v.code == 0, qPrintable(v.err));
    QCOMPARE(v.out, QStringLiteral("fp8lab-render " FP8LAB_VERSION "\n"));
  }

  // --untrusted reaches the real renderer: a file that crashes libhdf5 is refused by the separate
  // checking process (exit 2), not a crash of fp8lab-render (>= 128).
  void untrustedCrashingFileIsRefused() {
    const QString crash =
        QStringLiteral(FP8LAB_SOURCE_DIR "/tests/fuzz/known-libhdf5-crashes/H5Aiterate2-H5A__close-segv.h5");
    QVERIFY(QFileInfo::exists(crash));
    const Result r = run(kCli,
                         {QStringLiteral("--untrusted"), QStringLiteral("render"), crash, QStringLiteral("--png"),
                          dir_.filePath(QStringLiteral("crash"))},
                         headless());
    QCOMPARE(r.status, QProcess::NormalExit);
    QVERIFY2(r.code == 2, qPrintable(QStringLiteral("exit %1: %2").arg(r.code).arg(r.err)));
    QVERIFY2(r.err.contains(QStringLiteral("separate checking process")), qPrintable(r.err));
  }
#endif
};

QTEST_GUILESS_MAIN(TestRenderCli)
#include "test_render_cli.moc"
