// Tests for core/training: the IDX reader (hand-built gzip IDX files, corrupt and truncated
// ones), locating Fashion-MNIST (missing package → message naming it), and the FP8 training
// experiment on a small subset: it learns, is reproducible, and records amax histories and
// scales that equal an independent step-by-step recomputation of each preset's rules.
//
// The recomputation below is written from the systems' sources (Flax fp8_ops.py
// update_fp8_meta/compute_scale, TE DelayedScaling's fused update kernel_bulk, TE current scaling's
// recipe_common.cuh compute_scale_from_amax), not by calling core/scaling: it takes only the
// recorded per-step amaxes as input.
#include <QtTest>

#include "layout_check.h"
#include "session/session_layout.h"
#include "training/fashion_mnist.h"
#include "training/idx_reader.h"
#include "training/random.h"
#include "training/trainer.h"
#include "training/training_session.h"
#include "experiment/training/weight_gemm.h"

#include <zlib.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace fp8lab;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> be32(uint32_t v) {
  return {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
}

/// IDX bytes: magic 00 00 08 <nd>, sizes, payload.
std::vector<uint8_t> idxBytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& payload,
                              uint8_t type = 0x08) {
  std::vector<uint8_t> b = {0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims) {
    auto w = be32(d);
    b.insert(b.end(), w.begin(), w.end());
  }
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

/// gzip (RFC 1952) with zlib's deflate, independent of the reader under test.
std::vector<uint8_t> gzipBytes(const std::vector<uint8_t>& raw) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) qFatal("deflateInit2");
  std::vector<uint8_t> out(deflateBound(&z, static_cast<uLong>(raw.size())) + 64);
  z.next_in = const_cast<Bytef*>(raw.data());
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) qFatal("deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void writeFile(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

/// Runs readIdxFile on bytes written to a temporary file; returns the error text ("" if none).
QString idxError(const QTemporaryDir& dir, const std::vector<uint8_t>& bytes, int expect_dims = 0) {
  const fs::path p = fs::path(dir.path().toStdString()) / "case.idx.gz";
  writeFile(p, bytes);
  try {
    readIdxFile(p, expect_dims);
  } catch (const IdxError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

/// The real data subset the training tests use; fails (never skips) when the package is absent.
const FashionMnist* subset() {
  static FashionMnist fm;
  static bool tried = false, ok = false;
  static std::string why;
  if (!tried) {
    tried = true;
    try {
      fm = loadFashionMnist({}, 512, 256);
      ok = true;
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  if (!ok) qWarning("%s", why.c_str());
  return ok ? &fm : nullptr;
}

TrainingConfig smallConfig(TrainingScalingKind kind, int history_len) {
  TrainingConfig c;
  c.precision = TrainingPrecision::FP8;
  c.scaling.kind = kind;
  c.scaling.history_len = history_len;
  c.batch_size = 64; // 512 images → 8 steps per epoch
  c.epochs = 3;      // 24 steps: every window of length ≤ 8 fills and rolls
  c.eval_batch_size = 128;
  c.seed = 20261129;
  c.threads = 2;
  return c;
}

/// The expected window after step t: the L amaxes a_(t-L+1) … a_t, zeros before step 0
/// (both Flax and TE start from an all-zero history).
std::vector<float> expectedWindow(const std::vector<float>& amax, int64_t t, int L) {
  std::vector<float> w(static_cast<size_t>(L), 0.0f);
  for (int j = 0; j < L; ++j) {
    const int64_t s = t - L + 1 + j;
    if (s >= 0) w[static_cast<size_t>(j)] = amax[static_cast<size_t>(s)];
  }
  return w;
}

float maxOf(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, x);
  return m;
}

bool sameFloat(float a, float b) {
  return std::memcmp(&a, &b, 4) == 0;
}

} // namespace

class TestTraining : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void idxReadsHandBuiltGzipFile();
  void idxReadsUncompressedFile();
  void idxRejectsBadFiles_data();
  void idxRejectsBadFiles();
  void idxRefusesHugeDeclaredSizesWithoutAllocating();
  void missingDatasetDirectoryNamesThePackage();
  void envVarOverridesTheDirectory();
  void missingFileInDirectoryNamesThePackage();
  void rngIsTheDocumentedXoshiro();
  void trainingLearnsOnASubset();
  void trainingIsReproducible();
  void flaxDelayedHistoryAndScaleFollowTheRules();
  void teDelayedHistoryAndScaleFollowTheRules();
  void currentScalingFollowsTheRule();
  void spikeSaturatesDelayedNotCurrent();
  void progressCancelKeepsAConsistentPartialResult();
  void stopAfterAnEpochsLastStepEvaluatesIt();
  void badConfigIsRefused();
  void sessionRunHoldsTheRecords();
  void gemmOnTrainedWeightsSplitsTheError();
};

void TestTraining::idxReadsHandBuiltGzipFile() {
  QTemporaryDir dir;
  // 2 images of 2x3: bytes 0..11
  std::vector<uint8_t> payload(12);
  for (int i = 0; i < 12; ++i) payload[static_cast<size_t>(i)] = static_cast<uint8_t>(i * 20);
  const fs::path p = fs::path(dir.path().toStdString()) / "tiny-images-idx3-ubyte.gz";
  writeFile(p, gzipBytes(idxBytes({2, 2, 3}, payload)));
  const IdxArray a = readIdxFile(p, 3);
  QCOMPARE(a.dims, (std::vector<uint32_t>{2, 2, 3}));
  QCOMPARE(a.count(), int64_t{12});
  QCOMPARE(a.data, payload);
  // Two gzip members concatenated are one stream (RFC 1952 §2.2, `cat a.gz b.gz`).
  const auto raw = idxBytes({2, 2, 3}, payload);
  auto part1 = gzipBytes(std::vector<uint8_t>(raw.begin(), raw.begin() + 10));
  const auto part2 = gzipBytes(std::vector<uint8_t>(raw.begin() + 10, raw.end()));
  part1.insert(part1.end(), part2.begin(), part2.end());
  writeFile(p, part1);
  QCOMPARE(readIdxFile(p, 3).data, payload);
}

void TestTraining::idxReadsUncompressedFile() {
  QTemporaryDir dir;
  const fs::path p = fs::path(dir.path().toStdString()) / "labels-idx1-ubyte";
  writeFile(p, idxBytes({5}, {9, 0, 3, 7, 1}));
  const IdxArray a = readIdxFile(p, 1);
  QCOMPARE(a.dims, (std::vector<uint32_t>{5}));
  QCOMPARE(a.data, (std::vector<uint8_t>{9, 0, 3, 7, 1}));
}

void TestTraining::idxRejectsBadFiles_data() {
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<int>("expect_dims");
  QTest::addColumn<QString>("needle");
  const std::vector<uint8_t> payload(12, 7);
  const auto good = idxBytes({2, 2, 3}, payload);
  const auto gz = gzipBytes(good);
  auto qa = [](const std::vector<uint8_t>& v) {
    return QByteArray(reinterpret_cast<const char*>(v.data()), qsizetype(v.size()));
  };

  auto truncated = gz;
  truncated.resize(gz.size() - 6); // cuts the CRC-32/ISIZE trailer
  QTest::newRow("gzip truncated") << qa(truncated) << 3 << QStringLiteral("truncated gzip");
  auto half = gz;
  half.resize(gz.size() / 2);
  QTest::newRow("gzip cut in half") << qa(half) << 3 << QStringLiteral("truncated gzip");
  auto badcrc = gz;
  badcrc[badcrc.size() - 8] ^= 0xFF; // first CRC-32 byte of the trailer
  QTest::newRow("gzip bad crc") << qa(badcrc) << 3 << QStringLiteral("corrupt gzip");
  auto trailing = gz;
  trailing.push_back('x');
  trailing.push_back('y');
  QTest::newRow("gzip trailing garbage") << qa(trailing) << 3 << QStringLiteral("after the end of the gzip stream");
  std::vector<uint8_t> fake = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  QTest::newRow("gzip magic, garbage body") << qa(fake) << 3 << QStringLiteral("corrupt gzip");

  auto short_payload = idxBytes({2, 2, 3}, std::vector<uint8_t>(11, 7));
  QTest::newRow("payload one byte short")
      << qa(gzipBytes(short_payload)) << 3 << QStringLiteral("holds 11 (truncated)");
  auto long_payload = idxBytes({2, 2, 3}, std::vector<uint8_t>(13, 7));
  QTest::newRow("payload one byte long") << qa(gzipBytes(long_payload)) << 3
                                         << QStringLiteral("holds 13 (trailing data)");
  auto bad_magic = good;
  bad_magic[0] = 0x12;
  QTest::newRow("bad magic") << qa(gzipBytes(bad_magic)) << 3 << QStringLiteral("not an IDX file");
  auto float_type = idxBytes({2, 2, 3}, std::vector<uint8_t>(48, 0), 0x0D);
  QTest::newRow("float32 element type") << qa(gzipBytes(float_type)) << 3 << QStringLiteral("float32");
  QTest::newRow("labels where images expected")
      << qa(gzipBytes(idxBytes({12}, payload))) << 3 << QStringLiteral("expected 3 dimensions");
  QTest::newRow("header truncated") << qa(gzipBytes({0, 0, 8, 3, 0, 0, 0, 2, 0, 0})) << 3
                                    << QStringLiteral("truncated IDX header");
  QTest::newRow("empty file") << QByteArray() << 3 << QStringLiteral("too short");
  QTest::newRow("zero dimensions") << qa(std::vector<uint8_t>{0, 0, 8, 0}) << 0 << QStringLiteral("zero dimensions");
}

void TestTraining::idxRejectsBadFiles() {
  QFETCH(QByteArray, bytes);
  QFETCH(int, expect_dims);
  QFETCH(QString, needle);
  QTemporaryDir dir;
  const QString err = idxError(dir, std::vector<uint8_t>(bytes.begin(), bytes.end()), expect_dims);
  QVERIFY2(!err.isEmpty(), "a bad file was accepted");
  QVERIFY2(err.contains(needle), qPrintable(QStringLiteral("message '%1' lacks '%2'").arg(err, needle)));
  QVERIFY2(err.contains(QStringLiteral("case.idx.gz")), "the message must name the file");
}

void TestTraining::idxRefusesHugeDeclaredSizesWithoutAllocating() {
  QTemporaryDir dir;
  // 0xFFFFFFFF^3 elements overflows int64: refused from the header alone, no allocation.
  QString err = idxError(dir, gzipBytes(idxBytes({0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, {1, 2, 3})), 3);
  QVERIFY2(err.contains(QStringLiteral("exceed the limit")), qPrintable(err));
  // A header promising 60000x28x28 with a 10-byte body: truncated, not a 47 MB allocation + crash.
  err = idxError(dir, gzipBytes(idxBytes({60000, 28, 28}, std::vector<uint8_t>(10, 0))), 3);
  QVERIFY2(err.contains(QStringLiteral("47040000 elements")) && err.contains(QStringLiteral("truncated")),
           qPrintable(err));
  // A small explicit limit is honoured by the decompressor too (a "zip bomb" stops early).
  const fs::path p = fs::path(dir.path().toStdString()) / "bomb.gz";
  writeFile(p, gzipBytes(idxBytes({1000000}, std::vector<uint8_t>(1000000, 0))));
  bool threw = false;
  try {
    readIdxFile(p, 1, 1000);
  } catch (const IdxError& e) {
    threw = true;
    QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("more than the allowed")), e.what());
  }
  QVERIFY(threw);
}

void TestTraining::missingDatasetDirectoryNamesThePackage() {
  bool threw = false;
  try {
    loadFashionMnist("/nonexistent/fp8lab-test/fashion");
  } catch (const DatasetMissingError& e) {
    threw = true;
    const QString m = QString::fromUtf8(e.what());
    QVERIFY2(m.contains(QStringLiteral("apt-get install dataset-fashion-mnist")), e.what());
    QVERIFY2(m.contains(QStringLiteral("/nonexistent/fp8lab-test/fashion")), e.what());
    QVERIFY2(m.contains(QStringLiteral("FP8LAB_FASHION_MNIST_DIR")), e.what());
  }
  QVERIFY(threw);
}

void TestTraining::envVarOverridesTheDirectory() {
  QTemporaryDir dir;
  const fs::path d = dir.path().toStdString();
  // 3 training and 2 test images of 28x28; pixel value = image index * 100 (0, 100, 200).
  auto images = [](uint32_t n) {
    std::vector<uint8_t> px(n * 784);
    for (uint32_t i = 0; i < n; ++i) std::fill_n(px.begin() + i * 784, 784, uint8_t(i * 100));
    return px;
  };
  writeFile(d / "train-images-idx3-ubyte.gz", gzipBytes(idxBytes({3, 28, 28}, images(3))));
  writeFile(d / "train-labels-idx1-ubyte.gz", gzipBytes(idxBytes({3}, {4, 5, 6})));
  writeFile(d / "t10k-images-idx3-ubyte", idxBytes({2, 28, 28}, images(2))); // unpacked works too
  writeFile(d / "t10k-labels-idx1-ubyte.gz", gzipBytes(idxBytes({2}, {9, 0})));
  qputenv(kFashionMnistEnvVar, QByteArray::fromStdString(d.string()));
  const FashionMnist fm = loadFashionMnist();
  qunsetenv(kFashionMnistEnvVar);
  QCOMPARE(fm.directory, d);
  QCOMPARE(fm.train.count, int64_t{3});
  QCOMPARE(fm.test.count, int64_t{2});
  QCOMPARE(fm.train.labels, (std::vector<uint8_t>{4, 5, 6}));
  QCOMPARE(fm.test.labels, (std::vector<uint8_t>{9, 0}));
  QCOMPARE(fm.train.pixels[784 * 2 + 5], 200.0f / 255.0f); // byte / 255 in float32
  QCOMPARE(fm.train.pixels[784 + 783], 100.0f / 255.0f);
  // A label outside 0..9 is refused, naming the file.
  writeFile(d / "train-labels-idx1-ubyte.gz", gzipBytes(idxBytes({3}, {4, 10, 6})));
  QVERIFY_THROWS_EXCEPTION(IdxError, loadFashionMnist(d));
  // Images and labels disagreeing in count are refused.
  writeFile(d / "train-labels-idx1-ubyte.gz", gzipBytes(idxBytes({2}, {4, 5})));
  QVERIFY_THROWS_EXCEPTION(IdxError, loadFashionMnist(d));
}

void TestTraining::missingFileInDirectoryNamesThePackage() {
  QTemporaryDir dir; // exists but empty
  try {
    loadFashionMnist(dir.path().toStdString());
    QFAIL("an empty directory was accepted");
  } catch (const DatasetMissingError& e) {
    const QString m = QString::fromUtf8(e.what());
    QVERIFY2(m.contains(QStringLiteral("train-images-idx3-ubyte.gz")), e.what());
    QVERIFY2(m.contains(QStringLiteral("apt-get install dataset-fashion-mnist")), e.what());
  }
}

void TestTraining::rngIsTheDocumentedXoshiro() {
  // splitmix64 from state 0: first output 0xe220a8397b1dcdaf (Vigna's reference splitmix64.c;
  // the same value is the first seed word of many xoshiro ports).
  uint64_t st = 0;
  QCOMPARE(TrainingRng::splitmix64(st), uint64_t{0xe220a8397b1dcdafULL});
  QCOMPARE(TrainingRng::splitmix64(st), uint64_t{0x6e789e6aa1b965f4ULL});
  // xoshiro256**'s output is rotl(s[1]·5, 7)·9 of the state before the step; seeded from 0
  // through splitmix64, s[1] is splitmix64's second output.
  uint64_t s = 0;
  uint64_t w0 = TrainingRng::splitmix64(s), w1 = TrainingRng::splitmix64(s);
  (void)w0;
  const uint64_t x = w1 * 5;
  const uint64_t expect = ((x << 7) | (x >> 57)) * 9;
  TrainingRng r(0);
  QCOMPARE(r.next(), expect);
  // uniformInt stays in range and shuffle is a permutation
  TrainingRng q(7);
  std::vector<int64_t> v(100);
  std::iota(v.begin(), v.end(), 0);
  q.shuffle(v);
  std::vector<int64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 100; ++i) QCOMPARE(sorted[static_cast<size_t>(i)], int64_t{i});
  QVERIFY(v != sorted);
}

