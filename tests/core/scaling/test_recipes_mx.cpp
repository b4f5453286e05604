// MX scale modes against the 2026 recipe vectors (FP8LAB_RECIPES_CSV, sections F, G and H_extra of
// RECIPES-2026.md): torchao's FLOOR / CEIL / EVEN / RCEIL (`mx_tensor.py::to_mx`) and Transformer
// Engine's MXFP8 (`MXFP8BlockScaling`: 1x32 rowwise, 32x1 columnwise, 32x32 weight tiles), for every
// element type. Element codes and biased E8M0 scale codes are compared exactly; a mismatch names
// the row's variant and case. Every F / G / H_extra row is either run or listed in
// kUnsupported with the reason. The hand-derived cases below write their arithmetic out in the
// comments (float32 bit patterns by hand).
#include <QtTest>

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/format.h"
#include "recipe_vectors.h"
#include "scaling/scale_rules.h"
#include "scaling/scaling.h"

using namespace fp8lab;
using fp8lab::test::RecipeVector;

namespace {
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

ScalingConfig preset(const char* name) {
  auto c = scalingPreset(name);
  if (!c) qFatal("unknown preset %s", name);
  return *c;
}

/// How one CSV variant is run: preset, element format, contraction axis, and whether the scale
/// codes are listed per row of a 2-D tile grid (the tile code repeated for each of its rows).
struct Mapping {
  std::string preset;
  const Format* format = nullptr;
  Axis axis = Axis::Cols;
  bool tile_rows_listed = false;
};

const Format* torchaoElement(const std::string& e) {
  if (e == "e4m3") return &Format::E4M3FN();
  if (e == "e5m2") return &Format::E5M2();
  if (e == "e2m3") return &Format::E2M3();
  if (e == "e3m2") return &Format::E3M2();
  if (e == "e2m1") return &Format::E2M1();
  return nullptr;
}

/// Variants with no preset here, and why (a row of such a variant is skipped by name).
struct Unsupported {
  const char* variant;
  const char* reason;
};
const Unsupported kUnsupported[] = {
    {"deepgemm_per_token_cast_to_fp4_ue8m0_gran32",
     "DeepGEMM per_token_cast_to_fp4 (ties toward zero, unsigned zero, amax floor 1e-4) has no preset yet"},
};

std::optional<std::string> unsupportedReason(const std::string& variant) {
  for (const auto& u : kUnsupported)
    if (variant == u.variant) return std::string(u.reason);
  return std::nullopt;
}

/// torchao_mx_<elem>_<MODE> (F), te_mxfp8_* (G); nullopt for anything else.
std::optional<Mapping> mappingOf(const std::string& v) {
  const std::string ao = "torchao_mx_";
  if (v.rfind(ao, 0) == 0) {
    const std::string rest = v.substr(ao.size()); // e.g. e2m1_FLOOR
    const auto us = rest.find('_');
    if (us == std::string::npos) return std::nullopt;
    const Format* f = torchaoElement(rest.substr(0, us));
    const std::string mode = rest.substr(us + 1);
    const char* p = mode == "FLOOR"   ? "mx_floor"
                    : mode == "CEIL"  ? "mx_ceil"
                    : mode == "EVEN"  ? "mx_even"
                    : mode == "RCEIL" ? "mx_rceil_torchao"
                                      : nullptr;
    if (!f || !p) return std::nullopt;
    return Mapping{p, f, Axis::Cols, false};
  }
  if (v == "te_mxfp8_1x32_e4m3" || v == "te_mxfp8_rowwise_1x32_e4m3")
    return Mapping{"mx_rceil", &Format::E4M3FN(), Axis::Cols, false};
  if (v == "te_mxfp8_1x32_e5m2") return Mapping{"mx_rceil", &Format::E5M2(), Axis::Cols, false};
  if (v == "te_mxfp8_columnwise_32x1_e4m3") return Mapping{"mx_rceil", &Format::E4M3FN(), Axis::Rows, false};
  if (v == "te_mxfp8_2d_32x32_e4m3_weights") return Mapping{"mx_rceil_2d", &Format::E4M3FN(), Axis::Cols, true};
  return std::nullopt;
}

/// The tensor shape: "shape RxC" in the notes, else "matrix_RxC" in the case name (the G matrix
/// rows share one case name; only the rowwise row's notes give the shape), else one row.
void shapeOf(const RecipeVector& r, int64_t* rows, int64_t* cols) {
  *rows = 1;
  *cols = static_cast<int64_t>(r.input.size());
  int R = 0, C = 0;
  const auto at = r.notes.find("shape ");
  const auto mat = r.name.find("matrix_");
  if ((at != std::string::npos && std::sscanf(r.notes.c_str() + at, "shape %dx%d", &R, &C) == 2) ||
      (mat != std::string::npos && std::sscanf(r.name.c_str() + mat, "matrix_%dx%d", &R, &C) == 2)) {
    *rows = R;
    *cols = C;
  }
}

std::string hex(uint32_t c) {
  char b[8];
  std::snprintf(b, sizeof b, "0x%02X", c);
  return b;
}
} // namespace

