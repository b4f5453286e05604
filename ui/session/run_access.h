// Read access to the datasets of ONE run for the analysis views (amax history, scale evolution,
// error heatmap, comparison): either a run already in memory (RunRecord::core, a run the GUI just
// computed) or a run inside a session file, read lazily through core/session's SessionReader so a
// 4096×4096 run never loads more of the file than the view needs. Values come back as float64 whatever the stored
// dtype.
#pragma once

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#ifdef FP8LAB_HAVE_HDF5
#include "session/session.h"
#endif

namespace fp8lab::ui {

struct RunRecord;

/// Views read a dataset or a window of more elements than this on the thread pool when the read
/// follows a choice in the GUI (a run, a map, a zoom, a tensor); a smaller one at once. 2^20
/// elements read and reduce in a few tens of milliseconds, under the 100 ms the GUI thread may
/// block.
constexpr int64_t kBackgroundReadElements = int64_t(1) << 20;

/// A dense row-major float64 block.
struct Block {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  double at(int64_t r, int64_t c) const { return v[size_t(r * cols + c)]; }
};

class RunAccess {
public:
  virtual ~RunAccess() = default;

#ifdef FP8LAB_HAVE_HDF5
  /// A run held in memory (no copy: shares the core run).
  static std::shared_ptr<RunAccess> fromRun(std::shared_ptr<const fp8lab::Run> run);
  /// A run inside a session file, opened with SessionReader (validates the layout, reads no
  /// dataset). nullptr and *error set when the file or the run cannot be opened. An empty runId
  /// picks the first run.
  static std::shared_ptr<RunAccess> fromFile(const QString& fileName, const QString& runId, QString* error);
#endif
  /// The best source for a GUI run: its in-memory core run when it has one, else the session
  /// file (when `fileName` names one that holds the run), else a run built from the record's
  /// float32 tensors. Never nullptr.
  static std::shared_ptr<RunAccess> forRecord(const RunRecord& r, const QString& fileName);

  virtual QString id() const = 0;
  virtual QString type() const = 0; ///< "gemm", "training", ...
  virtual QJsonObject config() const = 0;
  /// A run attribute as text ("" when absent); numbers are printed.
  virtual QString attr(const QString& key) const = 0;
  virtual std::optional<double> metric(const QString& name) const = 0;
  virtual QStringList metricNames() const = 0;
  /// Dataset paths, sorted ("error/abs", "history/fc1/input/amax", ...).
  virtual QStringList datasets() const = 0;
  bool has(const QString& path) const {
    return datasets().contains(path);
  }
  /// Shape of a dataset (empty when absent).
  virtual std::vector<int64_t> shape(const QString& path) const = 0;
  /// A dataset attribute as text ("" when absent).
  virtual QString datasetAttr(const QString& path, const QString& key) const = 0;
  /// A group attribute (e.g. "history/fc1/input", "history_len") as text.
  virtual QString groupAttr(const QString& group, const QString& key) const = 0;

  /// Rows [r0, r0+nr) × cols [c0, c0+nc) of a 2-D dataset (a 1-D dataset is one row). False and
  /// *error when absent or out of range.
  virtual bool read(const QString& path, int64_t r0, int64_t c0, int64_t nr, int64_t nc, Block* out,
                    QString* error) const = 0;
  /// Plane `index` of a 3-D dataset [n, rows, cols] as a [rows, cols] block (the maps of
  /// `block_stats/`); of a dataset of higher rank [n, a, …, b] as a [a·…, b] block (the attention
  /// snapshots [n, heads, T, T]). False and *error when absent, of rank below 3 or `index` is out
  /// of range. A session file's dataset is read whole (core/session reads windows of 2-D datasets
  /// only): call it on the thread pool for big ones.
  virtual bool readPlane(const QString& path, int64_t index, Block* out, QString* error) const;
  /// The whole dataset (rank 1: [1, n]).
  bool readAll(const QString& path, Block* out, QString* error) const;
  /// Rows × cols of a dataset: rank 1 → (1, n), rank 2 → (r, c); (0, 0) when absent.
  std::pair<int64_t, int64_t> dims(const QString& path) const;
#ifdef FP8LAB_HAVE_HDF5
  /// The run's metadata as core/session describes it (id, type, config text, seed, attributes,
  /// metrics), for the models in core that rank runs (the Decide view, the session report);
  /// nullopt for a run built in the GUI without a core run.
  virtual std::optional<fp8lab::RunInfo> runInfo() const {
    return std::nullopt;
  }
#endif
};

/// The steps of a training run as an info line says them: "465 of 1407 steps (cancelled)" when
/// the run stopped before its plan (attributes steps_completed, epochs_planned × steps_per_epoch
/// and status, docs/session-format.md), else "16 steps". `stored`: the steps its datasets hold,
/// used when the run has no steps_completed attribute.
QString stepsDoneText(const RunAccess& run, int64_t stored);

} // namespace fp8lab::ui
