// Tests of the block-scaled training recipes (core/training/recipe.h) and their config keys:
// TE Float8BlockScaling (power-of-two or fp32 scales), MXFP8BlockScaling (RCEIL, or torchao's
// FLOOR / CEIL / EVEN), NVFP4BlockScaling and DeepSeek-V3's 1×128 / 128×128 recipe with per-role
// overrides.
// Expected values are derived by hand in the comments from the published rules (TE MXFP8 RCEIL:
// scale = 2^ceil(log2(amax/448)), E4M3 RNE; TE NVFP4: S_enc = 2688/amax, block scale
// RNE_E4M3(bamax·S_enc/6), 16×16 tiles for weights, SR on gradients only).
#include "experiment/training/training_config.h"
#include "scaling/nvfp4.h"
#include "scaling/scaling.h"
#include "training/fashion_mnist.h"
#include "training/recipe.h"
#include "training/trainer.h"
#include "training/training_session.h"

#include "recipe_vectors.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace fp8lab;

namespace {

const FashionMnist* subset() {
  static FashionMnist fm;
  static bool tried = false, ok = false;
  if (!tried) {
    tried = true;
    try {
      fm = loadFashionMnist({}, 512, 256);
      ok = true;
    } catch (const std::exception& e) {
      qWarning("%s", e.what());
    }
  }
  return ok ? &fm : nullptr;
}

TrainingRecipeConfig recipeOf(TrainingRecipe r) {
  TrainingRecipeConfig c;
  c.recipe = r;
  return c;
}

std::string parseError(const std::string& text) {
  const JsonDocument d = JsonDocument::parse(text);
  std::string err;
  if (parseTrainingExperiment(d.root(), &err, &d)) return {};
  return err;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// The 32×32 tensor of the MXFP8 tests: 0.125 everywhere, X[0][0] = 2^20.
std::vector<float> mxTensor() {
  std::vector<float> x(32 * 32, 0.125f);
  x[0] = 1048576.0f;
  return x;
}

} // namespace

class TestTrainingRecipes : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void recipeConfigIsParsedAndBadKeysAreRefused();
  void rolesFollowTheTeRecipes();
  void mxfp8CopiesAreQuantizedFromTheHighPrecisionTensor();
  void nvfp4WeightUsesSixteenBySixteenTiles();
  void stochasticRoundingOnlyTouchesGradients();
  void wgradOverrideKeepsThatGemmInHighPrecision();
  void recordsHoldTheTensorAmaxAndTheRepresentativeScale();
  void shortRunsAreDeterministicPerRecipe();
  void recommendedRecipesParseWithTheirOptions();
  void blockScalesFollowEachSystemsRule();
  void mxScaleModesMatchTheRecipeVectors();
};

