#include "plot_util.h"

#include "qcp.h"

#include <QSet>

namespace fp8lab::ui {

namespace {
class DistinctLogTicker : public QCPAxisTickerLog {
protected:
  QVector<QString> createLabelVector(const QVector<double>& ticks, const QLocale& locale, QChar formatChar,
                                     int precision) override {
    QVector<QString> labels;
    for (int p = precision; p <= precision + 8; ++p) {
      labels = QCPAxisTickerLog::createLabelVector(ticks, locale, formatChar, p);
      if (QSet<QString>(labels.begin(), labels.end()).size() == labels.size()) break;
    }
    return labels;
  }
};
} // namespace

QSharedPointer<QCPAxisTickerLog> distinctLogTicker() {
  auto t = QSharedPointer<DistinctLogTicker>::create();
  t->setLogBase(10);
  return t;
}

void plotEmptyState(QCustomPlot* plot, const QString& text) {
  plot->clearPlottables();
  plot->clearItems();
  plot->plotLayout()->clear();
  auto* t = new QCPTextElement(plot, text, QFont(plot->font().family(), 11));
  t->setTextColor(QColor(0x55, 0x55, 0x55));
  plot->plotLayout()->addElement(0, 0, t);
}

QColor nanColor() {
  return QColor(0xe0, 0x00, 0xe0);
}

QCPColorGradient errorGradient() {
  QCPColorGradient g;
  g.clearColorStops();
  // matplotlib viridis at 0, 1/4, 1/2, 3/4, 1.
  g.setColorStopAt(0.0, QColor(0x44, 0x01, 0x54));
  g.setColorStopAt(0.25, QColor(0x3b, 0x52, 0x8b));
  g.setColorStopAt(0.5, QColor(0x21, 0x91, 0x8c));
  g.setColorStopAt(0.75, QColor(0x5e, 0xc9, 0x62));
  g.setColorStopAt(1.0, QColor(0xfd, 0xe7, 0x25));
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  g.setLevelCount(256);
  g.setNanHandling(QCPColorGradient::nhNanColor);
  g.setNanColor(nanColor());
  return g;
}

QCPColorGradient differenceGradient() {
  QCPColorGradient g;
  g.clearColorStops();
  g.setColorStopAt(0.0, QColor(0x21, 0x66, 0xac));
  g.setColorStopAt(0.5, QColor(0xf7, 0xf7, 0xf7));
  g.setColorStopAt(1.0, QColor(0xb2, 0x18, 0x2b));
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  g.setLevelCount(256);
  g.setNanHandling(QCPColorGradient::nhNanColor);
  g.setNanColor(nanColor());
  return g;
}

} // namespace fp8lab::ui
