#include "experiment_panel.h"

#include "experiment_runner.h"
#include "training_model_form.h"

#include "formats/format.h"
#ifdef FP8LAB_HAVE_HDF5
#include "io/tensor_import.h"
#endif
#include "experiment/param_schema.h"
#include "gemm/accumulation_preset.h"
#include "gemm/error_split.h"
#include "scaling/scaling.h"
#include "session_document.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QFormLayout>
#include <QGroupBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QTabWidget>
#include <QVBoxLayout>

#include <map>

namespace fp8lab::ui {

namespace {
// Element formats a GEMM operand may use; FP6/FP4 only with MX block scaling (OCP MX v1.0).
const QStringList kFp8 = {QStringLiteral("E4M3FN"), QStringLiteral("E5M2"), QStringLiteral("E4M3FNUZ"),
                          QStringLiteral("E5M2FNUZ")};
const QStringList kMxElem = {QStringLiteral("E4M3FN"), QStringLiteral("E5M2"), QStringLiteral("E2M3"),
                             QStringLiteral("E3M2"), QStringLiteral("E2M1")};

struct Item {
  const char* key;
  const char* text;
};
const Item kScalings[] = {{"per-tensor-current", "Per tensor, current amax"},
                          {"per-tensor-delayed", "Per tensor, delayed (amax history)"},
                          {"per-row", "Per row of A / per column of B"},
                          {"1x128", "1x128 blocks along K"},
                          {"128x128", "128x128 tiles"},
                          {"mx32", "MX block-32 (E8M0 scales)"}};

QString strategyOf(const ScalingPresetInfo& p) {
  return panelStrategyOf(QString::fromStdString(p.name));
}

/// The Preset entries of a strategy: every table preset of it, a power-of-two twin pair shown
/// once (as its non-power-of-two member; the checkbox picks the other).
QStringList presetsOf(const QString& strategy) {
  QStringList r;
  for (const auto& p : scalingPresets()) {
    if (strategyOf(p) != strategy) continue;
    const std::string twin = p.delayed ? std::string() : scalingPresetTwin(p.name);
    if (!twin.empty() && requireScalingPreset(p.name).pow2) continue;
    r << QString::fromStdString(p.name);
  }
  return r;
}

/// The shape of an import spec's tensor from its header (tensorShape), cached per file version so
/// the panel can show it on every edit; empty with *why when it cannot be read.
std::vector<int64_t> importedShape(const QString& spec, QString* why) {
  struct Entry {
    QDateTime modified;
    qint64 size = -1;
    std::vector<int64_t> shape;
    QString why;
  };
  static std::map<QString, Entry> cache;
  const QFileInfo fi(spec.section(QLatin1Char(':'), 0, 0));
  Entry& e = cache[spec];
  if (e.size != fi.size() || e.modified != fi.lastModified()) {
    e.modified = fi.lastModified();
    e.size = fi.size();
#ifdef FP8LAB_HAVE_HDF5
    const auto r = tensorShape(spec.toStdString());
    e.shape = r.ok() ? r.value : std::vector<int64_t>();
    e.why = r.ok() ? QString() : QString::fromStdString(r.firstError());
#else
    e.shape.clear();
    e.why = QObject::tr("this build cannot read tensor files");
#endif
  }
  if (why) *why = e.why;
  if (e.shape.size() == 1) return {1, e.shape[0]}; // a vector is one row
  return e.shape;
}

const ScalingPresetInfo* presetInfo(const QString& name) {
  for (const auto& p : scalingPresets())
    if (QString::fromStdString(p.name) == name) return &p;
  return nullptr;
}
const Item kAccum[] = {{"split-fp32", "Split FP32 (promote every N_C of K)"},
                       {"fp32", "FP32, fixed order"},
                       {"fast-accum", "Fast accumulation (model)"},
                       {"exact", "Exact (double)"}};
const Item kOutputs[] = {{"fp32", "FP32"}, {"bf16", "BF16"}, {"fp16", "FP16"}, {"e4m3fn", "E4M3FN"}, {"e5m2", "E5M2"}};
const Item kInputs[] = {
    {"distribution", "Distribution"}, {"import", "Imported tensor"}, {"training", "Trained weights of a run"}};
const Item kDists[] = {
    {"normal", "Normal"}, {"uniform", "Uniform"}, {"lognormal", "Log-normal"}, {"outliers", "Normal + outliers"}};

void fill(QComboBox* b, const Item* items, size_t n) {
  for (size_t i = 0; i < n; ++i) b->addItem(QObject::tr(items[i].text), QString::fromLatin1(items[i].key));
}
template <size_t N> void fill(QComboBox* b, const Item (&items)[N]) {
  fill(b, items, N);
}

void setData(QComboBox* b, const QJsonValue& v) {
  if (!v.isString()) return;
  int i = b->findData(v.toString());
  if (i < 0) i = b->findText(v.toString());
  if (i >= 0) b->setCurrentIndex(i);
}
QString key(const QComboBox* b) {
  return b->currentData().isValid() ? b->currentData().toString() : b->currentText();
}

/// A spin box's range and tooltip from its parameter schema entry (param_schema.h): the range
/// every front end takes, the help with its source.
void fromSchema(QSpinBox* s, const ParamSpec& p) {
  s->setRange(int(p.min), int(p.max));
  s->setToolTip(QString::fromStdString(paramHelp(p, false)));
}

/// "M = 0 is out of range [1, 1048576]." when `v` lies outside the entry's range, else "".
QString rangeProblem(const QString& name, double v, const ParamSpec& p) {
  if (v >= p.min && v <= p.max) return {};
  return QObject::tr("%1 = %2 is out of range %3.").arg(name).arg(v).arg(QString::fromStdString(p.rangeText()));
}
} // namespace

ExperimentPanel::ExperimentPanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("ExperimentPanel"));
  updating_ = true; // no reactions while the widgets are being built
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(4, 4, 4, 4);
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* inner = new QWidget(scroll);
  form_ = new QFormLayout(inner);
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form_->setLabelAlignment(Qt::AlignRight);

  auto combo = [&](const QString& name) {
    auto* c = new QComboBox(inner);
    c->setObjectName(name);
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    c->setMinimumContentsLength(6);
    connect(c, &QComboBox::currentIndexChanged, this, &ExperimentPanel::onWidgetChanged);
    return c;
  };
  auto spin = [&](const QString& name, int lo, int hi, int val, const QString& suffix = {}) {
    auto* s = new QSpinBox(inner);
    s->setObjectName(name);
    s->setRange(lo, hi);
    s->setValue(val);
    s->setSuffix(suffix);
    s->setAccelerated(true);
    connect(s, &QSpinBox::valueChanged, this, &ExperimentPanel::onWidgetChanged);
    return s;
  };
  auto section = [&](const QString& t) {
    auto* l = new QLabel(QStringLiteral("<b>%1</b>").arg(t), inner);
    form_->addRow(l);
  };

  // Live mode, first in the GEMM tab (inside its scroll area, so the status line never takes
  // height from the Run button): the GEMM re-runs as the fields change (live_experiment.h); Keep
  // adds the result shown to the session.
  live_ = new QCheckBox(tr("&Live: re-run as the fields change"), inner);
  live_->setObjectName(QStringLiteral("liveBox"));
  live_->setChecked(true);
  live_->setToolTip(tr("Re-run the GEMM experiment as you change its fields (small sizes only); the result is shown "
                       "but not added to the session until you keep it"));
  keep_ = new QPushButton(tr("&Keep"), inner);
  keep_->setObjectName(QStringLiteral("keepButton"));
  keep_->setToolTip(tr("Add the live result shown to the session (Ctrl+K)"));
  keep_->setEnabled(false);
  auto* liveRow = new QHBoxLayout;
  liveRow->addWidget(live_, 1);
  liveRow->addWidget(keep_);
  form_->addRow(liveRow);
  live_status_ = new QLabel(inner);
  live_status_->setObjectName(QStringLiteral("liveStatus"));
  live_status_->setWordWrap(true);
  live_status_->setText(tr("Change a field and the views follow (up to M\u00b7N\u00b7K = 512") +
                        QStringLiteral("\u00b3") + tr("); Keep (Ctrl+K) adds the result to the session."));
  form_->addRow(live_status_);

  section(tr("Operands"));
  fmt_a_ = combo(QStringLiteral("formatA"));
  fmt_b_ = combo(QStringLiteral("formatB"));
  for (const QString& f : kFp8 + QStringList{QStringLiteral("E2M3"), QStringLiteral("E3M2"), QStringLiteral("E2M1")}) {
    fmt_a_->addItem(f, f);
    fmt_b_->addItem(f, f);
  }
  fmt_a_->setToolTip(tr("Element format of A [M,K] (forward activations: E4M3FN)"));
  fmt_b_->setToolTip(tr("Element format of B [K,N] (weights E4M3FN; gradients E5M2 in HYBRID recipes)"));
  form_->addRow(tr("Format of A:"), fmt_a_);
  form_->addRow(tr("Format of B:"), fmt_b_);
  m_ = spin(QStringLiteral("m"), 1, 1, 1);
  n_ = spin(QStringLiteral("n"), 1, 1, 1);
  k_ = spin(QStringLiteral("k"), 1, 1, 1);
  for (const auto& [w, k, v] : {std::tuple{m_, "m", 256}, {n_, "n", 256}, {k_, "k", 1024}}) {
    fromSchema(w, param(k));
    w->setValue(v);
  }
  for (QSpinBox* s : {m_, n_, k_}) s->setMinimumWidth(56);
  auto* dims = new QHBoxLayout;
  dims->setSpacing(3);
  dims->addWidget(new QLabel(QStringLiteral("M"), inner));
  dims->addWidget(m_);
  dims->addWidget(new QLabel(QStringLiteral("N"), inner));
  dims->addWidget(n_);
  dims->addWidget(new QLabel(QStringLiteral("K"), inner));
  dims->addWidget(k_);
  form_->addRow(tr("Shape:"), dims);

  section(tr("Scaling"));
  scaling_ = combo(QStringLiteral("scaling"));
  fill(scaling_, kScalings);
  form_->addRow(tr("Strategy:"), scaling_);
  preset_ = combo(QStringLiteral("preset"));
  preset_->setToolTip(tr("The presets of the table (fp8lab-cli quantize --help) with this strategy; each follows "
                         "one system's exact rules (docs/scaling.md)"));
  form_->addRow(tr("Preset:"), preset_);
  history_ = spin(QStringLiteral("historyLength"), 1, 1, 1, tr(" steps"));
  fromSchema(history_, param("history_len", ParamScope::None));
  history_->setValue(1024);
  form_->addRow(tr("History length:"), history_);
  algo_ = combo(QStringLiteral("amaxAlgo"));
  algo_->addItem(QStringLiteral("max"), QStringLiteral("max"));
  algo_->addItem(QStringLiteral("most_recent"), QStringLiteral("most_recent"));
  form_->addRow(tr("amax algo:"), algo_);
  margin_ = spin(QStringLiteral("margin"), 0, 0, 0);
  fromSchema(margin_, param("margin", ParamScope::None));
  form_->addRow(tr("Margin:"), margin_);
  pow2_ = new QCheckBox(tr("powers of two"), inner);
  pow2_->setObjectName(QStringLiteral("pow2"));
  connect(pow2_, &QCheckBox::toggled, this, &ExperimentPanel::onWidgetChanged);
  form_->addRow(tr("Power of two:"), pow2_);
  // After the generic handler (connected first): refill, then check and report the final state.
  connect(scaling_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    fillPresets(QString());
    onWidgetChanged();
  });
  connect(preset_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    updatePow2(std::nullopt);
    onWidgetChanged();
  });
  fillPresets(QString());

  section(tr("GEMM"));
  accum_ = combo(QStringLiteral("accumulation"));
  fill(accum_, kAccum);
  // The architecture presets: parameter sets of the fast-accumulation model, each with its source.
  accum_->insertSeparator(accum_->count());
  for (const auto& ap : accumulationPresets()) {
    const QString name = QString::fromStdString(ap.name);
    accum_->addItem(ap.unsure ? tr("%1 (model, unsure)").arg(name) : tr("%1 (model)").arg(name), name);
    accum_->setItemData(
        accum_->count() - 1,
        tr("%1\n\nSource: %2").arg(QString::fromStdString(ap.summary), QString::fromStdString(ap.source)),
        Qt::ToolTipRole);
  }
  accum_->setToolTip(tr("How the K products are summed. Fast accumulation and the architecture presets "
                        "(hopper_fp8, blackwell_fp8, block_scaled_mma) are MODELS of undocumented tensor-core "
                        "hardware; each preset's tooltip names its source"));
  form_->addRow(tr("Accumulation:"), accum_);
  promo_ = spin(QStringLiteral("promotionInterval"), 1, 1, 1, tr(" of K"));
  fromSchema(promo_, param("promotion_interval"));
  promo_->setValue(128);
  form_->addRow(tr("Promotion N_C:"), promo_);
  fast_bits_ = spin(QStringLiteral("fastAccumBits"), 1, 1, 1, tr(" bits"));
  fromSchema(fast_bits_, param("fast_accum_bits"));
  fast_bits_->setValue(14);
  form_->addRow(tr("Fast-accum bits:"), fast_bits_);
  output_ = combo(QStringLiteral("output"));
  fill(output_, kOutputs);
  form_->addRow(tr("Output type:"), output_);

  section(tr("Epilogue"));
  auto dspin = [&](const QString& name, double lo, double hi, double val, const QString& tip) {
    auto* d = new QDoubleSpinBox(inner);
    d->setObjectName(name);
    d->setDecimals(6);
    d->setRange(lo, hi);
    d->setValue(val);
    d->setToolTip(tip);
    connect(d, &QDoubleSpinBox::valueChanged, this, &ExperimentPanel::onWidgetChanged);
    return d;
  };
  alpha_ =
      dspin(QStringLiteral("alpha"), -1e6, 1e6, 1.0, tr("D = \u03b1\u00b7(A\u00b7B) + \u03b2\u00b7C + bias (float32)"));
  form_->addRow(tr("\u03b1:"), alpha_);
  beta_ = dspin(QStringLiteral("beta"), -1e6, 1e6, 0.0,
                tr("\u03b2 \u2260 0 adds \u03b2\u00b7C; C is read only then (as cuBLASLt)"));
  form_->addRow(tr("\u03b2:"), beta_);
  c_seed_ = spin(QStringLiteral("cSeed"), 0, 2147483647, 1);
  form_->addRow(tr("C seed:"), c_seed_);
  c_scale_ = dspin(QStringLiteral("cScale"), 1e-6, 1e6, 1.0, QString());
  form_->addRow(tr("C scale \u03c3:"), c_scale_);
  bias_ = new QCheckBox(tr("add a bias vector [N]"), inner);
  bias_->setObjectName(QStringLiteral("bias"));
  bias_->setToolTip(tr("A normal random bias of N values, broadcast over the M rows"));
  connect(bias_, &QCheckBox::toggled, this, &ExperimentPanel::onWidgetChanged);
  form_->addRow(tr("Bias:"), bias_);
  bias_seed_ = spin(QStringLiteral("biasSeed"), 0, 2147483647, 1);
  form_->addRow(tr("Bias seed:"), bias_seed_);
  bias_scale_ = dspin(QStringLiteral("biasScale"), 1e-6, 1e6, 1.0, QString());
  form_->addRow(tr("Bias scale \u03c3:"), bias_scale_);

  section(tr("Input"));
  input_ = combo(QStringLiteral("input"));
  fill(input_, kInputs);
  form_->addRow(tr("Source:"), input_);
  dist_ = combo(QStringLiteral("distribution"));
  fill(dist_, kDists);
  form_->addRow(tr("Distribution:"), dist_);
  sigma_ = new QDoubleSpinBox(inner);
  sigma_->setObjectName(QStringLiteral("sigma"));
  sigma_->setDecimals(6);
  sigma_->setRange(1e-6, 1e6);
  sigma_->setValue(1.0);
  sigma_->setToolTip(tr("Standard deviation (normal, log-normal in log space) or half-width (uniform)"));
  connect(sigma_, &QDoubleSpinBox::valueChanged, this, &ExperimentPanel::onWidgetChanged);
  form_->addRow(tr("Scale \u03c3:"), sigma_);
  auto* imp = new QHBoxLayout;
  import_path_ = new QLineEdit(inner);
  import_path_->setObjectName(QStringLiteral("importPath"));
  import_path_->setPlaceholderText(tr(".npy, .safetensors or HDF5 file (empty: random A)"));
  connect(import_path_, &QLineEdit::textChanged, this, &ExperimentPanel::onWidgetChanged);
  browse_ = new QPushButton(tr("Browse\u2026"), inner);
  connect(browse_, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Import tensor"), {},
                                                   tr("Tensors (*.npy *.safetensors *.h5 *.hdf5);;All files (*)"));
    if (!f.isEmpty()) import_path_->setText(f);
  });
  imp->addWidget(import_path_, 1);
  imp->addWidget(browse_);
  form_->addRow(tr("Tensor A [M,K]:"), imp);
  auto* impb = new QHBoxLayout;
  import_path_b_ = new QLineEdit(inner);
  import_path_b_->setObjectName(QStringLiteral("importPathB"));
  import_path_b_->setPlaceholderText(tr("(empty: random B)"));
  connect(import_path_b_, &QLineEdit::textChanged, this, &ExperimentPanel::onWidgetChanged);
  auto* browse_b = new QPushButton(tr("Browse\u2026"), inner);
  connect(browse_b, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Import tensor B"), {},
                                                   tr("Tensors (*.npy *.safetensors *.h5 *.hdf5);;All files (*)"));
    if (!f.isEmpty()) import_path_b_->setText(f);
  });
  impb->addWidget(import_path_b_, 1);
  impb->addWidget(browse_b);
  form_->addRow(tr("Tensor B [K,N]:"), impb);
  train_run_ = combo(QStringLiteral("trainingRun"));
  form_->addRow(tr("Training run:"), train_run_);
  seed_ = spin(QStringLiteral("seed"), 0, 2147483647, 42);
  form_->addRow(tr("Seed:"), seed_);
  backend_ = combo(QStringLiteral("backend"));
  backend_->addItem(tr("CPU reference"), QStringLiteral("cpu"));
  backend_->addItem(tr("CUDA (no GPU found)"), QStringLiteral("cuda"));
  // Auto: the GPU for each GEMM it can run, the CPU reference otherwise (fp8lab-cli --backend auto).
  backend_->addItem(tr("Auto (GPU when it can, else CPU)"), QStringLiteral("auto"));
  form_->addRow(tr("Backend:"), backend_);

  scroll->setWidget(inner);
  tabs_ = new QTabWidget(this);
  tabs_->setObjectName(QStringLiteral("experimentTabs"));
  tabs_->addTab(scroll, tr("GEMM"));
  tabs_->addTab(buildTrainingTab(), tr("Training"));
  connect(tabs_, &QTabWidget::currentChanged, this, [this] { revalidate(); });
  outer->addWidget(tabs_, 1);

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
  connect(live_, &QCheckBox::toggled, this, &ExperimentPanel::liveToggled);
  connect(keep_, &QPushButton::clicked, this, &ExperimentPanel::keepRequested);
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

  updating_ = false;
  resetToDefaults();
}

