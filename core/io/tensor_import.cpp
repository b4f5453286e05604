// FP8 Lab — tensor import: one entry point that picks the importer by the file's extension
// (import_npy.cpp, import_safetensors.cpp, import_hdf5.cpp). See tensor_import.h.
#include "io/tensor_import.h"

#include "io/import_detail.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace fp8lab {

using C = Issue::Code;
using namespace import_detail;

namespace {

/// "FILE.ext:NAME" split at the first ':' after a known extension; false for an unknown type.
bool splitTensorSpec(const std::string& spec, std::string* file, std::string* name, std::string* ext) {
  auto ends = [](const std::string& s, const std::string& suf) {
    if (s.size() < suf.size()) return false;
    std::string t = s.substr(s.size() - suf.size());
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return t == suf;
  };
  std::string lower = spec;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const std::string e : {".safetensors", ".h5", ".hdf5", ".hdf", ".npy"}) {
    const size_t p = lower.find(e + ":");
    if (p != std::string::npos) {
      *file = spec.substr(0, p + e.size());
      *name = spec.substr(p + e.size() + 1);
    } else if (ends(spec, e)) {
      *file = spec;
      name->clear();
    } else {
      continue;
    }
    *ext = e;
    return true;
  }
  return false;
}

} // namespace

Result<std::vector<int64_t>> tensorShape(const std::string& spec) {
  Result<std::vector<int64_t>> r;
  std::string file, name, ext;
  if (!splitTensorSpec(spec, &file, &name, &ext)) {
    r.add(C::InvalidArgument, spec, "unknown tensor file type (use .npy, .safetensors:NAME or .h5:/PATH)");
    return r;
  }
  if (ext == ".npy") return npyShape(file);
  auto list = ext == ".safetensors" ? listSafetensors(file) : listHdf5Tensors(file);
  r.merge(list);
  if (!list.ok()) return r;
  const TensorEntry* found = nullptr;
  for (const auto& e : list.value)
    if (e.name == name) found = &e;
  if (!found && name.empty() && ext == ".safetensors" && list.value.size() == 1) found = &list.value.front();
  if (!found) {
    r.add(C::NotFound, spec, name.empty() ? "give the tensor's name as FILE:NAME" : "no tensor of that name");
    return r;
  }
  r.value = found->shape;
  return r;
}

Result<Dataset> importCodeTensor(const std::string& spec, bool words_as_bytes) {
  Result<Dataset> r;
  std::string file, name, ext;
  if (!splitTensorSpec(spec, &file, &name, &ext)) {
    r.add(C::InvalidArgument, spec, "unknown tensor file type (use .npy or .safetensors:NAME)");
    return r;
  }
  if (ext == ".npy") return importNpyCodes(file, words_as_bytes);
  if (ext != ".safetensors") {
    r.add(C::InvalidArgument, spec, "code tensors are read from .npy (uint8) or .safetensors (U8) files");
    return r;
  }
  return importSafetensorsCodes(file, name, spec, words_as_bytes);
}

Result<Dataset> importTensor(const std::string& spec) {
  std::string file, name, ext;
  if (!splitTensorSpec(spec, &file, &name, &ext)) {
    Result<Dataset> r;
    r.add(C::InvalidArgument, spec, "unknown tensor file type (use .npy, .safetensors:NAME or .h5:/PATH)");
    return r;
  }
  if (ext == ".npy") return importNpy(file);
  if (ext == ".safetensors") return importSafetensors(file, name);
  if (name.empty()) {
    Result<Dataset> r;
    auto l = listHdf5Tensors(file);
    std::string names;
    for (const auto& e : l.value)
      if (e.importable) names += (names.empty() ? "" : ", ") + e.name;
    r.add(C::InvalidArgument, spec, "give the dataset path as FILE.h5:/path (float datasets: " + names + ")");
    return r;
  }
  return importHdf5Dataset(file, name);
}

} // namespace fp8lab
