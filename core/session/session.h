// FP8 Lab — HDF5 session files: the in-memory model (Session, Run, Dataset) and the reader /
// writer used by the GEMM experiment, the training experiment, the CLI and the GUI.
//
// File layout (docs/session-format.md is the normative description):
//
//   /                         attrs: application="FP8 Lab", format_version (int), app_version,
//                                    created_utc, modified_utc
//   /runs/<run_id>/           attrs: type ("gemm" | "training" | ...), config (JSON text as given),
//                                    seed (uint64), backend, device, created_utc, app_version,
//                                    + any extra run attributes
//   /runs/<run_id>/metrics    group; one scalar float64 attribute per metric, plus
//                             "<name>.units" and "<name>.meaning" string attributes
//   /runs/<run_id>/<path>     one HDF5 dataset per Run::datasets entry; path may nest
//                             ("inputs/A", "history/fc1/input/amax_history"); every dataset
//                             carries "units" and "meaning" string attributes
//
// FP8 (and FP6/FP4) data are stored as uint8 codes with a "format" attribute (format name as in
// core/formats, e.g. "E4M3FN") plus a float32 dequantized copy, because HDF5 1.10 has no FP8
// type (see putQuantized()).
//
// Errors: nothing here throws for bad files or I/O failures; every call returns a Status /
// Result carrying typed Issues (what is wrong, where in the file, detail). HDF5's own
// error stack printing is switched off and its messages are captured into the issue detail.
#pragma once

#include "common/progress.h"
#include "scaling/quantized_tensor.h"
#include "session/session_lock.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace fp8lab {

/// Version of the layout written by this code (root attribute "format_version"). Readers accept
/// files with format_version ≤ kSessionFormatVersion and refuse newer ones (FutureVersion).
inline constexpr int kSessionFormatVersion = 1;

// ---- results --------------------------------------------------------------------------------

/// Success flag plus typed issues (errors and warnings). ok == no issue of severity Error.
struct Status {
  std::vector<Issue> issues;
  bool ok() const;
  explicit operator bool() const { return ok(); }
  /// All issues, one per line (empty when there are none).
  std::string message() const;
  /// The first Error issue's text, or "" when ok.
  std::string firstError() const;
  /// The Error issues without the "error: " prefix ("not found at FILE: no such file"), one per
  /// line — for messages that add their own prefix.
  std::string errors() const;
  void add(Issue::Code code, std::string where, std::string detail, Severity severity = Severity::Error);
  void merge(const Status& other);
};

/// A value plus its Status; the value is meaningful only when ok().
template <class T> struct Result : Status { T value{}; };

// ---- the in-memory model --------------------------------------------------------------------

/// Element types a session dataset may have (stored as the matching little-endian HDF5 type).
enum class DType { Float32, Float64, UInt8, Int64 };
const char* toString(DType t); ///< "float32", "float64", "uint8", "int64"

/// An attribute value: text, a float64 or an int64 (written as HDF5 scalar attributes:
/// variable-length UTF-8 string, IEEE F64LE, STD I64LE).
using AttrValue = std::variant<std::string, double, int64_t>;
using Attributes = std::map<std::string, AttrValue>;

/// Attribute helpers: nullopt when absent or of another type (an int64 is returned by
/// attrDouble too, converted).
std::optional<std::string> attrString(const Attributes& a, const std::string& key);
std::optional<double> attrDouble(const Attributes& a, const std::string& key);
std::optional<int64_t> attrInt(const Attributes& a, const std::string& key);

/// A dense row-major array of rank 1..N with attributes. Exactly one of the data vectors (the one
/// matching dtype) holds shape-product elements; the others are empty.
struct Dataset {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::vector<float> f32;
  std::vector<double> f64;
  std::vector<uint8_t> u8;
  std::vector<int64_t> i64;
  Attributes attrs; ///< at least "units" and "meaning" (writer adds "" defaults if absent)

  int64_t elementCount() const; ///< product of shape (1 for rank 0)
  int64_t storedCount() const;  ///< size of the vector matching dtype
  size_t elementBytes() const;  ///< 4, 8, 1, 8
  /// Element i (row-major) as double, whatever the dtype.
  double valueAt(int64_t i) const;