QJsonObject ExperimentPanel::defaultConfig() {
  return QJsonObject{
      {QStringLiteral("a_format"), QStringLiteral("E4M3FN")},
      {QStringLiteral("b_format"), QStringLiteral("E4M3FN")},
      {QStringLiteral("m"), 256},
      {QStringLiteral("n"), 256},
      {QStringLiteral("k"), 1024},
      {QStringLiteral("scaling"), QStringLiteral("per-tensor-current")},
      {QStringLiteral("preset"), QStringLiteral("te_current")},
      {QStringLiteral("history_len"), 1024},
      {QStringLiteral("amax_algo"), QStringLiteral("max")},
      {QStringLiteral("margin"), 0},
      {QStringLiteral("pow2_scales"), false},
      {QStringLiteral("accumulation"), QStringLiteral("split-fp32")},
      {QStringLiteral("promotion_interval"), 128},
      {QStringLiteral("fast_accum_bits"), 14},
      {QStringLiteral("output"), QStringLiteral("fp32")},
      {QStringLiteral("alpha"), 1.0},
      {QStringLiteral("beta"), 0.0},
      {QStringLiteral("c_seed"), 1},
      {QStringLiteral("c_scale"), 1.0},
      {QStringLiteral("bias"), false},
      {QStringLiteral("bias_seed"), 1},
      {QStringLiteral("bias_scale"), 1.0},
      {QStringLiteral("input"), QStringLiteral("distribution")},
      {QStringLiteral("distribution"), QStringLiteral("normal")},
      {QStringLiteral("sigma"), 1.0},
      {QStringLiteral("import_path"), QString()},
      {QStringLiteral("training_run"), QString()},
      {QStringLiteral("seed"), 42},
      {QStringLiteral("backend"), QStringLiteral("auto")},
  };
}

