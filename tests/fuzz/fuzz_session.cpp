// libFuzzer target: the HDF5 session loader (core/session SessionReader, loadSession) and the
// HDF5 dataset importer (core/io listHdf5Tensors / importHdf5Dataset) on arbitrary bytes.
// Opening validates the layout; then every listed dataset is read whole, as a strided region
// and reduced, as the CLI (inspect / export) and the GUI views do; a session then gets a run
// appended (the rewrite path: existing runs copied as they are).
//
// libhdf5 itself (Debian's 1.10 build) is not instrumented; a crash inside it is still reported
// (SEGV). Every input is handled as a file from elsewhere (untrusted mode): the separate
// fp8lab-h5check process walks its metadata first (core/session/hdf5_isolation.h) and refuses the
// files that crash or hang libhdf5 (tests/fuzz/known-libhdf5-crashes/); what passes is read in
// process. A crash here is FP8 Lab's own, or a libhdf5 crash the check of one file cannot see
// (damage that shows only after other files were read in the same process — tests/fuzz/
// in-process-limits/). With FP8LAB_HDF5_ISOLATION=0 the target fuzzes the bare in-process reader
// (faster, and it finds the library's own crashes within seconds).
#include "fuzz_util.h"
#include "io/tensor_import.h"
#include "session/hdf5_isolation.h"
#include "session/session.h"

#include <hdf5.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>

using namespace fp8lab;

// The check process's time limit must stay below libFuzzer's -timeout (10 s in run.sh), so a file
// that hangs libhdf5 is refused by the check (a contained hang) instead of reported as a timeout.
//
// Sequence findings: libhdf5 keeps state between files, so a report may need the inputs before
// it. With FP8LAB_FUZZ_HISTORY=DIR set, every input is also written to DIR/NNNNNNNN.h5 and only the
// last 64 are kept, so after a report DIR holds the inputs that led to it, the reported one last
// (libFuzzer owns the sanitizer's death callback, so they are written as they come). Replay them in
// order with `fuzz_session DIR/*.h5`, then drop files while the report stays.
namespace {
void keepHistory(const uint8_t* data, size_t size) {
  static const char* dir = std::getenv("FP8LAB_FUZZ_HISTORY");
  static unsigned long long count = 0;
  if (!dir || !*dir) return;
  if (count == 0) ::mkdir(dir, 0755);
  char name[64];
  std::snprintf(name, sizeof name, "/%08llu.h5", count);
  if (FILE* f = std::fopen((std::string(dir) + name).c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  if (count >= 64) {
    std::snprintf(name, sizeof name, "/%08llu.h5", count - 64);
    std::remove((std::string(dir) + name).c_str());
  }
  ++count;
}
} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setHdf5CheckTimeoutSeconds(3);
  setHdf5Untrusted(true); // every input is a file from elsewhere: checked out of process first
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  keepHistory(data, size);
  const std::string path = fuzz::scratchFile(data, size, ".h5");
  auto opened = SessionReader::open(path);
  if (opened.ok() && opened.value) {
    SessionReader& r = *opened.value;
    int reads = 0;
    for (const RunInfo& run : r.info().runs) {
      for (const DatasetInfo& d : run.datasets) {
        if (++reads > 32) break;
        const auto whole = r.read(run.id, d.path);
        if (whole.ok() && whole.value.storedCount() != whole.value.elementCount()) __builtin_trap();
        if (d.shape.size() == 2) {
          Region reg;
          reg.row_step = 2;
          reg.col_step = 3;
          (void)r.readRegion(run.id, d.path, reg);
          (void)r.readReduced(run.id, d.path, 4, 4, Reduce::MaxAbs);
        }
      }
    }
  } else if (opened.issues.empty()) {
    __builtin_trap();
  }
  (void)loadSession(path);
  const auto list = listHdf5Tensors(path);
  if (list.ok())
    for (size_t i = 0; i < list.value.size() && i < 8; ++i) (void)importHdf5Dataset(path, list.value[i].name);
  const bool was_session = opened.ok();
  opened.value.reset(); // (loadSession above ran with this reader still open, as the GUI can)
  // A rewrite, as `run --out` into an existing session does: the runs already there are copied as
  // they are (H5Ocopy), the new one written.
  if (was_session) {
    Run extra;
    extra.id = "fuzz-added";
    extra.type = "fuzz";
    extra.config_json = "{}";
    extra.putFloat32("output/D", {1.0f, 2.0f}, 1, 2, "1", "added by the fuzzer");
    WriteOptions opt;
    opt.on_conflict = WriteOptions::OnConflict::Rename;
    (void)appendRuns(path, {extra}, opt);
  }
  // Every HDF5 object FP8 Lab opened is closed again, on every error path: an id left open keeps
  // the file and its metadata alive (a leak LeakSanitizer reports inside libhdf5).
  const auto open_ids = [](unsigned types) { return static_cast<long long>(H5Fget_obj_count(H5F_OBJ_ALL, types)); };
  if (open_ids(H5F_OBJ_FILE | H5F_OBJ_DATASET | H5F_OBJ_GROUP | H5F_OBJ_ATTR) > 0) __builtin_trap();
  // Datatype ids: the library keeps ~125 of its own; a leak of ours would grow without bound.
  static long long first_types = -1;
  const long long types = open_ids(H5F_OBJ_DATATYPE);
  if (first_types < 0) first_types = types;
  if (types > first_types + 1000) __builtin_trap();
  return 0;
}