void TestTraining::trainingLearnsOnASubset() {
  const FashionMnist* fm = subset();
  QVERIFY2(fm, "Fashion-MNIST missing: install dataset-fashion-mnist");
  for (auto kind : {TrainingScalingKind::DelayedFlax, TrainingScalingKind::CurrentTE}) {
    TrainingRun run(smallConfig(kind, 16), fm->train, fm->test);
    run.run();
    const TrainingResult& r = run.result();
    QCOMPARE(r.steps_per_epoch, int64_t{8});
    QCOMPARE(r.steps_done, int64_t{24});
    QCOMPARE(r.loss.size(), size_t{24});
    QCOMPARE(r.epochs.size(), size_t{3});
    QVERIFY(!r.cancelled);
    QCOMPARE(QString::fromStdString(r.gemm_backend), QStringLiteral("cpu"));
    // Untrained 10-class softmax: loss ≈ ln 10 = 2.30; after 24 Adam steps it must have fallen
    // well below (the last 4 steps' mean under 70% of the first step's loss).
    const double first = r.loss.front();
    double last = 0;
    for (size_t i = 20; i < 24; ++i) last += r.loss[i] / 4.0;
    QVERIFY2(first > 1.5 && first < 4.0, qPrintable(QString::number(first)));
    QVERIFY2(last < 0.7 * first, qPrintable(QStringLiteral("loss %1 -> %2").arg(first).arg(last)));
    QVERIFY2(r.epochs.back().train_loss < r.epochs.front().train_loss, "epoch loss must fall");
    QVERIFY2(r.epochs.back().test_accuracy > 0.5, qPrintable(QString::number(r.epochs.back().test_accuracy)));
    QCOMPARE(r.operands.size(), size_t{9});
    QCOMPARE(QString::fromStdString(r.operands[2].name()), QStringLiteral("fc1/output_grad"));
    QCOMPARE(QString::fromStdString(r.operands[2].format), QStringLiteral("E5M2"));
    QCOMPARE(QString::fromStdString(r.operands[1].format), QStringLiteral("E4M3FN"));
    QCOMPARE(r.weights.size(), size_t{3});
    QCOMPARE(r.weights[0].kernel.size(), size_t{784 * 256});
  }
}

