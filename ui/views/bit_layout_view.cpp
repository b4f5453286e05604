#include "views/bit_layout_view.h"
#include "session/session_paths.h"

#include "session/run_access.h"
#include "session/session_document.h"
#include "plot/style.h"
#include "views/view_registry.h"

#include "scaling/nvfp4.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTableWidget>
#include <QToolTip>
#include <QVBoxLayout>

#include <cmath>
#include <cstdlib>
#include <locale.h>
#include <stdlib.h>

namespace fp8lab::ui {

std::optional<double> parseUserNumber(const QString& input) {
  QString t = input.trimmed();
  t.replace(QChar(0x2212), QLatin1Char('-'));
  if (t.isEmpty()) return std::nullopt;
  const QString low = t.toLower();
  if (low == QStringLiteral("nan") || low == QStringLiteral("+nan")) return std::nan("");
  if (low == QStringLiteral("-nan")) return -std::nan("");
  if (low == QStringLiteral("inf") || low == QStringLiteral("+inf") || low == QStringLiteral("infinity"))
    return INFINITY;
  if (low == QStringLiteral("-inf") || low == QStringLiteral("-infinity")) return -INFINITY;
  static const QRegularExpression pow2(QStringLiteral("^([+-]?)2\\s*\\^\\s*([+-]?\\d+)$"));
  if (auto m = pow2.match(t); m.hasMatch()) {
    double v = std::ldexp(1.0, m.captured(2).toInt());
    return m.captured(1) == QStringLiteral("-") ? -v : v;
  }
  static const QRegularExpression frac(QStringLiteral("^([^/]+)/([^/]+)$"));
  if (auto m = frac.match(t); m.hasMatch()) {
    auto a = parseUserNumber(m.captured(1)), b = parseUserNumber(m.captured(2));
    if (a && b) return *a / *b;
    return std::nullopt;
  }
  const QByteArray bytes = t.toLatin1();
  char* end = nullptr;
  // strtod_l in the "C" locale: QApplication calls setlocale(LC_ALL, "") and under a decimal-comma
  // locale plain strtod rejects "0.5" (docs/reliability.md). Accepts C99 hex floats, exact rounding.
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", locale_t(nullptr));
  double v = strtod_l(bytes.constData(), &end, c_locale);
  if (end == bytes.constData() || *end != '\0') return std::nullopt;
  return v;
}

// ---------------------------------------------------------------------------------------------
BitCells::BitCells(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
}

void BitCells::setFormat(const Format* f) {
  format_ = f;
  updateGeometry();
  update();
}

void BitCells::setCode(uint32_t code) {
  code_ = code;
  update();
}

QSize BitCells::sizeHint() const {
  int n = format_ ? format_->bits() : 8;
  return {n * 58 + (n - 1) * 4, 98};
}
QSize BitCells::minimumSizeHint() const {
  int n = format_ ? format_->bits() : 8;
  return {n * 30, 98};
}

QRect BitCells::cellRect(int bit) const {
  const int n = format_ ? format_->bits() : 8;
  const int gap = 4;
  const int w = std::min(58, (width() - (n - 1) * gap) / n);
  const int total = n * w + (n - 1) * gap;
  const int x0 = (width() - total) / 2;
  const int pos = n - 1 - bit;
  return {x0 + pos * (w + gap), 4, w, 56};
}

int BitCells::bitAt(const QPoint& p) const {
  if (!format_) return -1;
  for (int b = 0; b < format_->bits(); ++b)
    if (cellRect(b).contains(p)) return b;
  return -1;
}

void BitCells::paintEvent(QPaintEvent*) {
  if (!format_) return;
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const auto& s = format_->spec();
  const int n = format_->bits();
  const int m = s.mantissa_bits, e = s.exponent_bits;
  QFont big = font();
  big.setPointSizeF(18);
  big.setBold(true);
  QFont small = font();
  small.setPointSizeF(8);
  for (int b = 0; b < n; ++b) {
    QColor c;
    QString label;
    if (b < m) {
      c = colors::mantissa();
      label = QStringLiteral("m%1").arg(b);
    } else if (b < m + e) {
      c = colors::exponent();
      label = QStringLiteral("e%1").arg(b - m);
    } else {
      c = colors::sign();
      label = QStringLiteral("s");
    }
    const bool on = (code_ >> b) & 1u;
    QRect r = cellRect(b);
    p.setPen(QPen(c.darker(150), 1.5));
    p.setBrush(on ? c : c.lighter(150));
    p.drawRoundedRect(r, 5, 5);
    p.setFont(big);
    p.setPen(on ? Qt::black : QColor(0x50, 0x50, 0x50));
    p.drawText(r, Qt::AlignCenter, on ? QStringLiteral("1") : QStringLiteral("0"));
    p.setFont(small);
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(QRect(r.left(), r.bottom() + 2, r.width(), 14), Qt::AlignCenter, label);
  }
  // Field captions under the groups.
  auto caption = [&](int lo, int hi, const QString& text, const QColor& c) {
    if (hi < lo) return;
    QRect a = cellRect(hi), b = cellRect(lo);
    QRect r(a.left(), a.bottom() + 17, b.right() - a.left(), 12);
    p.setPen(c.darker(170));
    p.drawLine(r.left() + 2, r.top(), r.right() - 2, r.top());
    p.setFont(small);
    p.drawText(r.adjusted(0, 1, 0, 2), Qt::AlignHCenter | Qt::AlignTop, text);
  };
  caption(0, m - 1, tr("mantissa (%1)").arg(m), colors::mantissa());
  caption(m, m + e - 1, tr("exponent (%1, bias %2)").arg(e).arg(s.bias), colors::exponent());
  if (s.has_sign) caption(n - 1, n - 1, tr("sign"), colors::sign());
}

void BitCells::mousePressEvent(QMouseEvent* ev) {
  int b = bitAt(ev->position().toPoint());
  if (b >= 0) Q_EMIT bitClicked(b);
}

bool BitCells::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip && format_) {
    auto* he = static_cast<QHelpEvent*>(e);
    int b = bitAt(he->pos());
    if (b >= 0) {
      QToolTip::showText(he->globalPos(), tr("Bit %1 (weight 0x%2): click to toggle").arg(b).arg(1u << b, 0, 16));
      return true;
    }
  }
  return QWidget::event(e);
}

