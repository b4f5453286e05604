// Reliability, hdf5 (docs/reliability.md, suite `rel`): Damaged and hostile HDF5 files: the fuzzers' regression inputs,
// the in-process limits each checked alone (this binary re-executed with "--replay-sequence DIR",
// tests/fuzz/in-process-limits), libhdf5 crashes contained by the checking helper, the helper on good files and in a
// hostile environment, and checks only for files from elsewhere.
#include "reliability_util.h"

using namespace fp8lab;
using namespace reliability;

class TestReliabilityHdf5 : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void fuzzRegressions_data();
  void fuzzRegressions();
  void inProcessLimitsAreEachCheckedAlone();
  void hdf5LibraryCrashesAreContained_data();
  void hdf5LibraryCrashesAreContained();
  void hdf5CheckPassesGoodFilesAndFallsBack();
  void hdf5CheckSurvivesHostileEnvironment();
  void hdf5ChecksRunOnlyForFilesFromElsewhere();
};

// Inputs found by the fuzzers (tests/fuzz), replayed: each must give an error, not a crash.
// Files live in tests/fuzz/regressions/<target>/; the row name is the file name.
void TestReliabilityHdf5::fuzzRegressions_data() {
  QTest::addColumn<QString>("target");
  QTest::addColumn<QString>("file");
  const QDir root(QStringLiteral(FP8LAB_SOURCE_DIR "/tests/fuzz/regressions"));
  int rows = 0;
  // A sub-folder holds a sequence: its files, in name order, read by one process (a finding that
  // needs the library state the earlier files left behind).
  for (const QString& t : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot))
    for (const QString& f : QDir(root.filePath(t)).entryList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot)) {
      QTest::newRow(qPrintable(t + QLatin1Char('/') + f)) << t << root.filePath(t + QLatin1Char('/') + f);
      ++rows;
    }
  if (rows == 0) QTest::newRow("none") << QString() << QString();
}

void TestReliabilityHdf5::fuzzRegressions() {
  QFETCH(QString, target);
  QFETCH(QString, file);
  if (target.isEmpty()) return; // no fuzzer finding recorded yet
  std::vector<std::string> files;
  if (QFileInfo(file).isDir()) {
    const QDir seq(file);
    for (const QString& f : seq.entryList(QDir::Files, QDir::Name)) files.push_back(seq.filePath(f).toStdString());
    QVERIFY2(!files.empty(), qPrintable(file + QStringLiteral(": empty sequence folder")));
  } else {
    files.push_back(file.toStdString());
  }
  const auto replay = [&](const std::string& f) -> int {
    if (target == QStringLiteral("fuzz_npy"))
      (void)importNpy(f);
    else if (target == QStringLiteral("fuzz_safetensors")) {
      auto l = listSafetensors(f);
      if (l.ok())
        for (const auto& e : l.value) (void)importSafetensors(f, e.name);
    } else if (target == QStringLiteral("fuzz_session")) {
      replaySessionInput(f);
    } else if (target == QStringLiteral("fuzz_config")) {
      // Through the real CLI: exit 0 or 2, never a signal (the sanitizer build aborts on UB).
      const std::string cli = cliPath().toStdString(), out = f + ".out-" + std::to_string(getpid()) + ".h5";
      const pid_t pid = fork();
      if (pid == 0) {
        const int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        dup2(nul, 2);
        execl(cli.c_str(), cli.c_str(), "run", f.c_str(), "--out", "/nonexistent-dir/x.h5", "-q",
              static_cast<char*>(nullptr));
        _exit(127);
      }
      int st = 0;
      waitpid(pid, &st, 0);
      return WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 2) ? 0 : 9;
    } else if (target == QStringLiteral("fuzz_idx")) {
      const std::string b = readBytes(f);
      if (b.empty()) return 0;
      std::vector<uint8_t> bytes(b.begin() + 1, b.end());
      try {
        if (b[0] & 1) bytes = gunzip(bytes, "x", int64_t{1} << 20);
        (void)parseIdx(bytes, "x", (b[0] >> 1) & 3, int64_t{1} << 24);
      } catch (const IdxError&) {
      }
    }
    return 0;
  };
  // Session inputs in a new process: a fork would inherit the library state of every file this
  // test binary opened before (the in-process limit of tests/fuzz/in-process-limits/).
  const int rc = target == QStringLiteral("fuzz_session") ? replayInFreshProcess(files, 60 * int(files.size()))
                                                          : inChild(
                                                                [&] {
                                                                  for (const std::string& f : files)
                                                                    if (const int r = replay(f); r != 0) return r;
                                                                  return 0;
                                                                },
                                                                60 * int(files.size()));
  QCOMPARE(rc, 0);
}

