#include "session/run_model.h"

#include "session/block_stats.h"
#include "session/session_paths.h"
#include "session/run_access.h"
#include "session/session_document.h"

namespace fp8lab::ui {

RunCaps recordCaps(const RunRecord& r) {
  RunCaps c;
  if (r.kind.startsWith(QStringLiteral("gemm"))) c |= RunCap::Gemm;
  if (r.kind == QStringLiteral("training")) {
    c |= RunCap::Training;
    if (r.config.contains(QStringLiteral("model"))) c |= RunCap::LanguageModel;
  }
  if (r.kind == QStringLiteral("checkpoint")) c |= RunCap::Checkpoint;
  if (r.kind == QStringLiteral("advice")) c |= RunCap::Advice;
  if (mayHoldBlockStats(r)) c |= RunCap::MayHoldBlockStats;
  return c;
}

RunCaps datasetCaps(const QStringList& datasets) {
  // The top-level groups of docs/session-format.md that a view needs, one capability each.
  static const struct {
    const char* group;
    RunCap cap;
  } groups[] = {{layout::kErrorGroup, RunCap::GemmError},
                {layout::kBlockStatsGroup, RunCap::BlockStats},
                {layout::kHistoryGroup, RunCap::Histories},
                {layout::kAttentionGroup, RunCap::AttentionProbes}};
  RunCaps c;
  const QString observed = sessionPath(layout::kObservedD);
  for (const QString& d : datasets) {
    for (const auto& g : groups)
      if (d.startsWith(sessionPath(g.group) + QLatin1Char('/'))) c |= g.cap;
    if (d == observed) c |= RunCap::KernelCheck;
    // Only quantized operands record clipping counts (an FP32 baseline records amax alone).
    if (d.startsWith(sessionPath(layout::kHistoryGroup) + QLatin1Char('/')) &&
        (d.endsWith(QStringLiteral("/saturated")) || d.endsWith(QStringLiteral("/underflow"))))
      c |= RunCap::ClipCounts;
  }
  return c;
}

QString runKindName(const RunRecord& r, RunCaps caps) {
  if (caps & RunCap::KernelCheck) return QStringLiteral("kernel check");
  if (caps & RunCap::LanguageModel) return QStringLiteral("lm");
  return r.kind;
}

// ---- RunListModel ------------------------------------------------------------------------------

RunListModel::RunListModel(SessionDocument* session, QObject* parent) : QAbstractListModel(parent), session_(session) {
  for (const RunRecord& r : session_->runs()) ids_ << r.id;
  connect(session_, &SessionDocument::reset_, this, &RunListModel::resetFromSession);
  connect(session_, &SessionDocument::runAdded, this, [this](int index) {
    changing_ = true;
    beginInsertRows({}, index, index);
    ids_.insert(index, session_->run(index).id);
    endInsertRows();
    changing_ = false;
  });
  connect(session_, &SessionDocument::runRemoved, this, [this](int index) {
    if (index < 0 || index >= ids_.size()) return resetFromSession();
    changing_ = true;
    beginRemoveRows({}, index, index);
    caps_.remove(ids_.takeAt(index));
    endRemoveRows();
    changing_ = false;
  });
  connect(session_, &SessionDocument::runChanged, this, [this](int index) {
    if (index < 0 || index >= ids_.size() || ids_.at(index) != session_->run(index).id) return resetFromSession();
    caps_.remove(ids_.at(index));
    Q_EMIT dataChanged(this->index(index), this->index(index));
  });
}

void RunListModel::resetFromSession() {
  changing_ = true;
  beginResetModel();
  ids_.clear();
  caps_.clear();
  for (const RunRecord& r : session_->runs()) ids_ << r.id;
  endResetModel();
  changing_ = false;
}

int RunListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(ids_.size());
}

const RunRecord* RunListModel::record(int row) const {
  if (row < 0 || row >= ids_.size()) return nullptr;
  const int i = session_->indexOf(ids_.at(row));
  return i >= 0 ? &session_->run(i) : nullptr;
}

QString RunListModel::idAt(int row) const {
  return row >= 0 && row < ids_.size() ? ids_.at(row) : QString();
}

QModelIndex RunListModel::indexOfId(const QString& id) const {
  const int row = id.isEmpty() ? -1 : int(ids_.indexOf(id));
  return row >= 0 ? index(row) : QModelIndex();
}

RunCaps RunListModel::recordCapsAt(int row) const {
  const RunRecord* r = record(row);
  return r ? recordCaps(*r) : RunCaps();
}

RunCaps RunListModel::caps(int row) const {
  const RunRecord* r = record(row);
  if (!r) return {};
  auto it = caps_.constFind(r->id);
  if (it != caps_.constEnd()) return *it;
  const RunCaps c = recordCaps(*r) | datasetCaps(RunAccess::forRecord(*r, session_->fileName())->datasets());
  caps_.insert(r->id, c);
  return c;
}