void TestTraining::trainingIsReproducible() {
  const FashionMnist* fm = subset();
  QVERIFY2(fm, "Fashion-MNIST missing: install dataset-fashion-mnist");
  auto cfg = smallConfig(TrainingScalingKind::DelayedTE, 4);
  cfg.epochs = 1;
  TrainingRun a(cfg, fm->train, fm->test), b(cfg, fm->train, fm->test);
  a.run();
  b.run();
  QCOMPARE(a.result().loss, b.result().loss); // bit for bit
  QCOMPARE(a.result().weights[2].kernel, b.result().weights[2].kernel);
  cfg.seed += 1;
  TrainingRun c(cfg, fm->train, fm->test);
  c.run();
  QVERIFY(c.result().loss != a.result().loss);
}

void TestTraining::flaxDelayedHistoryAndScaleFollowTheRules() {
  const FashionMnist* fm = subset();
  QVERIFY2(fm, "Fashion-MNIST missing: install dataset-fashion-mnist");
  const int L = 5;
  TrainingRun run(smallConfig(TrainingScalingKind::DelayedFlax, L), fm->train, fm->test);
  run.run();
  const TrainingResult& r = run.result();
  for (const OperandHistory& h : r.operands) {
    const float fp8_max = h.operand == "output_grad" ? 57344.0f : 448.0f; // E5M2 / E4M3FN max
    QCOMPARE(h.history_len, L);
    QCOMPARE(h.amax.size(), size_t(r.steps_done));
    QCOMPARE(h.history.size(), size_t(r.steps_done) * L);
    // Flax (update_fp8_meta, compute_scale): scale_t = 1 / (fp8_max / max(window of a_(t-L) … a_(t-1))), kept (as
    // 1/(1/scale_prev)) when that max is 0; initial stored scale 1.0, history zeros.
    float scale_prev = 1.0f;
    for (int64_t t = 0; t < r.steps_done; ++t) {
      const float a_hist = t == 0 ? 0.0f : maxOf(expectedWindow(h.amax, t - 1, L));
      float sf = fp8_max / a_hist;
      const bool keep = !(a_hist > 0) || !std::isfinite(a_hist);
      if (keep) sf = 1.0f / scale_prev;
      const float scale = 1.0f / sf;
      QVERIFY2(sameFloat(h.dequant_scale[size_t(t)], scale),
               qPrintable(QStringLiteral("%1 step %2: scale %3, expected %4")
                              .arg(QString::fromStdString(h.name()))
                              .arg(t)
                              .arg(double(h.dequant_scale[size_t(t)]), 0, 'g', 9)
                              .arg(double(scale), 0, 'g', 9)));
      // Flax divides by the stored dequant scale; the quant multiplier reported beside it is
      // that scale's float32 reciprocal (QuantizedTensor convention for x/s presets), which can
      // differ from sf by an ulp — Flax compute_scale's double reciprocal.
      QVERIFY(sameFloat(h.quant_scale[size_t(t)], 1.0f / scale));
      QCOMPARE(h.kept_previous[size_t(t)] != 0, keep);
      const auto w = expectedWindow(h.amax, t, L);
      const std::vector<float> got(h.history.begin() + t * L, h.history.begin() + (t + 1) * L);
      QVERIFY2(got == w,
               qPrintable(QStringLiteral("%1 window at step %2").arg(QString::fromStdString(h.name())).arg(t)));
      scale_prev = scale;
    }
    QVERIFY(h.kept_previous[0] == 1); // the first step always starts from the all-zero history
  }
  // Independent check of the recorded amax itself: every batch of 64 Fashion-MNIST images
  // contains a pixel of 255 (≈92% of images do), so the fc1 input amax is exactly 255/255 = 1.
  for (float a : r.find("fc1/input")->amax) QCOMPARE(a, 1.0f);
}

