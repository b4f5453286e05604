// core/experiment/decision/session_report.h: the report of a real session (a sweep of three recipes × three
// seeds run on the CPU, two training runs, an advice run) is well-formed XHTML that needs nothing
// outside the file, and every number of its tables equals the one computed here from the session's
// metrics: means, sample standard deviations and 95 % half-widths (t_0.975,2 = 4.303, NIST/SEMATECH
// e-Handbook §1.3.6.7.2), the byte counts worked out by hand, the training deltas and the advice.
#include <QtTest>

#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QXmlStreamReader>

#include "experiment/decision/site_advice.h"
#include "experiment/decision/session_report.h"
#include "experiment/gemm/sweep.h"
#include "json/json_document.h"

#include <cmath>
#include <map>

using namespace fp8lab;

namespace {

const char* kSweep = "{\"type\": \"gemm\", \"m\": 16, \"k\": 128, \"n\": 16, \"distribution\": \"channel_outliers\","
                     " \"sweep\": {\"scalings\": [\"te_current\", \"per_row\", \"deepgemm_1x128:deepgemm_128x128\"],"
                     " \"seeds\": [1, 2, 3]}}";

/// A table row of the report: its data-* attributes and its cells' text.
struct Row {
  QMap<QString, QString> data;
  QStringList cells;
  QString table; ///< the class of its table
};

/// Reads the report as XML; fails the test on a parse error. Returns the rows of every table.
QList<Row> rowsOf(const QString& html, QStringList* tags = nullptr) {
  QXmlStreamReader x(html);
  QList<Row> rows;
  QString table;
  bool in_cell = false;
  while (!x.atEnd()) {
    x.readNext();
    if (x.isStartElement()) {
      if (tags) *tags << x.name().toString();
      if (x.name() == QStringLiteral("table")) table = x.attributes().value(QStringLiteral("class")).toString();
      if (x.name() == QStringLiteral("tr")) {
        Row r;
        r.table = table;
        for (const auto& a : x.attributes())
          if (a.name().startsWith(QStringLiteral("data-"))) r.data[a.name().mid(5).toString()] = a.value().toString();
        r.data[QStringLiteral("class")] = x.attributes().value(QStringLiteral("class")).toString();
        rows << r;
      }
      if (x.name() == QStringLiteral("td")) {
        in_cell = true;
        rows.last().cells << QString();
      }
    } else if (x.isEndElement() && x.name() == QStringLiteral("td")) {
      in_cell = false;
    } else if (x.isCharacters() && in_cell && !rows.isEmpty() && !rows.last().cells.isEmpty()) {
      rows.last().cells.last() += x.text();
    }
  }
  if (x.hasError()) qWarning("XML error at line %lld: %s", x.lineNumber(), qPrintable(x.errorString()));
  return x.hasError() ? QList<Row>{} : rows;
}

} // namespace

