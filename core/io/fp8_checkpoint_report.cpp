// The JSON and text of checkpoint list / show / requantize (fp8_checkpoint_report.h).
#include "io/fp8_checkpoint_report.h"

#include "common/number_text.h"
#include "formats/format.h"
#include "json/json_number.h"

#include <algorithm>
#include <cstdio>

namespace fp8lab {
namespace {

std::string shapeText(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

Json floatsJson(const std::vector<float>& v) {
  Json a = Json::array();
  for (float x : v) a.push_back(numberJson(x));
  return a;
}

Json codesJson(const std::vector<uint8_t>& v) {
  Json a = Json::array();
  for (uint8_t c : v) a.push_back(int(c));
  return a;
}

std::string str(int64_t v) {
  return std::to_string(v);
}

} // namespace

Json fp8CheckpointListJson(const std::vector<Fp8CheckpointEntry>& entries) {
  Json a = Json::array();
  for (const Fp8CheckpointEntry& e : entries)
    a.push_back({{"name", e.name},
                 {"dtype", e.dtype},
                 {"shape", e.shape},
                 {"scale", e.scale_name},
                 {"scale_dtype", e.scale_dtype},
                 {"scale_shape", e.scale_shape},
                 {"layout", e.layout},
                 {"problem", e.problem}});
  return a;
}

std::string fp8CheckpointListText(const std::string& path, const std::vector<Fp8CheckpointEntry>& entries) {
  std::string s;
  if (entries.empty()) s += "no FP8 tensors (F8_E4M3, F8_E5M2) in " + path + "\n";
  for (const Fp8CheckpointEntry& e : entries) {
    s += e.name + "  " + e.dtype + " " + shapeText(e.shape);
    if (!e.problem.empty())
      s += "  not importable: " + e.problem;
    else
      s += "  " + e.layout + ": " + e.scale_name + " " + e.scale_dtype + " " + shapeText(e.scale_shape);
    s += "\n";
  }
  return s;
}

Json fp8TensorJson(const std::string& tensor, const QuantizedTensor& t) {
  const int64_t n = std::min<int64_t>(t.rows * t.cols, kFp8ShownElements);
  Json codes = Json::array(), values = Json::array();
  for (int64_t i = 0; i < n; ++i) {
    codes.push_back(int(t.codes[static_cast<size_t>(i)]));
    values.push_back(numberJson(t.dequantizedAt(i / t.cols, i % t.cols)));
  }
  return {{"tensor", tensor},
          {"format", t.format->name()},
          {"shape", {t.rows, t.cols}},
          {"block", {t.block.rows, t.block.cols}},
          {"strategy", t.strategy},
          {"dequant_scales", floatsJson(t.dequant_scales)},
          {"codes", codes},
          {"values", values},
          {"shown", n}};
}

std::string fp8TensorText(const QuantizedTensor& t) {
  const int64_t n = std::min<int64_t>(t.rows * t.cols, kFp8ShownElements);
  std::string s = t.strategy + ": " + t.format->name() + " [" + str(t.rows) + ", " + str(t.cols) + "], scale blocks [" +
                  str(t.block.rows) + ", " + str(t.block.cols) + "], x = decode(code) * scale\nscales: ";
  for (size_t i = 0; i < std::min<size_t>(t.dequant_scales.size(), 64); ++i)
    s += (i ? " " : "") + shortestText(t.dequant_scales[i]);
  s += std::string(t.dequant_scales.size() > 64 ? " ..." : "") + "\n";
  for (int64_t i = 0; i < n; ++i) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", unsigned(t.codes[static_cast<size_t>(i)]));
    s += "(" + str(i / t.cols) + ", " + str(i % t.cols) + ") " + hex + " = " +
         shortestText(t.dequantizedAt(i / t.cols, i % t.cols)) + "\n";
  }
  if (n < t.rows * t.cols) s += "... (first " + str(n) + " elements shown)\n";
  return s;
}

Json fp8RequantizedJson(const std::string& tensor, const std::string& stored, const std::string& scaling,
                        const Fp8Requantized& rq) {
  const QuantizedTensor& t = rq.requantized;
  Json o = {{"tensor", tensor},
            {"stored", stored},
            {"scaling", scaling},
            {"format", t.format->name()},
            {"block", {t.block.rows, t.block.cols}},
            {"dequant_scales", floatsJson(t.dequant_scales)},
            {"sqnr_db", numberJson(rq.sqnr_db)},
            {"saturated", t.stats.saturated},
            {"underflow", t.stats.underflow},
            {"codes", codesJson(t.codes)}};
  if (!t.scale_codes.empty()) o["scale_codes"] = codesJson(t.scale_codes);
  if (rq.same_format) o["codes_changed"] = rq.codes_changed;
  return o;
}

std::string fp8RequantizedText(const std::string& stored, const std::string& scaling, const Fp8Requantized& rq) {
  const QuantizedTensor& t = rq.requantized;
  std::string s = "stored:      " + stored + "\nrequantized: " + scaling + " " + t.format->name() + ", scale blocks [" +
                  str(t.block.rows) + ", " + str(t.block.cols) + "], " + std::to_string(t.dequant_scales.size()) +
                  " scales\nSQNR vs the stored tensor (decode * scale): " + shortestText(rq.sqnr_db) + " dB\n";
  if (rq.same_format) s += "codes changed: " + str(rq.codes_changed) + " of " + str(int64_t(t.codes.size())) + "\n";
  return s + "saturated " + str(t.stats.saturated) + ", underflow " + str(t.stats.underflow) + "\n";
}

} // namespace fp8lab
