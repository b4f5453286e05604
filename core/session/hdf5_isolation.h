// FP8 Lab — checking HDF5 files from elsewhere in a separate process before this process opens
// them.
//
// Sessions are read in process, as h5py, HDFView, LabPlot and silx read HDF5 files: libhdf5 plus
// FP8 Lab's validating reader (SessionReader: every dataset's type, shape and declared size checked
// before a read, reads bounded by the memory available). The user's work is protected from a crash
// by autosave and atomic saves. What libhdf5 1.10.8 (Debian 12) itself does on a crafted file cannot
// be validated from outside it: crafted files give SEGVs (H5Aiterate2 → H5A__close on a
// damaged attribute table), endless loops (H5HG_read on a damaged global heap), gigabyte allocations
// from damaged length fields, stray reads that land in valid memory by chance, and damage that shows
// only after other files were opened in the same process (fuzz_session's inputs for each are in
// tests/fuzz/known-libhdf5-crashes/ and tests/fuzz/regressions/fuzz_session/). Those remain
// possible for a session opened in process.
//
// For files from elsewhere the check runs first: imports of foreign HDF5 datasets (always), and
// sessions opened as untrusted (`fp8lab-cli --untrusted`, the GUI's File → Open untrusted…,
// FP8LAB_HDF5_UNTRUSTED=1, or markHdf5Untrusted). The helper `fp8lab-h5check check FILE` — built
// with AddressSanitizer (FP8LAB_H5CHECK_ASAN) so libhdf5's memcpy/free calls are checked and a
// stray copy is caught even where a plain process would survive it — walks the metadata the opens
// touch (the session open twice, the importer's listing) and returns a verdict; it writes nothing.
// A file that kills the helper, trips its memory checker, needs more memory than metadata can, or
// keeps it busy past the time limit is refused with a Corrupt error that says so. Verdicts are
// remembered per file version (device, inode, size, modification time) for the life of the process.
// Sequence damage (a file that passes alone but damages libhdf5's state for later files of
// the same process) are not caught by a check of one file: a checked file is then read in process.
#pragma once

#include "session/session.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fp8lab {

/// The verdict of the separate checking process on `path` (`fp8lab-h5check check`: the metadata
/// walk — the session open twice, the importer's listing — under the memory and time limits below;
/// time limit hdf5CheckTimeoutSeconds()). Returns ok when the helper finished (whatever it found:
/// the in-process open reports the file's actual problems), when isolation is off, when the file
/// version was already checked, or when no helper program can be found, started, or run in this
/// environment (its `--features` self-test fails too, e.g. the AddressSanitizer runtime cannot
/// reserve its shadow memory under a small RLIMIT_AS; then the file is opened unchecked, as a
/// trusted one). The helper gets this process's environment minus LD_PRELOAD. Returns one Corrupt
/// error naming the signal ("the HDF5 library crashed (signal 11, Segmentation fault) ..."), the
/// time limit, or the memory the walk took when the helper died, hung, or needed far more memory
/// than metadata can. Thread-safe; blocks the calling thread (call it where the open itself runs:
/// off the GUI thread).
Status checkHdf5FileOutOfProcess(const std::string& path);

/// Whether SessionReader::open checks `path` out of process first: in untrusted mode
/// (setHdf5Untrusted, environment FP8LAB_HDF5_UNTRUSTED=1) or when the path was marked
/// (markHdf5Untrusted). Foreign-dataset imports are always checked.
bool hdf5NeedsCheck(const std::string& path);
/// Untrusted mode for this process: every session open is checked out of process first (default
/// off; on when the environment variable FP8LAB_HDF5_UNTRUSTED=1).
void setHdf5Untrusted(bool on);
bool hdf5Untrusted();
/// Marks one file as coming from elsewhere (the GUI's File → Open untrusted…): its opens in this
/// process are checked first. Matched by device and inode, so other names of the file count too.
void markHdf5Untrusted(const std::string& path);

/// Turns the out-of-process check on or off for this process (default on; off when the
/// environment variable FP8LAB_HDF5_ISOLATION=0). The helper itself and the libFuzzer targets run
/// with it off. Off, untrusted files and imports are opened unchecked.
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
/// kHdf5CheckExitMemoryError; no leak report. The helper's malloc hook also ends it on any single
/// allocation above hdf5CheckMemoryLimitMiB() (a damaged local-heap size made libhdf5 ask for
/// 1.4 GB — harmless while untouched, so the peak-memory check alone missed it).
std::string hdf5CheckerAsanOptions();

/// The helper's exit status when its walk finished but its peak memory passed the limit.
inline constexpr int kHdf5CheckExitMemory = 3;

/// The helper's exit status when its memory checker (the helper is built with AddressSanitizer,
/// FP8LAB_H5CHECK_ASAN) caught libhdf5 copying from outside a block, using freed memory, freeing
/// twice, asking for more than hdf5CheckMemoryLimitMiB() in one allocation, or crashing. Such a file
/// is refused although a plain process might read it without a visible fault: the stray read lands
/// wherever the heap layout puts it.
inline constexpr int kHdf5CheckExitMemoryError = 5;

/// Peak resident memory of this process's address space in MiB (VmHWM of /proc/self/status;
/// unlike getrusage's ru_maxrss it does not include a parent's memory carried through exec).
double peakMemoryMiBOfThisProcess();

/// The helper program that will be used, or "" when none is found. Looked for in this order:
/// $FP8LAB_H5CHECK; `fp8lab-h5check` beside the running executable; the build tree's copy; the
/// installed copy (<prefix>/libexec/fp8lab/fp8lab-h5check).
std::string hdf5CheckerPath();

/// How many times this process started the helper on a file (for tests and benchmarks: a trusted
/// open starts none).
uint64_t hdf5CheckerRuns();

/// What a second walk of the file beside the session open found (the importer's listing of its
/// datasets, io/tensor_import.h's listHdf5Tensors): its findings and how many datasets it listed.
struct Hdf5WalkReport {
  std::vector<Issue> issues;
  size_t listed = 0;
};

/// The helper's side (fp8lab-h5check check FILE): the metadata walk under the allocation limit —
/// the session open twice and `listing`, the importer's walk that the helper program supplies —
/// then its findings on stdout (for a person; the application reads only the exit status).
/// Returns the helper's exit status (kHdf5CheckExitMemory when the walk passed the memory limit).
int runHdf5HelperCheck(const std::string& path, const std::function<Hdf5WalkReport(const std::string&)>& listing);

/// While non-zero, the memory-checked helper ends with kHdf5CheckExitMemoryError on any single
/// allocation above this many bytes (its malloc hook reads it; set during the metadata walk).
extern std::atomic<size_t> g_hdf5HelperAllocationLimit;

} // namespace fp8lab
