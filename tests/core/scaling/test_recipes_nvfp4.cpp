// Tests for core/scaling/nvfp4 and core/scaling/hadamard: NVFP4 as Transformer Engine, torchao and
// the cuDNN doc compute it, TE's 2-D tiles, 4over6, random Hadamard transform and software
// stochastic rounding.
//
// Expected values come from outside the code under test: the recipe vectors (FP8LAB_RECIPES_CSV,
// sections A–E, an exact emulation of the systems), or hand derivations written in the comments.
// "derived" marks float32 arithmetic done by hand with Python's struct-based float32 rounding
// (f(x) = unpack('f', pack('f', x)); one rounding per operation, as the kernels do).
#include <QtTest>

#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "compare_bits.h"
#include "formats/format.h"
#include "recipe_vectors.h"
#include "scaling/hadamard.h"
#include "scaling/nvfp4.h"

using namespace fp8lab;
using fp8lab::test::RecipeVector;

namespace {
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

Nvfp4Config preset(const char* name) {
  auto c = nvfp4Preset(name);
  if (!c) qFatal("unknown NVFP4 preset %s", name);
  return *c;
}

uint32_t bits(float v) {
  return std::bit_cast<uint32_t>(v);
}

QString hexList(const std::vector<uint32_t>& v) {
  QStringList parts;
  for (uint32_t c : v)
    parts << QStringLiteral("0x%1").arg(c, 0, 16).toUpper().replace(QStringLiteral("0X"), QStringLiteral("0x"));
  return parts.join(QLatin1Char(';'));
}
QString hexList(const std::vector<uint8_t>& v) {
  return hexList(std::vector<uint32_t>(v.begin(), v.end()));
}

/// How one CSV row is run: a quantizer call (config, shape, axis) or, for section E, one call of
/// stochasticRoundE2M1Te per element with the row's random byte.
struct RowPlan {
  bool element_level = false;
  uint8_t rbits = 0;
  Nvfp4Config cfg;
  Axis axis = Axis::Cols;
  int64_t rows = 0, cols = 0;
  /// The CSV lists the columnwise copy (TE stores X^T): codes are X^T's data row-major and the
  /// scale codes X^T's scale tensor [cols, rows/16] row-major.
  bool columnwise_listing = false;
};

/// The shape of a matrix row from its notes: "shape RxC", or "X^T is AxB" (X is [B, A]).
std::optional<std::pair<int64_t, int64_t>> shapeFromNotes(const std::string& notes) {
  std::smatch m;
  if (std::regex_search(notes, m, std::regex(R"(shape (\d+)x(\d+))")))
    return std::make_pair(std::stoll(m[1]), std::stoll(m[2]));
  if (std::regex_search(notes, m, std::regex(R"(X\^T is (\d+)x(\d+))")))
    return std::make_pair(std::stoll(m[2]), std::stoll(m[1]));
  return std::nullopt;
}

/// Maps a CSV variant to a preset (the vectors' recipes A–E: TE, torchao and cuDNN NVFP4, RHT, SR); nullopt for a
/// variant this test does not know, which fails the row.
std::optional<RowPlan> planFor(const RecipeVector& v) {
  RowPlan p;
  const std::string& var = v.variant;
  const int64_t n = static_cast<int64_t>(v.input.size());
  std::smatch m;
  if (var == "te_sw_stochastic_round_fp4_e2m1") {
    // The case names the random byte: "sr_x=4.0_r=0x80".
    if (!std::regex_search(v.name, m, std::regex(R"(r=0x([0-9A-Fa-f]+))"))) return std::nullopt;
    p.element_level = true;
    p.rbits = static_cast<uint8_t>(std::stoul(m[1], nullptr, 16));
    return p;
  }
  if (var == "te_nvfp4_1x16" || var == "te_nvfp4_1x16_rowwise_same_input" ||
      var == "te_nvfp4_1x16_rowwise_no_rht_contrast") {
    p.cfg = preset("nvfp4_te");
  } else if (var == "te_nvfp4_2d_16x16_rowwise") {
    p.cfg = preset("nvfp4_te_2d");
  } else if (var == "te_nvfp4_2d_16x16_columnwise") {
    p.cfg = preset("nvfp4_te_2d");
    p.axis = Axis::Rows;
    p.columnwise_listing = true;
  } else if (std::regex_match(var, m, std::regex(R"(te_nvfp4_4over6_(MAE|MSE)_e4m3max(256|448))"))) {
    p.cfg = preset(m[1] == "MSE" ? "nvfp4_te_4over6_mse" : "nvfp4_te_4over6");
    p.cfg.e4m3_bound = std::stoi(m[2]);
  } else if (var == "te_nvfp4_rht16_columnwise" || var == "te_nvfp4_rht16_columnwise_no_random_sign") {
    // "16 consecutive elements of one column of x": x is [n, 1], blocks 16×1 down the column.
    p.cfg = preset("nvfp4_te_rht");
    if (var == "te_nvfp4_rht16_columnwise_no_random_sign") p.cfg.rht_sign_mask = 0;
    p.axis = Axis::Rows;
    p.columnwise_listing = true;
  } else if (var == "torchao_nvfp4_quantize") {
    p.cfg = preset("nvfp4_torchao");
  } else if (var == "torchao_nvfp4_quantize_static_pts") {
    // The notes name the calibrated amax: "per_tensor_scale from calibrated amax 5.0".
    if (!std::regex_search(v.notes, m, std::regex(R"(calibrated amax ([0-9.eE+-]+))"))) return std::nullopt;
    p.cfg = preset("nvfp4_torchao");
    p.cfg.tensor_scale_source = Nvfp4TensorScaleSource::StaticAmax;
    p.cfg.static_amax = std::stof(m[1]);
  } else if (var == "cudnn_doc_block_scale_quantize_single_level") {
    p.cfg = preset("nvfp4_cudnn_doc");
  } else {
    return std::nullopt;
  }
  if (auto s = shapeFromNotes(v.notes)) {
    p.rows = s->first;
    p.cols = s->second;
  } else if (p.axis == Axis::Rows) {
    p.rows = n;
    p.cols = 1;
  } else {
    p.rows = 1;
    p.cols = n;
  }
  return p;
}

const std::vector<RecipeVector>& nvfp4Rows() {
  static const std::vector<RecipeVector> rows = [] {
    std::vector<RecipeVector> out;
    for (const char* s : {"A", "B", "C", "D", "E"})
      for (auto& v : fp8lab::test::recipeVectors(s)) out.push_back(std::move(v));
    return out;
  }();
  return rows;
}

std::vector<float> randomTensor(int64_t n, uint32_t seed, float sd = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, sd);
  for (auto& e : v) e = d(g);
  return v;
}

