#include "forms/training_form.h"

#include "forms/experiment_runner.h"
#include "forms/training_model_form.h"

#include "experiment/training/training_schema.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>

namespace fp8lab::ui {

using namespace fields;

namespace {
const Item kRecipes[] = {{"per_tensor", "Per-tensor scaling with the strategy below"},
                         {"te_float8_block", "TE Float8BlockScaling (1x128 / 128x128, power-of-two fp32 scales)"},
                         {"te_mxfp8", "TE MXFP8BlockScaling (E4M3, 1x32 E8M0 RCEIL)"},
                         {"te_nvfp4", "TE NVFP4BlockScaling (E2M1 1x16, E4M3 + fp32 scales)"},
                         {"deepseek_v3", "DeepSeek-V3 (1x128 / 128x128, float32 scales amax/448)"}};
const Item kTrainStrategies[] = {{"delayed-flax", "Delayed, Flax fp8_ops (amax history)"},
                                 {"delayed-te", "Delayed, TE DelayedScaling (amax history)"},
                                 {"current-te", "Current, TE Float8CurrentScaling"},
                                 {"current-torchao", "Current, torchao tensorwise"}};
/// weight_2d when the config does not set it (TrainingRecipeConfig::weight2d()).
bool recipeWeight2dDefault(const QString& recipe) {
  return recipe != QStringLiteral("te_mxfp8");
}
} // namespace

TrainingForm::TrainingForm(QWidget* parent) : QWidget(parent) {
  updating_ = true;
  QWidget* inner = this;
  train_form_ = new QFormLayout(inner);
  train_form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  train_form_->setLabelAlignment(Qt::AlignRight);
  auto onChange = [this] {
    if (updating_) return;
    updateStates();
    Q_EMIT this->changed();
  };
  auto combo = [&](const QString& name) {
    QComboBox* c = comboBox(inner, name);
    connect(c, &QComboBox::currentIndexChanged, this, onChange);
    return c;
  };
  auto spin = [&](const QString& name, int lo, int hi, int val, const QString& suffix = {}) {
    QSpinBox* s = spinBox(inner, name, lo, hi, val, suffix);
    connect(s, &QSpinBox::valueChanged, this, onChange);
    return s;
  };
  auto check = [&](const QString& name, const QString& text) {
    auto* c = new QCheckBox(text, inner);
    c->setObjectName(name);
    connect(c, &QCheckBox::toggled, this, onChange);
    return c;
  };
  auto section = [&](const QString& t) { train_form_->addRow(new QLabel(QStringLiteral("<b>%1</b>").arg(t), inner)); };

  section(tr("Run"));
  t_id_ = new QLineEdit(inner);
  t_id_->setObjectName(QStringLiteral("trainId"));
  t_id_->setToolTip(tr("The run's id in the session"));
  connect(t_id_, &QLineEdit::textChanged, this, onChange);
  train_form_->addRow(tr("Run id:"), t_id_);
  t_precision_ = combo(QStringLiteral("trainPrecision"));
  fromTrainingChoice(t_precision_, trainingParam("precision", ""),
                     {{QStringLiteral("fp8"), tr("FP8 / FP4")}, {QStringLiteral("fp32"), tr("FP32 baseline")}});
  train_form_->addRow(tr("Precision:"), t_precision_);

  section(tr("Model"));
  t_model_ = new TrainingModelForm(inner);
  t_model_->setObjectName(QStringLiteral("trainingModel"));
  connect(t_model_, &TrainingModelForm::changed, this, onChange);
  connect(t_model_, &TrainingModelForm::modelChanged, this, [this](bool transformer) {
    // Each model's own default batch, unless the user chose another.
    const int mlp_batch = std::stoi(trainingParam("batch_size", "mlp").def);
    const int lm_batch = std::stoi(trainingParam("batch_size", "transformer").def);
    if (transformer && t_batch_->value() == mlp_batch) t_batch_->setValue(lm_batch);
    if (!transformer && t_batch_->value() == lm_batch) t_batch_->setValue(mlp_batch);
    updateStates();
    Q_EMIT this->changed();
  });
  train_form_->addRow(t_model_);

  section(tr("Recipe"));
  t_recipe_ = combo(QStringLiteral("recipe"));
  // Short names in the narrow dock; what each follows in the item's tooltip.
  for (const Item& it : kRecipes) {
    t_recipe_->addItem(QString::fromLatin1(it.key), QString::fromLatin1(it.key));
    t_recipe_->setItemData(t_recipe_->count() - 1, tr(it.text), Qt::ToolTipRole);
  }
  t_recipe_->setToolTip(tr("How the six GEMM operands of every Linear layer are quantized (docs/training.md, "
                           "\"Block recipes\")"));
  train_form_->addRow(tr("Recipe:"), t_recipe_);
  t_strategy_ = combo(QStringLiteral("trainStrategy"));
  {
    QMap<QString, QString> tips;
    for (const Item& it : kTrainStrategies) tips[QString::fromLatin1(it.key)] = tr(it.text);
    fromTrainingChoice(t_strategy_, trainingParam("scaling.strategy", ""), {}, tips);
  }
  train_form_->addRow(tr("Strategy:"), t_strategy_);
  t_history_ = spin(QStringLiteral("trainHistory"), 1, 1, 1, tr(" steps"));
  fromSchema(t_history_, param("history_len", ParamScope::None));
  t_history_->setValue(1024);
  train_form_->addRow(tr("History length:"), t_history_);
  t_fwd_ = combo(QStringLiteral("forwardFormat"));
  t_bwd_ = combo(QStringLiteral("backwardFormat"));
  for (const QString& f : fp8Formats()) {
    t_fwd_->addItem(f, f);
    t_bwd_->addItem(f, f);
  }
  t_fwd_->setToolTip(tr("Inputs and weights (Flax Fp8DotGeneral, TE HYBRID: E4M3FN)"));
  t_bwd_->setToolTip(tr("Output gradients (HYBRID: E5M2)"));
  train_form_->addRow(tr("Forward format:"), t_fwd_);
  train_form_->addRow(tr("Backward format:"), t_bwd_);
  t_fp8fmt_ = combo(QStringLiteral("fp8Format"));
  t_fp8fmt_->addItem(tr("E4M3 (every tensor)"), QStringLiteral("E4M3"));
  t_fp8fmt_->addItem(tr("HYBRID (gradients E5M2)"), QStringLiteral("HYBRID"));
  train_form_->addRow(tr("FP8 format:"), t_fp8fmt_);
  t_w2d_ = check(QStringLiteral("weight2d"), tr("weights in 2-D tiles"));
  train_form_->addRow(tr("Weights:"), t_w2d_);
  t_hadamard_ = check(QStringLiteral("hadamard"), tr("Hadamard transform (RHT) on the wgrad operands"));
  train_form_->addRow(tr("Hadamard:"), t_hadamard_);
  t_sr_ = check(QStringLiteral("stochasticRounding"), tr("stochastic rounding of the gradients"));
  train_form_->addRow(tr("Rounding:"), t_sr_);
  t_wgrad_hp_ = check(QStringLiteral("wgradHighPrecision"), tr("weight-gradient GEMM in high precision"));
  t_wgrad_hp_->setToolTip(tr("overrides: {\"wgrad\": {\"recipe\": \"high_precision\"}} \u2014 torchao's "
                             "rowwise_with_gw_hp idea: both wgrad operands enter the GEMM unquantized"));
  train_form_->addRow(tr("Override:"), t_wgrad_hp_);

  section(tr("Training"));
  // Ranges, defaults and tooltips: the training schema's (core/experiment/training/training_schema.h).
  auto mlpSpin = [&](const QString& name, const char* key) {
    QSpinBox* s = spin(name, 0, 1, 0);
    fields::fromTrainingSchema(s, trainingParam(key, "mlp"));
    return s;
  };
  t_epochs_ = mlpSpin(QStringLiteral("epochs"), "epochs");
  train_form_->addRow(tr("Epochs:"), t_epochs_);
  t_batch_ = mlpSpin(QStringLiteral("batchSize"), "batch_size");
  train_form_->addRow(tr("Batch size:"), t_batch_);
  t_seed_ = spin(QStringLiteral("trainSeed"), 0, 2147483647, std::stoi(trainingParam("seed", "").def));
  t_seed_->setToolTip(tr("Initial weights, data order and stochastic rounding"));
  train_form_->addRow(tr("Seed:"), t_seed_);
  t_train_limit_ = mlpSpin(QStringLiteral("trainLimit"), "train_limit");
  t_train_limit_->setSpecialValueText(tr("all 60000"));
  t_train_limit_->setToolTip(tr("Only the first N training images (0: all)"));
  train_form_->addRow(tr("Training images:"), t_train_limit_);
  t_test_limit_ = mlpSpin(QStringLiteral("testLimit"), "test_limit");
  t_test_limit_->setSpecialValueText(tr("all 10000"));
  train_form_->addRow(tr("Test images:"), t_test_limit_);
  // After the generic handler: a recipe brings its own weight_2d default.
  connect(t_recipe_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    const bool was = updating_;
    updating_ = true;
    t_w2d_->setChecked(recipeWeight2dDefault(key(t_recipe_)));
    updating_ = was;
    updateStates();
    Q_EMIT this->changed();
  });
  updating_ = false;
  setConfig(defaultConfig());
}

