// One demo of the Learn page: a title, an introduction, a row of controls, a note whose text
// follows the values, a plot and a table. Every number comes from core (formats, scaling, gemm,
// metrics, teaching); a demo only draws. Subclasses build their controls and implement
// recompute(), which the controls trigger.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>

#include <utility>

class QComboBox;
class QCustomPlot;
class QCPAxisRect;
class QCPLegend;
class QHBoxLayout;
class QLayout;
class QLabel;
class QTableWidget;
class QVBoxLayout;

namespace fp8lab {
class Format;
}

namespace fp8lab::ui {

class LearnDemo : public QWidget {
  Q_OBJECT
public:
  LearnDemo(const QString& title, const QString& intro, QWidget* parent = nullptr);

  QString title() const { return title_; }
  QTableWidget* table() const { return table_; }
  QCustomPlot* plot() const { return plot_; }
  /// The explanation below the controls (rich text), which follows the values.
  QString noteText() const;
  /// The table as CSV (header line first); a demo whose table shows a selection of its rows gives
  /// them all.
  virtual QString csv() const;
  /// Recomputes from the controls and redraws (the controls call it).
  virtual void recompute() = 0;
  /// Computes once if nothing has been computed yet: demos compute when first shown (or asked for
  /// their numbers), so that the window's start-up pays for none of them.
  void ensureComputed();

protected:
  void showEvent(QShowEvent* e) override;
  /// Subclasses call it at the start of recompute().
  void markComputed() { computed_ = true; }

  /// Adds "text" and the widget to the controls, which flow onto as many lines as the page's width
  /// needs (the page never scrolls sideways).
  void addControl(const QString& text, QWidget* w);
  void setNote(const QString& rich_text);
  /// Creates the table (columns `headers`) under the plot.
  QTableWidget* makeTable(const QStringList& headers);
  /// Sets row r (creating it when needed): the first cell left-aligned, the others right-aligned.
  static void setRow(QTableWidget* t, int r, const QStringList& cells);
  /// Sizes the table to show every row and column header without a scroll bar (no cut-off rows).
  void fitTable();
  /// Puts the plot's legend (or `legend`) in a row of its own under the axis rect, entries side by
  /// side: it never covers data.
  static void legendBelow(QCustomPlot* plot, QCPLegend* legend = nullptr);
  /// Makes the plot two stacked axis rects sharing their left and right margins, each with a
  /// legend in a row of its own under it (entries two to a line, never over the curves), the upper
  /// one's y axis logarithmic. Returns {upper, lower}; the legends are the plot layout's elements
  /// (1, 0) and (3, 0).
  static std::pair<QCPAxisRect*, QCPAxisRect*> twoStackedPlots(QCustomPlot* plot);
  /// A combo box of the ≤ 8-bit formats `names` (first: selected).
  QComboBox* formatBox(const QStringList& names);
  static const Format& formatOf(const QComboBox* box);

  /// CSV of the table's header and `rows`.
  QString csvOf(const QList<QStringList>& rows) const;
  static QString pct(double share);
  static QString sig(double v);

private:
  QString title_;
  QVBoxLayout* layout_;
  QLayout* controls_;
  QLabel* note_;
  QCustomPlot* plot_;
  QTableWidget* table_ = nullptr;
  bool computed_ = false;
};

} // namespace fp8lab::ui