class TestRecipesMx : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void csvRows_data();
  void csvRows();
  void everyRowIsCovered();
  void evenCarryByHand();
  void evenEdgeRules();
  void evenE2M1ElementsByHand();
  void teMxfp8EdgesByHand();
  void rceilOnAnExactPowerOfTwo();
  void mx2dTileByHand();
  void mxint8QuantizeByHand();
  void mxint8EdgeBlocks();
  void mxint8Columnwise();
};

void TestRecipesMx::csvRows_data() {
  QTest::addColumn<int>("index");
  const auto rows = fp8lab::test::readRecipeVectors();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.recipe != "F" && r.recipe != "G" && r.recipe != "H_extra") continue;
    QTest::newRow((r.recipe + " " + r.variant + " " + r.name).c_str()) << int(i);
  }
}

void TestRecipesMx::csvRows() {
  QFETCH(int, index);
  const RecipeVector r = fp8lab::test::readRecipeVectors()[static_cast<std::size_t>(index)];
  const std::string where = r.variant + " / " + r.name;
  if (const auto why = unsupportedReason(r.variant)) QSKIP(qPrintable(QString::fromStdString(where + ": " + *why)));
  const auto m = mappingOf(r.variant);
  QVERIFY2(m.has_value(), qPrintable(QString::fromStdString(where + ": variant not mapped to a preset")));
  int64_t R = 0, C = 0;
  shapeOf(r, &R, &C);
  QVERIFY2(R * C == static_cast<int64_t>(r.input.size()), qPrintable(QString::fromStdString(where + ": shape")));
  QCOMPARE(r.element_codes.size(), r.input.size());

  const QuantizedTensor q = quantize(r.input.data(), R, C, *m->format, preset(m->preset.c_str()), m->axis);
  for (std::size_t i = 0; i < r.element_codes.size(); ++i)
    QVERIFY2(q.codes[i] == r.element_codes[i],
             qPrintable(QString::fromStdString(where + ": element " + std::to_string(i) +
                                               " (x = " + std::to_string(r.input[i]) + ") code " + hex(q.codes[i]) +
                                               ", expected " + hex(r.element_codes[i]))));

  // Scale codes as the CSV lists them: the scale grid row-major (rowwise [M, N/32], columnwise
  // [M/32, N]); for 2-D tiles the rowwise scale tensor [M, N/32] with each tile's code repeated
  // down its 32 rows.
  std::vector<uint32_t> got;
  if (m->tile_rows_listed) {
    const int64_t gc = q.blockCols();
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < gc; ++j)
        got.push_back(q.scale_codes[static_cast<std::size_t>((i / q.block.rows) * gc + j)]);
  } else {
    got.assign(q.scale_codes.begin(), q.scale_codes.end());
  }
  QVERIFY2(got.size() == r.scale_codes.size(),
           qPrintable(QString::fromStdString(where + ": " + std::to_string(got.size()) + " scale codes, expected " +
                                             std::to_string(r.scale_codes.size()))));
  for (std::size_t k = 0; k < got.size(); ++k)
    QVERIFY2(got[k] == r.scale_codes[k],
             qPrintable(QString::fromStdString(where + ": scale " + std::to_string(k) + " " + hex(got[k]) +
                                               ", expected " + hex(r.scale_codes[k]))));
}

