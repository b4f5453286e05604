// FP8 Lab — the Python module's native part, fp8lab._core: pybind11 glue over core/, one function per
// capability and no numerics of its own. Each call goes through the core function the CLI command of
// the same name uses (formats, quantizeWithPreset, gemmConfigFromFlags + runGemmExperimentRun,
// rerunStoredRun, SessionReader, the training engine's site recorder), so it gives the CLI's bits.
//
// Arrays: numpy in, numpy out. Inputs must have the documented dtype (TypeError otherwise, naming the
// argument); a non-contiguous input is copied to C order first. Results are returned without a copy:
// each numpy array owns the std::vector core filled. The GIL is released around every core call that
// can take long (quantize, gemm, check, rerun, session reads, observed steps).
#include "common/number_text.h"
#include "experiment/experiment_registry.h"
#include "experiment/gemm/gemm_config.h"
#include "experiment/gemm/gemm_flags.h"
#include "experiment/gemm/gemm_run.h"
#include "experiment/kernel_check/kernel_check_run.h"
#include "experiment/param_schema.h"
#include "experiment/quantize_report.h"
#include "formats/format.h"
#include "gemm/gemm.h"
#include "json/json_document.h"
#include "session/session.h"
#include "session/session_layout.h"
#include "training/diagnostics.h"
#include "training/observed_run.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace fp8lab;

