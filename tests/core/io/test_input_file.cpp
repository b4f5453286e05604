// Tests for core/io/input_file (what an input file may be, the size limits and their messages),
// core/session/output_check (session outputs a save could not write) and core/io/
// json_stream_writer. Expected messages are the documented ones; sizes and JSON texts are derived
// by hand in the comments (RFC 8259 for the JSON escapes).
#include <QtTest>

#include <QTemporaryDir>

#include <cstdio>
#include <sys/stat.h>

#include "io/input_file.h"
#include "json/json_stream_writer.h"
#include "session/output_check.h"

using namespace fp8lab;

namespace {
std::string writeFile(const QTemporaryDir& dir, const char* name, const std::string& bytes) {
  const std::string path = dir.path().toStdString() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return path;
}
} // namespace

class TestInputFile : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void sizes() {
    QCOMPARE(byteSizeText(812), std::string("812 bytes"));
    QCOMPARE(byteSizeText(int64_t(64) << 20), std::string("64.0 MiB"));
    // 3.25 GiB: 3·2^30 + 2^28 bytes; one decimal rounds the tie 3.25 away from zero to 3.3.
    QCOMPARE(byteSizeText((int64_t(3) << 30) + (int64_t(1) << 28)), std::string("3.3 GiB"));
  }
  void refusals() {
    QTemporaryDir dir;
    std::string e;
    QVERIFY(!readInputFile("/dev/zero", InputKind::Values, "--input", kMaxValuesBytes, &e));
    QCOMPARE(e, std::string("--input '/dev/zero' is a device, not a file (a device such as /dev/zero never ends)"));
    QVERIFY(!readInputFile(dir.path().toStdString(), InputKind::Config, "config", kMaxConfigBytes, &e));
    QCOMPARE(e, "config '" + dir.path().toStdString() + "' is a directory");
    const std::string missing = dir.path().toStdString() + "/none.json";
    QVERIFY(!readInputFile(missing, InputKind::Config, "config", kMaxConfigBytes, &e));
    QCOMPARE(e, "config '" + missing + "': no such file");
    QVERIFY(!readInputFile("-", InputKind::Config, "config", kMaxConfigBytes, &e));
    QCOMPARE(e, std::string("config must be a file, not stdin"));
    const std::string fifo = dir.path().toStdString() + "/fifo";
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    QVERIFY(!readInputFile(fifo, InputKind::Config, "config", kMaxConfigBytes, &e));
    QCOMPARE(e, "config '" + fifo + "' is a FIFO or socket, not a regular file");
    // 11 bytes against a limit of 10: refused from the size, before reading.
    const std::string big = writeFile(dir, "big.txt", "1 2 3 4 5 6");
    QVERIFY(!readInputFile(big, InputKind::Values, "--input", 10, &e));
    QCOMPARE(e, "--input '" + big + "' is 11 bytes; the limit is 10 bytes");
    QCOMPARE(*readInputFile(big, InputKind::Values, "--input", 11, &e), std::string("1 2 3 4 5 6"));
  }
  void values() {
    QTemporaryDir dir;
    std::string e, storage;
    // A UTF-8 byte order mark (EF BB BF) before the first value is not part of it.
    const auto w = readValueWords(writeFile(dir, "bom.txt",
                                            "\xef\xbb\xbf"
                                            "1.5, 2\n-3"),
                                  &storage, &e);
    QVERIFY(w);
    QCOMPARE(w->size(), size_t(3));
    QCOMPARE(std::string((*w)[0]), std::string("1.5"));
    const std::string bad = writeFile(dir, "bad.txt", "1 2 x 3");
    QVERIFY(!readNumberFile(bad, &e));
    QCOMPARE(e, "--input '" + bad + "': item 3: not a number: 'x'");
    QCOMPARE(*readNumberFile(writeFile(dir, "ok.txt", "0x1p-2,4"), &e), (std::vector<double>{0.25, 4}));
  }
  void sessionOutputs() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    QCOMPARE(sessionOutputProblem(d), "--out " + d + " is a directory");
    QCOMPARE(sessionOutputProblem(d + "/no/x.h5"), "the directory of --out " + d + "/no/x.h5 does not exist");
    QCOMPARE(sessionOutputProblem("/dev/null"),
             std::string("--out /dev/null is not a regular file (a device, FIFO or socket); a session is a regular "
                         "file"));
    const std::string text = writeFile(dir, "notes.txt", "hello");
    QCOMPARE(sessionOutputProblem(text),
             text + " exists and is not an HDF5 session (runs are appended to a session; choose another --out)");
    const std::string empty = writeFile(dir, "empty.h5", "");
    QCOMPARE(sessionOutputProblem(empty), empty + " exists and is empty, not an HDF5 session (runs are appended to a "
                                                  "session; choose another --out)");
    QCOMPARE(sessionOutputProblem(d + "/new.h5"), std::string());
    QCOMPARE(sessionOutputProblem(d + "/no/../new.h5"), std::string()); // cleaned: the directory is d
  }
  void jsonStream() {
    JsonStreamWriter w;
    w.beginArray();
    w.beginObject();
    w.key("s");
    w.value("a\"b\\c\n\x01");
    w.key("n");
    w.value(std::nan(""));
    w.key("z");
    w.value(-0.0);
    w.key("x");
    w.value(0.1); // shortest round trip of the double nearest 0.1
    w.endObject();
    w.value(true);
    w.value(-std::numeric_limits<double>::infinity());
    w.endArray();
    QCOMPARE(w.text(),
             std::string("[{\"s\":\"a\\\"b\\\\c\\n\\u0001\",\"n\":\"nan\",\"z\":-0.0,\"x\":0.1},true,\"-inf\"]"));
  }
};

QTEST_APPLESS_MAIN(TestInputFile)
#include "test_input_file.moc"