void TestTrainingRecipes::recipeConfigIsParsedAndBadKeysAreRefused() {
  // Unknown recipe: the key path and the position of the "recipe" member (line 2, column 3).
  QString e = QString::fromStdString(parseError("{\"type\": \"training\", \"runs\": [\n"
                                                " {\"recipe\": \"te_mxfp9\"}]}"));
  QVERIFY2(e.startsWith(QStringLiteral("runs[0].recipe: unknown recipe 'te_mxfp9' (te_float8_block, te_mxfp8, "
                                       "te_nvfp4")),
           qPrintable(e));
  QVERIFY2(e.endsWith(QStringLiteral("(line 2, column 3)")), qPrintable(e));
  // Unknown role: "wgard" starts at line 3, column 18.
  e = QString::fromStdString(parseError("{\"type\": \"training\", \"runs\": [\n"
                                        " {\"recipe\": {\"name\": \"te_nvfp4\",\n"
                                        "   \"overrides\": {\"wgard\": {\"recipe\": \"high_precision\"}}}}]}"));
  QVERIFY2(e.startsWith(QStringLiteral("runs[0].recipe.overrides.wgard: unknown role 'wgard' (fprop.input, ")),
           qPrintable(e));
  QVERIFY2(e.endsWith(QStringLiteral("(line 3, column 18)")), qPrintable(e));
  // Unknown recipe inside an override, an option of another recipe, per-tensor keys with a
  // recipe, FP32 with a recipe, an FP8 format on an NVFP4 role.
  e = QString::fromStdString(parseError(
      R"({"type": "training", "recipe": {"name": "te_mxfp8", "overrides": {"fprop.weight": {"recipe": "fp6"}}}})"));
  QVERIFY2(e.startsWith(QStringLiteral("recipe.overrides.fprop.weight.recipe: unknown recipe 'fp6'")), qPrintable(e));
  e = QString::fromStdString(parseError(R"({"type": "training", "recipe": {"name": "te_mxfp8", "hadamard": true}})"));
  QVERIFY2(e.startsWith(QStringLiteral("recipe.hadamard: only te_nvfp4 has this option")), qPrintable(e));
  e = QString::fromStdString(parseError(R"({"type": "training", "recipe": "te_mxfp8", "forward_format": "E5M2"})"));
  QVERIFY2(e.startsWith(QStringLiteral("forward_format: a block recipe sets its own")), qPrintable(e));
  e = QString::fromStdString(parseError(R"({"type": "training", "recipe": "te_nvfp4", "precision": "fp32"})"));
  QVERIFY2(e.startsWith(QStringLiteral("recipe: a recipe needs precision")), qPrintable(e));
  e = QString::fromStdString(parseError(
      R"({"type": "training", "recipe": {"name": "te_nvfp4", "overrides": {"fprop.input": {"format": "E5M2"}}}})"));
  QVERIFY2(e.startsWith(QStringLiteral("recipe.overrides: fprop.input: te_nvfp4 elements are E2M1")), qPrintable(e));
  // HYBRID would change nothing for te_nvfp4 (E2M1 everywhere): refused, not ignored.
  e = QString::fromStdString(
      parseError(R"({"type": "training", "recipe": {"name": "te_nvfp4", "fp8_format": "HYBRID"}})"));
  QVERIFY2(e.startsWith(QStringLiteral("recipe.fp8_format: te_nvfp4 has E2M1 elements in every role")), qPrintable(e));
  // A recipe run without an id is named after its recipe, not after a per-tensor strategy it does
  // not use: "fp8-" + the recipe name with '-' for '_'.
  {
    const JsonDocument d = JsonDocument::parse(R"({"type": "training", "recipe": "te_nvfp4"})");
    std::string err;
    const auto spec = parseTrainingExperiment(d.root(), &err, &d);
    QVERIFY2(spec, err.c_str());
    QCOMPARE(spec->runs.at(0).id, std::string("fp8-te-nvfp4"));
  }

  // A good config: "wgrad" names both wgrad operands; the stored config reads back the same.
  const std::string good = R"({"type": "training", "id": "r", "recipe": {"name": "te_mxfp8", "fp8_format": "HYBRID",
      "overrides": {"wgrad": {"recipe": "high_precision"}, "fprop.weight": {"format": "E5M2"}}}})";
  const JsonDocument d = JsonDocument::parse(good);
  std::string err;
  const auto spec = parseTrainingExperiment(d.root(), &err, &d);
  QVERIFY2(spec, err.c_str());
  const TrainingRecipeConfig& rc = mlpRun(spec->runs.at(0)).config.recipe;
  QCOMPARE(rc.recipe, TrainingRecipe::TeMxfp8);
  QVERIFY(rc.hybrid);
  QCOMPARE(QString::fromStdString(rc.role(OperandRole::WgradInput).describe()), QStringLiteral("high_precision"));
  QCOMPARE(QString::fromStdString(rc.role(OperandRole::WgradGradOutput).describe()), QStringLiteral("high_precision"));
  QCOMPARE(QString::fromStdString(rc.role(OperandRole::FpropWeight).describe()), QStringLiteral("te_mxfp8 E5M2 1x32"));
  QCOMPARE(QString::fromStdString(rc.role(OperandRole::FpropInput).describe()), QStringLiteral("te_mxfp8 E4M3FN 1x32"));
  // HYBRID: gradients E5M2 (TE Format.HYBRID)
  QCOMPARE(QString::fromStdString(rc.role(OperandRole::DgradGradOutput).describe()),
           QStringLiteral("te_mxfp8 E5M2 1x32"));
  const JsonDocument back = JsonDocument::parse(spec->runs[0].configJson());
  const auto again = parseTrainingExperiment(back.root(), &err, &back);
  QVERIFY2(again, err.c_str());
  for (int i = 0; i < kOperandRoles; ++i)
    QCOMPARE(mlpRun(again->runs[0]).config.recipe.role(static_cast<OperandRole>(i)).describe(),
             rc.role(static_cast<OperandRole>(i)).describe());
}

