// core/session/session_export.h and session_inspect.h: the CSV text of datasets and of a run's
// metrics and attributes, the files `export --csv` writes, and the JSON of inspect / runs list /
// merge. Expected texts are written out by hand from the values (std::to_chars' shortest
// round-trip forms: 0.1f is "0.1" as float32 but 0.10000000149011612 as a double; the smallest
// float32 subnormal 2^-149 is "1e-45").
#include <QtTest>

#include <QTemporaryDir>

#include "json/json_number.h"
#include "session/session.h"
#include "session/session_export.h"
#include "session/session_inspect.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

using namespace fp8lab;

namespace {

std::string fileText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

Run smallRun() {
  Run r;
  r.id = "r1";
  r.type = "custom"; // a type without required datasets
  r.config_json = R"({"type":"custom","m":2})";
  r.seed = std::numeric_limits<uint64_t>::max();
  r.backend = "cpu";
  r.device = "test CPU";
  r.created_utc = "2026-12-03T10:00:00Z";
  r.app_version = "0.1.0";
  r.attrs["label"] = std::string("say \"hi\"");
  r.attrs["ratio"] = 0.25;
  r.attrs["count"] = int64_t(-7);
  r.putFloat32("inputs/A", {0.1f, -0.0f, 1.5f, 2.0f, 0x1p-149f, 448.0f}, 2, 3, "1", "A operand");
  r.datasets["training/loss"] = Dataset::float64({2}, {0.1, std::nan("")}, "nat", "loss");
  r.setMetric("sqnr_db", 31.25, "dB", "signal to noise");
  r.setMetric("max_abs", std::numeric_limits<double>::infinity(), "1", "max error");
  return r;
}

} // namespace