// ---------------------------------------------------------------------------------------------
static const char* kCompareFormats[] = {"E4M3FN", "E4M3FNUZ", "E5M2", "E5M2FNUZ", "E2M3", "E2M1", "BF16", "FP16"};

BitLayoutView::BitLayoutView(QWidget* parent) : View(parent), format_(&Format::E4M3FN()) {
  setFocusPolicy(Qt::StrongFocus);
  auto* outer = new QVBoxLayout(this);

  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Format:"), this));
  format_box_ = new QComboBox(this);
  format_box_->setObjectName(QStringLiteral("formatBox"));
  for (const Format* f : Format::all()) format_box_->addItem(QString::fromStdString(f->name()));
  format_box_->setToolTip(tr("The number format whose bits are shown"));
  top->addWidget(format_box_);
  props_label_ = new QLabel(this);
  props_label_->setObjectName(QStringLiteral("propsLabel"));
  props_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  top->addWidget(props_label_, 1);
  outer->addLayout(top);

  buildCodeGroup(outer);
  buildEncodeGroup(outer);
  buildTwoLevelGroup(outer);

  connect(format_box_, &QComboBox::currentTextChanged, this, [this](const QString& n) { setFormat(n); });
  connect(cells_, &BitCells::bitClicked, this, &BitLayoutView::toggleBit);
  connect(value_edit_, &QLineEdit::textChanged, this, &BitLayoutView::refreshValue);
  connect(rounding_box_, &QComboBox::currentIndexChanged, this, &BitLayoutView::refreshValue);
  connect(saturate_box_, &QCheckBox::toggled, this, &BitLayoutView::refreshValue);

  cells_->setFormat(format_);
  code_ = format_->maxFiniteCode();
  value_edit_->setText(QStringLiteral("464"));
  two_values_->setText(QStringLiteral("16 4 1 0.5 -3 0.25 2 6"));
  two_index_->setValue(1);
  refreshCode();
}

/// The code group: the bit cells and the decoded value, formula, hex, binary and class.
void BitLayoutView::buildCodeGroup(QVBoxLayout* outer) {
  auto* codeBox =
      new QGroupBox(tr("Code — click a bit to toggle it; \u2190 \u2192 step to the neighbouring value"), this);
  auto* cv = new QVBoxLayout(codeBox);
  cells_ = new BitCells(codeBox);
  cells_->setObjectName(QStringLiteral("bitCells"));
  cv->addWidget(cells_);
  auto* grid = new QGridLayout;
  auto mk = [&](const QString& caption, int row, QLabel** out, bool large = false) {
    auto* c = new QLabel(caption, codeBox);
    c->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    grid->addWidget(c, row, 0);
    auto* l = new QLabel(codeBox);
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    if (large) {
      QFont f = l->font();
      f.setPointSizeF(f.pointSizeF() * 1.6);
      f.setBold(true);
      l->setFont(f);
    }
    grid->addWidget(l, row, 1);
    *out = l;
  };
  mk(tr("Value:"), 0, &value_label_, true);
  mk(tr("Formula:"), 1, &formula_label_);
  mk(tr("Hex:"), 2, &hex_label_);
  mk(tr("Binary:"), 3, &bin_label_);
  mk(tr("Class:"), 4, &class_label_);
  value_label_->setObjectName(QStringLiteral("decodedValue"));
  formula_label_->setObjectName(QStringLiteral("formula"));
  class_label_->setObjectName(QStringLiteral("codeClass"));
  QFont mono(QStringLiteral("DejaVu Sans Mono"));
  mono.setStyleHint(QFont::Monospace);
  hex_label_->setFont(mono);
  bin_label_->setFont(mono);
  grid->setColumnStretch(1, 1);
  cv->addLayout(grid);
  outer->addWidget(codeBox);
}

