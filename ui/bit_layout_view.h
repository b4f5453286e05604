// Bit layout view: the bit cells of one code coloured by field and clickable, the
// decoded value with its formula filled in, the class; a value field that shows the encoding under
// the chosen rounding and saturation with neighbours, midpoint, tie and error, and the same value in
// other formats side by side. Arrow keys step to the next / previous representable value.
#pragma once

#include "formats/format.h"
#include "view.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QTableWidget;

namespace fp8lab::ui {

/// The row of bit cells: sign / exponent / mantissa, most significant bit on the left.
class BitCells : public QWidget {
  Q_OBJECT
public:
  explicit BitCells(QWidget* parent = nullptr);
  void setFormat(const Format* f);
  void setCode(uint32_t code);
  uint32_t code() const { return code_; }
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;
  /// Rectangle of bit `bit` (0 = least significant), for tests and tooltips.
  QRect cellRect(int bit) const;

Q_SIGNALS:
  void bitClicked(int bit);

protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  bool event(QEvent* e) override;

private:
  const Format* format_ = nullptr;
  uint32_t code_ = 0;
  int bitAt(const QPoint& p) const;
};

class BitLayoutView : public View {
  Q_OBJECT
public:
  explicit BitLayoutView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("bits"); }
  QString title() const override { return tr("Bit layout"); }
  QString csv() const override;

  const Format& format() const { return *format_; }
  uint32_t code() const { return code_; }
  /// Selects a named format (Format::byName); false if unknown.
  bool setFormat(const QString& name);
  void setCode(uint32_t code);
  /// Flips bit `bit` (0 = least significant) of the current code.
  void toggleBit(int bit);
  void stepUp();
  void stepDown();

  /// The value field: typing a number re-encodes it under the options below.
  void setValueText(const QString& text);
  void setSaturate(bool on);
  void setRounding(Rounding r);
  /// The code the value field encodes to (valid after setValueText with a number).
  uint32_t valueCode() const { return value_code_; }
  bool valueValid() const { return value_valid_; }
  /// Shown texts, for tests and screenshots.
  QString decodedText() const;
  QString classTextShown() const;
  QString formulaText() const;

  /// Shows `code` of the named format; false for an unknown format.
  bool selectCode(const QString& format, uint32_t code) override;
  /// The format and code shown (the other views that show codes follow it).
  bool selectedCode(QString* format, uint32_t* code) const override;

protected:
  void keyPressEvent(QKeyEvent* e) override;

private:
  void refreshCode();
  void refreshValue();
  QString formula(uint32_t code) const;
  EncodeOptions options() const;

  const Format* format_;
  uint32_t code_ = 0;
  uint32_t value_code_ = 0;
  bool value_valid_ = false;

  QComboBox* format_box_;
  BitCells* cells_;
  QLabel* value_label_;
  QLabel* formula_label_;
  QLabel* hex_label_;
  QLabel* bin_label_;
  QLabel* class_label_;
  QLabel* props_label_;
  QLineEdit* value_edit_;
  QComboBox* rounding_box_;
  QCheckBox* saturate_box_;
  QLabel* value_result_;
  QTableWidget* compare_;
};

/// Parses a number typed by a user: decimal, "1e-3", hex float "0x1.8p3", "inf", "-inf", "nan",
/// simple fractions "1/3" and powers "2^-9". nullopt when it is not a number.
std::optional<double> parseUserNumber(const QString& text);

} // namespace fp8lab::ui