void ExperimentPanel::fillPresets(const QString& select) {
  const bool was = updating_;
  updating_ = true;
  const QString strategy = key(scaling_);
  // A pow2 twin is listed as its non-power-of-two member.
  QString base = select;
  bool pow2 = false;
  if (const auto c = scalingPreset(select.toStdString()); c && c->pow2) {
    const std::string twin = scalingPresetTwin(select.toStdString());
    if (!twin.empty()) base = QString::fromStdString(twin);
    pow2 = true;
  }
  preset_->clear();
  for (const QString& n : presetsOf(strategy)) {
    preset_->addItem(n, n);
    if (const ScalingPresetInfo* info = presetInfo(n))
      preset_->setItemData(
          preset_->count() - 1,
          QStringLiteral("%1\n%2").arg(QString::fromStdString(info->summary), QString::fromStdString(info->source)),
          Qt::ToolTipRole);
  }
  const int i = preset_->findData(base);
  preset_->setCurrentIndex(i >= 0 ? i : 0);
  updating_ = was;
  updatePow2(i >= 0 ? std::optional<bool>(pow2) : std::nullopt);
}

void ExperimentPanel::updatePow2(std::optional<bool> want) {
  const QString base = key(preset_);
  const auto c = scalingPreset(base.toStdString());
  const std::string twin = c ? scalingPresetTwin(base.toStdString()) : std::string();
  const bool was = updating_;
  updating_ = true;
  if (!c) { // delayed presets: the scale is a power of two only with the TE option of a training run
    pow2_->setEnabled(false);
    pow2_->setChecked(false);
    pow2_->setToolTip(tr("Delayed scaling runs in training experiments, where power-of-two scales are set per run"));
  } else if (twin.empty()) {
    pow2_->setEnabled(false);
    pow2_->setChecked(c->pow2);
    pow2_->setToolTip(c->pow2 ? tr("%1 always has power-of-two scales; the table has no twin without them").arg(base)
                              : tr("%1 has no power-of-two variant in the preset table").arg(base));
  } else {
    pow2_->setEnabled(true);
    if (want) pow2_->setChecked(*want);
    pow2_->setToolTip(tr("Ticked: %1 (power-of-two scales); unticked: %2").arg(QString::fromStdString(twin), base));
  }
  updating_ = was;
}

