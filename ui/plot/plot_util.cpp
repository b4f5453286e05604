#include "plot/plot_util.h"

#include "plot/qcp.h"
#include "plot/wrapped_title.h"

#include <QSet>

#include <algorithm>
#include <cmath>
#include <memory>

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
/// A legend entry drawn from a pen and a scatter style, not from a plottable.
class KeyItem : public QCPAbstractLegendItem {
public:
  KeyItem(QCPLegend* parent, QString text, QPen pen, QCPScatterStyle scatter)
      : QCPAbstractLegendItem(parent), text_(std::move(text)), pen_(std::move(pen)), scatter_(std::move(scatter)) {}

protected:
  void draw(QCPPainter* painter) override {
    painter->setFont(mParentLegend->font());
    painter->setPen(QPen(mParentLegend->textColor()));
    const QSize icon = mParentLegend->iconSize();
    const QRect tr = painter->fontMetrics().boundingRect(0, 0, 0, icon.height(), Qt::TextDontClip, text_);
    const int h = std::max(tr.height(), icon.height());
    painter->drawText(mRect.x() + icon.width() + mParentLegend->iconTextPadding(), mRect.y(), tr.width(), h,
                      Qt::TextDontClip, text_);
    const QRect iconRect(QPoint(mRect.x(), mRect.y() + (h - icon.height()) / 2), icon);
    painter->save();
    painter->setClipRect(iconRect, Qt::IntersectClip);
    const double y = iconRect.center().y() + 0.5;
    if (pen_.style() != Qt::NoPen) {
      painter->setPen(pen_);
      painter->drawLine(QLineF(iconRect.left(), y, iconRect.right() + 1, y));
    }
    if (!scatter_.isNone()) {
      scatter_.applyTo(painter, pen_.style() == Qt::NoPen ? QPen(Qt::black) : pen_);
      scatter_.drawShape(painter, QPointF(iconRect.center().x() + 0.5, y));
    }
    painter->restore();
  }
  QSize minimumOuterSizeHint() const override {
    const QSize icon = mParentLegend->iconSize();
    const QRect tr = QFontMetrics(mParentLegend->font()).boundingRect(0, 0, 0, icon.height(), Qt::TextDontClip, text_);
    return {icon.width() + mParentLegend->iconTextPadding() + tr.width() + mMargins.left() + mMargins.right(),
            std::max(tr.height(), icon.height()) + mMargins.top() + mMargins.bottom()};
  }

private:
  QString text_;
  QPen pen_;
  QCPScatterStyle scatter_;
};
} // namespace

void addLegendKey(QCPLegend* legend, const QString& text, const QPen& pen, const QCPScatterStyle* scatter) {
  legend->addItem(new KeyItem(legend, text, pen, scatter ? *scatter : QCPScatterStyle()));
}

QSharedPointer<QCPAxisTickerLog> distinctLogTicker() {
  auto t = QSharedPointer<DistinctLogTicker>::create();
  t->setLogBase(10);
  return t;
}

namespace {
/// An empty state's message: the lines of WrappedTitle (wrapped at words to the plot's width),
/// centred in the whole plot rather than in a title row.
class EmptyStateText : public WrappedTitle {
public:
  using WrappedTitle::WrappedTitle;

protected:
  QSize maximumOuterSizeHint() const override { return {QWIDGETSIZE_MAX, QWIDGETSIZE_MAX}; }
};
} // namespace

void plotEmptyState(QCustomPlot* plot, const QString& text) {
  plot->clearPlottables();
  plot->clearItems();
  plot->plotLayout()->clear();
  auto* t = new EmptyStateText(plot, text, QFont(plot->font().family(), 11));
  t->setTextColor(QColor(0x55, 0x55, 0x55));
  plot->plotLayout()->addElement(0, 0, t);
  // Repaint: an empty state that replaces another one (a load's result replacing "Reading …")
  // has nothing else to trigger a replot, and the widget would go on showing the old text.
  plot->replot(QCustomPlot::rpQueuedReplot);
}

