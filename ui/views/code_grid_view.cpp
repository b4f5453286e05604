#include "views/code_grid_view.h"

#include "plot/style.h"
#include "views/view_registry.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QVBoxLayout>

#include <cmath>

namespace fp8lab::ui {

QString codeCellText(double v) {
  if (!std::isfinite(v) || v == 0) return numberText(v);
  constexpr int kMaxChars = 9;
  // v = k · 2^n with k odd: frexp gives v = m · 2^e, 0.5 ≤ |m| < 1; scale m to an integer.
  int e = 0;
  double k = std::frexp(std::fabs(v), &e);
  int n = e;
  while (k != std::floor(k)) k *= 2, --n;
  while (std::fmod(k, 2.0) == 0 && k > 1) k /= 2, ++n;
  const QString minus = v < 0 ? QStringLiteral("\u2212") : QString();
  // Exact decimal: an integer for n ≥ 0, else exactly −n digits after the point.
  const QString dec = minus + QString::number(std::fabs(v), 'f', n >= 0 ? 0 : -n);
  if (dec.size() <= kMaxChars) return dec;
  return minus + (k == 1 ? QString() : QString::number(k, 'f', 0) + QStringLiteral("\u00b7")) + pow2Text(n);
}

CodeGrid::CodeGrid(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  setMouseTracking(true);
}

void CodeGrid::setFormat(const Format* f) {
  format_ = f;
  selected_ = -1;
  update();
}

void CodeGrid::setSelected(int code) {
  selected_ = code;
  update();
}

int CodeGrid::rows() const {
  return format_ ? std::max(1, int(format_->codeCount() / 16)) : 16;
}

QRect CodeGrid::gridRect() const {
  const int head = 22;
  return rect().adjusted(head + 14, head, -4, -4);
}

QRect CodeGrid::cellRect(uint32_t code) const {
  const QRect g = gridRect();
  const int cols = 16, r = rows();
  const double cw = double(g.width()) / cols, ch = double(g.height()) / r;
  const int row = int(code / 16), col = int(code % 16);
  return QRectF(g.left() + col * cw, g.top() + row * ch, cw, ch).toAlignedRect().adjusted(1, 1, -1, -1);
}

int CodeGrid::codeAt(const QPoint& p) const {
  if (!format_) return -1;
  for (uint32_t c = 0; c < format_->codeCount(); ++c)
    if (cellRect(c).contains(p)) return int(c);
  return -1;
}

void CodeGrid::paintEvent(QPaintEvent*) {
  QPainter p(this);
  if (!format_) return;
  const QRect g = gridRect();
  QFont small = font();
  small.setPointSizeF(7.5);
  QFont head = font();
  head.setPointSizeF(8.5);
  head.setBold(true);
  p.setFont(head);
  const int cols = 16, r = rows();
  const bool tiny = format_->codeCount() < 16;
  const uint32_t n = format_->codeCount();
  for (int c = 0; c < (tiny ? int(n) : cols); ++c) {
    QRect cr = cellRect(uint32_t(c));
    p.drawText(QRect(cr.left(), 2, cr.width(), g.top() - 4), Qt::AlignCenter, QStringLiteral("_%1").arg(c, 0, 16));
  }
  for (int row = 0; row < r; ++row) {
    QRect cr = cellRect(uint32_t(row * 16));
    p.drawText(QRect(0, cr.top(), g.left() - 4, cr.height()), Qt::AlignRight | Qt::AlignVCenter,
               QStringLiteral("%1_").arg(row, 0, 16));
  }
  for (uint32_t code = 0; code < n; ++code) {
    const QRect cr = cellRect(code);
    const CodeClass cls = format_->classify(code);
    QColor bg = colors::ofClass(cls);
    if (std::signbit(format_->decode(code)) && cls != CodeClass::NaN) bg = bg.darker(112);
    p.fillRect(cr, bg);
    if (int(code) == selected_) {
      p.setPen(QPen(QColor(0xff, 0x6f, 0x00), 3));
      p.drawRect(cr.adjusted(1, 1, -2, -2));
    }
    const QColor ink = bg.lightness() < 140 ? Qt::white : Qt::black;
    p.setPen(ink);
    p.setFont(small);
    const QString txt = codeCellText(format_->decode(code));
    if (cr.height() >= 26) {
      p.setPen(ink == Qt::white ? QColor(0xee, 0xee, 0xee) : QColor(0x30, 0x30, 0x30));
      p.drawText(cr.adjusted(2, 1, -2, 0), Qt::AlignTop | Qt::AlignLeft,
                 QString::fromStdString(format_->hexString(code)));
      p.setPen(ink);
      p.drawText(cr.adjusted(1, 0, -1, -2), Qt::AlignBottom | Qt::AlignHCenter, txt);
    } else {
      p.drawText(cr, Qt::AlignCenter, txt);
    }
  }
}

void CodeGrid::mousePressEvent(QMouseEvent* e) {
  int c = codeAt(e->position().toPoint());
  if (c >= 0) {
    setSelected(c);
    Q_EMIT codeClicked(uint32_t(c));
  }
}

bool CodeGrid::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip && format_) {
    auto* he = static_cast<QHelpEvent*>(e);
    int c = codeAt(he->pos());
    if (c >= 0) {
      QToolTip::showText(he->globalPos(), tr("%1 %2 = %3\n%4\nbinary %5\nclick to open in the bit layout view")
                                              .arg(QString::fromStdString(format_->name()),
                                                   QString::fromStdString(format_->hexString(uint32_t(c))),
                                                   valueWithPow2(format_->decode(uint32_t(c))),
                                                   classText(format_->classify(uint32_t(c))),
                                                   QString::fromStdString(format_->binaryString(uint32_t(c)))));
      return true;
    }
  }
  return QWidget::event(e);
}