namespace {

// ---- arrays ------------------------------------------------------------------------------------

/// A numpy array that owns `v` (no copy), of shape `shape`.
template <class T> py::array_t<T> owned(std::vector<T>&& v, std::vector<py::ssize_t> shape) {
  auto* p = new std::vector<T>(std::move(v));
  py::capsule owner(p, [](void* q) { delete static_cast<std::vector<T>*>(q); });
  return py::array_t<T>(shape, p->data(), owner);
}

std::string dtypeName(const py::array& a) {
  return py::str(a.dtype()).cast<std::string>();
}

std::string shapeText(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

/// `obj` as a C-contiguous array of T: TypeError naming `arg` when it is not an array of that dtype
/// (`expected` says what is accepted); a non-contiguous array is copied to C order.
template <class T>
py::array_t<T, py::array::c_style> requireArray(py::handle obj, const char* arg, const char* expected) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(std::string(arg) + ": expected a numpy array of " + expected + ", got " +
                         py::str(py::type::of(obj)).cast<std::string>());
  py::array a = py::reinterpret_borrow<py::array>(obj);
  if (!a.dtype().is(py::dtype::of<T>()))
    throw py::type_error(std::string(arg) + ": expected " + expected + ", got dtype " + dtypeName(a) +
                         " (convert with .astype(numpy." + py::str(py::dtype::of<T>()).cast<std::string>() + "))");
  return py::array_t<T, py::array::c_style>::ensure(a);
}

bool isDtype(py::handle obj, py::dtype d) {
  return py::isinstance<py::array>(obj) && py::reinterpret_borrow<py::array>(obj).dtype().is(d);
}

/// A 2-D matrix argument: rank 2 (or rank 1 as one row when `row_ok`); ValueError otherwise.
void requireRank2(const py::array& a, const char* arg, bool row_ok) {
  if (a.ndim() == 2 || (row_ok && a.ndim() == 1)) return;
  throw py::value_error(std::string(arg) + ": expected a 2-D array" + (row_ok ? " (or 1-D, one row)" : "") +
                        ", got shape " + shapeText(a));
}

const Format& requireFormat(const std::string& name, const char* arg) {
  const Format* f = Format::byName(name);
  if (!f) {
    std::string known;
    for (const Format* x : Format::all()) known += (known.empty() ? "" : ", ") + x->name();
    throw py::value_error(std::string(arg) + ": unknown format '" + name + "' (known: " + known + ")");
  }
  return *f;
}

/// A Status's errors as ValueError (its message names where).
void raiseIfError(const Status& s, const std::string& what) {
  if (!s.ok()) throw py::value_error(what + s.errors());
}

// ---- attributes and datasets as Python values -----------------------------------------------------

py::object attrToPy(const AttrValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return py::str(*s);
  if (const auto* d = std::get_if<double>(&v)) return py::float_(*d);
  return py::int_(std::get<int64_t>(v));
}

py::dict attrsToPy(const Attributes& a) {
  py::dict d;
  for (const auto& [k, v] : a) d[py::str(k)] = attrToPy(v);
  return d;
}

py::array datasetToNumpy(Dataset&& d) {
  std::vector<py::ssize_t> shape(d.shape.begin(), d.shape.end());
  switch (d.dtype) {
  case DType::Float32:
    return owned(std::move(d.f32), shape);
  case DType::Float64:
    return owned(std::move(d.f64), shape);
  case DType::UInt8:
    return owned(std::move(d.u8), shape);
  case DType::Int64:
    return owned(std::move(d.i64), shape);
  }
  return py::none();
}

py::dict metricsToPy(const std::map<std::string, Metric>& m) {
  py::dict d;
  for (const auto& [k, v] : m) d[py::str(k)] = v.value;
  return d;
}

py::dict errorMetricsToPy(const ErrorMetrics& e) {
  py::dict d;
  d["count"] = e.count;
  d["finite_pairs"] = e.finite_pairs;
  d["max_abs"] = e.max_abs;
  d["max_abs_index"] = e.max_abs_index;
  d["max_rel"] = e.max_rel;
  d["rmse"] = e.rmse;
  d["rel_fro"] = e.rel_fro;
  d["sqnr_db"] = e.sqnr_db;
  d["ref_rms"] = e.ref_rms;
  d["nan_test"] = e.nan_test;
  d["inf_test"] = e.inf_test;
  d["nan_ref"] = e.nan_ref;
  d["inf_ref"] = e.inf_ref;
  return d;
}

py::dict quantizeStatsToPy(const QuantizeStats& s) {
  py::dict d;
  d["elements"] = s.elements;
  d["saturated"] = s.saturated;
  d["underflow"] = s.underflow;
  d["subnormal"] = s.subnormal;
  d["nan_inputs"] = s.nan_inputs;
  d["inf_inputs"] = s.inf_inputs;
  d["zero_inputs"] = s.zero_inputs;
  return d;
}

// ---- formats -----------------------------------------------------------------------------------

EncodeOptions encodeOptions(const std::string& rounding, bool saturate, const std::string& specials,
                            int stochastic_bits, uint32_t random_word = 0) {
  EncodeOptions o;
  const auto r = parseRounding(rounding);
  if (!r) throw py::value_error("rounding: unknown '" + rounding + "' (rne, rtz, ru, rd, stochastic)");
  o.rounding = *r;
  o.saturate = saturate;
  if (specials == "cuda")
    o.specials = SpecialsPolicy::Cuda;
  else if (specials == "ml_dtypes")
    o.specials = SpecialsPolicy::MlDtypes;
  else
    throw py::value_error("specials: expected 'cuda' or 'ml_dtypes', got '" + specials + "'");
  if (stochastic_bits < 1 || stochastic_bits > 32)
    throw py::value_error("stochastic_bits: expected 1..32, got " + std::to_string(stochastic_bits));
  o.stochastic_bits = stochastic_bits;
  o.random_word = random_word;
  return o;
}

py::array encodeArray(py::object x, const std::string& format, const std::string& rounding, bool saturate,
                      const std::string& specials, double scale, const std::string& scale_op, uint64_t seed,
                      int stochastic_bits) {
  const Format& f = requireFormat(format, "format");
  const EncodeOptions opt = encodeOptions(rounding, saturate, specials, stochastic_bits);
  if (scale_op != "multiply" && scale_op != "divide")
    throw py::value_error("scale_op: expected 'multiply' or 'divide', got '" + scale_op + "'");
  const Format::ScaleOp op = scale_op == "divide" ? Format::ScaleOp::Divide : Format::ScaleOp::Multiply;
  if (!(std::isfinite(scale) && scale > 0)) throw py::value_error("scale: expected a finite number > 0");
  const bool f64 = isDtype(x, py::dtype::of<double>());
  py::array in = f64 ? py::array(requireArray<double>(x, "x", "float32 or float64 values"))
                     : py::array(requireArray<float>(x, "x", "float32 or float64 values"));
  std::vector<py::ssize_t> shape(in.shape(), in.shape() + in.ndim());
  const size_t n = static_cast<size_t>(in.size());
  if (f.bits() <= 8) {
    std::vector<uint8_t> codes(n);
    {
      py::gil_scoped_release nogil;
      if (f64)
        f.encodeBulk(static_cast<const double*>(in.data()), codes.data(), n, opt, scale, op, seed);
      else
        f.encodeBulk(static_cast<const float*>(in.data()), codes.data(), n, opt, float(scale), op, seed);
    }
    return owned(std::move(codes), shape);
  }
  // 16-bit formats (BF16, FP16): one rounding from the value (times the scale) per element.
  std::vector<uint16_t> codes(n);
  {
    py::gil_scoped_release nogil;
    for (size_t i = 0; i < n; ++i) {
      double v = f64 ? static_cast<const double*>(in.data())[i] : double(static_cast<const float*>(in.data())[i]);
      v = op == Format::ScaleOp::Multiply ? v * scale : v / scale;
      EncodeOptions o = opt;
      o.random_word = Format::counterRandom(seed, i);
      codes[i] = static_cast<uint16_t>(f.encode(v, o));
    }
  }
  return owned(std::move(codes), shape);
}

py::array decodeArray(py::object codes, const std::string& format) {
  const Format& f = requireFormat(format, "format");
  if (f.bits() <= 8) {
    auto c = requireArray<uint8_t>(codes, "codes", "uint8 codes");
    const size_t n = static_cast<size_t>(c.size());
    const uint8_t* p = c.data();
    for (size_t i = 0; i < n; ++i)
      if (p[i] > f.codeMask())
        throw py::value_error("codes: element " + std::to_string(i) + " is " + std::to_string(p[i]) +
                              ", not a code of " + f.name() + " (" + std::to_string(f.bits()) + " bits: 0.." +
                              std::to_string(f.codeMask()) + ")");
    std::vector<float> out(n);
    {
      py::gil_scoped_release nogil;
      f.decodeBulk(p, out.data(), n);
    }
    return owned(std::move(out), std::vector<py::ssize_t>(c.shape(), c.shape() + c.ndim()));
  }
  auto c = requireArray<uint16_t>(codes, "codes", "uint16 codes (a 16-bit format)");
  const size_t n = static_cast<size_t>(c.size());
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(f.decode(c.data()[i]));
  return owned(std::move(out), std::vector<py::ssize_t>(c.shape(), c.shape() + c.ndim()));
}

py::dict formatTable(const std::string& format) {
  const Format& f = requireFormat(format, "format");
  const uint32_t n = f.codeCount();
  std::vector<uint32_t> code(n);
  std::vector<double> value(n);
  py::list cls, binary;
  for (uint32_t c = 0; c < n; ++c) {
    code[c] = c;
    value[c] = f.decode(c);
    cls.append(toString(f.classify(c)));
    binary.append(f.binaryString(c));
  }
  py::dict d;
  d["name"] = f.name();
  d["bits"] = f.bits();
  d["exponent_bits"] = f.spec().exponent_bits;
  d["mantissa_bits"] = f.spec().mantissa_bits;
  d["bias"] = f.bias();
  d["max_finite"] = f.maxFinite();
  d["min_normal"] = f.minNormal();
  d["min_subnormal"] = f.minSubnormal();
  d["epsilon"] = f.machineEpsilon();
  d["code"] = owned(std::move(code), {py::ssize_t(n)});
  d["value"] = owned(std::move(value), {py::ssize_t(n)});
  d["class"] = cls;
  d["binary"] = binary;
  return d;
}

py::list formatList() {
  py::list l;
  for (const Format* f : Format::all()) {
    py::dict d;
    d["name"] = f->name();
    d["bits"] = f->bits();
    d["max_finite"] = f->maxFinite();
    d["description"] = f->spec().description;
    l.append(d);
  }
  return l;
}

// ---- quantize ----------------------------------------------------------------------------------

/// A quantized tensor as Python sees it (fp8lab.QuantizedTensor): the core struct plus its inputs'
/// rotated copy for the RHT presets and the note.
struct PyQuantized {
  QuantizedTensor q;
  std::vector<float> rotated;
  std::string note;
};

/// The flags map of a preset request: the schema's defaults where not given (as the CLI's parser).
QuantizeFlags quantizeFlags(const std::map<std::string, std::string>& given) {
  return QuantizeFlags{[given](const char* f) { return given.count(f) > 0; },
                       [given](const char* f) -> std::string {
                         if (auto it = given.find(f); it != given.end()) return it->second;
                         if (const ParamSpec* p = findParamByFlag(f)) return p->flagDefault();
                         return {};
                       }};
}

PyQuantized quantizeArray(py::object x, const std::string& scaling, const std::string& format, const std::string& axis,
                          const std::string& rounding, uint64_t seed, bool saturate, py::object block, py::object pow2,
                          py::object amax_epsilon, py::object margin, py::object history_len, py::object algo,
                          py::object amax_history) {
  // No format: E2M1 for the NVFP4 presets (quantizeFormat's choice), else E4M3FN.
  QuantizeFormatChoice choice = quantizeFormat(scaling, format);
  if (format.empty() && !choice.format) choice = quantizeFormat(scaling, "E4M3FN");
  if (!choice.error.empty()) throw py::value_error("format: " + choice.error);
  const bool f64 = isDtype(x, py::dtype::of<double>());
  py::array in = f64 ? py::array(requireArray<double>(x, "x", "float32 or float64 values"))
                     : py::array(requireArray<float>(x, "x", "float32 or float64 values"));
  requireRank2(in, "x", true);
  const int64_t rows = in.ndim() == 2 ? in.shape(0) : 1, cols = in.ndim() == 2 ? in.shape(1) : in.shape(0);
  if (rows < 1 || cols < 1) throw py::value_error("x: the tensor is empty (shape " + shapeText(in) + ")");
  const auto ax = parseAxisName(axis);
  if (!ax) throw py::value_error("axis: expected 'rows' or 'cols', got '" + axis + "'");
  std::map<std::string, std::string> given;
  if (axis != "cols") given["axis"] = axis;
  if (rounding != "rne") given["rounding"] = rounding;
  if (seed != 0) given["seed"] = std::to_string(seed);
  if (!saturate) given["no-saturate"] = "";
  if (f64) given["float64"] = "";
  if (!block.is_none()) given["block"] = std::to_string(block.cast<int64_t>());
  if (!pow2.is_none()) given[pow2.cast<bool>() ? "pow2" : "no-pow2"] = "";
  if (!amax_epsilon.is_none()) given["amax-epsilon"] = shortestText(amax_epsilon.cast<double>());
  if (!margin.is_none()) given["margin"] = std::to_string(margin.cast<int64_t>());
  if (!history_len.is_none()) given["history-len"] = std::to_string(history_len.cast<int64_t>());
  if (!algo.is_none()) given["algo"] = algo.cast<std::string>();
  if (!amax_history.is_none()) {
    std::string list;
    for (py::handle v : amax_history) list += (list.empty() ? "" : ",") + shortestText(v.cast<double>());
    given["amax-history"] = list;
  }
  for (const char* f : {"margin", "history-len", "amax-epsilon"})
    if (auto it = given.find(f); it != given.end())
      if (const ParamSpec* p = findParamByFlag(f))
        if (const std::string e = checkParamText(*p, it->second); !e.empty()) throw py::value_error(e);
  const EncodeOptions enc = encodeOptions(rounding, saturate, "cuda", 16);
  std::vector<double> values(static_cast<size_t>(rows * cols));
  if (f64)
    std::copy_n(static_cast<const double*>(in.data()), values.size(), values.begin());
  else
    std::copy_n(static_cast<const float*>(in.data()), values.size(), values.begin());
  std::string err;
  std::optional<QuantizeOutcome> r;
  {
    py::gil_scoped_release nogil;
    r = quantizeWithPreset(scaling, *choice.format, values, rows, cols, *ax, enc, seed, f64, quantizeFlags(given),
                           &err);
  }
  if (!r) throw py::value_error(err);
  return PyQuantized{std::move(r->q), std::move(r->rotated), std::move(r->note)};
}

// ---- gemm --------------------------------------------------------------------------------------

/// Python keyword → flag of `fp8lab-cli gemm`.
std::string flagOf(std::string key) {
  static const std::map<std::string, std::string> alias = {
      {"format_a", "a-format"}, {"format_b", "b-format"}, {"scaling_a", "a-scaling"}, {"scaling_b", "b-scaling"}};
  if (auto it = alias.find(key); it != alias.end()) return it->second;
  for (char& c : key)
    if (c == '_') c = '-';
  return key;
}

std::string pyText(py::handle v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::float_>(v)) return shortestText(v.cast<double>());
  return py::str(v).cast<std::string>();
}