void TestTraining::teDelayedHistoryAndScaleFollowTheRules() {
  const FashionMnist* fm = subset();
  QVERIFY2(fm, "Fashion-MNIST missing: install dataset-fashion-mnist");
  struct Case {
    int L;
    int margin;
    bool most_recent;
  };
  for (const Case k : {Case{3, 1, false}, Case{1, 0, false}, Case{6, 2, true}}) {
    auto cfg = smallConfig(TrainingScalingKind::DelayedTE, k.L);
    cfg.scaling.margin = k.margin;
    cfg.scaling.most_recent = k.most_recent;
    cfg.epochs = 2;
    TrainingRun run(cfg, fm->train, fm->test);
    run.run();
    const TrainingResult& r = run.result();
    for (const OperandHistory& h : r.operands) {
      const float fp8_max = h.operand == "output_grad" ? 57344.0f : 448.0f;
      const float scaled_max = std::ldexp(fp8_max, -k.margin); // fp8_max · 2^-margin, exact
      // TE fused update (kernel_bulk): step t casts with the quant scale s_t (s_0 = 1.0); after it,
      // window = {a_(t-L+1) … a_t} (L values incl. the staged one) and, if the staged amax ≠ 0,
      // s_(t+1) = scaled_max / amax with amax = max(window) ("max") or a_t ("most_recent"),
      // keeping s_t for a zero / non-finite amax, FLT_MAX if the division overflows. The dequant
      // scale passed on is 1/s_t in float32.
      float s = 1.0f;
      for (int64_t t = 0; t < r.steps_done; ++t) {
        QVERIFY2(sameFloat(h.quant_scale[size_t(t)], s),
                 qPrintable(QStringLiteral("L=%1 %2 step %3: quant scale %4, expected %5")
                                .arg(k.L)
                                .arg(QString::fromStdString(h.name()))
                                .arg(t)
                                .arg(double(h.quant_scale[size_t(t)]), 0, 'g', 9)
                                .arg(double(s), 0, 'g', 9)));
        QVERIFY(sameFloat(h.dequant_scale[size_t(t)], 1.0f / s));
        const auto w = expectedWindow(h.amax, t, k.L);
        const std::vector<float> got(h.history.begin() + t * k.L, h.history.begin() + (t + 1) * k.L);
        QVERIFY2(got == w,
                 qPrintable(QStringLiteral("%1 window at step %2").arg(QString::fromStdString(h.name())).arg(t)));
        const float m = k.most_recent ? h.amax[size_t(t)] : maxOf(w);
        if (h.amax[size_t(t)] != 0 && std::isfinite(m) && m > 0) {
          s = scaled_max / m;
          if (std::isinf(s)) s = FLT_MAX;
        }
      }
    }
  }
}

