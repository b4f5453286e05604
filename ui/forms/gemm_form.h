// The experiment panel's GEMM tab: every parameter of one GEMM experiment, read and written as
// the canonical GEMM config (core/experiment/gemm/gemm_config.h: the keys and spellings of
// `fp8lab-cli run` and `gemm --json`, what a run stores), plus the one choice that is not part
// of the experiment, the backend (as `--backend`). Ranges and tooltips come from the parameter
// schema (param_schema.h), scaling presets from core's table, accumulation presets from
// accumulation_preset.h.
#pragma once

#include "forms/panel_fields.h"

#include <QJsonObject>
#include <QWidget>

#include <optional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace fp8lab::ui {

class SessionDocument;

class GemmForm : public QWidget {
  Q_OBJECT
public:
  explicit GemmForm(QWidget* parent = nullptr);

  /// The canonical GEMM config of the fields: "type": "gemm", format_a, format_b, scaling (the
  /// preset, its power-of-two twin when that box is ticked), seed, accumulation_preset or
  /// accumulation with the parameters its model reads, output, alpha, beta, "c" (exactly when
  /// beta ≠ 0 in float32, as parseGemmConfig requires), "bias" when ticked; the operands: m, k, n
  /// and a = b = {distribution, scale} for generated data; {"tensor": spec} for an imported A or
  /// B (the dimensions a tensor fixes left out); B = trainedKernelSpec(session, run) for trained
  /// weights. What cannot run yet is written as chosen, for validate() to refuse: a delayed
  /// preset (a single GEMM has no amax history), the import source without a file ("a":
  /// {"tensor": ""}).
  QJsonObject config() const;
  /// Sets the fields from a canonical GEMM config. Absent keys take the parser's defaults
  /// (GemmExperimentConfig), except that the C fields keep their values when there is no "c"
  /// (they are read only when beta ≠ 0). Keys the form has no field for are ignored: use
  /// loadCanonical() for a file, which refuses them.
  void setConfig(const QJsonObject& c);
  /// The form's starting experiment: 256 × 1024 × 256 (M × K × N) E4M3FN × E4M3FN, te_current,
  /// split accumulation every 128, FP32 output, normal operands of scale 1, seed 42.
  static QJsonObject defaultConfig();
  /// Sets the fields from the text of a GEMM config file (any spelling core reads, older panel
  /// forms too). False with *why, fields unchanged, when it is not one, or asks for what the
  /// fields cannot express (two different operand distributions, a transposed tensor, a preset a
  /// GEMM cannot take, tile / store_* / output_quant_scale keys).
  bool loadCanonical(const QByteArray& json, QString* why);

  /// "auto", "cpu" or "cuda": core's backend policy (gemm/backend_policy.h), as --backend.
  QString backend() const;
  void setBackend(const QString& backend);

  /// Checks a canonical GEMM config without a widget, with the rules the form shows: formats
  /// against the scaling, the schema's ranges, memory, the tensor files, the training run of
  /// trained weights (`training_runs`: the session's training run ids), core's parser, and for
  /// `backend` "cuda" what cuBLASLt cannot run (`gpu_available`: a GPU was found).
  static QList<ConfigProblem> validate(const QJsonObject& c, const QString& backend, bool gpu_available,
                                       const QStringList& training_runs);

  /// The session whose training runs the "Trained weights of a run" source lists (and whose file
  /// holds their weights).
  void setSession(SessionDocument* s);
  /// Whether a GPU exists (the backend box names it).
  void setGpu(bool available, const QString& name);

  /// Live mode (live_experiment.h): the Live box, the status line under it, Keep.
  bool isLive() const;
  void setLive(bool on);
  void setLiveStatus(const QString& text, bool can_keep);
  QString liveStatus() const;

Q_SIGNALS:
  /// A field changed (not while setConfig() fills them).
  void changed();
  /// The training runs of the session changed (the validation's input).
  void trainingRunsChanged();
  void liveToggled(bool on);
  void keepRequested();

private:
  void buildLiveRow();
  void onWidgetChanged();
  void updateVisibility();
  /// Lists the table's presets of the current strategy in the Preset box and selects `name`
  /// (a pow2 twin selects its partner and ticks the box); the first one when absent.
  void fillPresets(const QString& name);
  /// Enables the power-of-two box when the preset has a twin (else shows, disabled, what the
  /// preset does, with the reason); `want` sets it when given.
  void updatePow2(std::optional<bool> want);
  /// The preset Run uses: the Preset box's entry, or its twin when the box is ticked.
  QString resolvedPreset() const;

  bool updating_ = false; // guard against loops while setConfig() fills the widgets
  SessionDocument* session_ = nullptr;

  QComboBox *fmt_a_, *fmt_b_, *scaling_, *preset_, *accum_, *output_, *input_, *dist_, *train_run_, *backend_;
  QSpinBox *m_, *n_, *k_, *seed_, *promo_, *fast_bits_;
  QCheckBox* pow2_;
  QDoubleSpinBox* sigma_;
  // Epilogue: D = alpha·(A·B) + beta·C + bias.
  QDoubleSpinBox *alpha_, *beta_, *c_scale_, *bias_scale_;
  QSpinBox *c_seed_, *bias_seed_;
  QCheckBox* bias_;
  QLineEdit *import_path_, *import_path_b_;
  QFormLayout* form_;
  QCheckBox* live_;
  QLabel* live_status_;
  QPushButton* keep_;
};

} // namespace fp8lab::ui
