// FP8 Lab — internal HDF5 helpers (see hdf5_util.h).
#include "session/hdf5_util.h"

#include "common/worker_pool.h"

#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>

namespace fp8lab::h5 {

void quietErrors() {
  static std::once_flag once;
  std::call_once(once, [] {
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
  // Also per call: in thread-safe builds the setting is per thread.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

namespace {
herr_t walkCb(unsigned n, const H5E_error2_t* err, void* data) {
  auto* s = static_cast<std::string*>(data);
  if (!err) return 0;
  std::string line = err->func_name ? err->func_name : "";
  if (err->desc && *err->desc) {
    if (!line.empty()) line += ": ";
    line += err->desc;
  }
  if (line.empty()) return 0;
  if (!s->empty()) s->append("; ");
  s->append(line);
  (void)n;
  return 0;
}
} // namespace

std::string errorText() {
  std::string s;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walkCb, &s);
  H5Eclear2(H5E_DEFAULT);
  return s;
}

static hid_t utf8StringType() {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

bool writeAttr(hid_t obj, const std::string& name, const AttrValue& v) {
  if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
  Handle sp = space(H5Screate(H5S_SCALAR));
  if (auto s = std::get_if<std::string>(&v)) {
    Handle t = type(utf8StringType());
    Handle a = attr(H5Acreate2(obj, name.c_str(), t, sp, H5P_DEFAULT, H5P_DEFAULT));
    if (!a.valid()) return false;
    const char* p = s->c_str();
    return H5Awrite(a, t, &p) >= 0;
  }
  if (auto d = std::get_if<double>(&v)) {
    Handle a = attr(H5Acreate2(obj, name.c_str(), H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT));
    return a.valid() && H5Awrite(a, H5T_NATIVE_DOUBLE, d) >= 0;
  }
  const int64_t i = std::get<int64_t>(v);
  Handle a = attr(H5Acreate2(obj, name.c_str(), H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT));
  return a.valid() && H5Awrite(a, H5T_NATIVE_INT64, &i) >= 0;
}

bool writeAttrU64(hid_t obj, const std::string& name, uint64_t v) {
  if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
  Handle sp = space(H5Screate(H5S_SCALAR));
  Handle a = attr(H5Acreate2(obj, name.c_str(), H5T_STD_U64LE, sp, H5P_DEFAULT, H5P_DEFAULT));
  return a.valid() && H5Awrite(a, H5T_NATIVE_UINT64, &v) >= 0;
}

bool hasAttr(hid_t obj, const std::string& name) {
  return H5Aexists(obj, name.c_str()) > 0;
}

namespace {

bool readStringAttr(hid_t a, hid_t ftype, std::string* out) {
  if (H5Tis_variable_str(ftype) > 0) {
    Handle mt = type(utf8StringType());
    H5Tset_cset(mt, H5Tget_cset(ftype));
    char* p = nullptr;
    if (H5Aread(a, mt, &p) < 0) return false;
    *out = p ? p : "";
    if (p) H5free_memory(p);
    return true;
  }
  const size_t n = H5Tget_size(ftype);
  if (n == 0 || n > (size_t(1) << 26)) return false;
  Handle mt = type(H5Tcopy(H5T_C_S1));
  H5Tset_size(mt, n);
  H5Tset_strpad(mt, H5T_STR_NULLPAD);
  std::string buf(n, '\0');
  if (H5Aread(a, mt, buf.data()) < 0) return false;
  buf.resize(std::strlen(buf.c_str()));
  *out = buf;
  return true;
}

struct AttrIterData {
  Attributes* out;
};

herr_t attrCb(hid_t loc, const char* name, const H5A_info_t*, void* data) {
  auto* d = static_cast<AttrIterData*>(data);
  Handle a = attr(H5Aopen(loc, name, H5P_DEFAULT));
  if (!a.valid()) return 0;
  Handle sp = space(H5Aget_space(a));
  const hssize_t n = H5Sget_simple_extent_npoints(sp);
  if (n != 1) return 0;
  Handle t = type(H5Aget_type(a));
  switch (H5Tget_class(t)) {
  case H5T_STRING: {
    std::string s;
    if (readStringAttr(a, t, &s)) (*d->out)[name] = s;
    break;
  }
  case H5T_FLOAT: {
    double v = 0;
    if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0) (*d->out)[name] = v;
    break;
  }
  case H5T_INTEGER: {
    if (H5Tget_sign(t) == H5T_SGN_NONE && H5Tget_size(t) >= 8) {
      uint64_t u = 0;
      if (H5Aread(a, H5T_NATIVE_UINT64, &u) >= 0 && u <= uint64_t(std::numeric_limits<int64_t>::max()))
        (*d->out)[name] = static_cast<int64_t>(u);
    } else {
      int64_t v = 0;
      if (H5Aread(a, H5T_NATIVE_INT64, &v) >= 0) (*d->out)[name] = v;
    }
    break;
  }
  default:
    break;
  }
  H5Eclear2(H5E_DEFAULT);
  return 0;
}

} // namespace

Attributes readAttrs(hid_t obj) {
  Attributes out;
  AttrIterData d{&out};
  hsize_t idx = 0;
  H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, attrCb, &d);
  H5Eclear2(H5E_DEFAULT);
  return out;
}

bool readAttrU64(hid_t obj, const std::string& name, uint64_t* v) {
  if (!hasAttr(obj, name)) return false;
  Handle a = attr(H5Aopen(obj, name.c_str(), H5P_DEFAULT));
  if (!a.valid()) return false;
  Handle t = type(H5Aget_type(a));
  if (H5Tget_class(t) != H5T_INTEGER) return false;
  Handle sp = space(H5Aget_space(a));
  if (H5Sget_simple_extent_npoints(sp) != 1) return false;
  return H5Aread(a, H5T_NATIVE_UINT64, v) >= 0;
}

namespace {
herr_t linkCb(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}
} // namespace

std::vector<std::string> linkNames(hid_t group) {
  std::vector<std::string> names;
  hsize_t idx = 0;
  H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &idx, linkCb, &names);
  H5Eclear2(H5E_DEFAULT);
  return names;
}

bool pathExists(hid_t loc, const std::string& path) {
  std::string prefix;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    const std::string part = path.substr(pos, next - pos);
    if (!part.empty()) {
      prefix += (prefix.empty() ? "" : "/") + part;
      if (H5Lexists(loc, prefix.c_str(), H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return false;
      }
    }
    pos = next + 1;
  }
  return !prefix.empty();
}

hid_t fileType(DType t) {
  switch (t) {
  case DType::Float32:
    return H5T_IEEE_F32LE;
  case DType::Float64:
    return H5T_IEEE_F64LE;
  case DType::UInt8:
    return H5T_STD_U8LE;
  case DType::Int64:
    return H5T_STD_I64LE;
  }
  return H5T_IEEE_F32LE;
}

hid_t memType(DType t) {
  switch (t) {
  case DType::Float32:
    return H5T_NATIVE_FLOAT;
  case DType::Float64:
    return H5T_NATIVE_DOUBLE;
  case DType::UInt8:
    return H5T_NATIVE_UINT8;
  case DType::Int64:
    return H5T_NATIVE_INT64;
  }
  return H5T_NATIVE_FLOAT;
}

bool dtypeOf(hid_t t, DType* out) {
  const H5T_class_t c = H5Tget_class(t);
  const size_t sz = H5Tget_size(t);
  if (c == H5T_FLOAT) {
    if (sz == 4) {
      *out = DType::Float32;
      return true;
    }
    if (sz == 8) {
      *out = DType::Float64;
      return true;
    }
    return false;
  }
  if (c == H5T_INTEGER) {
    const bool sgn = H5Tget_sign(t) != H5T_SGN_NONE;
    if (sz == 1 && !sgn) {
      *out = DType::UInt8;
      return true;
    }
    if (sz == 8 && sgn) {
      *out = DType::Int64;
      return true;
    }
  }
  return false;
}

ReadSize checkReadSize(hid_t ds, int64_t bytes, const std::string& shape_text, std::string* why) {
  auto gib = [](int64_t b) {
    char t[32];
    std::snprintf(t, sizeof t, "%.2f GiB", double(b) / double(int64_t(1) << 30));
    return std::string(t);
  };
  const int64_t avail = availableMemoryBytes();
  if (avail > 0 && bytes > avail) {
    *why = "shape " + shape_text + " needs " + gib(bytes) + " of memory, " + gib(avail) + " is available";
    return ReadSize::TooLargeForMemory;
  }
  const int64_t stored = static_cast<int64_t>(H5Dget_storage_size(ds));
  if (bytes > (int64_t(256) << 20) && bytes / 1100 > stored) {
    *why = "shape " + shape_text + " declares " + gib(bytes) + " but the file stores only " + std::to_string(stored) +
           " bytes for it (more than 1100:1, beyond any real compression): a damaged or crafted header";
    return ReadSize::Implausible;
  }
  return ReadSize::Ok;
}

} // namespace fp8lab::h5