void TestTraining::currentScalingFollowsTheRule() {
  const FashionMnist* fm = subset();
  QVERIFY2(fm, "Fashion-MNIST missing: install dataset-fashion-mnist");
  auto cfg = smallConfig(TrainingScalingKind::CurrentTE, 1);
  cfg.epochs = 1;
  TrainingRun run(cfg, fm->train, fm->test);
  run.run();
  for (const OperandHistory& h : run.result().operands) {
    const float fp8_max = h.operand == "output_grad" ? 57344.0f : 448.0f;
    QCOMPARE(h.history_len, 0);
    QVERIFY(h.history.empty());
    for (size_t t = 0; t < h.amax.size(); ++t) {
      // TE compute_scale_from_amax (recipe_common.cuh): fp8_max / amax in float32 (amax > 0 here).
      QVERIFY(h.amax[t] > 0);
      QVERIFY(sameFloat(h.quant_scale[t], fp8_max / h.amax[t]));
      QVERIFY(sameFloat(h.dequant_scale[t], 1.0f / (fp8_max / h.amax[t])));
      // Saturation: float32 multiplication is monotonic, so no element scales past
      // fl(amax · quant_scale), which is fp8_max or one float32 ulp above it (448.00003 for
      // E4M3FN). Either rounds to fp8_max — the overflow bound is max + ulp/2 (464 in E4M3FN,
      // just below 61440 in E5M2; OCP OFP8 v1.0 §3) — so current scaling clips nothing.
      QVERIFY(h.amax[t] * h.quant_scale[t] <= std::nextafter(fp8_max, 1e30f));
      QCOMPARE(h.saturated[t], int64_t{0});
    }
  }
}