  static Dataset float32(std::vector<int64_t> shape, std::vector<float> data, std::string units, std::string meaning);
  static Dataset float64(std::vector<int64_t> shape, std::vector<double> data, std::string units, std::string meaning);
  static Dataset uint8(std::vector<int64_t> shape, std::vector<uint8_t> data, std::string units, std::string meaning);
  static Dataset int64(std::vector<int64_t> shape, std::vector<int64_t> data, std::string units, std::string meaning);
};

/// A scalar result of a run (stored as attribute of /runs/<id>/metrics).
struct Metric {
  double value = 0;
  std::string units;   ///< e.g. "dB", "1" (dimensionless), "s"
  std::string meaning; ///< one line, e.g. "signal-to-quantization-noise ratio of D vs reference"
};

/// Metadata of a dataset without its data (what SessionReader lists before loading anything).
struct DatasetInfo {
  std::string path; ///< relative to the run group, e.g. "error/abs"
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  Attributes attrs;
  bool chunked = false;
  bool compressed = false;
};

/// One experiment run: its configuration, provenance, scalar metrics, and named datasets.
struct Run {
  std::string id;          ///< [A-Za-z0-9_.+=-]{1,128}, not starting with '.'; unique in a file
  std::string type;        ///< "gemm", "training", ... (dispatch key of `fp8lab-cli rerun`)
  std::string config_json; ///< the full configuration, JSON text exactly as given
  uint64_t seed = 0;       ///< master seed of all random draws of the run
  std::string backend;     ///< "cpu" / "cuda"
  std::string device;      ///< CPU model or GPU name
  std::string created_utc; ///< ISO 8601 "2026-11-29T07:40:00Z"; writer fills it when empty
  std::string app_version; ///< writer fills it (FP8LAB_VERSION) when empty
  Attributes attrs;        ///< extra run attributes (label, description, status, ...)
  std::map<std::string, Metric> metrics;
  /// Datasets by path relative to the run group. Intermediate groups are created as needed.
  std::map<std::string, Dataset> datasets;
  /// Attributes of intermediate groups, by group path relative to the run ("history/fc1/input").
  std::map<std::string, Attributes> group_attrs;

  /// Adds (or replaces) a float32 dataset [rows, cols] or [n] (cols < 0 → 1-D).
  Dataset& putFloat32(const std::string& path, std::vector<float> data, int64_t rows, int64_t cols, std::string units,
                      std::string meaning);
  /// Stores a quantized tensor under `prefix` (e.g. "quantized/A"):
  ///   <prefix>_codes        uint8 [rows, cols]; attrs format, scaling, block_rows, block_cols,
  ///                         scale_convention, saturated, underflow, ... (QuantizeStats)
  ///   <prefix>_scales       float32 [blockRows, blockCols] dequant scales
  ///                         (x ≈ decode(code) · dequant_scale — the internal convention)
  ///   <prefix>_quant_scales float32, same shape, when q.quant_scales is non-empty
  ///   <prefix>_scale_codes  uint8 E8M0 codes, same shape, MX only
  ///   <prefix>_dequantized  float32 [rows, cols] = q.dequantize(), for readers without FP8
  void putQuantized(const std::string& prefix, const QuantizedTensor& q, const std::string& meaning);
  /// Rebuilds a QuantizedTensor stored by putQuantized(); errors name the missing/bad piece.
  Result<QuantizedTensor> getQuantized(const std::string& prefix) const;

  const Dataset* find(const std::string& path) const;
  void setMetric(const std::string& name, double value, std::string units, std::string meaning);
};

/// A whole session in memory: file-level attributes plus runs in file order (sorted by id when
/// read back, HDF5 keeps groups in name order).
struct Session {
  int format_version = kSessionFormatVersion;
  std::string app_version;
  std::string created_utc;
  Attributes attrs; ///< extra root attributes
  std::vector<Run> runs;
  const Run* find(const std::string& id) const;
};

