#include "plot_util.h"

#include "qcp.h"

namespace fp8lab::ui {

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
