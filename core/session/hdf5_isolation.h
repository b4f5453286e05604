// FP8 Lab — opening HDF5 files from outside safely: a first pass over the file's metadata in a
// separate checking process, so that a file that crashes or hangs the HDF5 library cannot take
// the application (and the user's unsaved work) down with it.
//
// Why: libhdf5 1.10.8 (Debian 12) has known crashes and endless loops on crafted files (found by
// tests/fuzz fuzz_session: a SEGV in H5Aiterate2 → H5A__close on a damaged attribute table, a
// loop in H5HG_read on a damaged global heap; inputs in tests/fuzz/known-libhdf5-crashes/).
// FP8 Lab cannot fix the library, so SessionReader::open and the HDF5 importer first let the
// helper program `fp8lab-h5check` walk the same metadata (every attribute, group and dataset
// header either in-process open will touch). The helper is built with AddressSanitizer
// (FP8LAB_H5CHECK_ASAN): libhdf5's memcpy/free calls are checked there, so a stray copy that a
// plain process would survive by chance — and crash on later, depending on its heap layout — is
// caught. A file that the helper walks to the end is then opened in-process; a file that kills
// the helper (any signal, a non-zero exit), trips its memory checker, or keeps it busy past the
// time limit is refused with a Corrupt error that says so. Passed and refused files are remembered per (device, inode,
// size, modification time) for the life of the process, so the views' repeated opens of one session cost one check.
//
// Scope: the metadata read on open. Dataset contents are read later in-process; HDF5 reports
// damaged chunks as errors (no crash was found there by fuzzing, see docs/reliability.md).
#pragma once

#include "session/session.h"

#include <string>

namespace fp8lab {

/// What the checking process does with the file: the session open (SessionReader::open's
/// validation) or the foreign-file listing (listHdf5Tensors).
enum class Hdf5CheckKind { Session, Foreign };

/// Runs the metadata walk of `path` (both the session open's and the importer's listing, see
/// runHdf5MetadataWalk; `kind` only words the message) in the helper process and waits for it (time limit:
/// hdf5CheckTimeoutSeconds()). Returns ok when the helper finished (whatever it found: the
/// in-process open reports the file's actual problems), when isolation is off, when the file was
/// already checked unchanged, or when no helper program can be found, started, or run in this
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
/// no single allocation above hdf5CheckMemoryLimitMiB() (a damaged local-heap size made libhdf5
/// ask for 1.4 GB — harmless while untouched, so the peak-memory check missed it), such an
/// allocation and every other report end the helper with kHdf5CheckExitMemoryError, no leak report.
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

/// The walk the helper runs (also usable in-process, e.g. by tests), with isolation off for the
/// call: opens `path` as a session (SessionReader::open, twice) and lists it as a foreign HDF5
/// file (listHdf5Tensors), `kind`'s walk first; returns that walk's findings. Both walks run for
/// either kind, so one verdict covers every later open of the file version.
Status runHdf5MetadataWalk(const std::string& path, Hdf5CheckKind kind);

} // namespace fp8lab