void TestTrainingRecipes::rolesFollowTheTeRecipes() {
  // TE Float8BlockScaling: x/grad 1x128, w 128x128, Format.E4M3 for every tensor.
  const auto fb = recipeOf(TrainingRecipe::TeFloat8Block);
  QCOMPARE(QString::fromStdString(fb.role(OperandRole::FpropInput).describe()),
           QStringLiteral("te_float8_block E4M3FN 1x128"));
  QCOMPARE(QString::fromStdString(fb.role(OperandRole::DgradWeight).describe()),
           QStringLiteral("te_float8_block E4M3FN 128x128"));
  QCOMPARE(QString::fromStdString(fb.role(OperandRole::WgradGradOutput).describe()),
           QStringLiteral("te_float8_block E4M3FN 1x128"));
  // TE NVFP4BlockScaling: inputs 1x16 RN, RHT on the columnwise (wgrad) copies of x and dy,
  // weights 16x16 RN, SR on dy (both copies).
  const auto nv = recipeOf(TrainingRecipe::TeNvfp4);
  const char* expect[kOperandRoles] = {"te_nvfp4 E2M1 1x16",  "te_nvfp4 E2M1 16x16",    "te_nvfp4 E2M1 1x16 sr",
                                       "te_nvfp4 E2M1 16x16", "te_nvfp4 E2M1 1x16 rht", "te_nvfp4 E2M1 1x16 rht sr"};
  for (int i = 0; i < kOperandRoles; ++i)
    QCOMPARE(QString::fromStdString(nv.role(static_cast<OperandRole>(i)).describe()), QString::fromLatin1(expect[i]));
  // One wgrad operand in high precision: the rotation would no longer cancel, so neither is rotated.
  auto half = nv;
  half.overrides[static_cast<size_t>(OperandRole::WgradInput)].kind = RoleKind::HighPrecision;
  QCOMPARE(QString::fromStdString(half.role(OperandRole::WgradGradOutput).describe()),
           QStringLiteral("te_nvfp4 E2M1 1x16 sr"));
}

void TestTrainingRecipes::mxfp8CopiesAreQuantizedFromTheHighPrecisionTensor() {
  // X [32,32] = 0.125 except X[0][0] = 2^20. TE MXFP8 (RCEIL, E4M3):
  //   a block holding 2^20: scale 2^ceil(log2(2^20/448)) = 2^12; 0.125/2^12 = 2^-15 < 2^-10
  //     (half the smallest E4M3 subnormal) → 0; 2^20/2^12 = 256 exact;
  //   a block of 0.125s: scale 2^ceil(log2(0.125/448)) = 2^-11; 0.125/2^-11 = 256 exact.
  // Rowwise (1×32 along a row, fprop.input): row 0 = [2^20, 0, …, 0], rows 1..31 = 0.125.
  // Columnwise (32×1 down a column, wgrad.input): column 0 = [2^20, 0, …, 0], columns 1..31 = 0.125.
  // A columnwise copy made from the rowwise one would have 0 in row 0, columns 1..31.
  const std::vector<float> x = mxTensor();
  std::vector<float> eye(32 * 32, 0.0f);
  for (int i = 0; i < 32; ++i) eye[static_cast<size_t>(i * 33)] = 1.0f; // quantizes exactly (amax 1 → 2^-8)
  const auto mx = recipeOf(TrainingRecipe::TeMxfp8);
  std::vector<float> y, dw;
  recipeLinearGemm(mx, LinearGemm::Fprop, x.data(), eye.data(), 32, 32, 32, 0, 0, y);  // y = deq_row(X)
  recipeLinearGemm(mx, LinearGemm::Wgrad, x.data(), eye.data(), 32, 32, 32, 0, 0, dw); // dW = deq_col(X)ᵀ
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j) {
      const float row_copy = i == 0 && j == 0 ? 1048576.0f : (i == 0 ? 0.0f : 0.125f);
      const float col_copy = i == 0 && j == 0 ? 1048576.0f : (j == 0 ? 0.0f : 0.125f);
      QCOMPARE(y[static_cast<size_t>(i * 32 + j)], row_copy);
      QCOMPARE(dw[static_cast<size_t>(j * 32 + i)], col_copy); // dW[j][i] = deq_col(X)[i][j]
    }
  // The same as core/scaling's quantize() of the transposed tensor along its rows (Xᵀ [in, B],
  // contraction B), computed here.
  std::vector<float> xt(32 * 32);
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j) xt[static_cast<size_t>(j * 32 + i)] = x[static_cast<size_t>(i * 32 + j)];
  const QuantizedTensor q = quantize(xt.data(), 32, 32, Format::E4M3FN(), *scalingPreset("mx_rceil"), Axis::Cols);
  QVERIFY(sameBits(dw, q.dequantize()));
}

