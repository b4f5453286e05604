#include "learn/learn_demo.h"

#include "formats/format.h"
#include "plot/style.h"

#include "plot/qcp.h"

#include <QComboBox>
#include <QLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

namespace fp8lab::ui {

namespace {
/// Lays its items out left to right and starts a new line where the next one does not fit.
class FlowLayout : public QLayout {
public:
  explicit FlowLayout(QWidget* parent) : QLayout(parent) { setContentsMargins(0, 0, 0, 0); }
  ~FlowLayout() override {
    while (QLayoutItem* i = takeAt(0)) delete i;
  }
  void addItem(QLayoutItem* item) override { items_.append(item); }
  int count() const override { return int(items_.size()); }
  QLayoutItem* itemAt(int i) const override { return items_.value(i); }
  QLayoutItem* takeAt(int i) override { return i >= 0 && i < items_.size() ? items_.takeAt(i) : nullptr; }
  Qt::Orientations expandingDirections() const override { return {}; }
  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int w) const override { return place(QRect(0, 0, w, 0), false); }
  void setGeometry(const QRect& r) override {
    QLayout::setGeometry(r);
    place(r, true);
  }
  QSize sizeHint() const override { return minimumSize(); }
  QSize minimumSize() const override {
    QSize s;
    for (const QLayoutItem* i : items_) s = s.expandedTo(i->minimumSize());
    return s;
  }

private:
  int place(const QRect& r, bool apply) const {
    const int gap = 12, vgap = 4;
    int x = r.x(), y = r.y(), line = 0;
    for (QLayoutItem* i : items_) {
      const QSize s = i->sizeHint();
      if (x > r.x() && x + s.width() > r.right()) {
        x = r.x();
        y += line + vgap;
        line = 0;
      }
      if (apply) i->setGeometry(QRect(QPoint(x, y), s));
      x += s.width() + gap;
      line = std::max(line, s.height());
    }
    return y + line - r.y();
  }
  QList<QLayoutItem*> items_;
};
} // namespace

LearnDemo::LearnDemo(const QString& title, const QString& intro, QWidget* parent) : QWidget(parent), title_(title) {
  layout_ = new QVBoxLayout(this);
  layout_->setSpacing(4);
  auto* t = new QLabel(QStringLiteral("<h2>%1</h2>").arg(title), this);
  layout_->addWidget(t);
  auto* l = new QLabel(intro, this);
  l->setWordWrap(true);
  l->setTextFormat(Qt::RichText);
  layout_->addWidget(l);
  auto* controls = new QWidget(this);
  controls_ = new FlowLayout(controls);
  layout_->addWidget(controls);
  note_ = new QLabel(this);
  note_->setObjectName(QStringLiteral("demoNote"));
  note_->setWordWrap(true);
  note_->setTextFormat(Qt::RichText);
  note_->setStyleSheet(QStringLiteral("QLabel { background:#fff8e1; border:1px solid #ffe082; padding:6px; }"));
  layout_->addWidget(note_);
  plot_ = new QCustomPlot(this);
  plot_->setMinimumHeight(200);
  plot_->setAutoAddPlottableToLegend(true);
  layout_->addWidget(plot_, 1);
}

void LearnDemo::ensureComputed() {
  if (!computed_) recompute();
}

void LearnDemo::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  ensureComputed();
}

QString LearnDemo::noteText() const {
  return note_->text();
}

void LearnDemo::setNote(const QString& rich_text) {
  note_->setText(rich_text);
}

void LearnDemo::addControl(const QString& text, QWidget* w) {
  // A label and its field stay together on one line.
  auto* pair = new QWidget(this);
  auto* h = new QHBoxLayout(pair);
  h->setContentsMargins(0, 0, 0, 0);
  if (!text.isEmpty()) {
    auto* l = new QLabel(text, pair);
    l->setBuddy(w);
    h->addWidget(l);
  }
  w->setParent(pair);
  h->addWidget(w);
  controls_->addWidget(pair);
}

QTableWidget* LearnDemo::makeTable(const QStringList& headers) {
  auto* t = new QTableWidget(0, int(headers.size()), this);
  t->setHorizontalHeaderLabels(headers);
  t->verticalHeader()->hide();
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  t->horizontalHeader()->setStretchLastSection(true);
  t->setAlternatingRowColors(true);
  t->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  t->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  layout_->addWidget(t);
  table_ = t;
  return t;
}

void LearnDemo::setRow(QTableWidget* t, int r, const QStringList& cells) {
  if (t->rowCount() <= r) t->setRowCount(r + 1);
  for (int c = 0; c < cells.size(); ++c) {
    auto* it = new QTableWidgetItem(cells[c]);
    it->setTextAlignment(c == 0 ? (Qt::AlignLeft | Qt::AlignVCenter) : (Qt::AlignRight | Qt::AlignVCenter));
    t->setItem(r, c, it);
  }
}