/// Metadata of a run without dataset contents.
struct RunInfo {
  std::string id, type, config_json, backend, device, created_utc, app_version;
  uint64_t seed = 0;
  Attributes attrs;
  std::map<std::string, Metric> metrics;
  std::vector<DatasetInfo> datasets; ///< sorted by path
  std::map<std::string, Attributes> group_attrs;
};

/// Metadata of a whole file (cheap: no dataset is read).
struct SessionInfo {
  std::string path;
  int format_version = 0;
  std::string app_version, created_utc, modified_utc;
  Attributes attrs;
  std::vector<RunInfo> runs; ///< sorted by id
  const RunInfo* find(const std::string& id) const;
};

/// Whether the file at `path` holds an HDF5 superblock signature at offset 0, 512, 1024, 2048, …
/// (HDF5 File Format Specification §II.A "Format Signature", the offsets H5Fis_hdf5 tries), read
/// with plain file I/O — libhdf5 never sees the file. False when it cannot be read.
bool hasHdf5Signature(const std::string& path);

/// True when id is a valid run id (see Run::id); otherwise *why says what is wrong.
bool isValidRunId(const std::string& id, std::string* why = nullptr);
/// Current time as ISO 8601 UTC "YYYY-MM-DDTHH:MM:SSZ".
std::string utcNow();

// ---- writing --------------------------------------------------------------------------------

struct WriteOptions {
  /// Chunked + shuffle + gzip for datasets with at least compress_min_elements elements.
  /// false: contiguous, uncompressed (fastest; see tests/bench/bench_session.cpp).
  bool compress = true;
  int gzip_level = 1;                   ///< 1..9 (1: fastest; float maps gain little from more)
  int64_t compress_min_elements = 4096; ///< smaller datasets are always contiguous
  /// What to do when a run id being added already exists in the file.
  enum class OnConflict { Fail, Replace, Rename } on_conflict = OnConflict::Fail;
  /// mergeSessions only: replace an existing session at the output path that is not one of the
  /// inputs (its runs are lost). Without it such an output is refused. A file that is not a
  /// valid FP8 Lab session (text, JSON, foreign HDF5) is never replaced, whatever this says.
  bool replace_existing = false;
  ProgressFn progress; ///< per dataset; returning false cancels (file untouched)
  /// Test hook: called before every dataset write with its full path (before copying a run
  /// "copy:/runs/<id>", before an append's byte copy of the file "copy:file"); returning false
  /// makes the write fail there as an injected I/O error (to test that saves are atomic).
  std::function<bool(const std::string& dataset_path)> fault_injection;
  /// How to wait for the writer's lock of the file being replaced when another process holds it
  /// (session_lock.h): by default wait as long as it takes, cancellable through `progress`.
  LockWait lock;
};

/// Every function below holds the writer's lock of the file it replaces (session_lock.h) for the
/// whole read-modify-write, waiting as WriteOptions::lock says; a writer that cannot get it
/// fails with Issue::Code::Locked and writes nothing.
///
/// Writes `session` to `path`, replacing any existing file atomically: the data go to a
/// temporary file in the same directory ("<name>.tmp-XXXXXX"), which is flushed, fsync'ed and
/// renamed over `path` (POSIX rename is atomic); the directory is fsync'ed too. On any failure
/// the temporary file is removed and a previous file at `path` is untouched.
/// Every writer below follows the same rules for the file it replaces:
///  - a symbolic link at `path` (or a chain of them) is resolved to the file it finally points
///    to; the temporary goes beside that file and is renamed over it, so the link keeps pointing
///    at the updated file (a dangling link's target is created);
///  - an existing file this user may not write (access(W_OK) fails: `chmod a-w`, another
///    user's file) is refused — rename would replace it, needing only the directory writable.
/// Errors: WriteFailed (unwritable directory or file, disk full, injected fault), InvalidArgument
/// (bad run id, duplicate ids, data size not matching shape).
Status writeSession(const std::string& path, const Session& session, const WriteOptions& opt = {});

/// One run of a session being written by writeSessionItems: a run in memory (`run`), or a run of
/// another session file copied exactly as it is (`file`, `run_id`: H5Ocopy, no re-encoding; the
/// GUI saves runs it read lazily this way), stored as `id`, with its "label" attribute set to
/// `label` when that is not empty.
struct SaveItem {
  const Run* run = nullptr;
  std::string file, run_id, id, label;
};

