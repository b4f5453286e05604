#include "forms/training_model_form.h"

#include "experiment/training/training_models.h"
#include "experiment/training/training_schema.h"
#include "forms/panel_fields.h"
#include "training/training_session.h"

#include <QComboBox>
#include <QJsonDocument>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>
#include <QStandardItemModel>

#include <initializer_list>

namespace fp8lab::ui {

QJsonArray policyRules(const QString& id, bool transformer, int layers, int steps) {
  PrecisionPolicy p;
  p.rules = policyPresetRules(id.toStdString(), transformer ? layers : 0, steps);
  return QJsonDocument::fromJson(QByteArray::fromStdString(policyJson(p))).array();
}

std::optional<std::pair<QString, int>> policyPresetOf(const QJsonArray& rules, bool transformer, int layers) {
  if (rules.isEmpty()) return std::make_pair(QStringLiteral("none"), 0);
  int steps = 0;
  for (const QJsonValue& r : rules)
    if (r.toObject().contains(QStringLiteral("until_step")))
      steps = r.toObject().value(QStringLiteral("until_step")).toInt();
  for (const PolicyPreset& p : policyPresets()) {
    if (p.transformer && !transformer) continue;
    const QString id = QString::fromStdString(p.id);
    if (policyRules(id, transformer, layers, steps) == rules) return std::make_pair(id, p.uses_steps ? steps : 0);
  }
  return std::nullopt;
}

TrainingModelForm::TrainingModelForm(QWidget* parent) : QWidget(parent) {
  updating_ = true; // filling the boxes is no edit
  form_ = new QFormLayout(this);
  form_->setContentsMargins(0, 0, 0, 0);
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form_->setLabelAlignment(Qt::AlignRight);
  auto edited = [this] {
    if (updating_) return;
    updateStates();
    Q_EMIT changed();
  };
  auto combo = [&](const QString& name) {
    auto* c = new QComboBox(this);
    c->setObjectName(name);
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    c->setMinimumContentsLength(6);
    connect(c, &QComboBox::currentIndexChanged, this, edited);
    return c;
  };
  auto spin = [&](const QString& name, int lo, int hi, int val, const QString& tip) {
    auto* s = new QSpinBox(this);
    s->setObjectName(name);
    s->setRange(lo, hi);
    s->setValue(val);
    s->setToolTip(tip);
    connect(s, &QSpinBox::valueChanged, this, edited);
    return s;
  };

  model_ = combo(QStringLiteral("trainModel"));
  for (const TrainingModelKind* k : trainingModelKinds()) { // the registry (training_models.h)
    model_->addItem(QString::fromStdString(k->title), QString::fromStdString(k->kind));
    model_->setItemData(model_->count() - 1, QString::fromStdString(k->description), Qt::ToolTipRole);
  }
  form_->addRow(tr("Model:"), model_);
  // Ranges, defaults and tooltips: the training schema's (core/experiment/training/training_schema.h).
  auto lmSpin = [&](const QString& name, const char* key, int def = 0) {
    QSpinBox* s = spin(name, 0, 1, 0, {});
    fields::fromTrainingSchema(s, trainingParam(key, "transformer"), def);
    return s;
  };
  d_model_ = lmSpin(QStringLiteral("dModel"), "model.d_model");
  form_->addRow(tr("d_model:"), d_model_);
  layers_ = lmSpin(QStringLiteral("lmLayers"), "model.layers");
  form_->addRow(tr("Blocks:"), layers_);
  heads_ = lmSpin(QStringLiteral("heads"), "model.heads");
  form_->addRow(tr("Heads:"), heads_);
  context_ = lmSpin(QStringLiteral("context"), "model.context");
  form_->addRow(tr("Context:"), context_);
  ffn_hidden_ = lmSpin(QStringLiteral("ffnHidden"), "model.ffn_hidden", 4 * d_model_->value());
  form_->addRow(tr("FFN width:"), ffn_hidden_);
  ffn_ = combo(QStringLiteral("ffn"));
  fields::fromTrainingChoice(
      ffn_, trainingParam("model.ffn", "transformer"),
      {{QStringLiteral("gelu"), QStringLiteral("GELU")}, {QStringLiteral("swiglu"), QStringLiteral("SwiGLU")}});
  form_->addRow(tr("FFN:"), ffn_);
  norm_ = combo(QStringLiteral("norm"));
  fields::fromTrainingChoice(norm_, trainingParam("model.norm", "transformer"),
                             {{QStringLiteral("layernorm"), QStringLiteral("LayerNorm")},
                              {QStringLiteral("rmsnorm"), QStringLiteral("RMSNorm")}});
  form_->addRow(tr("Norm:"), norm_);
  norm_pos_ = combo(QStringLiteral("normPosition"));
  fields::fromTrainingChoice(norm_pos_, trainingParam("model.norm_position", "transformer"),
                             {{QStringLiteral("pre"), tr("pre-norm (GPT-2)")},
                              {QStringLiteral("post"), tr("post-norm (original Transformer)")}});
  form_->addRow(tr("Norm position:"), norm_pos_);
  steps_ = lmSpin(QStringLiteral("lmSteps"), "steps");
  form_->addRow(tr("Steps:"), steps_);

  policy_ = combo(QStringLiteral("policy"));
  for (const PolicyPreset& p : policyPresets()) {
    policy_->addItem(QString::fromStdString(p.name), QString::fromStdString(p.id));
    policy_->setItemData(policy_->count() - 1, QString::fromStdString(p.explanation), Qt::ToolTipRole);
  }
  policy_->setToolTip(tr("Which sites, GEMMs and steps run in high precision (the config's \"policy\"; "
                         "docs/training.md \u201cPrecision policy\u201d)"));
  form_->addRow(tr("Policy:"), policy_);
  warmup_ = spin(QStringLiteral("policySteps"), 1, 1000000, 200,
                 tr("N: the steps the preset keeps in high precision (until_step)"));
  warmup_->setSuffix(tr(" steps"));
  form_->addRow(tr("Warm-up:"), warmup_);
  policy_note_ = new QLabel(this);
  policy_note_->setObjectName(QStringLiteral("policyRules"));
  policy_note_->setWordWrap(true);
  policy_note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  form_->addRow(QString(), policy_note_);

  connect(model_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) Q_EMIT modelChanged(isTransformer());
  });
  updating_ = false;
  updateStates();
}