QJsonObject TrainingForm::defaultConfig() {
  return QJsonObject{
      {QStringLiteral("type"), QStringLiteral("training")},
      {QStringLiteral("id"), QStringLiteral("train-gui")},
      {QStringLiteral("precision"), QStringLiteral("fp8")},
      {QStringLiteral("scaling"), QJsonObject{{QStringLiteral("strategy"), QStringLiteral("delayed-flax")},
                                              {QStringLiteral("history_len"), 1024}}},
      {QStringLiteral("forward_format"), QStringLiteral("E4M3FN")},
      {QStringLiteral("backward_format"), QStringLiteral("E5M2")},
      {QStringLiteral("epochs"), 3},
      {QStringLiteral("batch_size"), 128},
      {QStringLiteral("seed"), 1},
      {QStringLiteral("train_limit"), 0},
      {QStringLiteral("test_limit"), 0}};
}

QJsonObject TrainingForm::config() const {
  QJsonObject c;
  c[QStringLiteral("type")] = QStringLiteral("training");
  c[QStringLiteral("id")] = t_id_->text();
  const QString precision = key(t_precision_);
  c[QStringLiteral("precision")] = precision;
  const QString recipe = key(t_recipe_);
  if (precision == QStringLiteral("fp8") && recipe != QStringLiteral("per_tensor")) {
    QJsonObject r;
    r[QStringLiteral("name")] = recipe;
    if (recipe != QStringLiteral("te_nvfp4")) r[QStringLiteral("fp8_format")] = key(t_fp8fmt_);
    r[QStringLiteral("weight_2d")] = t_w2d_->isChecked();
    if (recipe == QStringLiteral("te_nvfp4")) {
      r[QStringLiteral("hadamard")] = t_hadamard_->isChecked();
      r[QStringLiteral("stochastic_rounding")] = t_sr_->isChecked();
    }
    if (t_wgrad_hp_->isChecked())
      r[QStringLiteral("overrides")] = QJsonObject{
          {QStringLiteral("wgrad"), QJsonObject{{QStringLiteral("recipe"), QStringLiteral("high_precision")}}}};
    c[QStringLiteral("recipe")] = r;
  } else {
    c[QStringLiteral("scaling")] = QJsonObject{{QStringLiteral("strategy"), key(t_strategy_)},
                                               {QStringLiteral("history_len"), t_history_->value()}};
    c[QStringLiteral("forward_format")] = key(t_fwd_);
    c[QStringLiteral("backward_format")] = key(t_bwd_);
  }
  c[QStringLiteral("batch_size")] = t_batch_->value();
  c[QStringLiteral("seed")] = t_seed_->value();
  if (!t_model_->isTransformer()) {
    c[QStringLiteral("epochs")] = t_epochs_->value();
    c[QStringLiteral("train_limit")] = t_train_limit_->value();
    c[QStringLiteral("test_limit")] = t_test_limit_->value();
  }
  t_model_->writeConfig(&c);
  return c;
}