// tests/fuzz/in-process-limits/: files that pass the out-of-process check one by one but crash
// libhdf5 when read in sequence in one process (docs/reliability.md row 92, not contained). Each
// file alone must be handled — opened or refused — as an untrusted file by `fp8lab-cli
// --untrusted`, in a fresh process.
void TestReliabilityHdf5::inProcessLimitsAreEachCheckedAlone() {
  const QDir root(QStringLiteral(FP8LAB_SOURCE_DIR "/tests/fuzz/in-process-limits"));
  int files = 0;
  for (const QString& d : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot))
    for (const QString& f : QDir(root.filePath(d)).entryList(QDir::Files, QDir::Name)) {
      const std::string path = root.filePath(d + QLatin1Char('/') + f).toStdString();
      // The user's command, in its own process: opened (0) or refused (2), never a crash. (In
      // this test binary's own layout the stale global-heap read can land on unmapped memory even
      // for one file: where it lands depends on the process, which is why it is not contained.)
      QProcess p;
      p.start(QStringLiteral(FP8LAB_BINARY_DIR "/app/fp8lab-cli"),
              {QStringLiteral("--untrusted"), QStringLiteral("inspect"), QString::fromStdString(path)});
      QVERIFY(p.waitForFinished(60000));
      QVERIFY2(p.exitStatus() == QProcess::NormalExit && (p.exitCode() == 0 || p.exitCode() == 2), path.c_str());
      ++files;
    }
  QVERIFY2(files >= 2, "tests/fuzz/in-process-limits/ holds no inputs");
}

// Files that crash or hang libhdf5 1.10.8 itself (found by fuzz_session; tests/fuzz/
// known-libhdf5-crashes/): opened in-process they SEGV or loop inside the library. FP8 Lab walks
// a file's metadata in the separate fp8lab-h5check process first (core/session/hdf5_isolation.h),
// so each open must come back as one Corrupt error that says the checking process crashed or ran
// past its time limit — and this process must survive. The open runs in a forked child with a
// time limit, so a regression fails this row instead of killing the suite.
void TestReliabilityHdf5::hdf5LibraryCrashesAreContained_data() {
  QTest::addColumn<QString>("file");
  const QDir dir(QStringLiteral(FP8LAB_SOURCE_DIR "/tests/fuzz/known-libhdf5-crashes"));
  const QStringList files = dir.entryList({QStringLiteral("*.h5")}, QDir::Files);
  QVERIFY2(!files.isEmpty(), "tests/fuzz/known-libhdf5-crashes/*.h5 missing");
  for (const QString& f : files) QTest::newRow(qPrintable(f)) << dir.filePath(f);
}

