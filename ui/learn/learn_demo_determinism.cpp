// Learn demo 5: why PyTorch computes the scale in float64 (core/teaching/scale_determinism).
#include "learn/learn_demos.h"

#include "plot/style.h"

#include "plot/qcp.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>

#include <bit>
#include <cmath>

namespace fp8lab::ui {

namespace {
QString scaleText(float s) {
  return QString::number(double(s), 'f', 6);
}
QString count(int64_t n) {
  return QLocale(QLocale::English).toString(qlonglong(n));
}
} // namespace

DeterminismDemo::DeterminismDemo(QWidget* parent)
    : LearnDemo(tr("Why PyTorch computes the scale in float64"),
                tr("torchao's <i>amax_to_scale</i> casts amax to float64 before s = max / amax: \"torch.compile and "
                   "eager show different numerics for 1.0 / float32\". Eager code divides in float32; compiled code "
                   "may compute max \u00b7 (1 / amax) (pytorch#141753). Float64 division rounded to float32 equals "
                   "the float32 division for <i>every</i> float32 amax (Figueroa: 53 \u2265 2\u00b724 + 2), so the "
                   "upcast makes both agree. A scale one float32 step off changes the code of an element lying on a "
                   "rounding boundary."),
                parent) {
  amax_ = nextDifferingAmax(0.3f, 448.0f, ScaleEvaluation::ReciprocalMultiply);
  amax_edit_ = new QLineEdit(QString::number(double(amax_), 'g', 9), this);
  amax_edit_->setObjectName(QStringLiteral("amax"));
  amax_edit_->setMaximumWidth(140);
  addControl(tr("&amax (float32):"), amax_edit_);
  auto* next = new QPushButton(tr("&Next amax where they differ"), this);
  next->setObjectName(QStringLiteral("nextCase"));
  addControl(QString(), next);
  format_ = formatBox({QStringLiteral("E4M3FN"), QStringLiteral("E5M2"), QStringLiteral("E2M1")});
  format_->setObjectName(QStringLiteral("format"));
  addControl(tr("&Format:"), format_);
  elements_ = new QSpinBox(this);
  elements_->setObjectName(QStringLiteral("elements"));
  elements_->setRange(1024, 1 << 20);
  elements_->setSingleStep(65536);
  elements_->setValue(65536);
  addControl(tr("&Tensor size:"), elements_);
  makeTable({tr("evaluation"), tr("scale s"), tr("bits"), tr("steps"), tr("x that change"), tr("for example")});
  table()->setToolTip(tr("steps: float32 steps from the float32 division; x that change: float32 values of (0, amax] "
                         "whose code differs under this scale"));
  connect(amax_edit_, &QLineEdit::editingFinished, this, [this] {
    bool ok = false;
    const float a = amax_edit_->text().toFloat(&ok);
    if (ok && std::isfinite(a) && a > 0) {
      amax_ = a;
      recompute();
    } else {
      setNote(tr("<b>amax must be a finite float32 number above 0.</b>"));
    }
  });
  connect(next, &QPushButton::clicked, this, &DeterminismDemo::nextDifferingCase);
  connect(format_, &QComboBox::currentIndexChanged, this, &DeterminismDemo::recompute);
  connect(elements_, &QSpinBox::valueChanged, this, &DeterminismDemo::recompute);
  QCustomPlot* p = plot();
  p->xAxis->setLabel(tr("evaluation order"));
  p->yAxis->setLabel(tr("amaxes in [1, 2) that differ (%)"));
  stylePlot(p);
  p->setInteractions({});
}

void DeterminismDemo::setAmax(float amax) {
  amax_ = amax;
  amax_edit_->setText(QString::number(double(amax), 'g', 9));
  recompute();
}

void DeterminismDemo::setFormat(const QString& name) {
  format_->setCurrentText(name);
}

void DeterminismDemo::nextDifferingCase() {
  const float fp8_max = float(formatOf(format_).maxFinite());
  const float a = nextDifferingAmax(amax_, fp8_max, ScaleEvaluation::ReciprocalMultiply);
  if (a > 0) setAmax(a);
}

const BinadeSurvey& DeterminismDemo::survey() {
  const float fp8_max = float(formatOf(format_).maxFinite());
  if (!survey_ || survey_max_ != fp8_max) {
    survey_ = surveyBinade(fp8_max, 0);
    survey_max_ = fp8_max;
  }
  return *survey_;
}

void DeterminismDemo::recompute() {
  markComputed();
  const Format& f = formatOf(format_);
  case_ = fp8lab::scaleCase(amax_, f);
  const size_t rm = size_t(ScaleEvaluation::ReciprocalMultiply);
  QTableWidget* t = table();
  t->setRowCount(kScaleEvaluationCount);
  for (int i = 0; i < kScaleEvaluationCount; ++i) {
    const size_t k = size_t(i);
    const CodeFlips& fl = case_.flips[k];
    const QString example = fl.count > 0 ? tr("%1: %2 \u2192 %3")
                                               .arg(QString::number(double(fl.example), 'g', 9),
                                                    QString::fromStdString(f.hexString(fl.code_a)),
                                                    QString::fromStdString(f.hexString(fl.code_b)))
                                         : QStringLiteral("\u2014");
    setRow(t, i,
           {QString::fromUtf8(toString(kScaleEvaluations[k])), scaleText(case_.scale[k]),
            QStringLiteral("0x%1").arg(std::bit_cast<uint32_t>(case_.scale[k]), 8, 16, QLatin1Char('0')),
            QString::number(case_.ulps[k]), count(fl.count), example});
    t->item(i, 0)->setToolTip(QString::fromUtf8(sourceOf(kScaleEvaluations[k])));
  }
  fitTable();
  // The elements of a real tensor with this amax that change code under the reciprocal order.
  const std::vector<float> x = tensorWithAmax(amax_, elements_->value(), 11);
  tensor_flips_ = 0;
  if (case_.flips[rm].count > 0)
    for (float v : x) tensor_flips_ += case_.flips[rm].flips(v);
  // The survey of one binade, drawn as bars.
  const BinadeSurvey& s = survey();
  QCustomPlot* p = plot();
  p->clearPlottables();
  p->clearItems();
  QVector<double> keys, vals;
  QSharedPointer<QCPAxisTickerText> tk(new QCPAxisTickerText);
  for (int i = 0; i < kScaleEvaluationCount; ++i) {
    keys << i + 1;
    vals << 100.0 * double(s.differ[size_t(i)]) / double(s.amaxes);
    tk->addTick(i + 1, QString::fromUtf8(toString(kScaleEvaluations[size_t(i)])));
  }
  auto* b = new QCPBars(p->xAxis, p->yAxis);
  b->setData(keys, vals);
  b->setWidth(0.5);
  b->setPen(QPen(colors::series(0).darker(130)));
  b->setBrush(colors::series(0));
  for (int i = 0; i < kScaleEvaluationCount; ++i) {
    auto* lbl = new QCPItemText(p);
    lbl->position->setCoords(i + 1, vals[i]);
    lbl->setPositionAlignment(Qt::AlignBottom | Qt::AlignHCenter);
    lbl->setText(i == 0 ? tr("reference") : tr("%1 of %2").arg(count(s.differ[size_t(i)]), count(s.amaxes)));
  }
  p->xAxis->setTicker(tk);
  p->xAxis->setRange(0.4, kScaleEvaluationCount + 0.6);
  p->yAxis->setRange(0, std::max(40.0, *std::max_element(vals.begin(), vals.end()) * 1.25));
  replot(p);

  const float ref = case_.scale[0], rec = case_.scale[rm];
  QString text =
      tr("amax <b>%1</b>: float32 division gives <b>%2</b> (the nearest float32 to %3); float64 division "
         "the same. ")
          .arg(QString::number(double(amax_), 'g', 9), scaleText(ref), QString::number(case_.quotient, 'g', 12));
  if (rec != ref)
    text += tr("Reciprocal \u00d7 max gives <b>%1</b>, one step %2: %3 of the %4 float32 values in (0, amax] change "
               "code, e.g. x = %5: %6 instead of %7 (x\u00b7s = %8 instead of %9, across the boundary %10). In a "
               "tensor of %11 "
               "normal values with this amax: <b>%12</b> change. ")
                .arg(scaleText(rec), case_.ulps[rm] > 0 ? tr("up") : tr("down"), count(case_.flips[rm].count),
                     count(case_.flips[rm].candidates), QString::number(double(case_.flips[rm].example), 'g', 9))
                .arg(QString::fromStdString(f.hexString(case_.flips[rm].code_b)),
                     QString::fromStdString(f.hexString(case_.flips[rm].code_a)),
                     QString::number(double(case_.flips[rm].scaled_b), 'g', 9),
                     QString::number(double(case_.flips[rm].scaled_a), 'g', 9), numberText(case_.flips[rm].boundary))
                .arg(count(elements_->value()), count(tensor_flips_));
  else
    text += tr("Here all four orders agree: press <i>Next amax where they differ</i>. ");
  text += tr("Over all float32 amaxes in [1, 2): reciprocal \u00d7 max differs for <b>%1</b> (%2), the Newton step "
             "for %3, float64 division for %4. (The 1493.333374 quoted for amax 0.3 is 448 / 0.3 with 0.3 in float64, "
             "another amax.)")
              .arg(count(s.differ[rm]), pct(double(s.differ[rm]) / double(s.amaxes)),
                   count(s.differ[size_t(ScaleEvaluation::NewtonFma)]),
                   count(s.differ[size_t(ScaleEvaluation::Float64Divide)]));
  setNote(text);
}

} // namespace fp8lab::ui