void TestTraining::spikeSaturatesDelayedNotCurrent() {
  const FashionMnist* fm = subset();
  QVERIFY2(fm, "Fashion-MNIST missing: install dataset-fashion-mnist");
  const int64_t S = 10;
  const float factor = 64.0f;
  for (auto kind : {TrainingScalingKind::DelayedFlax, TrainingScalingKind::DelayedTE, TrainingScalingKind::CurrentTE}) {
    auto cfg = smallConfig(kind, 4);
    cfg.epochs = 2;
    cfg.spike = {true, S, factor, 0};
    TrainingRun run(cfg, fm->train, fm->test);
    run.run();
    const OperandHistory& in = *run.result().find("fc1/input");
    // The images' amax is 1 (see above); the spike multiplies the batch by 64 (exact in float32).
    for (int64_t t = 0; t < run.result().steps_done; ++t) QCOMPARE(in.amax[size_t(t)], t == S ? factor : 1.0f);
    if (isDelayed(kind)) {
      // The scale in use at S came from amaxes of 1 → dequant 1/448: every pixel above 1/64 of
      // full scale is clipped. At S+1 … S+L the window holds 64, so the scale is 64/448 (lag the
      // other way: the following normal batches use 1/64 of E4M3's range).
      QVERIFY2(in.saturated[size_t(S)] > 1000, qPrintable(QString::number(in.saturated[size_t(S)])));
      QCOMPARE(in.saturated[size_t(S - 1)], int64_t{0});
      QCOMPARE(in.saturated[size_t(S + 1)], int64_t{0});
      const float spike_scale = 1.0f / (448.0f / 64.0f);
      for (int64_t t = S + 1; t <= S + 4; ++t) QVERIFY(sameFloat(in.dequant_scale[size_t(t)], spike_scale));
      QVERIFY(!sameFloat(in.dequant_scale[size_t(S + 5)], spike_scale)); // rolled out after L = 4 steps
    } else {
      QCOMPARE(in.saturated[size_t(S)], int64_t{0});
      QVERIFY(sameFloat(in.quant_scale[size_t(S)], 448.0f / 64.0f));
    }
  }
}

