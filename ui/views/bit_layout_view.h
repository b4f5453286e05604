// Bit layout view: the bit cells of one code coloured by field and clickable, the
// decoded value with its formula filled in, the class; a value field that shows the encoding under
// the chosen rounding and saturation with neighbours, midpoint, tie and error, and the same value in
// other formats side by side. Arrow keys step to the next / previous representable value.
#pragma once

#include "formats/format.h"
#include "scaling/quantized_tensor.h"
#include "views/view.h"

#include <memory>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTableWidget;
class QVBoxLayout;

namespace fp8lab::ui {

class RunAccess;

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

  /// The two-level scale example: `values` (numbers separated by spaces or commas, padded with
  /// zeros to a multiple of 16) quantized by the NVFP4 preset `preset` (nvfp4_te, nvfp4_torchao)
  /// as one row of 1×16 blocks; element `index` is shown as tensor × block × element. False
  /// (and the reason shown) when a value is not a number or the preset is unknown.
  bool setTwoLevelExample(const QString& values, const QString& preset, int index);
  /// The two-level box fed by a GEMM run: element (row, col) of `operand` ('A' or 'B') of `run`,
  /// read from its quantized datasets (runTwoLevelText). The box switches to "From run"; false
  /// (and the reason shown) when the run has no two-level operand there. nullptr goes back to the
  /// typed values.
  bool setTwoLevelRun(std::shared_ptr<RunAccess> run, char operand, int64_t row, int64_t col);
  QString twoLevelText() const;
  /// Whether the two-level box shows a run's element (else the typed values).
  bool twoLevelFromRun() const;
  void setSession(SessionDocument* session) override;

  /// Shows `code` of the named format; false for an unknown format.
  bool selectCode(const QString& format, uint32_t code) override;
  /// The format and code shown (the other views that show codes follow it).
  bool selectedCode(QString* format, uint32_t* code) const override;

protected:
  void keyPressEvent(QKeyEvent* e) override;

private:
  void buildCodeGroup(QVBoxLayout* outer);
  void buildEncodeGroup(QVBoxLayout* outer);
  void buildTwoLevelGroup(QVBoxLayout* outer);
  void refreshCode();
  void refreshValue();
  void refreshTwoLevel();
  void refreshTwoLevelRun();
  void rebuildTwoLevelRuns();
  void twoLevelRunChosen();
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
  QLineEdit* two_values_;
  QComboBox* two_preset_;
  QSpinBox* two_index_;
  QLabel* two_text_;
  QComboBox* two_source_;
  QWidget* two_typed_;
  QWidget* two_from_run_;
  QComboBox* two_run_;
  QComboBox* two_operand_;
  QSpinBox* two_row_;
  QSpinBox* two_col_;
  std::shared_ptr<RunAccess> two_run_access_;
  bool two_updating_ = false;
};

/// Element (i, j) of a two-level tensor (NVFP4: E2M1 codes, E4M3 block scales, an fp32 tensor
/// scale) as the product of its three levels and the value the GEMM sees (float32):
///   TE (amax kept):      "x = 0.0059524 (tensor, amax/2688) × 448 (E4M3 0x7E) × 1.5 (E2M1 0x3) = 4"
///   torchao (pts kept):  "x = 0.0059524 (tensor, pts) × 448 (E4M3 0x7E) × 1.5 (E2M1 0x3) = 4"
/// The tensor factor is TensorScale::tensorFactor() (5 significant digits); the value is
/// f32(element · blockFactor(block scale)), each system's own rounding (TE rounds s·amax first).
/// A single-level tensor has no tensor term. Empty for a tensor without E4M3 scale codes.
QString twoLevelScaleText(const QuantizedTensor& q, int64_t i, int64_t j);
/// The second line: how the system forms the block factor, e.g. "TE: block factor
/// f32(f32(s·amax)·f32(1/2688)) = 2.6666667; amax 16, S_enc = 2688/amax = 168".
QString twoLevelConventionText(const QuantizedTensor& q, int64_t i, int64_t j);

/// Element (row, col) of operand `operand` ('A' or 'B') of a GEMM run as the product of its
/// levels, read from the run's datasets: the E2M1 code (`quantized/<X>_codes`, attributes
/// `format`, `block_rows`, `block_cols`), its block's E4M3 scale code and decoded scale
/// (`quantized/<X>_scale_codes`, `quantized/<X>_scales`) and the tensor scale (attributes
/// `tensor_scale_kind`, `tensor_amax`, `tensor_scale`, `fp4_fp8_max` of `quantized/<X>_scales`).
/// Lines: what is shown and the convention ("A[0, 17] of run r (nvfp4_te; Transformer Engine:
/// the tensor amax is kept)"), the input when `inputs/<X>` is stored, then twoLevelScaleText()
/// and twoLevelConventionText() of that element. Empty and *why (what to do) when the run has no
/// two-level operand there or (row, col) is outside it.
QString runTwoLevelText(const RunAccess& run, char operand, int64_t row, int64_t col, QString* why);

/// Parses a number typed by a user: decimal, "1e-3", hex float "0x1.8p3", "inf", "-inf", "nan",
/// simple fractions "1/3" and powers "2^-9". nullopt when it is not a number.
std::optional<double> parseUserNumber(const QString& text);

} // namespace fp8lab::ui
