// FP8 Lab — opening HDF5 files from outside safely: the application process never hands libhdf5
// the bytes of a file it did not make. A separate checking process, `fp8lab-h5check`, opens the
// file, and this process reads only what that process hands back.
//
// Why: libhdf5 1.10.8 (Debian 12) has known crashes, endless loops and stray memory reads on
// crafted files (found by tests/fuzz fuzz_session: a SEGV in H5Aiterate2 → H5A__close on a damaged
// attribute table, a loop in H5HG_read on a damaged global heap, gigabyte allocations from damaged
// length fields; inputs in tests/fuzz/known-libhdf5-crashes/), and some damage shows only in a
// process that opened other files before (global-heap memory libhdf5 never initialised;
// tests/fuzz/regressions/fuzz_session/sequence-H5HG_read-*). FP8 Lab cannot fix the library.
//
// How: SessionReader::open, the writers' copies of existing runs and the HDF5 importer call
// prepareHdf5File. The helper — built with AddressSanitizer (FP8LAB_H5CHECK_ASAN), so libhdf5's
// memcpy/free calls are checked there and a stray copy that a plain process would survive by
// chance is caught — walks the metadata both opens touch, then writes a *checked copy*: FP8 Lab's
// own writer re-encodes the session (see PreparedHdf5), and the importer's listing and imports are
// done there too. A file that kills the helper (any signal, a non-zero exit), trips its memory
// checker, or keeps it busy past the time limit is refused with a Corrupt error that says so.
// Verdicts and copies are remembered per (device, inode, size, modification time) for the life of
// the process, so the views' repeated opens of one session cost one helper run.
#pragma once

#include "io/tensor_import.h"
#include "session/session.h"

#include <atomic>
#include <map>
#include <string>

