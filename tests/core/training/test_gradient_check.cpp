// Every backward of the training engine against central finite differences in float64, as
// autodiff libraries test themselves: for a layer y = f(x, θ) and a fixed random R of y's shape,
// the scalar L = Σ R ∘ y has ∂L/∂y = R, so the backward given dy = R must return ∂L/∂x and ∂L/∂θ;
// each is compared with (L(v + h) − L(v − h)) / 2h, h = 1e-6, element by element. Central
// differences are exact to O(h²) ≈ 1e-12 for smooth functions, so a relative error above 1e-6
// means a wrong formula: a flipped sign, a missing term, a wrong index. The inputs are chosen
// away from the ReLU kink, so every layer is smooth where it is checked. Then the whole models the
// same way, every parameter: the MLP (with and without a spike) and the transformer (every
// configuration the language model offers).
#include "training/layers.h"
#include "training/mlp.h"
#include "training/transformer.h"

#include <QtTest>

#include <cmath>
#include <functional>
#include <random>

using namespace fp8lab;

namespace {

using Vec = std::vector<double>;

Vec randomVec(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Vec v(n);
  for (double& x : v) x = u(g);
  return v;
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

/// Largest error between an analytic gradient and the central difference of `loss` with respect
/// to `v` (changed in place and restored): |a − n| / max(1e-3, |a| + |n|) — relative for
/// gradients above 1e-3, absolute (scaled by 1e3) below, where the difference quotient's own
/// rounding noise (≈ 1e-16 · |L| / h ≈ 1e-10) would dominate a relative measure.
double worstError(Vec& v, const Vec& analytic, const std::function<double()>& loss, std::string* where) {
  const double h = 1e-6;
  double worst = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double x = v[i];
    v[i] = x + h;
    const double lp = loss();
    v[i] = x - h;
    const double lm = loss();
    v[i] = x;
    const double num = (lp - lm) / (2 * h);
    const double err = std::fabs(analytic[i] - num) / std::max(1e-3, std::fabs(analytic[i]) + std::fabs(num));
    if (err > worst) {
      worst = err;
      if (where)
        *where = "element " + std::to_string(i) + ": analytic " + std::to_string(analytic[i]) + ", numeric " +
                 std::to_string(num);
    }
  }
  return worst;
}

constexpr double kTolerance = 1e-6;

#define CHECK_GRADIENT(v, analytic, loss)                                                                              \
  do {                                                                                                                 \
    std::string where;                                                                                                 \
    const double e = worstError(v, analytic, loss, &where);                                                            \
    QVERIFY2(e < kTolerance, qPrintable(QStringLiteral("%1: relative error %2 at %3")                                  \
                                            .arg(QLatin1String(#v))                                                    \
                                            .arg(e)                                                                    \
                                            .arg(QString::fromStdString(where))));                                     \
  } while (0)

/// Every parameter's gradient (Param::grad, from one backward) against central differences of
/// `loss`; fails the test naming the parameter and the element. Returns the parameter count.
int64_t checkEveryParameter(std::vector<Param<double>>& params, const std::function<double()>& loss) {
  int64_t count = 0;
  for (Param<double>& p : params) {
    count += int64_t(p.value.size());
    const Vec analytic = p.grad;
    std::string where;
    const double e = worstError(p.value, analytic, loss, &where);
    if (!(e < kTolerance)) {
      QTest::qFail(qPrintable(QStringLiteral("%1: relative error %2 at %3")
                                  .arg(QString::fromStdString(p.name))
                                  .arg(e)
                                  .arg(QString::fromStdString(where))),
                   __FILE__, __LINE__);
      return count;
    }
  }
  return count;
}

} // namespace

class TestGradientCheck : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void matmul() {
    const int64_t m = 3, k = 4, n = 5;
    Vec a = randomVec(m * k, 1), b = randomVec(k * n, 2), r = randomVec(m * n, 3);
    auto loss = [&] {
      Vec c(m * n);
      nn::matmul(a.data(), b.data(), c.data(), m, k, n);
      return dot(c, r);
    };
    // dA = R·Bᵀ, dB = Aᵀ·R
    Vec bt(k * n), at(m * k), da(m * k), db(k * n);
    nn::transpose(b.data(), bt.data(), k, n);
    nn::transpose(a.data(), at.data(), m, k);
    nn::matmul(r.data(), bt.data(), da.data(), m, n, k);
    nn::matmul(at.data(), r.data(), db.data(), k, m, n);
    CHECK_GRADIENT(a, da, loss);
    CHECK_GRADIENT(b, db, loss);
  }

  void relu() {
    // |x| ≥ 0.1: no element at the kink
    Vec x = randomVec(40, 4);
    for (double& v : x) v = v >= 0 ? v + 0.1 : v - 0.1;
    const Vec r = randomVec(40, 5);
    auto loss = [&] {
      Vec y(40);
      nn::reluForward(x.data(), y.data(), 40);
      return dot(y, r);
    };
    Vec dx(40);
    nn::reluBackward(r.data(), x.data(), dx.data(), 40);
    CHECK_GRADIENT(x, dx, loss);
  }

  void gelu() {
    Vec x = randomVec(50, 6, -4, 4);
    const Vec r = randomVec(50, 7);
    auto loss = [&] {
      Vec y(50);
      nn::geluForward(x.data(), y.data(), 50);
      return dot(y, r);
    };
    Vec dx(50);
    nn::geluBackward(r.data(), x.data(), dx.data(), 50);
    CHECK_GRADIENT(x, dx, loss);
    // GELU(1) = 0.5·(1 + tanh(√(2/π)·1.044715)) = 0.841191990 (the tanh approximation)
    double one = 1, y1 = 0;
    nn::geluForward(&one, &y1, 1);
    QVERIFY(std::fabs(y1 - 0.8411919906082768) < 1e-12);
  }

  void swiglu() {
    Vec g = randomVec(30, 8, -3, 3), u = randomVec(30, 9, -3, 3);
    const Vec r = randomVec(30, 10);
    auto loss = [&] {
      Vec y(30);
      nn::swigluForward(g.data(), u.data(), y.data(), 30);
      return dot(y, r);
    };
    Vec dg(30), du(30);
    nn::swigluBackward(r.data(), g.data(), u.data(), dg.data(), du.data(), 30);
    CHECK_GRADIENT(g, dg, loss);
    CHECK_GRADIENT(u, du, loss);
  }

  void layerNorm() {
    const int64_t n = 4, c = 6;
    Vec x = randomVec(n * c, 11, -2, 2), gamma = randomVec(c, 12, 0.5, 1.5), beta = randomVec(c, 13);
    const Vec r = randomVec(n * c, 14);
    auto loss = [&] {
      Vec y(n * c), mean(n), rstd(n);
      nn::layerNormForward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), n, c);
      return dot(y, r);
    };
    Vec y(n * c), mean(n), rstd(n), dx(n * c), dg(c, 0.0), db(c, 0.0);
    nn::layerNormForward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), n, c);
    nn::layerNormBackward(r.data(), x.data(), gamma.data(), mean.data(), rstd.data(), dx.data(), dg.data(), db.data(),
                          n, c);
    CHECK_GRADIENT(x, dx, loss);
    CHECK_GRADIENT(gamma, dg, loss);
    CHECK_GRADIENT(beta, db, loss);
  }

  void rmsNorm() {
    const int64_t n = 4, c = 6;
    Vec x = randomVec(n * c, 15, -2, 2), gamma = randomVec(c, 16, 0.5, 1.5);
    const Vec r = randomVec(n * c, 17);
    auto loss = [&] {
      Vec y(n * c), rstd(n);
      nn::rmsNormForward(x.data(), gamma.data(), y.data(), rstd.data(), n, c);
      return dot(y, r);
    };
    Vec y(n * c), rstd(n), dx(n * c), dg(c, 0.0);
    nn::rmsNormForward(x.data(), gamma.data(), y.data(), rstd.data(), n, c);
    nn::rmsNormBackward(r.data(), x.data(), gamma.data(), rstd.data(), dx.data(), dg.data(), n, c);
    CHECK_GRADIENT(x, dx, loss);
    CHECK_GRADIENT(gamma, dg, loss);
  }

  void embedding() {
    const int64_t batch = 2, t = 3, c = 4, v = 5;
    const std::vector<int32_t> tokens = {1, 4, 1, 0, 2, 4}; // token 1 and 4 twice: their rows sum
    Vec wte = randomVec(v * c, 18), wpe = randomVec(t * c, 19);
    const Vec r = randomVec(batch * t * c, 20);
    auto loss = [&] {
      Vec out(batch * t * c);
      nn::embeddingForward(tokens.data(), wte.data(), wpe.data(), out.data(), batch, t, c);
      return dot(out, r);
    };
    Vec dwte(v * c, 0.0), dwpe(t * c, 0.0);
    nn::embeddingBackward(r.data(), tokens.data(), dwte.data(), dwpe.data(), batch, t, c);
    CHECK_GRADIENT(wte, dwte, loss);
    CHECK_GRADIENT(wpe, dwpe, loss);
  }

  void biasAndResidual() {
    const int64_t rows = 3, c = 4;
    Vec y0 = randomVec(rows * c, 21), bias = randomVec(c, 22), other = randomVec(rows * c, 23);
    const Vec r = randomVec(rows * c, 24);
    auto loss = [&] {
      Vec y = y0, s(rows * c);
      nn::biasForward(y.data(), bias.data(), rows, c);
      nn::residualForward(y.data(), other.data(), s.data(), rows * c);
      return dot(s, r);
    };
    Vec db(c, 0.0);
    nn::biasBackward(r.data(), db.data(), rows, c);
    CHECK_GRADIENT(bias, db, loss);
    CHECK_GRADIENT(other, r, loss); // the residual passes dout on unchanged
  }

  void causalAttention() {
    const int64_t batch = 2, t = 4, c = 6, heads = 2;
    Vec qkv = randomVec(batch * t * 3 * c, 25);
    const Vec r = randomVec(batch * t * c, 26);
    auto loss = [&] {
      Vec out(batch * t * c), probs(batch * heads * t * t);
      nn::attentionForward(qkv.data(), out.data(), probs.data(), batch, t, c, heads);
      return dot(out, r);
    };
    Vec out(batch * t * c), probs(batch * heads * t * t), dqkv(batch * t * 3 * c);
    nn::attentionForward(qkv.data(), out.data(), probs.data(), batch, t, c, heads);
    nn::attentionBackward(r.data(), qkv.data(), probs.data(), dqkv.data(), batch, t, c, heads);
    CHECK_GRADIENT(qkv, dqkv, loss);
    // causal: the first query attends to itself only
    QCOMPARE(probs[0], 1.0);
    QCOMPARE(probs[1], 0.0);
  }

  void softmaxCrossEntropy() {
    const int64_t rows = 4, classes = 5;
    Vec z = randomVec(rows * classes, 27, -3, 3);
    const std::vector<int32_t> targets = {2, 0, -1, 4}; // row 2 masked
    auto loss = [&] { return nn::softmaxCrossEntropy<double>(z.data(), targets.data(), rows, classes, nullptr, 3); };
    Vec dz(rows * classes);
    nn::softmaxCrossEntropy<double>(z.data(), targets.data(), rows, classes, dz.data(), 1);
    CHECK_GRADIENT(z, dz, loss);
    for (int64_t j = 0; j < classes; ++j) QCOMPARE(dz[size_t(2 * classes + j)], 0.0);
    // uniform logits: loss ln 5 per row
    const Vec flat(5, 0.7);
    const std::vector<int32_t> one = {3};
    QVERIFY(std::fabs(nn::softmaxCrossEntropy<double>(flat.data(), one.data(), 1, 5, nullptr, 1) - std::log(5.0)) <
            1e-15);
  }

  // The whole MLP: every weight and bias of a 5-4-3-3 network on 4 rows, with ReLUs between the
  // layers and the mean cross-entropy on top; with a spike (layer 1's input column 2 × 3), whose
  // factor the backward must bring back through the chain rule.
  void mlp_data() {
    QTest::addColumn<int>("spike_layer");
    QTest::newRow("plain") << -1;
    QTest::newRow("spike on fc2's input") << 1;
  }
  void mlp() {
    QFETCH(int, spike_layer);
    MlpModel<double> m({5, 4, 3, 3}, 7);
    uint64_t seed = 300;
    for (Param<double>& p : m.params()) p.value = randomVec(p.value.size(), seed++, -0.9, 0.9);
    const Vec x = randomVec(4 * 5, 299);
    const std::vector<int32_t> targets = {2, 0, 1, 2};
    MlpSpike spike;
    spike.layer = spike_layer;
    spike.col = 2;
    spike.factor = 3.0f;
    PlainLinearOps<double> ops;
    auto loss = [&] { return m.forward(x.data(), targets.data(), 4, ops, spike) / 4.0; };
    // Seed-fixed inputs and weights whose hidden pre-activations are all farther than h from the
    // ReLU kink (a kink within h would show as an error of order 1 at that element).
    m.zeroGrad();
    (void)loss();
    m.backward(4, ops);
    QCOMPARE(m.params().size(), size_t(6));
    const int64_t count = checkEveryParameter(m.params(), loss);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(count, int64_t(5 * 4 + 4 + 4 * 3 + 3 + 3 * 3 + 3));
    QCOMPARE(QString::fromStdString(m.params()[2].name), QStringLiteral("fc2.weight"));
  }

  // The whole model: every parameter of every configuration the language model offers. The
  // parameter counts by hand (vocab 7, C 4, 2 blocks, F 6, context 4): a block holds its norms' gains
  // (and LayerNorm biases, 4 each), qkv 4·12 (+12), out 4·4 (+4), up 4·6 (+6), [gate 4·6 (+6)],
  // down 6·4 (+4); then wte 7·4 = 28, wpe 4·4 = 16, ln_f (pre-norm only), lm_head 4·7 = 28 (untied).
  //   GELU, LayerNorm, biases: 16 + 60 + 20 + 30 + 28 = 154 a block; SwiGLU, RMSNorm: 8 + 60 + 20 + 30
  //   + 30 + 28 = 176; SwiGLU, RMSNorm, no biases: 8 + 48 + 16 + 24 + 24 + 24 = 144.
  void transformer_data() {
    QTest::addColumn<bool>("pre_norm");
    QTest::addColumn<bool>("swiglu");
    QTest::addColumn<bool>("rms");
    QTest::addColumn<bool>("tied");
    QTest::addColumn<bool>("bias");
    QTest::addColumn<int64_t>("parameters");
    QTest::newRow("pre-norm, GELU, LayerNorm, tied")
        << true << false << false << true << true << int64_t(2 * 154 + 28 + 16 + 8);
    QTest::newRow("pre-norm, SwiGLU, RMSNorm, untied")
        << true << true << true << false << true << int64_t(2 * 176 + 28 + 16 + 4 + 28);
    QTest::newRow("post-norm, GELU, LayerNorm, untied")
        << false << false << false << false << true << int64_t(2 * 154 + 28 + 16 + 28);
    QTest::newRow("post-norm, SwiGLU, RMSNorm, tied")
        << false << true << true << true << true << int64_t(2 * 176 + 28 + 16);
    QTest::newRow("pre-norm, SwiGLU, RMSNorm, untied, no biases")
        << true << true << true << false << false << int64_t(2 * 144 + 28 + 16 + 4 + 28);
  }
  void transformer() {
    QFETCH(bool, pre_norm);
    QFETCH(bool, swiglu);
    QFETCH(bool, rms);
    QFETCH(bool, tied);
    QFETCH(bool, bias);
    QFETCH(int64_t, parameters);
    TransformerConfig cfg;
    cfg.vocab = 7;
    cfg.d_model = 4;
    cfg.layers = 2;
    cfg.heads = 2;
    cfg.context = 4;
    cfg.ffn_hidden = 6;
    cfg.pre_norm = pre_norm;
    cfg.ffn = swiglu ? FfnKind::Swiglu : FfnKind::Gelu;
    cfg.norm = rms ? NormKind::RmsNorm : NormKind::LayerNorm;
    cfg.tied_embeddings = tied;
    cfg.linear_bias = bias;
    QCOMPARE(cfg.parameterCount(), parameters);
    TransformerModel<double> m(cfg, 5);
    // Larger weights than the 0.02 initialisation, so every term matters at h = 1e-6.
    uint64_t seed = 100;
    for (Param<double>& p : m.params()) p.value = randomVec(p.value.size(), seed++, -0.6, 0.6);
    const std::vector<int32_t> tokens = {1, 3, 6, 0, 2, 2, 5, 4};
    const std::vector<int32_t> targets = {3, 6, 0, 2, 2, 5, 4, 1};
    PlainLinearOps<double> ops;
    auto loss = [&] { return m.forward(tokens.data(), targets.data(), 2, 4, ops) / 8.0; };
    m.zeroGrad();
    (void)loss();
    m.backward(8, ops);
    QCOMPARE(int64_t(m.params().size()) > 10, true);
    const int64_t count = checkEveryParameter(m.params(), loss);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(count, parameters);
    if (!bias)
      for (const Param<double>& p : m.params()) QVERIFY2(!p.name.ends_with(".bias"), p.name.c_str());
  }
};

QTEST_GUILESS_MAIN(TestGradientCheck)
#include "test_gradient_check.moc"
