// FP8 Lab — session reader: validation on open (no data read), whole / windowed / block-reduced
// reads of datasets. Layout: docs/session-format.md.
#include "session/hdf5_isolation.h"
#include "metrics/block_reduce.h"
#include "session/session_layout.h"
#include "session/hdf5_util.h"
#include "session/session.h"

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <tuple>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <limits>
#include <new>
#include <optional>

#include <fcntl.h>
#include <unistd.h>

namespace fp8lab {

namespace fs = std::filesystem;
using C = Issue::Code;
using W = Severity;
using namespace h5;

namespace {

/// Refuse reads that would need more memory than this (bytes): a crafted file may claim any size.
constexpr int64_t kMaxReadBytes = int64_t(1) << 36; // 64 GiB

std::string shapeText(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

struct VisitData {
  hid_t run;
  std::vector<std::string> datasets;
  std::vector<std::string> groups;
};

herr_t visitCb(hid_t, const char* name, const H5L_info_t* info, void* data) {
  auto* v = static_cast<VisitData*>(data);
  if (info->type != H5L_TYPE_HARD) return 0; // soft / external links are not part of the format
  Handle o = object(H5Oopen(v->run, name, H5P_DEFAULT));
  if (!o.valid()) {
    H5Eclear2(H5E_DEFAULT);
    return 0;
  }
  const H5I_type_t t = H5Iget_type(o);
  if (t == H5I_DATASET)
    v->datasets.emplace_back(name);
  else if (t == H5I_GROUP)
    v->groups.emplace_back(name);
  return 0;
}

} // namespace

struct SessionReader::Impl {
  std::string path;
  Handle file;
  SessionInfo info;

  const DatasetInfo* findInfo(const std::string& run_id, const std::string& ds, Status* st) const {
    const RunInfo* r = info.find(run_id);
    if (!r) {
      st->add(C::NotFound, path + "#/runs/" + run_id, "no such run (or it failed validation)");
      return nullptr;
    }
    for (const auto& d : r->datasets)
      if (d.path == ds) return &d;
    st->add(C::MissingDataset, path + "#/runs/" + run_id + "/" + ds, "no such dataset in this run");
    return nullptr;
  }