/// The gemm flags that describe the operands (their shape, random data, or files): fp8lab.gemm
/// takes the operands themselves.
bool isOperandKeyword(const std::string& key) {
  static const std::set<std::string> k = {"m",
                                          "k",
                                          "n",
                                          "seed",
                                          "distribution",
                                          "scale",
                                          "sigma",
                                          "outlier_fraction",
                                          "outlier_factor",
                                          "outlier_channels",
                                          "outlier_axis",
                                          "a_tensor",
                                          "b_tensor"};
  return k.count(key) > 0;
}

struct GemmCall {
  GemmExperimentConfig cfg;
  std::shared_ptr<std::vector<float>> a, b; // operands kept alive for the run
  std::string id = "python";
};

/// An operand: a float32 array [rows, cols] (a view of it is copied once into the run's operand),
/// or a str import spec ("a.npy", "m.safetensors:NAME").
void setOperand(py::handle obj, const char* arg, OperandSource& src, std::shared_ptr<std::vector<float>>& keep) {
  if (py::isinstance<py::str>(obj)) {
    src.tensor = obj.cast<std::string>();
    return;
  }
  auto a = requireArray<float>(obj, arg, "float32 values [rows, cols] (or a file spec such as 'a.npy')");
  requireRank2(a, arg, false);
  if (a.shape(0) < 1 || a.shape(1) < 1) throw py::value_error(std::string(arg) + ": empty operand " + shapeText(a));
  keep = std::make_shared<std::vector<float>>(a.data(), a.data() + a.size());
  src.values = keep.get();
  src.rows = a.shape(0);
  src.cols = a.shape(1);
  src.origin = std::string("numpy array (") + arg + ")";
}

