// The process-wide worker pool behind the GEMM, quantize and training loops (core/common/
// worker_pool.h): every worker of a call runs once and at the same time as the others, the pool's
// threads are reused across calls, a worker's exception reaches the caller after all returned, a
// call from inside a worker and a call in a forked child run alone instead of deadlocking; a
// WorkerPoolBurst (polling workers) keeps every call whole and lowers threadsForWork's threshold.
#include <QtTest>

#include "common/worker_pool.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace fp8lab;

namespace {
/// Every worker waits until all `n` are inside (at most 10 s): true when they met.
bool allMeet(std::atomic<int>& inside, int n) {
  inside.fetch_add(1);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (inside.load() < n)
    if (std::chrono::steady_clock::now() > until) return false;
  return true;
}
} // namespace

class TestWorkerPool : public QObject {
  Q_OBJECT

private Q_SLOTS:
  void everyWorkerRunsOnceAndConcurrently();
  void threadsAreReused();
  void workerExceptionReachesTheCaller();
  void nestedCallRunsAlone();
  void forkedChildRunsAlone();
  void burstKeepsEveryCallWhole();
  void burstLowersTheSplitThreshold();
};

void TestWorkerPool::everyWorkerRunsOnceAndConcurrently() {
  for (int n : {1, 2, 3, 5}) {
    std::mutex mu;
    std::multiset<int> ids;
    std::atomic<int> inside{0};
    std::atomic<bool> met{true};
    runOnWorkers(n, [&](int w) {
      if (!allMeet(inside, n)) met = false;
      std::lock_guard<std::mutex> lk(mu);
      ids.insert(w);
    });
    QVERIFY2(met, qPrintable(QStringLiteral("%1 workers did not all run at once").arg(n)));
    std::multiset<int> want;
    for (int i = 0; i < n; ++i) want.insert(i);
    QVERIFY(ids == want);
  }
}

void TestWorkerPool::threadsAreReused() {
  std::mutex mu;
  std::set<std::thread::id> first, second;
  runOnWorkers(3, [&](int) {
    std::lock_guard<std::mutex> lk(mu);
    first.insert(std::this_thread::get_id());
  });
  runOnWorkers(3, [&](int) {
    std::lock_guard<std::mutex> lk(mu);
    second.insert(std::this_thread::get_id());
  });
  QCOMPARE(first.size(), size_t(3));
  QVERIFY(first == second); // the same two pool threads plus the caller
}

void TestWorkerPool::workerExceptionReachesTheCaller() {
  std::atomic<int> returned{0};
  bool caught = false;
  try {
    runOnWorkers(3, [&](int w) {
      returned.fetch_add(1);
      if (w == 2) throw std::runtime_error("worker 2 failed");
    });
  } catch (const std::runtime_error& e) {
    caught = std::string(e.what()) == "worker 2 failed";
  }
  QVERIFY(caught);
  QCOMPARE(returned.load(), 3); // every worker had returned before the rethrow
  // The pool works on afterwards.
  std::atomic<int> n{0};
  runOnWorkers(3, [&](int) { n.fetch_add(1); });
  QCOMPARE(n.load(), 3);
}

void TestWorkerPool::nestedCallRunsAlone() {
  std::atomic<int> inner_calls{0}, inner_nonzero{0};
  runOnWorkers(2, [&](int w) {
    if (w != 1) return;
    runOnWorkers(4, [&](int v) { // from a pool thread: runs v = 0 only, on this thread
      inner_calls.fetch_add(1);
      if (v != 0) inner_nonzero.fetch_add(1);
    });
  });
  QCOMPARE(inner_calls.load(), 1);
  QCOMPARE(inner_nonzero.load(), 0);
}

void TestWorkerPool::forkedChildRunsAlone() {
  runOnWorkers(3, [](int) {}); // the pool has threads in this process
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(20);
    int calls = 0;
    runOnWorkers(3, [&](int w) { calls += w == 0 ? 1 : 100; }); // the child has no pool threads
    _exit(calls == 1 ? 0 : 1);
  }
  int status = 0;
  QCOMPARE(waitpid(pid, &status, 0), pid);
  QVERIFY(WIFEXITED(status));
  QCOMPARE(WEXITSTATUS(status), 0);
}

// While a WorkerPoolBurst lives the workers poll for the next call instead of sleeping: calls back
// to back, and calls after pauses longer than the 300 µs of polling (the workers sleep, then wake),
// each still run every worker exactly once; nested bursts and the end of the last one change
// nothing about that.
void TestWorkerPool::burstKeepsEveryCallWhole() {
  auto oneCall = [](int n) {
    std::mutex mu;
    std::multiset<int> ids;
    runOnWorkers(n, [&](int w) {
      std::lock_guard<std::mutex> lk(mu);
      ids.insert(w);
    });
    std::multiset<int> want;
    for (int i = 0; i < n; ++i) want.insert(i);
    return ids == want;
  };
  {
    const WorkerPoolBurst burst;
    for (int i = 0; i < 2000; ++i) QVERIFY2(oneCall(3), qPrintable(QStringLiteral("back-to-back call %1").arg(i)));
    {
      const WorkerPoolBurst nested;
      for (int i = 0; i < 20; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(i % 2 ? 50 : 1000));
        QVERIFY2(oneCall(3), qPrintable(QStringLiteral("call %1 after a pause").arg(i)));
      }
    }
    QVERIFY(oneCall(2));
  }
  QVERIFY(oneCall(3));
}

// threadsForWork's rule: min(requested, elements / 2^18, jobs), at least 1; 2^15 instead of 2^18
// while a burst lives. 2^16 elements: 0 → 1 thread outside a burst, 2 inside; 2^20 elements: 4
// either way (requested 4); 3 jobs cap it at 3.
void TestWorkerPool::burstLowersTheSplitThreshold() {
  QCOMPARE(threadsForWork(4, int64_t(1) << 16, 1000), 1);
  QCOMPARE(threadsForWork(4, int64_t(1) << 20, 1000), 4);
  {
    const WorkerPoolBurst burst;
    QCOMPARE(threadsForWork(4, int64_t(1) << 16, 1000), 2);
    QCOMPARE(threadsForWork(4, int64_t(1) << 20, 1000), 4);
    QCOMPARE(threadsForWork(4, int64_t(1) << 20, 3), 3);
    QCOMPARE(threadsForWork(4, int64_t(1) << 14, 1000), 1);
  }
  QCOMPARE(threadsForWork(4, int64_t(1) << 16, 1000), 1);
}

QTEST_APPLESS_MAIN(TestWorkerPool)
#include "test_worker_pool.moc"
