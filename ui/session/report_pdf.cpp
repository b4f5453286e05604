#include "session/report_pdf.h"

#include "session/run_access.h"

#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSvgRenderer>
#include <QTextDocument>
#include <QUrl>

namespace fp8lab::ui {

ReportInput reportInputFor(const QList<std::shared_ptr<RunAccess>>& runs, const QString& title, const QString& path,
                           const QString& metric) {
  ReportInput in;
  in.title = title.toStdString();
  in.path = path.toStdString();
  in.metric = metric.toStdString();
  for (const auto& r : runs)
    if (auto i = r->runInfo()) {
      i->id = r->id().toStdString(); // the id the session shows (a run renamed in the app)
      in.runs.push_back(std::move(*i));
    }
  return in;
}

DatasetSource datasetSourceFor(const QList<std::shared_ptr<RunAccess>>& runs) {
  return [runs](const std::string& run, const std::string& path) -> std::optional<Dataset> {
    for (const auto& r : runs) {
      if (r->id().toStdString() != run) continue;
      const QString p = QString::fromStdString(path);
      if (!r->has(p)) return std::nullopt;
      Block b;
      if (!r->readAll(p, &b, nullptr)) return std::nullopt;
      return Dataset::float64({b.rows * b.cols}, b.v, "", "");
    }
    return std::nullopt;
  };
}

namespace {

bool save(const QString& file, const QByteArray& bytes, QString* error) {
  QSaveFile f(file);
  if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit()) {
    if (error) *error = QObject::tr("cannot write %1: %2").arg(file, f.errorString());
    return false;
  }
  return true;
}

/// The report as PDF: QTextDocument lays the HTML out on A4 pages; each SVG figure becomes an image
/// resource drawn at two pixels per point and shown 640 pixels wide at most (A4 less QTextDocument's
/// 2 cm margins is about 650 of its layout pixels).
bool writePdf(const ReportInput& in, const DatasetSource& read, const QString& file, QString* error) {
  std::vector<std::string> figures;
  QString html = QString::fromStdString(sessionReportHtml(in, read, &figures));
  QTextDocument doc;
  doc.setDefaultFont(QFont(QStringLiteral("DejaVu Sans"), 8));
  for (size_t i = 0; i < figures.size(); ++i) {
    QSvgRenderer svg(QByteArray::fromStdString(figures[i]));
    const QSize size = svg.defaultSize().isValid() ? svg.defaultSize() : QSize(760, 300);
    const double shown = std::min(640.0, double(size.width()));
    const QSize shown_size(int(shown), int(shown * size.height() / size.width()));
    QImage img(shown_size * 2, QImage::Format_ARGB32);
    img.fill(Qt::white);
    {
      QPainter p(&img);
      svg.render(&p);
    }
    const QString name = QStringLiteral("figure-%1.svg").arg(i);
    doc.addResource(QTextDocument::ImageResource, QUrl(name), img);
    html.replace(QRegularExpression(QStringLiteral("<img src=\"%1\"").arg(QRegularExpression::escape(name))),
                 QStringLiteral("<img src=\"%1\" width=\"%2\" height=\"%3\"")
                     .arg(name)
                     .arg(shown_size.width())
                     .arg(shown_size.height()));
  }
  // QTextDocument reads a subset of CSS: the page's own style sheet is replaced by one it follows,
  // and tables get their width and borders as attributes.
  html.remove(QRegularExpression(QStringLiteral("<style>.*</style>"), QRegularExpression::DotMatchesEverythingOption));
  html.replace(QRegularExpression(QStringLiteral("<table class=\"([^\"]*)\">")),
               QStringLiteral("<table class=\"\\1\" width=\"100%\" border=\"1\" cellspacing=\"0\" "
                              "cellpadding=\"3\">"));
  doc.setDefaultStyleSheet(
      QStringLiteral("h1 { font-size: 15pt; } h2 { font-size: 12pt; margin-top: 14pt; } h3 { font-size: 10pt; }"
                     "p.meta, p.note, p.empty { color: #555555; } th { background-color: #f0f0f0; }"
                     "td.num { text-align: right; white-space: nowrap; } tr.best td { background-color: #e3f2e6; }"
                     "tr.baseline td { background-color: #eef3fb; } table { border-color: #cccccc; }"
                     "p.config { font-family: 'DejaVu Sans Mono'; font-size: 7pt; background-color: #f6f6f6; }"));
  // Lines break between words only, so a column is at least as wide as its longest word (a number,
  // a recipe id) and no word is cut in two.
  QTextOption wrap = doc.defaultTextOption();
  wrap.setWrapMode(QTextOption::WordWrap);
  doc.setDefaultTextOption(wrap);
  doc.setHtml(html);
  QSaveFile f(file);
  if (!f.open(QIODevice::WriteOnly)) {
    if (error) *error = QObject::tr("cannot write %1: %2").arg(file, f.errorString());
    return false;
  }
  {
    QPdfWriter w(&f);
    w.setPageSize(QPageSize(QPageSize::A4));
    // QTextDocument::print lays a document without a page size out with 2 cm margins of its own.
    w.setPageMargins(QMarginsF(0, 0, 0, 0), QPageLayout::Millimeter);
    w.setTitle(QString::fromStdString("FP8 Lab report: " + in.title));
    w.setCreator(QStringLiteral("FP8 Lab " FP8LAB_VERSION));
    doc.print(&w);
  }
  if (!f.commit()) {
    if (error) *error = QObject::tr("cannot write %1: %2").arg(file, f.errorString());
    return false;
  }
  return true;
}

} // namespace

bool writeReport(const ReportInput& in, const DatasetSource& read, const QString& file, QString* error) {
  try {
    if (QFileInfo(file).suffix().compare(QStringLiteral("pdf"), Qt::CaseInsensitive) == 0)
      return writePdf(in, read, file, error);
    return save(file, QByteArray::fromStdString(sessionReportHtml(in, read)), error);
  } catch (const std::invalid_argument& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
}

bool writeSessionReport(const QString& session, const QString& file, const QString& metric, QString* error) {
  auto rd = SessionReader::open(session.toStdString());
  if (!rd.ok()) {
    if (error) *error = QString::fromStdString(rd.errors());
    return false;
  }
  const SessionInfo& info = rd.value->info();
  ReportInput in;
  in.title = QFileInfo(session).fileName().toStdString();
  in.path = QFileInfo(session).absoluteFilePath().toStdString();
  in.format_version = info.format_version;
  in.app_version = info.app_version;
  in.created_utc = info.created_utc;
  in.runs = info.runs;
  in.metric = metric.toStdString();
  SessionReader* reader = rd.value.get();
  return writeReport(
      in,
      [reader](const std::string& run, const std::string& path) -> std::optional<Dataset> {
        auto r = reader->read(run, path);
        if (!r.ok()) return std::nullopt;
        return std::move(r.value);
      },
      file, error);
}

} // namespace fp8lab::ui