GemmCall gemmCall(py::handle a, py::handle b, const py::dict& kw, bool check) {
  GemmCall call;
  std::map<std::string, std::string> given;
  py::object c = py::none(), bias = py::none();
  std::optional<double> beta;
  for (auto item : kw) {
    const std::string key = item.first.cast<std::string>();
    if (item.second.is_none()) continue;
    if (key == "c") {
      c = py::reinterpret_borrow<py::object>(item.second);
      continue;
    }
    if (key == "bias") {
      bias = py::reinterpret_borrow<py::object>(item.second);
      continue;
    }
    if (key == "beta") {
      beta = item.second.cast<double>();
      continue;
    }
    if (key == "id") {
      call.id = item.second.cast<std::string>();
      continue;
    }
    if (key == "backend") {
      const std::string v = pyText(item.second);
      if (v != "cpu" && v != "auto")
        throw py::value_error("backend: the Python module runs the CPU reference only ('cpu'); got '" + v +
                              "' (the GPU runs through fp8lab-cli gemm --backend gpu)");
      continue;
    }
    if (isOperandKeyword(key))
      throw py::type_error("gemm: '" + key + "' describes the operands, which are a and b here (arrays or file specs)");
    const std::string flag = flagOf(key);
    const ParamSpec* p = findParamByFlag(flag);
    const bool outside = flag == "a-scaling";
    if ((!p || !p->usedBy("gemm")) && !outside)
      throw py::type_error("gemm: unexpected keyword '" + key +
                           "' (the keywords are fp8lab-cli gemm's flags with '_' for '-'; see help(fp8lab.gemm))");
    if (p && p->type == ParamType::Boolean) {
      if (item.second.cast<bool>()) given[flag] = "";
      continue;
    }
    given[flag] = pyText(item.second);
    if (p && !(key == "output_scale" && given[flag] == "auto"))
      if (const std::string e = checkParamText(*p, given[flag]); !e.empty()) throw py::value_error(e);
  }
  if (check && given.count("output-scale") && given["output-scale"] == "auto")
    throw py::value_error(
        "output_scale: 'auto' is the reference's own scale_D; a kernel check needs the scale_D the kernel used");
  // The epilogue: beta ≠ 0 needs C; C given in memory (or seeded with c_seed).
  const bool c_given = !c.is_none();
  if (beta && *beta != 0 && !c_given && !given.count("c-seed") && !given.count("c-file"))
    throw py::value_error("beta: beta = " + shortestText(*beta) +
                          " needs C: pass c=ARRAY [M, N] float32 (or c_seed / c_file)");
  if (c_given && !(beta && *beta != 0)) throw py::value_error("c: C is added as beta·C; pass beta (≠ 0) with it");
  if (beta && !c_given) given["beta"] = shortestText(*beta);
  GemmFlagConfig flags;
  if (const std::string e = gemmConfigFromFlags(given, true, &flags); !e.empty()) throw py::value_error(e);
  GemmExperimentConfig& cfg = flags.config;
  setOperand(a, "a", cfg.a, call.a);
  setOperand(b, "b", cfg.b, call.b);
  if (cfg.a.values && cfg.b.values && cfg.a.cols != cfg.b.rows)
    throw py::value_error("a, b: A is [" + std::to_string(cfg.a.rows) + ", " + std::to_string(cfg.a.cols) +
                          "] and B [" + std::to_string(cfg.b.rows) + ", " + std::to_string(cfg.b.cols) +
                          "]: A's columns must equal B's rows (K)");
  if (cfg.a.values) {
    cfg.m = cfg.a.rows;
    cfg.k = cfg.a.cols;
  }
  if (cfg.b.values) cfg.n = cfg.b.cols;
  if (const auto pr = gemmOperandProblem(cfg, cfg.m, cfg.k, cfg.n)) throw py::value_error(pr->key + ": " + pr->why);
  if (c_given) {
    auto ca = requireArray<float>(c, "c", "float32 values [M, N]");
    cfg.c_source.enabled = true;
    cfg.c_source.values = std::make_shared<const std::vector<float>>(ca.data(), ca.data() + ca.size());
    cfg.gemm.beta = float(*beta);
    if (ca.ndim() != 2 || (cfg.a.values && cfg.b.values && (ca.shape(0) != cfg.m || ca.shape(1) != cfg.n)))
      throw py::value_error("c: shape " + shapeText(ca) + " but D = A·B is (" + std::to_string(cfg.m) + ", " +
                            std::to_string(cfg.n) + ")");
  }
  if (!bias.is_none()) {
    auto ba = requireArray<float>(bias, "bias", "float32 values [N]");
    if (ba.ndim() != 1) throw py::value_error("bias: expected a 1-D array [N], got shape " + shapeText(ba));
    cfg.bias_source.enabled = true;
    cfg.bias_source.values = std::make_shared<const std::vector<float>>(ba.data(), ba.data() + ba.size());
  }
  call.cfg = std::move(cfg);
  return call;
}

/// What gemm() returns (fp8lab.GemmResult).
struct PyGemmResult {
  py::object d, d_codes, reference, quantized_exact;
  py::dict errors;
  py::object a, b;
  py::dict metrics, attrs;
  std::string output;
  float output_scale = 1;
  py::object check; // dict or None
  std::vector<std::string> warnings;
};

py::object takeDataset(Run& run, const std::string& path) {
  auto it = run.datasets.find(path);
  if (it == run.datasets.end()) return py::none();
  py::array a = datasetToNumpy(std::move(it->second));
  run.datasets.erase(it);
  return a;
}

py::dict elementToPy(const ElementIndex& e) {
  py::dict d;
  d["row"] = e.row;
  d["col"] = e.col;
  return d;
}

py::dict comparisonToPy(const OutputComparison& c) {
  py::dict d;
  d["elements"] = c.elements;
  d["identical"] = c.identical;
  d["differing"] = c.differing;
  d["identical_share"] = c.identicalShare();
  d["max_ulps"] = c.max_ulps;
  d["median_ulps"] = c.median_ulps;
  d["mean_ulps"] = c.mean_ulps;
  d["max_abs_diff"] = c.max_abs_diff;
  d["sqnr_db"] = c.sqnr_db;
  d["calc_diff"] = c.calc_diff;
  d["nan_mismatches"] = c.nan_mismatches;
  d["inf_mismatches"] = c.inf_mismatches;
  d["not_representable"] = c.not_representable;
  d["outside_tolerance"] = c.outside_tolerance;
  py::dict w = elementToPy(c.worst);
  w["observed"] = c.worst_observed;
  w["reference"] = c.worst_model;
  w["ulps"] = c.worst_ulps;
  d["worst"] = w;
  py::dict f = elementToPy(c.first);
  f["observed"] = c.first_observed;
  f["reference"] = c.first_model;
  d["first"] = f;
  return d;
}

