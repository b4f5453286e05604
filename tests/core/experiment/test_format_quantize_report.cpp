// Tests for core/experiment/format_report and quantize_report: the reports of `fp8lab-cli
// encode / decode / table / quantize` built in core. Codes and values are derived by hand from
// OCP OFP8 v1.0 (E4M3FN: bias 7, 3 mantissa bits, max 448 = 0 1111 110) and OCP MX v1.0 (E2M1);
// the TE current-scaling rule is scale = fp8_max / amax (Transformer Engine).
#include <QtTest>

#include "experiment/format_report.h"
#include "experiment/quantize_report.h"
#include "formats/format_table.h"

using namespace fp8lab;

class TestFormatQuantizeReport : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void codes() {
    const Format& f = Format::E4M3FN();
    // 448 = 1.75 · 2^8: exponent field 8 + 7 = 15, mantissa .75 = 110; the largest finite code
    // (CodeClass::MaxFinite, "max"). 0x3c = 0 0111 100 = 1.5 · 2^0.
    QCOMPARE(codeLine(f, 0x7e), std::string("0x7e [0 1111 110] = 448 (max)\n"));
    QCOMPARE(codeLine(f, 0x3c), std::string("0x3c [0 0111 100] = 1.5 (normal)\n"));
    const Json j = Json::parse(codesJsonText(f, {0x7f})).at(0); // S.1111.111 is E4M3FN's NaN
    QCOMPARE(j.at("value").get<std::string>(), std::string("nan"));
    QCOMPARE(j.at("class").get<std::string>(), std::string("nan"));
    // E2M1 (bias 1): 0x1 = 0.5 (subnormal 2^0 · 0.5), 0x2 = 1.0, 0x7 = 1.5 · 2^2 = 6.
    const std::string csv = codeTableCsv(Format::E2M1());
    QVERIFY(csv.starts_with("code,binary,value,class\n0x0,0 00 0,0,zero\n0x1,0 00 1,0.5,subnormal\n"
                            "0x2,0 01 0,1,normal\n"));
    QVERIFY(csv.ends_with("0xf,1 11 1,-6,max\n")); // 1 11 1 = −6, the largest magnitude
    QCOMPARE(Json::parse(codeTableJsonText(Format::E2M1())).size(), size_t(16));
    // The streamed table text: E2M1's first two codes and its last (−6) as hand-derived above;
    // E4M3FN's 0x80 is −0 (written -0.0) and 0xff its negative NaN ("nan").
    const std::string t = codeTableJsonText(Format::E2M1());
    QVERIFY2(t.starts_with(R"([{"binary":"0 00 0","class":"zero","code":"0x0","value":0},)"
                           R"({"binary":"0 00 1","class":"subnormal","code":"0x1","value":0.5},)"),
             t.c_str());
    QVERIFY2(t.ends_with(R"({"binary":"1 11 1","class":"max","code":"0xf","value":-6}])"
                         "\n"),
             t.c_str());
    const Json e4 = Json::parse(codeTableJsonText(f));
    QCOMPARE(e4.size(), size_t(256));
    QCOMPARE(e4[0x7e].at("value").get<double>(), 448.0);
    QCOMPARE(e4[0x80].at("class").get<std::string>(), std::string("zero"));
    QVERIFY(std::signbit(e4[0x80].at("value").get<double>()));
    QCOMPARE(e4[0xff].at("value").get<std::string>(), std::string("nan"));
    // E8M0 0xb6: exponent 182 − bias 127 = 2^55 = 36028797018963968, printed as that integer
    // (not 36028797018963970, a shortest-digits text padded with zeros that reads back as the same
    // double but as a different integer).
    QCOMPARE(codesJsonText(Format::E8M0FNU(), {0xb6}),
             std::string(R"([{"binary":"10110110","class":"normal","code":"0xb6","value":36028797018963968}])"
                         "\n"));
    QCOMPARE(*parseSpecialsPolicy("mldtypes"), SpecialsPolicy::MlDtypes);
    QVERIFY(!parseSpecialsPolicy("ML_DTYPES")); // lower case only: the caller lowers
  }
  void formatTableColumns() {
    // Every line as long as the header, and each right-aligned value ends where its header does:
    // BF16's max 3.3895313892515355e+38 (22 characters, (2 − 2^−7) · 2^127) and E8M0FNU's
    // 2^127 = 1.7014118346046923e+38 end under "max".
    const std::string t = formatTableText();
    std::vector<std::string> lines;
    for (size_t a = 0, b; (b = t.find('\n', a)) != std::string::npos; a = b + 1) lines.push_back(t.substr(a, b - a));
    QCOMPARE(lines.size(), Format::all().size() + 1);
    const size_t max_end = lines[0].find("max") + 3;
    for (const auto& l : lines) QCOMPARE(l.size(), lines[0].size());
    for (const auto& [name, max] : {std::pair{"BF16 ", "3.3895313892515355e+38"},
                                    std::pair{"E8M0FNU ", "1.7014118346046923e+38"}, std::pair{"E4M3FN ", "448"}})
      for (const auto& l : lines)
        if (l.starts_with(name)) QCOMPARE(l.find(max) + std::string(max).size(), max_end);
  }
  void encodeTie() {
    // 1.0625 lies halfway between 1 (0x38 = 0 0111 000) and 1.125 (0x39): RNE picks the even
    // mantissa 000. Error 0.0625, relative 0.0625 / 1.0625 = 1/17.
    const Format& f = Format::E4M3FN();
    EncodeOptions o;
    const std::vector<std::string_view> in{"1.0625"};
    QCOMPARE(encodeReport(f, o, 0, in, {1.0625}, false),
             std::string("format E4M3FN, rounding rne, saturating, CUDA specials\n"
                         "1.0625       -> 0x38  [0 0111 000]  = 1  (normal)\n"
                         "    neighbours 1 (0x38) .. 1.125 (0x39), midpoint 1.0625 (tie); error 0.0625 "
                         "(rel 0.058823529411764705)\n"));
    QCOMPARE(encodeReport(f, o, 0, in, {1.0625}, true),
             std::string(R"([{"input":"1.0625","code":"0x38","binary":"0 0111 000","value":1,"class":"normal",)"
                         R"("exact":false,"lower":{"code":"0x38","value":1},"upper":{"code":"0x39","value":1.125},)"
                         R"("midpoint":1.0625,"tie":true,"abs_error":0.0625,"rel_error":0.058823529411764705,)"
                         R"("overflow":false,"saturated":false,"underflow":false}])"
                         "\n"));
  }
  void choices() {
    QCOMPARE(quantizeFormat("nvfp4_te", "").format, &Format::E2M1());
    const QuantizeFormatChoice e4m3 = quantizeFormat("nvfp4_te", "E4M3");
    QCOMPARE(e4m3.format, &Format::E4M3()); // resolved, then refused
    QCOMPARE(e4m3.error, std::string("'nvfp4_te' is NVFP4, whose elements are E2M1; --format E4M3 does not apply "
                                     "(leave it out or give E2M1)"));
    QCOMPARE(quantizeFormat("te_current", "BF16").error,
             std::string("BF16 has 16 bits; quantize needs a format of at most 8 bits"));
    int64_t r = 0, c = 0;
    QVERIFY(parseShapeText(" 2 X 64 ", &r, &c) && r == 2 && c == 64);
    QVERIFY(parseShapeText("3*4", &r, &c) && r == 3 && c == 4);
    QVERIFY(!parseShapeText("2x", &r, &c));
    QVERIFY(!parseShapeText("-2x2", &r, &c));
    QVERIFY(!parseShapeText("99999999999999999999x1", &r, &c)); // beyond int64
    QCOMPARE(*parseAxisName("row"), Axis::Rows);
    QCOMPARE(*parseAxisName("columns"), Axis::Cols);
    QVERIFY(!parseAxisName("diag"));
  }
  void quantizeReport() {
    // te_current on [448, 0, -224]: amax 448, scale = 448 / 448 = 1, so the codes are the values':
    // 448 = 0x7e, 0 = 0x00, -224 = -1.75 · 2^7 = 1 1110 110 = 0xf6.
    const QuantizeFlags none{[](const char*) { return false; }, [](const char*) { return std::string(); }};
    std::string error;
    const std::vector<double> v{448, 0, -224};
    const auto r = quantizeWithPreset("te_current", Format::E4M3FN(), v, 1, 3, Axis::Cols, EncodeOptions{}, 0, false,
                                      none, &error);
    QVERIFY2(r, error.c_str());
    const std::string t = quantizeReportText(Format::E4M3FN(), *r, v, false);
    QVERIFY(t.find("shape 1x3, scale block 1x3, scale grid 1x1, x_q = cast(x * quant_scale)\n") != std::string::npos);
    QVERIFY(t.find("  [0,0] dequant 1               quant 1\n") != std::string::npos);
    QVERIFY(t.find("[0,2]      -224           0xf6   -224\n") != std::string::npos);
    QVERIFY(t.ends_with("saturated 0, underflow 0, subnormal 0, NaN inputs 0, Inf inputs 0, zero inputs 1 (of 3)\n"));
    const Json j = quantizeReportJson(Format::E4M3FN(), "te_current", *r);
    QCOMPARE(j.at("codes"), Json::parse(R"(["0x7e", "0x00", "0xf6"])"));
    QCOMPARE(j.at("quant_scales"), Json::parse("[1.0]"));
    QCOMPARE(j.at("zero_inputs").get<int64_t>(), int64_t(1));
    // An option the preset does not take is refused, naming why.
    const QuantizeFlags block{[](const char* f) { return std::string(f) == "block"; },
                              [](const char*) { return std::string("4"); }};
    QVERIFY(!quantizeWithPreset("te_current", Format::E4M3FN(), v, 1, 3, Axis::Cols, EncodeOptions{}, 0, false, block,
                                &error));
    QCOMPARE(error, std::string("--block applies to block presets only; 'te_current' is per-tensor"));
    // nvfp4_te on one 1×16 block with amax 6: S_enc = 6·448 / 6 = 448 (TE's global encode
    // scale), the block's E4M3 scale 448 = 0x7e, so each block factor is 448 / 448 = 1 and the
    // codes are the E2M1 values' own (6 = 0x7). NVFP4 has no per-block quant multiplier: the
    // report says so instead of printing an empty quant_scales.
    std::vector<double> nv(16, 1.0);
    nv[0] = 6;
    const auto n =
        quantizeWithPreset("nvfp4_te", Format::E2M1(), nv, 1, 16, Axis::Cols, EncodeOptions{}, 0, false, none, &error);
    QVERIFY2(n, error.c_str());
    const Json jn = quantizeReportJson(Format::E2M1(), "nvfp4_te", *n);
    QCOMPARE(jn.at("dequant_scales"), Json::parse("[1.0]"));
    QCOMPARE(jn.at("scale_codes"), Json::parse(R"(["0x7e"])"));
    QCOMPARE(jn.at("codes").at(0).get<std::string>(), std::string("0x7"));
    QVERIFY(!jn.contains("quant_scales"));
    QCOMPARE(jn.at("quant_scales_rule").get<std::string>(),
             std::string("per element, by the preset's rule from the tensor scale and the block's E4M3FN scale "
                         "(docs/nvfp4.md)"));
  }
};

QTEST_APPLESS_MAIN(TestFormatQuantizeReport)
#include "test_format_quantize_report.moc"