void TrainingForm::setConfig(const QJsonObject& c) {
  const bool was = updating_;
  updating_ = true;
  if (c.value(QStringLiteral("id")).isString()) t_id_->setText(c.value(QStringLiteral("id")).toString());
  setData(t_precision_, c.value(QStringLiteral("precision")));
  auto setInt = [](QSpinBox* s, const QJsonValue& v) {
    if (v.isDouble()) s->setValue(v.toInt());
  };
  const QJsonValue rv = c.value(QStringLiteral("recipe"));
  if (rv.isString() || rv.isObject()) {
    const QJsonObject r = rv.isObject() ? rv.toObject() : QJsonObject{{QStringLiteral("name"), rv.toString()}};
    const QString name = r.value(QStringLiteral("name")).toString();
    setData(t_recipe_, name);
    setData(t_fp8fmt_, r.value(QStringLiteral("fp8_format")).toString(QStringLiteral("E4M3")));
    t_w2d_->setChecked(r.value(QStringLiteral("weight_2d")).toBool(recipeWeight2dDefault(name)));
    t_hadamard_->setChecked(r.value(QStringLiteral("hadamard")).toBool(true));
    t_sr_->setChecked(r.value(QStringLiteral("stochastic_rounding")).toBool(true));
    t_wgrad_hp_->setChecked(r.value(QStringLiteral("overrides")).toObject().contains(QStringLiteral("wgrad")));
  } else if (c.contains(QStringLiteral("scaling")) || c.contains(QStringLiteral("precision"))) {
    setData(t_recipe_, QStringLiteral("per_tensor"));
    t_wgrad_hp_->setChecked(false);
  }
  const QJsonObject sc = c.value(QStringLiteral("scaling")).toObject();
  setData(t_strategy_, sc.value(QStringLiteral("strategy")));
  setInt(t_history_, sc.value(QStringLiteral("history_len")));
  setData(t_fwd_, c.value(QStringLiteral("forward_format")));
  setData(t_bwd_, c.value(QStringLiteral("backward_format")));
  setInt(t_epochs_, c.value(QStringLiteral("epochs")));
  setInt(t_batch_, c.value(QStringLiteral("batch_size")));
  setInt(t_seed_, c.value(QStringLiteral("seed")));
  setInt(t_train_limit_, c.value(QStringLiteral("train_limit")));
  setInt(t_test_limit_, c.value(QStringLiteral("test_limit")));
  t_model_->readConfig(c);
  updating_ = was;
  updateStates();
  Q_EMIT this->changed();
}