// The CSV has F and G rows (and H_extra), each mapped or listed as unsupported.
void TestRecipesMx::everyRowIsCovered() {
  int f = 0, g = 0;
  for (const auto& r : fp8lab::test::readRecipeVectors()) {
    if (r.recipe == "F") ++f;
    if (r.recipe == "G") ++g;
    if (r.recipe != "F" && r.recipe != "G" && r.recipe != "H_extra") continue;
    QVERIFY2(mappingOf(r.variant) || unsupportedReason(r.variant),
             qPrintable(QString::fromStdString(r.variant + " is neither mapped nor listed as unsupported")));
  }
  QVERIFY(f > 0);
  QVERIFY(g > 0);
}

// EVEN = FLOOR after (bits + 2^(22 − mbits)) & 0xFF800000 (torchao to_mx):
//   E2M1 (mbits 1, emax 2) amax 7 = 0x40E00000 = 1.75·2^2; + 0x200000 = 0x41000000 = 8 = 2^3
//     → e = 3 − 2 = 1 → 127 + 1 = 128. FLOOR: 2 − 2 = 0 → 127.
//   E2M1 amax 5 = 0x40A00000 (1.25·2^2); + 0x200000 = 0x40C00000, masked 0x40800000 = 4 → 127.
//   E4M3 (mbits 3, emax 8) amax 496 = 0x43F80000 (1.9375·2^8); + 0x80000 = 0x44000000 = 2^9 → 128.
//   E4M3 amax 495 = 0x43F78000 (1.93359375·2^8); + 0x80000 = 0x43FF8000 → 2^8 → 127.
//   E5M2 (mbits 2, emax 15) amax 61440 = 0x47700000 (1.875·2^15); + 0x100000 = 0x47800000 = 2^16 → 128.
//   E5M2 amax 61439 (0x476FFF00, below 1.875·2^15) → 2^15 → 127.
//   E3M2 (mbits 2, emax 4) amax 30 = 0x41F00000 (1.875·2^4); + 0x100000 = 0x42000000 = 2^5 → 128.
//   E2M3 (mbits 3, emax 2) amax 7.75 = 0x40F80000 (1.9375·2^2); + 0x80000 = 0x41000000 = 2^3 → 128.
void TestRecipesMx::evenCarryByHand() {
  QCOMPARE(int(mxScaleEven(7.0f, 2, 1)), 128);
  QCOMPARE(int(mxScaleFloor(7.0f, 2)), 127);
  QCOMPARE(int(mxScaleEven(5.0f, 2, 1)), 127);
  QCOMPARE(int(mxScaleEven(496.0f, 8, 3)), 128);
  QCOMPARE(int(mxScaleEven(495.0f, 8, 3)), 127);
  QCOMPARE(int(mxScaleEven(61440.0f, 15, 2)), 128);
  QCOMPARE(int(mxScaleEven(61439.0f, 15, 2)), 127);
  QCOMPARE(int(mxScaleEven(30.0f, 4, 2)), 128);
  QCOMPARE(int(mxScaleEven(7.75f, 2, 3)), 128);
  // Through the preset: the rule reads emax and mbits from the element format.
  const std::vector<float> x(32, 7.0f);
  QCOMPARE(int(quantize(x.data(), 1, 32, Format::E2M1(), preset("mx_even")).scale_codes[0]), 128);
  const std::vector<float> y(32, 496.0f);
  QCOMPARE(int(quantize(y.data(), 1, 32, Format::E4M3FN(), preset("mx_even")).scale_codes[0]), 128);
}

