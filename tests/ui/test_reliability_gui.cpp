// GUI rows of docs/reliability.md not covered by test_main_window: opening a FIFO, a device or a
// directory (must be refused with a message in the Issues panel, not hang the window), a truncated
// session written by the app, and an experiment too large for memory (refused by the panel with
// the size it needs, Run disabled).
#include "window_options.h"
#include "views/bit_layout_view.h"
#include "forms/experiment_panel.h"
#include "session/issues.h"
#include "main_window.h"
#include "session/session_document.h"

#include "session/session.h"

#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QProcess>
#include <QPushButton>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <clocale>
#include <cstdlib>
#include <sys/stat.h>

using namespace fp8lab::ui;
using fp8lab::Severity;

namespace {} // namespace

class TestReliabilityGui : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("FP8 Lab tests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_reliability_gui"));
  }

  // FIFO (opening one blocks until a writer appears), /dev/zero and a directory: each is refused at
  // once with an error row in the Issues panel; the window holds no session afterwards.
  void specialFilesAreRefusedNotHung() {
    QTemporaryDir dir;
    const QString fifo = dir.filePath(QStringLiteral("pipe.h5"));
    QVERIFY(mkfifo(qPrintable(fifo), 0600) == 0);
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    int rows = 0;
    for (const QString& p : {fifo, QStringLiteral("/dev/zero"), dir.path()}) {
      QElapsedTimer t;
      t.start();
      QVERIFY2(!w.openSession(p), qPrintable(p));
      QVERIFY2(t.elapsed() < 10000, qPrintable(p));
      ++rows;
      QCOMPARE(w.issues()->rowCount(), rows);
      QCOMPARE(w.issues()->issues().back().severity, Severity::Error);
      QCOMPARE(w.issues()->issues().back().where, p);
    }
    QCOMPARE(w.session()->runCount(), 0);
  }

  // QApplication sets the user's locale; under de_DE (decimal comma) strtod rejected "0.5" typed
  // into the bit layout. de_DE.UTF-8 is compiled with localedef into a temporary LOCPATH.
  void typedNumbersIgnoreTheUserLocale() {
    if (!QFileInfo::exists(QStringLiteral("/usr/share/i18n/locales/de_DE")) ||
        QStandardPaths::findExecutable(QStringLiteral("localedef")).isEmpty())
      QSKIP("no locale sources (/usr/share/i18n/locales/de_DE, package 'locales') to build de_DE.UTF-8");
    QTemporaryDir dir;
    QProcess def;
    def.start(QStringLiteral("localedef"), {QStringLiteral("-i"), QStringLiteral("de_DE"), QStringLiteral("-f"),
                                            QStringLiteral("UTF-8"), dir.filePath(QStringLiteral("de_DE.UTF-8"))});
    QVERIFY(def.waitForFinished(180000));
    qputenv("LOCPATH", dir.path().toLocal8Bit());
    const char* set = std::setlocale(LC_NUMERIC, "de_DE.UTF-8");
    QVERIFY2(set, "de_DE.UTF-8 could not be activated");
    QCOMPARE(std::localeconv()->decimal_point[0], ','); // the trap is armed
    const auto half = parseUserNumber(QStringLiteral("0.5"));
    const auto hex = parseUserNumber(QStringLiteral("0x1.8p3"));
    const auto comma = parseUserNumber(QStringLiteral("0,5"));
    std::setlocale(LC_NUMERIC, "C");
    qunsetenv("LOCPATH");
    QVERIFY(half.has_value());
    QCOMPARE(*half, 0.5);
    QVERIFY(hex.has_value());
    QCOMPARE(*hex, 12.0);
    QVERIFY(!comma.has_value()); // the same text means the same number in every locale
  }

  // A session cut to half its length (a copy interrupted by a full disk): refused, named.
  void truncatedSessionIsRefused() {
    QTemporaryDir dir;
    const std::string full = dir.filePath(QStringLiteral("full.h5")).toStdString();
    fp8lab::Session s;
    fp8lab::Run r;
    r.id = "r1";
    r.type = "gemm";
    r.config_json = "{}";
    r.putFloat32("output/D", std::vector<float>(4096, 1.0f), 64, 64, "1", "D");
    s.runs.push_back(r);
    QVERIFY(fp8lab::writeSession(full, s).ok());
    QFile f(QString::fromStdString(full));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray bytes = f.readAll();
    const QString cut = dir.filePath(QStringLiteral("cut.h5"));
    QFile g(cut);
    QVERIFY(g.open(QIODevice::WriteOnly));
    g.write(bytes.left(bytes.size() / 2));
    g.close();
    MainWindow w(fp8lab::testsupport::testWindowOptions());
    QVERIFY(!w.openSession(cut));
    QCOMPARE(w.issues()->rowCount(), 1);
    QCOMPARE(w.issues()->issues()[0].severity, Severity::Error);
    QCOMPARE(w.session()->runCount(), 0);
    QVERIFY(w.openSession(QString::fromStdString(full))); // the intact file still opens
    QCOMPARE(w.session()->runCount(), 1);
  }

  // 65536³ (the panel's maximum shape), with the experiment's estimate (21 B per operand element,
  // 36 B per output element): 21·(2·65536²) + 36·65536² B = 78·2^32 B = 312 GiB, refused with the
  // size; Run is disabled.
  void tooLargeForMemoryIsRefusedWithTheSize() {
    QJsonObject c = ExperimentPanel::defaultConfig();
    c[QStringLiteral("m")] = 65536;
    c[QStringLiteral("n")] = 65536;
    c[QStringLiteral("k")] = 65536;
    const auto probs = ExperimentPanel::validate(c, QStringLiteral("auto"), false, {});
    bool found = false;
    for (const auto& p : probs) found |= p.blocking && p.reason.contains(QStringLiteral("needs 312.00 GiB of memory"));
    QVERIFY(found);
    ExperimentPanel panel;
    panel.setConfig(c);
    QVERIFY(!panel.isValid());
    QVERIFY(!panel.findChild<QPushButton*>(QStringLiteral("runButton"))->isEnabled());
  }
};

QTEST_MAIN(TestReliabilityGui)
#include "test_reliability_gui.moc"