void TestTrainingRecipes::nvfp4WeightUsesSixteenBySixteenTiles() {
  // W [16,16] = 0.5 except W[0][0] = 6. amax 6 → S_enc = 2688/6 = 448.
  // 16×16 tile: tile amax 6 → block scale RNE_E4M3(6·448/6) = 448 → 0.5 is coded as 0.5 and
  //   dequantizes to 0.5 (to float32 rounding of the decode factor).
  // 16×1 blocks (nvfp4_te down the columns): columns 1..15 have amax 0.5 → 0.5·448/6 = 37.33 →
  //   E4M3 36 → 0.5·448/36 = 6.22 saturates to 6 → 6·36·6/2688 = 0.48214.
  std::vector<float> w(16 * 16, 0.5f);
  w[0] = 6.0f;
  const auto nv = recipeOf(TrainingRecipe::TeNvfp4);
  std::vector<float> fw, fwt;
  fakeQuantize(nv.role(OperandRole::FpropWeight), w.data(), 16, 16, Axis::Rows, 0, fw);
  const Nvfp4Tensor t2d = quantizeNvfp4(w.data(), 16, 16, *nvfp4Preset("nvfp4_te_2d"), Axis::Rows);
  QVERIFY(sameBits(fw, t2d.dequantize()));
  QVERIFY2(std::fabs(fw[17] - 0.5f) < 1e-6f, qPrintable(QString::number(double(fw[17]), 'g', 9)));
  const Nvfp4Tensor t1d = quantizeNvfp4(w.data(), 16, 16, *nvfp4Preset("nvfp4_te"), Axis::Rows);
  QVERIFY2(std::fabs(t1d.dequantize()[17] - 0.48214286f) < 1e-5f, "the 1x16 contrast");
  // dgrad.weight (Wᵀ, blocks along out) shares the tiles: the transpose of the fprop copy (TE's
  // rowwise and columnwise 2-D copies are numerically equivalent).
  std::vector<float> wt(16 * 16);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) wt[static_cast<size_t>(j * 16 + i)] = w[static_cast<size_t>(i * 16 + j)];
  fakeQuantize(nv.role(OperandRole::DgradWeight), wt.data(), 16, 16, Axis::Rows, 0, fwt);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) QCOMPARE(fwt[static_cast<size_t>(j * 16 + i)], fw[static_cast<size_t>(i * 16 + j)]);
}

