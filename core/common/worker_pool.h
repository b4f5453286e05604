// FP8 Lab — one process-wide pool of worker threads for the numerics' parallel loops (GEMM tiles,
// quantize rows, the training MLP's matmuls), so a training run's thousands of small GEMMs do not
// each start and join their own threads.
#pragma once

#include <functional>

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

} // namespace fp8lab