/// "Encode a value": a value field with rounding and saturation, its result, and the table of the
/// value in every format.
void BitLayoutView::buildEncodeGroup(QVBoxLayout* outer) {
  auto* valBox = new QGroupBox(tr("Encode a value"), this);
  auto* vv = new QVBoxLayout(valBox);
  auto* vh = new QHBoxLayout;
  vh->addWidget(new QLabel(tr("Value:"), valBox));
  value_edit_ = new QLineEdit(valBox);
  value_edit_->setObjectName(QStringLiteral("valueEdit"));
  value_edit_->setPlaceholderText(tr("e.g. 464, 1e-3, 0x1.8p3, 2^-9, 1/3, inf, nan"));
  value_edit_->setClearButtonEnabled(true);
  vh->addWidget(value_edit_, 2);
  vh->addWidget(new QLabel(tr("Rounding:"), valBox));
  rounding_box_ = new QComboBox(valBox);
  rounding_box_->setObjectName(QStringLiteral("roundingBox"));
  rounding_box_->addItem(tr("nearest, ties to even (RNE)"), int(Rounding::NearestEven));
  rounding_box_->addItem(tr("toward zero (RTZ)"), int(Rounding::TowardZero));
  rounding_box_->addItem(tr("toward +\u221e (RU)"), int(Rounding::TowardPosInf));
  rounding_box_->addItem(tr("toward \u2212\u221e (RD)"), int(Rounding::TowardNegInf));
  vh->addWidget(rounding_box_);
  saturate_box_ = new QCheckBox(tr("Saturate (SATFINITE)"), valBox);
  saturate_box_->setChecked(true);
  saturate_box_->setToolTip(tr("On: values beyond max finite become \u00b1max. Off: they become Inf, or NaN "
                               "where the format has no Inf. Rounding happens first (OCP OFP8 \u00a73)."));
  vh->addWidget(saturate_box_);
  vv->addLayout(vh);
  value_result_ = new QLabel(valBox);
  value_result_->setObjectName(QStringLiteral("valueResult"));
  value_result_->setWordWrap(true);
  value_result_->setTextFormat(Qt::RichText);
  value_result_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse);
  value_result_->setMinimumHeight(64);
  vv->addWidget(value_result_);
  connect(value_result_, &QLabel::linkActivated, this, [this](const QString& link) {
    bool ok = false;
    uint32_t c = link.toUInt(&ok, 16);
    if (ok) setCode(c);
  });

  compare_ = new QTableWidget(0, 6, valBox);
  compare_->setObjectName(QStringLiteral("compareTable"));
  compare_->setHorizontalHeaderLabels(
      {tr("Format"), tr("Code"), tr("Encoded value"), tr("Abs. error"), tr("Rel. error"), tr("Note")});
  compare_->verticalHeader()->hide();
  compare_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  compare_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  compare_->horizontalHeader()->setStretchLastSection(true);
  compare_->setAlternatingRowColors(true);
  vv->addWidget(compare_, 1);
  outer->addWidget(valBox, 1);
}

/// The two-level scale of NVFP4 (tensor scale × E4M3 block scale × E2M1 element), for typed values
/// or for an element of a GEMM run's NVFP4 operand.
void BitLayoutView::buildTwoLevelGroup(QVBoxLayout* outer) {
  auto* twoBox = new QGroupBox(tr("Two-level scale (NVFP4: fp32 tensor scale \u00d7 E4M3 block scale \u00d7 E2M1 "
                                  "element)"),
                               this);
  twoBox->setObjectName(QStringLiteral("twoLevelBox"));
  auto* tv = new QVBoxLayout(twoBox);
  auto* sh = new QHBoxLayout;
  sh->addWidget(new QLabel(tr("Show:"), twoBox));
  two_source_ = new QComboBox(twoBox);
  two_source_->setObjectName(QStringLiteral("twoLevelSource"));
  two_source_->addItem(tr("Typed values"));
  two_source_->addItem(tr("From a GEMM run"));
  two_source_->setToolTip(tr("From a GEMM run: an element of an NVFP4 operand of a run, read from its codes, block "
                             "scale codes and tensor scale"));
  sh->addWidget(two_source_);
  sh->addStretch(1);
  tv->addLayout(sh);
  // From a run: which run (GEMM runs with E4M3 block scale codes), operand and element.
  two_from_run_ = new QWidget(twoBox);
  auto* rh = new QHBoxLayout(two_from_run_);
  rh->setContentsMargins(0, 0, 0, 0);
  rh->addWidget(new QLabel(tr("Run:"), two_from_run_));
  two_run_ = new QComboBox(two_from_run_);
  two_run_->setObjectName(QStringLiteral("twoLevelRun"));
  two_run_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  rh->addWidget(two_run_, 2);
  rh->addWidget(new QLabel(tr("Operand:"), two_from_run_));
  two_operand_ = new QComboBox(two_from_run_);
  two_operand_->setObjectName(QStringLiteral("twoLevelOperand"));
  two_operand_->addItem(tr("A [M\u00d7K]"), int('A'));
  two_operand_->addItem(tr("B [K\u00d7N]"), int('B'));
  rh->addWidget(two_operand_);
  rh->addWidget(new QLabel(tr("Row:"), two_from_run_));
  two_row_ = new QSpinBox(two_from_run_);
  two_row_->setObjectName(QStringLiteral("twoLevelRow"));
  two_row_->setRange(0, 0);
  rh->addWidget(two_row_);
  rh->addWidget(new QLabel(tr("Column:"), two_from_run_));
  two_col_ = new QSpinBox(two_from_run_);
  two_col_->setObjectName(QStringLiteral("twoLevelColumn"));
  two_col_->setRange(0, 0);
  rh->addWidget(two_col_);
  tv->addWidget(two_from_run_);
  two_from_run_->hide();
  two_typed_ = new QWidget(twoBox);
  auto* th = new QHBoxLayout(two_typed_);
  th->setContentsMargins(0, 0, 0, 0);
  th->addWidget(new QLabel(tr("Values:"), twoBox));
  two_values_ = new QLineEdit(twoBox);
  two_values_->setObjectName(QStringLiteral("twoLevelValues"));
  two_values_->setToolTip(tr("One row of values, quantized in 1\u00d716 blocks (padded with zeros to a multiple "
                             "of 16)"));
  th->addWidget(two_values_, 2);
  two_preset_ = new QComboBox(twoBox);
  two_preset_->setObjectName(QStringLiteral("twoLevelPreset"));
  for (const char* n : {"nvfp4_te", "nvfp4_torchao"}) {
    const QString name = QString::fromLatin1(n);
    two_preset_->addItem(name, name);
    for (const auto& info : nvfp4Presets())
      if (info.name == n)
        two_preset_->setItemData(
            two_preset_->count() - 1,
            QStringLiteral("%1\n%2").arg(QString::fromStdString(info.summary), QString::fromStdString(info.source)),
            Qt::ToolTipRole);
  }
  two_preset_->setToolTip(tr("TE keeps the tensor amax (block factor amax\u00b7(1/2688)\u00b7s); torchao keeps "
                             "per_tensor_scale pts = amax/2688 (block factor pts\u00b7s)"));
  th->addWidget(two_preset_);
  th->addWidget(new QLabel(tr("Element:"), twoBox));
  two_index_ = new QSpinBox(twoBox);
  two_index_->setObjectName(QStringLiteral("twoLevelIndex"));
  two_index_->setRange(0, 15);
  th->addWidget(two_index_);
  tv->addWidget(two_typed_);
  two_text_ = new QLabel(twoBox);
  two_text_->setObjectName(QStringLiteral("twoLevelText"));
  two_text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  two_text_->setWordWrap(true);
  tv->addWidget(two_text_);
  outer->addWidget(twoBox);
  connect(two_values_, &QLineEdit::textChanged, this, &BitLayoutView::refreshTwoLevel);
  connect(two_preset_, &QComboBox::currentIndexChanged, this, &BitLayoutView::refreshTwoLevel);
  connect(two_index_, &QSpinBox::valueChanged, this, &BitLayoutView::refreshTwoLevel);
  connect(two_source_, &QComboBox::currentIndexChanged, this, [this](int i) {
    two_typed_->setVisible(i == 0);
    two_from_run_->setVisible(i == 1);
    if (two_updating_) return;
    if (i == 1)
      twoLevelRunChosen();
    else
      refreshTwoLevel();
  });
  connect(two_run_, &QComboBox::currentIndexChanged, this, [this] {
    if (!two_updating_) twoLevelRunChosen();
  });
  for (QSpinBox* b : {two_row_, two_col_})
    connect(b, &QSpinBox::valueChanged, this, [this] {
      if (!two_updating_) refreshTwoLevelRun();
    });
  connect(two_operand_, &QComboBox::currentIndexChanged, this, [this] {
    if (!two_updating_) refreshTwoLevelRun();
  });
}