std::vector<float> transpose(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[static_cast<size_t>(j * rows + i)] = x[static_cast<size_t>(i * cols + j)];
  return t;
}
template <typename T> std::vector<T> transposeCodes(const std::vector<T>& x, int64_t rows, int64_t cols) {
  std::vector<T> t(x.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[static_cast<size_t>(j * rows + i)] = x[static_cast<size_t>(i * cols + j)];
  return t;
}
} // namespace

class TestRecipesNvfp4 : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void recipeVectors_data();
  void recipeVectors();
  void everyRowOfSectionsAtoEIsRun();
  void teAmaxZeroHandDerived();
  void teRampHandDerived();
  void teNaNAndInfHandDerived();
  void torchaoNaNAndInfHandDerived();
  void torchaoStaticAndSingleLevel();
  void cudnnZeroBlockLiteral();
  void edgeCasesOfEachPreset();
  void dequantizeTeHandDerived();
  void dequantizeTe4over6Uses1536();
  void dequantizeTorchaoHandDerived();
  void e2m1RneMatchesFormatE2M1();
  void stochasticRoundingHandDerived();
  void stochasticRoundingMatchesTeFormula();
  void stochasticRoundingGridPointsNeverMove();
  void stochasticRoundingRandomBytes();
  void hadamardSquareIs16I();
  void rhtMatrixIsOrthogonal();
  void rhtOfUnitVectorIsSignedHadamardRow();
  void rhtBf16Rounding();
  void rhtColumnsMatchSingleTransform();
  void rhtAlongColsMatchesRowsOnTranspose();
  void twoDColumnwiseIsTransposeOfRowwise();
  void fourOverSixTieTakesMap6();
  void fourOverSixTwoDTileChoice();
  void rowsAxisMatchesColsOnTranspose();
  void threadsDoNotChangeResults();
  void refusals();
  void presetsTable();
};

// ---- the recipe vectors -------------------------------------------------------------------------

void TestRecipesNvfp4::recipeVectors_data() {
  QTest::addColumn<int>("index");
  const auto& rows = nvfp4Rows();
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    const auto& v = rows[static_cast<size_t>(i)];
    QTest::newRow((v.recipe + "/" + v.variant + "/" + v.name).c_str()) << i;
  }
}

void TestRecipesNvfp4::recipeVectors() {
  QFETCH(int, index);
  const RecipeVector& v = nvfp4Rows()[static_cast<size_t>(index)];
  const auto plan = planFor(v);
  if (!plan) QFAIL(("no mapping for variant " + v.variant + " / case " + v.name).c_str());

  if (plan->element_level) {
    std::vector<uint32_t> got;
    for (float x : v.input) got.push_back(stochasticRoundE2M1Te(x, plan->rbits));
    QCOMPARE(hexList(got), hexList(v.element_codes));
    QVERIFY(v.scale_codes.empty());
    return;
  }

  QCOMPARE(plan->rows * plan->cols, static_cast<int64_t>(v.input.size()));
  const Nvfp4Tensor q = quantizeNvfp4(v.input.data(), plan->rows, plan->cols, plan->cfg, plan->axis);
  std::vector<uint8_t> codes = q.codes, scales = q.scale_codes;
  if (plan->columnwise_listing) {
    codes = transposeCodes(codes, plan->rows, plan->cols);
    scales = transposeCodes(scales, q.blockRows(), q.blockCols());
  }
  QCOMPARE(hexList(codes), hexList(v.element_codes));
  QCOMPARE(hexList(scales), hexList(v.scale_codes));
  if (v.tensor_scale_bits) {
    QVERIFY(q.has_tensor_scale);
    QCOMPARE(QStringLiteral("0x%1").arg(bits(q.tensor_scale), 8, 16, QLatin1Char('0')),
             QStringLiteral("0x%1").arg(*v.tensor_scale_bits, 8, 16, QLatin1Char('0')));
  } else {
    QVERIFY(!q.has_tensor_scale); // single-level rule: the CSV has no tensor scale
  }
}

void TestRecipesNvfp4::everyRowOfSectionsAtoEIsRun() {
  // recipeVectors_data adds every A–E row; here each must map to a config (none skipped), and the
  // file must still hold the sections (A 11, B 4, C 4, D 4, E 6 rows in the 58-row file).
  const auto& rows = nvfp4Rows();
  QVERIFY(rows.size() >= 29);
  for (const auto& v : rows) QVERIFY2(planFor(v).has_value(), (v.variant + "/" + v.name).c_str());
}

// ---- hand-derived quantizations -----------------------------------------------------------------

void TestRecipesNvfp4::teAmaxZeroHandDerived() {
  // TE A.1 step 2: amax 0 → 2688/0 = inf → fminf FLT_MAX → amax == 0 → S_enc = 1.0. Step 5: block
  // amax 0 → S_dec_b = 0 → E4M3 0x00; step 6: 1/(0·1) = inf → FLT_MAX; step 7: 0·FLT_MAX = 0 → 0x0.
  const std::vector<float> x(32, 0.0f);
  const Nvfp4Tensor q = quantizeNvfp4(x.data(), 1, 32, preset("nvfp4_te"));
  QCOMPARE(bits(q.tensor_scale), 0x3F800000u);
  QCOMPARE(bits(q.amax), 0u);
  QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0x00, 0x00}));
  QCOMPARE(q.codes, std::vector<uint8_t>(32, 0x0));
  QCOMPARE_BITS(q.dequantize(), std::vector<float>(32, 0.0f));
}

void TestRecipesNvfp4::teRampHandDerived() {
  // Block 1, 2, ..., 16, amax 16 (derived): S_enc = 2688/16 = 168; fl(1/6) = 0x3E2AAAAB;
  // 168·fl(1/6) = 28.0000008 → fl = 28.0; S_dec_b = 16·28 = 448 → E4M3 0x7E; S_dec = fl(1/168) =
  // 0x3BC30C31; 448·S_dec = fl(2.6666667) = 0x402AAAAB; S_enc_b = fl(1/that) = 0.375 exactly.
  // x·0.375 = .375 .75 1.125 1.5 1.875 2.25 2.625 3 3.375 3.75 4.125 4.5 4.875 5.25 5.625 6; RNE on
  // {0,.5,1,1.5,2,3,4,6} (0.75 tie → 1.0, 2.25 → 2, 3.375 → 3, 5.25 → 6) gives the codes below.
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i + 1);
  const Nvfp4Tensor q = quantizeNvfp4(x.data(), 1, 16, preset("nvfp4_te"));
  QCOMPARE(bits(q.tensor_scale), 0x43280000u); // 168
  QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0x7E}));
  QCOMPARE(q.codes, (std::vector<uint8_t>{1, 2, 2, 3, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7}));
}