QString ExperimentPanel::resolvedPreset() const {
  const QString base = key(preset_);
  if (pow2_->isEnabled() && pow2_->isChecked()) {
    const std::string twin = scalingPresetTwin(base.toStdString());
    if (!twin.empty()) return QString::fromStdString(twin);
  }
  return base;
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
  const QJsonObject c = panelConfigFromCanonical(text, config(), &reason);
  if (c.isEmpty()) {
    if (why) *why = tr("%1: %2").arg(QFileInfo(fileName).fileName(), reason);
    return false;
  }
  showTab(Tab::Gemm);
  setConfig(c);
  revalidate();
  Q_EMIT configChanged(config());
  return true;
}

void ExperimentPanel::resetToDefaults() {
  setConfig(defaultConfig());
  setTrainingConfig(defaultTrainingConfig());
}

QJsonObject ExperimentPanel::config() const {
  QJsonObject c;
  c[QStringLiteral("a_format")] = key(fmt_a_);
  c[QStringLiteral("b_format")] = key(fmt_b_);
  c[QStringLiteral("m")] = m_->value();
  c[QStringLiteral("n")] = n_->value();
  c[QStringLiteral("k")] = k_->value();
  c[QStringLiteral("scaling")] = key(scaling_);
  c[QStringLiteral("preset")] = resolvedPreset();
  c[QStringLiteral("history_len")] = history_->value();
  c[QStringLiteral("amax_algo")] = key(algo_);
  c[QStringLiteral("margin")] = margin_->value();
  c[QStringLiteral("pow2_scales")] = pow2_->isChecked();
  c[QStringLiteral("accumulation")] = key(accum_);
  c[QStringLiteral("promotion_interval")] = promo_->value();
  c[QStringLiteral("fast_accum_bits")] = fast_bits_->value();
  c[QStringLiteral("output")] = key(output_);
  c[QStringLiteral("alpha")] = alpha_->value();
  c[QStringLiteral("beta")] = beta_->value();
  c[QStringLiteral("c_seed")] = c_seed_->value();
  c[QStringLiteral("c_scale")] = c_scale_->value();
  c[QStringLiteral("bias")] = bias_->isChecked();
  c[QStringLiteral("bias_seed")] = bias_seed_->value();
  c[QStringLiteral("bias_scale")] = bias_scale_->value();
  c[QStringLiteral("input")] = key(input_);
  c[QStringLiteral("distribution")] = key(dist_);
  c[QStringLiteral("sigma")] = sigma_->value();
  c[QStringLiteral("import_path")] = import_path_->text();
  c[QStringLiteral("import_path_b")] = import_path_b_->text();
  c[QStringLiteral("training_run")] = train_run_->currentData().toString();
  c[QStringLiteral("seed")] = seed_->value();
  c[QStringLiteral("backend")] = key(backend_);
  return c;
}