bool BitLayoutView::setTwoLevelExample(const QString& values, const QString& preset, int index) {
  const int p = two_preset_->findData(preset);
  if (p < 0) return false;
  {
    const QSignalBlocker b1(two_values_), b2(two_preset_), b3(two_index_), b4(two_source_);
    two_source_->setCurrentIndex(0);
    two_typed_->show();
    two_from_run_->hide();
    two_values_->setText(values);
    two_preset_->setCurrentIndex(p);
    two_index_->setMaximum(std::max(15, index));
    two_index_->setValue(index);
  }
  refreshTwoLevel();
  return !two_text_->text().startsWith(QChar(0x2716));
}

QString BitLayoutView::twoLevelText() const {
  return two_text_->text();
}

bool BitLayoutView::twoLevelFromRun() const {
  return two_source_->currentIndex() == 1;
}

bool BitLayoutView::setTwoLevelRun(std::shared_ptr<RunAccess> run, char operand, int64_t row, int64_t col) {
  {
    const QSignalBlocker b1(two_source_), b2(two_run_), b3(two_operand_), b4(two_row_), b5(two_col_);
    two_updating_ = true;
    two_source_->setCurrentIndex(run ? 1 : 0);
    two_typed_->setVisible(!run);
    two_from_run_->setVisible(bool(run));
    two_run_->clear();
    if (run) two_run_->addItem(run->id(), run->id());
    two_operand_->setCurrentIndex(operand == 'B' ? 1 : 0);
    two_row_->setMaximum(int(std::max<int64_t>(0, row)));
    two_col_->setMaximum(int(std::max<int64_t>(0, col)));
    two_row_->setValue(int(row));
    two_col_->setValue(int(col));
    two_updating_ = false;
  }
  two_run_access_ = std::move(run);
  if (!two_run_access_) {
    refreshTwoLevel();
    return true;
  }
  refreshTwoLevelRun();
  return !two_text_->text().startsWith(QChar(0x2716));
}

void BitLayoutView::setSession(SessionDocument* session) {
  View::setSession(session);
  if (!session) return;
  auto rebuild = [this] { rebuildTwoLevelRuns(); };
  connect(session, &SessionDocument::reset_, this, rebuild);
  connect(session, &SessionDocument::runAdded, this, rebuild);
  connect(session, &SessionDocument::runRemoved, this, rebuild);
  connect(session, &SessionDocument::runChanged, this, rebuild);
  // A GEMM run with NVFP4 operands made current is shown in the box.
  connect(session, &SessionDocument::currentRunChanged, this, [this](int index) {
    if (index < 0 || index >= session_->runCount()) return;
    const int i = two_run_->findData(session_->run(index).id);
    if (i < 0) return;
    {
      const QSignalBlocker b1(two_source_), b2(two_run_);
      two_updating_ = true;
      two_source_->setCurrentIndex(1);
      two_typed_->hide();
      two_from_run_->show();
      two_run_->setCurrentIndex(i);
      two_updating_ = false;
    }
    twoLevelRunChosen();
  });
  rebuildTwoLevelRuns();
}

void BitLayoutView::rebuildTwoLevelRuns() {
  if (!session_) return;
  const QString was = two_run_->currentData().toString();
  {
    const QSignalBlocker b(two_run_);
    two_updating_ = true;
    two_run_->clear();
    // GEMM runs whose A or B has E4M3 block scale codes (NVFP4).
    for (const RunRecord& r : session_->runs()) {
      if (!r.kind.startsWith(QStringLiteral("gemm"))) continue;
      // From the config (no file is opened): an NVFP4 preset on A or B.
      bool two = false;
      for (const char* key : {"scaling", "scaling_b"})
        two |= nvfp4Preset(r.config.value(QLatin1String(key)).toString().toStdString()).has_value();
      if (two)
        two_run_->addItem(r.label == r.id ? r.id : r.label + QStringLiteral(" (") + r.id + QLatin1Char(')'), r.id);
    }
    const int i = two_run_->findData(was);
    two_run_->setCurrentIndex(i < 0 ? 0 : i);
    two_updating_ = false;
  }
  if (twoLevelFromRun()) twoLevelRunChosen();
}

