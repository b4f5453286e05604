#include "forms/gemm_form.h"

#include "forms/experiment_runner.h"
#include "session/session_document.h"

#include "experiment/gemm/gemm_config.h"
#include "experiment/gemm/gemm_run.h"
#include "formats/format.h"
#ifdef FP8LAB_HAVE_HDF5
#include "io/tensor_import.h"
#endif
#include "gemm/accumulation_preset.h"
#include "gemm/error_split.h"
#include "gemm/gemm.h"
#include "gemm/random_matrix.h"
#include "scaling/scaling.h"

#include <QCheckBox>
#include <QDateTime>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>

#include <map>

namespace fp8lab::ui {

using namespace fields;

namespace {

const Item kScalings[] = {{"per-tensor-current", "Per tensor, current amax"},
                          {"per-tensor-delayed", "Per tensor, delayed (amax history)"},
                          {"per-row", "Per row of A / per column of B"},
                          {"1x128", "1x128 blocks along K"},
                          {"128x128", "128x128 tiles"},
                          {"mx32", "MX block-32 (E8M0 scales)"}};
// The accumulation models by their canonical names (toString(Accumulation)).
const Item kAccum[] = {{"split", "Split FP32 (promote every N_C of K)"},
                       {"fp32", "FP32, fixed order"},
                       {"fast", "Fast accumulation (model)"},
                       {"exact", "Exact (double)"}};
const Item kOutputs[] = {{"fp32", "FP32"}, {"bf16", "BF16"}, {"fp16", "FP16"}, {"e4m3fn", "E4M3FN"}, {"e5m2", "E5M2"}};
const Item kInputs[] = {
    {"distribution", "Distribution"}, {"import", "Imported tensor"}, {"training", "Trained weights of a run"}};
const Item kDists[] = {
    {"normal", "Normal"}, {"uniform", "Uniform"}, {"lognormal", "Log-normal"}, {"outliers", "Normal + outliers"}};

const ScalingPresetInfo* presetInfo(const QString& name) {
  for (const auto& p : scalingPresets())
    if (QString::fromStdString(p.name) == name) return &p;
  return nullptr;
}

/// The Preset entries of a strategy: every table preset of it, a power-of-two twin pair shown
/// once (as its non-power-of-two member; the checkbox picks the other).
QStringList presetsOf(const QString& strategy) {
  QStringList r;
  for (const auto& p : scalingPresets()) {
    if (panelStrategyOf(QString::fromStdString(p.name)) != strategy) continue;
    const std::string twin = p.delayed ? std::string() : scalingPresetTwin(p.name);
    if (!twin.empty() && requireScalingPreset(p.name).pow2) continue;
    r << QString::fromStdString(p.name);
  }
  return r;
}

/// The shape of an import spec's tensor from its header (tensorShape), cached per file version so
/// the form can show it on every edit; empty with *why when it cannot be read.
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

/// The tensor spec of operand `key` ("a" / "b") of a canonical config; "" for generated data.
QString tensorOf(const QJsonObject& c, const char* key) {
  return c.value(QLatin1String(key)).toObject().value(QStringLiteral("tensor")).toString();
}

/// Whether operand `key` is a tensor to import, its file perhaps not chosen yet ("tensor": "").
bool importsTensor(const QJsonObject& c, const char* key) {
  return c.value(QLatin1String(key)).toObject().contains(QStringLiteral("tensor"));
}

/// The training run whose first-layer kernel is B (trainedKernelOf), or nullopt.
std::optional<QString> trainedRunOf(const QJsonObject& c) {
  if (!tensorOf(c, "a").isEmpty()) return std::nullopt;
  const auto t = trainedKernelOf(tensorOf(c, "b").toStdString());
  if (!t) return std::nullopt;
  return QString::fromStdString(t->second);
}

Json toJson(const QJsonObject& o) {
  return Json::parse(QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString());
}

/// The form's label of a config key in core's messages ("scaling: ..." → "Strategy").
QString fieldOfKey(const std::string& message) {
  const std::string k = message.substr(0, message.find_first_of(":[/ "));
  if (k == "scaling" || k == "scaling_b") return QObject::tr("Strategy");
  if (k == "format_a") return QObject::tr("Format of A");
  if (k == "format_b") return QObject::tr("Format of B");
  if (k == "m" || k == "n" || k == "k") return QObject::tr("Shape");
  if (k == "a" || k == "b") return QObject::tr("Input");
  if (k == "accumulation" || k == "accumulation_preset" || k == "promotion_interval" || k == "fast_accum_bits")
    return QObject::tr("Accumulation");
  if (k == "alpha" || k == "beta" || k == "c" || k == "bias") return QObject::tr("Epilogue");
  return QObject::tr("Config");
}

} // namespace

/// Live mode, first (inside the tab's scroll area, so the status line never takes height from
/// the Run button): the GEMM re-runs as the fields change (live_experiment.h); Keep adds the
/// result shown to the session.
void GemmForm::buildLiveRow() {
  live_ = new QCheckBox(tr("&Live: re-run as the fields change"), this);
  live_->setObjectName(QStringLiteral("liveBox"));
  live_->setChecked(true);
  live_->setToolTip(tr("Re-run the GEMM experiment as you change its fields (small sizes only); the result is shown "
                       "but not added to the session until you keep it"));
  keep_ = new QPushButton(tr("&Keep"), this);
  keep_->setObjectName(QStringLiteral("keepButton"));
  keep_->setToolTip(tr("Add the live result shown to the session (Ctrl+K)"));
  keep_->setEnabled(false);
  auto* liveRow = new QHBoxLayout;
  liveRow->addWidget(live_, 1);
  liveRow->addWidget(keep_);
  form_->addRow(liveRow);
  live_status_ = new QLabel(this);
  live_status_->setObjectName(QStringLiteral("liveStatus"));
  live_status_->setWordWrap(true);
  live_status_->setText(tr("Change a field and the views follow (up to M\u00b7N\u00b7K = 512") +
                        QStringLiteral("\u00b3") + tr("); Keep (Ctrl+K) adds the result to the session."));
  form_->addRow(live_status_);
  connect(live_, &QCheckBox::toggled, this, &GemmForm::liveToggled);
  connect(keep_, &QPushButton::clicked, this, &GemmForm::keepRequested);
}

GemmForm::GemmForm(QWidget* parent) : QWidget(parent) {
  updating_ = true; // no reactions while the widgets are being built
  form_ = new QFormLayout(this);
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form_->setLabelAlignment(Qt::AlignRight);

  auto combo = [&](const QString& name) {
    QComboBox* c = comboBox(this, name);
    connect(c, &QComboBox::currentIndexChanged, this, &GemmForm::onWidgetChanged);
    return c;
  };
  auto spin = [&](const QString& name, int lo, int hi, int val, const QString& suffix = {}) {
    QSpinBox* s = spinBox(this, name, lo, hi, val, suffix);
    s->setAccelerated(true);
    connect(s, &QSpinBox::valueChanged, this, &GemmForm::onWidgetChanged);
    return s;
  };
  auto dspin = [&](const QString& name, double lo, double hi, double val, const QString& tip) {
    auto* d = new QDoubleSpinBox(this);
    d->setObjectName(name);
    d->setDecimals(6);
    d->setRange(lo, hi);
    d->setValue(val);
    d->setToolTip(tip);
    connect(d, &QDoubleSpinBox::valueChanged, this, &GemmForm::onWidgetChanged);
    return d;
  };
  auto section = [&](const QString& t) { form_->addRow(new QLabel(QStringLiteral("<b>%1</b>").arg(t), this)); };

  buildLiveRow();

  section(tr("Operands"));
  fmt_a_ = combo(QStringLiteral("formatA"));
  fmt_b_ = combo(QStringLiteral("formatB"));
  for (const QString& f :
       fp8Formats() + QStringList{QStringLiteral("E2M3"), QStringLiteral("E3M2"), QStringLiteral("E2M1")}) {
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
  for (const auto& [w, k] : {std::pair{m_, "m"}, {n_, "n"}, {k_, "k"}}) fromSchema(w, param(k));
  for (QSpinBox* s : {m_, n_, k_}) s->setMinimumWidth(56);
  auto* dims = new QHBoxLayout;
  dims->setSpacing(3);
  dims->addWidget(new QLabel(QStringLiteral("M"), this));
  dims->addWidget(m_);
  dims->addWidget(new QLabel(QStringLiteral("N"), this));
  dims->addWidget(n_);
  dims->addWidget(new QLabel(QStringLiteral("K"), this));
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
  pow2_ = new QCheckBox(tr("powers of two"), this);
  pow2_->setObjectName(QStringLiteral("pow2"));
  connect(pow2_, &QCheckBox::toggled, this, &GemmForm::onWidgetChanged);
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
  accum_->setToolTip(tr("How the K products are summed. The presets are one GPU instruction each: hopper_fp8, "
                        "ada_fp8 and blackwell_fp8 reproduce published outputs of real GPUs bit for bit, the ones "
                        "marked unsure follow MMA-Sim's models; each preset's tooltip names its source"));
  form_->addRow(tr("Accumulation:"), accum_);
  promo_ = spin(QStringLiteral("promotionInterval"), 1, 1, 1, tr(" of K"));
  fromSchema(promo_, param("promotion_interval"));
  form_->addRow(tr("Promotion N_C:"), promo_);
  fast_bits_ = spin(QStringLiteral("fastAccumBits"), 1, 1, 1, tr(" bits"));
  fromSchema(fast_bits_, param("fast_accum_bits"));
  form_->addRow(tr("Fast-accum bits:"), fast_bits_);
  output_ = combo(QStringLiteral("output"));
  fill(output_, kOutputs);
  form_->addRow(tr("Output type:"), output_);

  section(tr("Epilogue"));
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
  bias_ = new QCheckBox(tr("add a bias vector [N]"), this);
  bias_->setObjectName(QStringLiteral("bias"));
  bias_->setToolTip(tr("A normal random bias of N values, broadcast over the M rows"));
  connect(bias_, &QCheckBox::toggled, this, &GemmForm::onWidgetChanged);
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
  sigma_ = dspin(QStringLiteral("sigma"), 1e-6, 1e6, 1.0,
                 tr("Standard deviation (normal, log-normal in log space) or half-width (uniform)"));
  form_->addRow(tr("Scale \u03c3:"), sigma_);
  auto pathRow = [&](QLineEdit** edit, const QString& name, const QString& placeholder, const QString& title) {
    auto* row = new QHBoxLayout;
    *edit = new QLineEdit(this);
    (*edit)->setObjectName(name);
    (*edit)->setPlaceholderText(placeholder);
    connect(*edit, &QLineEdit::textChanged, this, &GemmForm::onWidgetChanged);
    auto* browse = new QPushButton(tr("Browse\u2026"), this);
    QLineEdit* e = *edit;
    connect(browse, &QPushButton::clicked, this, [this, e, title] {
      const QString f =
          QFileDialog::getOpenFileName(this, title, {}, tr("Tensors (*.npy *.safetensors *.h5 *.hdf5);;All files (*)"));
      if (!f.isEmpty()) e->setText(f);
    });
    row->addWidget(*edit, 1);
    row->addWidget(browse);
    return row;
  };
  form_->addRow(tr("Tensor A [M,K]:"),
                pathRow(&import_path_, QStringLiteral("importPath"),
                        tr(".npy, .safetensors or HDF5 file (empty: random A)"), tr("Import tensor")));
  form_->addRow(tr("Tensor B [K,N]:"), pathRow(&import_path_b_, QStringLiteral("importPathB"), tr("(empty: random B)"),
                                               tr("Import tensor B")));
  train_run_ = combo(QStringLiteral("trainingRun"));
  form_->addRow(tr("Training run:"), train_run_);
  seed_ = spin(QStringLiteral("seed"), 0, 2147483647, std::stoi(param("seed").def));
  form_->addRow(tr("Seed:"), seed_);
  backend_ = combo(QStringLiteral("backend"));
  backend_->addItem(tr("CPU reference"), QStringLiteral("cpu"));
  backend_->addItem(tr("CUDA (no GPU found)"), QStringLiteral("cuda"));
  // Auto: the GPU for each GEMM it can run, the CPU reference otherwise (fp8lab-cli --backend auto).
  backend_->addItem(tr("Auto (GPU when it can, else CPU)"), QStringLiteral("auto"));
  backend_->setCurrentIndex(2);
  form_->addRow(tr("Backend:"), backend_);

  updating_ = false;
  setConfig(defaultConfig());
}

QJsonObject GemmForm::defaultConfig() {
  const QJsonObject normal{{QStringLiteral("distribution"), QStringLiteral("normal")}, {QStringLiteral("scale"), 1.0}};
  return QJsonObject{{QStringLiteral("type"), QStringLiteral("gemm")},
                     {QStringLiteral("format_a"), QStringLiteral("E4M3FN")},
                     {QStringLiteral("format_b"), QStringLiteral("E4M3FN")},
                     {QStringLiteral("m"), 256},
                     {QStringLiteral("n"), 256},
                     {QStringLiteral("k"), 1024},
                     {QStringLiteral("scaling"), QStringLiteral("te_current")},
                     {QStringLiteral("accumulation"), QStringLiteral("split")},
                     {QStringLiteral("promotion_interval"), 128},
                     {QStringLiteral("output"), QStringLiteral("fp32")},
                     {QStringLiteral("alpha"), 1.0},
                     {QStringLiteral("beta"), 0.0},
                     {QStringLiteral("a"), normal},
                     {QStringLiteral("b"), normal},
                     {QStringLiteral("seed"), std::stoi(param("seed").def)}};
}

QJsonObject GemmForm::config() const {
  QJsonObject c;
  c[QStringLiteral("type")] = QStringLiteral("gemm");
  c[QStringLiteral("format_a")] = key(fmt_a_);
  c[QStringLiteral("format_b")] = key(fmt_b_);
  c[QStringLiteral("scaling")] = resolvedPreset();
  c[QStringLiteral("seed")] = seed_->value();
  const QString acc = key(accum_);
  if (accumulationPreset(acc.toStdString())) {
    c[QStringLiteral("accumulation_preset")] = acc;
  } else {
    c[QStringLiteral("accumulation")] = acc;
    // Only the parameters the model reads (accumulationReads, the rule of the parser and `gemm`).
    const Accumulation model = parseAccumulation(acc.toStdString()).value_or(Accumulation::Exact);
    if (accumulationReads(model, "promotion_interval")) c[QStringLiteral("promotion_interval")] = promo_->value();
    if (accumulationReads(model, "fast_accum_bits")) c[QStringLiteral("fast_accum_bits")] = fast_bits_->value();
  }
  c[QStringLiteral("output")] = key(output_);
  c[QStringLiteral("alpha")] = alpha_->value();
  c[QStringLiteral("beta")] = beta_->value();
  auto source = [](const QSpinBox* seed, const QDoubleSpinBox* scale) {
    return QJsonObject{{QStringLiteral("seed"), seed->value()}, {QStringLiteral("scale"), scale->value()}};
  };
  if (float(beta_->value()) != 0.0f) c[QStringLiteral("c")] = source(c_seed_, c_scale_);
  if (bias_->isChecked()) c[QStringLiteral("bias")] = source(bias_seed_, bias_scale_);
  const QString in = key(input_);
  const QString ta = import_path_->text(), tb = import_path_b_->text();
  if (in == QStringLiteral("import") && ta.isEmpty() && tb.isEmpty()) {
    // No file chosen yet: the shape and an empty tensor for A, which validate() refuses.
    c[QStringLiteral("m")] = m_->value();
    c[QStringLiteral("k")] = k_->value();
    c[QStringLiteral("n")] = n_->value();
    c[QStringLiteral("a")] = QJsonObject{{QStringLiteral("tensor"), QString()}};
  } else if (in == QStringLiteral("import")) {
    // Each tensor fixes its dimensions; an operand without a file is normal with scale 1.
    if (ta.isEmpty())
      c[QStringLiteral("m")] = m_->value();
    else
      c[QStringLiteral("a")] = QJsonObject{{QStringLiteral("tensor"), ta}};
    if (tb.isEmpty())
      c[QStringLiteral("n")] = n_->value();
    else
      c[QStringLiteral("b")] = QJsonObject{{QStringLiteral("tensor"), tb}};
  } else if (in == QStringLiteral("training")) {
    c[QStringLiteral("m")] = m_->value();
    const QString file = session_ ? session_->fileName() : QString();
    c[QStringLiteral("b")] = QJsonObject{
        {QStringLiteral("tensor"), QString::fromStdString(trainedKernelSpec(
                                       file.toStdString(), train_run_->currentData().toString().toStdString()))}};
  } else {
    c[QStringLiteral("m")] = m_->value();
    c[QStringLiteral("k")] = k_->value();
    c[QStringLiteral("n")] = n_->value();
    const QJsonObject op{{QStringLiteral("distribution"), key(dist_)}, {QStringLiteral("scale"), sigma_->value()}};
    c[QStringLiteral("a")] = op;
    c[QStringLiteral("b")] = op;
  }
  return c;
}

void GemmForm::setConfig(const QJsonObject& c) {
  const GemmExperimentConfig d; // the parser's defaults
  updating_ = true;
  auto str = [&](const char* k, const std::string& def) {
    return c.value(QLatin1String(k)).toString(QString::fromStdString(def));
  };
  auto num = [&](const char* k, double def) { return c.value(QLatin1String(k)).toDouble(def); };
  setData(fmt_a_, str("format_a", d.format_a));
  setData(fmt_b_, str("format_b", d.format_b));
  m_->setValue(int(num("m", double(d.m))));
  k_->setValue(int(num("k", double(d.k))));
  n_->setValue(int(num("n", double(d.n))));
  seed_->setValue(int(num("seed", double(d.seed))));
  // The strategy of the preset, then the preset (a pow2 twin ticks the box).
  const QString preset = str("scaling", d.scaling);
  if (const QString s = panelStrategyOf(preset); !s.isEmpty()) setData(scaling_, s);
  fillPresets(preset);
  if (const QString ap = str("accumulation_preset", ""); !ap.isEmpty()) {
    setData(accum_, ap);
  } else {
    const auto model = parseAccumulation(str("accumulation", toString(d.gemm.accumulation)).toStdString());
    setData(accum_, QString::fromLatin1(toString(model.value_or(d.gemm.accumulation))));
  }
  promo_->setValue(int(num("promotion_interval", d.gemm.promotion_interval)));
  fast_bits_->setValue(int(num("fast_accum_bits", d.gemm.fast_accum_bits)));
  const auto out = parseOutputType(str("output", toString(d.gemm.output)).toStdString());
  setData(output_, QString::fromLatin1(toString(out.value_or(d.gemm.output))));
  alpha_->setValue(num("alpha", d.gemm.alpha));
  beta_->setValue(num("beta", d.gemm.beta));
  // C keeps its fields while beta = 0 (they are read only then).
  if (const QJsonObject cs = c.value(QStringLiteral("c")).toObject(); !cs.isEmpty()) {
    c_seed_->setValue(int(cs.value(QStringLiteral("seed")).toDouble(double(d.c_source.seed))));
    c_scale_->setValue(cs.value(QStringLiteral("scale")).toDouble(d.c_source.scale));
  }
  const QJsonObject bs = c.value(QStringLiteral("bias")).toObject();
  bias_->setChecked(!bs.isEmpty());
  if (!bs.isEmpty()) {
    bias_seed_->setValue(int(bs.value(QStringLiteral("seed")).toDouble(double(d.bias_source.seed))));
    bias_scale_->setValue(bs.value(QStringLiteral("scale")).toDouble(d.bias_source.scale));
  }
  // The operands: trained weights, imported tensors or one distribution for both.
  const QJsonObject a = c.value(QStringLiteral("a")).toObject();
  if (const auto run = trainedRunOf(c)) {
    setData(input_, QStringLiteral("training"));
    setData(train_run_, *run);
  } else if (importsTensor(c, "a") || importsTensor(c, "b")) {
    setData(input_, QStringLiteral("import"));
    import_path_->setText(tensorOf(c, "a"));
    import_path_b_->setText(tensorOf(c, "b"));
  } else {
    setData(input_, QStringLiteral("distribution"));
    setData(dist_,
            a.value(QStringLiteral("distribution")).toString(QString::fromLatin1(toString(d.a.random.distribution))));
    sigma_->setValue(a.value(QStringLiteral("scale")).toDouble(d.a.random.scale));
  }
  updating_ = false;
  updateVisibility();
}

bool GemmForm::loadCanonical(const QByteArray& json, QString* why) {
  auto no = [&](const QString& w) {
    if (why) *why = w;
    return false;
  };
  GemmExperimentConfig cfg;
  try {
    const JsonDocument doc = JsonDocument::parse(json.toStdString());
    if (const std::string e = parseGemmConfig(doc.root(), &cfg, &doc); !e.empty()) return no(QString::fromStdString(e));
  } catch (const JsonTextError& e) {
    return no(tr("not valid JSON: %1 (line %2, column %3)")
                  .arg(QString::fromStdString(e.what()))
                  .arg(e.pos.line)
                  .arg(e.pos.column));
  }
  const GemmExperimentConfig d;
  const char* hidden = nullptr;
  // An accumulation preset sets the group and the promotion itself.
  if (cfg.accumulation_preset.empty() && cfg.gemm.fast_accum_group != d.gemm.fast_accum_group)
    hidden = "fast_accum_group";
  if (cfg.accumulation_preset.empty() && cfg.gemm.fast_accum_promotes != d.gemm.fast_accum_promotes)
    hidden = "fast_accum_promotes";
  if (cfg.accumulation_preset.empty() && !(cfg.gemm.mma == d.gemm.mma)) hidden = "mma_*";
  if (cfg.c_source.fromFile()) hidden = "c.file";
  if (cfg.gemm.output_quant_scale != d.gemm.output_quant_scale) hidden = "output_quant_scale";
  if (cfg.tile != d.tile) hidden = "tile";
  if (cfg.store_inputs != d.store_inputs || cfg.store_quantized != d.store_quantized ||
      cfg.store_error_maps != d.store_error_maps)
    hidden = "store_*";
  if (hidden)
    return no(
        tr("the panel has no field for \"%1\"; run this config with fp8lab-cli run").arg(QString::fromLatin1(hidden)));
  if (!cfg.a.tensor.empty() || !cfg.b.tensor.empty()) {
    if (cfg.a.transpose || cfg.b.transpose)
      return no(tr("the panel imports tensors untransposed; this config transposes one"));
    const RandomMatrixOptions def;
    for (const OperandSource* o : {&cfg.a, &cfg.b})
      if (o->tensor.empty() &&
          (o->random.distribution != def.distribution || o->random.scale != def.scale || o->random.sigma != def.sigma ||
           o->random.outlier_fraction != def.outlier_fraction || o->random.outlier_factor != def.outlier_factor))
        return no(tr("beside an imported tensor the panel's random operand is normal with scale 1; this config's "
                     "differs (run it with fp8lab-cli run)"));
  } else {
    const RandomMatrixOptions &ra = cfg.a.random, &rb = cfg.b.random;
    const RandomMatrixOptions def;
    if (ra.distribution != rb.distribution || ra.scale != rb.scale || ra.sigma != def.sigma || rb.sigma != def.sigma ||
        ra.outlier_fraction != def.outlier_fraction || rb.outlier_fraction != def.outlier_fraction ||
        ra.outlier_factor != def.outlier_factor || rb.outlier_factor != def.outlier_factor)
      return no(tr("the panel draws A and B from one distribution with one scale; this config's operands differ "
                   "(run it with fp8lab-cli run)"));
  }
  const QString preset = QString::fromStdString(cfg.scaling);
  if (panelStrategyOf(preset).isEmpty())
    return no(tr("the scaling preset '%1' cannot scale both operands of a GEMM").arg(preset));
  if (!scalingPreset(cfg.scaling))
    return no(tr("the panel has no fields for the preset '%1' (run it with fp8lab-cli run)").arg(preset));
  // Every other key: the fields must give the same config back; the keys they cannot hold are
  // named and the fields stay as they were.
  const Json want = gemmConfigJson(cfg);
  const QJsonObject before = config();
  setConfig(QJsonDocument::fromJson(QByteArray::fromStdString(want.dump())).object());
  GemmExperimentConfig back;
  QStringList lost;
  if (const std::string e = parseGemmConfig(toJson(config()), &back); !e.empty()) {
    lost << QString::fromStdString(e);
  } else {
    const Json got = gemmConfigJson(back);
    for (const auto& [k, v] : want.items())
      if (!got.contains(k) || got[k] != v) lost << QStringLiteral("\"%1\"").arg(QString::fromStdString(k));
  }
  if (!lost.isEmpty()) {
    setConfig(before);
    return no(
        tr("the panel has no field for %1; run this config with fp8lab-cli run").arg(lost.join(QStringLiteral(", "))));
  }
  return true;
}

QString GemmForm::backend() const {
  return key(backend_);
}

void GemmForm::setBackend(const QString& backend) {
  setData(backend_, backend);
}

void GemmForm::onWidgetChanged() {
  if (updating_) return;
  updateVisibility();
  Q_EMIT changed();
}

void GemmForm::fillPresets(const QString& select) {
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

void GemmForm::updatePow2(std::optional<bool> want) {
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

QString GemmForm::resolvedPreset() const {
  const QString base = key(preset_);
  if (pow2_->isEnabled() && pow2_->isChecked()) {
    const std::string twin = scalingPresetTwin(base.toStdString());
    if (!twin.empty()) return QString::fromStdString(twin);
  }
  return base;
}

void GemmForm::updateVisibility() {
  form_->setRowVisible(pow2_, key(scaling_) != QStringLiteral("per-tensor-delayed"));
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
  const bool was = updating_;
  updating_ = true;
  if (ap) {
    promo_->setValue(ap->promotes ? ap->promotion_interval : promo_->value());
    fast_bits_->setValue(ap->bits);
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
  // The import rows are layouts; find them through their line edits.
  for (int r = 0; r < form_->rowCount(); ++r) {
    QLayoutItem* it = form_->itemAt(r, QFormLayout::FieldRole);
    if (it && it->layout() && (it->layout()->indexOf(import_path_) >= 0 || it->layout()->indexOf(import_path_b_) >= 0))
      form_->setRowVisible(r, in == QStringLiteral("import"));
  }
  // An imported operand brings its shape: A fixes M and K, B fixes K and N. The fields show the
  // shape the run will have.
  const bool ta = in == QStringLiteral("import") && !import_path_->text().isEmpty();
  const bool tb = in == QStringLiteral("import") && !import_path_b_->text().isEmpty();
  m_->setEnabled(!ta);
  k_->setEnabled(!ta && !tb);
  n_->setEnabled(!tb);
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
  const QString from = tr("taken from the imported tensor's shape");
  for (const auto& [w, fixed, k] : {std::tuple{m_, ta, "m"}, {k_, ta || tb, "k"}, {n_, tb, "n"}})
    w->setToolTip(fixed ? from : QString::fromStdString(paramHelp(param(k), false)));
  form_->setRowVisible(train_run_, in == QStringLiteral("training"));
}

QList<ConfigProblem> GemmForm::validate(const QJsonObject& c, const QString& backend, bool gpu_available,
                                        const QStringList& training_runs) {
  QList<ConfigProblem> p;
  const GemmExperimentConfig d;
  const QString a = c.value(QStringLiteral("format_a")).toString(QString::fromStdString(d.format_a)),
                b = c.value(QStringLiteral("format_b")).toString(QString::fromStdString(d.format_b));
  const QString preset = c.value(QStringLiteral("scaling")).toString(QString::fromStdString(d.scaling));
  const auto sp = scalingPreset(preset.toStdString());
  const bool mx = sp && isMxRule(sp->rule);
  const bool gpu = backend == QStringLiteral("cuda");
  for (const auto& [name, f] : {std::pair{QObject::tr("Format of A"), a}, std::pair{QObject::tr("Format of B"), b}}) {
    if (!Format::byName(f.toStdString()))
      p << ConfigProblem{name, QObject::tr("'%1' is not a known format.").arg(f)};
    else if (mx && !mxElementFormats().contains(f))
      p << ConfigProblem{
          name, QObject::tr("%1 is not an MX element format (OCP MX v1.0: E4M3FN, E5M2, E2M3, E3M2, E2M1).").arg(f)};
    else if (!mx && !fp8Formats().contains(f))
      p << ConfigProblem{
          name, QObject::tr("%1 is a 6- or 4-bit MX element type: pick MX block-32 scaling to use it.").arg(f)};
  }
  // The shape: the config's M, K, N; a tensor's dimensions where it fixes them.
  const QString pa = tensorOf(c, "a"), pb = tensorOf(c, "b");
  const auto trained = trainedRunOf(c);
  std::vector<int64_t> sa, sb;
  if (!trained)
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
  if (!trained && (importsTensor(c, "a") || importsTensor(c, "b")) && pa.isEmpty() && pb.isEmpty())
    p << ConfigProblem{QObject::tr("Tensor file"), QObject::tr("choose a tensor file to import.")};
  if (sa.size() == 2 && sb.size() == 2 && sa[1] != sb[0])
    p << ConfigProblem{QObject::tr("Tensor file"), QObject::tr("A is [%1, %2] and B is [%3, %4]: the inner dimensions "
                                                               "(K) differ.")
                                                       .arg(sa[0])
                                                       .arg(sa[1])
                                                       .arg(sb[0])
                                                       .arg(sb[1])};
  auto dim = [&](const char* key, int64_t from_tensor) {
    return c.contains(QLatin1String(key)) ? int64_t(c.value(QLatin1String(key)).toDouble()) : from_tensor;
  };
  const int64_t m = dim("m", sa.size() == 2 ? sa[0] : d.m), n = dim("n", sb.size() == 2 ? sb[1] : d.n),
                k = dim("k", sa.size() == 2   ? sa[1]
                             : sb.size() == 2 ? sb[0]
                                              : d.k);
  for (const auto& [name, key] :
       {std::pair{QStringLiteral("M"), "m"}, {QStringLiteral("N"), "n"}, {QStringLiteral("K"), "k"}})
    if (c.contains(QLatin1String(key)))
      if (const QString why = rangeProblem(name, c.value(QLatin1String(key)).toDouble(), param(key)); !why.isEmpty())
        p << ConfigProblem{QObject::tr("Shape"), why};
  for (const auto& [name, key] : {std::pair{QObject::tr("Promotion N_C"), "promotion_interval"},
                                  {QObject::tr("Fast-accum bits"), "fast_accum_bits"}})
    if (c.contains(QLatin1String(key)))
      if (const QString why = rangeProblem(name, c.value(QLatin1String(key)).toDouble(), param(key)); !why.isEmpty())
        p << ConfigProblem{name, why};
  // The experiment's own estimate (gemmExperimentBytes) against the memory available now.
  if (const std::string mem = gemmExperimentMemoryProblem(m, n, k); !mem.empty())
    p << ConfigProblem{QObject::tr("Shape"), QString::fromStdString(mem) + QLatin1Char('.')};
  if (panelStrategyOf(preset) == QStringLiteral("per-tensor-delayed"))
    p << ConfigProblem{QObject::tr("Strategy"),
                       QObject::tr("a single GEMM has no amax history: delayed scaling (%1) runs in training "
                                   "experiments (the Training tab).")
                           .arg(preset)};
  if (trained) {
    if (training_runs.isEmpty())
      p << ConfigProblem{QObject::tr("Training run"),
                         QObject::tr("the session has no training run: open or run one first.")};
    else if (!training_runs.contains(*trained))
      p << ConfigProblem{QObject::tr("Training run"), QObject::tr("choose a training run.")};
  }
  // What core's parser says of the config (the rules of `fp8lab-cli run`), when nothing above
  // already refuses it.
  bool blocked = false;
  for (const auto& x : p) blocked |= x.blocking;
  if (!blocked) {
    GemmExperimentConfig cfg;
    if (const std::string e = parseGemmConfig(toJson(c), &cfg); !e.empty()) {
      const auto colon = e.find(": ");
      p << ConfigProblem{fieldOfKey(e), QString::fromStdString(colon == std::string::npos ? e : e.substr(colon + 2))};
    }
  }
  const QString ap_name = c.value(QStringLiteral("accumulation_preset")).toString();
  const auto ap = accumulationPreset(ap_name.toStdString());
  const QString acc = ap ? ap_name : c.value(QStringLiteral("accumulation")).toString(QStringLiteral("split"));
  const auto model = parseAccumulation(acc.toStdString());
  if (ap)
    p << ConfigProblem{QObject::tr("Accumulation"),
                       ap->unsure ? QObject::tr("%1 is UNSURE: no measured data exist for it (MMA-Sim's model or an "
                                                "assumption); see the preset's tooltip.")
                                        .arg(acc)
                                  : QObject::tr("%1 reproduces published outputs of real GPUs bit for bit (%2); it is "
                                                "a model of that instruction, not a measurement of this machine.")
                                        .arg(acc, QString::fromStdString(ap->measured)),
                       false};
  if (!ap && model == Accumulation::FastAccum)
    p << ConfigProblem{QObject::tr("Accumulation"),
                       QObject::tr("Fast accumulation is a model of undocumented hardware behaviour "
                                   "(DeepSeek-V3 \u00a73.3), not a measurement."),
                       false};
  if (pa.isEmpty() && pb.isEmpty() &&
      c.value(QStringLiteral("a")).toObject().value(QStringLiteral("scale")).toDouble(1) <= 0)
    p << ConfigProblem{QObject::tr("Scale \u03c3"), QObject::tr("\u03c3 must be positive.")};
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
    if (ap || model == Accumulation::FastAccum || model == Accumulation::Exact)
      p << ConfigProblem{
          QObject::tr("Backend"),
          QObject::tr("the '%1' accumulation is a CPU model; the GPU accumulates as the hardware does.").arg(acc)};
    if (k % 16 != 0)
      p << ConfigProblem{QObject::tr("Shape"),
                         QObject::tr("cuBLASLt FP8 needs K to be a multiple of 16 (K = %1).").arg(k)};
  }
  return p;
}

void GemmForm::setSession(SessionDocument* s) {
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
    Q_EMIT trainingRunsChanged();
  };
  connect(s, &SessionDocument::runAdded, this, refill);
  connect(s, &SessionDocument::runRemoved, this, refill);
  connect(s, &SessionDocument::reset_, this, refill);
  refill();
}

void GemmForm::setGpu(bool available, const QString& name) {
  backend_->setItemText(1, available ? tr("CUDA \u2014 %1").arg(name) : tr("CUDA (no GPU found)"));
}

bool GemmForm::isLive() const {
  return live_->isChecked();
}

void GemmForm::setLive(bool on) {
  live_->setChecked(on);
}

void GemmForm::setLiveStatus(const QString& text, bool can_keep) {
  live_status_->setText(text);
  keep_->setEnabled(can_keep);
}

QString GemmForm::liveStatus() const {
  return live_status_->text();
}

} // namespace fp8lab::ui
