// Session I/O throughput: writing and reading a 4096×4096 GEMM run (inputs A and B, output D,
// reference D in float64, error/abs, error/rel: 448 MiB) through core/session, next to a raw
// fwrite / fread of the same bytes in the same process (target: ≥ 50 % of raw with compression
// off). Both writers end with fflush + fsync, as the session's atomic save does
// (write beside, fsync, rename), so they pay the same durability cost.
//
// Run:  build/tests/bench/bench_session [--benchmark_filter=...]
// Files go to $FP8LAB_BENCH_DIR (default: the system temp directory).
#include <benchmark/benchmark.h>
#include <hdf5.h>

#include "session/hdf5_isolation.h"
#include "session/session.h"
#include "session/session_lock.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace fp8lab;

namespace {

constexpr int64_t kN = 4096;

std::string benchDir() {
  const char* d = std::getenv("FP8LAB_BENCH_DIR");
  return d && *d ? d : std::filesystem::temp_directory_path().string();
}

/// Sets the file's modification time to now, which makes it a new file version.
void touch(const std::string& path) {
  const timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);
}

/// The run, built once: random-looking data (so compression has real work) that is cheap to make.
const Session& gemmSession() {
  static Session s = [] {
    Session ss;
    Run r;
    r.id = "gemm4096";
    r.type = "gemm";
    r.config_json = R"({"type":"gemm","m":4096,"k":4096,"n":4096,"seed":1})";
    r.seed = 1;
    r.backend = "cpu";
    const size_t n = size_t(kN * kN);
    std::mt19937 gen(42);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> base(1 << 20);
    for (auto& x : base) x = nd(gen);
    auto fill = [&](float mul, size_t off) {
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = mul * base[(i + off) & ((1 << 20) - 1)] + float(i & 7) * 1e-3f;
      return v;
    };
    r.putFloat32("inputs/A", fill(1.0f, 0), kN, kN, "1", "A");
    r.putFloat32("inputs/B", fill(1.0f, 12345), kN, kN, "1", "B");
    r.putFloat32("output/D", fill(64.0f, 777), kN, kN, "1", "D");
    std::vector<double> ref(n);
    for (size_t i = 0; i < n; ++i) ref[i] = 64.0 * double(base[(i + 777) & ((1 << 20) - 1)]) + double(i % 13) * 1e-9;
    r.datasets["reference/D"] = Dataset::float64({kN, kN}, std::move(ref), "1", "reference");
    r.putFloat32("error/abs", fill(0.01f, 999), kN, kN, "1", "|D - ref|");
    r.putFloat32("error/rel", fill(0.001f, 4242), kN, kN, "1", "rel");
    ss.runs.push_back(std::move(r));
    return ss;
  }();
  return s;
}

int64_t sessionBytes() {
  int64_t b = 0;
  for (const auto& [p, d] : gemmSession().runs[0].datasets) b += d.storedCount() * int64_t(d.elementBytes());
  return b;
}

void BM_SessionWrite(benchmark::State& state) {
  const Session& s = gemmSession();
  const std::string path = benchDir() + "/fp8lab_bench_session.h5";
  WriteOptions opt;
  opt.compress = state.range(0) != 0;
  for (auto _ : state) {
    Status st = writeSession(path, s, opt);
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      break;
    }
  }
  state.SetBytesProcessed(state.iterations() * sessionBytes());
  state.counters["file_MiB"] = double(std::filesystem::file_size(path)) / (1 << 20);
}

void BM_RawFwrite(benchmark::State& state) {
  const Session& s = gemmSession();
  const std::string path = benchDir() + "/fp8lab_bench_raw.bin";
  for (auto _ : state) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    for (const auto& [p, d] : s.runs[0].datasets) {
      const void* buf =
          d.dtype == DType::Float64 ? static_cast<const void*>(d.f64.data()) : static_cast<const void*>(d.f32.data());
      std::fwrite(buf, d.elementBytes(), size_t(d.storedCount()), f);
    }
    std::fflush(f);
    ::fsync(fileno(f));
    std::fclose(f);
  }
  state.SetBytesProcessed(state.iterations() * sessionBytes());
}

void BM_SessionRead(benchmark::State& state) {
  const std::string path = benchDir() + "/fp8lab_bench_session_r" + std::to_string(state.range(0)) + ".h5";
  WriteOptions opt;
  opt.compress = state.range(0) != 0;
  if (!writeSession(path, gemmSession(), opt).ok()) {
    state.SkipWithError("cannot write the session");
    return;
  }
  for (auto _ : state) {
    auto r = loadSession(path);
    if (!r.ok()) {
      state.SkipWithError(r.message().c_str());
      break;
    }
    benchmark::DoNotOptimize(r.value.runs[0].datasets.size());
  }
  state.SetBytesProcessed(state.iterations() * sessionBytes());
  std::filesystem::remove(path);
}

