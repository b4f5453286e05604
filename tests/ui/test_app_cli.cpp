// The `fp8lab` executable's command line without a display: --help and --version print and exit 0
// (a QApplication aborts with SIGABRT when no platform plugin can start, so these must be
// answered before one is created). Runs the built app/fp8lab with DISPLAY, WAYLAND_DISPLAY and
// QT_QPA_PLATFORM removed from its environment, as on a headless server or in a container.
#include <QFileInfo>
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

namespace {
const QString kApp = QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab");

struct Result {
  QProcess::ExitStatus status;
  int code;
  QString out, err;
};

Result runHeadless(const QStringList& args, bool offscreen = false) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* k : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) env.remove(QString::fromLatin1(k));
  if (offscreen) env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
  p.setProcessEnvironment(env);
  p.start(kApp, args);
  if (!p.waitForFinished(30000)) {
    p.kill();
    p.waitForFinished();
  }
  return {p.exitStatus(), p.exitCode(), QString::fromLocal8Bit(p.readAllStandardOutput()),
          QString::fromLocal8Bit(p.readAllStandardError())};
}
// The --view names of docs/gui.md ("NAME is a view id, in tab order"), with its learn:0 … learn:7.
const QString kViewNames = QStringLiteral("bits, numberline, codes, learn, learn:N (N = 0..7), amax, scales, clipping, "
                                          "heatmap, block_scales, compare, decide, layers, block_map, attention");
} // namespace

class TestAppCli : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void initTestCase() {
    QVERIFY2(QFileInfo(kApp).isExecutable(), qPrintable(kApp + QStringLiteral(" not built (target fp8lab)")));
  }

  void helpWithoutDisplay_data() {
    QTest::addColumn<QString>("arg");
    QTest::newRow("--help") << QStringLiteral("--help");
    QTest::newRow("-h") << QStringLiteral("-h");
  }
  void helpWithoutDisplay() {
    QFETCH(QString, arg);
    const Result r = runHeadless({arg});
    QCOMPARE(r.status, QProcess::NormalExit); // not SIGABRT
    QVERIFY2(r.code == 0, qPrintable(r.err));
    // The options docs/gui.md documents.
    for (const char* opt : {"--grab <FILE.png>", "--view <NAME>", "--grab-view-only", "--live", "--no-default-session",
                            "--startup-time", "--version"})
      QVERIFY2(r.out.contains(QLatin1String(opt)), opt);
  }

  // --help names every view --view accepts, the same list an unknown view is answered with.
  void helpListsEveryView() {
    const Result r = runHeadless({QStringLiteral("--help")});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.simplified().contains(QStringLiteral("View to show first: ") + kViewNames + QLatin1Char('.')),
             qPrintable(r.out));
  }

  void unknownViewListsTheViews_data() {
    QTest::addColumn<QString>("name");
    QTest::newRow("bogus") << QStringLiteral("bogus");
    QTest::newRow("learn:8") << QStringLiteral("learn:8"); // demos are 0..7
    QTest::newRow("learn:x") << QStringLiteral("learn:x");
  }
  void unknownViewListsTheViews() {
    QFETCH(QString, name);
    const Result r = runHeadless({QStringLiteral("--no-default-session"), QStringLiteral("--view"), name}, true);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(QStringLiteral("fp8lab: unknown view '%1'; the views: %2\n").arg(name, kViewNames)),
             qPrintable(r.err));
  }

  // Every name the list gives opens: --grab renders it and exits 0.
  void everyListedViewIsAccepted() {
    QTemporaryDir dir;
    QStringList names;
    for (const QString& n : kViewNames.split(QStringLiteral(", ")))
      if (n.startsWith(QStringLiteral("learn:N")))
        for (int i = 0; i <= 7; ++i) names << QStringLiteral("learn:%1").arg(i);
      else
        names << n;
    QCOMPARE(names.size(), 22); // 14 views + 8 demos
    for (const QString& n : names) {
      const Result r = runHeadless({QStringLiteral("--no-default-session"), QStringLiteral("--grab"),
                                    dir.filePath(QStringLiteral("v.png")), QStringLiteral("--grab-view-only"),
                                    QStringLiteral("--view"), n},
                                   true);
      QVERIFY2(r.status == QProcess::NormalExit && r.code == 0, qPrintable(n + QStringLiteral(": ") + r.err));
    }
  }

  // --live with --grab captures the Experiment panel's live GEMM: the heatmap then shows the live
  // run (the session stays empty), and nothing is said about a GEMM that did not run.
  void grabCapturesTheLiveGemm() {
    QTemporaryDir dir;
    const QString png = dir.filePath(QStringLiteral("live.png"));
    const Result r =
        runHeadless({QStringLiteral("--no-default-session"), QStringLiteral("--live"), QStringLiteral("--view"),
                     QStringLiteral("heatmap"), QStringLiteral("--grab"), png, QStringLiteral("--grab-view-only")},
                    true);
    QVERIFY2(r.status == QProcess::NormalExit && r.code == 0, qPrintable(r.err));
    QVERIFY2(!r.err.contains(QStringLiteral("did not run live")), qPrintable(r.err));
    QImage img(png);
    QVERIFY(!img.isNull());
    // Without --live the same grab shows the heatmap's empty state, a different picture.
    const QString empty = dir.filePath(QStringLiteral("empty.png"));
    QCOMPARE(runHeadless({QStringLiteral("--no-default-session"), QStringLiteral("--view"), QStringLiteral("heatmap"),
                          QStringLiteral("--grab"), empty, QStringLiteral("--grab-view-only")},
                         true)
                 .code,
             0);
    QVERIFY(QImage(empty) != img);
  }

  void versionWithoutDisplay() {
    const Result r = runHeadless({QStringLiteral("--version")});
    QCOMPARE(r.status, QProcess::NormalExit);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(r.out, QStringLiteral("FP8 Lab " FP8LAB_VERSION "\n"));
  }

  // Anything else needs a display: without one, a message saying what to do and exit 1, not
  // Qt's abort.
  void noDisplaySaysWhatToDo() {
    const Result r = runHeadless({QStringLiteral("--no-default-session")});
    QCOMPARE(r.status, QProcess::NormalExit); // not SIGABRT
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(QStringLiteral("fp8lab: no display (DISPLAY and WAYLAND_DISPLAY are unset)")),
             qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestAppCli)
#include "test_app_cli.moc"