void TestTrainingRecipes::stochasticRoundingOnlyTouchesGradients() {
  // 32×32 values off the E2M1 grid after scaling (1 + k/97 for k = 0…96): RN is seed-free, SR
  // draws its bytes from the seed, so only the gradient roles change with the seed.
  std::vector<float> x(32 * 32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + static_cast<float>(i % 97) / 97.0f;
  const auto nv = recipeOf(TrainingRecipe::TeNvfp4);
  for (int i = 0; i < kOperandRoles; ++i) {
    const auto role = static_cast<OperandRole>(i);
    std::vector<float> a, b;
    fakeQuantize(nv.role(role), x.data(), 32, 32, Axis::Cols, 1, a);
    fakeQuantize(nv.role(role), x.data(), 32, 32, Axis::Cols, 2, b);
    QVERIFY2(sameBits(a, b) == !isGradientRole(role), toString(role));
  }
  // Through the GEMMs: fprop is seed-free, wgrad is not.
  std::vector<float> w(32 * 32, 0.25f), y1, y2, d1, d2;
  recipeLinearGemm(nv, LinearGemm::Fprop, x.data(), w.data(), 32, 32, 32, 1, 1, y1);
  recipeLinearGemm(nv, LinearGemm::Fprop, x.data(), w.data(), 32, 32, 32, 2, 2, y2);
  QVERIFY(sameBits(y1, y2));
  recipeLinearGemm(nv, LinearGemm::Wgrad, x.data(), x.data(), 32, 32, 32, 1, 1, d1);
  recipeLinearGemm(nv, LinearGemm::Wgrad, x.data(), x.data(), 32, 32, 32, 2, 2, d2);
  QVERIFY(!sameBits(d1, d2));
}

void TestTrainingRecipes::wgradOverrideKeepsThatGemmInHighPrecision() {
  // x [2,1] = [[17], [1]], g [2,1] = [[1], [1]], W [1,1] = [[1]]. MXFP8: a block holding 17 has
  // scale 2^ceil(log2(17/448)) = 2^-4; 17·16 = 272, the E4M3 tie between 256 and 288 → 256 (even)
  // → 16. A block of 1s: scale 2^-8, exact.
  //   fprop y = deq(x)·deq(W) = [16, 1] (quantized in both configs)
  //   wgrad dW = xᵀ·g: quantized 16 + 1 = 17; with "wgrad": high_precision 17 + 1 = 18.
  const std::vector<float> x = {17.0f, 1.0f}, g = {1.0f, 1.0f}, w = {1.0f};
  auto mx = recipeOf(TrainingRecipe::TeMxfp8);
  auto hp = mx;
  hp.overrides[static_cast<size_t>(OperandRole::WgradInput)].kind = RoleKind::HighPrecision;
  hp.overrides[static_cast<size_t>(OperandRole::WgradGradOutput)].kind = RoleKind::HighPrecision;
  std::vector<float> y, dw;
  RoleQuantRecord ra, rb;
  recipeLinearGemm(hp, LinearGemm::Fprop, x.data(), w.data(), 2, 1, 1, 0, 0, y);
  QCOMPARE(y, (std::vector<float>{16.0f, 1.0f}));
  recipeLinearGemm(hp, LinearGemm::Wgrad, x.data(), g.data(), 2, 1, 1, 0, 0, dw, &ra, &rb);
  QCOMPARE(dw, std::vector<float>{18.0f});
  QCOMPARE(ra.dequant_scale, 1.0f);
  QCOMPARE(rb.quant_scale, 1.0f);
  recipeLinearGemm(mx, LinearGemm::Wgrad, x.data(), g.data(), 2, 1, 1, 0, 0, dw);
  QCOMPARE(dw, std::vector<float>{17.0f});

  // In a training run the recorded output_grad (wgrad.grad_output) is then float32.
  const FashionMnist* fm = subset();
  QVERIFY2(fm, "Fashion-MNIST missing: install dataset-fashion-mnist");
  TrainingConfig c;
  c.recipe = hp;
  c.batch_size = 64;
  c.epochs = 1;
  c.threads = 2;
  TrainingRun run(c, fm->train, fm->test);
  run.run();
  const OperandHistory* h = run.result().find("fc2/output_grad");
  QVERIFY(h);
  QCOMPARE(QString::fromStdString(h->format), QStringLiteral("FP32"));
  QCOMPARE(QString::fromStdString(h->quantization), QStringLiteral("wgrad.grad_output: high_precision"));
  for (size_t t = 0; t < h->quant_scale.size(); ++t) QCOMPARE(h->quant_scale[t], 1.0f);
  QCOMPARE(QString::fromStdString(run.result().find("fc2/input")->quantization),
           QStringLiteral("fprop.input: te_mxfp8 E4M3FN 1x32"));
}

void TestTrainingRecipes::recordsHoldTheTensorAmaxAndTheRepresentativeScale() {
  // x [1, 96]: three MX blocks with amax 448, 896, 3584 → RCEIL scales 1, 2, 8; the lower median
  // of {1, 2, 8} is 2, its quant multiplier 1/2.
  std::vector<float> x(96, 1.0f);
  x[0] = 448.0f;
  x[32] = 896.0f;
  x[64] = 3584.0f;
  RoleQuantRecord r;
  std::vector<float> out;
  fakeQuantize(recipeOf(TrainingRecipe::TeMxfp8).role(OperandRole::FpropInput), x.data(), 1, 96, Axis::Cols, 0, out,
               &r);
  QCOMPARE(r.amax, 3584.0f);
  QCOMPARE(r.dequant_scale, 2.0f);
  QCOMPARE(r.quant_scale, 0.5f);
  QCOMPARE(out.size(), size_t{96}); // 96 is a multiple of 16: no padding
  // NVFP4: amax 3584 → S_enc = f32(2688/3584) = 0.75, recorded dequant f32(1/0.75).
  fakeQuantize(recipeOf(TrainingRecipe::TeNvfp4).role(OperandRole::FpropInput), x.data(), 1, 96, Axis::Cols, 0, out,
               &r);
  QCOMPARE(r.amax, 3584.0f);
  QCOMPARE(r.quant_scale, 0.75f);
  QCOMPARE(r.dequant_scale, 1.0f / 0.75f);
  // A contraction of 10 is padded to 16 with zeros.
  std::vector<float> g(3 * 10, 1.0f);
  fakeQuantize(recipeOf(TrainingRecipe::TeNvfp4).role(OperandRole::FpropInput), g.data(), 3, 10, Axis::Cols, 0, out);
  QCOMPARE(out.size(), size_t{3 * 16});
  QCOMPARE(out[10], 0.0f);
}

void TestTrainingRecipes::shortRunsAreDeterministicPerRecipe() {
  const FashionMnist* fm = subset();
  QVERIFY2(fm, "Fashion-MNIST missing: install dataset-fashion-mnist");
  for (auto rec :
       {TrainingRecipe::TeFloat8Block, TrainingRecipe::TeMxfp8, TrainingRecipe::TeNvfp4, TrainingRecipe::DeepSeekV3}) {
    TrainingConfig c;
    c.recipe = recipeOf(rec);
    c.batch_size = 64; // 512 images → 8 steps
    c.epochs = 1;
    c.eval_batch_size = 128;
    c.seed = 20261201;
    c.threads = 2;
    TrainingRun a(c, fm->train, fm->test), b(c, fm->train, fm->test);
    a.run();
    b.run();
    QCOMPARE(a.result().steps_done, int64_t{8});
    QVERIFY2(sameBits(a.result().loss, b.result().loss), toString(rec));
    for (size_t l = 0; l < 3; ++l) QVERIFY(sameBits(a.result().weights[l].kernel, b.result().weights[l].kernel));
    // Untrained 10-class softmax: the first loss is near ln 10 = 2.30, and it falls.
    QVERIFY(a.result().loss.front() > 1.5 && a.result().loss.front() < 4.0);
    QVERIFY(a.result().loss.back() < a.result().loss.front());
    c.seed += 1;
    TrainingRun other(c, fm->train, fm->test);
    other.run();
    QVERIFY(!sameBits(other.result().loss, a.result().loss));
    // The session run names the recipe.
    const Run s = trainingRunToSession(a.result(), "r", trainingConfigJson(c, "r"));
    QCOMPARE(QString::fromStdString(std::get<std::string>(s.attrs.at("scaling"))), QString::fromLatin1(toString(rec)));
  }
}

namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// The recipe of a one-run config's "recipe" member (parse errors fail the calling test).
std::optional<TrainingRecipeConfig> parsedRecipe(const std::string& recipe_json, std::string* err) {
  const JsonDocument d = JsonDocument::parse(R"({"type": "training", "id": "r", "recipe": )" + recipe_json + "}");
  const auto spec = parseTrainingExperiment(d.root(), err, &d);
  if (!spec) return std::nullopt;
  return mlpRun(spec->runs.at(0)).config.recipe;
}

} // namespace