void TestTraining::progressCancelKeepsAConsistentPartialResult() {
  const FashionMnist* fm = subset();
  QVERIFY2(fm, "Fashion-MNIST missing: install dataset-fashion-mnist");
  auto cfg = smallConfig(TrainingScalingKind::DelayedFlax, 4);
  TrainingRun run(cfg, fm->train, fm->test);
  int calls = 0;
  bool cancelled = false, bad_call = false;
  try {
    run.run([&](double f, const std::string& stage) {
      if (!(f >= 0 && f <= 1) || stage.empty()) bad_call = true;
      return ++calls < 11; // the 11th call says stop
    });
  } catch (const Cancelled&) {
    cancelled = true;
  }
  QVERIFY(cancelled);
  QVERIFY(!bad_call);
  const TrainingResult& r = run.result();
  QVERIFY(r.cancelled);
  // progress is called after each of steps 1..8, then once before the epoch-1 evaluation (call
  // 9), then after steps 9 and 10 (calls 10, 11): call 11 returns false → 10 steps done.
  QCOMPARE(r.steps_done, int64_t{10});
  QCOMPARE(r.loss.size(), size_t{10});
  QCOMPARE(r.epochs.size(), size_t{1});
  for (const auto& h : r.operands) {
    QCOMPARE(h.amax.size(), size_t{10});
    QCOMPARE(h.dequant_scale.size(), size_t{10});
    QCOMPARE(h.history.size(), size_t{40});
  }
  QCOMPARE(r.weights.size(), size_t{3});
}

void TestTraining::stopAfterAnEpochsLastStepEvaluatesIt() {
  // smallConfig: 8 steps per epoch. A stop asked after step 8 (the 8th progress call, the
  // epoch's last step) still evaluates epoch 1: 4 epochs → cancelled with 8 steps and epoch 1's
  // record; 1 epoch → every step and evaluation done, so the run completes (no Cancelled).
  const FashionMnist* fm = subset();
  QVERIFY2(fm, "Fashion-MNIST missing: install dataset-fashion-mnist");
  for (const int epochs : {4, 1}) {
    auto cfg = smallConfig(TrainingScalingKind::DelayedFlax, 4);
    cfg.epochs = epochs;
    TrainingRun run(cfg, fm->train, fm->test);
    int calls = 0;
    bool cancelled = false;
    try {
      run.run([&](double, const std::string&) { return ++calls < 8; });
    } catch (const Cancelled&) {
      cancelled = true;
    }
    const TrainingResult& r = run.result();
    QCOMPARE(cancelled, epochs == 4);
    QCOMPARE(r.cancelled, epochs == 4);
    QCOMPARE(r.steps_done, int64_t{8});
    QCOMPARE(r.epochs.size(), size_t{1});
    QCOMPARE(r.epochs[0].end_step, int64_t{8});
    QVERIFY(r.epochs[0].test_accuracy > 0 && r.epochs[0].test_accuracy <= 1);
  }
}

void TestTraining::badConfigIsRefused() {
  const FashionMnist* fm = subset();
  QVERIFY2(fm, "Fashion-MNIST missing: install dataset-fashion-mnist");
  TrainingConfig c;
  c.batch_size = 0;
  QVERIFY(!c.validate().empty());
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, TrainingRun(c, fm->train, fm->test));
  c = TrainingConfig{};
  c.layer_sizes = {100, 10};
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, TrainingRun(c, fm->train, fm->test));
  c = TrainingConfig{};
  c.scaling.history_len = 0;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, TrainingRun(c, fm->train, fm->test));
  c = TrainingConfig{};
  c.spike = {true, 3, 10.0f, 7};
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, TrainingRun(c, fm->train, fm->test));
}

