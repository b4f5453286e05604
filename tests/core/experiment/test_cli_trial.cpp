// What a new user's first hour with fp8lab-cli ran into, each checked on the built binary with the
// exact text it must print: usage lines naming the command, list flags refusing empty items,
// shapes with a zero dimension, repeated run ids, -q on gemm, renamed runs said on stderr,
// outputs that are not sessions refused before any work, the README's merge idiom and config
// errors naming where a value came from.
#include "cli_runner.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <hdf5.h>

using fp8lab::testsupport::CliResult;
using fp8lab::testsupport::runCli;

namespace {

/// The first line of `text`.
QByteArray firstLine(const QByteArray& text) {
  const qsizetype eol = text.indexOf('\n');
  return eol < 0 ? text : text.left(eol);
}

/// `text` without its lines that start with "time:" (measured seconds, different in every run).
/// The report without what is measured per process: the "time:" line, and the kernel line under
/// "backend" (which of two bit-identical AVX-512 kernels runs is timed once per process).
QByteArray withoutTimes(const QByteArray& text) {
  QByteArray kept;
  bool after_backend = false;
  for (const QByteArray& line : text.split('\n')) {
    if (!line.startsWith("time:") && !(after_backend && line.startsWith("  "))) kept += line + '\n';
    after_backend = line.startsWith("backend ");
  }
  return kept;
}

/// The bytes of file `path` ("" when it cannot be read).
QByteArray fileBytes(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

/// Writes `bytes` to `path`.
bool writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

/// Another program's HDF5 file, as h5py writes one: a root group holding dataset "x" = [1, 2, 3]
/// and no FP8 Lab root attributes.
bool writeForeignHdf5(const QString& path) {
  const hid_t f = H5Fcreate(QFile::encodeName(path).constData(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) return false;
  const hsize_t n = 3;
  const int x[3] = {1, 2, 3};
  const hid_t sp = H5Screate_simple(1, &n, nullptr);
  const hid_t ds = H5Dcreate2(f, "x", H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const bool ok = ds >= 0 && H5Dwrite(ds, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) >= 0;
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(sp);
  return H5Fclose(f) >= 0 && ok;
}

} // namespace

class TestCliTrial : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // `<command> --help` names the program without its directory, then the command's words, as a
  // user types them (QCommandLineParser alone writes argv[0] with its path and no command). The
  // positional names after "[options]" are each command's own addPositionalArgument calls.
  void helpUsageNamesTheCommand_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QByteArray>("usage");
    const auto row = [](const char* name, const QStringList& a, const char* usage) {
      QTest::newRow(name) << a << QByteArray(usage);
    };
    row("export", {QStringLiteral("export"), QStringLiteral("--help")}, "Usage: fp8lab-cli export [options] FILE.h5");
    row("encode", {QStringLiteral("encode"), QStringLiteral("--help")}, "Usage: fp8lab-cli encode [options] VALUE...");
    row("decode", {QStringLiteral("decode"), QStringLiteral("-h")}, "Usage: fp8lab-cli decode [options] CODE...");
    row("gemm", {QStringLiteral("gemm"), QStringLiteral("--help")}, "Usage: fp8lab-cli gemm [options]");
    row("run", {QStringLiteral("run"), QStringLiteral("--help")}, "Usage: fp8lab-cli run [options] CONFIG.json");
    row("inspect", {QStringLiteral("inspect"), QStringLiteral("--help")},
        "Usage: fp8lab-cli inspect [options] FILE.h5");
    row("merge", {QStringLiteral("merge"), QStringLiteral("--help")},
        "Usage: fp8lab-cli merge [options] OUT.h5 IN1.h5 IN2.h5 ...");
    row("runs", {QStringLiteral("runs"), QStringLiteral("--help")}, "Usage: fp8lab-cli runs [options] action FILE.h5");
    row("runs delete", {QStringLiteral("runs"), QStringLiteral("delete"), QStringLiteral("--help")},
        "Usage: fp8lab-cli runs delete [options] FILE.h5");
    row("checkpoint", {QStringLiteral("checkpoint"), QStringLiteral("--help")},
        "Usage: fp8lab-cli checkpoint [options] action");
    row("checkpoint export", {QStringLiteral("checkpoint"), QStringLiteral("export"), QStringLiteral("--help")},
        "Usage: fp8lab-cli checkpoint export [options]");
    row("scaling simulate", {QStringLiteral("scaling"), QStringLiteral("simulate"), QStringLiteral("--help")},
        "Usage: fp8lab-cli scaling simulate [options]");
  }
  void helpUsageNamesTheCommand() {
    QFETCH(QStringList, args);
    QFETCH(QByteArray, usage);
    const CliResult r = runCli(args);
    QCOMPARE(r.code, 0);
    QCOMPARE(firstLine(r.out), usage);
  }

  // Every comma list read as numbers refuses an empty item, naming its 1-based place, instead of
  // skipping it ("--values 1,,2" quantized two values without a word).
  void numberListsRefuseEmptyItems_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QByteArray>("err");
    const QStringList q = {QStringLiteral("quantize"), QStringLiteral("-f"), QStringLiteral("E4M3FN"),
                           QStringLiteral("-s")};
    QTest::newRow("quantize --values 1,,2")
        << q + QStringList{QStringLiteral("te_current"), QStringLiteral("--values"), QStringLiteral("1,,2")}
        << QByteArray("fp8lab-cli: error: --values: item 2 of '1,,2' is empty (one comma between values, none at "
                      "either end)\n");
    QTest::newRow("quantize --amax-history 1,2,")
        << q + QStringList{QStringLiteral("te_delayed"), QStringLiteral("--amax-history"), QStringLiteral("1,2,"),
                           QStringLiteral("--values"), QStringLiteral("1,2")}
        << QByteArray("fp8lab-cli: error: --amax-history: item 3 of '1,2,' is empty (one comma between values, none "
                      "at either end)\n");
    QTest::newRow("scaling simulate --amax ,1")
        << QStringList{QStringLiteral("scaling"), QStringLiteral("simulate"), QStringLiteral("--preset"),
                       QStringLiteral("te"),      QStringLiteral("--amax"),   QStringLiteral(",1")}
        << QByteArray("fp8lab-cli: error: --amax: item 1 of ',1' is empty (one comma between values, none at either "
                      "end)\n");
  }
  void numberListsRefuseEmptyItems() {
    QFETCH(QStringList, args);
    QFETCH(QByteArray, err);
    const CliResult r = runCli(args);
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, err);
    QCOMPARE(r.out, QByteArray());
  }

  // A shape has at least one row and one column: "0x3" is refused as such, not as a count of
  // values ("needs 0 values, got 3").
  void quantizeShapeNeedsPositiveDimensions() {
    const CliResult r = runCli({QStringLiteral("quantize"), QStringLiteral("-f"), QStringLiteral("E4M3FN"),
                                QStringLiteral("-s"), QStringLiteral("te_current"), QStringLiteral("--shape"),
                                QStringLiteral("0x3"), QStringLiteral("--values"), QStringLiteral("1,2,3")});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, QByteArray("fp8lab-cli: error: --shape 0x3: rows and columns must each be at least 1\n"));
  }

  // `runs delete F ID ID` refuses the repeated id and deletes nothing (it said "deleted run ID"
  // twice).
  void runsDeleteRefusesARepeatedId() {
    QTemporaryDir dir;
    const QString f = dir.filePath(QStringLiteral("r.h5"));
    for (const char* id : {"a", "b"})
      QCOMPARE(runCli({QStringLiteral("gemm"), QStringLiteral("-q"), QStringLiteral("--m"), QStringLiteral("8"),
                       QStringLiteral("--n"), QStringLiteral("8"), QStringLiteral("--k"), QStringLiteral("8"),
                       QStringLiteral("--out"), f, QStringLiteral("--id"), QString::fromLatin1(id)})
                   .code,
               0);
    const CliResult r = runCli({QStringLiteral("runs"), QStringLiteral("delete"), f, QStringLiteral("a"),
                                QStringLiteral("b"), QStringLiteral("a")});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.out, QByteArray());
    QCOMPARE(r.err, "fp8lab-cli: error: runs delete: run id 'a' is given twice (RUN_ID 1 and 3); nothing deleted, " +
                        f.toUtf8() + " unchanged\n");
    QCOMPARE(runCli({QStringLiteral("runs"), QStringLiteral("list"), f}).out, QByteArray("a\nb\n"));
  }

  // gemm takes -q / --quiet as run and sweep do: no progress bar and no note on the backend, so a
  // CPU run prints nothing on stderr; stdout is the report, the same as without -q (but for the
  // measured "time:" line).
  void gemmAcceptsQuiet() {
    const QStringList g = {QStringLiteral("gemm"), QStringLiteral("--m"), QStringLiteral("8"), QStringLiteral("--n"),
                           QStringLiteral("8"),    QStringLiteral("--k"), QStringLiteral("16")};
    const CliResult loud = runCli(g);
    QCOMPARE(loud.code, 0);
    for (const char* q : {"-q", "--quiet"}) {
      const CliResult r = runCli(g + QStringList{QString::fromLatin1(q)});
      QCOMPARE(r.code, 0);
      QCOMPARE(r.err, QByteArray());
      QCOMPARE(withoutTimes(r.out), withoutTimes(loud.out));
    }
  }

  // A run stored under another id because its own is taken is said on stderr, in the words sweep
  // and merge use, by every command that appends runs: run (a GEMM and a training config), train
  // and gemm --out. With -q nothing else is printed there (gemm still says where it saved).
  void renamedRunsAreSaid_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QByteArray>("config");
    QTest::addColumn<QByteArray>("err");
    const QString c = QStringLiteral("%C"), o = QStringLiteral("%O");
    const QByteArray training =
        R"({"type": "training", "id": "t", "train_limit": 256, "test_limit": 100, "epochs": 1, "batch_size": 64})";
    QTest::newRow("run, gemm config") << QStringList{QStringLiteral("run"),   c,
                                                     QStringLiteral("--out"), o,
                                                     QStringLiteral("--id"),  QStringLiteral("g"),
                                                     QStringLiteral("-q")}
                                      << QByteArray(R"({"type": "gemm", "m": 8, "n": 8, "k": 8})")
                                      << QByteArray("note: run g stored as g-2 (id taken)\n");
    QTest::newRow("run, training config")
        << QStringList{QStringLiteral("run"), c, QStringLiteral("--out"), o, QStringLiteral("-q")} << training
        << QByteArray("note: run t stored as t-2 (id taken)\n");
    QTest::newRow("train") << QStringList{QStringLiteral("train"), c, QStringLiteral("--out"), o, QStringLiteral("-q")}
                           << training << QByteArray("note: run t stored as t-2 (id taken)\n");
    QTest::newRow("gemm --out") << QStringList{QStringLiteral("gemm"), QStringLiteral("--m"),   QStringLiteral("8"),
                                               QStringLiteral("--n"),  QStringLiteral("8"),     QStringLiteral("--k"),
                                               QStringLiteral("8"),    QStringLiteral("--out"), o,
                                               QStringLiteral("--id"), QStringLiteral("g"),     QStringLiteral("-q")}
                                << QByteArray()
                                << QByteArray("note: run g stored as g-2 (id taken)\nsaved as run g-2 in %O\n");
  }
  void renamedRunsAreSaid() {
    QFETCH(QStringList, args);
    QFETCH(QByteArray, config);
    QFETCH(QByteArray, err);
    QTemporaryDir dir;
    const QString cfg = dir.filePath(QStringLiteral("c.json")), out = dir.filePath(QStringLiteral("s.h5"));
    QFile f(cfg);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(config);
    f.close();
    for (QString& a : args) a.replace(QStringLiteral("%C"), cfg).replace(QStringLiteral("%O"), out);
    const CliResult first = runCli(args);
    QVERIFY2(first.code == 0, first.err.constData());
    QVERIFY2(!first.err.contains("stored as"), first.err.constData());
    const CliResult second = runCli(args);
    QVERIFY2(second.code == 0, second.err.constData());
    QCOMPARE(second.err, QByteArray(err).replace("%O", out.toUtf8()));
  }

  // An existing --out that is not an FP8 Lab session (another program's HDF5 file, a 0-byte file)
  // is refused before any work, by every command that appends runs: nothing is computed (no
  // progress or training line, no report on stdout) and the file is left as it was. The detail
  // after "cannot take runs:" is the session reader's own, as the save would have said it.
  void foreignOutputRefusedBeforeWork_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<bool>("empty");
    const QString c = QStringLiteral("%C"), o = QStringLiteral("%O");
    const QStringList gemm = {QStringLiteral("gemm"), QStringLiteral("--m"),   QStringLiteral("512"),
                              QStringLiteral("--n"),  QStringLiteral("512"),   QStringLiteral("--k"),
                              QStringLiteral("512"),  QStringLiteral("--out"), o};
    const QStringList commands[] = {
        {QStringLiteral("run"), c, QStringLiteral("--out"), o},
        {QStringLiteral("train"), c, QStringLiteral("--out"), o},
        gemm,
        {QStringLiteral("sweep"), QStringLiteral("%G"), QStringLiteral("--out"), o},
        {QStringLiteral("rerun"), QStringLiteral("%S"), QStringLiteral("g"), QStringLiteral("--out"), o},
        {QStringLiteral("advise"), c, QStringLiteral("--out"), o},
    };
    for (const QStringList& a : commands)
      for (const bool empty : {false, true})
        QTest::addRow("%s, %s", qPrintable(a[0]), empty ? "0-byte file" : "foreign HDF5") << a << empty;
  }
  void foreignOutputRefusedBeforeWork() {
    QFETCH(QStringList, args);
    QFETCH(bool, empty);
    QTemporaryDir dir;
    const QString cfg = dir.filePath(QStringLiteral("t.json")), grid = dir.filePath(QStringLiteral("g.json")),
                  session = dir.filePath(QStringLiteral("s.h5")), out = dir.filePath(QStringLiteral("foreign.h5"));
    // Work that takes seconds to minutes if it ran: 10 epochs on 4096 images, a 512³ GEMM grid.
    QVERIFY(writeFile(cfg, R"({"type": "training", "id": "t", "train_limit": 4096, "test_limit": 500, "epochs": 10})"));
    QVERIFY(writeFile(grid, R"({"type": "gemm", "m": 512, "n": 512, "k": 512,
                                "sweep": {"formats": ["E4M3FN", "E5M2"], "scalings": ["te_current"]}})"));
    QCOMPARE(runCli({QStringLiteral("gemm"), QStringLiteral("-q"), QStringLiteral("--m"), QStringLiteral("8"),
                     QStringLiteral("--n"), QStringLiteral("8"), QStringLiteral("--k"), QStringLiteral("8"),
                     QStringLiteral("--out"), session, QStringLiteral("--id"), QStringLiteral("g")})
                 .code,
             0);
    QVERIFY(empty ? writeFile(out, {}) : writeForeignHdf5(out));
    const QByteArray before = fileBytes(out);
    for (QString& a : args)
      a.replace(QStringLiteral("%C"), cfg)
          .replace(QStringLiteral("%G"), grid)
          .replace(QStringLiteral("%S"), session)
          .replace(QStringLiteral("%O"), out);
    const CliResult r = runCli(args, 60000);
    QCOMPARE(r.code, 2);
    QCOMPARE(r.out, QByteArray());
    const QByteArray why =
        empty ? QByteArray(" exists and is empty, not an HDF5 session (runs are appended to a session; choose another "
                           "--out)")
              : QByteArray(" exists and cannot take runs: a valid HDF5 file, but not an FP8 Lab session (no "
                           "'application' / 'format_version' root attributes) (runs are appended to an FP8 Lab "
                           "session; choose another --out)");
    QCOMPARE(r.err, "fp8lab-cli: error: write failed: " + out.toUtf8() + why + "\n");
    QCOMPARE(fileBytes(out), before);
  }

  // The README's `merge all.h5 all.h5 shard-*.h5` works on its first use: the output named as an
  // input while nothing exists there is skipped, with a note; a missing input that is not the
  // output stays an error, and so does the output as the only input.
  void mergeIntoItselfWorksOnFirstUse() {
    QTemporaryDir dir;
    const QString all = dir.filePath(QStringLiteral("all.h5")), s1 = dir.filePath(QStringLiteral("shard-1.h5")),
                  s2 = dir.filePath(QStringLiteral("shard-2.h5")), none = dir.filePath(QStringLiteral("none.h5"));
    for (const auto& [f, id] : {std::pair{s1, "a"}, std::pair{s2, "b"}})
      QCOMPARE(runCli({QStringLiteral("gemm"), QStringLiteral("-q"), QStringLiteral("--m"), QStringLiteral("8"),
                       QStringLiteral("--n"), QStringLiteral("8"), QStringLiteral("--k"), QStringLiteral("8"),
                       QStringLiteral("--out"), f, QStringLiteral("--id"), QString::fromLatin1(id)})
                   .code,
               0);
    const CliResult first = runCli({QStringLiteral("merge"), all, all, s1, s2});
    QVERIFY2(first.code == 0, first.err.constData());
    QCOMPARE(first.err, "note: " + all.toUtf8() + " does not exist yet: skipped as an input (the merge creates it)\n");
    QCOMPARE(first.out, "merged 2 file(s) -> " + all.toUtf8() + " (2 runs)\n");
    QCOMPARE(runCli({QStringLiteral("runs"), QStringLiteral("list"), all}).out, QByteArray("a\nb\n"));
    // Another missing input is an error, nothing written.
    const QString other = dir.filePath(QStringLiteral("other.h5"));
    const CliResult missing = runCli({QStringLiteral("merge"), other, other, none, s1});
    QCOMPARE(missing.code, 2);
    QCOMPARE(missing.err, "fp8lab-cli: error: not found at " + none.toUtf8() + ": no such file\nwrite failed at " +
                              other.toUtf8() + ": input '" + none.toUtf8() +
                              "' is not a clean FP8 Lab session; nothing written\n");
    QVERIFY(!QFile::exists(other));
    // The output as the only input: nothing to merge, the same error.
    const CliResult alone = runCli({QStringLiteral("merge"), other, other});
    QCOMPARE(alone.code, 2);
    QCOMPARE(alone.err, "fp8lab-cli: error: not found at " + other.toUtf8() + ": no such file\nwrite failed at " +
                            other.toUtf8() + ": input '" + other.toUtf8() +
                            "' is not a clean FP8 Lab session; nothing written\n");
    QVERIFY(!QFile::exists(other));
  }
};

QTEST_GUILESS_MAIN(TestCliTrial)
#include "test_cli_trial.moc"