void TrainingForm::updateStates() {
  // The transformer trains for a number of steps on text: no epochs, no image counts.
  for (QWidget* w : std::initializer_list<QWidget*>{t_epochs_, t_train_limit_, t_test_limit_})
    train_form_->setRowVisible(w, !t_model_->isTransformer());
  const bool fp8 = key(t_precision_) == QStringLiteral("fp8");
  const QString recipe = key(t_recipe_);
  const bool per_tensor = recipe == QStringLiteral("per_tensor");
  const bool nvfp4 = recipe == QStringLiteral("te_nvfp4");
  const QString fp32_why = tr("The FP32 baseline quantizes nothing");
  t_recipe_->setEnabled(fp8);
  t_recipe_->setToolTip(fp8 ? tr("How the six GEMM operands of every Linear layer are quantized (docs/training.md, "
                                 "\"Block recipes\")")
                            : fp32_why);
  // A block recipe replaces the strategy and the two formats; the recipe options belong to recipes.
  for (QWidget* w : std::initializer_list<QWidget*>{t_strategy_, t_history_, t_fwd_, t_bwd_})
    train_form_->setRowVisible(w, per_tensor || !fp8);
  for (QWidget* w : std::initializer_list<QWidget*>{t_fp8fmt_, t_w2d_, t_hadamard_, t_sr_, t_wgrad_hp_})
    train_form_->setRowVisible(w, fp8 && !per_tensor);
  for (QWidget* w : std::initializer_list<QWidget*>{t_strategy_, t_fwd_, t_bwd_}) w->setEnabled(fp8);
  const bool delayed = key(t_strategy_).startsWith(QStringLiteral("delayed"));
  t_history_->setEnabled(fp8 && delayed);
  t_history_->setToolTip(!fp8 ? fp32_why
                         : delayed
                             ? tr("L: the scale of step t comes from the amaxes of steps t\u2212L \u2026 t\u22121")
                             : tr("Current scaling keeps no amax history"));
  t_strategy_->setToolTip(fp8 ? tr("Per-tensor scaling of the FP8 GEMM operands (docs/training.md)") : fp32_why);
  t_fp8fmt_->setEnabled(!nvfp4);
  t_fp8fmt_->setToolTip(nvfp4 ? tr("te_nvfp4's elements are E2M1; fp8_format sets the FP8 recipes' formats")
                              : tr("TE recipe fp8_format: E4M3 for every tensor (TE's default) or HYBRID "
                                   "(E5M2 gradients)"));
  t_w2d_->setToolTip(recipe == QStringLiteral("te_float8_block")
                         ? tr("128\u00d7128 weight tiles (TE w_block_scaling_dim = 2, the default)")
                     : recipe == QStringLiteral("te_mxfp8")
                         ? tr("32\u00d732 weight tiles, mx_rceil_2d (TE enable_2d_quantization, default off)")
                         : tr("16\u00d716 weight tiles (TE fp4_2d_quantization, the default)"));
  const QString only_nvfp4 = tr("Only te_nvfp4 has this option (TE NVFP4BlockScaling); %1 has none").arg(recipe);
  const bool rht_cancels = !t_wgrad_hp_->isChecked();
  t_hadamard_->setEnabled(nvfp4 && rht_cancels);
  t_hadamard_->setToolTip(
      !nvfp4         ? only_nvfp4
      : !rht_cancels ? tr("The rotation cancels in dW = (x\u1d40Q)(Q\u1d40g) only when both wgrad operands are NVFP4; "
                          "with the wgrad GEMM in high precision TE applies no RHT")
                     : tr("16-point random Hadamard transform (sign mask 0xD7E8) on wgrad.input and "
                          "wgrad.grad_output before their amax and quantization (TE default: on)"));
  t_sr_->setEnabled(nvfp4);
  t_sr_->setToolTip(nvfp4 ? tr("TE's software stochastic rounding of the E2M1 elements of dgrad.grad_output and "
                               "wgrad.grad_output (TE default: on); reproducible from the run seed")
                          : only_nvfp4);
}

QList<ConfigProblem> TrainingForm::problems() const {
  QList<ConfigProblem> p;
  if (t_id_->text().trimmed().isEmpty()) p << ConfigProblem{tr("Run id"), tr("give the run an id.")};
  QString why;
  if (canonicalTrainingConfig(config(), &why).isEmpty() && !why.isEmpty()) p << ConfigProblem{tr("Training"), why};
  p << ConfigProblem{tr("Training"),
                     t_model_->isTransformer()
                         ? tr("the run trains the transformer on the fortunes text on the CPU into a new session "
                              "file, opened when it finishes; Cancel keeps the steps done")
                         : tr("the run trains on Fashion-MNIST on the CPU into a new session file, opened when it "
                              "finishes"),
                     false};
  return p;
}

QString TrainingForm::runId() const {
  return t_id_->text();
}

bool TrainingForm::isTransformer() const {
  return t_model_->isTransformer();
}

} // namespace fp8lab::ui