class TestSessionReport : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void reportEqualsTheSession() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    // The session: the sweep's nine runs, two training runs, an advice run.
    SweepSpec spec;
    const JsonDocument doc = JsonDocument::parse(kSweep);
    QCOMPARE(parseSweepSpec(doc.root(), {}, &spec), std::string());
    std::vector<SweepPoint> grid;
    QCOMPARE(expandSweep(spec, &grid), std::string());
    QCOMPARE(grid.size(), size_t(9));
    auto backend = makeCpuGemmBackend();
    Session s;
    SweepHooks h;
    h.save = [&](const std::vector<Run>& runs, std::string*) {
      s.runs.insert(s.runs.end(), runs.begin(), runs.end());
      return true;
    };
    QCOMPARE(int(runSweep(grid, *backend, h).status), int(SweepOutcome::Status::Completed));
    auto training = [&](const std::string& id, const std::string& precision, double acc) {
      Run r;
      r.id = id;
      r.type = "training";
      r.seed = 1;
      r.config_json = "{\"id\": \"" + id + "\", \"precision\": \"" + precision + "\"}";
      r.attrs["precision"] = precision;
      r.setMetric("final_test_accuracy", acc, "1", "test accuracy after the last epoch");
      s.runs.push_back(r);
    };
    training("fp32-baseline", "fp32", 0.8625);
    training("fp8-current", "fp8", 0.8500);
    SiteAdvice a;
    a.run_id = "nvfp4";
    a.loss_name = "test loss (nats)";
    a.high_loss = 0.5;
    a.full_loss = 0.53;
    a.seeds = 3;
    a.config_json = "{\"id\": \"nvfp4\"}";
    // Intervals over 3 seeds: ± 4.303 · sd / √3 (0.004969 and 0.009938).
    a.groups = {
        GroupSensitivity{SiteGroup{"fc1", {"fc1"}}, 0.51, 0.01, 0.002, 0.005031, 0.014969, {}, 0.33, 21.5, false},
        GroupSensitivity{SiteGroup{"fc2", {"fc2"}}, 0.525, 0.025, 0.004, 0.015062, 0.034938, {}, 0.83, 17.25, true}};
    s.runs.push_back(adviceToSession(a, "nvfp4-advice", 150));
    const std::string path = (dir.path() + QStringLiteral("/s.h5")).toStdString();
    QVERIFY(writeSession(path, s).ok());
    auto rd = SessionReader::open(path);
    QVERIFY(rd.ok());
    ReportInput in;
    in.title = "s.h5";
    in.path = path;
    in.runs = rd.value->info().runs;
    in.generated_utc = "2026-12-02T00:00:00Z";
    SessionReader* reader = rd.value.get();
    const QString html = QString::fromStdString(
        sessionReportHtml(in, [reader](const std::string& run, const std::string& p) -> std::optional<Dataset> {
          auto r = reader->read(run, p);
          return r.ok() ? std::optional<Dataset>(std::move(r.value)) : std::nullopt;
        }));

    // Opens: well-formed XML, nothing outside the file (no scripts, links or remote sources).
    QStringList tags;
    const QList<Row> rows = rowsOf(html, &tags);
    QVERIFY(!rows.isEmpty());
    QVERIFY(!tags.contains(QStringLiteral("script")));
    QVERIFY(!tags.contains(QStringLiteral("link")));
    QVERIFY(!html.contains(QStringLiteral("src=\"http")));
    QVERIFY(tags.contains(QStringLiteral("svg")));
    QVERIFY(html.contains(QStringLiteral("report by FP8 Lab " FP8LAB_VERSION)));

    // The ranking: per recipe (scaling from each run's stored config) the values of sqnr_db.
    std::map<QString, std::vector<double>> values;
    for (const Run& r : s.runs) {
      if (r.type != "gemm") continue;
      const QJsonObject c = QJsonDocument::fromJson(QByteArray::fromStdString(r.config_json)).object();
      QString label = c.value(QStringLiteral("scaling")).toString();
      if (c.contains(QStringLiteral("scaling_b")))
        label += QLatin1Char(':') + c.value(QStringLiteral("scaling_b")).toString();
      values[label + QStringLiteral(" · E4M3FN")].push_back(r.metrics.at("sqnr_db").value);
    }
    QCOMPARE(values.size(), size_t(3));
    int seen = 0;
    for (const Row& r : rows) {
      if (r.table != QStringLiteral("ranking")) continue;
      if (!r.data.contains(QStringLiteral("recipe"))) continue;
      ++seen;
      const QString label = r.data.value(QStringLiteral("recipe"));
      QVERIFY2(values.count(label), qPrintable(label));
      const auto& v = values[label];
      QCOMPARE(v.size(), size_t(3));
      const double mean = (v[0] + v[1] + v[2]) / 3;
      const double sd = std::sqrt(
          ((v[0] - mean) * (v[0] - mean) + (v[1] - mean) * (v[1] - mean) + (v[2] - mean) * (v[2] - mean)) / 2);
      const double half = 4.303 * sd / std::sqrt(3.0);
      QVERIFY(qAbs(r.data.value(QStringLiteral("mean")).toDouble() - mean) <= 1e-12 * qAbs(mean));
      QVERIFY(qAbs(r.data.value(QStringLiteral("sd")).toDouble() - sd) <= 1e-9 * sd);
      QVERIFY(qAbs(r.data.value(QStringLiteral("half")).toDouble() - half) <= 1e-9 * half);
      QCOMPARE(r.data.value(QStringLiteral("n")), QStringLiteral("3"));
      QCOMPARE(r.cells[1], label);
      // The half-width to two significant digits, the mean to the same decimal place.
      const int decimals = 1 - int(std::floor(std::log10(half)));
      QCOMPARE(r.cells[2], QString::asprintf("%.*f ± %.*f", decimals, mean, decimals, half));
      QCOMPARE(r.cells[4], QStringLiteral("3"));
      // Bytes: 16×128 + 128×16 = 4096 element bytes plus the scales (float32):
      //   te_current 2 → 4104; per_row 16 + 16 → 4224;
      //   deepgemm pair: A 1×128 blocks ceil(128/128)·16 = 16, B 128×128 tiles roundup(1, 4)·1 = 4 → 4176.
      const QString b = r.data.value(QStringLiteral("bytes"));
      if (label.startsWith(QStringLiteral("te_current"))) QCOMPARE(b, QStringLiteral("4104"));
      if (label.startsWith(QStringLiteral("per_row"))) QCOMPARE(b, QStringLiteral("4224"));
      if (label.startsWith(QStringLiteral("deepgemm"))) QCOMPARE(b, QStringLiteral("4176"));
    }
    QCOMPARE(seen, 3);
    // The rank of each row follows the rule from the values alone.
    for (const Row& r : rows) {
      if (r.table != QStringLiteral("ranking") || !r.data.contains(QStringLiteral("recipe"))) continue;
      const double lo =
          r.data.value(QStringLiteral("mean")).toDouble() - r.data.value(QStringLiteral("half")).toDouble();
      int better = 0;
      for (const Row& o : rows)
        if (o.table == QStringLiteral("ranking") && o.data.contains(QStringLiteral("recipe")) &&
            o.data.value(QStringLiteral("mean")).toDouble() - o.data.value(QStringLiteral("half")).toDouble() >
                r.data.value(QStringLiteral("mean")).toDouble() + r.data.value(QStringLiteral("half")).toDouble())
          ++better;
      Q_UNUSED(lo);
      QCOMPARE(r.data.value(QStringLiteral("rank")).toInt(), better + 1);
    }

    // Training: the baseline and the FP8 run, Δ = 0.85 − 0.8625.
    int trows = 0;
    for (const Row& r : rows) {
      if (r.table != QStringLiteral("training") || !r.data.contains(QStringLiteral("recipe"))) continue;
      ++trows;
      if (r.data.value(QStringLiteral("recipe")) == QStringLiteral("FP32 baseline")) {
        QCOMPARE(r.data.value(QStringLiteral("mean")).toDouble(), 0.8625);
        QCOMPARE(r.data.value(QStringLiteral("delta")).toDouble(), 0.0);
        QVERIFY(r.data.value(QStringLiteral("class")).contains(QStringLiteral("baseline")));
      } else {
        QCOMPARE(r.data.value(QStringLiteral("mean")).toDouble(), 0.85);
        QCOMPARE(r.data.value(QStringLiteral("delta")).toDouble(), 0.85 - 0.8625);
        QCOMPARE(r.cells[3], QString::asprintf("%+.4g", 0.85 - 0.8625));
      }
    }
    QCOMPARE(trows, 2);
    // One seed each: the answer gives the difference to FP32 and says it is no ranking, never "worse
    // beyond the intervals" (there are none).
    QVERIFY(html.contains(QStringLiteral("FP32 baseline 0.8625; against it: ")));
    QVERIFY(html.contains(QString::asprintf("%+.4g. One seed: no interval", 0.85 - 0.8625)));
    QVERIFY(!html.contains(QStringLiteral("beyond the intervals")));

    // Advice: the groups as stored (float32 datasets).
    int arows = 0;
    for (const Row& r : rows) {
      if (r.table != QStringLiteral("advice") || !r.data.contains(QStringLiteral("group"))) continue;
      ++arows;
      const bool fc2 = r.data.value(QStringLiteral("group")) == QStringLiteral("fc2");
      QCOMPARE(r.data.value(QStringLiteral("delta")).toDouble(), double(float(fc2 ? 0.025 : 0.01)));
      QCOMPARE(r.data.value(QStringLiteral("ci-low")).toDouble(), double(float(fc2 ? 0.015062 : 0.005031)));
      QCOMPARE(r.cells[1],
               fc2 ? QStringLiteral("+0.0250 [+0.0151, +0.0349]") : QStringLiteral("+0.0100 [+0.0050, +0.0150]"));
      QCOMPARE(r.cells[5], fc2 ? QStringLiteral("keep in high precision") : QStringLiteral("low precision"));
    }
    QCOMPARE(arows, 2);
    QVERIFY(html.contains(QStringLiteral("keep in high precision: fc2")));

    // The figures can be taken out for renderers that draw SVG themselves.
    std::vector<std::string> figures;
    const QString plain = QString::fromStdString(sessionReportHtml(in, {}, &figures));
    QCOMPARE(figures.size(), size_t(2)); // the ranking and the training chart
    QVERIFY(plain.contains(QStringLiteral("<img src=\"figure-0.svg\"")));
    QVERIFY(!plain.contains(QStringLiteral("<svg")));
    // An unknown metric is an error naming the choices.
    in.metric = "nope";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sessionReportHtml(in, {}));
  }

  // Escaping and the chart of an empty list (no crash, a valid SVG).
  void escapingAndEmptyChart() {
    QCOMPARE(xmlEscape("a<b & \"c\" 'd'>"), std::string("a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"));
    const QString svg = QString::fromStdString(intervalChartSvg({}, "x"));
    QXmlStreamReader x(svg);
    while (!x.atEnd()) x.readNext();
    QVERIFY(!x.hasError());
  }

  // Regression: a long legend label was cut inside "→" (3 bytes in UTF-8), and the report of an
  // advice session with a policy label was not well-formed XML. Labels are cut on a character
  // boundary, in the curve legend and in the interval chart.
  void longLabelsCutOnACharacterBoundary() {
    const std::string label = "te_nvfp4 + policy * → bf16; lm_head → fp32; blocks.0.ffn → bf16 from step 10";
    for (size_t extra = 0; extra < 3; ++extra) {
      CurveSeries c;
      c.label = std::string(extra, 'x') + label;
      c.seeds = 2;
      c.x = {1, 2};
      c.mean = {1, 2};
      c.lo = {0.5, 1.5};
      c.hi = {1.5, 2.5};
      RecipeInterval r;
      r.label = std::string(extra + 12, 'y') + label;
      r.n_values = 1;
      r.mean = r.lo = r.hi = 1;
      for (const std::string& svg : {curveChartSvg({c}, "step", "loss"), intervalChartSvg({r}, "x")}) {
        QVERIFY(QString::fromUtf8(svg.data(), qsizetype(svg.size())).toUtf8() == QByteArray::fromStdString(svg));
        QXmlStreamReader x(QString::fromUtf8(svg.data(), qsizetype(svg.size())));
        while (!x.atEnd()) x.readNext();
        QVERIFY2(!x.hasError(), qPrintable(x.errorString()));
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestSessionReport)
#include "test_session_report.moc"
