// FP8 Lab — internal helpers over the HDF5 C API shared by the session reader/writer and the
// HDF5 tensor importer: RAII handles, quiet error handling with captured messages, attributes.
// Not a public API.
#pragma once

#include "session/session.h"

#include <hdf5.h>

#include <string>
#include <vector>

namespace fp8lab::h5 {

/// Switches off HDF5's automatic error printing (once per process; idempotent).
void quietErrors();

/// The current HDF5 error stack as one line ("H5Fopen: unable to open file; ..."), most
/// specific message last; "" when the stack is empty. Call right after the failing call.
std::string errorText();

/// Owner of an hid_t with the matching close function.
class Handle {
public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer c) : id_(id), close_(c) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = -1;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  bool valid() const { return id_ >= 0; }
  /// Closes now; returns false when the close call failed (for files: data not flushed).
  bool reset() {
    bool ok = true;
    if (id_ >= 0 && close_) ok = close_(id_) >= 0;
    id_ = -1;
    return ok;
  }

private:
  hid_t id_ = -1;
  Closer close_ = nullptr;
};

inline Handle file(hid_t id) {
  return {id, H5Fclose};
}
inline Handle group(hid_t id) {
  return {id, H5Gclose};
}
inline Handle dataset(hid_t id) {
  return {id, H5Dclose};
}
inline Handle space(hid_t id) {
  return {id, H5Sclose};
}
inline Handle type(hid_t id) {
  return {id, H5Tclose};
}
inline Handle attr(hid_t id) {
  return {id, H5Aclose};
}
inline Handle plist(hid_t id) {
  return {id, H5Pclose};
}
inline Handle object(hid_t id) {
  return {id, H5Oclose};
}

/// Writes a scalar attribute (replacing an existing one of that name). False on failure.
bool writeAttr(hid_t obj, const std::string& name, const AttrValue& v);
bool writeAttrU64(hid_t obj, const std::string& name, uint64_t v);
/// Reads every scalar (or single-element) attribute of obj: strings (fixed or variable),
/// floats (as double), integers (as int64; unsigned 64-bit values above INT64_MAX are skipped).
Attributes readAttrs(hid_t obj);
/// Reads one attribute as uint64 (any integer type); false when absent or not an integer.
bool readAttrU64(hid_t obj, const std::string& name, uint64_t* v);
bool hasAttr(hid_t obj, const std::string& name);

/// Names of the links directly inside a group (name order).
std::vector<std::string> linkNames(hid_t group);
/// True when `path` (relative to loc) exists as a link, checking each component.
bool pathExists(hid_t loc, const std::string& path);

/// File and memory HDF5 types of a DType.
hid_t fileType(DType t);
hid_t memType(DType t);
/// DType of a dataset's stored type, or false when it is not one of the four.
bool dtypeOf(hid_t type_id, DType* out);

/// Why reading a whole dataset would be refused before allocating for it.
enum class ReadSize { Ok, TooLargeForMemory, Implausible };

/// Checks a whole-dataset read of `bytes` (the in-memory size its header declares) before
/// anything is allocated. A header's shape is only a claim: HDF5 stores less for compressed data
/// and unwritten chunks (read back as the fill value), and a crafted 5 kB file can declare
/// 34 GB. TooLargeForMemory: more than the memory available now (MemAvailable).
/// Implausible: above 256 MiB and more than 1100 times the bytes the file stores for `ds`
/// (H5Dget_storage_size) — beyond deflate's maximum ratio of 1032:1, so no real compressed
/// dataset is refused. *why gets the message (sizes in GiB) when not Ok.
ReadSize checkReadSize(hid_t ds, int64_t bytes, const std::string& shape_text, std::string* why);

} // namespace fp8lab::h5