void ExperimentPanel::setConfig(const QJsonObject& c) {
  updating_ = true;
  setData(fmt_a_, c.value(QStringLiteral("a_format")));
  setData(fmt_b_, c.value(QStringLiteral("b_format")));
  auto setInt = [&](QSpinBox* s, const char* k) {
    const QJsonValue v = c.value(QLatin1String(k));
    if (v.isDouble()) s->setValue(v.toInt());
  };
  setInt(m_, "m");
  setInt(n_, "n");
  setInt(k_, "k");
  setData(scaling_, c.value(QStringLiteral("scaling")));
  {
    // The preset by its table name; an older form (preset = a system, pow2_scales, mx_rule,
    // block) is resolved through core's mapping. The power-of-two box follows the preset.
    QJsonObject full = config();
    for (auto it = c.begin(); it != c.end(); ++it) full[it.key()] = it.value();
    QString name = c.value(QStringLiteral("preset")).toString();
    if (!presetInfo(name)) name = scalingPresetFor(full, nullptr);
    // An explicit power-of-two choice picks that member of a twin pair.
    if (const auto pc = scalingPreset(name.toStdString());
        pc && c.contains(QStringLiteral("pow2_scales")) && pc->pow2 != c.value(QStringLiteral("pow2_scales")).toBool())
      if (const std::string twin = scalingPresetTwin(name.toStdString()); !twin.empty())
        name = QString::fromStdString(twin);
    fillPresets(name);
  }
  setInt(history_, "history_len");
  setData(algo_, c.value(QStringLiteral("amax_algo")));
  setInt(margin_, "margin");

  setData(accum_, c.value(QStringLiteral("accumulation")));
  setInt(promo_, "promotion_interval");
  setInt(fast_bits_, "fast_accum_bits");
  setData(output_, c.value(QStringLiteral("output")));
  auto setDouble = [&](QDoubleSpinBox* d, const char* k) {
    const QJsonValue v = c.value(QLatin1String(k));
    if (v.isDouble()) d->setValue(v.toDouble());
  };
  setDouble(alpha_, "alpha");
  setDouble(beta_, "beta");
  setInt(c_seed_, "c_seed");
  setDouble(c_scale_, "c_scale");
  if (c.value(QStringLiteral("bias")).isBool()) bias_->setChecked(c.value(QStringLiteral("bias")).toBool());
  setInt(bias_seed_, "bias_seed");
  setDouble(bias_scale_, "bias_scale");
  setData(input_, c.value(QStringLiteral("input")));
  setData(dist_, c.value(QStringLiteral("distribution")));
  if (c.value(QStringLiteral("sigma")).isDouble()) sigma_->setValue(c.value(QStringLiteral("sigma")).toDouble());
  if (c.contains(QStringLiteral("import_path")))
    import_path_->setText(c.value(QStringLiteral("import_path")).toString());
  if (c.contains(QStringLiteral("import_path_b")))
    import_path_b_->setText(c.value(QStringLiteral("import_path_b")).toString());
  setData(train_run_, c.value(QStringLiteral("training_run")));
  setInt(seed_, "seed");
  setData(backend_, c.value(QStringLiteral("backend")));
  updating_ = false;
  updateVisibility();
  revalidate();
}

void ExperimentPanel::onWidgetChanged() {
  if (updating_) return;
  updateVisibility();
  revalidate();
  Q_EMIT configChanged(config());
}

void ExperimentPanel::updateVisibility() {
  const QString s = key(scaling_);
  const bool delayed = s == QStringLiteral("per-tensor-delayed");
  form_->setRowVisible(history_, delayed);
  form_->setRowVisible(algo_, delayed);
  form_->setRowVisible(margin_, delayed);
  form_->setRowVisible(pow2_, !delayed);
  const QString acc = key(accum_);
  const auto ap = accumulationPreset(acc.toStdString());
  // Which parameters the model reads: core's rule (accumulationReads), as for flags and configs.
  const Accumulation model = ap ? ap->accumulation : parseAccumulation(acc.toStdString()).value_or(Accumulation::Exact);
  form_->setRowVisible(promo_, ap || accumulationReads(model, "promotion_interval"));
  form_->setRowVisible(fast_bits_, ap || accumulationReads(model, "fast_accum_bits"));
  // A preset fixes its parameters: shown, not editable.
  promo_->setEnabled(!ap);
  fast_bits_->setEnabled(!ap);
  promo_->setToolTip(ap ? tr("set by the %1 preset").arg(acc)
                        : QString::fromStdString(paramHelp(param("promotion_interval"), false)));
  fast_bits_->setToolTip(ap ? tr("set by the %1 preset").arg(acc)
                            : QString::fromStdString(paramHelp(param("fast_accum_bits"), false)));
  if (ap) {
    const bool was_p = updating_;
    updating_ = true;
    promo_->setValue(ap->promotes ? ap->promotion_interval : promo_->value());
    fast_bits_->setValue(ap->bits);
    updating_ = was_p;
    if (!ap->promotes)
      promo_->setToolTip(tr("%1 has no promotion window of its own (the scale blocks cut K)").arg(acc));
  }
  const bool with_c = float(beta_->value()) != 0.0f;
  const QString no_c = tr("C is read only when \u03b2 \u2260 0 (as cuBLASLt): set \u03b2 first");
  for (QWidget* w : std::initializer_list<QWidget*>{c_seed_, c_scale_}) {
    w->setEnabled(with_c);
    w->setToolTip(with_c ? tr("C [M,N]: normal random values with this seed and standard deviation") : no_c);
  }
  for (QWidget* w : std::initializer_list<QWidget*>{bias_seed_, bias_scale_}) {
    w->setEnabled(bias_->isChecked());
    w->setToolTip(bias_->isChecked() ? tr("bias [N]: normal random values with this seed and standard deviation")
                                     : tr("tick Bias to add one"));
  }
  const QString in = key(input_);
  form_->setRowVisible(dist_, in == QStringLiteral("distribution"));
  form_->setRowVisible(sigma_, in == QStringLiteral("distribution"));
  // The import row is a layout; find its row through the line edit's layout item.
  for (int r = 0; r < form_->rowCount(); ++r) {
    QLayoutItem* it = form_->itemAt(r, QFormLayout::FieldRole);
    if (it && it->layout() && (it->layout()->indexOf(import_path_) >= 0 || it->layout()->indexOf(import_path_b_) >= 0))
      form_->setRowVisible(r, in == QStringLiteral("import"));
  }
  // An imported operand brings its shape: A fixes M and K, B fixes K and N.
  const bool ta = in == QStringLiteral("import") && !import_path_->text().isEmpty();
  const bool tb = in == QStringLiteral("import") && !import_path_b_->text().isEmpty();
  const QString from = tr("taken from the imported tensor's shape");
  m_->setEnabled(!ta);
  k_->setEnabled(!ta && !tb);
  n_->setEnabled(!tb);
  // Show the shape the run will have: the fields a tensor fixes take its dimensions.
  const bool was = updating_;
  updating_ = true;
  if (ta)
    if (const auto sh = importedShape(import_path_->text(), nullptr); sh.size() == 2) {
      m_->setValue(int(std::min<int64_t>(sh[0], m_->maximum())));
      k_->setValue(int(std::min<int64_t>(sh[1], k_->maximum())));
    }
  if (tb)
    if (const auto sh = importedShape(import_path_b_->text(), nullptr); sh.size() == 2) {
      if (!ta) k_->setValue(int(std::min<int64_t>(sh[0], k_->maximum())));
      n_->setValue(int(std::min<int64_t>(sh[1], n_->maximum())));
    }
  updating_ = was;
  for (const auto& [w, fixed, k] : {std::tuple{m_, ta, "m"}, {k_, ta || tb, "k"}, {n_, tb, "n"}})
    w->setToolTip(fixed ? from : QString::fromStdString(paramHelp(param(k), false)));
  form_->setRowVisible(train_run_, in == QStringLiteral("training"));
}

