// FP8 Lab — the in-memory session model and the Status/issue types (no HDF5 here).
#include "session/session.h"

#include "formats/format.h"

#include <cmath>
#include <ctime>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace fp8lab {

// ---- issues ---------------------------------------------------------------------------------

bool Status::ok() const {
  for (const auto& i : issues)
    if (i.severity == Severity::Error) return false;
  return true;
}

std::string Status::message() const {
  std::string s;
  for (const auto& i : issues) {
    if (!s.empty()) s += '\n';
    s += i.toString();
  }
  return s;
}

std::string Status::firstError() const {
  for (const auto& i : issues)
    if (i.severity == Severity::Error) return i.toString();
  return {};
}

std::string Status::errors() const {
  std::string s;
  for (const auto& i : issues) {
    if (i.severity != Severity::Error) continue;
    if (!s.empty()) s += '\n';
    s += i.title();
    if (!i.where.empty()) s += " at " + i.where;
    if (!i.detail.empty()) s += ": " + i.detail;
  }
  return s;
}

void Status::add(Issue::Code code, std::string where, std::string detail, Severity severity) {
  issues.push_back(Issue::file(code, std::move(where), std::move(detail), severity));
}

void Status::merge(const Status& other) {
  issues.insert(issues.end(), other.issues.begin(), other.issues.end());
}

// ---- attributes, dtypes ---------------------------------------------------------------------

const char* toString(DType t) {
  switch (t) {
  case DType::Float32:
    return "float32";
  case DType::Float64:
    return "float64";
  case DType::UInt8:
    return "uint8";
  case DType::Int64:
    return "int64";
  }
  return "?";
}

std::optional<std::string> attrString(const Attributes& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end()) return std::nullopt;
  if (auto p = std::get_if<std::string>(&it->second)) return *p;
  return std::nullopt;
}

std::optional<double> attrDouble(const Attributes& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end()) return std::nullopt;
  if (auto p = std::get_if<double>(&it->second)) return *p;
  if (auto p = std::get_if<int64_t>(&it->second)) return static_cast<double>(*p);
  return std::nullopt;
}

std::optional<int64_t> attrInt(const Attributes& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end()) return std::nullopt;
  if (auto p = std::get_if<int64_t>(&it->second)) return *p;
  return std::nullopt;
}

// ---- Dataset --------------------------------------------------------------------------------