CodeGridView::CodeGridView(QWidget* parent) : View(parent) {
  auto* v = new QVBoxLayout(this);
  auto* h = new QHBoxLayout;
  h->addWidget(new QLabel(tr("Format:"), this));
  format_box_ = new QComboBox(this);
  format_box_->setObjectName(QStringLiteral("formatBox"));
  for (const Format* f : Format::all())
    if (f->bits() <= 8) format_box_->addItem(QString::fromStdString(f->name()));
  h->addWidget(format_box_);
  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("summary"));
  h->addWidget(summary_, 1);
  v->addLayout(h);
  grid_ = new CodeGrid(this);
  grid_->setObjectName(QStringLiteral("codeGrid"));
  v->addWidget(grid_, 1);
  // Legend: one swatch per class.
  auto* legend = new QHBoxLayout;
  legend->addWidget(new QLabel(tr("Classes:"), this));
  for (CodeClass c : {CodeClass::Zero, CodeClass::Subnormal, CodeClass::Normal, CodeClass::MaxFinite,
                      CodeClass::Infinity, CodeClass::NaN}) {
    auto* sw = new QLabel(QStringLiteral("&nbsp;%1&nbsp;").arg(classText(c)), this);
    sw->setTextFormat(Qt::RichText);
    sw->setStyleSheet(
        QStringLiteral("background:%1; border:1px solid #777; padding:1px 4px;").arg(colors::ofClass(c).name()));
    legend->addWidget(sw);
  }
  legend->addStretch(1);
  v->addLayout(legend);
  auto* neg = new QLabel(tr("Every value is exact: k\u00b72\u207f (k odd) where the decimal is longer than 9 "
                            "characters. Negative values are slightly darker. Row = high nibble, column = low nibble. "
                            "Click a code to open it in the bit layout view."),
                         this);
  neg->setStyleSheet(QStringLiteral("color:#555"));
  neg->setWordWrap(true);
  v->addWidget(neg);
  connect(format_box_, &QComboBox::currentTextChanged, this, [this](const QString& n) { setFormat(n); });
  connect(grid_, &CodeGrid::codeClicked, this, [this](uint32_t c) {
    const QString f = QString::fromStdString(grid_->format()->name());
    Q_EMIT codeActivated(f, c);
    Q_EMIT showCodeRequested(QStringLiteral("bits"), f, c);
  });
  setFormat(QStringLiteral("E4M3FN"));
}

bool CodeGridView::setFormat(const QString& name) {
  const Format* f = Format::byName(name.toStdString());
  if (!f || f->bits() > 8) return false;
  if (f == grid_->format()) return true;
  const QSignalBlocker b(format_box_);
  format_box_->setCurrentText(QString::fromStdString(f->name()));
  grid_->setFormat(f);
  int counts[6] = {};
  for (uint32_t c = 0; c < f->codeCount(); ++c) counts[int(f->classify(c))]++;
  summary_->setText(tr("%1 codes: %2 zero, %3 subnormal, %4 normal, %5 max finite, %6 Inf, %7 NaN")
                        .arg(f->codeCount())
                        .arg(counts[0])
                        .arg(counts[1])
                        .arg(counts[2])
                        .arg(counts[3])
                        .arg(counts[4])
                        .arg(counts[5]));
  return true;
}

void CodeGridView::showCode(const QString& format, uint32_t code) {
  selectCode(format, code);
}

bool CodeGridView::selectCode(const QString& format, uint32_t code) {
  const Format* f = Format::byName(format.toStdString());
  if (!f || f->bits() > 8) return false;
  setFormat(format);
  grid_->setSelected(int(code));
  return true;
}

QString CodeGridView::csv() const {
  const Format& f = *grid_->format();
  QString t = QStringLiteral("format,code_hex,row,col,value,class\n");
  for (uint32_t c = 0; c < f.codeCount(); ++c)
    t += QStringLiteral("%1,%2,%3,%4,%5,%6\n")
             .arg(QString::fromStdString(f.name()), QString::fromStdString(f.hexString(c)))
             .arg(c / 16)
             .arg(c % 16)
             .arg(QString::number(f.decode(c), 'g', 17), QString::fromLatin1(toString(f.classify(c))));
  return t;
}

FP8LAB_REGISTER_VIEW(CodeGridView, "codes", 30);

} // namespace fp8lab::ui