void TestTrainingRecipes::recommendedRecipesParseWithTheirOptions() {
  // docs/decide.md recommends DeepSeek-V3's pair, TE's blocks with and without power-of-two
  // scales, and MXFP8: each is a training recipe, its options read back from the stored config.
  struct Case {
    const char* json;
    const char* label;
    const char* roles[kOperandRoles];
  };
  const Case cases[] = {
      {R"("deepseek_v3")",
       "deepseek_v3",
       {"deepseek_v3 E4M3FN 1x128", "deepseek_v3 E4M3FN 128x128", "deepseek_v3 E4M3FN 1x128",
        "deepseek_v3 E4M3FN 128x128", "deepseek_v3 E4M3FN 1x128", "deepseek_v3 E4M3FN 1x128"}},
      {R"({"name": "deepseek_v3", "power_of_two": true})",
       "deepseek_v3 ue8m0 scales",
       {"deepseek_v3 E4M3FN 1x128 ue8m0", "deepseek_v3 E4M3FN 128x128 ue8m0", "deepseek_v3 E4M3FN 1x128 ue8m0",
        "deepseek_v3 E4M3FN 128x128 ue8m0", "deepseek_v3 E4M3FN 1x128 ue8m0", "deepseek_v3 E4M3FN 1x128 ue8m0"}},
      {R"({"name": "te_float8_block", "power_of_two": false})",
       "te_float8_block fp32 scales",
       {"te_float8_block E4M3FN 1x128 fp32", "te_float8_block E4M3FN 128x128 fp32", "te_float8_block E4M3FN 1x128 fp32",
        "te_float8_block E4M3FN 128x128 fp32", "te_float8_block E4M3FN 1x128 fp32",
        "te_float8_block E4M3FN 1x128 fp32"}},
      {R"({"name": "te_float8_block", "power_of_two": true})",
       "te_float8_block",
       {"te_float8_block E4M3FN 1x128", "te_float8_block E4M3FN 128x128", "te_float8_block E4M3FN 1x128",
        "te_float8_block E4M3FN 128x128", "te_float8_block E4M3FN 1x128", "te_float8_block E4M3FN 1x128"}},
      {R"({"name": "te_mxfp8", "scale_calculation_mode": "floor", "weight_2d": true})",
       "te_mxfp8 2-D weights floor",
       {"te_mxfp8 E4M3FN 1x32 floor", "te_mxfp8 E4M3FN 32x32 floor", "te_mxfp8 E4M3FN 1x32 floor",
        "te_mxfp8 E4M3FN 32x32 floor", "te_mxfp8 E4M3FN 1x32 floor", "te_mxfp8 E4M3FN 1x32 floor"}},
      {R"({"name": "te_mxfp8", "scale_calculation_mode": "EVEN"})",
       "te_mxfp8 even",
       {"te_mxfp8 E4M3FN 1x32 even", "te_mxfp8 E4M3FN 1x32 even", "te_mxfp8 E4M3FN 1x32 even",
        "te_mxfp8 E4M3FN 1x32 even", "te_mxfp8 E4M3FN 1x32 even", "te_mxfp8 E4M3FN 1x32 even"}},
  };
  for (const Case& c : cases) {
    std::string err;
    const auto rc = parsedRecipe(c.json, &err);
    QVERIFY2(rc, (std::string(c.json) + ": " + err).c_str());
    QCOMPARE(QString::fromStdString(rc->label()), QString::fromLatin1(c.label));
    for (int i = 0; i < kOperandRoles; ++i)
      QCOMPARE(QString::fromStdString(rc->role(static_cast<OperandRole>(i)).describe()),
               QString::fromLatin1(c.roles[i]));
    // The stored config (training_session.h recipeJson) reads back to the same roles.
    TrainingConfig tc;
    tc.recipe = *rc;
    const JsonDocument back = JsonDocument::parse(trainingConfigJson(tc, "r"));
    const auto again = parseTrainingExperiment(back.root(), &err, &back);
    QVERIFY2(again, err.c_str());
    QCOMPARE(QString::fromStdString(mlpRun(again->runs[0]).config.recipe.label()), QString::fromLatin1(c.label));
    for (int i = 0; i < kOperandRoles; ++i)
      QCOMPARE(mlpRun(again->runs[0]).config.recipe.role(static_cast<OperandRole>(i)).describe(),
               rc->role(static_cast<OperandRole>(i)).describe());
  }
  // A GEMM preset's name is not a training recipe; the refusal names the one that is.
  QString e = QString::fromStdString(parseError(R"({"type": "training", "recipe": "deepgemm_1x128"})"));
  QVERIFY2(e.startsWith(QStringLiteral("recipe: unknown recipe 'deepgemm_1x128' (te_float8_block, te_mxfp8, te_nvfp4, "
                                       "deepseek_v3;")),
           qPrintable(e));
  QVERIFY2(e.contains(QStringLiteral("the training recipe with its scales is 'deepseek_v3'")), qPrintable(e));
  e = QString::fromStdString(
      parseError(R"({"type": "training", "recipe": {"name": "te_mxfp8", "power_of_two": false}})"));
  QVERIFY2(e.startsWith(QStringLiteral("recipe.power_of_two: only te_float8_block and deepseek_v3 have this option")),
           qPrintable(e));
  e = QString::fromStdString(
      parseError(R"({"type": "training", "recipe": {"name": "te_float8_block", "scale_calculation_mode": "floor"}})"));
  QVERIFY2(e.startsWith(QStringLiteral("recipe.scale_calculation_mode: only te_mxfp8 has this option")), qPrintable(e));
  e = QString::fromStdString(
      parseError(R"({"type": "training", "recipe": {"name": "te_mxfp8", "scale_calculation_mode": "round"}})"));
  QVERIFY2(e.startsWith(QStringLiteral("recipe.scale_calculation_mode: unknown MX scale mode 'round'")), qPrintable(e));
  // A role overridden to deepseek_v3 inside another recipe takes DeepSeek's defaults.
  std::string err;
  const auto mixed =
      parsedRecipe(R"({"name": "te_mxfp8", "overrides": {"fprop.weight": {"recipe": "deepseek_v3"}}})", &err);
  QVERIFY2(mixed, err.c_str());
  QCOMPARE(QString::fromStdString(mixed->role(OperandRole::FpropWeight).describe()),
           QStringLiteral("deepseek_v3 E4M3FN 128x128"));
  QCOMPARE(QString::fromStdString(mixed->label()), QStringLiteral("te_mxfp8 + overrides"));
}