/// Writes a session made of `items`, in order, to `path`, atomically (as writeSession; a source
/// file may be `path` itself). Errors: those of writeSession; DuplicateRun for an id given twice;
/// NotFound / Corrupt when a source file does not hold a valid run to copy (nothing written).
Status writeSessionItems(const std::string& path, const std::vector<SaveItem>& items, const WriteOptions& opt = {});

/// Adds runs to the session at `path` (creating it when absent), atomically: the file's bytes are
/// copied to a temporary file beside it (copy_file_range: a reflink or an in-kernel copy where the
/// filesystem can), the new runs are written into that copy (the existing runs are not touched),
/// then it replaces `path` (fsync, rename, fsync of the directory) — the cost of a file copy plus
/// the new runs. With OnConflict::Replace of an existing id the whole session is rewritten
/// instead (existing runs copied object by object with H5Ocopy, no re-encoding). Conflicting ids follow opt.on_conflict
/// (Rename appends
/// "-2", "-3", ...). `assigned_ids`, when given, receives the id each new run got.
Status appendRuns(const std::string& path, const std::vector<Run>& runs, const WriteOptions& opt = {},
                  std::vector<std::string>* assigned_ids = nullptr);

/// What saveSessionMerging found in the file that its caller did not know about.
struct SaveMerge {
  /// Runs another writer added since the caller last read or saved the file, kept in the save:
  /// {id in the file before, id stored} (they differ when the id clashed with one being saved).
  std::vector<std::pair<std::string, std::string>> kept;
  /// Runs the caller copies from the file itself that another writer removed meanwhile: their
  /// data are gone, so they are not in the save.
  std::vector<std::string> vanished;
};

/// The desktop app's save: writes `items` to `path` like writeSessionItems, but never drops runs
/// another process added to the file since the caller last read or saved it. Under the file's
/// writer lock it lists the runs at `path`; every run there whose id is not in `known` (the ids
/// the file held at the caller's last load or save) is copied into the new file after `items`,
/// renamed with "-2", "-3", ... when its id clashes with one of `items`; runs in `known` but not
/// in `items` stay deleted; an item copied from `path` whose run is no longer there is left out
/// and named in merge->vanished. A missing `path` is created from `items`. `merge` (may be null)
/// receives what was merged. Errors: those of writeSessionItems.
Status saveSessionMerging(const std::string& path, const std::vector<SaveItem>& items,
                          const std::vector<std::string>& known, const WriteOptions& opt = {},
                          SaveMerge* merge = nullptr);

/// Removes a run (atomic rewrite without it; space is reclaimed). NotFound when absent.
Status deleteRun(const std::string& path, const std::string& run_id, const WriteOptions& opt = {});

/// Removes several runs in one atomic rewrite. Every id is checked first: when any is absent
/// nothing is written and one NotFound error lists all the missing ids. Ids given twice count
/// once; an empty list is InvalidArgument.
Status deleteRuns(const std::string& path, const std::vector<std::string>& run_ids, const WriteOptions& opt = {});

/// Renames a run (atomic rewrite). A run whose config names it in "from_run" (the GEMM on a
/// training run's weights) is rewritten to name the new id. NotFound / DuplicateRun /
/// InvalidArgument as appropriate.
Status renameRun(const std::string& path, const std::string& from, const std::string& to, const WriteOptions& opt = {});

/// Joins the runs of several session files into `out` (created or replaced atomically; `out`
/// may be one of the inputs, compared as files: another path to the same file counts). While
/// nothing exists at `out`, an input naming the same path is skipped with a note, so
/// `merge all.h5 all.h5 shard-*.h5` works on its first use (`out` as the only input is an error). Every
/// input is validated first; nothing is written if one has an error or a warning (a damaged run
/// would be lost or copied damaged).
/// An existing `out` that is not one of the inputs is refused (WriteFailed naming it and how to
/// proceed: name it as an input to merge into it, or replace it) unless opt.replace_existing;
/// an existing `out` that is not a valid FP8 Lab session is never replaced (the same check as
/// appendRuns: its reader error plus WriteFailed).
/// Id collisions follow opt.on_conflict (default for merge callers: Rename). `notes` receives
/// one line per renamed run ("IN2.h5: run r1 stored as r1-2"). A run whose config names a run of
/// its input in "from_run" follows that run's new id (config rewritten, a note "IN2.h5: run G made
/// from r1: its from_run is now r1-2").
Status mergeSessions(const std::string& out, const std::vector<std::string>& inputs, const WriteOptions& opt = {},
                     std::vector<std::string>* notes = nullptr);