class TestSessionExport : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // Float32 values in float32's shortest form, float64 ones in double's, integers in decimal.
  void datasetCsvText() {
    const Dataset f = Dataset::float32({2, 3}, {0.1f, -0.0f, std::nanf(""), -INFINITY, 0x1p-149f, 3.0f}, "1", "");
    QCOMPARE(datasetCsv(f, 2, 3), std::string("0.1,-0,nan\n-inf,1e-45,3\n"));
    const Dataset d = Dataset::float64({2}, {double(0.1f), 0.1}, "1", "");
    QCOMPARE(datasetCsv(d, 2, 1), std::string("0.10000000149011612\n0.1\n"));
    // 2^53 + 1 = 9007199254740993 and INT64_MIN have no double of their own (a trip through
    // double would print ...992 and lose the last digit); the text is the integer, exactly.
    const Dataset i = Dataset::int64(
        {5}, {-42, 0, int64_t(1) << 53, (int64_t(1) << 53) + 1, std::numeric_limits<int64_t>::min()}, "count", "");
    QCOMPARE(datasetCsv(i, 1, 5), std::string("-42,0,9007199254740992,9007199254740993,-9223372036854775808\n"));
    const Dataset u = Dataset::uint8({2}, {0, 255}, "code", "");
    QCOMPARE(datasetCsv(u, 2, 1), std::string("0\n255\n"));
  }

  // metrics.csv and attributes.csv of a hand-made run: fixed rows first, then the sorted
  // attributes with '"' doubled; metrics sorted by name, inf as "inf".
  void summaryCsvText() {
    QTemporaryDir dir;
    const std::string p = dir.filePath(QStringLiteral("s.h5")).toStdString();
    Session s;
    s.runs = {smallRun()};
    QVERIFY(writeSession(p, s).ok());
    auto rd = SessionReader::open(p);
    QVERIFY2(rd.ok() && rd.value->info().runs.size() == 1, rd.message().c_str());
    const RunInfo& ri = rd.value->info().runs.at(0);
    QCOMPARE(metricsCsv(ri), std::string("metric,value,units,meaning\n"
                                         "max_abs,inf,1,\"max error\"\n"
                                         "sqnr_db,31.25,dB,\"signal to noise\"\n"));
    const std::string a = attributesCsv(ri);
    QVERIFY2(a.rfind("attribute,value\nid,r1\ntype,custom\nseed,18446744073709551615\nbackend,cpu\n"
                     "device,\"test CPU\"\ncreated_utc,2026-12-03T10:00:00Z\napp_version,",
                     0) == 0,
             a.c_str());
    QVERIFY2(a.find("\ncount,\"-7\"\nlabel,\"say \"\"hi\"\"\"\nratio,\"0.25\"\n") != std::string::npos, a.c_str());
  }

  // exportRunCsv writes one file per wanted dataset ('/' → "__") plus the three summaries, and
  // refuses a dataset the run lacks before writing anything.
  void exportRunFiles() {
    QTemporaryDir dir;
    const std::string p = dir.filePath(QStringLiteral("s.h5")).toStdString();
    Session s;
    s.runs = {smallRun()};
    QVERIFY(writeSession(p, s).ok());
    auto rd = SessionReader::open(p);
    QVERIFY(rd.ok());
    const RunInfo& ri = rd.value->info().runs.at(0);
    const std::string prefix = dir.path().toStdString() + "/";
    std::string e;
    QVERIFY(!exportRunCsv(*rd.value, ri, prefix, {"inputs/A", "nope"}, {}, &e));
    QCOMPARE(e, std::string("run r1 has no dataset 'nope'"));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("inputs__A.csv"))));
    std::vector<std::string> stages;
    const auto files = exportRunCsv(
        *rd.value, ri, prefix, {"inputs/A"},
        [&](double, const std::string& stage) {
          stages.push_back(stage);
          return true;
        },
        &e);
    QVERIFY2(files, e.c_str());
    QCOMPARE(files->size(), size_t{1});
    QCOMPARE(files->at(0).file, prefix + "inputs__A.csv");
    QCOMPARE(files->at(0).shape, std::string("[2, 3]"));
    QCOMPARE(stages, std::vector<std::string>{"inputs/A"});
    QCOMPARE(fileText(prefix + "inputs__A.csv"), std::string("0.1,-0,1.5\n2,1e-45,448\n"));
    QCOMPARE(fileText(prefix + "config.json"), std::string(R"({"type":"custom","m":2})"));
    QCOMPARE(fileText(prefix + "metrics.csv"), metricsCsv(ri));
    QCOMPARE(fileText(prefix + "attributes.csv"), attributesCsv(ri));
    const Json j = csvExportJson("r1", "out", *files);
    QCOMPARE(j.dump(), std::string(R"({"dir":"out","files":[{"dataset":"inputs/A","file":")" + prefix +
                                   R"(inputs__A.csv","shape":"[2, 3]"}],"run":"r1"})"));
    QCOMPARE(csvExportText("r1", "out", 1),
             std::string("exported run r1: 1 dataset(s) + metrics.csv, attributes.csv, config.json -> out\n"));
  }

  // A stored config is embedded as Qt's reader reads it (−0.0 as 0, integers past int64 as
  // doubles); anything but a JSON object stays text.
  void storedConfig() {
    const Json c = storedConfigJson(R"({"a":-0.0,"b":18446744073709551615,"c":[1,-0.0]})");
    QVERIFY(c["a"].is_number_float() && !std::signbit(c["a"].get<double>()));
    QVERIFY(c["b"].is_number_float());
    QCOMPARE(c["b"].get<double>(), 18446744073709551615.0);
    QCOMPARE(c["c"].dump(), std::string("[1,0.0]"));
    QCOMPARE(storedConfigJson("[1]"), Json("[1]"));
    QCOMPARE(storedConfigJson("{\"a\":"), Json("{\"a\":"));
  }

  // The small JSON documents: non-finite numbers as strings, issues by severity and code name.
  void listingJson() {
    QCOMPARE(numberJson(std::nan("")), Json("nan"));
    QCOMPARE(numberJson(-INFINITY), Json("-inf"));
    QCOMPARE(attrJson(AttrValue(int64_t(3))).dump(), std::string("3"));
    Status st;
    st.add(Issue::Code::NotFound, "x.h5", "no such file");
    QCOMPARE(issuesJson(st).dump(),
             std::string(R"([{"detail":"no such file","severity":"error","what":"not found","where":"x.h5"}])"));
    QCOMPARE(mergeJson("o.h5", 3, {"n1"}).dump(), std::string(R"({"file":"o.h5","notes":["n1"],"runs":3})"));
    QCOMPARE(mergeText("o.h5", 2, 3), std::string("merged 2 file(s) -> o.h5 (3 runs)\n"));
    SessionInfo info;
    info.runs.resize(2);
    info.runs[0].id = "a";
    info.runs[1].id = "b";
    info.runs[1].datasets.resize(2);
    QCOMPARE(runListText(info), std::string("a\nb\n"));
    QCOMPARE(runListJson(info)[1].dump(), std::string(R"({"created_utc":"","datasets":2,"id":"b","type":""})"));
  }
};

QTEST_APPLESS_MAIN(TestSessionExport)
#include "test_session_export.moc"