py::dict checkToPy(const KernelCheckResult& r) {
  py::dict d;
  d["passed"] = r.verdict.passed;
  d["line"] = r.verdict.line;
  d["failures"] = r.verdict.failures;
  d["reference"] = r.reference.name();
  d["comparison"] = comparisonToPy(r.comparison);
  if (r.fitted) {
    py::dict f;
    f["best"] = r.fit.best.model.name();
    f["best_preset"] = r.fit.best.model.preset;
    f["best_comparison"] = comparisonToPy(r.fit.best.comparison);
    if (r.fit.has_runner_up) {
      f["runner_up"] = r.fit.runner_up.model.name();
      f["margin_points"] = r.fit.margin_points;
    } else {
      f["runner_up"] = py::none();
    }
    f["verdict"] = r.fit.verdict;
    f["warning"] = r.fit.warning;
    f["equivalent"] = r.fit.equivalent_summary;
    f["candidates"] = r.fit.candidates;
    f["explained_within_1ulp"] = r.fit.explained_within_1ulp;
    d["fit"] = f;
  } else {
    d["fit"] = py::none();
  }
  return d;
}

PyGemmResult runGemm(py::handle a, py::handle b, py::object observed, py::dict kw, const py::dict& check_kw) {
  const bool check = !observed.is_none();
  GemmCall call = gemmCall(a, b, kw, check);
  GemmExperimentConfig& cfg = call.cfg;
  if (check) {
    Json o = Json::object();
    o["observed"] = "<numpy array>";
    Json ck = Json::object();
    for (auto item : check_kw) {
      if (item.second.is_none()) continue;
      const std::string key = item.first.cast<std::string>();
      if (py::isinstance<py::bool_>(item.second))
        ck[key] = item.second.cast<bool>();
      else if (py::isinstance<py::str>(item.second))
        ck[key] = item.second.cast<std::string>();
      else if (py::isinstance<py::int_>(item.second))
        ck[key] = item.second.cast<int64_t>();
      else
        ck[key] = item.second.cast<double>();
    }
    o["check"] = ck;
    ConfigReader r;
    if (!parseKernelCheck(o, ConfigPath{}, &cfg, r)) throw py::value_error(r.error());
    Dataset d;
    py::array obs = py::reinterpret_borrow<py::array>(observed);
    if (!py::isinstance<py::array>(observed))
      throw py::type_error("observed: expected a numpy array (float32 / float16 / float64 values, or uint8 FP8 codes)");
    if (obs.dtype().is(py::dtype::of<float>()) || obs.dtype().is(py::dtype("float16"))) {
      auto f = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(obs);
      d.dtype = DType::Float32;
      d.f32.assign(f.data(), f.data() + f.size());
    } else if (obs.dtype().is(py::dtype::of<double>())) {
      auto f = py::array_t<double, py::array::c_style>::ensure(obs);
      d.dtype = DType::Float64;
      d.f64.assign(f.data(), f.data() + f.size());
    } else if (obs.dtype().is(py::dtype::of<uint8_t>())) {
      auto f = py::array_t<uint8_t, py::array::c_style>::ensure(obs);
      d.dtype = DType::UInt8;
      d.u8.assign(f.data(), f.data() + f.size());
    } else {
      throw py::type_error("observed: expected float32, float16 or float64 values or uint8 FP8 codes, got dtype " +
                           dtypeName(obs));
    }
    d.shape.assign(obs.shape(), obs.shape() + obs.ndim());
    cfg.check.observed_data = std::make_shared<const Dataset>(std::move(d));
  }
  if (std::string why; !isValidRunId(call.id, &why)) throw py::value_error("id: " + why);
  Result<Run> res;
  GemmRunDetails det;
  {
    py::gil_scoped_release nogil;
    auto backend = makeCpuGemmBackend();
    res = runGemmExperimentRun(cfg, gemmConfigJson(cfg, call.id).dump(2), call.id, *backend, {}, &det);
  }
  raiseIfError(res, "gemm: ");
  PyGemmResult out;
  Run& run = res.value;
  for (const Issue& i : res.issues)
    if (i.severity != Severity::Info) out.warnings.push_back(i.toString());
  out.d = takeDataset(run, layout::kOutputD);
  out.d_codes = takeDataset(run, layout::kOutputDCodes);
  out.reference = takeDataset(run, layout::kReferenceD);
  out.quantized_exact = takeDataset(run, layout::kReferenceDQuantizedExact);
  out.errors["quantization"] = errorMetricsToPy(det.quantization);
  out.errors["accumulation"] = errorMetricsToPy(det.accumulation);
  out.errors["total"] = errorMetricsToPy(det.total);
  for (const char* op : {"A", "B"}) {
    auto q = run.getQuantized(layout::quantized(op));
    py::object v = py::none();
    if (q.ok()) v = py::cast(PyQuantized{std::move(q.value), {}, {}});
    (std::string(op) == "A" ? out.a : out.b) = v;
  }
  out.metrics = metricsToPy(run.metrics);
  out.attrs = attrsToPy(run.attrs);
  out.output = toString(cfg.gemm.output);
  out.output_scale = det.output_quant_scale;
  out.check = det.check ? py::object(checkToPy(*det.check)) : py::none();
  return out;
}

// ---- sessions ----------------------------------------------------------------------------------