void TestReliabilityHdf5::hdf5LibraryCrashesAreContained() {
  QFETCH(QString, file);
  QVERIFY2(!hdf5CheckerPath().empty(), "fp8lab-h5check not found (it is built with fp8lab_data)");
  // *.memcheck.h5: libhdf5 copies from past the end of a block on these, which faults or not
  // depending on the heap layout — only the memory-checked helper (FP8LAB_H5CHECK_ASAN) sees it.
  if (file.contains(QStringLiteral(".memcheck.")) && !checkerIsMemoryChecked())
    QSKIP("fp8lab-h5check is built without AddressSanitizer (FP8LAB_H5CHECK_ASAN=OFF or no libasan)");
  setHdf5CheckTimeoutSeconds(5); // the hanging file loops for minutes; 5 s is plenty for a real walk
  const std::string f = file.toStdString();
  const int rc = inChild(
      [&] {
        setHdf5Untrusted(true); // a session from elsewhere (--untrusted, Open untrusted…)
        // The importer's listing first, in this fresh process: it must be refused as well, though
        // the listing alone does not touch the attribute tables these files damage — the helper
        // runs the session walk too (an in-process listing of such a file left libhdf5's heap
        // damaged; tests/fuzz/regressions/fuzz_session/sequence-heap-use-after-free).
        const auto l = listHdf5Tensors(f);
        if (l.ok()) return 7;
        if (l.message().find("separate checking process") == std::string::npos) return 8;
        auto r = SessionReader::open(f);
        if (r.ok()) return 3; // these files are not valid sessions: must be refused
        if (!hasCode(r, Code::Corrupt)) return 4;
        const std::string m = r.message();
        if (m.find("separate checking process") == std::string::npos) return 5;
        // a signal (a plain helper), the memory checker's report (the ASan-built helper, exit 5), a
        // sanitizer's exit status (the whole-ASan build's helper), the time limit, or the memory limit
        if (m.find("crashed (signal") == std::string::npos && m.find("failed (exit status") == std::string::npos &&
            m.find("did not finish") == std::string::npos &&
            m.find("MiB of memory in a separate") == std::string::npos &&
            m.find("made a memory error") == std::string::npos)
          return 6;
        return 0;
      },
      40);
  setHdf5CheckTimeoutSeconds(0);
  QCOMPARE(rc, 0);
}

// The check lets a valid session through unchanged, and without a helper program the open still
// works (unprotected, as before the check existed).
// The memory-checked helper (AddressSanitizer runtime) must not turn an unusual environment into
// "every file refused" or "every file unprotected": a library preloaded in front of the ASan
// runtime is dropped from the helper's environment (the crafted file is still refused), and an
// address-space limit too small for ASan's shadow memory makes the helper unusable — then a good
// file opens (unprotected, as without the helper) instead of being called damaged.
void TestReliabilityHdf5::hdf5CheckSurvivesHostileEnvironment() {
  if (!checkerIsMemoryChecked()) QSKIP("fp8lab-h5check is built without AddressSanitizer");
  QTemporaryDir tmp;
  const std::string good = tmp.filePath(QStringLiteral("good.h5")).toStdString();
  Session s;
  s.runs.push_back(bigRun("r1", 8, 1.0f));
  QVERIFY(writeSession(good, s).ok());
  const std::string crafted = FP8LAB_SOURCE_DIR "/tests/fuzz/known-libhdf5-crashes/H5Aiterate2-H5A__close-segv.h5";
  const std::string bigAlloc =
      FP8LAB_SOURCE_DIR "/tests/fuzz/known-libhdf5-crashes/H5HL_protect-1.4GB-local-heap.memcheck.h5";
  int rc = inChild(
      [&] {
        setHdf5Untrusted(true);
        setenv("LD_PRELOAD", "libz.so.1", 1); // any library: ASan insists on coming first
        // Inherited sanitizer settings (a fuzzer's, a test run's) must not loosen the helper's: with
        // these, libhdf5's 1.4 GB allocation would be allowed, or returned as NULL, and pass.
        setenv("ASAN_OPTIONS", "allocator_may_return_null=1:max_allocation_size_mb=100000:redzone=16", 1);
        auto bad = SessionReader::open(crafted);
        if (bad.ok() || bad.message().find("separate checking process") == std::string::npos) return 3;
        auto big = SessionReader::open(bigAlloc);
        if (big.ok() || big.message().find("asked for more than 512 MiB at once") == std::string::npos) {
          std::fprintf(stderr, "%s\n", big.message().c_str());
          return 5;
        }
        auto ok = SessionReader::open(good);
        return ok.ok() ? 0 : 4;
      },
      60);
  QCOMPARE(rc, 0);
#if !defined(__SANITIZE_ADDRESS__) // this process's own ASan runtime would not survive the limit either
  rc = inChild(
      [&] {
        setHdf5Untrusted(true);
        rlimit lim{rlim_t(4) << 30, rlim_t(4) << 30}; // 4 GiB: plenty for FP8 Lab, far too little for ASan's shadow
        if (setrlimit(RLIMIT_AS, &lim) != 0) return 10;
        auto ok = SessionReader::open(good);
        if (!ok.ok()) {
          std::fprintf(stderr, "%s\n", ok.message().c_str());
          return 11;
        }
        return ok.value->info().runs.size() == 1 ? 0 : 12;
      },
      60);
  QCOMPARE(rc, 0);
#endif
}

