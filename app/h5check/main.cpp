// fp8lab-h5check — the separate checking process FP8 Lab runs on HDF5 files from elsewhere before
// it opens them (core/session/hdf5_isolation.h): foreign datasets to import, and sessions opened as
// untrusted. Not meant to be run by hand.
//
//   fp8lab-h5check check FILE   walks FILE's metadata the way FP8 Lab's opens do (the session open
//       twice, the importer's listing) and prints what it found; it writes nothing.
//   fp8lab-h5check --features   prints "memory-checked" (built with AddressSanitizer) or "plain".
//
// Exit status 0 means "finished" — whether or not the file is a valid session (the in-process open
// reports that); 3 (kHdf5CheckExitMemory) "the metadata walk took more memory than metadata can
// need" (a damaged length field); 5 (kHdf5CheckExitMemoryError) "AddressSanitizer caught libhdf5
// reading, writing or freeing memory it does not own, asking for more than the limit at once, or
// crashing". Any other end (a signal from a libhdf5 crash, a sanitizer's exit, being killed at the
// time limit) tells the application the file is unsafe to open.
#include "io/tensor_import.h"
#include "session/hdf5_isolation.h"

#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define FP8LAB_H5CHECK_MEMORY_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FP8LAB_H5CHECK_MEMORY_CHECKED 1
#endif
#endif

// AddressSanitizer settings of the helper when run by hand (app/h5check/CMakeLists.txt builds it
// with ASan): those of hdf5CheckerAsanOptions(). FP8 Lab starts it with hdf5CheckerAsanOptions()
// appended to ASAN_OPTIONS, so they win over inherited ones. A literal: ASan asks for it while it
// starts, before anything may allocate.
extern "C" const char* __asan_default_options() {
  return "redzone=512:max_allocation_size_mb=0:allocator_may_return_null=0:detect_leaks=0:exitcode=5:"
         "quarantine_size_mb=64";
}

#ifdef FP8LAB_H5CHECK_MEMORY_CHECKED
// The sanitizer runtime's allocation hooks (sanitizer/allocator_interface.h; declared here because
// GCC does not install that header).
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, size_t),
                                                         void (*free_hook)(const volatile void*));

namespace {
/// During the metadata walk no single allocation may pass the limit (a damaged length field):
/// the helper ends at once with kHdf5CheckExitMemoryError, before the memory is even touched.
void limitAllocations(const volatile void*, size_t size) {
  const size_t limit = fp8lab::g_hdf5HelperAllocationLimit.load(std::memory_order_relaxed);
  if (limit != 0 && size > limit) {
    static const char msg[] = "fp8lab-h5check: a single allocation above the metadata limit\n";
    (void)!::write(2, msg, sizeof msg - 1);
    std::_Exit(fp8lab::kHdf5CheckExitMemoryError);
  }
}
void noFreeHook(const volatile void*) {} // the runtime installs a pair only (a null one is refused)
} // namespace
#endif

int main(int argc, char** argv) {
  static_assert(fp8lab::kHdf5CheckExitMemoryError == 5, "keep __asan_default_options' exitcode in step");
#ifdef FP8LAB_H5CHECK_MEMORY_CHECKED
  // Installed before anything else, --features included: a helper without its limit fails the
  // application's self-test and counts as no helper.
  if (__sanitizer_install_malloc_and_free_hooks(limitAllocations, noFreeHook) == 0) {
    std::fprintf(stderr, "fp8lab-h5check: cannot install the allocation limit\n");
    return 2;
  }
#endif
  // Never outlive the application: killed with it (kill -9 skips its time-limit kill), and a CPU
  // limit of its time limit plus 5 s (FP8LAB_H5CHECK_CPU_S) for a parent that cannot kill it.
  if (const char* parent = std::getenv("FP8LAB_H5CHECK_PARENT")) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != pid_t(std::strtol(parent, nullptr, 10))) return 2; // gone before prctl took effect
  }
  if (const char* cpu = std::getenv("FP8LAB_H5CHECK_CPU_S")) {
    const long s = std::strtol(cpu, nullptr, 10);
    if (s > 0) {
      const rlimit lim{rlim_t(s), rlim_t(s) + 1};
      ::setrlimit(RLIMIT_CPU, &lim);
    }
  }
  if (argc == 2 && std::strcmp(argv[1], "--features") == 0) {
#ifdef FP8LAB_H5CHECK_MEMORY_CHECKED
    std::printf("memory-checked\n");
#else
    std::printf("plain\n");
#endif
    return 0;
  }
  if (argc != 3 || std::strcmp(argv[1], "check") != 0) {
    std::fprintf(stderr, "usage: fp8lab-h5check check FILE | --features\n");
    return 2;
  }
  // The importer's walk of the file's datasets, beside the session open (io/tensor_import.h).
  const int rc = fp8lab::runHdf5HelperCheck(argv[2], [](const std::string& path) {
    const auto listing = fp8lab::listHdf5Tensors(path);
    return fp8lab::Hdf5WalkReport{listing.issues, listing.value.size()};
  });
  std::fflush(stdout);
  // _Exit: the verdict is "finished"; skip exit-time work (leak checkers, HDF5's atexit close of a
  // half-broken file) that could turn a finished walk into a non-zero status.
  std::_Exit(rc);
}