QVariant RunListModel::data(const QModelIndex& index, int role) const {
  const RunRecord* r = index.isValid() ? record(index.row()) : nullptr;
  if (!r) return {};
  auto has = [&](RunCap c) { return bool(caps(index.row()) & c); };
  switch (role) {
  case Qt::DisplayRole:
    return r->label == r->id ? r->id : r->label + QStringLiteral(" (") + r->id + QLatin1Char(')');
  case Qt::ToolTipRole:
    return r->id;
  case IdRole:
    return r->id;
  case LabelRole:
    return r->label;
  case KindRole:
    return runKindName(*r, caps(index.row()));
  case CapsRole:
    return int(caps(index.row()).toInt());
  case RecordCapsRole:
    return int(recordCaps(*r).toInt());
  case HasGemmErrorRole:
    return has(RunCap::GemmError);
  case HasBlockStatsRole:
    return has(RunCap::BlockStats);
  case HasHistoriesRole:
    return has(RunCap::Histories);
  case HasAttentionProbesRole:
    return has(RunCap::AttentionProbes);
  case HasKernelCheckRole:
    return has(RunCap::KernelCheck);
  default:
    return {};
  }
}

QHash<int, QByteArray> RunListModel::roleNames() const {
  QHash<int, QByteArray> n = QAbstractListModel::roleNames();
  n.insert(IdRole, "id");
  n.insert(LabelRole, "label");
  n.insert(KindRole, "kind");
  n.insert(CapsRole, "caps");
  n.insert(RecordCapsRole, "recordCaps");
  n.insert(HasGemmErrorRole, "hasGemmError");
  n.insert(HasBlockStatsRole, "hasBlockStats");
  n.insert(HasHistoriesRole, "hasHistories");
  n.insert(HasAttentionProbesRole, "hasAttentionProbes");
  n.insert(HasKernelCheckRole, "hasKernelCheck");
  return n;
}

// ---- RunFilterProxy ----------------------------------------------------------------------------

RunFilterProxy::RunFilterProxy(RunListModel* source, RunCaps any, QObject* parent)
    : QSortFilterProxyModel(parent), model_(source), any_(any) {
  setSourceModel(source);
  // Record capabilities change with a run's config: refilter on every change of a row.
  setDynamicSortFilter(true);
}

void RunFilterProxy::setFilter(RunCaps any) {
  any_ = any;
  invalidateFilter();
}

bool RunFilterProxy::filterAcceptsRow(int row, const QModelIndex& parent) const {
  if (parent.isValid()) return false;
  // Dataset capabilities are read only when the filter asks for one.
  const RunCaps c = (any_ & kDatasetCaps) ? model_->caps(row) : model_->recordCapsAt(row);
  return bool(c & any_);
}

// ---- RunSelection ------------------------------------------------------------------------------

RunSelection::RunSelection(RunListModel* model) : QItemSelectionModel(model, model), model_(model) {
  SessionDocument* s = model_->session();
  connect(s, &SessionDocument::currentRunChanged, this, [this] {
    syncFromSession();
    Q_EMIT currentRunChanged(currentRunId());
  });
  // After rows change the index follows the document (QItemSelectionModel would move it itself).
  connect(model_, &QAbstractItemModel::modelReset, this, &RunSelection::syncFromSession);
  connect(model_, &QAbstractItemModel::rowsInserted, this, &RunSelection::syncFromSession);
  connect(model_, &QAbstractItemModel::rowsRemoved, this, &RunSelection::syncFromSession);
  connect(this, &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& now) {
    if (syncing_ || model_->isChanging()) return;
    const QString id = model_->idAt(now.row());
    if (!id.isEmpty() && id != model_->session()->currentRunId()) model_->session()->setCurrentRunId(id);
  });
  syncFromSession();
}

QString RunSelection::currentRunId() const {
  return model_->session()->currentRunId();
}

void RunSelection::setCurrentRunId(const QString& id) {
  // The document is told even when the index is already there (a run current by default becomes
  // chosen); an id it does not hold leaves no run current (SessionDocument::setCurrentRunId).
  model_->session()->setCurrentRunId(id);
}

void RunSelection::syncFromSession() {
  const QModelIndex want = model_->indexOfId(model_->session()->currentRunId());
  if (want == currentIndex() && (!want.isValid() || isSelected(want))) return;
  syncing_ = true;
  if (want.isValid())
    setCurrentIndex(want, QItemSelectionModel::ClearAndSelect);
  else
    clear();
  syncing_ = false;
}

RunListModel* runModel(SessionDocument* session) {
  if (!session) return nullptr;
  if (auto* m = session->findChild<RunListModel*>(QString(), Qt::FindDirectChildrenOnly)) return m;
  return new RunListModel(session, session);
}

RunSelection* runSelection(SessionDocument* session) {
  RunListModel* m = runModel(session);
  if (!m) return nullptr;
  if (auto* s = m->findChild<RunSelection*>(QString(), Qt::FindDirectChildrenOnly)) return s;
  return new RunSelection(m);
}

} // namespace fp8lab::ui