void TestRecipesNvfp4::teNaNAndInfHandDerived() {
  {
    // NaN element: TE's amax reductions (fmaxf) drop it, amax = 6 → S_enc = 448; block scale
    // 6·fl(448·fl(1/6)) = 448.00003 → satfinite 0x7E; S_enc_b = 1/(448·fl(1/448)) = 1.0 (derived);
    // NaN·1 → cvt.rn.satfinite → +6 (0x7); −0 keeps its sign (0x8); −3 → 0xD.
    std::vector<float> x(16, 0.0f);
    x[0] = kNaN;
    x[1] = 6.0f;
    x[2] = -0.0f;
    x[3] = -3.0f;
    const Nvfp4Tensor q = quantizeNvfp4(x.data(), 1, 16, preset("nvfp4_te"));
    QCOMPARE(bits(q.amax), bits(6.0f));
    QCOMPARE(bits(q.tensor_scale), 0x43E00000u);
    QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0x7E}));
    QCOMPARE(q.codes[0], uint8_t(0x7));
    QCOMPARE(q.codes[1], uint8_t(0x7));
    QCOMPARE(q.codes[2], uint8_t(0x8));
    QCOMPARE(q.codes[3], uint8_t(0xD));
  }
  {
    // +inf element: amax = inf → 2688/inf = 0 → S_enc = 1.0 (A.1 step 2), S_dec = 1. Block 0:
    // inf·fl(1/6) = inf → fminf FLT_MAX → satfinite 448 (0x7E); S_enc_b = fl(1/448) = 0x3B124925;
    // inf → 0x7; 896·fl(1/448) = 2.0 → 0x4; −448·fl(1/448) = −1.0 → 0xA (derived). Block 1 (amax 6):
    // 6·fl(1/6) = 1.00000003 → fl = 1.0 → E4M3 0x38; S_enc_b = 1 → 6 → 0x7, 3 → 0x5.
    std::vector<float> x(32, 0.0f);
    x[0] = kInf;
    x[1] = 896.0f;
    x[2] = -448.0f;
    x[16] = 6.0f;
    x[17] = 3.0f;
    const Nvfp4Tensor q = quantizeNvfp4(x.data(), 1, 32, preset("nvfp4_te"));
    QVERIFY(std::isinf(q.amax));
    QCOMPARE(bits(q.tensor_scale), 0x3F800000u);
    QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0x7E, 0x38}));
    QCOMPARE(q.codes[0], uint8_t(0x7));
    QCOMPARE(q.codes[1], uint8_t(0x4));
    QCOMPARE(q.codes[2], uint8_t(0xA));
    QCOMPARE(q.codes[16], uint8_t(0x7));
    QCOMPARE(q.codes[17], uint8_t(0x5));
  }
}

void TestRecipesNvfp4::torchaoNaNAndInfHandDerived() {
  {
    // NaN element: torch.amax propagates NaN → pts = NaN → every block scale NaN → clamp keeps NaN
    // → E4M3 0x7F; rs = NaN → every element NaN → _f32_to_floatx_unpacked gives 0x3 (A.2 4).
    std::vector<float> x(32, 1.0f);
    x[5] = kNaN;
    const Nvfp4Tensor q = quantizeNvfp4(x.data(), 1, 32, preset("nvfp4_torchao"));
    QVERIFY(std::isnan(q.tensor_scale));
    QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0x7F, 0x7F}));
    QCOMPARE(q.codes, std::vector<uint8_t>(32, 0x3));
    const auto y = q.dequantize();
    QVERIFY(std::isnan(y[0]) && std::isnan(y[31]));
  }
  {
    // +inf element: pts = inf/2688 = inf. Block 0: (inf/6)/inf = NaN → 0x7F, rs = (1/inf)/NaN =
    // NaN → codes 0x3. Block 1 (amax 1): (1/6)/inf = 0 → clamp E4M3_EPS 2^-6 → 0x08;
    // rs = 0/2^-6 = 0 → 1·0 = 0 → 0x0.
    std::vector<float> x(32, 1.0f);
    x[0] = kInf;
    const Nvfp4Tensor q = quantizeNvfp4(x.data(), 1, 32, preset("nvfp4_torchao"));
    QVERIFY(std::isinf(q.tensor_scale));
    QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0x7F, 0x08}));
    QCOMPARE(q.codes[0], uint8_t(0x3));
    QCOMPARE(q.codes[15], uint8_t(0x3));
    QCOMPARE(q.codes[16], uint8_t(0x0));
    QCOMPARE(q.codes[31], uint8_t(0x0));
  }
}

void TestRecipesNvfp4::torchaoStaticAndSingleLevel() {
  // StaticScale with pts = 1/256 (exact): block amax 12 → (12/6)/(1/256) = 512 → clamp 448 (0x7E);
  // rs = fl(1/pts)/448 = 256/448 = 0.5714286 → 12·rs = 6.857 → clamp 6 → 0x7; 3.5·rs = 2.0 → 0x4.
  std::vector<float> x(16, 0.0f);
  x[0] = 12.0f;
  x[1] = 3.5f;
  Nvfp4Config c = preset("nvfp4_torchao");
  c.tensor_scale_source = Nvfp4TensorScaleSource::StaticScale;
  c.static_tensor_scale = 1.0f / 256.0f;
  Nvfp4Tensor q = quantizeNvfp4(x.data(), 1, 16, c);
  QCOMPARE(bits(q.tensor_scale), bits(1.0f / 256.0f));
  QCOMPARE(bits(q.amax), bits(12.0f)); // measured, informational
  QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0x7E}));
  QCOMPARE(q.codes[0], uint8_t(0x7));
  QCOMPARE(q.codes[1], uint8_t(0x4));

  // Single level (per_tensor_scale=None): scale = clamp(12/6 = 2, 2^-6, 448) → 2.0 (0x40);
  // rs = 1/2 → 6 (0x7), 1.75 (tie 1.5|2 → 2: 0x4). A block of 0.001: 0.001/6 → clamp 2^-6 (0x08),
  // rs = 64 → 0.064 → 0x0.
  std::vector<float> y(32, 0.0f);
  y[0] = 12.0f;
  y[1] = 3.5f;
  y[16] = 0.001f;
  q = quantizeNvfp4(y.data(), 1, 32, preset("nvfp4_torchao_single_level"));
  QVERIFY(!q.has_tensor_scale);
  QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0x40, 0x08}));
  QCOMPARE(q.codes[0], uint8_t(0x7));
  QCOMPARE(q.codes[1], uint8_t(0x4));
  QCOMPARE(q.codes[16], uint8_t(0x0));
  // dequant single level: e2m1 · s = 6·2 = 12, 2·2 = 4.
  const auto d = q.dequantize();
  QCOMPARE_BITS(d[0], 12.0f);
  QCOMPARE_BITS(d[1], 4.0f);
}