// Zero: 0 + 2^21 masked is 0 → FLOOR reads −127 → clamp → 0x00. NaN → 0xFF (torchao restores
// it). inf → 0xFF. FLT_MAX = 0x7F7FFFFF with E2M1: + 0x200000 = 0x7F9FFFFF, masked 0x7F800000
// = inf → 0xFF, where FLOOR gives 127 − 2 = 125 → 252. A NaN element makes the block 0xFF
// (torch.amax propagates NaN) and its elements NaN (E4M3FN 0x7F).
void TestRecipesMx::evenEdgeRules() {
  QCOMPARE(int(mxScaleEven(0.0f, 8, 3)), 0x00);
  QCOMPARE(int(mxScaleEven(kNaN, 8, 3)), 0xFF);
  QCOMPARE(int(mxScaleEven(kInf, 8, 3)), 0xFF);
  const float fmax = std::numeric_limits<float>::max();
  QCOMPARE(int(mxScaleEven(fmax, 2, 1)), 0xFF);
  QCOMPARE(int(mxScaleFloor(fmax, 2)), 252);
  std::vector<float> x(32, 1.0f);
  x[5] = kNaN;
  const QuantizedTensor q = quantize(x.data(), 1, 32, Format::E4M3FN(), preset("mx_even"));
  QCOMPARE(int(q.scale_codes[0]), 0xFF);
  for (uint8_t c : q.codes) QCOMPARE(int(c), 0x7F);
  QVERIFY(ruleAmaxPropagatesNaN(ScaleRule::MxEven));
  QVERIFY(isMxRule(ScaleRule::MxEven));
}

// E2M1 block [7, −3.5, 1.75, 0.5, 0 ...] with EVEN: scale 2^1 (above), elements x/2:
//   3.5 ties 3 (0b0101) / 4 (0b0110) → RNE even mantissa → 4 = 0x6;
//   −1.75 ties 1.5 (0b0011) / 2 (0b0100) → 2, sign → 0xC;
//   0.875 lies above the midpoint 0.75 of 0.5 / 1 → 1 = 0x2; 0.25 ties 0 / 0.5 (odd) → 0 = 0x0.
// FLOOR: scale 2^0: 7 → saturates to 6 = 0x7; −3.5 → −4 = 0xE; 1.75 → 2 = 0x4; 0.5 = 0x1.
void TestRecipesMx::evenE2M1ElementsByHand() {
  std::vector<float> x(32, 0.0f);
  x[0] = 7.0f;
  x[1] = -3.5f;
  x[2] = 1.75f;
  x[3] = 0.5f;
  const QuantizedTensor e = quantize(x.data(), 1, 32, Format::E2M1(), preset("mx_even"));
  QCOMPARE(int(e.scale_codes[0]), 128);
  QCOMPARE(int(e.codes[0]), 0x6);
  QCOMPARE(int(e.codes[1]), 0xC);
  QCOMPARE(int(e.codes[2]), 0x2);
  QCOMPARE(int(e.codes[3]), 0x0);
  const QuantizedTensor f = quantize(x.data(), 1, 32, Format::E2M1(), preset("mx_floor"));
  QCOMPARE(int(f.scale_codes[0]), 127);
  QCOMPARE(int(f.codes[0]), 0x7);
  QCOMPARE(int(f.codes[1]), 0xE);
  QCOMPARE(int(f.codes[2]), 0x4);
  QCOMPARE(int(f.codes[3]), 0x1);
}

