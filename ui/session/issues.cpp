#include "session/issues.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QIcon>
#include <QLabel>
#include <QPushButton>
#include <QStackedLayout>
#include <QTableView>
#include <QVBoxLayout>

namespace fp8lab::ui {

IssueList::IssueList(QObject* parent) : QAbstractTableModel(parent) {}

void IssueList::report(Severity s, const QString& text, const QString& where, const QString& detail) {
  for (int i = 0; i < issues_.size(); ++i) {
    IssueRow& it = issues_[i];
    if (it.severity == s && it.text == text && it.where == where) {
      ++it.count;
      it.last = QDateTime::currentDateTime();
      if (!detail.isEmpty()) it.detail = detail;
      Q_EMIT dataChanged(index(i, 0), index(i, ColumnCount - 1));
      Q_EMIT countsChanged();
      Q_EMIT reported(it);
      return;
    }
  }
  beginInsertRows({}, issues_.size(), issues_.size());
  issues_.append(IssueRow{s, text, where, detail, 1, QDateTime::currentDateTime()});
  endInsertRows();
  Q_EMIT countsChanged();
  Q_EMIT reported(issues_.last());
}

void IssueList::report(const fp8lab::Issue& w, const QString& context) {
  QString text = QString::fromStdString(w.title());
  if (!w.detail.empty()) text += QStringLiteral(": ") + QString::fromStdString(w.detail);
  QString where = QString::fromStdString(w.where);
  if (!context.isEmpty()) where = where.isEmpty() ? context : context + QStringLiteral(" / ") + where;
  report(w.severity, text, where);
}

void IssueList::clear() {
  beginResetModel();
  issues_.clear();
  endResetModel();
  Q_EMIT countsChanged();
}

int IssueList::countOf(Severity s) const {
  int n = 0;
  for (const auto& i : issues_)
    if (i.severity == s) ++n;
  return n;
}

int IssueList::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(issues_.size());
}
int IssueList::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QString IssueList::severityName(Severity s) {
  switch (s) {
  case Severity::Info:
    return tr("Info");
  case Severity::Warning:
    return tr("Warning");
  case Severity::Error:
    return tr("Error");
  }
  return {};
}

QIcon IssueList::severityIcon(Severity s) {
  switch (s) {
  case Severity::Info:
    return QIcon(QStringLiteral(":/fp8lab/icons/issue-info.svg"));
  case Severity::Warning:
    return QIcon(QStringLiteral(":/fp8lab/icons/issue-warning.svg"));
  case Severity::Error:
    return QIcon(QStringLiteral(":/fp8lab/icons/issue-error.svg"));
  }
  return {};
}

QVariant IssueList::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= issues_.size()) return {};
  const IssueRow& it = issues_[index.row()];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
    case SeverityCol:
      return severityName(it.severity);
    case TextCol:
      return it.text;
    case WhereCol:
      return it.where;
    case CountCol:
      return it.count;
    }
  } else if (role == Qt::DecorationRole && index.column() == SeverityCol) {
    return severityIcon(it.severity);
  } else if (role == Qt::ToolTipRole) {
    QString t = it.text;
    if (!it.detail.isEmpty()) t += QStringLiteral("\n\n") + it.detail;
    t += tr("\n\nLast reported %1").arg(it.last.toString(Qt::ISODate));
    return t;
  } else if (role == Qt::TextAlignmentRole && index.column() == CountCol) {
    return int(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

QVariant IssueList::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
  case SeverityCol:
    return tr("Severity");
  case TextCol:
    return tr("Issue");
  case WhereCol:
    return tr("Where");
  case CountCol:
    return tr("Count");
  }
  return {};
}

IssuesDock::IssuesDock(IssueList* list, QWidget* parent) : QDockWidget(tr("Issues"), parent) {
  setObjectName(QStringLiteral("IssuesDock"));
  auto* w = new QWidget(this);
  auto* v = new QVBoxLayout(w);
  v->setContentsMargins(4, 4, 4, 4);
  auto* stack = new QStackedLayout;
  table_ = new QTableView(w);
  table_->setModel(list);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(IssueList::SeverityCol, QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(IssueList::TextCol, QHeaderView::Stretch);
  table_->horizontalHeader()->setSectionResizeMode(IssueList::WhereCol, QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(IssueList::CountCol, QHeaderView::ResizeToContents);
  table_->setWordWrap(false);
  empty_ = new QLabel(tr("No issues. Problems found while opening files, checking parameters or "
                         "running experiments are listed here."),
                      w);
  empty_->setWordWrap(true);
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setStyleSheet(QStringLiteral("color: palette(mid);"));
  stack->addWidget(empty_);
  stack->addWidget(table_);
  v->addLayout(stack, 1);
  auto* h = new QHBoxLayout;
  h->addStretch(1);
  auto* clear = new QPushButton(tr("Clear"), w);
  h->addWidget(clear);
  v->addLayout(h);
  setWidget(w);
  auto update = [stack, list, this] {
    stack->setCurrentWidget(list->rowCount() ? static_cast<QWidget*>(table_) : empty_);
  };
  connect(list, &IssueList::countsChanged, this, update);
  connect(clear, &QPushButton::clicked, list, &IssueList::clear);
  update();
}

} // namespace fp8lab::ui
