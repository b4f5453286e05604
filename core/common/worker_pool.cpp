// FP8 Lab — the process-wide worker pool (see worker_pool.h).
#include "common/worker_pool.h"

#include <algorithm>
#include <string>
#include <limits>
#include <fstream>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

namespace fp8lab {

namespace {

/// The pool. Never destroyed (its threads wait on `wake` until the process ends), so nothing has to
/// be joined at exit. Used only by the process that made it: a forked child has none of its threads
/// and runs every call alone.
struct Pool {
  std::mutex call;                  // one call at a time
  std::mutex mu;                    // guards everything below
  std::condition_variable wake;     // a new call (generation changed)
  std::condition_variable done;     // remaining reached 0
  std::vector<std::thread> threads; // thread i runs worker id i + 1
  const std::function<void(int)>* task = nullptr;
  int wanted = 0;                     // pool workers in the current call: ids 1 .. wanted
  int remaining = 0;                  // of those, still running
  uint64_t generation = 0;            // counts calls
  std::atomic<uint64_t> published{0}; // `generation`, readable without `mu` by spinning workers
  std::atomic<int> bursts{0};         // live WorkerPoolBurst objects: workers poll before sleeping
  std::exception_ptr error;
  pid_t owner = ::getpid();
};

thread_local bool t_pool_worker = false;

/// A pause hint in a polling loop (x86 PAUSE: lets the sibling hyper-thread run, saves power).
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

/// How long a worker that finished its part keeps polling for the next call before it sleeps on
/// the condition variable, while a WorkerPoolBurst is alive (worker_pool.h).
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(300);

void workerLoop(Pool* p, int id) {
  t_pool_worker = true;
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lk(p->mu);
  for (;;) {
    if (p->generation == seen && p->bursts.load(std::memory_order_relaxed) > 0) {
      lk.unlock();
      const auto until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
      for (int i = 1; p->published.load(std::memory_order_acquire) == seen; ++i) {
        cpuRelax();
        if (i % 64 == 0 && std::chrono::steady_clock::now() > until) break;
      }
      lk.lock();
    }
    p->wake.wait(lk, [&] { return p->generation != seen; });
    seen = p->generation;
    if (id > p->wanted) continue;
    const std::function<void(int)>* task = p->task;
    lk.unlock();
    std::exception_ptr e;
    try {
      (*task)(id);
    } catch (...) {
      e = std::current_exception();
    }
    lk.lock();
    if (e && !p->error) p->error = e;
    if (--p->remaining == 0) p->done.notify_all();
  }
}

} // namespace

void runOnWorkers(int workers, const std::function<void(int worker)>& fn) {
  workers = std::clamp(workers, 1, 256);
  Pool& p = pool();
  if (workers == 1 || t_pool_worker || ::getpid() != p.owner) {
    fn(0);
    return;
  }
  std::unique_lock<std::mutex> call(p.call, std::try_to_lock);
  if (!call.owns_lock()) { // another thread's call holds the pool: do the work alone
    fn(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lk(p.mu);
    try {
      while (static_cast<int>(p.threads.size()) < workers - 1)
        p.threads.emplace_back(workerLoop, &p, static_cast<int>(p.threads.size()) + 1);
    } catch (...) {
      // Could not start more threads: the ones there (and the caller) do all the work.
    }
    p.task = &fn;
    p.wanted = std::min(workers - 1, static_cast<int>(p.threads.size()));
    p.remaining = p.wanted;
    p.error = nullptr;
    ++p.generation;
    p.published.store(p.generation, std::memory_order_release);
  }
  p.wake.notify_all();
  std::exception_ptr mine;
  try {
    fn(0);
  } catch (...) {
    mine = std::current_exception();
  }
  std::exception_ptr theirs;
  {
    std::unique_lock<std::mutex> lk(p.mu);
    p.done.wait(lk, [&] { return p.remaining == 0; });
    p.task = nullptr;
    theirs = p.error;
    p.error = nullptr;
  }
  if (mine) std::rethrow_exception(mine);
  if (theirs) std::rethrow_exception(theirs);
}

WorkerPoolBurst::WorkerPoolBurst() {
  pool().bursts.fetch_add(1, std::memory_order_relaxed);
}

WorkerPoolBurst::~WorkerPoolBurst() {
  pool().bursts.fetch_sub(1, std::memory_order_relaxed);
}

int resolveThreads(int threads) {
  if (threads > 0) return threads;
  const unsigned h = std::thread::hardware_concurrency();
  return h > 0 ? static_cast<int>(h) : 1;
}

void parallelJobs(int64_t jobs, int threads, const ProgressFn& progress, const std::string& stage, double progress_from,
                  double progress_to, const std::function<void(int64_t)>& fn) {
  if (jobs <= 0) return;
  threads = static_cast<int>(std::min<int64_t>(resolveThreads(threads), jobs));
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&](bool is_caller) {
    for (;;) {
      if (stop.load(std::memory_order_relaxed)) return;
      const int64_t j = next.fetch_add(1);
      if (j >= jobs) return;
      try {
        fn(j);
        const int64_t d = done.fetch_add(1) + 1;
        if (is_caller)
          reportProgress(progress,
                         progress_from +
                             (progress_to - progress_from) * static_cast<double>(d) / static_cast<double>(jobs),
                         stage);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        stop = true;
        return;
      }
    }
  };
  // The process-wide pool: no threads started or joined per call.
  runOnWorkers(threads, [&](int w) { worker(w == 0); });
  if (error) std::rethrow_exception(error);
}

int threadsForWork(int requested, int64_t elements, int64_t jobs) {
  // Handing work to a sleeping worker costs tens of microseconds; to a polling one (a burst), little.
  const int per_thread_log2 = pool().bursts.load(std::memory_order_relaxed) > 0 ? 15 : 18;
  const int64_t by_work = std::max<int64_t>(1, elements / (int64_t(1) << per_thread_log2));
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({resolveThreads(requested), by_work, jobs})));
}

int64_t availableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t value = 0;
  std::string unit;
  while (in >> key >> value >> unit)
    if (key == "MemAvailable:") return value * 1024;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) return static_cast<int64_t>(pages) * page;
  return std::numeric_limits<int64_t>::max();
}

} // namespace fp8lab
