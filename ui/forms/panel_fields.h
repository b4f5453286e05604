// Small helpers shared by the experiment panel's forms (gemm_form.cpp, training_form.cpp): combo
// boxes keyed by their item data, spin boxes ranged by the parameter schema, and the problem
// type the forms' validation returns.
#pragma once

#include "experiment/param_schema.h"

#include <algorithm>

#include <QComboBox>
#include <QMap>
#include <QSignalBlocker>
#include <QJsonValue>
#include <QObject>
#include <QSpinBox>
#include <QWidget>
#include <QString>
#include <QStringList>

namespace fp8lab::ui {

/// One finding of a form's validation: which field, and why.
struct ConfigProblem {
  QString field;        ///< the field's label, e.g. "Backend"
  QString reason;       ///< a full sentence
  bool blocking = true; ///< false: a note, Run stays allowed
};

namespace fields {

/// The FP8 element formats an operand takes with any scaling (OCP FP8, the AMD FNUZ pair).
inline const QStringList& fp8Formats() {
  static const QStringList f = {QStringLiteral("E4M3FN"), QStringLiteral("E5M2"), QStringLiteral("E4M3FNUZ"),
                                QStringLiteral("E5M2FNUZ")};
  return f;
}
/// The element formats of OCP MX v1.0 (FP6/FP4 only with MX block scaling).
inline const QStringList& mxElementFormats() {
  static const QStringList f = {QStringLiteral("E4M3FN"), QStringLiteral("E5M2"), QStringLiteral("E2M3"),
                                QStringLiteral("E3M2"), QStringLiteral("E2M1")};
  return f;
}

/// A combo box entry: its key (item data) and its label.
struct Item {
  const char* key;
  const char* text;
};
template <size_t N> void fill(QComboBox* b, const Item (&items)[N]) {
  for (const Item& it : items) b->addItem(QObject::tr(it.text), QString::fromLatin1(it.key));
}

/// Selects the entry whose data (or, failing that, text) is `v`; nothing when `v` is no string
/// or names no entry.
inline void setData(QComboBox* b, const QJsonValue& v) {
  if (!v.isString()) return;
  int i = b->findData(v.toString());
  if (i < 0) i = b->findText(v.toString());
  if (i >= 0) b->setCurrentIndex(i);
}
/// The current entry's key (its data, or its text when it has none).
inline QString key(const QComboBox* b) {
  return b->currentData().isValid() ? b->currentData().toString() : b->currentText();
}

/// A combo box of a form: named `name` (tests and settings find it by that), as wide as its
/// contents with at least 6 characters.
inline QComboBox* comboBox(QWidget* parent, const QString& name) {
  auto* c = new QComboBox(parent);
  c->setObjectName(name);
  c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  c->setMinimumContentsLength(6);
  return c;
}
/// A spin box of a form: named `name`, range [lo, hi], value `val`, `suffix` after the number.
inline QSpinBox* spinBox(QWidget* parent, const QString& name, int lo, int hi, int val, const QString& suffix = {}) {
  auto* s = new QSpinBox(parent);
  s->setObjectName(name);
  s->setRange(lo, hi);
  s->setValue(val);
  s->setSuffix(suffix);
  return s;
}

/// A spin box's range and tooltip from its parameter schema entry (param_schema.h): the range
/// every front end takes, the help with its source.
inline void fromSchema(QSpinBox* s, const ParamSpec& p) {
  s->setRange(int(p.min), int(p.max));
  s->setToolTip(QString::fromStdString(paramHelp(p, false)));
}

/// A spin box's range, tooltip and value from a training schema entry (training_schema.h):
/// fromSchema, and the entry's default (`def` when the entry computes its own, as ffn_hidden does).
inline void fromTrainingSchema(QSpinBox* s, const ParamSpec& p, int def = 0) {
  fromSchema(s, p);
  s->setValue(p.def.empty() ? def : std::stoi(p.def));
}

/// A combo box's items, tooltip and current item from a choice entry of the training schema
/// (training_schema.h): one item per choice (data: the canonical value the config takes; text:
/// `labels` of it, else the value; item tooltip: `tips` of it, when given), the entry's help as the
/// box's tooltip, its default selected.
inline void fromTrainingChoice(QComboBox* c, const ParamSpec& p, const QMap<QString, QString>& labels = {},
                               const QMap<QString, QString>& tips = {}) {
  const QSignalBlocker block(c);
  c->clear();
  for (const std::string& v : p.choices) {
    const QString key = QString::fromStdString(v);
    c->addItem(labels.value(key, key), key);
    if (tips.contains(key)) c->setItemData(c->count() - 1, tips.value(key), Qt::ToolTipRole);
  }
  c->setToolTip(QString::fromStdString(p.help));
  c->setCurrentIndex(std::max(0, c->findData(QString::fromStdString(p.def))));
}

/// "M = 0 is out of range [1, 1048576]." when `v` lies outside the entry's range, else "".
inline QString rangeProblem(const QString& name, double v, const ParamSpec& p) {
  if (v >= p.min && v <= p.max) return {};
  return QObject::tr("%1 = %2 is out of range %3.").arg(name).arg(v).arg(QString::fromStdString(p.rangeText()));
}

} // namespace fields
} // namespace fp8lab::ui