void TestRecipesNvfp4::cudnnZeroBlockLiteral() {
  // The doc formula read literally: amax 0 → scale round_up(0/6) = 0 (0x00), elements 0/0 = NaN →
  // RNE satfinite cast → +6 (0x7); dequant 6·0 = 0. A block amax 1e-10: 1.67e-11 rounds up to the
  // smallest subnormal 2^-9 (0x01); 1e-10/2^-9 = 5.1e-8 → 0x0.
  std::vector<float> x(32, 0.0f);
  x[16] = 1e-10f;
  const Nvfp4Tensor q = quantizeNvfp4(x.data(), 1, 32, preset("nvfp4_cudnn_doc"));
  QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0x00, 0x01}));
  QCOMPARE(q.codes[0], uint8_t(0x7));
  QCOMPARE(q.codes[16], uint8_t(0x0));
  QCOMPARE_BITS(q.dequantize()[0], 0.0f);
}

void TestRecipesNvfp4::edgeCasesOfEachPreset() {
  // docs/nvfp4.md "Edge cases per preset", each cell derived from the rules above.
  // Block 0: zeros; block 1: [inf, 1, ...]; block 2: [NaN, 2, ...] (1×48).
  std::vector<float> x(48, 0.0f);
  x[16] = kInf;
  x[17] = 1.0f;
  x[32] = kNaN;
  x[33] = 2.0f;
  // TE: amax inf (NaN dropped) → S_enc 1; zero block 0x00 / 0; inf block 448 (0x7E), inf → 0x7,
  // 1·fl(1/448) → 0; NaN block amax 2 → 2·fl(1/6) = 0.33333334, nearest E4M3 0.34375 (0x2B; the
  // neighbours are 0.3125 and 0.34375, spacing 2^-5); NaN → 0x7.
  Nvfp4Tensor q = quantizeNvfp4(x.data(), 1, 48, preset("nvfp4_te"));
  QCOMPARE(bits(q.tensor_scale), 0x3F800000u);
  QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0x00, 0x7E, 0x2B}));
  QCOMPARE(q.codes[0], uint8_t(0x0));
  QCOMPARE(q.codes[16], uint8_t(0x7));
  QCOMPARE(q.codes[17], uint8_t(0x0));
  QCOMPARE(q.codes[32], uint8_t(0x7));
  // torchao single level: zero block clamp 2^-6 (0x08), codes 0; inf block inf/6 → clamp 448
  // (0x7E), inf·(1/448) = inf → clamp 6 → 0x7; NaN block (torch.amax NaN) → 0x7F, codes 0x3.
  q = quantizeNvfp4(x.data(), 1, 48, preset("nvfp4_torchao_single_level"));
  QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0x08, 0x7E, 0x7F}));
  QCOMPARE(q.codes[0], uint8_t(0x0));
  QCOMPARE(q.codes[16], uint8_t(0x7));
  QCOMPARE(q.codes[32], uint8_t(0x3));
  QCOMPARE(q.codes[33], uint8_t(0x3));
  // cuDNN doc: zero block scale 0 → 0/0 → 0x7; inf block round_up(inf) satfinite → 0x7E, inf → 0x7;
  // NaN block amax 2 (NaN dropped): 2/6 = 0.33333334 rounds up to 0.34375 (0x2B); 2/0.34375 =
  // 5.818 → 6 (0x7); NaN → 0x7.
  q = quantizeNvfp4(x.data(), 1, 48, preset("nvfp4_cudnn_doc"));
  QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0x00, 0x7E, 0x2B}));
  QCOMPARE(q.codes[0], uint8_t(0x7));
  QCOMPARE(q.codes[16], uint8_t(0x7));
  QCOMPARE(q.codes[33], uint8_t(0x7));
  QCOMPARE(q.codes[32], uint8_t(0x7));
}

// ---- dequantization -----------------------------------------------------------------------------

void TestRecipesNvfp4::dequantizeTeHandDerived() {
  // The ramp of teRampHandDerived: amax 16, scale 448. TE dequantize_fp4_kernel: factor =
  // fl(fl(448·16)·fl(1/2688)) = fl(7168·0x39C30C31) = 2.6666667 (0x402AAAAB) (derived); y =
  // fl(e2m1·factor): 0.5 → 0x3FAAAAAB, 1 → 0x402AAAAB, 1.5 → 4.0, 2 → 0x40AAAAAB, 3 → 8.0,
  // 4 → 0x412AAAAB, 6 → 16.0.
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i + 1);
  const Nvfp4Tensor q = quantizeNvfp4(x.data(), 1, 16, preset("nvfp4_te"));
  const auto b = [](uint32_t u) { return std::bit_cast<float>(u); };
  const float h = b(0x3FAAAAABu), one = b(0x402AAAABu), two = b(0x40AAAAABu), four = b(0x412AAAABu);
  QCOMPARE_BITS(q.dequantize(), (std::vector<float>{h, one, one, 4.0f, two, two, 8.0f, 8.0f, 8.0f, four, four, four,
                                                    four, 16.0f, 16.0f, 16.0f}));
}

void TestRecipesNvfp4::dequantizeTe4over6Uses1536() {
  // C map4_wins (amax 6, 256 bound): scale 0x7C = 384; factor = fl(fl(384·6)·fl(1/1536)) = 1.5
  // exactly (derived: fl(1/1536) = 0x3A2AAAAB, 2304·that rounds to 1.5); codes are the 1.5× grid, so
  // the dequantized block is the input itself. With 2688 the factor would be 0.857 (448/256 off).
  const std::vector<float> x = {6.0f, 4.5f, 2.25f,  0.75f, 3.0f, 1.5f,  -4.5f, -2.25f,
                                0.0f, 6.0f, -0.75f, 1.5f,  3.0f, -6.0f, 4.5f,  2.25f};
  const Nvfp4Tensor q = quantizeNvfp4(x.data(), 1, 16, preset("nvfp4_te_4over6"));
  QCOMPARE(bits(q.fp4_fp8_max), bits(1536.0f));
  QCOMPARE(q.map4, (std::vector<uint8_t>{1}));
  QCOMPARE_BITS(q.dequantize(), x);
}

void TestRecipesNvfp4::dequantizeTorchaoHandDerived() {
  // A torchao general_values_block_amax_eq_tensor_amax: pts = fl(7/2688) = 0x3B2AAAAB, scale 0x7E;
  // factor fl(pts·448) = 1.1666667 (0x3F955556) (derived). Codes 0x7 (6) → fl(6·f) = 0x40E00001,
  // 0xF → −0x40E00001, 0x5 (3) → 0x40600001, 0x2 (1) → 0x3F955556, 0x0 → 0.
  const std::vector<float> x = {7.0f, -6.5f, 3.0f, 1.0f, 0.1f,  -0.3f, 2.2f, 4.9f,
                                5.1f, -1.6f, 0.6f, 0.0f, -7.0f, 1.4f,  3.2f, -4.4f};
  const Nvfp4Tensor q = quantizeNvfp4(x.data(), 1, 16, preset("nvfp4_torchao"));
  const auto y = q.dequantize();
  QCOMPARE(bits(y[0]), 0x40E00001u);
  QCOMPARE(bits(y[1]), 0xC0E00001u);
  QCOMPARE(bits(y[2]), 0x40600001u);
  QCOMPARE(bits(y[3]), 0x3F955556u);
  QCOMPARE(bits(y[4]), 0x00000000u);
}