namespace fp8lab {

/// Which open asked (kept for callers; one verdict covers every kind of open of a file version).
enum class Hdf5CheckKind { Session, Foreign };

/// The verdict of prepareHdf5File(path): runs the helper (`fp8lab-h5check prepare`: the metadata
/// walk — the session open twice, the importer's listing — then the checked copy) and waits for it
/// (time limit: hdf5CheckTimeoutSeconds() plus 1 s per 20 MB). Returns ok when the helper finished
/// (whatever it found: the opens report the file's actual problems), when isolation is off, when the
/// file version was already checked, or when no helper program can be found, started, or run in this
/// environment (its `--features` self-test fails too, e.g. the AddressSanitizer runtime cannot
/// reserve its shadow memory under a small RLIMIT_AS; then the file is opened unprotected, exactly
/// as before this check existed). The helper gets this process's environment minus LD_PRELOAD. Returns one Corrupt
/// error naming the signal ("the HDF5 library crashed (signal 11, Segmentation fault) ..."), the time limit, or the
/// memory the walk took (above hdf5CheckMemoryLimitMiB()) when the helper died, hung, or needed far more memory than
/// metadata can. Thread-safe; blocks the calling thread (so call it where the open itself would run: off the GUI
/// thread).
Status checkHdf5FileIsolated(const std::string& path, Hdf5CheckKind kind);

/// Turns the check on or off for this process (default on; off when the environment variable
/// FP8LAB_HDF5_ISOLATION=0). The helper itself and the libFuzzer targets run with it off.
void setHdf5Isolation(bool on);
bool hdf5IsolationEnabled();

/// Seconds the helper may take before the file counts as hanging the library (default 30;
/// environment FP8LAB_HDF5_CHECK_TIMEOUT_S overrides; setter for tests). Values ≤ 0 reset.
void setHdf5CheckTimeoutSeconds(double seconds);
double hdf5CheckTimeoutSeconds();

/// Peak memory (MiB) the helper may use walking the metadata before the file counts as crafted
/// (default 512; environment FP8LAB_HDF5_CHECK_MAX_MIB). A healthy session's walk needs tens of
/// MiB; a damaged variable-length string length made libhdf5 allocate and fill 1.7 GB.
double hdf5CheckMemoryLimitMiB();

/// The AddressSanitizer settings the memory-checked helper runs with (appended to any inherited
/// ASAN_OPTIONS, so they win): 512-byte red zones (a stray copy must land in one to be seen),
/// failed allocations are reports, not NULL; every report ends the helper with
/// kHdf5CheckExitMemoryError; no leak report. During the metadata walk the helper's malloc hook
/// also ends it so on any single allocation above hdf5CheckMemoryLimitMiB() (a damaged local-heap
/// size made libhdf5 ask for 1.4 GB — harmless while untouched, so the peak-memory check missed it);
/// the copy that follows may allocate whole datasets.
std::string hdf5CheckerAsanOptions();

/// The helper's exit status when its walk finished but its peak memory passed the limit.
inline constexpr int kHdf5CheckExitMemory = 3;

/// The helper's exit status when its memory checker (the helper is built with AddressSanitizer,
/// FP8LAB_H5CHECK_ASAN) caught libhdf5 copying from outside a block, using freed memory, freeing
/// twice, asking for more than hdf5CheckMemoryLimitMiB() in one allocation, or crashing. Such a file is refused
/// although a plain process might read it without a visible fault: the stray read lands wherever the heap layout puts
/// it.
inline constexpr int kHdf5CheckExitMemoryError = 5;

/// Peak resident memory of this process's address space in MiB (VmHWM of /proc/self/status;
/// unlike getrusage's ru_maxrss it does not include a parent's memory carried through exec).
double peakMemoryMiBOfThisProcess();

/// The helper program that will be used, or "" when none is found. Looked for in this order:
/// $FP8LAB_H5CHECK; `fp8lab-h5check` beside the running executable; the build tree's copy; the
/// installed copy (<prefix>/libexec/fp8lab/fp8lab-h5check).
std::string hdf5CheckerPath();

/// What the checking process found in, and made of, one file version (prepareHdf5File).
///
/// Since the fourth session the application process never hands libhdf5 a file from outside:
/// the helper walks it (the checks above), then re-encodes the session it holds into a *checked
/// copy* that FP8 Lab's own writer produces (root attributes verbatim, every valid run read and
/// written again dataset by dataset, storage layout kept; runs with findings carried by H5Ocopy,
/// which rebuilds their object headers and heaps). In-process libhdf5 then only reads files that
/// libhdf5 itself wrote. Why: fuzz_session found inputs that pass the walk in the fresh helper but
/// make libhdf5 read uninitialised global-heap memory once *other* files were opened in the same
/// process (tests/fuzz/regressions/fuzz_session/sequence-H5HG_read-*) — no check of one file in a
/// fresh process can see that, so the original bytes must never reach this process's libhdf5.
struct PreparedHdf5 {
  bool isolated = false; ///< the helper ran; `session` and `listing` are its findings on the original
  /// The file SessionReader hands to libhdf5: the checked copy, or `path` itself when not isolated
  /// (isolation off, no helper) or when the copy could not be written (then as before the copy
  /// existed: opened in-process after the walk passed). Empty when the session open failed.
  std::string session_path;
  Status session; ///< SessionReader::open's issues on the original (messages name the original path)
  Result<std::vector<TensorEntry>> listing; ///< listHdf5Tensors on the original
  /// Storage layout of the original's datasets (chunked, compressed) by "<run id>/<dataset path>":
  /// the copy keeps small datasets contiguous and uncompressed (fast to make and to read); the reader
  /// reports the original's layout.
  std::map<std::string, std::pair<bool, bool>> layout;
};

/// Checks `path` in the helper (as checkHdf5FileIsolated) and, when it passes, makes its checked
/// copy and listing (one helper run per file version; remembered per device, inode, size and
/// modification time, at most 64 file versions, copies removed when evicted and at exit). The copy
/// lives in a private directory ($FP8LAB_HDF5_COPY_DIR, else $TMPDIR, else /var/tmp, else /tmp:
/// "fp8lab-checked-<pid>-XXXXXX", mode 0700; directories of processes that died are removed) and
/// needs as much disk as the session. Time limit: hdf5CheckTimeoutSeconds() plus 1 s per 20 MB of
/// file (the copy reads all data). Errors: the refusals of checkHdf5FileIsolated.
Result<PreparedHdf5> prepareHdf5File(const std::string& path);

/// For the writers' rewrites (append, delete, rename, merge), which keep existing runs exactly as
/// they are (H5Ocopy, no re-encoding): the path to copy runs of `path` from — its *carry copy*, made
/// on first use by the helper (`fp8lab-h5check carry FILE PREFIX`: every run group H5Ocopy'd into a
/// new file, so libhdf5 rebuilt every object header and heap and this process copies from a file
/// libhdf5 wrote, filters and attribute types untouched), or `path` itself when isolation does not
/// apply. Run groups the helper could not copy are listed in *failures (id → HDF5's message); a
/// rewrite that needs one of them fails with that message. Errors: the refusals of prepareHdf5File,
/// a crash of the helper while copying, no room for the copy.
Result<std::string> hdf5CarryCopy(const std::string& path, std::map<std::string, std::string>* failures);

/// Imports one dataset of a foreign HDF5 file in the helper (importHdf5Dataset there; the result
/// comes back as a one-dataset session file the helper writes). *handled = false when isolation
/// does not apply (off, no helper): the caller imports in-process. Errors: the helper's, or a
/// Corrupt refusal when reading the data crashed or hung the library.
Result<Dataset> importHdf5DatasetIsolated(const std::string& path, const std::string& dataset_path, bool* handled);

/// The helper's side (fp8lab-h5check): `prepare FILE PREFIX` writes PREFIX.h5 (checked copy),
/// PREFIX.session and PREFIX.list (findings, one per line); `import FILE DATASET PREFIX` writes
/// PREFIX.h5 and PREFIX.issues. Return the helper's exit status (kHdf5CheckExitMemory when the
/// metadata walk passed the memory limit).
int runHdf5HelperPrepare(const std::string& path, const std::string& prefix);
int runHdf5HelperImport(const std::string& path, const std::string& dataset_path, const std::string& prefix);
int runHdf5HelperCarry(const std::string& path, const std::string& prefix);

/// While non-zero, the memory-checked helper ends with kHdf5CheckExitMemoryError on any single
/// allocation above this many bytes (its malloc hook reads it; set during the metadata walk only,
/// since copying data legitimately allocates whole datasets).
extern std::atomic<size_t> g_hdf5HelperAllocationLimit;

/// The helper's re-encoding (defined with the writer, core/session/session_writer.cpp): writes
/// the checked copy of the open session `reader` (whose file is `in`, opened with `findings`) to
/// `out`. Valid runs are read and written again (every dataset the application can read is
/// re-encoded); run groups that failed validation, and objects inside valid runs that a finding
/// names ("<in>#/runs/<id>/<path>", e.g. a dataset of the wrong type), are carried with H5Ocopy, so
/// the open of the copy reports them as the original's did (rewrites copy from the carry copy,
/// hdf5CarryCopy). Not fsync'ed (a private temporary file); contiguous and uncompressed up to 4 Mi
/// elements per dataset, gzip level 1 above. A run whose data cannot be read is carried with
/// H5Ocopy instead. Errors: WriteFailed (disk full, ...).
Status writeCheckedSessionCopy(SessionReader& reader, const Status& findings, const std::string& in,
                               const std::string& out);

} // namespace fp8lab
