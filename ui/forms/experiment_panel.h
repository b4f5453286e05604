// Experiment panel: a GEMM experiment (GEMM tab, GemmForm) or one training run (Training tab,
// TrainingForm), checked in place, with Run / Cancel, progress and Save / Load config. Invalid
// combinations are explained under the tabs (e.g. E5M2×E5M2 on the GPU) and Run stays off
// until they are fixed. As LabPlot's widgets, the forms separate "changed in the widget"
// (re-validate, emit configChanged) from "changed in the model" (setConfig), with a guard.
#pragma once

#include "forms/panel_fields.h"
#include "forms/training_request.h"

#include <QJsonObject>
#include <QStringList>
#include <QWidget>

class QLabel;
class QProgressBar;
class QPushButton;
class QTabWidget;

namespace fp8lab::ui {

class GemmForm;
class SessionDocument;
class TrainingForm;

class ExperimentPanel : public QWidget {
  Q_OBJECT
public:
  explicit ExperimentPanel(QWidget* parent = nullptr);

  /// The GEMM tab's experiment as the canonical GEMM config (GemmForm::config(): the keys and
  /// spellings of `fp8lab-cli run` and `gemm --json`, what a run stores).
  QJsonObject config() const;
  /// Sets the GEMM tab's fields from a canonical GEMM config (GemmForm::setConfig()); no
  /// configChanged loop.
  void setConfig(const QJsonObject& c);
  /// Where the GEMM runs: "auto", "cpu" or "cuda" (as fp8lab-cli --backend; not part of the
  /// config).
  QString backend() const;
  void setBackend(const QString& backend);
  /// Writes the canonical GEMM config of the fields (core's gemmConfigJson: what Run runs and
  /// stores, what `fp8lab-cli run` reads) to `fileName`, atomically. False with *why when the
  /// fields have no config (a combination without a preset) or the file cannot be written.
  bool saveConfig(const QString& fileName, QString* why) const;
  /// Sets the fields from a GEMM config file (the same format; older panel forms too). False
  /// with *why, fields unchanged, when the file is not a GEMM config or asks for what the panel
  /// cannot express (two different operand distributions, a B tensor, a preset without panel
  /// choices).
  bool loadConfig(const QString& fileName, QString* why);
  /// The Training tab's run as a training config of one run (TrainingForm::config()).
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

  /// Checks a canonical GEMM config without a widget (GemmForm::validate: the rules the panel
  /// shows). `backend` as backend(); `gpu_available` tells whether the CUDA backend can be
  /// picked; `training_runs` the ids of runs whose weights can be used.
  static QList<ConfigProblem> validate(const QJsonObject& c, const QString& backend, bool gpu_available,
                                       const QStringList& training_runs);
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
  /// Run on the Training tab: the tab's config as core parsed it (trainingRequest), `run_id` its
  /// run's id.
  void trainingRunRequested(const fp8lab::ui::TrainingRequest& request, const QString& run_id);
  void cancelRequested();
  /// The Live box was ticked or cleared.
  void liveToggled(bool on);
  /// Keep (Ctrl+K): add the live result shown to the session.
  void keepRequested();

private:
  void revalidate();

  bool gpu_ = false;
  bool runner_ = false;
  QString runner_why_;
  SessionDocument* session_ = nullptr;
  QList<ConfigProblem> problems_;

  GemmForm* gemm_;
  TrainingForm* training_;
  QTabWidget* tabs_;
  QLabel* problems_label_;
  QPushButton* run_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* stage_;
};

} // namespace fp8lab::ui