// ---- E2M1 and stochastic rounding ---------------------------------------------------------------

void TestRecipesNvfp4::e2m1RneMatchesFormatE2M1() {
  // Format::E2M1() (checked against CUDA 13's host cvt in test_formats) is the outside reference:
  // RNE saturating, NaN → +6 under the CUDA specials policy, −0 → 0x8.
  std::mt19937 g(7);
  std::uniform_real_distribution<float> d(-8.0f, 8.0f);
  std::vector<float> xs = {0.25f,
                           0.75f,
                           1.25f,
                           1.75f,
                           2.5f,
                           3.5f,
                           5.0f,
                           -0.25f,
                           -0.0f,
                           6.0f,
                           7.0f,
                           kInf,
                           -kInf,
                           std::nextafter(0.25f, 1.0f),
                           std::nextafter(0.75f, 0.0f),
                           std::nextafter(5.0f, 6.0f)};
  for (int i = 0; i < 20000; ++i) xs.push_back(d(g));
  for (float x : xs)
    QVERIFY2(e2m1RneSatfinite(x) == Format::E2M1().encode(static_cast<double>(x)), std::to_string(x).c_str());
  QCOMPARE(e2m1RneSatfinite(kNaN), uint8_t(0x7));
  QCOMPARE(e2m1RneSatfinite(-0.0f), uint8_t(0x8));
}

void TestRecipesNvfp4::stochasticRoundingHandDerived() {
  // TE stochastic_round_fp4_e2m1 by hand: u = r/256, t = |x| + u·step(|x|), q = floor(t/step(t))·step(t).
  QCOMPARE(stochasticRoundE2M1Te(4.0f, 0x80), uint8_t(0x6));   // t = 5 → floor(2.5)·2 = 4
  QCOMPARE(stochasticRoundE2M1Te(0.25f, 0x80), uint8_t(0x1));  // t = 0.25 + 0.25 = 0.5 → 0.5
  QCOMPARE(stochasticRoundE2M1Te(0.25f, 0x7F), uint8_t(0x0));  // t = 0.498046875 → 0
  QCOMPARE(stochasticRoundE2M1Te(5.0f, 0x80), uint8_t(0x7));   // t = 6 → 6
  QCOMPARE(stochasticRoundE2M1Te(5.0f, 0x7F), uint8_t(0x6));   // t = 5.9921875 → 4
  QCOMPARE(stochasticRoundE2M1Te(-1.25f, 0x80), uint8_t(0xB)); // t = 1.5 → −1.5
  QCOMPARE(stochasticRoundE2M1Te(1.9f, 0xFF), uint8_t(0x4));   // t = 2.398 → step 1 → 2
  QCOMPARE(stochasticRoundE2M1Te(7.0f, 0x00), uint8_t(0x7));   // t = 7 → floor(3.5)·2 = 6
  QCOMPARE(stochasticRoundE2M1Te(kInf, 0x00), uint8_t(0x7));   // min(inf, 6) = 6
  QCOMPARE(stochasticRoundE2M1Te(-kInf, 0x10), uint8_t(0xF));
  QCOMPARE(stochasticRoundE2M1Te(kNaN, 0xFF), uint8_t(0x7)); // NaN → +6
}

void TestRecipesNvfp4::stochasticRoundingMatchesTeFormula() {
  // TE util/ptx.cuh stochastic_round_fp4_e2m1 transcribed literally (fmaf, floor, division; the
  // E2M1 code then read from Format::E2M1(), where q is exact), for every random byte.
  const auto te = [](float x, uint8_t r) -> uint32_t {
    if (std::isnan(x)) return 0x7;
    const auto step = [](float a) { return a < 2.0f ? 0.5f : (a < 4.0f ? 1.0f : 2.0f); };
    const float a = std::fabs(x);
    const float u = static_cast<float>(r) / 256.0f;
    const float t = std::fmaf(u, step(a), a);
    const float q = std::fmin(std::floor(t / step(t)) * step(t), 6.0f);
    return Format::E2M1().encode(static_cast<double>(std::signbit(x) ? -q : q));
  };
  std::mt19937 g(17);
  std::uniform_real_distribution<float> d(-9.0f, 9.0f);
  std::vector<float> xs = {0.0f,       -0.0f, 0.2499999f, 1.9999999f, 2.0f,  3.9999998f, 4.0f,
                           5.9999995f, 6.0f,  1e30f,      kInf,       -kInf, kNaN};
  for (int i = 0; i < 400; ++i) xs.push_back(d(g));
  for (float x : xs)
    for (int r = 0; r < 256; ++r)
      QVERIFY2(stochasticRoundE2M1Te(x, static_cast<uint8_t>(r)) == te(x, static_cast<uint8_t>(r)),
               (std::to_string(x) + " r=" + std::to_string(r)).c_str());
}

void TestRecipesNvfp4::stochasticRoundingGridPointsNeverMove() {
  // For a grid value g, t = g + u·step(g) < g + step(g) stays in g's step, so floor gives g back
  // for every random byte (RECIPES "Exact grid points never move").
  const float grid[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int c = 0; c < 8; ++c)
    for (int r = 0; r < 256; ++r) {
      QCOMPARE(stochasticRoundE2M1Te(grid[c], static_cast<uint8_t>(r)), uint8_t(c));
      QCOMPARE(stochasticRoundE2M1Te(-grid[c], static_cast<uint8_t>(r)), uint8_t(c | 8));
    }
  // In the quantizer: a 16×16 tensor of E2M1 grid values with amax 6 has S_enc = 448 and
  // S_enc_b = 1.0 in every block that holds a 6 (B single_tile_exact_ties notes), so SR returns
  // the RNE codes for any seed.
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i)
    x[static_cast<size_t>(i)] = (i % 16 == 0) ? 6.0f : grid[(i * 7) % 8] * ((i % 3) ? 1 : -1);
  const Nvfp4Tensor rn = quantizeNvfp4(x.data(), 16, 16, preset("nvfp4_te"));
  for (uint64_t seed : {0ull, 1ull, 12345ull}) {
    Nvfp4Config c = preset("nvfp4_te_sr");
    c.seed = seed;
    const Nvfp4Tensor sr = quantizeNvfp4(x.data(), 16, 16, c);
    QCOMPARE(sr.codes, rn.codes);
    QCOMPARE(sr.scale_codes, rn.scale_codes);
  }
}

