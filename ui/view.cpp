#include "view.h"

#include "qcp.h"

#include <QFileInfo>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>

namespace fp8lab::ui {

void View::whenShown(int key, std::function<void()> reload) {
  if (isVisible() || window() == this) {
    pending_.erase(key);
    reload();
    return;
  }
  pending_[key] = std::move(reload);
}

void View::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [key, reload] : pending) reload();
}

bool exportView(View* view, const QString& fileName, QString* error) {
  const QString suffix = QFileInfo(fileName).suffix().toLower();
  QCustomPlot* plot = view->exportPlot();
  const QSize size = plot ? plot->size() : view->size();
  bool ok = false;
  if (suffix == QStringLiteral("png")) {
    ok = plot ? plot->savePng(fileName, size.width(), size.height(), 2.0) : view->grab().save(fileName, "PNG");
  } else if (suffix == QStringLiteral("pdf")) {
    if (plot) {
      ok = plot->savePdf(fileName, size.width(), size.height(), QCP::epNoCosmetic, QStringLiteral("FP8 Lab"),
                         view->title());
    } else {
      QPdfWriter pdf(fileName);
      pdf.setCreator(QStringLiteral("FP8 Lab"));
      pdf.setTitle(view->title());
      pdf.setPageSize(QPageSize(QSizeF(size.width(), size.height()), QPageSize::Point));
      pdf.setPageMargins({});
      pdf.setResolution(72);
      QPainter p;
      ok = p.begin(&pdf);
      if (ok) {
        view->render(&p);
        p.end();
      }
    }
  } else if (suffix == QStringLiteral("svg")) {
    QSvgGenerator gen;
    gen.setFileName(fileName);
    gen.setSize(size);
    gen.setViewBox(QRect(QPoint(0, 0), size));
    gen.setTitle(view->title());
    gen.setDescription(QStringLiteral("Exported by FP8 Lab " FP8LAB_VERSION));
    if (plot) {
      QCPPainter p;
      ok = p.begin(&gen);
      if (ok) {
        plot->toPainter(&p, size.width(), size.height());
        ok = p.end();
      }
    } else {
      QPainter p;
      ok = p.begin(&gen);
      if (ok) {
        view->render(&p);
        ok = p.end();
      }
    }
  } else {
    if (error) *error = QObject::tr("unknown export type '.%1' (use .png, .pdf or .svg)").arg(suffix);
    return false;
  }
  if (!ok && error) *error = QObject::tr("could not write %1").arg(fileName);
  return ok;
}

bool exportCsv(View* view, const QString& fileName, QString* error) {
  const QString text = view->csv();
  if (text.isEmpty()) {
    if (error) *error = QObject::tr("the view '%1' has no data to export").arg(view->title());
    return false;
  }
  QSaveFile f(fileName);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Text)) {
    if (error) *error = f.errorString();
    return false;
  }
  f.write(text.toUtf8());
  if (!f.commit()) {
    if (error) *error = f.errorString();
    return false;
  }
  return true;
}

} // namespace fp8lab::ui