void BitLayoutView::twoLevelRunChosen() {
  two_run_access_.reset();
  if (session_) {
    const int i = session_->indexOf(two_run_->currentData().toString());
    if (i >= 0) two_run_access_ = RunAccess::forRecord(session_->run(i), session_->fileName());
  }
  refreshTwoLevelRun();
}

void BitLayoutView::refreshTwoLevelRun() {
  if (!two_run_access_) {
    two_text_->setText(tr("No GEMM run with NVFP4 operands in the session.\nRun a GEMM with an NVFP4 preset "
                          "(scaling nvfp4_te, nvfp4_torchao, \u2026) and store_quantized on."));
    return;
  }
  const char op = char(two_operand_->currentData().toInt());
  const auto [rows, cols] = two_run_access_->dims(sessionPath(layout::quantizedCodes(std::string(1, op))));
  {
    const QSignalBlocker b1(two_row_), b2(two_col_);
    two_row_->setMaximum(int(std::max<int64_t>(0, rows - 1)));
    two_col_->setMaximum(int(std::max<int64_t>(0, cols - 1)));
  }
  QString why;
  const QString t = runTwoLevelText(*two_run_access_, op, two_row_->value(), two_col_->value(), &why);
  two_text_->setText(t.isEmpty() ? QStringLiteral("\u2716 ") + why : t);
}

void BitLayoutView::refreshTwoLevel() {
  if (twoLevelFromRun()) return;
  std::vector<float> x;
  static const QRegularExpression sep(QStringLiteral("[\\s,;]+"));
  for (const QString& t : two_values_->text().split(sep, Qt::SkipEmptyParts)) {
    const auto v = parseUserNumber(t);
    if (!v) {
      two_text_->setText(QStringLiteral("\u2716 ") + tr("'%1' is not a number").arg(t));
      return;
    }
    x.push_back(float(*v));
  }
  if (x.empty()) {
    two_text_->setText(tr("Type a few values, e.g. 16 4 1 0.5"));
    return;
  }
  // Zeros change no amax and no scale (docs/training.md, padding).
  while (x.size() % 16 != 0) x.push_back(0.0f);
  const auto cfg = nvfp4Preset(two_preset_->currentData().toString().toStdString());
  if (!cfg) return;
  const QuantizedTensor q = toQuantizedTensor(quantizeNvfp4(x.data(), 1, int64_t(x.size()), *cfg), *cfg, x.data());
  two_index_->setMaximum(int(x.size()) - 1);
  const int64_t j = std::min<int64_t>(two_index_->value(), int64_t(x.size()) - 1);
  two_text_->setText(tr("input %1\n%2\n%3")
                         .arg(numberText(x[size_t(j)]), twoLevelScaleText(q, 0, j), twoLevelConventionText(q, 0, j)));
}

namespace {
QString hexCode(uint32_t c) {
  return QStringLiteral("0x%1").arg(c, 0, 16).toUpper().replace(QStringLiteral("0X"), QStringLiteral("0x"));
}
} // namespace

QString twoLevelScaleText(const QuantizedTensor& q, int64_t i, int64_t j) {
  if (!q.format || q.scale_codes.empty() || q.scale_format != &Format::E4M3FN()) return {};
  const size_t b = size_t((i / q.block.rows) * q.blockCols() + j / q.block.cols);
  const uint32_t sc = q.scale_codes[b];
  const uint32_t ec = q.codes[size_t(i * q.cols + j)];
  const float s = q.dequant_scales[b];
  const double e = q.format->decode(ec);
  const float value = float(e * double(q.dequantScaleAt(i, j)));
  const QString fmt = QString::fromStdString(q.format->name());
  QString tensor;
  switch (q.tensor_scale.kind) {
  case TensorScale::Kind::TeAmax:
    tensor = QStringLiteral("%1 (tensor, amax/%2) \u00d7 ")
                 .arg(QString::number(q.tensor_scale.tensorFactor(), 'g', 5))
                 .arg(double(q.tensor_scale.fp4_fp8_max));
    break;
  case TensorScale::Kind::TorchaoPts:
    tensor = QStringLiteral("%1 (tensor, pts) \u00d7 ").arg(QString::number(q.tensor_scale.tensorFactor(), 'g', 5));
    break;
  case TensorScale::Kind::None:
    break;
  }
  return QStringLiteral("x = %1%2 (E4M3 %3) \u00d7 %4 (%5 %6) = %7")
      .arg(tensor, numberText(s), hexCode(sc), numberText(e), fmt, hexCode(ec), floatText(value));
}