// TE MXFP8 (cast/mxfp8/quantize_mxfp8.cuh): e = cvt.rp.satfinite.ue8m0(amax · fl(1/448)).
//   amax +inf → 0xFE (satfinite); quant 2^(127−254) = 2^-127: inf · 2^-127 = inf → E4M3 satfinite
//     448 = 0x7E; 1 · 2^-127 → 0x00.
//   NaN ignored (fmaxf): block [1, NaN, 2, 0...]: amax 2, 2 · fl(1/448) = 0x3B924925 (1.14·2^-8)
//     → rounds up to 2^-7 → 120; elements ·2^7: 1 → 128 = 1.0·2^7 → 0 1110 000 = 0x70,
//     2 → 256 = 0x78; the NaN element → 0x7F.
//   Subnormal descale: amax 2^-120 · fl(1/448) = 1.142857·2^-129, an fp32 subnormal with mantissa
//     field 0x124925 (the significand 0x924925 shifted right by 3, rounded up); ≤ 0x400000 means
//     ≤ 2^-127, which stays 0x00.
//   torchao RCEIL of the same inf block: 0xFF (no saturation).
void TestRecipesMx::teMxfp8EdgesByHand() {
  std::vector<float> x(32, 1.0f);
  x[0] = kInf;
  const QuantizedTensor t = quantize(x.data(), 1, 32, Format::E4M3FN(), preset("mx_rceil"));
  QCOMPARE(int(t.scale_codes[0]), 0xFE);
  QCOMPARE(int(t.codes[0]), 0x7E);
  QCOMPARE(int(t.codes[1]), 0x00);
  QCOMPARE(int(quantize(x.data(), 1, 32, Format::E4M3FN(), preset("mx_rceil_torchao")).scale_codes[0]), 0xFF);

  std::vector<float> y(32, 0.0f);
  y[0] = 1.0f;
  y[1] = kNaN;
  y[2] = 2.0f;
  const QuantizedTensor n = quantize(y.data(), 1, 32, Format::E4M3FN(), preset("mx_rceil"));
  QCOMPARE(int(n.scale_codes[0]), 120);
  QCOMPARE(int(n.codes[0]), 0x70);
  QCOMPARE(int(n.codes[1]), 0x7F);
  QCOMPARE(int(n.codes[2]), 0x78);

  QCOMPARE(int(mxScaleRceil(std::ldexp(1.0f, -120), 448.0f)), 0x00);
}

// RCEIL when amax is the element maximum times 2^k: the scale must be exactly 2^k (the largest
// element encodes max), and one float32 ulp above it 2^(k+1).
//   torchao ScaleCalculationMode.RCEIL (torchao/prototype/mx_formats/mx_tensor.py _to_mx_rceil):
//     descale = max_abs / max_pos (a float32 division: exactly 2^k here), exponent =
//     clamp(ceil(log2(descale)), −127, 127) + 127 → 127 + k; with max_abs one ulp above,
//     descale = (1 + 2^-23)·2^k, ceil(log2) = k + 1 → 128 + k. Elements: x · 2^(127 − code).
//   TE / cuBLAS RCEIL (mx_rceil) round amax · fl(1/max) up to a power of two; by hand:
//     448 = 7·2^6 and 57344 = 7·2^13: fl(1/7) = 9586981·2^-26 (2^26/7 = 9586980.57, rounded up),
//       so max · fl(1/max) = 7·9586981·2^-26 = (2^26 + 3)·2^-26 = 1 + 0.375 ulp → 1 exactly.
//     6 = 3·2: fl(1/3) = 11184811·2^-25 (2^25/3 = 11184810.67), 6·fl(1/6) = 3·11184811·2^-25
//       = (2^25 + 1)·2^-25 = 1 + 0.25 ulp → 1 exactly.
//     One ulp above: (1 + 2^-23)(1 + 0.375·2^-23) = 1 + 1.375·2^-23 + … → 1 + 2^-23 (E2M1:
//       1 + 1.25·2^-23 → 1 + 2^-23), a set mantissa bit → rounded up to 2^(k+1). ×2^k is exact.
//   The largest element x = max·2^k becomes max: E4M3FN 448 = 0 1111 110 = 0x7E, E5M2 57344 =
//   0 11110 11 = 0x7B, E2M1 6 = 0 11 1 = 0x7. One ulp above, it is halved to max/2 · (1 + 2^-23),
//   which rounds to max/2: E4M3FN 224 = 1.75·2^7 = 0 1110 110 = 0x76, E5M2 28672 = 1.75·2^14 =
//   0 11101 11 = 0x77, E2M1 3 = 1.5·2^1 = 0 10 1 = 0x5. The other elements (1·2^k → 1 or 1/2) are
//   not checked here.
void TestRecipesMx::rceilOnAnExactPowerOfTwo() {
  struct Case {
    const Format* f;
    float max;
    int code_at_max, code_at_half;
  };
  const Case cases[] = {{&Format::E4M3FN(), 448.0f, 0x7E, 0x76},
                        {&Format::E5M2(), 57344.0f, 0x7B, 0x77},
                        {&Format::E2M1(), 6.0f, 0x7, 0x5}};
  for (const Case& c : cases)
    for (int k : {0, 3, -5}) {
      const QString where = QStringLiteral("%1, k = %2").arg(QString::fromStdString(c.f->name())).arg(k);
      const float amax = std::ldexp(c.max, k);
      const float above = std::nextafter(amax, kInf);
      QCOMPARE(above, std::ldexp(c.max * (1.0f + 0x1p-23f), k));
      QVERIFY2(int(mxScaleRceilNoSat(amax, c.max)) == 127 + k, qPrintable(where));
      QVERIFY2(int(mxScaleRceil(amax, c.max)) == 127 + k, qPrintable(where));
      QVERIFY2(int(mxScaleRceilNoSat(above, c.max)) == 128 + k, qPrintable(where));
      QVERIFY2(int(mxScaleRceil(above, c.max)) == 128 + k, qPrintable(where));
      for (const char* name : {"mx_rceil_torchao", "mx_rceil"}) {
        for (const bool up : {false, true}) {
          std::vector<float> x(32, std::ldexp(1.0f, k));
          x[5] = up ? above : amax;
          const QuantizedTensor q = quantize(x.data(), 1, 32, *c.f, preset(name));
          const QString at =
              where + QStringLiteral(", %1%2").arg(QLatin1String(name), up ? QStringLiteral(", ulp above") : QString());
          QVERIFY2(int(q.scale_codes[0]) == (up ? 128 : 127) + k, qPrintable(at));
          QVERIFY2(q.dequant_scales[0] == std::ldexp(1.0f, up ? k + 1 : k), qPrintable(at));
          QVERIFY2(int(q.codes[5]) == (up ? c.code_at_half : c.code_at_max), qPrintable(at));
        }
      }
    }
}

