#include "plot/style.h"

#include "plot/qcp.h"

#include <charconv>
#include <cmath>

namespace fp8lab::ui {

namespace colors {
QColor sign() {
  return QColor(0xe5, 0x73, 0x73);
}
QColor exponent() {
  return QColor(0x64, 0xb5, 0xf6);
}
QColor mantissa() {
  return QColor(0x81, 0xc7, 0x84);
}
QColor ofClass(CodeClass c) {
  switch (c) {
  case CodeClass::Zero:
    return QColor(0xbd, 0xbd, 0xbd);
  case CodeClass::Subnormal:
    return QColor(0xff, 0xcc, 0x80);
  case CodeClass::Normal:
    return QColor(0x90, 0xca, 0xf9);
  case CodeClass::MaxFinite:
    return QColor(0x1e, 0x88, 0xe5);
  case CodeClass::Infinity:
    return QColor(0xba, 0x68, 0xc8);
  case CodeClass::NaN:
    return QColor(0xef, 0x53, 0x50);
  }
  return Qt::gray;
}
QColor series(int i) {
  static const QColor pal[] = {QColor(0, 114, 178), QColor(213, 94, 0),   QColor(0, 158, 115), QColor(204, 121, 167),
                               QColor(230, 159, 0), QColor(86, 180, 233), QColor(0, 0, 0)};
  return pal[((i % 7) + 7) % 7];
}
} // namespace colors

QString numberText(double v) {
  if (std::isnan(v)) return QStringLiteral("NaN");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("+Inf") : QStringLiteral("\u2212Inf");
  if (v == 0) return std::signbit(v) ? QStringLiteral("\u22120") : QStringLiteral("0");
  QString s = QString::number(v, 'g', QLocale::FloatingPointShortest);
  if (s.startsWith(QLatin1Char('-'))) s.replace(0, 1, QStringLiteral("\u2212"));
  return s;
}

QString superscript(int v) {
  static const char16_t digits[] = {0x2070, 0x00b9, 0x00b2, 0x00b3, 0x2074, 0x2075, 0x2076, 0x2077, 0x2078, 0x2079};
  QString s;
  if (v < 0) s += QChar(0x207b);
  for (QChar c : QString::number(std::abs(v))) s += QChar(digits[c.digitValue()]);
  return s;
}

QString pow2Text(int e) {
  return QStringLiteral("2") + superscript(e);
}

QString valueWithPow2(double v) {
  QString s = numberText(v);
  if (std::isfinite(v) && v != 0) {
    int e = 0;
    const double m = std::frexp(std::fabs(v), &e);
    if (m == 0.5) s += QStringLiteral(" = ") + (v < 0 ? QStringLiteral("\u2212") : QString()) + pow2Text(e - 1);
  }
  return s;
}

QString floatText(float v) {
  if (!std::isfinite(v) || v == 0) return numberText(v);
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  QString s = QString::fromLatin1(buf, int(r.ptr - buf));
  if (s.startsWith(QLatin1Char('-'))) s.replace(0, 1, QStringLiteral("\u2212"));
  return s;
}

QString errorText(double v) {
  if (!std::isfinite(v)) return numberText(v);
  QString s = QString::number(v, 'g', 4);
  if (s.startsWith(QLatin1Char('-'))) s.replace(0, 1, QStringLiteral("\u2212"));
  return s;
}

void replot(QCustomPlot* plot) {
  if (plot->width() > 0 && plot->height() > 0) plot->replot(QCustomPlot::rpQueuedReplot);
}

QString classText(CodeClass c) {
  switch (c) {
  case CodeClass::Zero:
    return QObject::tr("zero");
  case CodeClass::Subnormal:
    return QObject::tr("subnormal");
  case CodeClass::Normal:
    return QObject::tr("normal");
  case CodeClass::MaxFinite:
    return QObject::tr("max finite");
  case CodeClass::Infinity:
    return QObject::tr("infinity");
  case CodeClass::NaN:
    return QObject::tr("NaN");
  }
  return {};
}

void stylePlot(QCustomPlot* plot) {
  QFont f = plot->font();
  f.setPointSizeF(9);
  for (QCPAxisRect* r : plot->axisRects()) {
    for (QCPAxis* a : r->axes()) {
      a->setTickLabelFont(f);
      QFont lf = f;
      lf.setPointSizeF(9.5);
      a->setLabelFont(lf);
      a->grid()->setPen(QPen(QColor(0xe0, 0xe0, 0xe0), 0, Qt::DotLine));
      a->grid()->setSubGridVisible(false);
    }
  }
  plot->setBackground(Qt::white);
  plot->setNoAntialiasingOnDrag(true);
  plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
}

} // namespace fp8lab::ui