QString runTwoLevelText(const RunAccess& run, char operand, int64_t row, int64_t col, QString* why) {
  const std::string op(1, operand);
  const QString codes = sessionPath(layout::quantizedCodes(op)), scales = sessionPath(layout::quantizedScales(op)),
                scale_codes = sessionPath(layout::quantizedScaleCodes(op));
  auto fail = [why](const QString& t) {
    if (why) *why = t;
    return QString();
  };
  if (!run.has(codes) || !run.has(scales) || !run.has(scale_codes) ||
      run.datasetAttr(scale_codes, QStringLiteral("format")) != QStringLiteral("E4M3FN") ||
      run.datasetAttr(scales, QStringLiteral("tensor_scale_kind")).isEmpty())
    return fail(QObject::tr("Run %1 has no two-level (NVFP4) operand %2: it needs %3 with E4M3FN scale codes (%4) and "
                            "a tensor scale. Run a GEMM with an NVFP4 preset (nvfp4_te, nvfp4_torchao, \u2026) and "
                            "store_quantized on.")
                    .arg(run.id(), QString(QLatin1Char(operand)), codes, scale_codes));
  const auto [rows, cols] = run.dims(codes);
  if (row < 0 || col < 0 || row >= rows || col >= cols)
    return fail(QObject::tr("(%1, %2) is outside %3 [%4\u00d7%5]").arg(row).arg(col).arg(codes).arg(rows).arg(cols));
  const Format* f = Format::byName(run.datasetAttr(codes, QStringLiteral("format")).toStdString());
  if (!f) return fail(QObject::tr("%1 has an unknown format").arg(codes));
  const int64_t br = run.datasetAttr(codes, QStringLiteral("block_rows")).toLongLong();
  const int64_t bc = run.datasetAttr(codes, QStringLiteral("block_cols")).toLongLong();
  if (br < 1 || bc < 1) return fail(QObject::tr("%1 has no block_rows / block_cols").arg(codes));
  Block c, s, sc, x;
  QString err;
  if (!run.read(codes, row, col, 1, 1, &c, &err) || !run.read(scales, row / br, col / bc, 1, 1, &s, &err) ||
      !run.read(scale_codes, row / br, col / bc, 1, 1, &sc, &err))
    return fail(err);
  // The element's block alone, as a 1×1 tensor: the texts below need only its three levels.
  QuantizedTensor q;
  q.rows = q.cols = 1;
  q.format = f;
  q.block = {1, 1};
  q.codes = {uint8_t(c.v[0])};
  q.dequant_scales = {float(s.v[0])};
  q.scale_codes = {uint8_t(sc.v[0])};
  q.scale_format = &Format::E4M3FN();
  const QString kind = run.datasetAttr(scales, QStringLiteral("tensor_scale_kind"));
  const bool te = kind == QStringLiteral("te_amax");
  q.tensor_scale.kind = te ? TensorScale::Kind::TeAmax : TensorScale::Kind::TorchaoPts;
  q.tensor_scale.amax = run.datasetAttr(scales, QStringLiteral("tensor_amax")).toFloat();
  q.tensor_scale.value = run.datasetAttr(scales, QStringLiteral("tensor_scale")).toFloat();
  const QString mx = run.datasetAttr(scales, QStringLiteral("fp4_fp8_max"));
  q.tensor_scale.fp4_fp8_max = mx.isEmpty() ? 2688.0f : mx.toFloat();
  QString scaling = run.datasetAttr(codes, QStringLiteral("scaling"));
  if (!scaling.isEmpty()) scaling += QStringLiteral("; ");
  QString text = QObject::tr("%1[%2, %3] of run %4 (%5%6)")
                     .arg(QLatin1Char(operand))
                     .arg(row)
                     .arg(col)
                     .arg(run.id(), scaling,
                          te ? QObject::tr("Transformer Engine convention: the tensor amax is kept")
                             : QObject::tr("torchao convention: the per_tensor_scale amax/%1 is kept")
                                   .arg(numberText(q.tensor_scale.fp4_fp8_max)));
  const QString in = sessionPath(layout::inputs(std::string(1, operand)));
  if (run.has(in) && run.read(in, row, col, 1, 1, &x, &err))
    text += QLatin1Char('\n') + QObject::tr("input %1").arg(numberText(x.v[0]));
  return text + QLatin1Char('\n') + twoLevelScaleText(q, 0, 0) + QLatin1Char('\n') + twoLevelConventionText(q, 0, 0);
}

QString twoLevelConventionText(const QuantizedTensor& q, int64_t i, int64_t j) {
  if (q.scale_codes.empty()) return {};
  const QString f = QString::number(q.dequantScaleAt(i, j), 'g', 8);
  const TensorScale& t = q.tensor_scale;
  switch (t.kind) {
  case TensorScale::Kind::TeAmax:
    return QObject::tr("TE: block factor f32(f32(s\u00b7amax)\u00b7f32(1/%1)) = %2; amax %3, S_enc = %1/amax = %4")
        .arg(double(t.fp4_fp8_max))
        .arg(f, numberText(t.amax), numberText(t.value));
  case TensorScale::Kind::TorchaoPts:
    return QObject::tr("torchao: block factor f32(pts\u00b7s) = %1; per_tensor_scale pts = amax/2688 = %2")
        .arg(f, QString::number(t.value, 'g', 8));
  case TensorScale::Kind::None:
    return QObject::tr("single level: block factor s = %1").arg(f);
  }
  return {};
}

bool BitLayoutView::setFormat(const QString& name) {
  const Format* f = Format::byName(name.toStdString());
  if (!f) return false;
  if (f != format_) {
    format_ = f;
    const QSignalBlocker b(format_box_);
    format_box_->setCurrentText(QString::fromStdString(f->name()));
    // E8M0's nearest rounding ties up (ml_dtypes), not to even: the label says which.
    rounding_box_->setItemText(0, f->spec().specials == SpecialCodes::E8M0 ? tr("nearest, ties up (ml_dtypes)")
                                                                           : tr("nearest, ties to even (RNE)"));
    cells_->setFormat(f);
    code_ = f->maxFiniteCode();
    refreshCode();
    refreshValue();
  }
  return true;
}

void BitLayoutView::setCode(uint32_t code) {
  code_ = code & format_->codeMask();
  refreshCode();
}

bool BitLayoutView::selectCode(const QString& format, uint32_t code) {
  if (!setFormat(format)) return false;
  setCode(code);
  return true;
}

