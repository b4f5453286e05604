#include "forms/experiment_panel.h"

#include "forms/experiment_runner.h"
#include "forms/gemm_form.h"
#include "session/session_document.h"
#include "forms/training_form.h"

#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QTabWidget>
#include <QVBoxLayout>

namespace fp8lab::ui {

namespace {
/// `w` in a vertical scroll area (the dock is narrow and short).
QScrollArea* scrolled(QWidget* w, QWidget* parent) {
  auto* scroll = new QScrollArea(parent);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setWidget(w);
  return scroll;
}
} // namespace

ExperimentPanel::ExperimentPanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("ExperimentPanel"));
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(4, 4, 4, 4);
  gemm_ = new GemmForm;
  gemm_->setObjectName(QStringLiteral("gemmForm"));
  training_ = new TrainingForm;
  training_->setObjectName(QStringLiteral("trainingForm"));
  tabs_ = new QTabWidget(this);
  tabs_->setObjectName(QStringLiteral("experimentTabs"));
  tabs_->addTab(scrolled(gemm_, this), tr("GEMM"));
  tabs_->addTab(scrolled(training_, this), tr("Training"));
  connect(tabs_, &QTabWidget::currentChanged, this, [this] { revalidate(); });
  outer->addWidget(tabs_, 1);
  connect(gemm_, &GemmForm::changed, this, [this] {
    revalidate();
    Q_EMIT configChanged(config());
  });
  connect(gemm_, &GemmForm::trainingRunsChanged, this, [this] { revalidate(); });
  connect(gemm_, &GemmForm::liveToggled, this, &ExperimentPanel::liveToggled);
  connect(gemm_, &GemmForm::keepRequested, this, &ExperimentPanel::keepRequested);
  connect(training_, &TrainingForm::changed, this, [this] { revalidate(); });

  problems_label_ = new QLabel(this);
  problems_label_->setObjectName(QStringLiteral("problems"));
  problems_label_->setWordWrap(true);
  problems_label_->setTextFormat(Qt::RichText);
  outer->addWidget(problems_label_);

  auto* runRow = new QHBoxLayout;
  run_ = new QPushButton(QIcon(QStringLiteral(":/fp8lab/icons/run.svg")), tr("Run"), this);
  run_->setObjectName(QStringLiteral("runButton"));
  run_->setToolTip(tr("Run the experiment in the background (Ctrl+R); the result is added to the session"));
  cancel_ = new QPushButton(QIcon(QStringLiteral(":/fp8lab/icons/stop.svg")), tr("Cancel"), this);
  cancel_->setObjectName(QStringLiteral("cancelButton"));
  cancel_->setEnabled(false);
  runRow->addWidget(run_, 1);
  runRow->addWidget(cancel_);
  outer->addLayout(runRow);
  auto* configRow = new QHBoxLayout;
  auto* saveCfg = new QPushButton(tr("Save config\u2026"), this);
  saveCfg->setObjectName(QStringLiteral("saveConfigButton"));
  saveCfg->setToolTip(tr("Write this experiment as a config file (the format of fp8lab-cli run and of the runs' "
                         "stored configs)"));
  auto* loadCfg = new QPushButton(tr("Load config\u2026"), this);
  loadCfg->setObjectName(QStringLiteral("loadConfigButton"));
  loadCfg->setToolTip(tr("Set the fields from a GEMM or a one-run training config file (fp8lab-cli run's format)"));
  configRow->addWidget(saveCfg);
  configRow->addWidget(loadCfg);
  configRow->addStretch(1);
  outer->addLayout(configRow);
  connect(saveCfg, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getSaveFileName(this, tr("Save experiment config"), QStringLiteral("gemm.json"),
                                                   tr("Experiment configs (*.json)"));
    QString why;
    if (!f.isEmpty() && !saveConfig(f, &why)) problems_label_->setText(why.toHtmlEscaped());
  });
  connect(loadCfg, &QPushButton::clicked, this, [this] {
    const QString f =
        QFileDialog::getOpenFileName(this, tr("Load experiment config"), QString(), tr("Experiment configs (*.json)"));
    QString why;
    if (!f.isEmpty() && !loadConfig(f, &why)) problems_label_->setText(why.toHtmlEscaped());
  });
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1000);
  progress_->setTextVisible(true);
  progress_->setFormat(QStringLiteral("%p%"));
  progress_->setVisible(false);
  outer->addWidget(progress_);
  stage_ = new QLabel(this);
  stage_->setVisible(false);
  outer->addWidget(stage_);

  connect(run_, &QPushButton::clicked, this, [this] {
    if (isValid() && runner_) requestRun();
  });
  connect(cancel_, &QPushButton::clicked, this, &ExperimentPanel::cancelRequested);
  revalidate();
}

QJsonObject ExperimentPanel::config() const {
  return gemm_->config();
}

void ExperimentPanel::setConfig(const QJsonObject& c) {
  gemm_->setConfig(c);
  revalidate();
}

QJsonObject ExperimentPanel::defaultConfig() {
  return GemmForm::defaultConfig();
}

QString ExperimentPanel::backend() const {
  return gemm_->backend();
}

void ExperimentPanel::setBackend(const QString& backend) {
  gemm_->setBackend(backend);
}

QJsonObject ExperimentPanel::trainingConfig() const {
  return training_->config();
}

void ExperimentPanel::setTrainingConfig(const QJsonObject& c) {
  training_->setConfig(c);
  revalidate();
}

QJsonObject ExperimentPanel::defaultTrainingConfig() {
  return TrainingForm::defaultConfig();
}

QList<ConfigProblem> ExperimentPanel::validate(const QJsonObject& c, const QString& backend, bool gpu_available,
                                               const QStringList& training_runs) {
  return GemmForm::validate(c, backend, gpu_available, training_runs);
}

