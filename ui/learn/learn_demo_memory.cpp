// Learn demo 8: the memory arithmetic of a training step (core/teaching/memory_budget).
#include "learn/learn_demos.h"

#include "plot/style.h"

#include "plot/qcp.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLocale>
#include <QSpinBox>
#include <QTableWidget>

namespace fp8lab::ui {

namespace {
QString gib(double bytes) {
  const double g = bytes / double(1ull << 30);
  if (g >= 100) return QString::number(g, 'f', 0) + QStringLiteral(" GiB");
  if (g >= 0.1) return QString::number(g, 'f', 2) + QStringLiteral(" GiB");
  if (bytes >= double(1u << 20)) return QString::number(bytes / double(1u << 20), 'f', 2) + QStringLiteral(" MiB");
  if (bytes >= 1024) return QString::number(bytes / 1024.0, 'f', 1) + QStringLiteral(" KiB");
  return QString::number(bytes, 'f', 0) + QStringLiteral(" B");
}

/// A count as 6.48 G, 262 M, 4.10 k.
QString countText(double v) {
  if (v >= 1e9) return QString::number(v / 1e9, 'f', 2) + QStringLiteral(" G");
  if (v >= 1e6) return QString::number(v / 1e6, 'f', 1) + QStringLiteral(" M");
  if (v >= 1e3) return QString::number(v / 1e3, 'f', 1) + QStringLiteral(" k");
  return QString::number(v, 'f', 0);
}

/// The plot's segments: tensor classes grouped as a reader compares recipes.
struct Segment {
  const char* name;
  std::vector<std::string> lines;
};
const std::vector<Segment>& segments() {
  static const std::vector<Segment> s = {
      {"weights the GEMMs read", {"weights (GEMM copy)"}},
      {"other parameters", {"other parameters"}},
      {"master weights, gradients, Adam", {"master weights", "gradients", "Adam moments"}},
      {"activations", {"activations: GEMM inputs", "activations: other", "logits"}},
  };
  return s;
}
} // namespace

MemoryDemo::MemoryDemo(QWidget* parent)
    : LearnDemo(
          tr("Memory: what FP8 and FP4 save, and what the scales cost"),
          tr("A training step keeps the weights the GEMMs read, float32 master weights, gradients, Adam's moments "
             "and the activations for backward. A recipe shrinks only the GEMM operands, and adds scales: a "
             "float32 per tensor, row, 1\u00d7128 block or 128\u00d7128 tile, an E8M0 byte per 32 values (MX), an "
             "E4M3 byte per 16 (NVFP4). A model after Korthikanti et al. 2022, not a measurement."),
          parent) {
  model_ = new QComboBox(this);
  model_->setObjectName(QStringLiteral("model"));
  model_->addItem(tr("GPT-2 small (124 M)"), QStringLiteral("gpt2_small"));
  model_->addItem(tr("Llama 2 7B"), QStringLiteral("llama2_7b"));
  model_->addItem(tr("Llama 3 70B"), QStringLiteral("llama3_70b"));
  model_->setCurrentIndex(1);
  addControl(tr("&Model:"), model_);
  batch_ = new QSpinBox(this);
  batch_->setObjectName(QStringLiteral("batch"));
  batch_->setRange(1, 4096);
  batch_->setValue(1);
  addControl(tr("&Batch:"), batch_);
  sequence_ = new QSpinBox(this);
  sequence_->setObjectName(QStringLiteral("sequence"));
  sequence_->setRange(16, 131072);
  sequence_->setSingleStep(1024);
  sequence_->setValue(4096);
  addControl(tr("&Sequence:"), sequence_);
  recipe_ = new QComboBox(this);
  recipe_->setObjectName(QStringLiteral("recipe"));
  for (const MemoryRecipe& r : memoryRecipes())
    recipe_->addItem(QString::fromStdString(r.label), QString::fromStdString(r.name));
  recipe_->setCurrentIndex(2);
  addControl(tr("&Recipe:"), recipe_);
  flash_ = new QCheckBox(tr("&flash attention"), this);
  flash_->setChecked(true);
  addControl(QString(), flash_);
  dropout_ = new QCheckBox(tr("&dropout"), this);
  addControl(QString(), dropout_);
  makeTable({tr("tensor class"), tr("values"), tr("bytes per value"), tr("scales"), tr("memory"), tr("share")});
  connect(model_, &QComboBox::currentIndexChanged, this, &MemoryDemo::recompute);
  connect(recipe_, &QComboBox::currentIndexChanged, this, &MemoryDemo::recompute);
  for (QSpinBox* b : {batch_, sequence_}) connect(b, &QSpinBox::valueChanged, this, &MemoryDemo::recompute);
  for (QCheckBox* b : {flash_, dropout_}) connect(b, &QCheckBox::toggled, this, &MemoryDemo::recompute);
  QCustomPlot* p = plot();
  p->setMinimumHeight(170);
  p->xAxis->setLabel(tr("memory of one training step (GiB)"));
  stylePlot(p);
  legendBelow(p);
  p->legend->setWrap(3);
  p->setInteractions({});
}

void MemoryDemo::setInputs(const QString& model, int64_t batch, int64_t sequence, const QString& recipe) {
  {
    const QSignalBlocker b1(model_), b2(batch_), b3(sequence_), b4(recipe_);
    model_->setCurrentIndex(std::max(0, model_->findData(model)));
    batch_->setValue(int(batch));
    sequence_->setValue(int(sequence));
    recipe_->setCurrentIndex(std::max(0, recipe_->findData(recipe)));
  }
  recompute();
}

void MemoryDemo::recompute() {
  markComputed();
  MemoryBudgetConfig c;
  c.model = *transformerShape(model_->currentData().toString().toStdString());
  c.batch = batch_->value();
  c.sequence = sequence_->value();
  c.flash_attention = flash_->isChecked();
  c.dropout = dropout_->isChecked();
  c.recipe = recipe_->currentData().toString().toStdString();
  budget_ = memoryBudget(c);
  const QLocale en(QLocale::English);
  QTableWidget* t = table();
  t->setRowCount(0);
  for (const MemoryLine& l : budget_.lines) {
    if (l.tensor_class == "logits") continue; // shown with the other activations
    const bool per_token = l.tensor_class == "activations: other";
    const int r = t->rowCount();
    setRow(t, r,
           {QString::fromStdString(l.tensor_class),
            per_token ? tr("%1 tokens \u00d7 layers").arg(countText(l.elements)) : countText(l.elements),
            per_token ? tr("%1 per token").arg(QString::number(l.element_bytes, 'g', 6))
                      : QString::number(l.element_bytes, 'g', 4),
            l.scale_bytes > 0 ? gib(l.scale_bytes) : QStringLiteral("\u2014"), gib(l.bytes),
            pct(l.bytes / budget_.total_bytes)});
    t->item(r, 0)->setToolTip(QString::fromStdString(l.note));
    if (per_token) {
      // The float32 logits of the loss join this row (tooltip: both figures).
      const MemoryLine* logits = nullptr;
      for (const MemoryLine& x : budget_.lines)
        if (x.tensor_class == "logits") logits = &x;
      if (logits) {
        t->item(r, 0)->setText(tr("activations: other, logits"));
        t->item(r, 4)->setText(gib(l.bytes + logits->bytes));
        t->item(r, 5)->setText(pct((l.bytes + logits->bytes) / budget_.total_bytes));
        t->item(r, 0)->setToolTip(
            tr("%1; logits: %2 float32 values, %3")
                .arg(QString::fromStdString(l.note), countText(logits->elements), gib(logits->bytes)));
      }
    }
    if (l.elements == 0) t->item(r, 1)->setText(QStringLiteral("\u2014"));
    if (l.element_bytes == 0) t->item(r, 2)->setText(QStringLiteral("\u2014"));
  }
  setRow(t, t->rowCount(),
         {tr("total (%1 parameters)").arg(countText(double(budget_.parameters))), QString(), QString(),
          budget_.scale_bytes > 0 ? gib(budget_.scale_bytes) : QStringLiteral("\u2014"), gib(budget_.total_bytes),
          pct(1.0)});
  fitTable();

  // Every recipe as one stacked bar, the chosen one first (top).
  QCustomPlot* p = plot();
  p->clearPlottables();
  const auto& recipes = memoryRecipes();
  QSharedPointer<QCPAxisTickerText> tk(new QCPAxisTickerText);
  std::vector<MemoryBudget> all;
  for (size_t i = 0; i < recipes.size(); ++i) {
    MemoryBudgetConfig ci = c;
    ci.recipe = recipes[i].name;
    all.push_back(memoryBudget(ci));
    const int key = int(recipes.size() - i);
    tk->addTick(key, QString::fromStdString(recipes[i].name) +
                         (recipes[i].name == c.recipe ? QStringLiteral(" \u25c0") : QString()));
  }
  QCPBars* below = nullptr;
  double widest = 0;
  for (size_t sIdx = 0; sIdx <= segments().size(); ++sIdx) {
    const bool scales = sIdx == segments().size();
    auto* b = new QCPBars(p->yAxis, p->xAxis);
    b->setName(scales ? tr("scales and scaling state") : tr(segments()[sIdx].name));
    b->setWidth(0.6);
    const QColor col = scales ? QColor(0xd6, 0x27, 0x28) : colors::series(int(sIdx));
    b->setPen(QPen(col.darker(120)));
    b->setBrush(col);
    QVector<double> keys, vals;
    for (size_t i = 0; i < all.size(); ++i) {
      double v = 0;
      for (const MemoryLine& l : all[i].lines) {
        if (scales) {
          v += l.scale_bytes;
          continue;
        }
        for (const std::string& name : segments()[sIdx].lines)
          if (l.tensor_class == name) v += l.bytes - l.scale_bytes;
      }
      keys << double(recipes.size() - i);
      vals << v / double(1ull << 30);
      widest = std::max(widest, all[i].total_bytes / double(1ull << 30));
    }
    b->setData(keys, vals);
    if (below) b->moveAbove(below);
    below = b;
  }
  p->yAxis->setTicker(tk);
  p->yAxis->setTickLabelFont(QFont(p->font().family(), 7));
  p->yAxis->setRange(0.4, double(recipes.size()) + 0.6);
  p->xAxis->setRange(0, widest * 1.05);
  replot(p);

  const MemoryBudget* bf16 = nullptr;
  for (const MemoryBudget& b : all)
    if (b.recipe.name == "bf16") bf16 = &b;
  const double act = budget_.activation_bytes;
  // The tensors the scales belong to: the lines that hold elements and scales (the GEMM copy of
  // the weights, the saved GEMM inputs), their elements without the scales. Unscaled activations
  // and the scaling state are not part of it.
  double scaled = 0;
  for (const MemoryLine& l : budget_.lines)
    if (l.elements > 0 && l.scale_bytes > 0) scaled += l.bytes - l.scale_bytes;
  QString text = tr("%1 (%2 parameters), batch %3 \u00d7 %4 tokens, %5: <b>%6</b> in all. ")
                     .arg(model_->currentText(), en.toString(qlonglong(budget_.parameters)))
                     .arg(batch_->value())
                     .arg(sequence_->value())
                     .arg(recipe_->currentText(), gib(budget_.total_bytes));
  if (bf16)
    text += tr("Against BF16 (%1) that saves <b>%2</b>: the GEMM copy of the weights and the saved GEMM inputs shrink, "
               "but master weights, gradients and Adam (16 bytes per parameter, %3) do not. ")
                .arg(gib(bf16->total_bytes), gib(bf16->total_bytes - budget_.total_bytes),
                     gib(16.0 * double(budget_.parameters)));
  if (budget_.scale_bytes > 0)
    text += tr("Scales cost <b>%1</b> here (%2 of the %3 of GEMM weights and saved GEMM inputs they scale). ")
                .arg(gib(budget_.scale_bytes), pct(budget_.scale_bytes / std::max(1.0, scaled)), gib(scaled));
  else
    text += tr("Scales cost <b>nothing</b> here. ");
  text += tr("Activations: %1.").arg(gib(act));
  setNote(text);
}

} // namespace fp8lab::ui