bool BitLayoutView::selectedCode(QString* format, uint32_t* code) const {
  *format = QString::fromStdString(format_->name());
  *code = code_;
  return true;
}

void BitLayoutView::toggleBit(int bit) {
  if (bit < 0 || bit >= format_->bits()) return;
  setCode(code_ ^ (1u << bit));
}

void BitLayoutView::stepUp() {
  setCode(format_->nextUp(code_));
}
void BitLayoutView::stepDown() {
  setCode(format_->nextDown(code_));
}

void BitLayoutView::keyPressEvent(QKeyEvent* e) {
  switch (e->key()) {
  case Qt::Key_Right:
  case Qt::Key_Up:
    stepUp();
    return;
  case Qt::Key_Left:
  case Qt::Key_Down:
    stepDown();
    return;
  default:
    View::keyPressEvent(e);
  }
}

QString BitLayoutView::decodedText() const {
  return value_label_->text();
}
QString BitLayoutView::classTextShown() const {
  return class_label_->text();
}
QString BitLayoutView::formulaText() const {
  return formula_label_->text();
}

QString BitLayoutView::formula(uint32_t code) const {
  const auto& s = format_->spec();
  const auto fl = format_->fields(code);
  const CodeClass cls = format_->classify(code);
  const int m = s.mantissa_bits;
  const QString minus = QStringLiteral("\u2212");
  if (cls == CodeClass::NaN) {
    switch (s.specials) {
    case SpecialCodes::FNUZ:
      return tr("sign 1 with all other bits 0 is the single NaN (FNUZ: no \u22120, no Inf)");
    case SpecialCodes::FN:
      return tr("exponent and mantissa all ones \u2192 NaN (%1 has no Inf)").arg(QString::fromStdString(s.name));
    case SpecialCodes::E8M0:
      return tr("all-ones code \u2192 NaN (E8M0 has no zero and no sign)");
    default:
      return tr("exponent all ones, mantissa \u2260 0 \u2192 NaN");
    }
  }
  if (cls == CodeClass::Infinity)
    return tr("exponent all ones, mantissa 0 \u2192 %1Inf").arg(fl.sign ? minus : QStringLiteral("+"));
  if (s.specials == SpecialCodes::E8M0)
    return QStringLiteral("2^(%1 %2 %3) = 2^%4 = %5")
        .arg(fl.exponent)
        .arg(minus)
        .arg(s.bias)
        .arg(int(fl.exponent) - s.bias)
        .arg(numberText(format_->decode(code)));
  QString mbits;
  for (int b = m - 1; b >= 0; --b) mbits += ((fl.mantissa >> b) & 1u) ? QLatin1Char('1') : QLatin1Char('0');
  const bool sub = fl.exponent == 0;
  const int e = sub ? 1 - s.bias : int(fl.exponent) - s.bias;
  const double frac = (sub ? 0.0 : 1.0) + std::ldexp(double(fl.mantissa), -m);
  const QString lead = sub ? QStringLiteral("0") : QStringLiteral("1");
  const QString signPart =
      s.has_sign ? QStringLiteral("(%1)^%2 \u00b7 ").arg(minus + QStringLiteral("1")).arg(fl.sign) : QString();
  const QString expPart = sub ? QStringLiteral("2^(1 %1 %2)").arg(minus).arg(s.bias)
                              : QStringLiteral("2^(%1 %2 %3)").arg(fl.exponent).arg(minus).arg(s.bias);
  QString t = QStringLiteral("%1%2 \u00b7 %3.%4\u2082  =  %5%6 \u00b7 2^%7 \u00b7 %8  =  %9")
                  .arg(signPart, expPart, lead, m ? mbits : QStringLiteral("0"))
                  .arg(fl.sign ? minus : QString())
                  .arg(QStringLiteral("1"))
                  .arg(e)
                  .arg(numberText(frac))
                  .arg(numberText(format_->decode(code)));
  if (sub) t += tr("   (subnormal: exponent field 0 \u2192 0.m and exponent 1 \u2212 bias)");
  return t;
}

void BitLayoutView::refreshCode() {
  cells_->setCode(code_);
  const double v = format_->decode(code_);
  const CodeClass cls = format_->classify(code_);
  value_label_->setText(valueWithPow2(v));
  formula_label_->setText(formula(code_));
  hex_label_->setText(QString::fromStdString(format_->hexString(code_)));
  bin_label_->setText(QString::fromStdString(format_->binaryString(code_)));
  class_label_->setText(QStringLiteral("<span style='background:%1;padding:2px'>&nbsp;%2&nbsp;</span>")
                            .arg(colors::ofClass(cls).name(), classText(cls)));
  const auto& f = *format_;
  props_label_->setText(tr("%1 bits · bias %2 · max %3 · min normal %4 · min subnormal %5 · %6 finite codes%7")
                            .arg(f.bits())
                            .arg(f.bias())
                            .arg(numberText(f.maxFinite()))
                            .arg(valueWithPow2(f.minNormal()))
                            .arg((f.hasSubnormals() ? valueWithPow2(f.minSubnormal()) : QStringLiteral("\u2014")))
                            .arg(f.finiteCount())
                            .arg(f.hasInfinity() ? tr(" · has \u00b1Inf") : QString()) +
                        // E4M3 is often taken for OCP E4M3FN (max 448, no Inf): say which one this is.
                        (f.name() == "E4M3" ? tr(" · IEEE-style E4M3, not OCP E4M3FN (max 448, no Inf)") : QString()));
  props_label_->setToolTip(QString::fromStdString(f.spec().description));
  Q_EMIT codeSelected(QString::fromStdString(format_->name()), code_);
}

