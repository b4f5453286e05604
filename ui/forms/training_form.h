// The experiment panel's Training tab: one training run — the model and precision policy
// (TrainingModelForm), the precision, a TE block recipe or the per-tensor strategies with their
// formats, and the run's sizes — read and written as a training config of one run
// (docs/training.md; core/experiment/training/training_config.h checks it).
#pragma once

#include "forms/panel_fields.h"

#include <QJsonObject>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QFormLayout;
class QLineEdit;
class QSpinBox;

namespace fp8lab::ui {

class TrainingModelForm;

class TrainingForm : public QWidget {
  Q_OBJECT
public:
  explicit TrainingForm(QWidget* parent = nullptr);

  /// The run as a training config of one run (docs/training.md keys: id, precision, recipe
  /// {name, fp8_format, weight_2d, hadamard, stochastic_rounding, overrides} or scaling +
  /// forward_format / backward_format, batch_size, seed, policy; the MLP's epochs, train_limit,
  /// test_limit, or the transformer's model {kind, d_model, layers, heads, context, ffn_hidden,
  /// ffn, norm, norm_position} and steps).
  QJsonObject config() const;
  /// Sets the fields from a training config of that form (missing keys keep their value).
  void setConfig(const QJsonObject& c);
  /// The MLP run the tab starts with: FP8 with Flax's delayed scaling (history 1024), E4M3FN
  /// forward, E5M2 backward, 3 epochs, batch 128, seed 1, every image.
  static QJsonObject defaultConfig();
  /// What stops the run (no id, core refusing the config) and a note of where it trains.
  QList<ConfigProblem> problems() const;
  QString runId() const;
  bool isTransformer() const;

Q_SIGNALS:
  /// A field changed (not while setConfig() fills them).
  void changed();

private:
  /// Enables the fields that apply to the precision and recipe; a disabled one says why in its
  /// tooltip.
  void updateStates();

  bool updating_ = false;
  QFormLayout* train_form_;
  QLineEdit* t_id_;
  QComboBox *t_precision_, *t_recipe_, *t_strategy_, *t_fwd_, *t_bwd_, *t_fp8fmt_;
  QSpinBox *t_history_, *t_epochs_, *t_batch_, *t_seed_, *t_train_limit_, *t_test_limit_;
  QCheckBox *t_w2d_, *t_hadamard_, *t_sr_, *t_wgrad_hp_;
  TrainingModelForm* t_model_; // the model (MLP / transformer) and the precision policy
};

} // namespace fp8lab::ui
