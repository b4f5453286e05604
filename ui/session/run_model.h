// The session's runs as one Qt model for every part of the GUI that lists or picks runs (the session
// tree, each analysis view's run box), in the manner of Tiled's document / current layer and
// LabPlot's shared aspect model: RunListModel lists the runs of a SessionDocument keyed by id, with
// the capabilities each view asks for as roles; RunFilterProxy keeps the runs a view can show;
// RunSelection is the one selection model whose current index is the session's current run.
//
// SessionDocument stays the one owner of the current run (it keeps it by id, see
// SessionDocument::currentRunId): RunSelection mirrors it and writes the user's choices back to
// it. runModel() and runSelection() give the one instance of each per document.
#pragma once

#include <QAbstractListModel>
#include <QFlags>
#include <QHash>
#include <QItemSelectionModel>
#include <QSortFilterProxyModel>
#include <QStringList>

namespace fp8lab::ui {

class SessionDocument;
struct RunRecord;

/// What a run holds that a view can show. The first group follows from the run's kind and config
/// alone (no file is read: run boxes list runs before their datasets are read); the second from
/// the run's dataset paths (docs/session-format.md), read once per run and cached.
enum class RunCap : quint32 {
  // from the record
  Gemm = 1u << 0,              ///< a GEMM run: kind "gemm" or "gemm-…" (e.g. "gemm-trained-weights")
  Training = 1u << 1,          ///< kind "training"
  LanguageModel = 1u << 2,     ///< a training run of a language model (its config has "model")
  Checkpoint = 1u << 3,        ///< kind "checkpoint": an FP8 checkpoint's weights
  Advice = 1u << 4,            ///< kind "advice": a recipe recommendation
  MayHoldBlockStats = 1u << 5, ///< a training run whose config records block statistics (mayHoldBlockStats)
  // from the datasets
  GemmError = 1u << 8,        ///< error maps of a GEMM output (`error/…`)
  BlockStats = 1u << 9,       ///< per-block statistics (`block_stats/…`)
  Histories = 1u << 10,       ///< per-step histories of training operands (`history/…`)
  AttentionProbes = 1u << 11, ///< attention snapshots of a language model (`attention/…`)
  KernelCheck = 1u << 12,     ///< a kernel check: the kernel's observed output (`observed/D`)
  ClipCounts = 1u << 13,      ///< per-step clipping counts of quantized operands (`history/<operand>/saturated`)
};
Q_DECLARE_FLAGS(RunCaps, RunCap)

} // namespace fp8lab::ui

// At global scope, as Qt's own: inside the namespace it would hide the global operator| of other
// flags (QCP::MarginSides) from code in fp8lab::ui.
Q_DECLARE_OPERATORS_FOR_FLAGS(fp8lab::ui::RunCaps)

namespace fp8lab::ui {

/// The capabilities known from the record alone (the first group of RunCap).
RunCaps recordCaps(const RunRecord& r);
/// The capabilities known from a run's dataset paths (the second group of RunCap).
RunCaps datasetCaps(const QStringList& datasets);
/// The second group of RunCap: the capabilities that need the run's dataset paths.
constexpr RunCaps kDatasetCaps = RunCap::GemmError | RunCap::BlockStats | RunCap::Histories | RunCap::AttentionProbes |
                                 RunCap::KernelCheck | RunCap::ClipCounts;
/// The run's kind as the GUI names it: "kernel check" (a GEMM run with an observed output),
/// "lm" (a language-model training run), else the record's kind ("gemm", "training",
/// "checkpoint", "advice", "gemm-trained-weights", …).
QString runKindName(const RunRecord& r, RunCaps caps);

/// The runs of one SessionDocument, one row each in session order, keyed by id. Rows follow the
/// document's signals (a run added, removed, renamed or changed; a load or reset).
class RunListModel : public QAbstractListModel {
  Q_OBJECT
public:
  enum Role {
    IdRole = Qt::UserRole, ///< the run id (Qt::UserRole: a combo box's currentData())
    LabelRole,             ///< the user-visible label
    KindRole,              ///< runKindName()
    CapsRole,              ///< RunCaps as an int, both groups (reads the run's dataset paths once)
    RecordCapsRole,        ///< RunCaps from the record alone (reads no file)
    HasGemmErrorRole,      ///< bool per dataset capability
    HasBlockStatsRole,
    HasHistoriesRole,
    HasAttentionProbesRole,
    HasKernelCheckRole,
  };

  explicit RunListModel(SessionDocument* session, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  /// DisplayRole: "label (id)", or the id when the label is the id (as the run boxes show it).
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QHash<int, QByteArray> roleNames() const override;

  SessionDocument* session() const { return session_; }
  /// The row of run `id`; an invalid index when the session has no such run.
  QModelIndex indexOfId(const QString& id) const;
  QString idAt(int row) const;
  /// Both groups of capabilities of the run at `row` (the dataset paths read at the first ask).
  RunCaps caps(int row) const;
  RunCaps recordCapsAt(int row) const;
  /// True between a begin… and end… of a change of rows (RunSelection ignores the current index
  /// QItemSelectionModel moves meanwhile: the document decides the next current run).
  bool isChanging() const { return changing_; }

private:
  void resetFromSession();
  const RunRecord* record(int row) const;

  SessionDocument* session_;
  QStringList ids_;                      ///< the rows, as the model last announced them
  mutable QHash<QString, RunCaps> caps_; ///< both groups, by id, filled on first ask
  bool changing_ = false;
};

/// The rows of a RunListModel that have any of the capabilities `any` (a view's run box lists
/// only the runs the view can show). Record capabilities filter without reading files.
class RunFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT
public:
  RunFilterProxy(RunListModel* source, RunCaps any, QObject* parent = nullptr);
  RunCaps filter() const { return any_; }
  void setFilter(RunCaps any);
  RunListModel* runModel() const { return model_; }

protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

private:
  RunListModel* model_;
  RunCaps any_;
};

/// The one selection of runs of a session: its current index is the document's current run.
/// Changing the current index (the tree, a run box: setCurrentRunId) makes that run the
/// document's current run, chosen; the document's own changes (a run added, removed, a load)
/// move the index and emit currentRunChanged after the rows are consistent again.
class RunSelection : public QItemSelectionModel {
  Q_OBJECT
public:
  explicit RunSelection(RunListModel* model);
  RunListModel* runModel() const { return model_; }
  /// The current run's id ("" when none): SessionDocument::currentRunId.
  QString currentRunId() const;
  /// Makes run `id` the session's current run, the user's choice (an id it lacks: none, as the document).
  void setCurrentRunId(const QString& id);

Q_SIGNALS:
  /// The session's current run changed (after the document's currentRunChanged and the index moved).
  void currentRunChanged(const QString& id);

private:
  void syncFromSession();

  RunListModel* model_;
  bool syncing_ = false;
};

/// The one run model and selection of `session` (created on first ask as children of the
/// document, so the session tree and every view share them).
RunListModel* runModel(SessionDocument* session);
RunSelection* runSelection(SessionDocument* session);

} // namespace fp8lab::ui