QList<ConfigProblem> ExperimentPanel::validate(const QJsonObject& c, bool gpu_available,
                                               const QStringList& training_runs) {
  QList<ConfigProblem> p;
  const QString a = c.value(QStringLiteral("a_format")).toString(), b = c.value(QStringLiteral("b_format")).toString();
  const QString s = c.value(QStringLiteral("scaling")).toString();
  const bool mx = s == QStringLiteral("mx32");
  const bool gpu = c.value(QStringLiteral("backend")).toString() == QStringLiteral("cuda");
  const int m = c.value(QStringLiteral("m")).toInt(), n = c.value(QStringLiteral("n")).toInt(),
            k = c.value(QStringLiteral("k")).toInt();
  for (const auto& [name, f] : {std::pair{QObject::tr("Format of A"), a}, std::pair{QObject::tr("Format of B"), b}}) {
    if (!Format::byName(f.toStdString()))
      p << ConfigProblem{name, QObject::tr("'%1' is not a known format.").arg(f)};
    else if (mx && !kMxElem.contains(f))
      p << ConfigProblem{
          name, QObject::tr("%1 is not an MX element format (OCP MX v1.0: E4M3FN, E5M2, E2M3, E3M2, E2M1).").arg(f)};
    else if (!mx && !kFp8.contains(f))
      p << ConfigProblem{
          name, QObject::tr("%1 is a 6- or 4-bit MX element type: pick MX block-32 scaling to use it.").arg(f)};
  }
  for (const auto& [name, v, key] :
       {std::tuple{QStringLiteral("M"), m, "m"}, {QStringLiteral("N"), n, "n"}, {QStringLiteral("K"), k, "k"}})
    if (const QString why = rangeProblem(name, v, param(key)); !why.isEmpty())
      p << ConfigProblem{QObject::tr("Shape"), why};
  for (const auto& [name, key] : {std::pair{QObject::tr("Promotion N_C"), "promotion_interval"},
                                  {QObject::tr("Fast-accum bits"), "fast_accum_bits"}})
    if (c.contains(QLatin1String(key)))
      if (const QString why = rangeProblem(name, c.value(QLatin1String(key)).toInt(), param(key)); !why.isEmpty())
        p << ConfigProblem{name, why};
  // The experiment's own estimate (gemmExperimentBytes) against the memory available now.
  if (const std::string mem = gemmExperimentMemoryProblem(m, n, k); !mem.empty())
    p << ConfigProblem{QObject::tr("Shape"), QString::fromStdString(mem) + QLatin1Char('.')};

  if (s == QStringLiteral("per-tensor-delayed")) {
    const QString why = rangeProblem(QObject::tr("History length"), c.value(QStringLiteral("history_len")).toInt(),
                                     param("history_len", ParamScope::None));
    if (!why.isEmpty()) p << ConfigProblem{QObject::tr("History length"), why};
    if (c.value(QStringLiteral("preset")).toString().startsWith(QStringLiteral("flax")) &&
        c.value(QStringLiteral("margin")).toInt() != 0)
      p << ConfigProblem{QObject::tr("Margin"),
                         QObject::tr("Flax never passes a margin (it is always 0 in fp8_ops); "
                                     "the margin is ignored with the Flax preset."),
                         false};
  }
  {
    QString why;
    if (scalingPresetFor(c, &why).isEmpty()) p << ConfigProblem{QObject::tr("Strategy"), why};
  }
  const QString acc = c.value(QStringLiteral("accumulation")).toString();
  const auto ap = accumulationPreset(acc.toStdString());
  if (ap)
    p << ConfigProblem{QObject::tr("Accumulation"),
                       ap->unsure ? QObject::tr("%1 is a model whose source is UNSURE of the accumulator width; "
                                                "see the preset's tooltip.")
                                        .arg(acc)
                                  : QObject::tr("%1 is a model of undocumented hardware from published "
                                                "measurements, not a measurement of this machine.")
                                        .arg(acc),
                       false};
  if (acc == QStringLiteral("fast-accum"))
    p << ConfigProblem{QObject::tr("Accumulation"),
                       QObject::tr("Fast accumulation is a model of undocumented hardware behaviour "
                                   "(DeepSeek-V3 \u00a73.3), not a measurement."),
                       false};
  const QString in = c.value(QStringLiteral("input")).toString();
  if (in == QStringLiteral("import")) {
    const QString pa = c.value(QStringLiteral("import_path")).toString();
    const QString pb = c.value(QStringLiteral("import_path_b")).toString();
    if (pa.isEmpty() && pb.isEmpty())
      p << ConfigProblem{QObject::tr("Tensor file"), QObject::tr("choose a tensor file to import.")};
    std::vector<int64_t> sa, sb;
    for (const QString& path : {pa, pb}) {
      if (path.isEmpty()) continue;
      QString why;
      const std::vector<int64_t> sh = importedShape(path, &why);
      (path == pa ? sa : sb) = sh;
      if (sh.size() > 2 || (sh.empty() && QFileInfo::exists(path.section(QLatin1Char(':'), 0, 0)) && !why.isEmpty()))
        p << ConfigProblem{QObject::tr("Tensor file"),
                           why.isEmpty() ? QObject::tr("%1 is not a matrix").arg(path) : why};
      // "file.safetensors:NAME" and "file.h5:/path" name a tensor inside the file.
      const QString file = path.section(QLatin1Char(':'), 0, 0);
      const QString suf = QFileInfo(file).suffix().toLower();
      if (!QFileInfo::exists(file))
        p << ConfigProblem{QObject::tr("Tensor file"), QObject::tr("%1 does not exist.").arg(file)};
      else if (!QStringList{QStringLiteral("npy"), QStringLiteral("safetensors"), QStringLiteral("h5"),
                            QStringLiteral("hdf5")}
                    .contains(suf))
        p << ConfigProblem{QObject::tr("Tensor file"),
                           QObject::tr("'.%1' files cannot be imported (use .npy, .safetensors or HDF5).").arg(suf)};
    }
    if (sa.size() == 2 && sb.size() == 2 && sa[1] != sb[0])
      p << ConfigProblem{QObject::tr("Tensor file"),
                         QObject::tr("A is [%1, %2] and B is [%3, %4]: the inner dimensions (K) differ.")
                             .arg(sa[0])
                             .arg(sa[1])
                             .arg(sb[0])
                             .arg(sb[1])};
  } else if (in == QStringLiteral("training")) {
    const QString r = c.value(QStringLiteral("training_run")).toString();
    if (training_runs.isEmpty())
      p << ConfigProblem{QObject::tr("Training run"),
                         QObject::tr("the session has no training run: open or run one first.")};
    else if (!training_runs.contains(r))
      p << ConfigProblem{QObject::tr("Training run"), QObject::tr("choose a training run.")};
  } else if (c.value(QStringLiteral("sigma")).toDouble() <= 0) {
    p << ConfigProblem{QObject::tr("Scale \u03c3"), QObject::tr("\u03c3 must be positive.")};
  }
  if (gpu) {
    if (!gpu_available)
      p << ConfigProblem{QObject::tr("Backend"),
                         QObject::tr("no CUDA GPU is available on this machine; use the CPU reference.")};
    if (a == QStringLiteral("E5M2") && b == QStringLiteral("E5M2"))
      p << ConfigProblem{QObject::tr("Backend"),
                         QObject::tr("E5M2 \u00d7 E5M2 is not supported by cuBLASLt (the CPU reference runs it).")};
    if (a.endsWith(QStringLiteral("FNUZ")) || b.endsWith(QStringLiteral("FNUZ")))
      p << ConfigProblem{QObject::tr("Backend"),
                         QObject::tr("FNUZ formats are AMD formats; cuBLASLt has no FNUZ types.")};
    if (ap || acc == QStringLiteral("fast-accum") || acc == QStringLiteral("exact"))
      p << ConfigProblem{
          QObject::tr("Backend"),
          QObject::tr("the '%1' accumulation is a CPU model; the GPU accumulates as the hardware does.").arg(acc)};
    if (k % 16 != 0)
      p << ConfigProblem{QObject::tr("Shape"),
                         QObject::tr("cuBLASLt FP8 needs K to be a multiple of 16 (K = %1).").arg(k)};
  }
  return p;
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
  problems_ = currentTab() == Tab::Gemm ? validate(config(), gpu_, runs) : trainingProblems();
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
  auto refill = [this] {
    const QString cur = train_run_->currentData().toString();
    const QSignalBlocker b(train_run_);
    train_run_->clear();
    if (session_)
      for (const auto& r : session_->runs())
        if (r.kind == QStringLiteral("training")) train_run_->addItem(r.label, r.id);
    int i = train_run_->findData(cur);
    if (i >= 0) train_run_->setCurrentIndex(i);
    revalidate();
  };
  connect(s, &SessionDocument::runAdded, this, refill);
  connect(s, &SessionDocument::runRemoved, this, refill);
  connect(s, &SessionDocument::reset_, this, refill);
  refill();
}