int64_t Dataset::elementCount() const {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

int64_t Dataset::storedCount() const {
  switch (dtype) {
  case DType::Float32:
    return static_cast<int64_t>(f32.size());
  case DType::Float64:
    return static_cast<int64_t>(f64.size());
  case DType::UInt8:
    return static_cast<int64_t>(u8.size());
  case DType::Int64:
    return static_cast<int64_t>(i64.size());
  }
  return 0;
}

size_t Dataset::elementBytes() const {
  switch (dtype) {
  case DType::Float32:
    return 4;
  case DType::Float64:
    return 8;
  case DType::UInt8:
    return 1;
  case DType::Int64:
    return 8;
  }
  return 0;
}

double Dataset::valueAt(int64_t i) const {
  const auto k = static_cast<size_t>(i);
  switch (dtype) {
  case DType::Float32:
    return f32[k];
  case DType::Float64:
    return f64[k];
  case DType::UInt8:
    return u8[k];
  case DType::Int64:
    return static_cast<double>(i64[k]);
  }
  return 0;
}

static Attributes unitAttrs(std::string units, std::string meaning) {
  Attributes a;
  a["units"] = std::move(units);
  a["meaning"] = std::move(meaning);
  return a;
}

Dataset Dataset::float32(std::vector<int64_t> shape, std::vector<float> data, std::string units, std::string meaning) {
  Dataset d;
  d.dtype = DType::Float32;
  d.shape = std::move(shape);
  d.f32 = std::move(data);
  d.attrs = unitAttrs(std::move(units), std::move(meaning));
  return d;
}

Dataset Dataset::float64(std::vector<int64_t> shape, std::vector<double> data, std::string units, std::string meaning) {
  Dataset d;
  d.dtype = DType::Float64;
  d.shape = std::move(shape);
  d.f64 = std::move(data);
  d.attrs = unitAttrs(std::move(units), std::move(meaning));
  return d;
}

Dataset Dataset::uint8(std::vector<int64_t> shape, std::vector<uint8_t> data, std::string units, std::string meaning) {
  Dataset d;
  d.dtype = DType::UInt8;
  d.shape = std::move(shape);
  d.u8 = std::move(data);
  d.attrs = unitAttrs(std::move(units), std::move(meaning));
  return d;
}

Dataset Dataset::int64(std::vector<int64_t> shape, std::vector<int64_t> data, std::string units, std::string meaning) {
  Dataset d;
  d.dtype = DType::Int64;
  d.shape = std::move(shape);
  d.i64 = std::move(data);
  d.attrs = unitAttrs(std::move(units), std::move(meaning));
  return d;
}

// ---- Run ------------------------------------------------------------------------------------

Dataset& Run::putFloat32(const std::string& path, std::vector<float> data, int64_t rows, int64_t cols,
                         std::string units, std::string meaning) {
  std::vector<int64_t> shape = cols < 0 ? std::vector<int64_t>{rows} : std::vector<int64_t>{rows, cols};
  auto& d = datasets[path];
  d = Dataset::float32(std::move(shape), std::move(data), std::move(units), std::move(meaning));
  return d;
}

static const char* kScaleConvention =
    "dequant_scale: x ~= decode(code) * scale of the element's block (cuBLASLt a_scale convention)";

void Run::putQuantized(const std::string& prefix, const QuantizedTensor& q, const std::string& meaning) {
  if (!q.format) throw std::invalid_argument("putQuantized: tensor has no format");
  auto& c = datasets[prefix + "_codes"];
  c = Dataset::uint8({q.rows, q.cols}, q.codes, "code",
                     meaning + ": " + q.format->name() + " bit patterns (uint8, low bits used)");
  c.attrs["format"] = q.format->name();
  c.attrs["format_bits"] = static_cast<int64_t>(q.format->bits());
  c.attrs["scaling"] = q.strategy;
  c.attrs["block_rows"] = q.block.rows;
  c.attrs["block_cols"] = q.block.cols;
  c.attrs["scale_convention"] = std::string(kScaleConvention);
  c.attrs["elements"] = q.stats.elements;
  c.attrs["saturated"] = q.stats.saturated;
  c.attrs["underflow"] = q.stats.underflow;
  c.attrs["subnormal"] = q.stats.subnormal;
  c.attrs["nan_inputs"] = q.stats.nan_inputs;
  c.attrs["inf_inputs"] = q.stats.inf_inputs;
  c.attrs["zero_inputs"] = q.stats.zero_inputs;

  const int64_t br = q.blockRows(), bc = q.blockCols();
  auto& s = datasets[prefix + "_scales"];
  s = Dataset::float32({br, bc}, q.dequant_scales, "1",
                       meaning + ": dequant scale per block [block_rows x block_cols] (x ~= decode(code) * scale)");
  s.attrs["block_rows"] = q.block.rows;
  s.attrs["block_cols"] = q.block.cols;
  if (q.tensor_scale.kind != TensorScale::Kind::None) {
    // Two-level (NVFP4): _scales holds the decoded E4M3 block scales; the second level is here.
    const bool te = q.tensor_scale.kind == TensorScale::Kind::TeAmax;
    s.attrs["tensor_scale_kind"] = std::string(te ? "te_amax" : "torchao_per_tensor_scale");
    s.attrs["tensor_amax"] = static_cast<double>(q.tensor_scale.amax);
    s.attrs["tensor_scale"] = static_cast<double>(q.tensor_scale.value);
    s.attrs["fp4_fp8_max"] = static_cast<double>(q.tensor_scale.fp4_fp8_max);
    s.attrs["meaning"] = meaning + ": E4M3 block scale per block [block_rows x block_cols]; x ~= decode(code) * " +
                         (te ? "scale * tensor_amax * (1/fp4_fp8_max)" : "tensor_scale * scale");
  }
  if (!q.quant_scales.empty()) {
    auto& qs = datasets[prefix + "_quant_scales"];
    qs = Dataset::float32(
        {br, bc}, q.quant_scales, "1",
        meaning + ": quant multiplier per block as used by the cast (x_q = cast(x * q)); ~ 1/dequant scale");
  }
  if (!q.scale_codes.empty()) {
    auto& sc = datasets[prefix + "_scale_codes"];
    const std::string sf = q.scaleCodeFormat().name();
    sc = Dataset::uint8({br, bc}, q.scale_codes, "code", meaning + ": " + sf + " scale codes per block");
    sc.attrs["format"] = sf;
  }
  auto& dq = datasets[prefix + "_dequantized"];
  dq = Dataset::float32({q.rows, q.cols}, q.dequantize(), "1",
                        meaning + ": decode(code) * dequant scale, rounded once to float32");
  dq.attrs["format"] = q.format->name();
}

Result<QuantizedTensor> Run::getQuantized(const std::string& prefix) const {
  Result<QuantizedTensor> r;
  const std::string where = "run " + id + ", " + prefix;
  const Dataset* c = find(prefix + "_codes");
  const Dataset* s = find(prefix + "_scales");
  if (!c) {
    r.add(Issue::Code::MissingDataset, where + "_codes", "quantized codes not stored");
    return r;
  }
  if (!s) {
    r.add(Issue::Code::MissingDataset, where + "_scales", "dequant scales not stored");
    return r;
  }
  if (c->dtype != DType::UInt8 || c->shape.size() != 2) {
    r.add(Issue::Code::WrongType, where + "_codes", "expected uint8 [rows, cols]");
    return r;
  }
  auto fname = attrString(c->attrs, "format");
  const Format* f = fname ? Format::byName(*fname) : nullptr;
  if (!f) {
    r.add(fname ? Issue::Code::WrongType : Issue::Code::MissingAttribute, where + "_codes",
          fname ? "unknown format '" + *fname + "'" : "attribute 'format' absent");
    return r;
  }
  auto brow = attrInt(c->attrs, "block_rows"), bcol = attrInt(c->attrs, "block_cols");
  if (!brow || !bcol || *brow < 1 || *bcol < 1) {
    r.add(Issue::Code::MissingAttribute, where + "_codes", "block_rows / block_cols absent or < 1");
    return r;
  }
  QuantizedTensor& q = r.value;
  q.rows = c->shape[0];
  q.cols = c->shape[1];
  q.format = f;
  q.codes = c->u8;
  q.block = {*brow, *bcol};
  q.strategy = attrString(c->attrs, "scaling").value_or("");
  if (s->dtype != DType::Float32 || s->shape != std::vector<int64_t>{q.blockRows(), q.blockCols()}) {
    r.add(Issue::Code::WrongShape, where + "_scales",
          "expected float32 [" + std::to_string(q.blockRows()) + ", " + std::to_string(q.blockCols()) + "]");
    return r;
  }
  q.dequant_scales = s->f32;
  if (auto qs = find(prefix + "_quant_scales"); qs && qs->dtype == DType::Float32 && qs->shape == s->shape)
    q.quant_scales = qs->f32;
  if (auto sc = find(prefix + "_scale_codes"); sc && sc->dtype == DType::UInt8 && sc->shape == s->shape) {
    q.scale_codes = sc->u8;
    if (attrString(sc->attrs, "format").value_or("E8M0FNU") == "E4M3FN") q.scale_format = &Format::E4M3FN();
  }
  if (auto kind = attrString(s->attrs, "tensor_scale_kind")) {
    q.tensor_scale.kind = *kind == "te_amax" ? TensorScale::Kind::TeAmax : TensorScale::Kind::TorchaoPts;
    auto num = [&](const char* key, double fallback) {
      const auto it = s->attrs.find(key);
      if (it == s->attrs.end()) return fallback;
      if (const double* d = std::get_if<double>(&it->second)) return *d;
      return fallback;
    };
    q.tensor_scale.amax = static_cast<float>(num("tensor_amax", 0.0));
    q.tensor_scale.value = static_cast<float>(num("tensor_scale", 1.0));
    q.tensor_scale.fp4_fp8_max = static_cast<float>(num("fp4_fp8_max", 2688.0));
  }
  q.stats.elements = attrInt(c->attrs, "elements").value_or(0);
  q.stats.saturated = attrInt(c->attrs, "saturated").value_or(0);
  q.stats.underflow = attrInt(c->attrs, "underflow").value_or(0);
  q.stats.subnormal = attrInt(c->attrs, "subnormal").value_or(0);
  q.stats.nan_inputs = attrInt(c->attrs, "nan_inputs").value_or(0);
  q.stats.inf_inputs = attrInt(c->attrs, "inf_inputs").value_or(0);
  q.stats.zero_inputs = attrInt(c->attrs, "zero_inputs").value_or(0);
  return r;
}

const Dataset* Run::find(const std::string& path) const {
  auto it = datasets.find(path);
  return it == datasets.end() ? nullptr : &it->second;
}

void Run::setMetric(const std::string& name, double value, std::string units, std::string meaning) {
  metrics[name] = Metric{value, std::move(units), std::move(meaning)};
}

const Run* Session::find(const std::string& id) const {
  for (const auto& r : runs)
    if (r.id == id) return &r;
  return nullptr;
}

const RunInfo* SessionInfo::find(const std::string& id) const {
  for (const auto& r : runs)
    if (r.id == id) return &r;
  return nullptr;
}

bool isValidRunId(const std::string& id, std::string* why) {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (id.empty()) return bad("run id is empty");
  if (id.size() > 128) return bad("run id longer than 128 characters");
  if (id[0] == '.') return bad("run id starts with '.'");
  for (size_t i = 0; i < id.size(); ++i) {
    const char ch = id[i];
    const bool okc = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                     ch == '-' || ch == '.' || ch == '+' || ch == '=';
    if (okc) continue;
    // Name the whole character: a non-ASCII one is a UTF-8 lead byte plus its continuation bytes
    // (quoting the lead byte alone printed half a character).
    size_t n = 1;
    if (static_cast<unsigned char>(ch) >= 0xC0)
      while (i + n < id.size() && n < 4 && (static_cast<unsigned char>(id[i + n]) & 0xC0) == 0x80) ++n;
    return bad("run id '" + id + "' contains '" + id.substr(i, n) + "' (allowed: ASCII letters and digits, _ - . + =)");
  }
  return true;
}

std::string utcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

} // namespace fp8lab
