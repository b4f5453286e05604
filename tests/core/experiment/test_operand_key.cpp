// gemmOperandKey (experiment/gemm/operand_key.h): GEMM runs share a key exactly when they
// multiplied the same A and B — same shape, same origins, same operand-changing config keys —
// whatever their recipe; runs that are not GEMMs or do not say where their operands came from
// get none. Cases written from operand_key.h's contract.
#include "experiment/gemm/operand_key.h"

#include <QtTest>

using namespace fp8lab;

namespace {

GemmOperandFacts gemm(const char* config, const char* a_origin = "normal seed 1 stream 0",
                      const char* b_origin = "normal seed 1 stream 1") {
  GemmOperandFacts f;
  f.type = "gemm";
  f.config = Json::parse(config);
  f.a_origin = a_origin;
  f.b_origin = b_origin;
  f.m = "64";
  f.k = "128";
  f.n = "32";
  return f;
}

} // namespace

class TestOperandKey : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void sameOperandsSameKey() {
    // two recipes (scaling, formats, accumulation differ) on the same operands
    const std::string a = gemmOperandKey(gemm(R"({"scaling": "te_current", "format_a": "E4M3FN"})"));
    const std::string b =
        gemmOperandKey(gemm(R"({"scaling": "mx_rceil", "format_a": "E5M2", "accumulation": "fp22"})"));
    QVERIFY(!a.empty());
    QCOMPARE(a, b);
    // the key names the shape and both origins
    QCOMPARE(a,
             std::string(
                 R"({"a_origin":"normal seed 1 stream 0","b_origin":"normal seed 1 stream 1","shape":"64x128x32"})"));
  }

  void differentOperandsDifferentKeys() {
    const std::string base = gemmOperandKey(gemm("{}"));
    QVERIFY(gemmOperandKey(gemm(R"({"a": {"sigma": 2.0}})")) != base); // an operand option
    QVERIFY(gemmOperandKey(gemm(R"({"bias": true})")) != base);        // the epilogue
    QVERIFY(gemmOperandKey(gemm("{}", "normal seed 2 stream 0")) != base);
    GemmOperandFacts wider = gemm("{}");
    wider.n = "64";
    QVERIFY(gemmOperandKey(wider) != base);
  }

  void shapeFromStoredInputsThenConfig() {
    GemmOperandFacts f = gemm("{}");
    f.m = f.k = f.n = "";
    f.a_dims = {64, 128};
    f.b_dims = {128, 32};
    QCOMPARE(gemmOperandKey(f), gemmOperandKey(gemm("{}")));
    GemmOperandFacts g = gemm(R"({"m": 64, "k": 128, "n": 32})");
    g.m = g.k = g.n = "";
    QVERIFY(gemmOperandKey(g).find(R"("shape":"64x128x32")") != std::string::npos);
  }

  void seedOnlyWithoutOrigins() {
    // no origin attributes: the config's seed says where the operands came from
    GemmOperandFacts s1 = gemm(R"({"seed": 1})", "", "");
    GemmOperandFacts s2 = gemm(R"({"seed": 2})", "", "");
    QVERIFY(!gemmOperandKey(s1).empty());
    QVERIFY(gemmOperandKey(s1) != gemmOperandKey(s2));
    // with origins the seed is in them, and the config's is not read again
    QCOMPARE(gemmOperandKey(gemm(R"({"seed": 1})")), gemmOperandKey(gemm(R"({"seed": 2})")));
  }

  void noKey() {
    GemmOperandFacts t = gemm("{}");
    t.type = "training";
    QVERIFY(gemmOperandKey(t).empty());
    QVERIFY(gemmOperandKey(gemm("{}", "", "")).empty()); // origins, seed, tensor, import: none
    QVERIFY(!gemmOperandKey(gemm(R"({"a": {"tensor": "x.safetensors:w"}})", "", "")).empty());
    GemmOperandFacts weights = gemm("{}");
    weights.type = "gemm-trained-weights";
    QVERIFY(!gemmOperandKey(weights).empty());
  }
};

QTEST_GUILESS_MAIN(TestOperandKey)
#include "test_operand_key.moc"
