// Experiment panel: every parameter of a GEMM experiment (GEMM tab) or of one training run
// (Training tab: the per-tensor scaling strategies or one of TE's block recipes), checked in
// place. Invalid
// combinations are explained next to the fields (e.g. E5M2×E5M2 on the GPU) and Run stays off
// until they are fixed. Two groups of slots, as LabPlot's widgets: "changed in the widget"
// (re-validate, emit configChanged) and "changed in the model" (setConfig), with a guard.
#pragma once

#include <QJsonObject>
#include <QStringList>
#include <QWidget>

#include <optional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QFormLayout;
class QStackedWidget;
class QTabWidget;

namespace fp8lab::ui {

class SessionDocument;
class TrainingModelForm;

/// One finding of the validation: which field, and why.
struct ConfigProblem {
  QString field;        ///< the field's label, e.g. "Backend"
  QString reason;       ///< a full sentence
  bool blocking = true; ///< false: a note, Run stays allowed
};

class ExperimentPanel : public QWidget {
  Q_OBJECT
public:
  explicit ExperimentPanel(QWidget* parent = nullptr);

  /// The configuration as JSON (the keys are the CLI's option names; docs/gui.md lists them).
  QJsonObject config() const;
  /// Sets every field from `c` (missing keys keep their value); no configChanged loop.
  void setConfig(const QJsonObject& c);
  /// Writes the canonical GEMM config of the fields (core's gemmConfigJson: what Run runs and
  /// stores, what `fp8lab-cli run` reads) to `fileName`, atomically. False with *why when the
  /// fields have no config (a combination without a preset) or the file cannot be written.
  bool saveConfig(const QString& fileName, QString* why) const;
  /// Sets the fields from a GEMM config file (the same format; older panel forms too). False
  /// with *why, fields unchanged, when the file is not a GEMM config or asks for what the panel
  /// cannot express (two different operand distributions, a B tensor, a preset without panel
  /// choices).
  bool loadConfig(const QString& fileName, QString* why);
  /// The Training tab's run as a training config of one run (docs/training.md keys: id,
  /// precision, recipe {name, fp8_format, weight_2d, hadamard, stochastic_rounding, overrides} or
  /// scaling + forward_format / backward_format, batch_size, seed, policy; the MLP's epochs,
  /// train_limit, test_limit, or the transformer's model {kind, d_model, layers, heads, context,
  /// ffn_hidden, ffn, norm, norm_position} and steps).
  QJsonObject trainingConfig() const;
  /// Sets the Training tab's fields from a training config of that form (missing keys keep
  /// their value).
  void setTrainingConfig(const QJsonObject& c);
  static QJsonObject defaultTrainingConfig();
  /// The tab that Run, Save config… and the problem list act on.
  enum class Tab { Gemm = 0, Training = 1 };
  Tab currentTab() const;
  /// Runs the current tab's experiment: runRequested (GEMM; the window validates and reports)
  /// or trainingRunRequested (Training, when core accepts the config).
  void requestRun();
  void showTab(Tab t);

  /// Back to the default experiment.
  void resetToDefaults();
  static QJsonObject defaultConfig();

  /// Checks `c` without a widget (the same rules the panel shows). `gpu_available` tells whether
  /// the CUDA backend can be picked; `training_runs` the ids of runs whose weights can be used.
  static QList<ConfigProblem> validate(const QJsonObject& c, bool gpu_available, const QStringList& training_runs);
  QList<ConfigProblem> problems() const { return problems_; }
  bool isValid() const;

  void setSession(SessionDocument* s);
  /// Tells the panel whether a GPU exists (the backend box then offers it) and its name.
  void setGpu(bool available, const QString& name);
  /// Whether this build can run experiments (core/experiment present); if not, Run is off and says why.
  void setRunnerAvailable(bool available, const QString& why = {});

  /// Progress display while a run executes (driven by the main window's Job).
  void setRunning(bool running);
  void setProgress(double fraction, const QString& stage);

  /// Live mode (live_experiment.h): whether the Live box is ticked; the line under it (the limit,
  /// the last update) and whether Keep has a live result to add.
  bool isLive() const;
  void setLive(bool on);
  void setLiveStatus(const QString& text, bool can_keep);
  QString liveStatus() const;

Q_SIGNALS:
  void configChanged(const QJsonObject& c);
  void runRequested(const QJsonObject& c);
  /// Run on the Training tab: `config_json` is the canonical one-run training config
  /// (canonicalTrainingConfig), `run_id` its id.
  void trainingRunRequested(const QByteArray& config_json, const QString& run_id);
  void cancelRequested();
  /// The Live box was ticked or cleared.
  void liveToggled(bool on);
  /// Keep (Ctrl+K): add the live result shown to the session.
  void keepRequested();

private:
  void onWidgetChanged(); // "changed in the widget"
  void updateVisibility();
  void revalidate();
  /// Lists the table's presets of the current strategy in the Preset box and selects `name`
  /// (a pow2 twin selects its partner and ticks the box); the first one when absent.
  void fillPresets(const QString& name);
  /// Enables the power-of-two box when the preset has a twin (else shows, disabled, what the
  /// preset does, with the reason); `want` sets it when given.
  void updatePow2(std::optional<bool> want);
  /// The preset Run uses: the Preset box's entry, or its twin when the box is ticked.
  QString resolvedPreset() const;
  QWidget* buildTrainingTab();
  /// Enables the Training tab's fields that apply to its precision and recipe; a disabled one
  /// says why in its tooltip.
  void updateTrainingStates();
  QList<ConfigProblem> trainingProblems() const;

  bool updating_ = false; // guard against loops while setConfig() fills the widgets
  bool gpu_ = false;
  QString gpu_name_;
  bool runner_ = false;
  QString runner_why_;
  SessionDocument* session_ = nullptr;
  QList<ConfigProblem> problems_;

  QComboBox *fmt_a_, *fmt_b_, *scaling_, *preset_, *algo_, *accum_, *output_, *input_, *dist_, *train_run_, *backend_;
  QSpinBox *history_, *margin_, *m_, *n_, *k_, *seed_, *promo_, *fast_bits_;
  QCheckBox* pow2_;
  QDoubleSpinBox* sigma_;
  // Epilogue: D = alpha·(A·B) + beta·C + bias.
  QDoubleSpinBox *alpha_, *beta_, *c_scale_, *bias_scale_;
  QSpinBox *c_seed_, *bias_seed_;
  QCheckBox* bias_;
  QTabWidget* tabs_;
  // Training tab.
  QFormLayout* train_form_;
  QLineEdit* t_id_;
  QComboBox *t_precision_, *t_recipe_, *t_strategy_, *t_fwd_, *t_bwd_, *t_fp8fmt_;
  QSpinBox *t_history_, *t_epochs_, *t_batch_, *t_seed_, *t_train_limit_, *t_test_limit_;
  QCheckBox *t_w2d_, *t_hadamard_, *t_sr_, *t_wgrad_hp_;
  TrainingModelForm* t_model_; // the model (MLP / transformer) and the precision policy
  QLineEdit *import_path_, *import_path_b_;
  QPushButton* browse_;
  QFormLayout* form_;
  QLabel* problems_label_;
  QPushButton* run_;
  QPushButton* cancel_;
  QCheckBox* live_;
  QLabel* live_status_;
  QPushButton* keep_;
  QProgressBar* progress_;
  QLabel* stage_;
};

} // namespace fp8lab::ui