void TestTrainingRecipes::blockScalesFollowEachSystemsRule() {
  // x [1, 256] along its columns (fprop.input): block 0 holds 1.3f and 0.5, block 1 holds 0.1f.
  // By hand, in float32 (amax 1.3f = 0x3FA66666, 0.1f = 0x3DCCCCCD):
  //   TE compute_scale_from_amax, fp32 scales: s = fl(448 / amax): 448/1.3f = 0x43AC4EC5
  //     (344.61536), scale_inv = fl(1/s) = 0x3B3E2BE3; 448/0.1f = 4480 = 0x458C0000, 1/4480 =
  //     0x396A0EA1. 1.3f · s = 448.0 → E4M3 0x7E.
  //   TE power-of-two (mantissa mask, down): 344.6 → 256, 4480 → 4096: scale_inv 2^-8 =
  //     0x3B800000, 2^-12 = 0x39800000. 1.3f · 256 = 332.8 → E4M3 320 (0x7A; 288/320/352 are the
  //     neighbours at step 32).
  //   DeepGEMM per_token_cast_to_fp8: sf = fl(amax / 448): 1.3f/448 = 0x3B3E2BE2 (one ulp below
  //     TE's scale_inv), x · fl(1/sf) with 1/sf = 0x43AC4EC6; 0.1f/448 = 0x396A0EA1. 1.3f · 1/sf =
  //     448.00003 → rounds to 448 (0x7E), not clipped.
  //   DeepGEMM UE8M0 (SM100): sf rounded up to a power of two: 2^-8 and 2^-12.
  std::vector<float> x(256, 0.0f);
  x[0] = 1.3f;
  x[1] = 0.5f;
  x[128] = 0.1f;
  struct Case {
    const char* json;
    uint32_t dequant[2];
    uint32_t quant0;
    uint8_t code0;
  };
  const Case cases[] = {
      {R"({"name": "te_float8_block", "power_of_two": false})", {0x3B3E2BE3u, 0x396A0EA1u}, 0x43AC4EC5u, 0x7E},
      {R"("te_float8_block")", {0x3B800000u, 0x39800000u}, 0x43800000u, 0x7A},
      {R"("deepseek_v3")", {0x3B3E2BE2u, 0x396A0EA1u}, 0x43AC4EC6u, 0x7E},
      {R"({"name": "deepseek_v3", "power_of_two": true})", {0x3B800000u, 0x39800000u}, 0x43800000u, 0x7A},
  };
  for (const Case& c : cases) {
    std::string err;
    const auto rc = parsedRecipe(c.json, &err);
    QVERIFY2(rc, err.c_str());
    RoleQuantRecord rec;
    const QuantizedTensor q = quantizeRole(rc->role(OperandRole::FpropInput), x.data(), 1, 256, Axis::Cols, 0, &rec, 1);
    QCOMPARE(q.dequant_scales.size(), size_t{2});
    QCOMPARE(bitsOf(q.dequant_scales[0]), c.dequant[0]);
    QCOMPARE(bitsOf(q.dequant_scales[1]), c.dequant[1]);
    QCOMPARE(bitsOf(q.quant_scales[0]), c.quant0);
    QCOMPARE(q.codes[0], c.code0);
    QCOMPARE(q.stats.saturated, int64_t{0});
    // The record's representative scale is the lower median of the two: block 1's.
    QCOMPARE(bitsOf(rec.dequant_scale), c.dequant[1]);
    QCOMPARE(rec.amax, 1.3f);
  }
  // Weights: DeepSeek-V3 and TE keep one scale per 128×128 block. W [256, 256] along its rows
  // (fprop.weight) has 4 tiles; W[0][0] = 1.3f sets tile (0, 0), W[200][200] = 0.1f tile (1, 1); the
  // all-zero tiles take the amax floor 1e-4: sf = fl(1e-4f / 448) = 0x346FACAD.
  std::vector<float> w(256 * 256, 0.0f);
  w[0] = 1.3f;
  w[200 * 256 + 200] = 0.1f;
  std::string err;
  const auto ds = parsedRecipe(R"("deepseek_v3")", &err);
  QVERIFY2(ds, err.c_str());
  const QuantizedTensor qw = quantizeRole(ds->role(OperandRole::FpropWeight), w.data(), 256, 256, Axis::Rows, 0);
  QCOMPARE(qw.dequant_scales.size(), size_t{4});
  QCOMPARE(bitsOf(qw.dequant_scales[0]), 0x3B3E2BE2u);
  QCOMPARE(bitsOf(qw.dequant_scales[1]), 0x346FACADu);
  QCOMPARE(bitsOf(qw.dequant_scales[2]), 0x346FACADu);
  QCOMPARE(bitsOf(qw.dequant_scales[3]), 0x396A0EA1u);
  // The cost presets of the fprop pair (scaling/recipe_cost.h).
  QCOMPARE(QString::fromStdString(ds->role(OperandRole::FpropInput).costPreset()), QStringLiteral("deepgemm_1x128"));
  QCOMPARE(QString::fromStdString(ds->role(OperandRole::FpropWeight).costPreset()), QStringLiteral("deepgemm_128x128"));
}