EncodeOptions BitLayoutView::options() const {
  EncodeOptions o;
  o.rounding = Rounding(rounding_box_->currentData().toInt());
  o.saturate = saturate_box_->isChecked();
  return o;
}

void BitLayoutView::setValueText(const QString& text) {
  value_edit_->setText(text);
}
void BitLayoutView::setSaturate(bool on) {
  saturate_box_->setChecked(on);
}
void BitLayoutView::setRounding(Rounding r) {
  int i = rounding_box_->findData(int(r));
  if (i >= 0) rounding_box_->setCurrentIndex(i);
}

void BitLayoutView::refreshValue() {
  const auto x = parseUserNumber(value_edit_->text());
  compare_->setRowCount(0);
  if (!x) {
    value_valid_ = false;
    value_result_->setText(
        value_edit_->text().trimmed().isEmpty()
            ? tr("Type a number to see how %1 encodes it.").arg(QString::fromStdString(format_->name()))
            : tr("<span style='color:#c62828'>'%1' is not a number.</span> Examples: 464, 1e-3, "
                 "0x1.8p3, 2^-9, 1/3, inf, nan.")
                  .arg(value_edit_->text().toHtmlEscaped()));
    return;
  }
  const EncodeOptions o = options();
  const RoundingDecision d = format_->explain(*x, o);
  value_code_ = d.code;
  value_valid_ = true;
  const QString hex = QString::fromStdString(format_->hexString(d.code));
  QString html = tr("<b>%1</b> \u2192 code <a href='%2'>%3</a> = <b>%4</b> (%5)")
                     .arg(numberText(*x), QString::number(d.code, 16), hex, numberText(d.value),
                          classText(format_->classify(d.code)));
  if (d.has_neighbours && !d.exact) {
    // The reason for the direction: at a tie under round-to-nearest the rule that breaks it (to the
    // even mantissa; E8M0 ties up, ml_dtypes), else the side the value fell on or the mode's side.
    const double rounded_to = d.rounded_up ? d.upper_value : d.lower_value;
    const QString direction = !d.tie || o.rounding != Rounding::NearestEven
                                  ? (d.rounded_up ? tr("away from zero") : tr("toward zero"))
                              : format_->spec().specials == SpecialCodes::E8M0
                                  ? tr("up (E8M0 ties round up)")
                                  : tr("to even (%1 has the even mantissa)").arg(numberText(rounded_to));
    html += tr("<br>Neighbours: %1 (code %2) and %3%4 · midpoint %5 · %6 · rounded %7")
                .arg(numberText(d.lower_value), QString::fromStdString(format_->hexString(d.lower_code)),
                     numberText(d.upper_value),
                     std::fabs(d.upper_value) > format_->maxFinite()
                         ? tr(" (beyond max, unbounded exponent)")
                         : QStringLiteral(" (code %1)").arg(QString::fromStdString(format_->hexString(d.upper_code))),
                     numberText(d.midpoint), d.tie ? tr("<b>a tie</b>") : tr("not a tie"), direction);
  } else if (d.exact) {
    html += tr("<br>Exactly representable.");
  }
  QStringList flags;
  if (d.overflow)
    flags << (d.saturated ? tr("overflow \u2192 saturated to max") : tr("overflow \u2192 %1").arg(numberText(d.value)));
  if (d.underflow) flags << tr("underflow to zero");
  if (d.subnormal) flags << tr("subnormal result");
  if (!flags.isEmpty())
    html += QStringLiteral("<br><span style='color:#b26a00'>%1</span>").arg(flags.join(QStringLiteral(" · ")));
  if (std::isfinite(d.abs_error))
    html += tr("<br>Error: absolute %1, relative %2 (%3%)")
                .arg(numberText(d.abs_error), errorText(d.rel_error), errorText(100 * d.rel_error));
  value_result_->setText(html);

  // The same value in other formats, side by side.
  QList<const Format*> fmts;
  fmts << format_;
  for (const char* n : kCompareFormats) {
    const Format* f = Format::byName(n);
    if (f && f != format_) fmts << f;
  }
  compare_->setRowCount(int(fmts.size()));
  for (int r = 0; r < fmts.size(); ++r) {
    const Format* f = fmts[r];
    const RoundingDecision e = f->explain(*x, o);
    QStringList note;
    if (e.overflow) note << (e.saturated ? tr("saturated") : tr("overflow"));
    if (e.underflow) note << tr("underflow");
    if (e.subnormal) note << tr("subnormal");
    if (e.exact) note << tr("exact");
    if (e.tie) note << tr("tie");
    const QStringList cells = {QString::fromStdString(f->name()),
                               QString::fromStdString(f->hexString(e.code)),
                               numberText(e.value),
                               errorText(e.abs_error),
                               errorText(e.rel_error),
                               note.join(QStringLiteral(", "))};
    for (int c = 0; c < cells.size(); ++c) {
      auto* it = new QTableWidgetItem(cells[c]);
      if (r == 0) {
        QFont b = it->font();
        b.setBold(true);
        it->setFont(b);
      }
      compare_->setItem(r, c, it);
    }
  }
}

QString BitLayoutView::csv() const {
  QString t = QStringLiteral("format,code_hex,binary,value,class\n");
  const Format& f = *format_;
  for (uint32_t c = 0; c < f.codeCount(); ++c)
    t += QStringLiteral("%1,%2,%3,%4,%5\n")
             .arg(QString::fromStdString(f.name()), QString::fromStdString(f.hexString(c)),
                  QString::fromStdString(f.binaryString(c)))
             .arg(QString::number(f.decode(c), 'g', 17), QString::fromLatin1(toString(f.classify(c))));
  return t;
}

FP8LAB_REGISTER_VIEW(BitLayoutView, "bits", 10);

} // namespace fp8lab::ui