bool TrainingModelForm::isTransformer() const {
  return model_->currentData().toString() == QStringLiteral("transformer");
}

QString TrainingModelForm::policyPreset() const {
  return policy_->currentData().toString();
}

void TrainingModelForm::setPolicyPreset(const QString& id) {
  const int i = policy_->findData(id);
  if (i >= 0) policy_->setCurrentIndex(i);
}

void TrainingModelForm::writeConfig(QJsonObject* c) const {
  const bool lm = isTransformer();
  if (lm) {
    (*c)[QStringLiteral("model")] = QJsonObject{{QStringLiteral("kind"), QStringLiteral("transformer")},
                                                {QStringLiteral("d_model"), d_model_->value()},
                                                {QStringLiteral("layers"), layers_->value()},
                                                {QStringLiteral("heads"), heads_->value()},
                                                {QStringLiteral("context"), context_->value()},
                                                {QStringLiteral("ffn_hidden"), ffn_hidden_->value()},
                                                {QStringLiteral("ffn"), ffn_->currentData().toString()},
                                                {QStringLiteral("norm"), norm_->currentData().toString()},
                                                {QStringLiteral("norm_position"), norm_pos_->currentData().toString()}};
    (*c)[QStringLiteral("steps")] = steps_->value();
  }
  const QJsonArray rules = policyRules(policyPreset(), lm, layers_->value(), warmup_->value());
  if (!rules.isEmpty()) (*c)[QStringLiteral("policy")] = rules;
}