void ExperimentPanel::setGpu(bool available, const QString& name) {
  gpu_ = available;
  gpu_name_ = name;
  backend_->setItemText(1, available ? tr("CUDA \u2014 %1").arg(name) : tr("CUDA (no GPU found)"));
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
  return live_->isChecked();
}

void ExperimentPanel::setLive(bool on) {
  live_->setChecked(on);
}

void ExperimentPanel::setLiveStatus(const QString& text, bool can_keep) {
  live_status_->setText(text);
  keep_->setEnabled(can_keep);
}

QString ExperimentPanel::liveStatus() const {
  return live_status_->text();
}

void ExperimentPanel::setProgress(double fraction, const QString& stage) {
  progress_->setValue(int(std::clamp(fraction, 0.0, 1.0) * 1000));
  stage_->setText(stage);
}

namespace {
const Item kRecipes[] = {{"per_tensor", "Per-tensor scaling with the strategy below"},
                         {"te_float8_block", "TE Float8BlockScaling (1x128 / 128x128, DeepSeek-V3)"},
                         {"te_mxfp8", "TE MXFP8BlockScaling (E4M3, 1x32 E8M0 RCEIL)"},
                         {"te_nvfp4", "TE NVFP4BlockScaling (E2M1 1x16, E4M3 + fp32 scales)"}};
const Item kTrainStrategies[] = {{"delayed-flax", "Delayed, Flax fp8_ops (amax history)"},
                                 {"delayed-te", "Delayed, TE DelayedScaling (amax history)"},
                                 {"current-te", "Current, TE Float8CurrentScaling"},
                                 {"current-torchao", "Current, torchao tensorwise"}};
/// weight_2d when the config does not set it (TrainingRecipeConfig::weight2d()).
bool recipeWeight2dDefault(const QString& recipe) {
  return recipe != QStringLiteral("te_mxfp8");
}
} // namespace