void TestRecipesNvfp4::stochasticRoundingRandomBytes() {
  // The documented byte layout: element i takes byte (i mod 4) of Format::counterRandom(seed, i/4).
  // With amax 6 in the block, S_enc_b = 1 (as above), so code i = stochasticRoundE2M1Te(x_i, byte_i).
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i)
    x[static_cast<size_t>(i)] = (i % 16 == 0) ? 6.0f : 0.1f + 0.37f * static_cast<float>(i % 16);
  Nvfp4Config c = preset("nvfp4_te_sr");
  c.seed = 99;
  const Nvfp4Tensor q = quantizeNvfp4(x.data(), 2, 32, c);
  for (uint64_t i = 0; i < 64; ++i) {
    const auto r = static_cast<uint8_t>(Format::counterRandom(99, i / 4) >> (8 * (i % 4)));
    QCOMPARE(q.codes[i], stochasticRoundE2M1Te(x[i], r));
  }
  // Scales stay RNE: identical to the round-to-nearest quantizer.
  QCOMPARE(q.scale_codes, quantizeNvfp4(x.data(), 2, 32, preset("nvfp4_te")).scale_codes);
}

// ---- Hadamard -----------------------------------------------------------------------------------

void TestRecipesNvfp4::hadamardSquareIs16I() {
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 16; ++k) {
      int s = 0;
      for (int j = 0; j < 16; ++j) s += hadamard16Entry(i, j) * hadamard16Entry(j, k);
      QCOMPARE(s, i == k ? 16 : 0);
    }
  // Sylvester H2 = [[1,1],[1,−1]] blocks: row 0 all +1, H[1][1] = −1, H[3][3] = +1, H[15][15] = +1.
  QCOMPARE(hadamard16Entry(0, 7), 1);
  QCOMPARE(hadamard16Entry(1, 1), -1);
  QCOMPARE(hadamard16Entry(3, 3), 1);
  QCOMPARE(hadamard16Entry(7, 7), -1);
  QCOMPARE(hadamard16Entry(15, 15), 1);
}

void TestRecipesNvfp4::rhtMatrixIsOrthogonal() {
  // R = diag(s)·H·¼: R·Rᵀ = ¹⁄₁₆ diag(s)·H·Hᵀ·diag(s) = I, every sum exact (entries ±¼).
  const auto r = rhtMatrix16(kTeRhtSignMask);
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 16; ++k) {
      float s = 0.0f;
      for (int j = 0; j < 16; ++j) s += r[static_cast<size_t>(16 * i + j)] * r[static_cast<size_t>(16 * k + j)];
      QCOMPARE_BITS(s, i == k ? 1.0f : 0.0f);
    }
  // The sign vector [1,1,1,−1,1,−1,−1,−1,−1,−1,−1,1,−1,1,−1,−1]: bits 3,5,6,7,8,9,10,12,14,15 = 0xD7E8.
  const int signs[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};
  for (int i = 0; i < 16; ++i) QCOMPARE_BITS(r[static_cast<size_t>(16 * i)], 0.25f * static_cast<float>(signs[i]));
}

void TestRecipesNvfp4::rhtOfUnitVectorIsSignedHadamardRow() {
  // e_k · R = row k of R = ¼·s_k·H16[k][:].
  const int signs[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};
  for (int k = 0; k < 16; ++k) {
    float e[16] = {}, y[16];
    e[k] = 1.0f;
    hadamardTransform16(e, y);
    for (int j = 0; j < 16; ++j) QCOMPARE_BITS(y[j], 0.25f * static_cast<float>(signs[k] * hadamard16Entry(k, j)));
    hadamardTransform16(e, y, 0); // plain Hadamard
    for (int j = 0; j < 16; ++j) QCOMPARE_BITS(y[j], 0.25f * static_cast<float>(hadamard16Entry(k, j)));
  }
  // Mask 0 twice is the identity (¹⁄₁₆·H·H = I) on small integers (exact sums).
  float x[16], y[16], z[16];
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(3 * i - 20);
  hadamardTransform16(x, y, 0);
  hadamardTransform16(y, z, 0);
  for (int i = 0; i < 16; ++i) QCOMPARE_BITS(z[i], x[i]);
}

void TestRecipesNvfp4::rhtBf16Rounding() {
  // BF16 has 8 significant bits: at 0.25 the spacing is 2^-9. 0.25 + 2^-10 is a tie → 0.25 (even);
  // 0.25 + 3·2^-10 is a tie between 0.25 + 2^-9 (odd) and 0.25 + 2^-8 (even) → 0.25 + 2^-8.
  QCOMPARE_BITS(bf16RoundNearestEven(0.25f + 0.0009765625f), 0.25f);
  QCOMPARE_BITS(bf16RoundNearestEven(0.25f + 3 * 0.0009765625f), 0.25f + 0.00390625f);
  QCOMPARE_BITS(bf16RoundNearestEven(-1.0f - 0.00390625f), -1.0f);              // −(1 + 2^-8) tie → −1
  QCOMPARE_BITS(bf16RoundNearestEven(std::numeric_limits<float>::max()), kInf); // past bf16 max + ½ ulp
  QCOMPARE_BITS(bf16RoundNearestEven(-kInf), -kInf);
  QVERIFY(std::isnan(bf16RoundNearestEven(kNaN)));
  // Without the BF16 output rounding the fp32 accumulator stays: D bf16_rounding_of_rht_output's
  // y_1 = ¼(1 − 2^-8) = 0.2490234375 both ways, y_0 = ¼(1 + 2^-8) only unrounded.
  float x[16] = {1.0f, 0.00390625f}, y[16];
  hadamardTransform16(x, y, kTeRhtSignMask, 1, 1, false);
  QCOMPARE_BITS(y[0], 0.2509765625f);
  QCOMPARE_BITS(y[1], 0.2490234375f);
}

void TestRecipesNvfp4::rhtColumnsMatchSingleTransform() {
  const int64_t cols = 37;
  const auto x = randomTensor(16 * cols, 3);
  std::vector<float> y(x.size()), z(x.size());
  hadamardTransform16Columns(x.data(), y.data(), cols, cols, kTeRhtSignMask);
  for (int64_t c = 0; c < cols; ++c) hadamardTransform16(x.data() + c, z.data() + c, kTeRhtSignMask, cols, cols);
  QCOMPARE_BITS(y, z);
}