void BM_RawFread(benchmark::State& state) {
  const std::string path = benchDir() + "/fp8lab_bench_raw.bin";
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    for (const auto& [p, d] : gemmSession().runs[0].datasets) {
      const void* buf =
          d.dtype == DType::Float64 ? static_cast<const void*>(d.f64.data()) : static_cast<const void*>(d.f32.data());
      std::fwrite(buf, d.elementBytes(), size_t(d.storedCount()), f);
    }
    std::fclose(f);
  }
  for (auto _ : state) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    std::vector<std::vector<char>> bufs;
    for (const auto& [p, d] : gemmSession().runs[0].datasets) {
      std::vector<char> b(size_t(d.storedCount()) * d.elementBytes()); // zero-filled, like the session reader's vectors
      if (std::fread(b.data(), 1, b.size(), f) != b.size()) state.SkipWithError("short read");
      bufs.push_back(std::move(b));
    }
    std::fclose(f);
    benchmark::DoNotOptimize(bufs.data());
  }
  state.SetBytesProcessed(state.iterations() * sessionBytes());
  std::filesystem::remove(path);
}

/// Opening (SessionReader::open, metadata only) and loading (loadSession, every dataset) a session:
/// as a trusted file (arg 0: in process, no helper), and as a file from elsewhere (arg 1: the
/// separate checking process walks its metadata first, then the same in-process open) — the price
/// of the check, beside its peer. The session: six 1024² datasets (float64 reference included,
/// 28 MiB raw, gzip level 1 + shuffle as saved by default), about the default training session's
/// size. Each iteration first bumps the file's modification time, so every open is of a new file
/// version (no remembered verdict).
void BM_OpenFromOutside(benchmark::State& state) {
  const std::string path = benchDir() + "/fp8lab_bench_session_o.h5";
  static const Session small = [] {
    Session ss = gemmSession();
    for (auto& [p, d] : ss.runs[0].datasets) {
      d.shape = {1024, 1024};
      d.f32.resize(d.f32.empty() ? 0 : 1024 * 1024);
      d.f64.resize(d.f64.empty() ? 0 : 1024 * 1024);
    }
    ss.runs[0].id = "gemm1024";
    return ss;
  }();
  if (!writeSession(path, small).ok()) {
    state.SkipWithError("cannot write the session");
    return;
  }
  setHdf5Isolation(state.range(0) != 0); // main() turns the check off for the throughput benchmarks
  setHdf5Untrusted(state.range(0) != 0);
  if (state.range(0) != 0 && hdf5CheckerPath().empty()) state.SkipWithError("fp8lab-h5check not found");
  for (auto _ : state) {
    touch(path); // a new file version: no remembered verdict
    auto r = loadSession(path);
    if (!r.ok()) {
      state.SkipWithError(r.message().c_str());
      break;
    }
    benchmark::DoNotOptimize(r.value.runs[0].datasets.size());
  }
  setHdf5Untrusted(false);
  setHdf5Isolation(false);
  state.SetLabel(state.range(0) != 0 ? "untrusted: metadata check in the helper, then in process"
                                     : "trusted: in process");
  std::filesystem::remove(path);
}

/// Appending a small run (64×64 float32 output) to the 448 MiB session (arg 1: appendRuns, the
/// atomic append: byte copy of the file, the new run written into the copy, fsync, rename) beside
/// its peer (arg 0: a raw copy of the same file with copy_file_range + fsync, what any atomic
/// replacement must at least cost). Target: the append ≤ 2× the copy.
void BM_AppendRun(benchmark::State& state) {
  const std::string path = benchDir() + "/fp8lab_bench_session_a.h5";
  const std::string copy = benchDir() + "/fp8lab_bench_session_a.copy";
  WriteOptions opt;
  opt.compress = false;
  if (!writeSession(path, gemmSession(), opt).ok()) {
    state.SkipWithError("cannot write the session");
    return;
  }
  Run small;
  small.id = "small";
  small.type = "bench";
  small.config_json = "{}";
  small.putFloat32("output/D", std::vector<float>(64 * 64, 1.0f), 64, 64, "1", "bench");
  WriteOptions ao;
  ao.on_conflict = WriteOptions::OnConflict::Rename;
  for (auto _ : state) {
    if (state.range(0) == 0) {
      const int in = ::open(path.c_str(), O_RDONLY), out = ::open(copy.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      struct stat st {};
      ::fstat(in, &st);
      for (off_t left = st.st_size; left > 0;) {
        const ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, size_t(left), 0);
        if (n <= 0) break;
        left -= n;
      }
      ::fsync(out);
      ::close(in);
      ::close(out);
    } else {
      const Status st = appendRuns(path, {small}, ao);
      if (!st.ok()) {
        state.SkipWithError(st.message().c_str());
        break;
      }
    }
  }
  std::error_code ec;
  state.counters["file_MiB"] = double(std::filesystem::file_size(path, ec)) / 1048576.0;
  state.SetLabel(state.range(0) == 0 ? "raw copy (copy_file_range + fsync)" : "appendRuns (atomic)");
  std::filesystem::remove(path, ec);
  std::filesystem::remove(copy, ec);
}