QColor nanColor() {
  return QColor(0xe0, 0x00, 0xe0);
}

double roundTickStep(double span, int ticks, double least) {
  const double raw = std::max(least, span / std::max(1, ticks));
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * decade) return std::max(least, m * decade);
  return std::max(least, 10.0 * decade);
}

namespace {
class WholeNumberTicker : public QCPAxisTicker {
protected:
  double getTickStep(const QCPRange& range) override { return roundTickStep(range.size(), 6); }
};
} // namespace

QSharedPointer<QCPAxisTicker> wholeNumberTicker() {
  return QSharedPointer<QCPAxisTicker>(new WholeNumberTicker);
}

QColor noDataColor() {
  return QColor(0xa0, 0xa0, 0xa0);
}

ColorMapLayout titledColorMap(QCustomPlot* plot, const QString& title, const QString& font_family) {
  plot->clearPlottables();
  plot->clearItems();
  plot->plotLayout()->clear();
  plot->legend = nullptr;
  ColorMapLayout l;
  // The title has a row of its own across the whole width (one column), so that it wraps to the
  // plot's width; the map and its colour scale share the row below.
  plot->plotLayout()->addElement(0, 0, new WrappedTitle(plot, title, QFont(font_family, 10, QFont::Bold)));
  auto* row = new QCPLayoutGrid;
  plot->plotLayout()->addElement(1, 0, row);
  plot->plotLayout()->setRowStretchFactors({0.001, 1.0});
  row->setColumnSpacing(0);
  l.rect = new QCPAxisRect(plot);
  row->addElement(0, 0, l.rect);
  l.x = l.rect->axis(QCPAxis::atBottom);
  l.y = l.rect->axis(QCPAxis::atLeft);
  l.map = new QCPColorMap(l.x, l.y);
  l.map->setInterpolate(false);
  l.scale = new QCPColorScale(plot);
  row->addElement(0, 1, l.scale);
  l.scale->setType(QCPAxis::atRight);
  l.scale->setBarWidth(12);
  l.map->setColorScale(l.scale);
  auto* group = new QCPMarginGroup(plot);
  l.rect->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  l.scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  return l;
}

void setBlockGrid(QCPColorMapData* data, int64_t grid_rows, int64_t grid_cols, int64_t block_rows, int64_t block_cols) {
  auto range = [](int64_t grid, int64_t blk) {
    const double c0 = double(blk - 1) / 2.0;
    if (grid <= 1) return QCPRange(c0 - double(blk) / 4.0, c0 + double(blk) / 4.0);
    return QCPRange(c0, c0 + double(grid - 1) * double(blk));
  };
  data->setSize(int(std::max<int64_t>(2, grid_cols)), int(std::max<int64_t>(2, grid_rows)));
  data->setRange(range(grid_cols, block_cols), range(grid_rows, block_rows));
}

void connectCellMouse(QCustomPlot* plot, QObject* context,
                      std::function<bool(const QPoint& pos, int64_t* r, int64_t* c)> cell_at,
                      std::function<void(int64_t r, int64_t c)> hover,
                      std::function<void(int64_t r, int64_t c)> click) {
  auto press = std::make_shared<QPoint>();
  QObject::connect(plot, &QCustomPlot::mouseMove, context, [cell_at, hover](QMouseEvent* e) {
    int64_t r = -1, c = -1;
    if (cell_at(e->pos(), &r, &c)) hover(r, c);
  });
  QObject::connect(plot, &QCustomPlot::mousePress, context, [press](QMouseEvent* e) { *press = e->pos(); });
  QObject::connect(plot, &QCustomPlot::mouseRelease, context, [press, cell_at, click](QMouseEvent* e) {
    int64_t r = -1, c = -1;
    if ((e->pos() - *press).manhattanLength() < 4 && cell_at(e->pos(), &r, &c)) click(r, c);
  });
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