/// An open session file (fp8lab.Session). Calls are serialised (one SessionReader, one thread at a
/// time) and run without the GIL.
class PySession {
public:
  explicit PySession(const std::string& path) : path_(path) {
    Result<std::unique_ptr<SessionReader>> r;
    {
      py::gil_scoped_release nogil;
      r = SessionReader::open(path);
    }
    raiseIfError(r, "");
    rd_ = std::move(r.value);
    for (const Issue& i : r.issues)
      if (i.severity == Severity::Warning) warnings_.push_back(i.toString());
  }
  const std::string& path() const { return path_; }
  std::vector<std::string> runIds() const {
    live();
    std::vector<std::string> ids;
    for (const RunInfo& r : rd_->info().runs) ids.push_back(r.id);
    return ids;
  }
  py::dict run(const std::string& id) const {
    live();
    const RunInfo* r = rd_->info().find(id);
    if (!r) throw py::key_error("no run '" + id + "' in " + path_);
    py::dict d;
    d["id"] = r->id;
    d["type"] = r->type;
    d["seed"] = r->seed;
    d["backend"] = r->backend;
    d["device"] = r->device;
    d["created_utc"] = r->created_utc;
    d["config"] = r->config_json;
    d["attrs"] = attrsToPy(r->attrs);
    d["metrics"] = metricsToPy(r->metrics);
    py::list ds;
    for (const DatasetInfo& x : r->datasets) ds.append(x.path);
    d["datasets"] = ds;
    return d;
  }
  py::array read(const std::string& id, const std::string& dataset) {
    live();
    Result<Dataset> r;
    {
      py::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(m_);
      r = rd_->read(id, dataset);
    }
    if (!r.ok()) {
      if (!rd_->info().find(id)) throw py::key_error("no run '" + id + "' in " + path_);
      throw py::key_error(r.errors());
    }
    return datasetToNumpy(std::move(r.value));
  }
  const std::vector<std::string>& warnings() const { return warnings_; }
  /// Releases the file (later calls raise ValueError).
  void close() {
    std::lock_guard<std::mutex> lock(m_);
    rd_.reset();
  }
  bool closed() const { return !rd_; }

private:
  void live() const {
    if (!rd_) throw py::value_error("the session " + path_ + " is closed");
  }
  std::string path_;
  std::unique_ptr<SessionReader> rd_;
  std::mutex m_;
  std::vector<std::string> warnings_;
};

struct PyRerun {
  py::object d;
  bool identical = false;
  std::vector<std::string> differences;
  int datasets = 0, metrics = 0;
  std::string report;
};

PyRerun rerun(const std::string& path, const std::string& run_id, int threads) {
  Result<std::unique_ptr<SessionReader>> rd;
  std::optional<RerunResult> rr;
  std::string err, report;
  Result<Run> stored;
  {
    py::gil_scoped_release nogil;
    rd = SessionReader::open(path);
    if (rd.ok()) {
      stored = rd.value->readRun(run_id);
      if (stored.ok()) {
        rr = rerunStoredRun(stored.value, threads, {}, &err);
        if (rr) report = rerunReportText(stored.value, *rr);
      }
    }
  }
  raiseIfError(rd, "");
  if (!stored.ok()) {
    if (!rd.value->info().find(run_id)) throw py::key_error("no run '" + run_id + "' in " + path);
    raiseIfError(stored, "");
  }
  if (!rr) throw py::value_error(err);
  PyRerun out;
  out.identical = rr->differences.empty();
  out.differences = rr->differences;
  out.datasets = rr->datasets;
  out.metrics = rr->metrics;
  out.report = report;
  out.d = takeDataset(rr->fresh, layout::kOutputD);
  return out;
}

// ---- observed training (fp8lab.torch) ----------------------------------------------------------

/// Why a session cannot be written at `path` with run id `run_id`, checked before a long run
/// records anything: the id's rules, an existing directory this user may write, and an existing
/// file that is an FP8 Lab session this user may write (appendRuns never replaces anything else).
void checkSessionOutput(const std::string& path, const std::string& run_id) {
  if (std::string why; !isValidRunId(run_id, &why)) throw py::value_error("run_id: " + why);
  if (path.empty()) throw py::value_error("path: empty");
  std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
  if (path.find('/') == std::string::npos) dir = ".";
  if (dir.empty()) dir = "/";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw py::value_error("path: the directory " + dir + " does not exist");
  if (::access(dir.c_str(), W_OK) != 0) throw py::value_error("path: the directory " + dir + " is not writable");
  if (::stat(path.c_str(), &st) == 0) {
    if (!hasHdf5Signature(path))
      throw py::value_error("path: " + path + " exists and is not an FP8 Lab session (nothing is written over it)");
    Result<std::unique_ptr<SessionReader>> r;
    {
      py::gil_scoped_release nogil;
      r = SessionReader::open(path);
    }
    if (!r.ok()) throw py::value_error("path: " + path + " is not a session this can add a run to: " + r.errors());
    if (::access(path.c_str(), W_OK) != 0) throw py::value_error("path: " + path + " is not writable");
  }
}

SiteOperand operandOf(const std::string& s) {
  if (s == "input") return SiteOperand::Input;
  if (s == "kernel") return SiteOperand::Kernel;
  if (s == "output_grad") return SiteOperand::OutputGrad;
  throw py::value_error("operand: expected 'input', 'kernel' or 'output_grad', got '" + s + "'");
}

