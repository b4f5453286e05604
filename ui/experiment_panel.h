// Experiment panel: every parameter of a GEMM experiment, checked in place. Invalid
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

namespace fp8lab::ui {

class SessionDocument;

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

Q_SIGNALS:
  void configChanged(const QJsonObject& c);
  void runRequested(const QJsonObject& c);
  void cancelRequested();

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
  QLineEdit *import_path_, *import_path_b_;
  QPushButton* browse_;
  QFormLayout* form_;
  QLabel* problems_label_;
  QPushButton* run_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* stage_;
};

} // namespace fp8lab::ui