bool ExperimentPanel::saveConfig(const QString& fileName, QString* why) const {
  const QByteArray text = currentTab() == Tab::Gemm ? canonicalGemmConfig(config(), QString(), why)
                                                    : canonicalTrainingConfig(trainingConfig(), why);
  if (text.isEmpty()) return false;
  QSaveFile f(fileName);
  if (!f.open(QIODevice::WriteOnly) || f.write(text + "\n") != text.size() + 1 || !f.commit()) {
    if (why) *why = tr("Cannot write %1: %2").arg(fileName, f.errorString());
    return false;
  }
  return true;
}

bool ExperimentPanel::loadConfig(const QString& fileName, QString* why) {
  QFile f(fileName);
  if (f.size() > (64 << 20) || !f.open(QIODevice::ReadOnly)) {
    if (why)
      *why = tr("Cannot read %1: %2").arg(fileName, f.size() > (64 << 20) ? tr("larger than 64 MiB") : f.errorString());
    return false;
  }
  QString reason;
  const QByteArray text = f.readAll();
  // A training config ("type": "training" or a "runs" list) goes to the Training tab.
  const QJsonObject probe = QJsonDocument::fromJson(text).object();
  if (probe.value(QStringLiteral("type")).toString() == QStringLiteral("training") ||
      probe.contains(QStringLiteral("runs"))) {
    const QJsonObject t = trainingPanelFromCanonical(text, &reason);
    if (t.isEmpty()) {
      if (why) *why = tr("%1: %2").arg(QFileInfo(fileName).fileName(), reason);
      return false;
    }
    setTrainingConfig(t);
    showTab(Tab::Training);
    return true;
  }
  if (!gemm_->loadCanonical(text, &reason)) {
    if (why) *why = tr("%1: %2").arg(QFileInfo(fileName).fileName(), reason);
    return false;
  }
  showTab(Tab::Gemm);
  revalidate();
  Q_EMIT configChanged(config());
  return true;
}

void ExperimentPanel::resetToDefaults() {
  setConfig(defaultConfig());
  setTrainingConfig(defaultTrainingConfig());
}

bool ExperimentPanel::isValid() const {
  for (const auto& p : problems_)
    if (p.blocking) return false;
  return true;
}

void ExperimentPanel::revalidate() {
  QStringList runs;
  if (session_)
    for (const auto& r : session_->runs())
      if (r.kind == QStringLiteral("training")) runs << r.id;
  problems_ = currentTab() == Tab::Gemm ? validate(config(), backend(), gpu_, runs) : training_->problems();
  QString html;
  for (const auto& p : problems_)
    html += QStringLiteral("<div style='color:%1'>%2 <b>%3:</b> %4</div>")
                .arg(p.blocking ? QStringLiteral("#c62828") : QStringLiteral("#8a6d00"),
                     p.blocking ? QStringLiteral("\u2716") : QStringLiteral("\u2139"), p.field.toHtmlEscaped(),
                     p.reason.toHtmlEscaped());
  if (!runner_) html += QStringLiteral("<div style='color:#555'>\u2139 %1</div>").arg(runner_why_.toHtmlEscaped());
  problems_label_->setText(html);
  problems_label_->setVisible(!html.isEmpty());
  run_->setEnabled(isValid() && runner_ && !cancel_->isEnabled());
  run_->setToolTip(!runner_     ? runner_why_
                   : !isValid() ? tr("Fix the problems listed above first")
                   : currentTab() == Tab::Gemm
                       ? tr("Run the experiment in the background (Ctrl+R)")
                       : tr("Train in the background into a new session file, opened when it finishes (Ctrl+R)"));
}

void ExperimentPanel::setSession(SessionDocument* s) {
  session_ = s;
  gemm_->setSession(s);
}

void ExperimentPanel::setGpu(bool available, const QString& name) {
  gpu_ = available;
  gemm_->setGpu(available, name);
  revalidate();
}

void ExperimentPanel::setRunnerAvailable(bool available, const QString& why) {
  runner_ = available;
  runner_why_ = why;
  revalidate();
}

void ExperimentPanel::setRunning(bool running) {
  cancel_->setEnabled(running);
  progress_->setVisible(running);
  stage_->setVisible(running);
  if (running) {
    progress_->setValue(0);
    stage_->setText(tr("starting\u2026"));
  }
  revalidate();
}

bool ExperimentPanel::isLive() const {
  return gemm_->isLive();
}

void ExperimentPanel::setLive(bool on) {
  gemm_->setLive(on);
}

void ExperimentPanel::setLiveStatus(const QString& text, bool can_keep) {
  gemm_->setLiveStatus(text, can_keep);
}

QString ExperimentPanel::liveStatus() const {
  return gemm_->liveStatus();
}

void ExperimentPanel::setProgress(double fraction, const QString& stage) {
  progress_->setValue(int(std::clamp(fraction, 0.0, 1.0) * 1000));
  stage_->setText(stage);
}

void ExperimentPanel::requestRun() {
  if (currentTab() == Tab::Gemm) {
    Q_EMIT runRequested(config());
    return;
  }
  QString why;
  const TrainingRequest request = trainingRequest(trainingConfig(), &why);
  if (request.ok())
    Q_EMIT trainingRunRequested(request, training_->runId());
  else
    problems_label_->setText(why.toHtmlEscaped());
}

ExperimentPanel::Tab ExperimentPanel::currentTab() const {
  return tabs_->currentIndex() == 1 ? Tab::Training : Tab::Gemm;
}

void ExperimentPanel::showTab(Tab t) {
  tabs_->setCurrentIndex(t == Tab::Training ? 1 : 0);
}

} // namespace fp8lab::ui