void TestRecipesNvfp4::rhtAlongColsMatchesRowsOnTranspose() {
  // RHT along rows of Xᵀ (Axis::Cols) = RHT down the columns of X (Axis::Rows), codes transposed.
  const int64_t R = 32, C = 48;
  const auto x = randomTensor(R * C, 11, 3.0f);
  const auto xt = transpose(x, R, C);
  for (const char* name : {"nvfp4_te_rht", "nvfp4_te_rht_sr"}) {
    Nvfp4Config c = preset(name);
    c.seed = 5;
    const Nvfp4Tensor a = quantizeNvfp4(x.data(), R, C, c, Axis::Rows);
    const Nvfp4Tensor b = quantizeNvfp4(xt.data(), C, R, c, Axis::Cols);
    QCOMPARE(bits(a.amax), bits(b.amax));
    QCOMPARE(transposeCodes(a.scale_codes, a.blockRows(), a.blockCols()), b.scale_codes);
    if (!c.stochastic_rounding) QCOMPARE(transposeCodes(a.codes, R, C), b.codes); // SR bytes follow the layout
  }
}

// ---- layouts, 2-D tiles, threads ----------------------------------------------------------------

void TestRecipesNvfp4::twoDColumnwiseIsTransposeOfRowwise() {
  // B: with one scale per 16×16 tile and one S_enc, the columnwise codes are exactly the transpose of
  // the rowwise codes ("rowwise and columnwise quantized tensors are numerically equivalent").
  const int64_t R = 48, C = 32;
  const auto x = randomTensor(R * C, 21, 2.0f);
  const Nvfp4Tensor row = quantizeNvfp4(x.data(), R, C, preset("nvfp4_te_2d"), Axis::Cols);
  const Nvfp4Tensor col = quantizeNvfp4(x.data(), R, C, preset("nvfp4_te_2d"), Axis::Rows);
  QCOMPARE(row.codes, col.codes); // both in X's row-major layout
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) QCOMPARE(row.scaleCodeAt(i, j), col.scaleCodeAt(i, j));
  // Each tile's 16 row blocks hold one code.
  for (int64_t i = 0; i < R; ++i) QCOMPARE(row.scaleCodeAt(i, 3), row.scaleCodeAt(16 * (i / 16), 0));
}

void TestRecipesNvfp4::fourOverSixTieTakesMap6() {
  // Block [6, 3, −6, 0 ...], amax 6, 256 bound: S_enc = 1536/6 = 256, base = (6/6)·256 = 256;
  // map-6 scale 256 (0x78), inv6 = 1/(256·fl(1/256)) = 1 → codes 6, 3, −6 exact, error 0; map-4
  // scale 384 (0x7C), inv4 = fl(1/1.5) → 4, 2, −4, dequantized 4·384·6/1536 = 6, 2·1.5 = 3: error 0
  // too. Equal errors and different candidates: the strict err4 < err6 keeps map-6.
  std::vector<float> x(16, 0.0f);
  x[0] = 6.0f;
  x[1] = 3.0f;
  x[2] = -6.0f;
  const Nvfp4Tensor q = quantizeNvfp4(x.data(), 1, 16, preset("nvfp4_te_4over6"));
  QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0x78}));
  QCOMPARE(q.map4, (std::vector<uint8_t>{0}));
  QCOMPARE(q.codes[0], uint8_t(0x7));
  QCOMPARE(q.codes[1], uint8_t(0x5));
  QCOMPARE(q.codes[2], uint8_t(0xF));
}

void TestRecipesNvfp4::fourOverSixTwoDTileChoice() {
  // One 16×16 tile built from the C vectors' blocks (all with bamax 6 = tensor amax, so the tile
  // has the same base 256 and candidates 0x7C / 0x78 as each 1×16 block): map4_wins rows (err4 0,
  // err6 2.75) and map6_wins rows (err4 3.5, err6 1.0). The tile sums the 16 row errors (exact
  // multiples of 1/4, so the tree order cannot matter).
  const std::vector<float> m4 = {6.0f, 4.5f, 2.25f,  0.75f, 3.0f, 1.5f,  -4.5f, -2.25f,
                                 0.0f, 6.0f, -0.75f, 1.5f,  3.0f, -6.0f, 4.5f,  2.25f};
  const std::vector<float> m6 = {6.0f, 5.0f, 1.0f,  0.5f, 2.0f, -1.0f, 0.5f, 4.0f,
                                 0.0f, 1.0f, -2.0f, 0.5f, 3.0f, -6.0f, 1.0f, 0.5f};
  // The candidates' codes from the CSV notes of those rows.
  const std::vector<uint8_t> m4_map4 = {0x6, 0x5, 0x3, 0x1, 0x4, 0x2, 0xD, 0xB, 0x0, 0x6, 0x9, 0x2, 0x4, 0xE, 0x5, 0x3};
  const std::vector<uint8_t> m4_map6 = {0x7, 0x6, 0x4, 0x2, 0x5, 0x3, 0xE, 0xC, 0x0, 0x7, 0xA, 0x3, 0x5, 0xF, 0x6, 0x4};
  const std::vector<uint8_t> m6_map4 = {0x6, 0x5, 0x1, 0x1, 0x3, 0x9, 0x1, 0x5, 0x0, 0x1, 0xB, 0x1, 0x4, 0xE, 0x1, 0x1};
  const std::vector<uint8_t> m6_map6 = {0x7, 0x6, 0x2, 0x1, 0x4, 0xA, 0x1, 0x6, 0x0, 0x2, 0xC, 0x1, 0x5, 0xF, 0x2, 0x1};
  Nvfp4Config c = preset("nvfp4_te_4over6");
  c.tile_2d = true;
  for (int n4 : {8, 4}) {
    // 8 map4_wins + 8 map6_wins rows: err4 = 8·3.5 = 28 < err6 = 8·2.75 + 8·1 = 30 → map-4.
    // 4 + 12: err4 = 12·3.5 = 42, err6 = 4·2.75 + 12 = 23 → map-6.
    std::vector<float> x;
    for (int r = 0; r < 16; ++r) x.insert(x.end(), (r < n4 ? m4 : m6).begin(), (r < n4 ? m4 : m6).end());
    const Nvfp4Tensor q = quantizeNvfp4(x.data(), 16, 16, c);
    const bool map4 = n4 == 8;
    QCOMPARE(q.scale_codes, std::vector<uint8_t>(16, map4 ? 0x7C : 0x78));
    QCOMPARE(q.map4, std::vector<uint8_t>(16, map4 ? 1 : 0));
    for (int r = 0; r < 16; ++r) {
      const auto& want = r < n4 ? (map4 ? m4_map4 : m4_map6) : (map4 ? m6_map4 : m6_map6);
      QCOMPARE(std::vector<uint8_t>(q.codes.begin() + 16 * r, q.codes.begin() + 16 * r + 16), want);
    }
  }
}

void TestRecipesNvfp4::rowsAxisMatchesColsOnTranspose() {
  const int64_t R = 64, C = 48;
  const auto x = randomTensor(R * C, 31, 0.5f);
  const auto xt = transpose(x, R, C);
  for (const char* name : {"nvfp4_te", "nvfp4_te_2d", "nvfp4_te_4over6", "nvfp4_torchao", "nvfp4_cudnn_doc"}) {
    const Nvfp4Tensor a = quantizeNvfp4(x.data(), R, C, preset(name), Axis::Rows);
    const Nvfp4Tensor b = quantizeNvfp4(xt.data(), C, R, preset(name), Axis::Cols);
    QCOMPARE(transposeCodes(a.codes, R, C), b.codes);
    QCOMPARE(transposeCodes(a.scale_codes, a.blockRows(), a.blockCols()), b.scale_codes);
    QCOMPARE(bits(a.tensor_scale), bits(b.tensor_scale));
  }
}

