// Stochastic rounding of the operands of a GEMM run: the config keys, the seeding contract (element
// i of A draws Format::counterRandom(2·seed, i), of B counterRandom(2·seed + 1, i)), what never
// moves (values on the element grid), and reruns bit for bit. Expected codes come from the
// encoder's documented rule applied by hand in the test (EncodeOptions: the discarded significand
// truncated to r bits plus an r-bit random integer, rounding up on a carry).
#include <QtTest>

#include "experiment/gemm/gemm_config.h"
#include "experiment/gemm/gemm_run.h"
#include "gemm/gemm.h"

using namespace fp8lab;

namespace {
std::string parse(const std::string& json, GemmExperimentConfig* c) {
  return parseGemmConfig(Json::parse(json), c);
}
Result<Run> runConfig(const GemmExperimentConfig& c) {
  auto be = makeCpuGemmBackend();
  return runGemmExperimentRun(c, gemmConfigJson(c).dump(), "r", *be);
}
} // namespace

class TestGemmRounding : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void configKeys() {
    GemmExperimentConfig c;
    QCOMPARE(parse(R"({"type":"gemm","rounding":"stochastic","stochastic_bits":8})", &c), std::string());
    QVERIFY(c.stochastic_rounding);
    QCOMPARE(c.stochastic_bits, 8);
    const Json j = gemmConfigJson(c);
    QCOMPARE(j["rounding"].get<std::string>(), std::string("stochastic"));
    QCOMPARE(j["stochastic_bits"].get<int>(), 8);
    // RNE, the default, writes neither key, so configs written before the keys existed stay as they were.
    GemmExperimentConfig d;
    QCOMPARE(parse(R"({"type":"gemm"})", &d), std::string());
    QVERIFY(!d.stochastic_rounding);
    QVERIFY(!gemmConfigJson(d).contains("rounding"));
    for (const auto& [text, needle] :
         {std::pair{R"({"type":"gemm","rounding":"up"})", "not an element rounding"},
          {R"({"type":"gemm","stochastic_bits":8})", "applies to \"rounding\": \"stochastic\" only"},
          {R"({"type":"gemm","rounding":"stochastic","stochastic_bits":33})", "stochastic_bits"},
          {R"({"type":"gemm","k":64,"scaling":"nvfp4_te","rounding":"stochastic"})", "nvfp4_te_sr"}}) {
      GemmExperimentConfig e;
      const std::string err = parse(text, &e);
      QVERIFY2(err.find(needle) != std::string::npos, (std::string(text) + " -> " + err).c_str());
    }
  }

  /// The codes of A under te_current with stochastic rounding are the encoder's stochastic codes of
  /// x · s with element i's word counterRandom(2·seed, i), and the run differs from RNE somewhere
  /// while every code is one of the two RNE-neighbouring codes of its value.
  void operandsFollowTheSeedingContract() {
    GemmExperimentConfig c;
    QCOMPARE(parse(R"({"type":"gemm","m":8,"k":32,"n":4,"seed":5,"scaling":"te_current","rounding":"stochastic",
                       "stochastic_bits":12})",
                   &c),
             std::string());
    const Result<Run> r = runConfig(c);
    QVERIFY2(r.ok(), r.message().c_str());
    const Dataset* codes = r.value.find("quantized/A_codes");
    const Dataset* in = r.value.find("inputs/A");
    const Dataset* sc = r.value.find("quantized/A_quant_scales");
    QVERIFY(codes && in && sc);
    const Format& f = Format::E4M3FN();
    const float s = sc->f32[0];
    int differs = 0;
    for (size_t i = 0; i < codes->u8.size(); ++i) {
      const float x = static_cast<float>(in->f32.empty() ? in->f64[i] : in->f32[i]) * s;
      EncodeOptions o;
      o.rounding = Rounding::Stochastic;
      o.stochastic_bits = 12;
      o.random_word = Format::counterRandom(10, i);
      QCOMPARE(uint32_t(codes->u8[i]), f.encode(x, o));
      EncodeOptions down = o, rne = o;
      down.rounding = Rounding::TowardZero;
      rne.rounding = Rounding::NearestEven;
      const uint32_t rtz = f.encode(x, down);
      QVERIFY(codes->u8[i] == rtz || std::fabs(f.decode(codes->u8[i])) > std::fabs(f.decode(rtz)));
      differs += codes->u8[i] != f.encode(x, rne);
    }
    QVERIFY(differs > 0);
    QVERIFY(r.value.attrs.count("rounding"));
  }

  /// Values on the E4M3 grid never move: their discarded significand is zero, so no random word
  /// makes it carry (every finite positive code, words from 0 to all ones).
  void gridValuesNeverMove() {
    const Format& f = Format::E4M3FN();
    for (uint32_t code = 0; code < 0x7F; ++code) {
      const double v = f.decode(code);
      for (uint32_t w : {0u, 1u, 0x7FFu, 0xFFFu, 0xFFFFFFFFu}) {
        EncodeOptions o;
        o.rounding = Rounding::Stochastic;
        o.stochastic_bits = 12;
        o.random_word = w;
        QCOMPARE(f.encode(v, o), code);
      }
    }
  }

  void rerunIsBitForBit() {
    GemmExperimentConfig c;
    QCOMPARE(parse(R"({"type":"gemm","m":16,"k":64,"n":8,"seed":2,"scaling":"mx_rceil","rounding":"stochastic"})", &c),
             std::string());
    const Result<Run> a = runConfig(c), b = runConfig(c);
    QVERIFY(a.ok() && b.ok());
    QVERIFY2(compareRuns(a.value, b.value).empty(), "two runs of one config differ");
    GemmExperimentConfig rne = c;
    rne.stochastic_rounding = false;
    const Result<Run> n = runConfig(rne);
    QVERIFY(n.ok());
    QVERIFY(n.value.find("quantized/A_codes")->u8 != a.value.find("quantized/A_codes")->u8);
  }
};

QTEST_APPLESS_MAIN(TestGemmRounding)
#include "test_gemm_rounding.moc"
