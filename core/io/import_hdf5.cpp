// FP8 Lab — the HDF5 dataset importer (any HDF5 file's float datasets, opened in isolation from
// the session library's state). See tensor_import.h.
#include "io/import_detail.h"

#include "session/hdf5_isolation.h"
#include "session/hdf5_util.h"

#include <algorithm>
#include <filesystem>
#include <string>

namespace fp8lab {

namespace fs = std::filesystem;
using C = Issue::Code;
using namespace import_detail;

namespace {

struct H5List {
  hid_t file;
  std::vector<TensorEntry>* out;
};

herr_t h5ListCb(hid_t, const char* name, const H5L_info_t* info, void* data) {
  auto* d = static_cast<H5List*>(data);
  if (info->type != H5L_TYPE_HARD) return 0;
  h5::Handle o = h5::object(H5Oopen(d->file, name, H5P_DEFAULT));
  if (!o.valid() || H5Iget_type(o) != H5I_DATASET) {
    H5Eclear2(H5E_DEFAULT);
    return 0;
  }
  h5::Handle t = h5::type(H5Dget_type(o));
  h5::Handle sp = h5::space(H5Dget_space(o));
  TensorEntry e;
  e.name = std::string("/") + name;
  const int rank = H5Sget_simple_extent_ndims(sp);
  if (rank > 0 && rank <= 8) {
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(sp, dims.data(), nullptr);
    e.shape.assign(dims.begin(), dims.end());
  }
  const bool fl = H5Tget_class(t) == H5T_FLOAT;
  e.dtype = fl ? "float" + std::to_string(8 * H5Tget_size(t)) : "other";
  e.importable = fl && (rank == 1 || rank == 2);
  if (fl) d->out->push_back(std::move(e));
  return 0;
}

/// Checks that `path` is a regular HDF5 file (NotFound / NotHdf5 otherwise).
bool foreignH5Exists(const std::string& path, Status* st) {
  h5::quietErrors();
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    st->add(C::NotFound, path, "no such file");
    return false;
  }
  if (!fs::is_regular_file(path, ec)) { // a FIFO would block H5Fis_hdf5's open() forever
    st->add(C::NotHdf5, path, "not a regular file");
    return false;
  }
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    st->add(C::NotHdf5, path, "not an HDF5 file");
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  return true;
}

/// Opens a foreign HDF5 file in this process, after the separate checking process's verdict on its
/// metadata (hdf5_isolation.h): a file from elsewhere can crash or hang libhdf5 itself.
bool openForeignH5(const std::string& path, h5::Handle* f, Status* st) {
  const Status verdict = checkHdf5FileOutOfProcess(path);
  if (!verdict.ok()) {
    st->merge(verdict);
    return false;
  }
  *f = h5::file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!f->valid()) {
    st->add(C::Corrupt, path, "HDF5 cannot open it: " + h5::errorText());
    return false;
  }
  return true;
}

} // namespace

Result<std::vector<TensorEntry>> listHdf5Tensors(const std::string& path) {
  Result<std::vector<TensorEntry>> r;
  if (!foreignH5Exists(path, &r)) return r;
  h5::Handle f;
  if (!openForeignH5(path, &f, &r)) return r;
  H5List d{f, &r.value};
  H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, h5ListCb, &d);
  H5Eclear2(H5E_DEFAULT);
  return r;
}

Result<Dataset> importHdf5Dataset(const std::string& path, const std::string& dataset_path) {
  Result<Dataset> r;
  if (!foreignH5Exists(path, &r)) return r;
  h5::Handle f;
  if (!openForeignH5(path, &f, &r)) return r;
  const std::string where = path + ":" + dataset_path;
  std::string rel = dataset_path;
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  if (rel.empty() || !h5::pathExists(f, rel)) {
    r.add(C::NotFound, where, "no such dataset");
    return r;
  }
  h5::Handle ds = h5::dataset(H5Dopen2(f, rel.c_str(), H5P_DEFAULT));
  if (!ds.valid()) {
    r.add(C::WrongType, where, "not a dataset: " + h5::errorText());
    return r;
  }
  h5::Handle t = h5::type(H5Dget_type(ds));
  if (H5Tget_class(t) != H5T_FLOAT) {
    r.add(C::WrongType, where, "element type is not floating point");
    return r;
  }
  const size_t esz = H5Tget_size(t);
  h5::Handle sp = h5::space(H5Dget_space(ds));
  const int rank = H5Sget_simple_extent_ndims(sp);
  if (rank != 1 && rank != 2) {
    r.add(C::WrongShape, where, "rank " + std::to_string(rank) + "; FP8 Lab imports 1-D and 2-D datasets");
    return r;
  }
  hsize_t dims[2] = {0, 0};
  H5Sget_simple_extent_dims(sp, dims, nullptr);
  std::vector<int64_t> shape(dims, dims + rank);
  int64_t n = 0;
  if (!checkedCount(shape, &n)) {
    r.add(C::MalformedInput, where, "shape " + shapeText(shape) + " is too large");
    return r;
  }
  // The header's shape is only a claim (h5::checkReadSize): refuse before allocating.
  if (std::string why; h5::checkReadSize(ds, n * (esz > 4 ? 8 : 4), shapeText(shape), &why) != h5::ReadSize::Ok) {
    r.add(C::MalformedInput, where, why);
    return r;
  }
  Dataset& d = r.value;
  d.shape = shape;
  d.dtype = esz > 4 ? DType::Float64 : DType::Float32;
  try {
    if (d.dtype == DType::Float64)
      d.f64.resize(static_cast<size_t>(n));
    else
      d.f32.resize(static_cast<size_t>(n));
  } catch (const std::bad_alloc&) {
    r.add(C::MalformedInput, where, "not enough memory");
    return r;
  }
  void* buf = d.dtype == DType::Float64 ? static_cast<void*>(d.f64.data()) : static_cast<void*>(d.f32.data());
  if (n > 0 && H5Dread(ds, h5::memType(d.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
    r.add(C::Corrupt, where, "cannot read: " + h5::errorText());
    r.value = {};
    return r;
  }
  const bool big = H5Tget_order(t) == H5T_ORDER_BE;
  setSourceAttrs(&d, path, std::string(big ? ">" : "<") + "float" + std::to_string(8 * esz), dataset_path);
  return r;
}

} // namespace fp8lab