void TestRecipesNvfp4::threadsDoNotChangeResults() {
  // 256 × 2048 (512 K elements: two workers' worth by the 256 K rule), with NaN, inf and zero rows.
  const int64_t R = 256, C = 2048;
  auto x = randomTensor(R * C, 41, 4.0f);
  x[100] = kNaN;
  for (int64_t j = 0; j < C; ++j) x[static_cast<size_t>(5 * C + j)] = 0.0f;
  for (const auto& info : nvfp4Presets()) {
    for (Axis axis : {Axis::Cols, Axis::Rows}) {
      Nvfp4Config c = *nvfp4Preset(info.name);
      c.seed = 7;
      c.threads = 1;
      const Nvfp4Tensor one = quantizeNvfp4(x.data(), R, C, c, axis);
      for (int t : {2, 3, 8}) {
        c.threads = t;
        const Nvfp4Tensor many = quantizeNvfp4(x.data(), R, C, c, axis);
        QVERIFY2(many.codes == one.codes, info.name.c_str());
        QVERIFY2(many.scale_codes == one.scale_codes, info.name.c_str());
        QCOMPARE(bits(many.tensor_scale), bits(one.tensor_scale));
        QCOMPARE(bits(many.amax), bits(one.amax));
      }
    }
  }
}

void TestRecipesNvfp4::refusals() {
  const std::vector<float> x(16 * 32, 1.0f);
  const auto refuses = [&](const Nvfp4Config& c, int64_t rows, int64_t cols, Axis axis = Axis::Cols) {
    try {
      quantizeNvfp4(x.data(), rows, cols, c, axis);
    } catch (const std::invalid_argument&) {
      return true;
    }
    return false;
  };
  QVERIFY(refuses(preset("nvfp4_te"), 2, 24));              // 24 columns: a partial 1×16 block
  QVERIFY(refuses(preset("nvfp4_te"), 24, 16, Axis::Rows)); // 24 rows: a partial 16×1 block
  QVERIFY(!refuses(preset("nvfp4_te"), 3, 16));             // 1×16 blocks: any row count
  QVERIFY(refuses(preset("nvfp4_te_2d"), 8, 32));           // 2-D: both dimensions multiples of 16
  QVERIFY(refuses(preset("nvfp4_te"), -1, 16));
  QVERIFY(refuses(preset("nvfp4_te"), 16, -16));
  Nvfp4Config c = preset("nvfp4_te_4over6");
  c.stochastic_rounding = true;
  QVERIFY(refuses(c, 1, 16)); // 4over6 + SR (TE raises)
  c = preset("nvfp4_te_4over6");
  c.rht = true;
  QVERIFY(refuses(c, 16, 16)); // 4over6 + RHT (TE raises)
  c = preset("nvfp4_te_4over6");
  c.e4m3_bound = 384;
  QVERIFY(refuses(c, 1, 16));
  c = preset("nvfp4_torchao");
  c.four_over_six = FourOverSix::MAE;
  QVERIFY(refuses(c, 1, 16)); // 4over6 is TE only
  c = preset("nvfp4_cudnn_doc");
  c.stochastic_rounding = true;
  QVERIFY(refuses(c, 1, 16));
  c = preset("nvfp4_torchao");
  c.tile_2d = true;
  QVERIFY(refuses(c, 16, 16));
  c = preset("nvfp4_torchao");
  c.rht = true;
  QVERIFY(refuses(c, 16, 16));
  c = preset("nvfp4_te_2d");
  c.rht = true;
  QVERIFY(refuses(c, 16, 16));
  c = preset("nvfp4_te");
  c.tensor_scale_source = Nvfp4TensorScaleSource::StaticAmax;
  QVERIFY(refuses(c, 1, 16)); // static pts is torchao only
  bool null_refused = false;
  try {
    quantizeNvfp4(nullptr, 1, 16, preset("nvfp4_te"));
  } catch (const std::invalid_argument&) {
    null_refused = true;
  }
  QVERIFY(null_refused);
  // An empty tensor is fine: no codes, TE's amax-0 scale.
  const Nvfp4Tensor e = quantizeNvfp4(nullptr, 0, 16, preset("nvfp4_te"));
  QVERIFY(e.codes.empty() && e.scale_codes.empty());
  QCOMPARE(bits(e.tensor_scale), 0x3F800000u);
}

void TestRecipesNvfp4::presetsTable() {
  const std::vector<std::string> want = {
      "nvfp4_te",       "nvfp4_te_2d", "nvfp4_te_4over6", "nvfp4_te_4over6_mse", "nvfp4_te_4over6_448",
      "nvfp4_te_rht",   "nvfp4_te_sr", "nvfp4_te_rht_sr", "nvfp4_torchao",       "nvfp4_torchao_single_level",
      "nvfp4_cudnn_doc"};
  std::vector<std::string> got;
  for (const auto& p : nvfp4Presets()) {
    got.push_back(p.name);
    QVERIFY(!p.summary.empty() && !p.source.empty());
    const auto c = nvfp4Preset(p.name);
    QVERIFY2(c.has_value(), p.name.c_str());
    QCOMPARE(c->name, p.name);
  }
  QCOMPARE(got, want);
  QVERIFY(!nvfp4Preset("nvfp4_unknown"));
  QVERIFY(requireNvfp4Preset("NVFP4-TE-2D").tile_2d);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, requireNvfp4Preset("nvfp4_unknown"));
  const auto a = nvfp4Preset("NVFP4-TE-4over6-MSE");
  QVERIFY(a.has_value());
  QCOMPARE(a->four_over_six, FourOverSix::MSE);
  QCOMPARE(a->e4m3_bound, 256);
  QCOMPARE(nvfp4Preset("nvfp4_te_rht")->rht_sign_mask, uint16_t(0xD7E8));
  QVERIFY(nvfp4Preset("nvfp4_te_sr")->stochastic_rounding);
  QVERIFY(nvfp4Preset("nvfp4_te_2d")->tile_2d);
  QCOMPARE(nvfp4Preset("nvfp4_torchao")->rule, Nvfp4Rule::TorchaoMxFormats);
  QCOMPARE(nvfp4Preset("nvfp4_cudnn_doc")->rule, Nvfp4Rule::CudnnDocSingleLevel);
}

QTEST_APPLESS_MAIN(TestRecipesNvfp4)
#include "test_recipes_nvfp4.moc"
