// FP8 Lab — one process-wide pool of worker threads for the numerics' parallel loops (GEMM tiles,
// quantize rows, the training MLP's matmuls), so a training run's thousands of small GEMMs do not
// each start and join their own threads.
#pragma once

#include "common/progress.h"

#include <cstdint>
#include <functional>
#include <string>

namespace fp8lab {

/// Runs `fn(w)` for w = 0 .. workers−1 at the same time and returns when every call has returned:
/// w = 0 on the calling thread, the others on threads of the process-wide pool, which are started
/// on first need and kept for later calls (at most 255 besides the caller). The callers split their
/// work dynamically (an atomic job counter), so which worker does which part never changes a
/// result. A call from inside a pool worker, or while another thread's call holds the pool, runs
/// fn(0) alone on the calling thread (no deadlock; the work still completes). `workers` < 1 is
/// taken as 1. An exception thrown by fn on a pool thread is rethrown here (the first one), after
/// every worker has returned; fn must therefore stop its workers itself (an atomic stop flag) when
/// one fails, as the callers do.
void runOnWorkers(int workers, const std::function<void(int worker)>& fn);

/// While one of these lives, a pool worker that finished its part of a call keeps polling for the
/// next call for a short while (300 µs) before it sleeps. For callers that issue many short
/// parallel loops back to back — a training step of the language model makes dozens, each a
/// fraction of a millisecond — where waking a sleeping worker (tens of microseconds, more on a
/// virtual machine) would leave the calling thread doing most of the work. OpenMP runtimes poll
/// the same way (GOMP_SPINCOUNT). Not for work that runs beside other busy threads (two training
/// runs at once): the polling worker would take their core. Nestable, from any thread.
class WorkerPoolBurst {
public:
  WorkerPoolBurst();
  ~WorkerPoolBurst();
  WorkerPoolBurst(const WorkerPoolBurst&) = delete;
  WorkerPoolBurst& operator=(const WorkerPoolBurst&) = delete;
};

/// The thread count of a parallel loop: `requested` when > 0, else the hardware concurrency (at
/// least 1). The one rule every numerics loop uses for its `threads` option (0 = all cores).
int resolveThreads(int requested);

/// Threads for a loop over `elements` elements split into `jobs` independent jobs:
/// resolveThreads(requested), at most one thread per 256 K (2^18) elements — 32 K (2^15) while a
/// WorkerPoolBurst keeps the workers polling — and per job, at least one: small tensors stay on the
/// calling thread, where waking workers would cost more than the work.
int threadsForWork(int requested, int64_t elements, int64_t jobs);

/// Runs fn(job) for job in [0, jobs) on `threads` threads of the pool (the caller is one of
/// them; 0 = resolveThreads). Reports progress from the calling thread, scaled into
/// [progress_from, progress_to] with `stage`; a cancel (Cancelled from progress) or an exception
/// in any job stops the others at their next job and is rethrown here.
void parallelJobs(int64_t jobs, int threads, const ProgressFn& progress, const std::string& stage, double progress_from,
                  double progress_to, const std::function<void(int64_t)>& fn);

/// Bytes of memory available to this process (MemAvailable of /proc/meminfo; else physical
/// memory; else the largest int64), for the size checks that refuse work which cannot fit.
int64_t availableMemoryBytes();

} // namespace fp8lab