  void validateRun(const std::string& id, Status* st);
};

namespace {

/// The run's own attributes: type and config (strings) and seed (an integer) required, backend,
/// device, created_utc and app_version when present; each moves out of ri.attrs. False when a
/// required one is absent or of the wrong type (the run is skipped).
bool readRunAttributes(const Handle& g, RunInfo& ri, const std::string& where, Status* st) {
  bool bad = false;
  auto needString = [&](const char* name, std::string* out) {
    auto it = ri.attrs.find(name);
    if (it == ri.attrs.end()) {
      st->add(C::MissingAttribute, where, std::string("run attribute '") + name + "' is absent; run skipped",
              W::Warning);
      bad = true;
    } else if (auto s = std::get_if<std::string>(&it->second)) {
      *out = *s;
      ri.attrs.erase(it);
    } else {
      st->add(C::WrongType, where, std::string("run attribute '") + name + "' is not a string; run skipped",
              W::Warning);
      bad = true;
    }
  };
  needString("type", &ri.type);
  needString("config", &ri.config_json);
  if (!readAttrU64(g, "seed", &ri.seed)) {
    st->add(C::MissingAttribute, where, "run attribute 'seed' is absent or not an integer; run skipped", W::Warning);
    bad = true;
  }
  ri.attrs.erase("seed");
  auto optString = [&](const char* name, std::string* out) {
    if (auto s = attrString(ri.attrs, name)) {
      *out = *s;
      ri.attrs.erase(name);
    }
  };
  optString("backend", &ri.backend);
  optString("device", &ri.device);
  optString("created_utc", &ri.created_utc);
  optString("app_version", &ri.app_version);
  return !bad;
}

/// The run's metrics group: one numeric attribute per metric, with "<key>.units" and "<key>.meaning".
void readRunMetrics(const Handle& g, RunInfo& ri, const std::string& where, Status* st) {
  if (H5Lexists(g, "metrics", H5P_DEFAULT) > 0) {
    Handle m = group(H5Gopen2(g, "metrics", H5P_DEFAULT));
    if (m.valid()) {
      Attributes ma = readAttrs(m);
      for (const auto& [k, v] : ma) {
        if (k.find('.') != std::string::npos) continue;
        auto val = attrDouble(ma, k);
        if (!val) {
          st->add(C::WrongType, where + "/metrics", "metric '" + k + "' is not a number; ignored", W::Warning);
          continue;
        }
        ri.metrics[k] =
            Metric{*val, attrString(ma, k + ".units").value_or(""), attrString(ma, k + ".meaning").value_or("")};
      }
    } else {
      st->add(C::WrongType, where + "/metrics", "is not a group; metrics ignored", W::Warning);
    }
  } else {
    st->add(C::MissingGroup, where + "/metrics", "run has no metrics group", W::Warning);
  }
  H5Eclear2(H5E_DEFAULT);
}

/// Every dataset of the run (element type, rank 1..8, a shape its stored bytes can back) and the
/// attributes of its groups; a dataset that fails is left out with a warning. False when the run's
/// objects cannot be listed (the run is skipped).
bool readRunDatasets(const Handle& g, RunInfo& ri, const std::string& where, Status* st) {
  VisitData vd{g, {}, {}};
  if (H5Lvisit(g, H5_INDEX_NAME, H5_ITER_INC, visitCb, &vd) < 0) {
    st->add(C::Corrupt, where, "cannot list the run's objects (" + errorText() + "); run skipped", W::Warning);
    return false;
  }
  for (const auto& gp : vd.groups) {
    if (gp == "metrics") continue;
    Handle sg = group(H5Gopen2(g, gp.c_str(), H5P_DEFAULT));
    if (!sg.valid()) continue;
    Attributes a = readAttrs(sg);
    if (!a.empty()) ri.group_attrs[gp] = std::move(a);
  }
  for (const auto& dp : vd.datasets) {
    const std::string dwhere = where + "/" + dp;
    Handle ds = dataset(H5Dopen2(g, dp.c_str(), H5P_DEFAULT));
    if (!ds.valid()) {
      st->add(C::Corrupt, dwhere, "cannot open dataset (" + errorText() + "); left out", W::Warning);
      continue;
    }
    DatasetInfo di;
    di.path = dp;
    Handle t = type(H5Dget_type(ds));
    if (!dtypeOf(t, &di.dtype)) {
      st->add(C::WrongType, dwhere, "element type is not float32, float64, uint8 or int64; left out", W::Warning);
      continue;
    }
    Handle sp = space(H5Dget_space(ds));
    const int rank = H5Sget_simple_extent_ndims(sp);
    if (rank < 1 || rank > 8) {
      st->add(C::WrongShape, dwhere, "rank " + std::to_string(rank) + " (expected 1..8); left out", W::Warning);
      continue;
    }
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(sp, dims.data(), nullptr);
    di.shape.assign(dims.begin(), dims.end());
    // A header whose shape the stored bytes cannot back (above 256 MiB and 1100:1, beyond deflate's
    // 1032:1; chunks never written) is left out here, so no read of any kind — a whole read, a CSV
    // export streaming it in bands, a heatmap reducing it — spends hours producing fill values (a
    // 10^6 x 10^6 header would stream zeros without end).
    {
      int64_t bytes = int64_t(H5Tget_size(t));
      for (hsize_t x : dims)
        bytes = x != 0 && bytes > (int64_t(1) << 62) / int64_t(std::min<hsize_t>(x, hsize_t(1) << 62))
                    ? (int64_t(1) << 62)
                    : bytes * int64_t(x);
      const int64_t stored = static_cast<int64_t>(H5Dget_storage_size(ds));
      if (bytes > (int64_t(256) << 20) && bytes / 1100 > stored) {
        st->add(
            C::Corrupt, dwhere,
            "shape " + shapeText(di.shape) + " declares " + std::to_string(bytes >> 20) +
                " MiB but the file stores only " + std::to_string(stored) +
                " bytes for it (more than 1100:1, beyond any real compression): a damaged or crafted header; left out",
            W::Warning);
        continue;
      }
    }
    di.attrs = readAttrs(ds);
    Handle dcpl = plist(H5Dget_create_plist(ds));
    di.chunked = H5Pget_layout(dcpl) == H5D_CHUNKED;
    di.compressed = H5Pget_nfilters(dcpl) > 0;
    if (!di.attrs.count("units") || !di.attrs.count("meaning"))
      st->add(C::MissingAttribute, dwhere, "dataset lacks 'units' or 'meaning'", W::Info);
    ri.datasets.push_back(std::move(di));
  }
  std::sort(ri.datasets.begin(), ri.datasets.end(), [](auto& a, auto& b) { return a.path < b.path; });

  return true;
}

const std::vector<int64_t>* shapeOf(const RunInfo& ri, const std::string& p) {
  for (const auto& d : ri.datasets)
    if (d.path == p) return &d.shape;
  return nullptr;
}

/// Quantized tensors: codes [r, c] ↔ scales [ceil(r/br), ceil(c/bc)] ↔ dequantized [r, c]. False
/// when a scales or dequantized dataset contradicts its codes (the run is skipped).
bool checkQuantizedShapes(const RunInfo& ri, const std::string& where, Status* st) {
  bool bad = false;
  auto shapeOf = [&](const std::string& p) { return fp8lab::shapeOf(ri, p); };
  for (const auto& d : ri.datasets) {
    if (!d.path.ends_with("_codes") || d.path.ends_with("_scale_codes") || d.shape.size() != 2 ||
        !attrString(d.attrs, "format"))
      continue;
    const std::string prefix = d.path.substr(0, d.path.size() - 6);
    auto br = attrInt(d.attrs, "block_rows"), bc = attrInt(d.attrs, "block_cols");
    // The block shape is what relates codes to their scales; codes stored without a scales dataset
    // (output/D_codes: one scale_D, an attribute) need none, so codes without block attributes
    // there open without a warning.
    if (!shapeOf(prefix + "_scales") && !br && !bc) continue;
    if (!br || !bc || *br < 1 || *bc < 1) {
      st->add(C::MissingAttribute, where + "/" + d.path, "block_rows / block_cols absent or < 1", W::Warning);
      continue;
    }
    const std::vector<int64_t> want{(d.shape[0] + *br - 1) / *br, (d.shape[1] + *bc - 1) / *bc};
    if (auto s = shapeOf(prefix + "_scales"); s && *s != want) {
      st->add(C::WrongShape, where + "/" + prefix + "_scales",
              "expected " + shapeText(want) + " for codes " + shapeText(d.shape) + " in blocks of " +
                  std::to_string(*br) + "x" + std::to_string(*bc) + ", found " + shapeText(*s),
              W::Warning);
      bad = true;
    }
    if (auto s = shapeOf(prefix + "_dequantized"); s && *s != d.shape) {
      st->add(C::WrongShape, where + "/" + prefix + "_dequantized",
              "expected " + shapeText(d.shape) + " (same as the codes), found " + shapeText(*s), W::Warning);
      bad = true;
    }
  }
  return !bad;
}

/// GEMM runs: output/D is required; A [M,K] and B [K,N] when stored (store_inputs may be off);
/// D, the references and the error maps [M,N]. False when one contradicts them (the run is skipped).
bool checkGemmShapes(const RunInfo& ri, const std::string& where, Status* st) {
  bool bad = false;
  auto shapeOf = [&](const std::string& p) { return fp8lab::shapeOf(ri, p); };
  const auto* a = shapeOf(layout::inputs("A"));
  const auto* b = shapeOf(layout::inputs("B"));
  const auto* dd = shapeOf(layout::kOutputD);
  std::optional<std::vector<int64_t>> mn;
  if (a && b) {
    if (a->size() != 2 || b->size() != 2 || (*a)[1] != (*b)[0]) {
      st->add(C::WrongShape, where + "/inputs/B",
              "A is " + shapeText(*a) + ", B is " + shapeText(*b) + ": expected [M,K] and [K,N]; run skipped",
              W::Warning);
      bad = true;
    } else {
      mn = std::vector<int64_t>{(*a)[0], (*b)[1]};
    }
  }
  if (!dd) {
    st->add(C::MissingDataset, where + "/output/D", "required by a gemm run; run skipped", W::Warning);
    bad = true;
  } else if (!mn && dd->size() != 2) {
    st->add(C::WrongShape, where + "/output/D", "expected [M,N], found " + shapeText(*dd) + "; run skipped",
            W::Warning);
    bad = true;
  } else {
    if (!mn) mn = *dd;
    for (const char* p : {layout::kOutputD, layout::kReferenceD, layout::kReferenceDQuantizedExact, layout::kErrorAbs,
                          layout::kErrorRel})
      if (auto s = shapeOf(p); s && *s != *mn) {
        st->add(C::WrongShape, where + "/" + p,
                "expected " + shapeText(*mn) + ", found " + shapeText(*s) + "; run skipped", W::Warning);
        bad = true;
      }
  }
  return !bad;
}

} // namespace

void SessionReader::Impl::validateRun(const std::string& id, Status* st) {
  const std::string where = path + "#/runs/" + id;
  Handle g = group(H5Gopen2(file, layout::runGroup(id).c_str(), H5P_DEFAULT));
  if (!g.valid()) {
    st->add(C::Corrupt, where, "cannot open run group (" + errorText() + "); run skipped", W::Warning);
    return;
  }
  if (H5Iget_type(g) != H5I_GROUP) {
    st->add(C::WrongType, where, "is not a group; skipped", W::Warning);
    return;
  }
  RunInfo ri;
  ri.id = id;
  ri.attrs = readAttrs(g);
  bool bad = !readRunAttributes(g, ri, where, st);
  readRunMetrics(g, ri, where, st);
  if (!readRunDatasets(g, ri, where, st)) return;
  bad = !checkQuantizedShapes(ri, where, st) || bad;
  if (ri.type == "gemm") bad = !checkGemmShapes(ri, where, st) || bad;
  if (!bad) info.runs.push_back(std::move(ri));
}

SessionReader::SessionReader() : d(std::make_unique<Impl>()) {}
SessionReader::~SessionReader() = default;

const SessionInfo& SessionReader::info() const {
  return d->info;
}

bool hasHdf5Signature(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  static const char sig[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  bool found = false;
  char buf[8];
  for (long off = 0; !found; off = off == 0 ? 512 : off * 2) {
    if (std::fseek(f, off, SEEK_SET) != 0 || std::fread(buf, 1, 8, f) != 8) break;
    found = std::memcmp(buf, sig, 8) == 0;
  }
  std::fclose(f);
  return found;
}

Result<std::unique_ptr<SessionReader>> SessionReader::open(const std::string& path) {
  quietErrors();
  Result<std::unique_ptr<SessionReader>> r;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (ec == std::errc::permission_denied)
      r.add(C::PermissionDenied, path, "cannot reach the file: a directory on its path is not searchable by this user");
    else
      r.add(C::NotFound, path, "no such file");
    return r;
  }
  if (fs::is_directory(path, ec)) {
    r.add(C::NotHdf5, path, "is a directory");
    return r;
  }
  // A FIFO, socket or device would block H5Fis_hdf5's open()/read() forever (or read without end).
  if (!fs::is_regular_file(path, ec)) {
    r.add(C::NotHdf5, path, "not a regular file (a FIFO, socket or device cannot be a session)");
    return r;
  }
  // Before HDF5 sees it: an unreadable file is "permission denied", not a corrupt file (H5Fis_hdf5
  // fails with "H5FD__sec2_open ... Permission denied"). Effective ids decide, as for open().
  if (::faccessat(AT_FDCWD, path.c_str(), R_OK, AT_EACCESS) != 0 && (errno == EACCES || errno == EPERM)) {
    r.add(C::PermissionDenied, path, "this user may not read the file (check its permissions)");
    return r;
  }
  const htri_t is = H5Fis_hdf5(path.c_str());
  if (is == 0) {
    r.add(C::NotHdf5, path, "no HDF5 signature (not an HDF5 file, or its first bytes are damaged)");
    return r;
  }
  if (is < 0) {
    r.add(C::Corrupt, path, "cannot check the file: " + errorText());
    return r;
  }
  // A file from elsewhere (untrusted mode, or marked so) is checked by the separate checking
  // process first: libhdf5 itself can crash or hang on a crafted file (hdf5_isolation.h).
  if (hdf5NeedsCheck(path)) {
    const Status verdict = checkHdf5FileOutOfProcess(path);
    if (!verdict.ok()) {
      r.merge(verdict);
      return r;
    }
  }
  std::unique_ptr<SessionReader> sr(new SessionReader());
  auto& im = *sr->d;
  im.path = path;
  im.info.path = path;
  im.file = file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!im.file.valid()) {
    r.add(C::Corrupt, path, "HDF5 cannot open it (truncated or damaged): " + errorText());
    return r;
  }
  Attributes root = readAttrs(im.file);
  const auto app = attrString(root, "application");
  const bool has_version = root.count("format_version") > 0;
  if (!app && !has_version) {
    r.add(C::ForeignFile, path,
          "a valid HDF5 file, but not an FP8 Lab session (no 'application' / 'format_version' root attributes)");
    return r;
  }
  if (app && *app != "FP8 Lab") {
    r.add(C::ForeignFile, path, "root attribute application='" + *app + "', expected 'FP8 Lab'");
    return r;
  }
  if (!has_version) {
    r.add(C::MissingAttribute, path + "#/", "root attribute 'format_version' is absent");
    return r;
  }
  const auto ver = attrInt(root, "format_version");
  if (!ver) {
    r.add(C::WrongType, path + "#/", "root attribute 'format_version' is not an integer");
    return r;
  }
  if (*ver > kSessionFormatVersion) {
    r.add(C::FutureVersion, path,
          "format_version " + std::to_string(*ver) + " was written by a newer FP8 Lab (" +
              attrString(root, "app_version").value_or("unknown version") + "); this build reads versions up to " +
              std::to_string(kSessionFormatVersion));
    return r;
  }
  if (*ver < 1) {
    r.add(C::WrongType, path + "#/", "format_version " + std::to_string(*ver) + " is not a valid version");
    return r;
  }
  im.info.format_version = static_cast<int>(*ver);
  im.info.app_version = attrString(root, "app_version").value_or("");
  im.info.created_utc = attrString(root, "created_utc").value_or("");
  im.info.modified_utc = attrString(root, "modified_utc").value_or("");
  im.info.attrs = root;
  if (H5Lexists(im.file, "runs", H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    r.add(C::MissingGroup, path + "#/runs", "the session has no /runs group");
    return r;
  }
  Handle runs = group(H5Gopen2(im.file, "runs", H5P_DEFAULT));
  if (!runs.valid() || H5Iget_type(runs) != H5I_GROUP) {
    r.add(C::WrongType, path + "#/runs", "/runs is not a group");
    return r;
  }
  for (const auto& id : linkNames(runs)) im.validateRun(id, &r);
  std::sort(im.info.runs.begin(), im.info.runs.end(), [](auto& a, auto& b) { return a.id < b.id; });
  r.value = std::move(sr);
  return r;
}

namespace {

bool allocFor(Dataset& out, int64_t n, Status* st, const std::string& where) {
  const int64_t bytes = n * static_cast<int64_t>(out.elementBytes());
  if (n < 0 || bytes > kMaxReadBytes) {
    st->add(C::InvalidArgument, where, "read of " + std::to_string(bytes) + " bytes refused (limit 64 GiB)");
    return false;
  }
  try {
    switch (out.dtype) {
    case DType::Float32:
      out.f32.resize(static_cast<size_t>(n));
      break;
    case DType::Float64:
      out.f64.resize(static_cast<size_t>(n));
      break;
    case DType::UInt8:
      out.u8.resize(static_cast<size_t>(n));
      break;
    case DType::Int64:
      out.i64.resize(static_cast<size_t>(n));
      break;
    }
  } catch (const std::bad_alloc&) {
    st->add(C::InvalidArgument, where, "not enough memory for " + std::to_string(bytes) + " bytes");
    return false;
  }
  return true;
}

void* bufOf(Dataset& d) {
  switch (d.dtype) {
  case DType::Float32:
    return d.f32.data();
  case DType::Float64:
    return d.f64.data();
  case DType::UInt8:
    return d.u8.data();
  case DType::Int64:
    return d.i64.data();
  }
  return nullptr;
}

/// Normalises a region against [rows, cols]; false with an issue when outside.
bool resolveRegion(const Region& in, int64_t rows, int64_t cols, Region* out, Status* st, const std::string& where) {
  Region r = in;
  if (r.row_step < 1 || r.col_step < 1 || r.row0 < 0 || r.col0 < 0 || r.row0 > rows || r.col0 > cols) {
    st->add(C::InvalidArgument, where, "region start/step outside the dataset " + shapeText({rows, cols}));
    return false;
  }
  const int64_t maxr = (rows - r.row0 + r.row_step - 1) / r.row_step;
  const int64_t maxc = (cols - r.col0 + r.col_step - 1) / r.col_step;
  if (r.rows < 0) r.rows = maxr;
  if (r.cols < 0) r.cols = maxc;
  if (r.rows > maxr || r.cols > maxc) {
    st->add(C::InvalidArgument, where,
            "region of " + std::to_string(r.rows) + "x" + std::to_string(r.cols) + " elements (steps " +
                std::to_string(r.row_step) + ", " + std::to_string(r.col_step) + ") from (" + std::to_string(r.row0) +
                ", " + std::to_string(r.col0) + ") does not fit in " + shapeText({rows, cols}));
    return false;
  }
  *out = r;
  return true;
}

/// Opens a dataset for reading with a chunk cache that holds at least one full row of chunks
/// (HDF5's default 1 MiB cache holds less than one of our ~1 MiB chunks, so band-wise reads
/// would decompress every chunk once per band). *chunk_rows receives the chunk height (0 when
/// contiguous).
Handle openForRead(hid_t file, const std::string& path, int64_t* chunk_rows = nullptr) {
  Handle ds = dataset(H5Dopen2(file, path.c_str(), H5P_DEFAULT));
  if (!ds.valid()) return ds;
  Handle dcpl = plist(H5Dget_create_plist(ds));
  if (H5Pget_layout(dcpl) != H5D_CHUNKED) {
    if (chunk_rows) *chunk_rows = 0;
    return ds;
  }
  const int rank = H5Pget_chunk(dcpl, 0, nullptr);
  if (rank < 1 || rank > 8) return ds;
  std::vector<hsize_t> chunk(static_cast<size_t>(rank)), dims(static_cast<size_t>(rank));
  H5Pget_chunk(dcpl, rank, chunk.data());
  Handle sp = space(H5Dget_space(ds));
  H5Sget_simple_extent_dims(sp, dims.data(), nullptr);
  Handle t = type(H5Dget_type(ds));
  hsize_t chunk_bytes = H5Tget_size(t), per_row = 1;
  for (int i = 0; i < rank; ++i) {
    chunk_bytes *= chunk[size_t(i)];
    if (i > 0) per_row *= (dims[size_t(i)] + chunk[size_t(i)] - 1) / chunk[size_t(i)];
  }
  if (chunk_rows) *chunk_rows = static_cast<int64_t>(chunk[0]);
  const hsize_t want = std::min<hsize_t>(hsize_t(512) << 20, chunk_bytes * per_row + chunk_bytes);
  if (want <= (hsize_t(1) << 20)) return ds;
  Handle dapl = plist(H5Pcreate(H5P_DATASET_ACCESS));
  H5Pset_chunk_cache(dapl, 100003, want, 1.0);
  ds.reset();
  return dataset(H5Dopen2(file, path.c_str(), dapl));
}

} // namespace

Result<Dataset> SessionReader::read(const std::string& run_id, const std::string& ds_path) {
  quietErrors();
  Result<Dataset> r;
  const DatasetInfo* di = d->findInfo(run_id, ds_path, &r);
  if (!di) return r;
  const std::string where = d->path + "#/runs/" + run_id + "/" + ds_path;
  Handle ds = openForRead(d->file, layout::runPath(run_id, ds_path));
  if (!ds.valid()) {
    r.add(C::Corrupt, where, errorText());
    return r;
  }
  r.value.dtype = di->dtype;
  r.value.shape = di->shape;
  r.value.attrs = di->attrs;
  // The shape is the header's claim: refuse what memory cannot hold or the file cannot contain.
  std::string why;
  const ReadSize rs =
      checkReadSize(ds, r.value.elementCount() * int64_t(r.value.elementBytes()), shapeText(di->shape), &why);
  if (rs != ReadSize::Ok) {
    r.add(rs == ReadSize::Implausible ? C::Corrupt : C::InvalidArgument, where, why);
    r.value = {};
    return r;
  }
  if (!allocFor(r.value, r.value.elementCount(), &r, where)) return r;
  if (r.value.elementCount() > 0 &&
      H5Dread(ds, memType(di->dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, bufOf(r.value)) < 0) {
    r.add(C::Corrupt, where, "cannot read data: " + errorText());
    r.value = {};
  }
  return r;
}

Result<Dataset> SessionReader::readRegion(const std::string& run_id, const std::string& ds_path, const Region& region) {
  quietErrors();
  Result<Dataset> r;
  const DatasetInfo* di = d->findInfo(run_id, ds_path, &r);
  if (!di) return r;
  const std::string where = d->path + "#/runs/" + run_id + "/" + ds_path;
  if (di->shape.size() != 2) {
    r.add(C::WrongShape, where, "readRegion needs a 2-D dataset, this one is " + shapeText(di->shape));
    return r;
  }
  Region g;
  if (!resolveRegion(region, di->shape[0], di->shape[1], &g, &r, where)) return r;
  Handle ds = openForRead(d->file, layout::runPath(run_id, ds_path));
  if (!ds.valid()) {
    r.add(C::Corrupt, where, errorText());
    return r;
  }
  r.value.dtype = di->dtype;
  r.value.shape = {g.rows, g.cols};
  r.value.attrs = di->attrs;
  r.value.attrs["region_row0"] = g.row0;
  r.value.attrs["region_col0"] = g.col0;
  r.value.attrs["region_row_step"] = g.row_step;
  r.value.attrs["region_col_step"] = g.col_step;
  if (!allocFor(r.value, g.rows * g.cols, &r, where)) return r;
  if (g.rows == 0 || g.cols == 0) return r;
  Handle fsp = space(H5Dget_space(ds));
  const hsize_t start[2] = {hsize_t(g.row0), hsize_t(g.col0)};
  const hsize_t stride[2] = {hsize_t(g.row_step), hsize_t(g.col_step)};
  const hsize_t count[2] = {hsize_t(g.rows), hsize_t(g.cols)};
  H5Sselect_hyperslab(fsp, H5S_SELECT_SET, start, stride, count, nullptr);
  Handle msp = space(H5Screate_simple(2, count, nullptr));
  if (H5Dread(ds, memType(di->dtype), msp, fsp, H5P_DEFAULT, bufOf(r.value)) < 0) {
    r.add(C::Corrupt, where, "cannot read region: " + errorText());
    r.value = {};
  }
  return r;
}

Result<Dataset> SessionReader::readPlane(const std::string& run_id, const std::string& ds_path, int64_t index) {
  quietErrors();
  Result<Dataset> r;
  const DatasetInfo* di = d->findInfo(run_id, ds_path, &r);
  if (!di) return r;
  const std::string where = d->path + "#/runs/" + run_id + "/" + ds_path;
  const size_t rank = di->shape.size();
  if (rank < 3) {
    r.add(C::WrongShape, where, "readPlane needs a dataset of rank 3 or more, this one is " + shapeText(di->shape));
    return r;
  }
  if (index < 0 || index >= di->shape[0]) {
    r.add(C::InvalidArgument, where,
          "plane " + std::to_string(index) + " outside [0, " + std::to_string(di->shape[0]) + ")");
    return r;
  }
  Handle ds = openForRead(d->file, layout::runPath(run_id, ds_path));
  if (!ds.valid()) {
    r.add(C::Corrupt, where, errorText());
    return r;
  }
  r.value.dtype = di->dtype;
  r.value.shape.assign(di->shape.begin() + 1, di->shape.end());
  r.value.attrs = di->attrs;
  int64_t n = 1;
  for (int64_t e : r.value.shape) n *= e;
  if (!allocFor(r.value, n, &r, where)) return r;
  if (n == 0) return r;
  Handle fsp = space(H5Dget_space(ds));
  std::vector<hsize_t> start(rank, 0), count(rank, 1);
  start[0] = hsize_t(index);
  for (size_t i = 1; i < rank; ++i) count[i] = hsize_t(di->shape[i]);
  H5Sselect_hyperslab(fsp, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
  Handle msp = space(H5Screate_simple(int(rank), count.data(), nullptr));
  if (H5Dread(ds, memType(di->dtype), msp, fsp, H5P_DEFAULT, bufOf(r.value)) < 0) {
    r.add(C::Corrupt, where, "cannot read plane: " + errorText());
    r.value = {};
  }
  return r;
}

Result<Dataset> SessionReader::readReduced(const std::string& run_id, const std::string& ds_path, int64_t block_rows,
                                           int64_t block_cols, Reduce how, const Region& window) {
  quietErrors();
  Result<Dataset> r;
  const DatasetInfo* di = d->findInfo(run_id, ds_path, &r);
  if (!di) return r;
  const std::string where = d->path + "#/runs/" + run_id + "/" + ds_path;
  if (di->shape.size() != 2) {
    r.add(C::WrongShape, where, "readReduced needs a 2-D dataset, this one is " + shapeText(di->shape));
    return r;
  }
  if (block_rows < 1 || block_cols < 1) {
    r.add(C::InvalidArgument, where, "block size must be ≥ 1");
    return r;
  }
  Region w = window;
  w.row_step = w.col_step = 1;
  Region g;
  if (!resolveRegion(w, di->shape[0], di->shape[1], &g, &r, where)) return r;
  int64_t chunk_rows = 0;
  Handle ds = openForRead(d->file, layout::runPath(run_id, ds_path), &chunk_rows);
  if (!ds.valid()) {
    r.add(C::Corrupt, where, errorText());
    return r;
  }
  // Bands of whole blocks, at least one chunk row high, at most ~64 MiB of doubles.
  int64_t per_band = std::max<int64_t>(1, (chunk_rows + block_rows - 1) / block_rows);
  per_band =
      std::max<int64_t>(1, std::min(per_band, (int64_t(64) << 20) / std::max<int64_t>(1, block_rows * g.cols * 8)));
  const int64_t out_r = (g.rows + block_rows - 1) / block_rows, out_c = (g.cols + block_cols - 1) / block_cols;
  Dataset& out = r.value;
  out.dtype = DType::Float64;
  out.shape = {out_r, out_c};
  out.attrs = di->attrs;
  out.attrs["reduce_block_rows"] = block_rows;
  out.attrs["reduce_block_cols"] = block_cols;
  out.attrs["reduce"] = std::string(how == Reduce::Mean  ? "mean"
                                    : how == Reduce::Max ? "max"
                                    : how == Reduce::Min ? "min"
                                                         : "max_abs");
  if (!allocFor(out, out_r * out_c, &r, where)) return r;
  if (out_r == 0 || out_c == 0) return r;
  std::vector<double> band;
  try {
    band.resize(static_cast<size_t>(std::min(per_band * block_rows, g.rows) * g.cols));
  } catch (const std::bad_alloc&) {
    r.add(C::InvalidArgument, where, "not enough memory for one band");
    return r;
  }
  BlockReducer reducer(g.rows, g.cols, block_rows, block_cols,
                       how == Reduce::Mean  ? BlockReduce::Mean
                       : how == Reduce::Max ? BlockReduce::Max
                       : how == Reduce::Min ? BlockReduce::Min
                                            : BlockReduce::MaxAbs);
  Handle fsp = space(H5Dget_space(ds));
  for (int64_t b0 = 0; b0 < out_r; b0 += per_band) {
    const int64_t r0 = g.row0 + b0 * block_rows;
    const int64_t nrows = std::min(per_band * block_rows, g.row0 + g.rows - r0);
    const hsize_t start[2] = {hsize_t(r0), hsize_t(g.col0)};
    const hsize_t count[2] = {hsize_t(nrows), hsize_t(g.cols)};
    H5Sselect_hyperslab(fsp, H5S_SELECT_SET, start, nullptr, count, nullptr);
    Handle msp = space(H5Screate_simple(2, count, nullptr));
    if (H5Dread(ds, H5T_NATIVE_DOUBLE, msp, fsp, H5P_DEFAULT, band.data()) < 0) {
      r.add(C::Corrupt, where,
            "cannot read rows " + std::to_string(r0) + ".." + std::to_string(r0 + nrows) + ": " + errorText());
      r.value = {};
      return r;
    }
    reducer.addRows(band.data(), r0 - g.row0, nrows);
  }
  // A NaN anywhere in a block shows (a heatmap must not hide it): BlockReducer's rule.
  const std::vector<double> reduced = reducer.finish();
  std::copy(reduced.begin(), reduced.end(), out.f64.begin());
  return r;
}

Result<Run> SessionReader::readRun(const std::string& run_id, const ProgressFn& progress) {
  Result<Run> r;
  const RunInfo* ri = d->info.find(run_id);
  if (!ri) {
    r.add(C::NotFound, d->path + "#/runs/" + run_id, "no such run (or it failed validation)");
    return r;
  }
  Run& run = r.value;
  run.id = ri->id;
  run.type = ri->type;
  run.config_json = ri->config_json;
  run.seed = ri->seed;
  run.backend = ri->backend;
  run.device = ri->device;
  run.created_utc = ri->created_utc;
  run.app_version = ri->app_version;
  run.attrs = ri->attrs;
  run.metrics = ri->metrics;
  run.group_attrs = ri->group_attrs;
  size_t k = 0;
  for (const auto& di : ri->datasets) {
    if (progress && !progress(double(k++) / double(ri->datasets.size()), "reading " + di.path)) {
      r.add(C::InvalidArgument, d->path, "cancelled");
      return r;
    }
    auto ds = read(run_id, di.path);
    r.merge(ds);
    if (!ds.ok()) return r;
    run.datasets[di.path] = std::move(ds.value);
  }
  return r;
}

Result<Session> loadSession(const std::string& path, const ProgressFn& progress) {
  Result<Session> r;
  auto rd = SessionReader::open(path);
  r.merge(rd);
  if (!rd.ok()) return r;
  const auto& info = rd.value->info();
  r.value.format_version = info.format_version;
  r.value.app_version = info.app_version;
  r.value.created_utc = info.created_utc;
  r.value.attrs = info.attrs;
  for (const char* k : {"application", "format_version", "app_version", "created_utc", "modified_utc"})
    r.value.attrs.erase(k);
  const size_t n = info.runs.size();
  for (size_t i = 0; i < n; ++i) {
    ProgressFn sub;
    if (progress) sub = [&](double f, const std::string& s) { return progress((double(i) + f) / double(n), s); };
    auto run = rd.value->readRun(info.runs[i].id, sub);
    r.merge(run);
    if (!run.ok()) return r;
    r.value.runs.push_back(std::move(run.value));
  }
  return r;
}

} // namespace fp8lab
