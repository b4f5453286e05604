// fp8lab-h5check KIND FILE — walks FILE's HDF5 metadata the way FP8 Lab's opens do (both
// SessionReader::open's validation and the importer's listing; KIND = session or foreign says
// which runs first and whose findings are printed), then exits.
//
// Exit status 0 means "the walk finished", 3 (kHdf5CheckExitMemory) "finished, but libhdf5 took
// more memory than metadata can need" (a damaged length field) — whether or not the file is a valid session (the
// in-process open reports the file's problems); 5 (kHdf5CheckExitMemoryError) "AddressSanitizer
// caught libhdf5 reading, writing or freeing memory it does not own, or crashing". Any other end (a signal from a
// libhdf5 crash, a sanitizer's exit, being killed at the time limit) tells the parent the file is unsafe to open. See
// core/session/hdf5_isolation.h. Not meant to be run by hand; prints the walk's findings on stdout when it is.
#include "session/hdf5_isolation.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__SANITIZE_ADDRESS__)
#define FP8LAB_H5CHECK_MEMORY_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FP8LAB_H5CHECK_MEMORY_CHECKED 1
#endif
#endif

// AddressSanitizer settings of the helper when run by hand (app/h5check/CMakeLists.txt builds it
// with ASan): those of hdf5CheckerAsanOptions() for the default memory limit. FP8 Lab starts it
// with hdf5CheckerAsanOptions() appended to ASAN_OPTIONS, so they win over inherited ones. A
// literal: ASan asks for it while it starts, before anything may allocate.
extern "C" const char* __asan_default_options() {
  return "redzone=512:max_allocation_size_mb=512:allocator_may_return_null=0:detect_leaks=0:exitcode=5:"
         "quarantine_size_mb=64";
}

// `fp8lab-h5check --features` prints "memory-checked" (built with ASan) or "plain".
int main(int argc, char** argv) {
  static_assert(fp8lab::kHdf5CheckExitMemoryError == 5, "keep __asan_default_options' exitcode in step");
  if (argc == 2 && std::strcmp(argv[1], "--features") == 0) {
#ifdef FP8LAB_H5CHECK_MEMORY_CHECKED
    std::printf("memory-checked\n");
#else
    std::printf("plain\n");
#endif
    return 0;
  }
  if (argc != 3 || (std::strcmp(argv[1], "session") != 0 && std::strcmp(argv[1], "foreign") != 0)) {
    std::fprintf(stderr, "usage: fp8lab-h5check session|foreign FILE\n");
    return 2;
  }
  fp8lab::setHdf5Isolation(false);
  const auto kind =
      std::strcmp(argv[1], "session") == 0 ? fp8lab::Hdf5CheckKind::Session : fp8lab::Hdf5CheckKind::Foreign;
  const fp8lab::Status st = fp8lab::runHdf5MetadataWalk(argv[2], kind);
  const std::string msg = st.message();
  std::printf("%s%s", msg.empty() ? "walk finished, no findings\n" : msg.c_str(),
              msg.empty() || msg.back() == '\n' ? "" : "\n");
  std::fflush(stdout);
  if (fp8lab::peakMemoryMiBOfThisProcess() > fp8lab::hdf5CheckMemoryLimitMiB()) {
    std::printf("peak memory %.0f MiB above the limit %.0f MiB\n", fp8lab::peakMemoryMiBOfThisProcess(),
                fp8lab::hdf5CheckMemoryLimitMiB());
    std::fflush(stdout);
    std::_Exit(fp8lab::kHdf5CheckExitMemory);
  }
  // _Exit: the verdict is "the walk finished"; skip exit-time work (leak checkers, HDF5's atexit
  // close of a half-broken file) that could turn a finished walk into a non-zero status.
  std::_Exit(0);
}