void LearnDemo::fitTable() {
  if (!table_) return;
  table_->resizeRowsToContents();
  int h = table_->horizontalHeader()->height() + 2 * table_->frameWidth();
  for (int r = 0; r < table_->rowCount(); ++r) h += table_->rowHeight(r);
  // A horizontal scroll bar appears when the columns are wider than the page: leave room for it.
  if (table_->horizontalScrollBarPolicy() != Qt::ScrollBarAlwaysOff)
    h += table_->horizontalScrollBar()->sizeHint().height();
  table_->setFixedHeight(h);
}

void LearnDemo::legendBelow(QCustomPlot* p, QCPLegend* legend) {
  QCPLegend* leg = legend ? legend : p->legend;
  if (leg->layout() && leg->layout() != p->axisRect()->insetLayout()) return; // already placed
  if (auto* inset = qobject_cast<QCPLayoutInset*>(leg->layout())) inset->take(leg);
  auto* row = new QCPLayoutGrid;
  const int r = p->plotLayout()->rowCount();
  p->plotLayout()->addElement(r, 0, row);
  p->plotLayout()->setRowStretchFactor(r, 0.001);
  row->setMargins(QMargins(0, 0, 0, 0));
  row->addElement(0, 0, leg);
  leg->setFillOrder(QCPLegend::foColumnsFirst);
  leg->setWrap(2); // two entries per line: long names are not cut
  leg->setVisible(true);
  leg->setBorderPen(Qt::NoPen);
  leg->setBrush(Qt::NoBrush);
  leg->setMargins(QMargins(6, 2, 6, 2));
}

std::pair<QCPAxisRect*, QCPAxisRect*> LearnDemo::twoStackedPlots(QCustomPlot* p) {
  p->setMinimumHeight(270);
  p->plotLayout()->clear();
  auto* top = new QCPAxisRect(p);
  auto* bottom = new QCPAxisRect(p);
  p->plotLayout()->addElement(0, 0, top);
  p->plotLayout()->addElement(2, 0, bottom);
  auto* mg = new QCPMarginGroup(p);
  top->setMarginGroup(QCP::msLeft | QCP::msRight, mg);
  bottom->setMarginGroup(QCP::msLeft | QCP::msRight, mg);
  for (int row : {1, 3}) {
    auto* leg = new QCPLegend;
    p->plotLayout()->addElement(row, 0, leg);
    p->plotLayout()->setRowStretchFactor(row, 0.001);
    leg->setLayer(QStringLiteral("legend"));
    leg->setFont(QFont(p->font().family(), 8));
    leg->setFillOrder(QCPLegend::foColumnsFirst);
    leg->setWrap(2);
    leg->setBorderPen(Qt::NoPen);
    leg->setBrush(Qt::NoBrush);
  }
  top->axis(QCPAxis::atLeft)->setScaleType(QCPAxis::stLogarithmic);
  top->axis(QCPAxis::atLeft)->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
  return {top, bottom};
}

QComboBox* LearnDemo::formatBox(const QStringList& names) {
  auto* b = new QComboBox(this);
  for (const QString& n : names) b->addItem(n);
  return b;
}

const Format& LearnDemo::formatOf(const QComboBox* box) {
  const Format* f = Format::byName(box->currentText().toStdString());
  return f ? *f : Format::E4M3FN();
}

QString LearnDemo::csv() const {
  if (!table_) return {};
  QList<QStringList> rows;
  for (int r = 0; r < table_->rowCount(); ++r) {
    QStringList row;
    for (int c = 0; c < table_->columnCount(); ++c)
      row << (table_->item(r, c) ? table_->item(r, c)->text() : QString());
    rows << row;
  }
  return csvOf(rows);
}

QString LearnDemo::csvOf(const QList<QStringList>& rows) const {
  if (!table_) return {};
  auto line = [](QStringList cells) {
    for (QString& x : cells) {
      x.replace(QChar(0x2212), QLatin1Char('-'));
      if (x.contains(QLatin1Char(','))) x = QLatin1Char('"') + x + QLatin1Char('"');
    }
    return cells.join(QLatin1Char(',')) + QLatin1Char('\n');
  };
  QStringList head;
  for (int c = 0; c < table_->columnCount(); ++c) head << table_->horizontalHeaderItem(c)->text();
  QString s = line(head);
  for (const QStringList& r : rows) s += line(r);
  return s;
}

QString LearnDemo::pct(double share) {
  if (share == 0) return QStringLiteral("0%");
  if (std::fabs(share) < 1e-5) return sig(100.0 * share) + QLatin1Char('%');
  return QStringLiteral("%1%").arg(100.0 * share, 0, 'f', std::fabs(share) < 0.001 ? 4 : 2);
}

QString LearnDemo::sig(double v) {
  return errorText(v).replace(QStringLiteral("e-0"), QStringLiteral("e-"));
}

} // namespace fp8lab::ui
