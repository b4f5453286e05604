// The Training tab's model and precision-policy fields: which model trains — the MLP on
// Fashion-MNIST or the tiny transformer language model on text (docs/training.md "The transformer
// language model") with its main knobs — and a precision policy preset, written as the config's
// "policy" rules (docs/training.md "Precision policy": rules by site glob, GEMM and step range).
// The experiment panel lays it out in its Training form and folds its keys into trainingConfig().
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <QWidget>

#include "training/sites.h"

#include <optional>

class QComboBox;
class QFormLayout;
class QLabel;
class QSpinBox;

namespace fp8lab::ui {

/// The "policy" rules of core's preset `id` (training/sites.h policyPresetRules) for a transformer of
/// `layers` blocks (`transformer` false: the MLP) and `steps` warm-up steps, as the config's JSON.
QJsonArray policyRules(const QString& id, bool transformer, int layers, int steps);
/// The preset and warm-up steps that produce `rules` exactly; nullopt when none does.
std::optional<std::pair<QString, int>> policyPresetOf(const QJsonArray& rules, bool transformer, int layers);

class TrainingModelForm : public QWidget {
  Q_OBJECT
public:
  explicit TrainingModelForm(QWidget* parent = nullptr);

  bool isTransformer() const;
  /// Writes the form's keys into `c`: for the transformer "model" {kind, d_model, layers, heads,
  /// context, ffn_hidden, ffn, norm, norm_position} and "steps"; "policy" when a preset other
  /// than none is chosen.
  void writeConfig(QJsonObject* c) const;
  /// Sets the fields from a training config (keys it lacks keep their field); a "policy" that no
  /// preset produces leaves the box at none and returns false.
  bool readConfig(const QJsonObject& c);
  /// The preset chosen ("none", "attn_bf16", ...).
  QString policyPreset() const;
  void setPolicyPreset(const QString& id);

Q_SIGNALS:
  /// A field changed (the panel re-validates).
  void changed();
  /// The model changed between the MLP and the transformer.
  void modelChanged(bool transformer);

private:
  void updateStates();

  bool updating_ = false;
  QFormLayout* form_;
  QComboBox* model_;
  QSpinBox *d_model_, *layers_, *heads_, *context_, *ffn_hidden_, *steps_, *warmup_;
  QComboBox *ffn_, *norm_, *norm_pos_, *policy_;
  QLabel* policy_note_;
};

} // namespace fp8lab::ui