// mx_rceil_2d on a 64x64 tensor: four 32x32 tiles, one scale each, the same for either axis.
// Tile (0,0) holds 448 → 448 · fl(1/448) = 1 exactly (see the CSV's amax_448 row) → 127;
// tile (0,1) holds 1 → 1 · fl(1/448) = 0x3B124925 → 2^-8 → 119; tiles (1,0) and (1,1) are zero
// → 0x00.
void TestRecipesMx::mx2dTileByHand() {
  std::vector<float> x(64 * 64, 0.0f);
  x[31 * 64 + 31] = 448.0f;
  x[0 * 64 + 40] = 1.0f;
  for (Axis a : {Axis::Cols, Axis::Rows}) {
    const QuantizedTensor q = quantize(x.data(), 64, 64, Format::E4M3FN(), preset("mx_rceil_2d"), a);
    QCOMPARE(q.block, (ScaleBlock{32, 32}));
    QCOMPARE(q.scale_codes, (std::vector<uint8_t>{127, 119, 0, 0}));
    QCOMPARE(int(q.codes[31 * 64 + 31]), 0x7E);
    QCOMPARE(int(q.codes[40]), 0x78); // quant 2^(127−119) = 2^8: 1 → 256 = 1.0·2^8 → 0 1111 000
  }
}