// ---- reading --------------------------------------------------------------------------------

/// A rectangular, optionally strided window of a 2-D dataset: rows row0, row0+row_step, ... (count
/// `rows`), same for columns. rows/cols = -1 means "to the end" (with the step).
struct Region {
  int64_t row0 = 0, col0 = 0;
  int64_t rows = -1, cols = -1;
  int64_t row_step = 1, col_step = 1;
};

/// How readReduced() summarises each block of a 2-D dataset.
enum class Reduce { Mean, Max, MaxAbs, Min };

/// An open session file for reading. Opening validates the whole layout (root attributes,
/// version, /runs, every run's required attributes and every dataset's shape/type/attributes)
/// without reading any dataset contents, so the GUI can show what is in a file of any size and
/// then read only the parts a view needs. Threads: one reader must not be used by two threads at
/// once; separate readers (and writers) in separate threads are safe when the HDF5 library is built
/// thread-safe (Debian's is: H5_HAVE_THREADSAFE; HDF5 then serialises its calls internally). With
/// a non-thread-safe HDF5 every session call must be serialised by the caller.
class SessionReader {
public:
  /// Opens and validates. Errors: NotFound, NotHdf5, Corrupt, ForeignFile, FutureVersion,
  /// MissingGroup, MissingAttribute, WrongShape, WrongType. Problems confined to one run or one
  /// dataset are reported as Warnings and that run/dataset is left out of info() (so a file with
  /// one damaged run still opens).
  static Result<std::unique_ptr<SessionReader>> open(const std::string& path);
  ~SessionReader();
  SessionReader(const SessionReader&) = delete;
  SessionReader& operator=(const SessionReader&) = delete;

  const SessionInfo& info() const;
  /// The whole dataset.
  Result<Dataset> read(const std::string& run_id, const std::string& dataset_path);
  /// A strided window of a 2-D dataset (HDF5 hyperslab: only the touched chunks are read).
  /// Result shape [rows, cols] of the window. InvalidArgument when outside the dataset.
  Result<Dataset> readRegion(const std::string& run_id, const std::string& dataset_path, const Region& r);
  /// Plane `index` of a 3-D dataset [planes, rows, cols] (a block map at one of its steps), as a
  /// [rows, cols] dataset with the dataset's attributes; of a dataset of higher rank [planes, a, …,
  /// b] (the attention snapshots [snapshots, heads, T, T]) as [a, …, b]. Only the chunks of that
  /// plane are read. WrongShape for a dataset of rank below 3, InvalidArgument for an index outside
  /// [0, planes).
  Result<Dataset> readPlane(const std::string& run_id, const std::string& dataset_path, int64_t index);
  /// A 2-D dataset (or a window of it, region steps ignored) reduced by blocks of
  /// block_rows × block_cols (edge blocks partial) into a float64 [ceil(rows/br), ceil(cols/bc)]
  /// map. Reads band by band (whole blocks, about one chunk row high), so memory stays at one
  /// band plus the result — for heatmaps that must not miss a single large error when zoomed out.
  Result<Dataset> readReduced(const std::string& run_id, const std::string& dataset_path, int64_t block_rows,
                              int64_t block_cols, Reduce how, const Region& window = {});
  /// The whole run (every dataset loaded).
  Result<Run> readRun(const std::string& run_id, const ProgressFn& progress = {});

private:
  SessionReader();
  struct Impl;
  std::unique_ptr<Impl> d;
};

/// Loads a whole session into memory (validates, then reads every run).
Result<Session> loadSession(const std::string& path, const ProgressFn& progress = {});

} // namespace fp8lab