void TestReliabilityHdf5::hdf5CheckPassesGoodFilesAndFallsBack() {
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  const std::string path = tmp.filePath(QStringLiteral("good.h5")).toStdString();
  Session s;
  s.runs.push_back(bigRun("r1", 8, 1.0f));
  QVERIFY(writeSession(path, s).ok());
  QVERIFY(checkHdf5FileOutOfProcess(path).ok());
  auto r = SessionReader::open(path);
  QVERIFY2(r.ok(), r.message().c_str());
  QCOMPARE(r.value->info().runs.size(), size_t(1));
  const int rc = inChild(
      [&] {
        setenv("FP8LAB_H5CHECK", "/nonexistent/fp8lab-h5check", 1);
        setHdf5Untrusted(true);
        if (!hdf5CheckerPath().empty()) return 3;
        auto r2 = SessionReader::open(path);
        return r2.ok() && r2.value->info().runs.size() == 1 ? 0 : 4;
      },
      30);
  QCOMPARE(rc, 0);
}

// Sessions open in process (as h5py or HDFView do); the separate checking process runs only for
// files from elsewhere: foreign-dataset imports always, sessions opened as untrusted. The
// reference is the trusted open: an untrusted open must show exactly the same session, data,
// listing and imports, read from the original file itself (no copy), after one helper run per
// file version (a second open of the same version reuses the verdict).
void TestReliabilityHdf5::hdf5ChecksRunOnlyForFilesFromElsewhere() {
  QVERIFY2(!hdf5CheckerPath().empty(), "fp8lab-h5check not found (it is built with fp8lab_data)");
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  const std::string sess = tmp.filePath(QStringLiteral("s.h5")).toStdString();
  Session s;
  s.created_utc = "2026-01-02T03:04:05Z";
  s.attrs["note"] = std::string("root note");
  s.attrs["count"] = int64_t(7);
  Run a = bigRun("a", 96, 1.0f); // 9216 elements: chunked + gzip (≥ 4096)
  a.attrs["label"] = std::string("first");
  a.attrs["lr"] = 0.125;
  a.seed = 0xFEDCBA9876543210ull; // above INT64_MAX: the u64 attribute must survive the copy
  a.setMetric("snr", 31.5, "dB", "signal to noise");
  a.putFloat32("small/v", {1.5f, -2.25f, 3.0f}, 3, -1, "1", "contiguous");
  a.datasets["codes"] = Dataset::uint8({2, 3}, {0, 1, 2, 253, 254, 255}, "1", "codes");
  a.datasets["steps"] = Dataset::int64({2}, {-5, int64_t(1) << 40}, "step", "steps");
  a.datasets["wide"] = Dataset::float64({1, 2}, {0.1, -1e300}, "1", "float64");
  a.group_attrs["small"]["group_note"] = std::string("g");
  s.runs.push_back(a);
  s.runs.push_back(bigRun("b", 8, 5.0f));
  QVERIFY(writeSession(sess, s).ok());
  // A foreign file: big-endian float64 [3, 4], float32 [5] with an attribute, a rank-3 float (listed,
  // not importable) and an integer dataset (not listed).
  const std::string foreign = tmp.filePath(QStringLiteral("f.h5")).toStdString();
  {
    hid_t f = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    auto put = [&](const char* name, hid_t ftype, hid_t mtype, std::vector<hsize_t> dims, const void* data) {
      hid_t sp = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
      hid_t d = H5Dcreate2(f, name, ftype, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
      H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
      H5Dclose(d);
      H5Sclose(sp);
    };
    const double w[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, -0.5};
    const float v[5] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f};
    const float cube[8] = {};
    const int ints[3] = {1, 2, 3};
    put("/model/w", H5T_IEEE_F64BE, H5T_NATIVE_DOUBLE, {3, 4}, w);
    put("/v", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {5}, v);
    put("/cube", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {2, 2, 2}, cube);
    put("/ints", H5T_STD_I32LE, H5T_NATIVE_INT, {3}, ints);
    H5Pclose(lcpl);
    H5Fclose(f);
  }
  struct Seen {
    SessionInfo info;
    std::vector<Dataset> data;
    std::vector<TensorEntry> list;
    std::vector<Dataset> imports;
    std::vector<std::string> open_files;             // what libhdf5 held while the reader was open
    uint64_t session_checks = 0, foreign_checks = 0; // helper runs during the session / foreign part
  };
  auto look = [&](Seen* out) {
    const uint64_t c0 = hdf5CheckerRuns();
    auto r = SessionReader::open(sess);
    out->session_checks = hdf5CheckerRuns() - c0;
    QVERIFY2(r.ok() && r.issues.empty(), r.message().c_str());
    out->info = r.value->info();
    for (const auto& run : out->info.runs)
      for (const auto& d : run.datasets) {
        auto ds = r.value->read(run.id, d.path);
        QVERIFY2(ds.ok(), ds.message().c_str());
        out->data.push_back(ds.value);
      }
    std::vector<hid_t> ids(64);
    const ssize_t n = H5Fget_obj_ids(H5F_OBJ_ALL, H5F_OBJ_FILE, ids.size(), ids.data());
    for (ssize_t i = 0; i < n; ++i) {
      char name[4096] = {};
      H5Fget_name(ids[size_t(i)], name, sizeof name);
      out->open_files.emplace_back(name);
    }
    const uint64_t c1 = hdf5CheckerRuns();
    auto l = listHdf5Tensors(foreign);
    QVERIFY2(l.ok(), l.message().c_str());
    out->list = l.value;
    for (const char* name : {"/model/w", "/v"}) {
      auto d = importHdf5Dataset(foreign, name);
      QVERIFY2(d.ok(), d.message().c_str());
      out->imports.push_back(d.value);
    }
    auto bad = importHdf5Dataset(foreign, "/cube");
    QVERIFY(!bad.ok() && hasCode(bad, Code::WrongShape)); // rank 3: the same refusal both ways
    out->foreign_checks = hdf5CheckerRuns() - c1;
  };
  Seen ref, iso;
  look(&ref);
  setHdf5Untrusted(true);
  look(&iso);
  Seen again;
  look(&again);
  setHdf5Untrusted(false);
  QCOMPARE(ref.open_files, std::vector<std::string>{sess}); // the session itself, in process
  QCOMPARE(iso.open_files, std::vector<std::string>{sess}); // no copy
  QCOMPARE(ref.session_checks, uint64_t(0));                // a trusted open starts no helper
  QCOMPARE(ref.foreign_checks, uint64_t(1));                // the foreign file: one verdict, then reused
  QCOMPARE(iso.session_checks, uint64_t(1));                // untrusted: checked first
  QCOMPARE(iso.foreign_checks, uint64_t(0));
  QCOMPARE(again.session_checks + again.foreign_checks, uint64_t(0));
  // The session as the reader shows it.
  QCOMPARE(iso.info.path, sess);
  QCOMPARE(iso.info.format_version, ref.info.format_version);
  QCOMPARE(iso.info.app_version, ref.info.app_version);
  QCOMPARE(iso.info.created_utc, std::string("2026-01-02T03:04:05Z"));
  QCOMPARE(iso.info.modified_utc, ref.info.modified_utc);
  QVERIFY(iso.info.attrs == ref.info.attrs);
  QCOMPARE(iso.info.runs.size(), size_t(2));
  for (size_t i = 0; i < ref.info.runs.size(); ++i) {
    const RunInfo &x = ref.info.runs[i], &y = iso.info.runs[i];
    QCOMPARE(y.id, x.id);
    QCOMPARE(y.seed, x.seed);
    QCOMPARE(y.type, x.type);
    QCOMPARE(y.config_json, x.config_json);
    QCOMPARE(y.created_utc, x.created_utc);
    QVERIFY(y.attrs == x.attrs);
    QVERIFY(y.group_attrs == x.group_attrs);
    QCOMPARE(y.metrics.size(), x.metrics.size());
    for (const auto& [k, m] : x.metrics) {
      QCOMPARE(y.metrics.at(k).value, m.value);
      QCOMPARE(y.metrics.at(k).units, m.units);
    }
    QCOMPARE(y.datasets.size(), x.datasets.size());
    for (size_t j = 0; j < x.datasets.size(); ++j) {
      QCOMPARE(y.datasets[j].path, x.datasets[j].path);
      QVERIFY(y.datasets[j].dtype == x.datasets[j].dtype);
      QCOMPARE(y.datasets[j].shape, x.datasets[j].shape);
      QVERIFY(y.datasets[j].attrs == x.datasets[j].attrs);
      QCOMPARE(y.datasets[j].chunked, x.datasets[j].chunked);
      QCOMPARE(y.datasets[j].compressed, x.datasets[j].compressed);
    }
  }
  QCOMPARE(ref.info.runs[0].seed, uint64_t(0xFEDCBA9876543210ull));
  QCOMPARE(ref.info.runs[0].datasets.size(), size_t(5));
  QVERIFY(ref.info.runs[0].datasets[1].compressed);  // output/D (sorted: codes, output/D, small/v, ...), 9216 elements
  QVERIFY(!ref.info.runs[0].datasets[2].compressed); // small/v
  QCOMPARE(iso.data.size(), ref.data.size());
  for (size_t i = 0; i < ref.data.size(); ++i) {
    QCOMPARE(iso.data[i].shape, ref.data[i].shape);
    QVERIFY(iso.data[i].f32 == ref.data[i].f32 && iso.data[i].f64 == ref.data[i].f64 &&
            iso.data[i].u8 == ref.data[i].u8 && iso.data[i].i64 == ref.data[i].i64);
  }
  // The importer, through the helper.
  QCOMPARE(iso.list.size(), ref.list.size());
  QCOMPARE(ref.list.size(), size_t(3)); // /cube, /model/w, /v (floats only)
  for (size_t i = 0; i < ref.list.size(); ++i) {
    QCOMPARE(iso.list[i].name, ref.list[i].name);
    QCOMPARE(iso.list[i].dtype, ref.list[i].dtype);
    QCOMPARE(iso.list[i].shape, ref.list[i].shape);
    QCOMPARE(iso.list[i].importable, ref.list[i].importable);
  }
  for (size_t i = 0; i < ref.imports.size(); ++i) {
    QVERIFY(iso.imports[i].dtype == ref.imports[i].dtype);
    QCOMPARE(iso.imports[i].shape, ref.imports[i].shape);
    QVERIFY(iso.imports[i].f32 == ref.imports[i].f32 && iso.imports[i].f64 == ref.imports[i].f64);
    QVERIFY(iso.imports[i].attrs == ref.imports[i].attrs);
  }
  QCOMPARE(ref.imports[0].f64.back(), -0.5);                                  // big-endian float64, exact
  QCOMPARE(attrString(ref.imports[0].attrs, "source").value_or(""), foreign); // the original path, not the copy
  QCOMPARE(attrString(iso.imports[0].attrs, "source_dtype").value_or(""), std::string(">float64"));
}

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--replay-sequence") == 0) { // tests/fuzz/in-process-limits/README.md
    const QDir seq(QString::fromLocal8Bit(argv[2]));
    for (const QString& f : seq.entryList(QDir::Files, QDir::Name)) {
      std::fprintf(stderr, "replaying %s\n", qPrintable(seq.filePath(f)));
      replaySessionInput(seq.filePath(f).toStdString());
    }
    return 0;
  }
  TestReliabilityHdf5 t;
  QTEST_SET_MAIN_SOURCE_PATH
  return QTest::qExec(&t, argc, argv);
}

#include "test_reliability_hdf5.moc"