// MXINT8 (OCP MX v1.0 FLOOR, emax_elem 0): e = floor(log2 amax) + 127; elements round(x·2^-e·64).
//   Block [1, 0.5, −0.25, 0 ...]: amax 1 → e 127, quant 1: 64 = 0x40, 32 = 0x20, −16 = 0xF0.
//   Block [3, 1.015625, −3, 0 ...]: amax 3 = 1.5·2^1 → 128, quant 0.5: 1.5 → 96 = 0x60;
//     0.5078125 → 32.5 ties → 32 = 0x20; −1.5 → −96 = 0xA0.
//   Block [1.995, ...]: amax 1.995 → e 127; 1.995·64 = 127.68 → 128 → saturates to 127 (counted);
//     1.99 · 64 = 127.36 → 127 (not saturated).
void TestRecipesMx::mxint8QuantizeByHand() {
  std::vector<float> x(96, 0.0f);
  x[0] = 1.0f;
  x[1] = 0.5f;
  x[2] = -0.25f;
  x[32] = 3.0f;
  x[33] = 1.015625f;
  x[34] = -3.0f;
  x[64] = 1.995f;
  x[65] = 1.99f;
  const MxInt8Tensor q = quantizeMxInt8(x.data(), 1, 96);
  QCOMPARE(q.block, (ScaleBlock{1, 32}));
  QCOMPARE(q.scale_codes, (std::vector<uint8_t>{127, 128, 127}));
  QCOMPARE(int(q.codes[0]), 0x40);
  QCOMPARE(int(q.codes[1]), 0x20);
  QCOMPARE(int(q.codes[2]), 0xF0);
  QCOMPARE(int(q.codes[32]), 0x60);
  QCOMPARE(int(q.codes[33]), 0x20);
  QCOMPARE(int(q.codes[34]), 0xA0);
  QCOMPARE(int(q.codes[64]), 0x7F);
  QCOMPARE(int(q.codes[65]), 0x7F);
  QCOMPARE(q.stats.saturated, int64_t(1));
  QCOMPARE(q.stats.zero_inputs, int64_t(96 - 8));
  const std::vector<float> d = q.dequantize();
  QCOMPARE(d[32], 3.0f); // 96/64 · 2
  QCOMPARE(d[33], 1.0f); // 32/64 · 2
  QCOMPARE(d[64], 1.984375f);
}

// FLOOR with NaN propagation (torch.amax): a NaN or inf in a block → scale 0xFF → NaN on
// dequantization; an all-zero block → 0x00, codes 0.
void TestRecipesMx::mxint8EdgeBlocks() {
  std::vector<float> x(96, 1.0f);
  x[3] = kNaN;
  x[40] = -kInf;
  for (int i = 64; i < 96; ++i) x[static_cast<size_t>(i)] = 0.0f;
  const MxInt8Tensor q = quantizeMxInt8(x.data(), 1, 96);
  QCOMPARE(q.scale_codes, (std::vector<uint8_t>{0xFF, 0xFF, 0x00}));
  const std::vector<float> d = q.dequantize();
  QVERIFY(std::isnan(d[0]));
  QVERIFY(std::isnan(d[63]));
  QCOMPARE(d[64], 0.0f);
  QCOMPARE(int(q.codes[64]), 0x00);
  QCOMPARE(q.stats.nan_inputs, int64_t(1));
  QCOMPARE(q.stats.inf_inputs, int64_t(1));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, quantizeMxInt8(x.data(), 1, 96, Axis::Cols, 0));
}

// Axis::Rows: 32×1 blocks down each column of a [64, 2] tensor. Column 0 of block row 0 holds
// 4.0 at row 3 (others 1.0) → amax 4 → e 129, quant 2^-2: 4 → 1.0 → 64 = 0x40, 1 → 0.25 → 16 =
// 0x10. Column 1 is 0.25 everywhere → e 125, quant 4: → 64 = 0x40. Block row 1: column 0 zeros
// → 0x00; column 1 0.25 → 125.
void TestRecipesMx::mxint8Columnwise() {
  std::vector<float> x(128);
  for (int i = 0; i < 64; ++i) {
    x[static_cast<size_t>(i * 2)] = i < 32 ? 1.0f : 0.0f;
    x[static_cast<size_t>(i * 2 + 1)] = 0.25f;
  }
  x[3 * 2] = 4.0f;
  const MxInt8Tensor q = quantizeMxInt8(x.data(), 64, 2, Axis::Rows);
  QCOMPARE(q.block, (ScaleBlock{32, 1}));
  QCOMPARE(q.scale_codes, (std::vector<uint8_t>{129, 125, 0, 125}));
  QCOMPARE(int(q.codes[3 * 2]), 0x40);
  QCOMPARE(int(q.codes[0]), 0x10);
  QCOMPARE(int(q.codes[1]), 0x40);
  QCOMPARE(int(q.codes[40 * 2]), 0x00);
  QCOMPARE(int(q.codes[40 * 2 + 1]), 0x40);
}

QTEST_APPLESS_MAIN(TestRecipesMx)
#include "test_recipes_mx.moc"
