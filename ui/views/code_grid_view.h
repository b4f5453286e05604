// The code grid: all codes of a ≤ 8-bit format in a 16-column grid (16×16 for
// 8-bit formats), coloured by class, high nibble down, low nibble across. Clicking a code selects
// it in the bit layout view.
#pragma once

#include "formats/format.h"
#include "views/view.h"

class QComboBox;
class QLabel;

namespace fp8lab::ui {

/// The value text of a code grid cell, always exact and at most 9 characters for every ≤ 8-bit
/// format: the full decimal when it fits ("0.015625", "−448", "57344"), else k·2ⁿ with k odd
/// (0.001953125 → "2⁻⁹", 0.005859375 → "3·2⁻⁹", E8M0's 2¹²⁷); "NaN", "+Inf", "−Inf", "−0".
/// A value k·2ⁿ (k odd, n < 0) has exactly −n decimals, which decides whether it fits.
QString codeCellText(double v);

class CodeGrid : public QWidget {
  Q_OBJECT
public:
  explicit CodeGrid(QWidget* parent = nullptr);
  void setFormat(const Format* f);
  const Format* format() const { return format_; }
  void setSelected(int code);
  int selected() const { return selected_; }
  int rows() const;
  QRect cellRect(uint32_t code) const;
  QSize sizeHint() const override { return {860, 480}; }
  QSize minimumSizeHint() const override { return {480, 300}; }

Q_SIGNALS:
  void codeClicked(uint32_t code);

protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  bool event(QEvent* e) override;

private:
  int codeAt(const QPoint& p) const;
  QRect gridRect() const;
  const Format* format_ = nullptr;
  int selected_ = -1;
};

class CodeGridView : public View {
  Q_OBJECT
public:
  explicit CodeGridView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("codes"); }
  QString title() const override { return tr("Code grid"); }
  QString csv() const override;
  bool setFormat(const QString& name);
  const Format& format() const { return *grid_->format(); }
  CodeGrid* grid() const { return grid_; }
  /// Follows the bit layout view's selection (no signal back).
  void showCode(const QString& format, uint32_t code);
  /// showCode(); false for a format of more than 8 bits (not in a grid).
  bool selectCode(const QString& format, uint32_t code) override;

Q_SIGNALS:
  /// The user picked a code; the view also asks for it in the bit layout view (showCodeRequested).
  void codeActivated(const QString& format, uint32_t code);

private:
  QComboBox* format_box_;
  CodeGrid* grid_;
  QLabel* summary_;
};

} // namespace fp8lab::ui
