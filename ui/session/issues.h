// The Issues list: non-modal findings (severity, text, where) from loads, runs and parameter
// checks. Identical entries are counted once (the count column says how often), as in Tiled's
// Issues dock, so a run that saturates in 500 steps gives one line, not 500.
#pragma once

#include "common/issue.h"

#include <QAbstractTableModel>
#include <QDateTime>
#include <QDockWidget>

class QTableView;
class QLabel;

namespace fp8lab::ui {

/// One line of the Issues list: a finding (fp8lab::Issue's severity, title and detail as text)
/// and how often it came.
struct IssueRow {
  Severity severity = Severity::Warning;
  QString text;   ///< what happened, one sentence
  QString where;  ///< file, run, operand or panel field
  QString detail; ///< optional longer reason (tooltip)
  int count = 1;  ///< how often the same (severity, text, where) was reported
  QDateTime last;
};

/// Table model of issues; the app keeps one instance (MainWindow::issues()).
class IssueList : public QAbstractTableModel {
  Q_OBJECT
public:
  enum Column { SeverityCol, TextCol, WhereCol, CountCol, ColumnCount };
  explicit IssueList(QObject* parent = nullptr);

  /// Adds an issue, or bumps the count of an identical one (same severity, text and where).
  void report(Severity s, const QString& text, const QString& where = {}, const QString& detail = {});
  /// Adds a core finding (common/issue.h): its title and detail become the text.
  void report(const fp8lab::Issue& w, const QString& context = {});
  void clear();

  const QList<IssueRow>& issues() const { return issues_; }
  int countOf(Severity s) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

  static QString severityName(Severity s);
  static QIcon severityIcon(Severity s);

Q_SIGNALS:
  void countsChanged();
  /// An error or warning arrived (the main window may flash the status-bar counter).
  void reported(const fp8lab::ui::IssueRow& issue);

private:
  QList<IssueRow> issues_;
};

/// The dock around the list, with a Clear button.
class IssuesDock : public QDockWidget {
  Q_OBJECT
public:
  IssuesDock(IssueList* list, QWidget* parent = nullptr);
  QTableView* table() const { return table_; }

private:
  QTableView* table_;
  QLabel* empty_;
};

} // namespace fp8lab::ui