void TestTrainingRecipes::mxScaleModesMatchTheRecipeVectors() {
  // tests/data/recipes-2026-vectors.csv, section F, torchao_mx_e4m3_<MODE> even_vs_floor_amax_496.0:
  // 32 values with amax 496; FLOOR gives scale 0x7F (and clips 496 to 448), EVEN / CEIL / RCEIL
  // give 0x80. A te_mxfp8 role with that scale_calculation_mode gives the same codes and scale.
  const auto vectors = test::recipeVectors("F");
  int checked = 0;
  for (const char* mode : {"FLOOR", "EVEN", "CEIL", "RCEIL"}) {
    for (const test::RecipeVector& v : vectors) {
      if (v.variant != std::string("torchao_mx_e4m3_") + mode || v.name != "even_vs_floor_amax_496.0") continue;
      std::string lower_mode = mode;
      for (char& ch : lower_mode) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      std::string err;
      const auto rc = parsedRecipe(R"({"name": "te_mxfp8", "scale_calculation_mode": ")" + lower_mode + "\"}", &err);
      QVERIFY2(rc, err.c_str());
      const int64_t n = static_cast<int64_t>(v.input.size());
      const QuantizedTensor q = quantizeRole(rc->role(OperandRole::FpropInput), v.input.data(), 1, n, Axis::Cols, 0);
      QCOMPARE(q.scale_codes.size(), v.scale_codes.size());
      QCOMPARE(uint32_t{q.scale_codes[0]}, v.scale_codes[0]);
      for (int64_t i = 0; i < n; ++i)
        QCOMPARE(uint32_t{q.codes[static_cast<size_t>(i)]}, v.element_codes[static_cast<size_t>(i)]);
      ++checked;
    }
  }
  QCOMPARE(checked, 4);
}

QTEST_GUILESS_MAIN(TestTrainingRecipes)
#include "test_training_recipes.moc"