void TestTraining::sessionRunHoldsTheRecords() {
  const FashionMnist* fm = subset();
  QVERIFY2(fm, "Fashion-MNIST missing: install dataset-fashion-mnist");
  auto cfg = smallConfig(TrainingScalingKind::DelayedFlax, 4);
  cfg.epochs = 1;
  TrainingRun tr(cfg, fm->train, fm->test);
  tr.run();
  const TrainingResult& r = tr.result();
  const std::string json = trainingConfigJson(cfg, "t1", 512, 256);
  QVERIFY(json.find("\"strategy\": \"delayed-flax\"") != std::string::npos);
  QVERIFY(json.find("\"learning_rate\": 0.001") != std::string::npos); // shortest float32 text
  const Run run = trainingRunToSession(r, "t1", json);
  QCOMPARE(run.type, std::string("training"));
  QCOMPARE(run.seed, cfg.seed);
  QCOMPARE(run.config_json, json);
  QCOMPARE(attrString(run.attrs, "status").value_or(""), std::string("completed"));
  // The run counts its own low-precision GEMMs: per step 3 fprop + 3 wgrad + 2 dgrad (fc1 has no
  // input gradient) over 8 steps, and the test-set evaluation's 3 fprop per batch of 128 of the
  // 256 test images: 8 · 8 + 2 · 3 = 70, all on the CPU reference backend.
  QCOMPARE(r.gemm_runs_cpu, int64_t{70});
  QCOMPARE(r.gemm_runs_gpu, int64_t{0});
  QCOMPARE(attrInt(run.attrs, "gemm_runs_cpu").value_or(-1), int64_t{70});
  QCOMPARE(run.find("training/loss")->f32, r.loss);
  QCOMPARE(run.find("training/loss")->shape, (std::vector<int64_t>{8}));
  const Dataset* hist = run.find("history/fc2/output_grad/amax_history");
  QVERIFY(hist);
  QCOMPARE(hist->shape, (std::vector<int64_t>{8, 4}));
  QCOMPARE(hist->f32, r.find("fc2/output_grad")->history);
  QCOMPARE(run.find("history/fc1/kernel/scale")->f32, r.find("fc1/kernel")->dequant_scale);
  QCOMPARE(run.find("history/fc3/input/saturated")->i64, r.find("fc3/input")->saturated);
  QCOMPARE(attrString(run.group_attrs.at("history/fc1/output_grad"), "format").value_or(""), std::string("E5M2"));
  // Every dataset the writer stored is a path of the session layout, with its units and type.
  fp8lab::testsupport::checkDatasetsAgainstLayout(run);
  if (QTest::currentTestFailed()) return;
  // every dataset says what it is
  for (const auto& [path, d] : run.datasets) {
    QVERIFY2(attrString(d.attrs, "units").has_value() && attrString(d.attrs, "meaning").has_value(), path.c_str());
    QVERIFY2(!attrString(d.attrs, "meaning")->empty(), path.c_str());
  }
  QCOMPARE(run.metrics.at("final_test_accuracy").value, r.epochs.back().test_accuracy);
  const auto w = trainedWeightsFromRun(run, "fc2");
  QVERIFY(w.ok());
  QCOMPARE(w.value.kernel, r.weights[1].kernel);
  QCOMPARE(w.value.in, int64_t{256});
  QVERIFY(!trainedWeightsFromRun(run, "fc9").ok());
}

void TestTraining::gemmOnTrainedWeightsSplitsTheError() {
  const FashionMnist* fm = subset();
  QVERIFY2(fm, "Fashion-MNIST missing: install dataset-fashion-mnist");
  auto cfg = smallConfig(TrainingScalingKind::CurrentTE, 1);
  cfg.epochs = 1;
  TrainingRun tr(cfg, fm->train, fm->test);
  tr.run();
  WeightGemmConfig wc;
  wc.layer = 1;
  wc.rows = 64;
  const Run run = weightGemmRun(tr.result().weights, fm->test, wc, "g", "{}");
  QCOMPARE(run.type, std::string("gemm-trained-weights"));
  QCOMPARE(run.find("inputs/A")->shape, (std::vector<int64_t>{64, 256}));
  QCOMPARE(run.find("inputs/B")->f32, tr.result().weights[1].kernel);
  QCOMPARE(run.find("output/D")->shape, (std::vector<int64_t>{64, 128}));
  // A = ReLU(x·W1 + b1) ≥ 0, computed independently here for the first image, first column.
  const auto& w1 = tr.result().weights[0];
  float a00 = 0;
  for (int64_t k = 0; k < 784; ++k) a00 += fm->test.pixels[size_t(k)] * w1.kernel[size_t(k * 256)];
  a00 = std::max(a00 + w1.bias[0], 0.0f);
  QCOMPARE(run.find("inputs/A")->f32[0], a00);
  // E4M3 per-tensor quantization of both operands: SQNR of a few tens of dB (E4M3 has 3
  // mantissa bits, ≈ 6 dB per bit → roughly 25–40 dB on real data), and the float32 split
  // accumulation adds far less error than the quantization.
  const double q = run.metrics.at("quant_sqnr_db").value, a = run.metrics.at("accum_sqnr_db").value;
  QVERIFY2(q > 20 && q < 50, qPrintable(QString::number(q)));
  QVERIFY2(a > q + 40, qPrintable(QString::number(a)));
}

QTEST_APPLESS_MAIN(TestTraining)
#include "test_training.moc"