/// What the writer's lock costs a save (core/session/session_lock.h), on the 448 MiB session:
/// arg 0: taking and releasing the lock alone (open of the lock file, flock, the holder line
/// written, unlock); arg 1: the desktop app's save over that file when another program has added
/// a run (saveSessionMerging: the lock, the run ids read under it, every run copied by H5Ocopy,
/// the other program's run kept) beside arg 2: the same save without the merge
/// (writeSessionItems: the lock and the copies). The lock should be lost in the noise of any
/// save; the merge should cost one metadata read.
void BM_WriterLock(benchmark::State& state) {
  const std::string path = benchDir() + "/fp8lab_bench_session_l.h5";
  WriteOptions opt;
  opt.compress = false;
  if (!writeSession(path, gemmSession(), opt).ok()) {
    state.SkipWithError("cannot write the session");
    return;
  }
  Run other;
  other.id = "other";
  other.type = "bench";
  other.config_json = "{}";
  other.putFloat32("output/D", std::vector<float>(64 * 64, 1.0f), 64, 64, "1", "bench");
  std::vector<std::string> known;
  for (const Run& r : gemmSession().runs) known.push_back(r.id);
  std::vector<SaveItem> items;
  for (const std::string& id : known) items.push_back(SaveItem{nullptr, path, id, id, {}});
  for (auto _ : state) {
    if (state.range(0) == 0) {
      Status st;
      auto lock = SessionLock::acquire(path, LockWait{}, {}, &st);
      benchmark::DoNotOptimize(lock.get());
    } else {
      state.PauseTiming();
      (void)deleteRuns(path, {"other"}); // absent on the first round: NotFound, file unchanged
      (void)appendRuns(path, {other});
      state.ResumeTiming();
      const Status st = state.range(0) == 1 ? saveSessionMerging(path, items, known) : writeSessionItems(path, items);
      if (!st.ok()) {
        state.SkipWithError(st.message().c_str());
        break;
      }
    }
  }
  state.SetLabel(state.range(0) == 0   ? "lock + unlock"
                 : state.range(0) == 1 ? "app save, merging (keeps the other's run)"
                                       : "app save, plain (drops it)");
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

/// Opening a session for its metadata, as `fp8lab-cli inspect` and the GUI do (arg 0:
/// SessionReader::open — libhdf5 plus FP8 Lab's validation of every run, no data read), beside its
/// peer (arg 1: libhdf5 alone, H5Fopen then H5Ovisit of every object counting its attributes, what
/// any in-process HDF5 reader pays at least), on the same file. Each iteration bumps the file's
/// modification time first.
void BM_OpenMetadata(benchmark::State& state) {
  const std::string path = benchDir() + "/fp8lab_bench_session_b.h5";
  WriteOptions wo;
  wo.compress = false;
  if (!writeSession(path, gemmSession(), wo).ok()) {
    state.SkipWithError("cannot write the session");
    return;
  }
  for (auto _ : state) {
    touch(path); // a new file version: no remembered verdict
    if (state.range(0) == 0) {
      auto r = SessionReader::open(path);
      if (!r.ok()) {
        state.SkipWithError(r.message().c_str());
        break;
      }
      benchmark::DoNotOptimize(r.value->info().runs.size());
      continue;
    }
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
      state.SkipWithError("H5Fopen failed");
      break;
    }
    int64_t objects = 0;
    H5Ovisit(
        f, H5_INDEX_NAME, H5_ITER_INC,
        [](hid_t, const char*, const H5O_info_t* info, void* n) -> herr_t {
          *static_cast<int64_t*>(n) += 1 + static_cast<int64_t>(info->num_attrs);
          return 0;
        },
        &objects);
    H5Fclose(f);
    benchmark::DoNotOptimize(objects);
  }
  state.SetLabel(state.range(0) == 0 ? "SessionReader::open (validated)" : "libhdf5 alone: H5Fopen + H5Ovisit");
  std::filesystem::remove(path);
}