bool TrainingModelForm::readConfig(const QJsonObject& c) {
  const bool was = updating_;
  updating_ = true;
  auto setInt = [](QSpinBox* s, const QJsonValue& v) {
    if (v.isDouble()) s->setValue(v.toInt());
  };
  auto setData = [](QComboBox* b, const QJsonValue& v) {
    const int i = b->findData(v.toString().toLower());
    if (v.isString() && i >= 0) b->setCurrentIndex(i);
  };
  const bool lm = c.value(QStringLiteral("model")).isObject();
  if (lm || c.contains(QStringLiteral("precision")) || c.contains(QStringLiteral("epochs")))
    model_->setCurrentIndex(model_->findData(lm ? QStringLiteral("transformer") : QStringLiteral("mlp")));
  const QJsonObject m = c.value(QStringLiteral("model")).toObject();
  setInt(d_model_, m.value(QStringLiteral("d_model")));
  setInt(layers_, m.value(QStringLiteral("layers")));
  setInt(heads_, m.value(QStringLiteral("heads")));
  setInt(context_, m.value(QStringLiteral("context")));
  setInt(ffn_hidden_, m.value(QStringLiteral("ffn_hidden")));
  setData(ffn_, m.value(QStringLiteral("ffn")));
  setData(norm_, m.value(QStringLiteral("norm")));
  setData(norm_pos_, m.value(QStringLiteral("norm_position")));
  setInt(steps_, c.value(QStringLiteral("steps")));
  bool known = true;
  if (c.contains(QStringLiteral("policy")) || c.contains(QStringLiteral("precision"))) {
    const auto p = policyPresetOf(c.value(QStringLiteral("policy")).toArray(), lm, layers_->value());
    known = p.has_value();
    policy_->setCurrentIndex(policy_->findData(p ? p->first : QStringLiteral("none")));
    if (p && p->second > 0) warmup_->setValue(p->second);
  }
  updating_ = was;
  updateStates();
  return known;
}

void TrainingModelForm::updateStates() {
  const bool lm = isTransformer();
  for (QWidget* w : std::initializer_list<QWidget*>{d_model_, layers_, heads_, context_, ffn_hidden_, ffn_, norm_,
                                                    norm_pos_, steps_})
    form_->setRowVisible(w, lm);
  // The attention presets name transformer sites; the MLP has none.
  if (auto* items = qobject_cast<QStandardItemModel*>(policy_->model()))
    for (int i = 0; i < policy_->count(); ++i) {
      const PolicyPreset& p = policyPresets()[size_t(i)];
      items->item(i)->setEnabled(lm || !p.transformer);
      items->item(i)->setToolTip(
          lm || !p.transformer
              ? QString::fromStdString(p.explanation)
              : tr("The MLP has no attention and no blocks: %1").arg(QString::fromStdString(p.explanation)));
    }
  if (!lm && policyPresets()[size_t(std::max(0, policy_->currentIndex()))].transformer) {
    const bool was = updating_;
    updating_ = true;
    policy_->setCurrentIndex(0);
    updating_ = was;
  }
  const PolicyPreset& p = policyPresets()[size_t(std::max(0, policy_->currentIndex()))];
  form_->setRowVisible(warmup_, p.uses_steps);
  const QJsonArray rules = policyRules(QString::fromStdString(p.id), lm, layers_->value(), warmup_->value());
  QStringList lines;
  for (const QJsonValue& v : rules) {
    const QJsonObject r = v.toObject();
    QString line = r.value(QStringLiteral("sites")).toString();
    if (r.contains(QStringLiteral("gemms"))) {
      QStringList g;
      for (const QJsonValue& x : r.value(QStringLiteral("gemms")).toArray()) g << x.toString();
      line += QLatin1Char(' ') + g.join(QLatin1Char(','));
    }
    line += QStringLiteral(" \u2192 ") + r.value(QStringLiteral("precision")).toString();
    if (r.contains(QStringLiteral("until_step")))
      line += tr(" (steps 0\u2026%1)").arg(r.value(QStringLiteral("until_step")).toInt() - 1);
    lines << line;
  }
  policy_note_->setText(lines.isEmpty() ? QString() : tr("Rules: %1").arg(lines.join(QStringLiteral("; "))));
  policy_note_->setVisible(!lines.isEmpty());
  form_->setRowVisible(policy_note_, !lines.isEmpty());
}

} // namespace fp8lab::ui