class PyObservedRun {
public:
  PyObservedRun(const std::vector<std::tuple<std::string, int64_t, int64_t>>& sites, const std::string& recipe,
                int history_len, int margin, const std::string& what_if, int what_if_every, int map_every,
                bool block_stats, const std::string& on_nonfinite, uint64_t seed, int threads, int64_t every,
                const std::string& label, const std::string& model, int64_t parameters) {
    std::string why;
    ObservedRunConfig cfg;
    auto r = parseObservedRecipe(recipe, history_len, margin, &why);
    if (!r) throw py::value_error("recipe: " + why);
    cfg.recipe = *r;
    if (!what_if.empty()) {
      auto w = parseWhatIfList(what_if, &why);
      if (!w) throw py::value_error("what_if: " + why);
      cfg.diagnostics.what_if = std::move(*w);
    }
    cfg.diagnostics.what_if_every = what_if_every;
    cfg.diagnostics.map_every = map_every;
    cfg.diagnostics.block_stats = block_stats;
    if (!parseNonFinitePolicy(on_nonfinite, &cfg.on_nonfinite))
      throw py::value_error("on_nonfinite: expected 'continue' or 'off', got '" + on_nonfinite + "'");
    if (cfg.on_nonfinite == NonFinitePolicy::Stop) cfg.on_nonfinite = NonFinitePolicy::Continue;
    if (every < 1) throw py::value_error("every: expected ≥ 1, got " + std::to_string(every));
    cfg.seed = seed;
    cfg.threads = threads;
    cfg.every = every;
    cfg.label = label;
    cfg.model = model;
    cfg.parameters = parameters;
    std::vector<ObservedSite> s;
    for (const auto& [p, in, out] : sites) s.push_back({p, in, out});
    try {
      run_ = std::make_unique<ObservedRun>(std::move(cfg), std::move(s));
    } catch (const std::invalid_argument& e) {
      throw py::value_error(e.what());
    }
  }
  void beginStep(int64_t step) {
    live();
    run_->beginStep(step);
  }
  void observe(size_t site, const std::string& operand, py::object x, bool transposed) {
    live();
    const SiteOperand o = operandOf(operand);
    auto a = requireArray<float>(x, "x", "float32 values");
    requireRank2(a, "x", false);
    py::gil_scoped_release nogil;
    try {
      run_->observe(site, o, a.data(), a.shape(0), a.shape(1), transposed);
    } catch (const std::invalid_argument& e) {
      py::gil_scoped_acquire gil;
      throw py::value_error(e.what());
    }
  }
  void noteRepeatedCall() {
    live();
    run_->noteRepeatedCall();
  }
  void endStep() {
    live();
    py::gil_scoped_release nogil;
    run_->endStep();
  }
  bool inStep() const { return run_ && run_->inStep(); }
  void logLoss(int64_t step, double loss) {
    live();
    run_->logLoss(step, loss);
  }
  void logValidation(int64_t step, double loss) {
    live();
    run_->logValidation(step, loss);
  }
  int64_t recordedSteps() const { return run_ ? run_->recordedSteps() : 0; }
  /// Writes the run into the session at `path` (appended atomically; an id in use gets "-2", ...);
  /// returns the id stored.
  std::string finish(const std::string& path, const std::string& run_id, const std::string& config_json,
                     bool cancelled) {
    if (!pending_) {
      live();
      if (std::string why; !isValidRunId(run_id, &why)) throw py::value_error("run_id: " + why);
      py::gil_scoped_release nogil;
      pending_ = run_->finish(run_id, config_json, cancelled);
      run_.reset();
    }
    // The run stays here until it is written: a failed save can be tried again (another path).
    Status st;
    std::vector<std::string> ids;
    {
      py::gil_scoped_release nogil;
      WriteOptions wo;
      wo.on_conflict = WriteOptions::OnConflict::Rename;
      st = appendRuns(path, {*pending_}, wo, &ids);
    }
    raiseIfError(st, "saving the observed run (it is kept: close() again, after setting .path, retries): ");
    const std::string id = ids.empty() ? pending_->id : ids.front();
    pending_.reset();
    return id;
  }

private:
  void live() const {
    if (!run_) throw py::value_error("the observed run is closed");
  }
  std::unique_ptr<ObservedRun> run_;
  std::optional<Run> pending_; ///< the finished run until it is written
};

} // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "FP8 Lab's bit-exact core (native part of the fp8lab package; use `import fp8lab`).";
  m.attr("version") = FP8LAB_VERSION;

  m.def("formats", &formatList, "Every named format: name, bits, max_finite, description.");
  m.def("encode", &encodeArray, py::arg("x"), py::arg("format"), py::arg("rounding") = "rne",
        py::arg("saturate") = true, py::arg("specials") = "cuda", py::arg("scale") = 1.0,
        py::arg("scale_op") = "multiply", py::arg("seed") = 0, py::arg("stochastic_bits") = 16);
  m.def("decode", &decodeArray, py::arg("codes"), py::arg("format"));
  m.def("table", &formatTable, py::arg("format"));

  // The arrays of a QuantizedTensor are views of its vectors (no copy) that keep it alive.
  auto view = [](py::object self, auto* data, int64_t rows, int64_t cols) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(data)>>;
    py::array_t<T> a({py::ssize_t(rows), py::ssize_t(cols)}, data, self);
    a.attr("flags").attr("writeable") = false;
    return a;
  };
  py::class_<PyQuantized>(m, "QuantizedTensor")
      .def_property_readonly("codes",
                             [view](py::object self) {
                               const PyQuantized& p = self.cast<const PyQuantized&>();
                               return view(self, p.q.codes.data(), p.q.rows, p.q.cols);
                             })
      .def_property_readonly(
          "dequant_scales",
          [view](py::object self) -> py::object {
            const PyQuantized& p = self.cast<const PyQuantized&>();
            if (p.q.tensor_scale.kind == TensorScale::Kind::None)
              return view(self, p.q.dequant_scales.data(), p.q.blockRows(), p.q.blockCols());
            // Two-level (NVFP4): each block's factor, its E4M3 scale times the tensor level, as the CLI's
            // dequant_scales (block_scales has the E4M3 values).
            std::vector<float> f(p.q.dequant_scales.size());
            for (size_t i = 0; i < f.size(); ++i) f[i] = p.q.tensor_scale.blockFactor(p.q.dequant_scales[i]);
            py::array_t<float> a = owned(std::move(f), {py::ssize_t(p.q.blockRows()), py::ssize_t(p.q.blockCols())});
            a.attr("flags").attr("writeable") = false;
            return a;
          })
      .def_property_readonly("block_scales",
                             [view](py::object self) -> py::object {
                               const PyQuantized& p = self.cast<const PyQuantized&>();
                               if (p.q.tensor_scale.kind == TensorScale::Kind::None) return py::none();
                               return view(self, p.q.dequant_scales.data(), p.q.blockRows(), p.q.blockCols());
                             })
      .def_property_readonly("quant_scales",
                             [view](py::object self) -> py::object {
                               const PyQuantized& p = self.cast<const PyQuantized&>();
                               if (p.q.quant_scales.empty()) return py::none();
                               return view(self, p.q.quant_scales.data(), p.q.blockRows(), p.q.blockCols());
                             })
      .def_property_readonly("scale_codes",
                             [view](py::object self) -> py::object {
                               const PyQuantized& p = self.cast<const PyQuantized&>();
                               if (p.q.scale_codes.empty()) return py::none();
                               return view(self, p.q.scale_codes.data(), p.q.blockRows(), p.q.blockCols());
                             })
      .def_property_readonly("scale_format",
                             [](const PyQuantized& p) -> std::string {
                               return p.q.scale_codes.empty() ? "float32" : p.q.scaleCodeFormat().name();
                             })
      .def_property_readonly("format", [](const PyQuantized& p) { return p.q.format ? p.q.format->name() : ""; })
      .def_property_readonly("shape", [](const PyQuantized& p) { return py::make_tuple(p.q.rows, p.q.cols); })
      .def_property_readonly("block",
                             [](const PyQuantized& p) { return py::make_tuple(p.q.block.rows, p.q.block.cols); })
      .def_property_readonly("strategy", [](const PyQuantized& p) { return p.q.strategy; })
      .def_property_readonly(
          "scale_op",
          [](const PyQuantized& p) { return p.q.scale_op == Format::ScaleOp::Divide ? "divide" : "multiply"; })
      .def_property_readonly("tensor_scale",
                             [](const PyQuantized& p) -> py::object {
                               const TensorScale& t = p.q.tensor_scale;
                               if (t.kind == TensorScale::Kind::None) return py::none();
                               py::dict d;
                               const bool te = t.kind == TensorScale::Kind::TeAmax;
                               d["kind"] = te ? "te_amax" : "torchao_per_tensor_scale";
                               d["amax"] = t.amax;
                               d["value"] = t.value;
                               d["convention"] =
                                   te ? "quant multiplier S_enc = fp4_fp8_max / amax" : "dequant factor amax / 2688";
                               if (te) d["fp4_fp8_max"] = t.fp4_fp8_max;
                               d["tensor_factor"] = t.tensorFactor();
                               return d;
                             })
      .def_property_readonly("stats", [](const PyQuantized& p) { return quantizeStatsToPy(p.q.stats); })
      .def_property_readonly("rotated",
                             [view](py::object self) -> py::object {
                               const PyQuantized& p = self.cast<const PyQuantized&>();
                               if (p.rotated.empty()) return py::none();
                               return view(self, p.rotated.data(), p.q.rows, p.q.cols);
                             })
      .def_property_readonly("note", [](const PyQuantized& p) { return p.note; })
      .def("dequantize", [](const PyQuantized& p) {
        std::vector<float> v;
        {
          py::gil_scoped_release nogil;
          v = p.q.dequantize();
        }
        return owned(std::move(v), {py::ssize_t(p.q.rows), py::ssize_t(p.q.cols)});
      });

  m.def("quantize", &quantizeArray, py::arg("x"), py::arg("scaling") = "te_current", py::arg("format") = "",
        py::arg("axis") = "cols", py::arg("rounding") = "rne", py::arg("seed") = 0, py::arg("saturate") = true,
        py::arg("block") = py::none(), py::arg("pow2") = py::none(), py::arg("amax_epsilon") = py::none(),
        py::arg("margin") = py::none(), py::arg("history_len") = py::none(), py::arg("algo") = py::none(),
        py::arg("amax_history") = py::none());

  py::class_<PyGemmResult>(m, "GemmResult")
      .def_readonly("d", &PyGemmResult::d)
      .def_readonly("d_codes", &PyGemmResult::d_codes)
      .def_readonly("reference", &PyGemmResult::reference)
      .def_readonly("quantized_exact", &PyGemmResult::quantized_exact)
      .def_readonly("errors", &PyGemmResult::errors)
      .def_readonly("a", &PyGemmResult::a)
      .def_readonly("b", &PyGemmResult::b)
      .def_readonly("metrics", &PyGemmResult::metrics)
      .def_readonly("attrs", &PyGemmResult::attrs)
      .def_readonly("output", &PyGemmResult::output)
      .def_readonly("output_scale", &PyGemmResult::output_scale)
      .def_readonly("check", &PyGemmResult::check)
      .def_readonly("warnings", &PyGemmResult::warnings);

  m.def(
      "gemm",
      [](py::object a, py::object b, py::object observed, py::dict check, py::kwargs kw) {
        return runGemm(a, b, observed, kw, check);
      },
      py::arg("a"), py::arg("b"), py::arg("observed") = py::none(), py::arg("check") = py::dict());

  m.def("gemm_keywords", [] {
    py::list l;
    for (const ParamSpec& s : paramSchema())
      if (s.usedBy("gemm") && !s.flag.empty()) {
        std::string k = s.flag;
        for (char& c : k)
          if (c == '-') c = '_';
        if (k == "a_format") k = "format_a";
        if (k == "b_format") k = "format_b";
        if (k == "b_scaling") k = "scaling_b";
        if (isOperandKeyword(k) || k == "backend") continue;
        l.append(py::make_tuple(k, paramHelp(s, true)));
      }
    return l;
  });

  py::class_<PySession>(m, "Session")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def_property_readonly("path", &PySession::path)
      .def_property_readonly("run_ids", &PySession::runIds)
      .def_property_readonly("warnings", &PySession::warnings)
      .def("run", &PySession::run, py::arg("run_id"))
      .def("read", &PySession::read, py::arg("run_id"), py::arg("dataset"))
      .def("close", &PySession::close)
      .def_property_readonly("closed", &PySession::closed);

  py::class_<PyRerun>(m, "RerunResult")
      .def_readonly("d", &PyRerun::d)
      .def_readonly("identical", &PyRerun::identical)
      .def_readonly("differences", &PyRerun::differences)
      .def_readonly("datasets", &PyRerun::datasets)
      .def_readonly("metrics", &PyRerun::metrics)
      .def_readonly("report", &PyRerun::report);
  m.def("rerun", &rerun, py::arg("path"), py::arg("run_id"), py::arg("threads") = 0);
  m.def("check_session_output", &checkSessionOutput, py::arg("path"), py::arg("run_id"));

  py::class_<PyObservedRun>(m, "ObservedRun")
      .def(py::init<const std::vector<std::tuple<std::string, int64_t, int64_t>>&, const std::string&, int, int,
                    const std::string&, int, int, bool, const std::string&, uint64_t, int, int64_t, const std::string&,
                    const std::string&, int64_t>(),
           py::arg("sites"), py::arg("recipe"), py::arg("history_len") = 1024, py::arg("margin") = 0,
           py::arg("what_if") = "", py::arg("what_if_every") = 50, py::arg("map_every") = 250,
           py::arg("block_stats") = true, py::arg("on_nonfinite") = "continue", py::arg("seed") = 1,
           py::arg("threads") = 0, py::arg("every") = 1, py::arg("label") = "", py::arg("model") = "",
           py::arg("parameters") = 0)
      .def("begin_step", &PyObservedRun::beginStep, py::arg("step"))
      .def("observe", &PyObservedRun::observe, py::arg("site"), py::arg("operand"), py::arg("x"),
           py::arg("transposed") = false)
      .def("end_step", &PyObservedRun::endStep)
      .def("note_repeated_call", &PyObservedRun::noteRepeatedCall)
      .def_property_readonly("in_step", &PyObservedRun::inStep)
      .def_property_readonly("recorded_steps", &PyObservedRun::recordedSteps)
      .def("log_loss", &PyObservedRun::logLoss, py::arg("step"), py::arg("loss"))
      .def("log_validation", &PyObservedRun::logValidation, py::arg("step"), py::arg("loss"))
      .def("finish", &PyObservedRun::finish, py::arg("path"), py::arg("run_id"), py::arg("config_json"),
           py::arg("cancelled") = false);
}