/// What the GUI heatmap does: a 4096² map reduced (max |x|) to 512×512, or a 1024² window.
void BM_HeatmapReads(benchmark::State& state) {
  const std::string path = benchDir() + "/fp8lab_bench_session_h.h5";
  if (!writeSession(path, gemmSession()).ok()) {
    state.SkipWithError("cannot write the session");
    return;
  }
  auto rd = SessionReader::open(path);
  for (auto _ : state) {
    if (state.range(0) == 0) {
      auto r = rd.value->readReduced("gemm4096", "error/abs", 8, 8, Reduce::MaxAbs);
      benchmark::DoNotOptimize(r.value.f64.data());
    } else {
      Region g;
      g.row0 = 1024;
      g.col0 = 2048;
      g.rows = g.cols = 1024;
      auto r = rd.value->readRegion("gemm4096", "error/abs", g);
      benchmark::DoNotOptimize(r.value.f32.data());
    }
  }
  state.SetLabel(state.range(0) == 0 ? "reduce 4096^2 -> 512^2 (max|x|, gzip)" : "window 1024^2 of 4096^2 (gzip)");
  rd.value.reset();
  std::filesystem::remove(path);
}

/// What the Block map does on a step change: one plane of a [1407, 256, 25] float32 block map
/// (fc1's weight in MXFP8 blocks, mapped at every step of 3 epochs: 36 MiB, gzip), read alone
/// (readPlane) next to the whole dataset.
void BM_BlockMapStep(benchmark::State& state) {
  const std::string path = benchDir() + "/fp8lab_bench_session_m.h5";
  constexpr int64_t kSteps = 1407, kRows = 256, kCols = 25;
  {
    Session ss;
    Run r;
    r.id = "maps";
    r.type = "training";
    r.config_json = R"({"type":"training"})";
    r.backend = "cpu";
    std::mt19937 gen(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> v(size_t(kSteps * kRows * kCols));
    for (auto& x : v) x = std::exp2(std::round(4.0f * nd(gen)));
    r.datasets["block_stats/fc1/kernel/map_scale"] = Dataset::float32({kSteps, kRows, kCols}, std::move(v), "1", "map");
    ss.runs.push_back(std::move(r));
    if (!writeSession(path, ss).ok()) {
      state.SkipWithError("cannot write the session");
      return;
    }
  }
  auto rd = SessionReader::open(path);
  int64_t k = 0;
  for (auto _ : state) {
    k = (k + 97) % kSteps;
    if (state.range(0) == 0) {
      auto r = rd.value->readPlane("maps", "block_stats/fc1/kernel/map_scale", k);
      benchmark::DoNotOptimize(r.value.f32.data());
    } else {
      auto r = rd.value->read("maps", "block_stats/fc1/kernel/map_scale");
      std::vector<float> plane(r.value.f32.begin() + k * kRows * kCols, r.value.f32.begin() + (k + 1) * kRows * kCols);
      benchmark::DoNotOptimize(plane.data());
    }
  }
  state.SetLabel(state.range(0) == 0 ? "readPlane: one 256x25 plane" : "read all 1407 planes, keep one");
  rd.value.reset();
  std::filesystem::remove(path);
}

} // namespace

BENCHMARK(BM_RawFwrite)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_SessionWrite)->Arg(0)->ArgName("compress")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_RawFread)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_SessionRead)->Arg(0)->ArgName("compress")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
// gzip (level 1 + shuffle): for information; one iteration each (slow on 2 cores)
BENCHMARK(BM_SessionWrite)->Arg(1)->ArgName("compress")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_SessionRead)->Arg(1)->ArgName("compress")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_HeatmapReads)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
BENCHMARK(BM_BlockMapStep)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("whole")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5);

BENCHMARK(BM_AppendRun)->Arg(0)->Arg(1)->ArgName("append")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(4);
BENCHMARK(BM_WriterLock)->Arg(0)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(200);
BENCHMARK(BM_WriterLock)->Arg(1)->Arg(2)->ArgName("save")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_OpenMetadata)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("bare_hdf5")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(10);
BENCHMARK(BM_OpenFromOutside)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("untrusted")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5);

// The throughput benchmarks above measure the reader itself: they read files this process just
// wrote, with the checking process off (BM_OpenFromOutside measures what it adds).
int main(int argc, char** argv) {
  setHdf5Isolation(false);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
