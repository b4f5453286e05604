// FP8 Lab tests — reader for the 2026 recipe vectors (FP8LAB_RECIPES_CSV: tests/data/recipes-2026-vectors.csv,
// computed by an exact emulation of Transformer Engine, torchao and DeepGEMM, not by this project;
// tests/data/README.md). Tests read it at run time; a missing file fails the test.
//
// Columns: recipe, variant, case, input, expected_element_codes, expected_scale_codes,
// expected_tensor_scale_f32_hex, notes, source. Lists inside a field are ';'-separated; fields
// holding commas are double-quoted ("" inside quotes is one quote).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fp8lab::test {

/// Path of the recipe vectors (env FP8LAB_RECIPES_CSV, else the CMake cache FP8LAB_RECIPES_CSV).
inline std::string recipeVectorsPath() {
  if (const char* e = std::getenv("FP8LAB_RECIPES_CSV")) return e;
  return FP8LAB_RECIPES_CSV;
}

/// One row of the recipe vectors.
struct RecipeVector {
  std::string recipe;                        ///< section letter of RECIPES-2026.md: A .. G, H_extra
  std::string variant;                       ///< e.g. te_nvfp4_1x16, torchao_mx_e4m3_EVEN
  std::string name;                          ///< the case, e.g. rounding_order_difference_scale
  std::vector<float> input;                  ///< fp32 values, row-major (shape in notes)
  std::vector<uint32_t> element_codes;       ///< unpacked codes
  std::vector<uint32_t> scale_codes;         ///< E4M3 (NVFP4) or biased E8M0 (MX) codes
  std::optional<uint32_t> tensor_scale_bits; ///< fp32 bits; empty for single-level recipes
  std::string notes;
  std::string source;
};

namespace detail {
inline std::vector<std::string> splitCsvLine(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

inline std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ';')) out.push_back(item);
  return out;
}

/// "nan", "inf", "-inf" and decimal reprs; every input in the file is exactly an fp32 value.
inline float parseFloat(const std::string& s) {
  if (s == "nan") return std::numeric_limits<float>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<float>::infinity();
  if (s == "-inf") return -std::numeric_limits<float>::infinity();
  return static_cast<float>(std::strtod(s.c_str(), nullptr));
}
} // namespace detail

/// Every row of the recipe vectors. Throws std::runtime_error naming the path when the file is
/// missing or a row has the wrong number of fields.
inline std::vector<RecipeVector> readRecipeVectors() {
  const std::string path = recipeVectorsPath();
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error(
        "recipe vectors missing: " + path +
        " (set FP8LAB_RECIPES_CSV or -DFP8LAB_RECIPES_CSV to tests/data/recipes-2026-vectors.csv)");
  std::vector<RecipeVector> rows;
  std::string line;
  bool header = true;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (header) {
      header = false;
      continue;
    }
    if (line.empty()) continue;
    const auto f = detail::splitCsvLine(line);
    if (f.size() != 9)
      throw std::runtime_error(path + ":" + std::to_string(line_no) + ": expected 9 fields, got " +
                               std::to_string(f.size()));
    RecipeVector v;
    v.recipe = f[0];
    v.variant = f[1];
    v.name = f[2];
    for (const auto& s : detail::splitList(f[3])) v.input.push_back(detail::parseFloat(s));
    for (const auto& s : detail::splitList(f[4]))
      v.element_codes.push_back(uint32_t(std::strtoul(s.c_str(), nullptr, 16)));
    for (const auto& s : detail::splitList(f[5]))
      v.scale_codes.push_back(uint32_t(std::strtoul(s.c_str(), nullptr, 16)));
    if (!f[6].empty()) v.tensor_scale_bits = uint32_t(std::strtoul(f[6].c_str(), nullptr, 16));
    v.notes = f[7];
    v.source = f[8];
    rows.push_back(std::move(v));
  }
  return rows;
}

/// The rows of one section (recipe letter), in file order.
inline std::vector<RecipeVector> recipeVectors(const std::string& recipe) {
  std::vector<RecipeVector> out;
  for (auto& v : readRecipeVectors())
    if (v.recipe == recipe) out.push_back(std::move(v));
  return out;
}

} // namespace fp8lab::test