QWidget* ExperimentPanel::buildTrainingTab() {
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* inner = new QWidget(scroll);
  train_form_ = new QFormLayout(inner);
  train_form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  train_form_->setLabelAlignment(Qt::AlignRight);
  auto changed = [this] {
    if (updating_) return;
    updateTrainingStates();
    revalidate();
  };
  auto combo = [&](const QString& name) {
    auto* c = new QComboBox(inner);
    c->setObjectName(name);
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    c->setMinimumContentsLength(6);
    connect(c, &QComboBox::currentIndexChanged, this, changed);
    return c;
  };
  auto spin = [&](const QString& name, int lo, int hi, int val, const QString& suffix = {}) {
    auto* s = new QSpinBox(inner);
    s->setObjectName(name);
    s->setRange(lo, hi);
    s->setValue(val);
    s->setSuffix(suffix);
    connect(s, &QSpinBox::valueChanged, this, changed);
    return s;
  };
  auto check = [&](const QString& name, const QString& text) {
    auto* c = new QCheckBox(text, inner);
    c->setObjectName(name);
    connect(c, &QCheckBox::toggled, this, changed);
    return c;
  };
  auto section = [&](const QString& t) { train_form_->addRow(new QLabel(QStringLiteral("<b>%1</b>").arg(t), inner)); };

  section(tr("Run"));
  t_id_ = new QLineEdit(inner);
  t_id_->setObjectName(QStringLiteral("trainId"));
  t_id_->setToolTip(tr("The run's id in the session"));
  connect(t_id_, &QLineEdit::textChanged, this, changed);
  train_form_->addRow(tr("Run id:"), t_id_);
  t_precision_ = combo(QStringLiteral("trainPrecision"));
  t_precision_->addItem(tr("FP8 / FP4"), QStringLiteral("fp8"));
  t_precision_->addItem(tr("FP32 baseline"), QStringLiteral("fp32"));
  train_form_->addRow(tr("Precision:"), t_precision_);

  section(tr("Model"));
  t_model_ = new TrainingModelForm(inner);
  t_model_->setObjectName(QStringLiteral("trainingModel"));
  connect(t_model_, &TrainingModelForm::changed, this, changed);
  connect(t_model_, &TrainingModelForm::modelChanged, this, [this](bool transformer) {
    // Each model's own default batch, unless the user chose another.
    if (transformer && t_batch_->value() == 128) t_batch_->setValue(16);
    if (!transformer && t_batch_->value() == 16) t_batch_->setValue(128);
    updateTrainingStates();
    revalidate();
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
  for (const Item& it : kTrainStrategies) {
    t_strategy_->addItem(QString::fromLatin1(it.key), QString::fromLatin1(it.key));
    t_strategy_->setItemData(t_strategy_->count() - 1, tr(it.text), Qt::ToolTipRole);
  }
  train_form_->addRow(tr("Strategy:"), t_strategy_);
  t_history_ = spin(QStringLiteral("trainHistory"), 1, 1, 1, tr(" steps"));
  fromSchema(t_history_, param("history_len", ParamScope::None));
  t_history_->setValue(1024);
  train_form_->addRow(tr("History length:"), t_history_);
  t_fwd_ = combo(QStringLiteral("forwardFormat"));
  t_bwd_ = combo(QStringLiteral("backwardFormat"));
  for (const QString& f : kFp8) {
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
  t_epochs_ = spin(QStringLiteral("epochs"), 1, 1000, 3);
  train_form_->addRow(tr("Epochs:"), t_epochs_);
  t_batch_ = spin(QStringLiteral("batchSize"), 1, 60000, 128);
  train_form_->addRow(tr("Batch size:"), t_batch_);
  t_seed_ = spin(QStringLiteral("trainSeed"), 0, 2147483647, 1);
  t_seed_->setToolTip(tr("Initial weights, data order and stochastic rounding"));
  train_form_->addRow(tr("Seed:"), t_seed_);
  t_train_limit_ = spin(QStringLiteral("trainLimit"), 0, 60000, 0);
  t_train_limit_->setSpecialValueText(tr("all 60000"));
  t_train_limit_->setToolTip(tr("Only the first N training images (0: all)"));
  train_form_->addRow(tr("Training images:"), t_train_limit_);
  t_test_limit_ = spin(QStringLiteral("testLimit"), 0, 10000, 0);
  t_test_limit_->setSpecialValueText(tr("all 10000"));
  train_form_->addRow(tr("Test images:"), t_test_limit_);
  // After the generic handler: a recipe brings its own weight_2d default.
  connect(t_recipe_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    const bool was = updating_;
    updating_ = true;
    t_w2d_->setChecked(recipeWeight2dDefault(key(t_recipe_)));
    updating_ = was;
    updateTrainingStates();
    revalidate();
  });
  scroll->setWidget(inner);
  return scroll;
}

QJsonObject ExperimentPanel::defaultTrainingConfig() {
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

QJsonObject ExperimentPanel::trainingConfig() const {
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

void ExperimentPanel::setTrainingConfig(const QJsonObject& c) {
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
  updateTrainingStates();
  revalidate();
}

void ExperimentPanel::updateTrainingStates() {
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

QList<ConfigProblem> ExperimentPanel::trainingProblems() const {
  QList<ConfigProblem> p;
  if (t_id_->text().trimmed().isEmpty()) p << ConfigProblem{tr("Run id"), tr("give the run an id.")};
  QString why;
  if (canonicalTrainingConfig(trainingConfig(), &why).isEmpty() && !why.isEmpty())
    p << ConfigProblem{tr("Training"), why};
  p << ConfigProblem{tr("Training"),
                     t_model_->isTransformer()
                         ? tr("the run trains the transformer on the fortunes text on the CPU into a new session "
                              "file, opened when it finishes; Cancel keeps the steps done")
                         : tr("the run trains on Fashion-MNIST on the CPU into a new session file, opened when it "
                              "finishes"),
                     false};
  return p;
}

void ExperimentPanel::requestRun() {
  if (currentTab() == Tab::Gemm) {
    Q_EMIT runRequested(config());
    return;
  }
  QString why;
  const QByteArray json = canonicalTrainingConfig(trainingConfig(), &why);
  if (!json.isEmpty())
    Q_EMIT trainingRunRequested(json, t_id_->text());
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
