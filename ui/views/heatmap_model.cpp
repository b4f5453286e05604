#include "views/heatmap_model.h"
#include "session/session_paths.h"

#include "metrics/block_reduce.h"
#include "metrics/error_metrics.h"

#include <QObject>

#include <algorithm>
#include <cmath>
#include <limits>

namespace fp8lab::ui {

QString toText(ErrorQuantity q) {
  switch (q) {
  case ErrorQuantity::Total:
    return QObject::tr("total error of D (D vs ideal)");
  case ErrorQuantity::Quantization:
    return QObject::tr("quantization error of D (quantized-exact vs ideal)");
  case ErrorQuantity::Accumulation:
    return QObject::tr("accumulation error of D (D vs quantized-exact)");
  case ErrorQuantity::OperandA:
    return QObject::tr("quantization error of A");
  case ErrorQuantity::OperandB:
    return QObject::tr("quantization error of B");
  case ErrorQuantity::Observed:
    return QObject::tr("kernel check: observed − reference model");
  }
  return {};
}

QString toText(ErrorKind k) {
  switch (k) {
  case ErrorKind::Abs:
    return QObject::tr("absolute");
  case ErrorKind::Rel:
    return QObject::tr("relative");
  case ErrorKind::Ulp:
    return QObject::tr("ULP");
  }
  return {};
}

HeatmapModel::HeatmapModel(std::shared_ptr<RunAccess> run) : run_(std::move(run)) {}

HeatmapModel::Source HeatmapModel::source(ErrorQuantity q, ErrorKind k) const {
  Source s;
  switch (q) {
  case ErrorQuantity::Total:
    if (k == ErrorKind::Abs && run_->has(sessionPath(layout::kErrorAbs)))
      s.stored = sessionPath(layout::kErrorAbs);
    else if (k == ErrorKind::Rel && run_->has(sessionPath(layout::kErrorRel)))
      s.stored = sessionPath(layout::kErrorRel);
    s.ref = sessionPath(layout::kReferenceD);
    s.test = sessionPath(layout::kOutputD);
    break;
  case ErrorQuantity::Quantization:
    s.ref = sessionPath(layout::kReferenceD);
    s.test = sessionPath(layout::kReferenceDQuantizedExact);
    break;
  case ErrorQuantity::Accumulation:
    s.ref = sessionPath(layout::kReferenceDQuantizedExact);
    s.test = sessionPath(layout::kOutputD);
    break;
  case ErrorQuantity::OperandA:
    s.ref = sessionPath(layout::inputs("A"));
    s.test = sessionPath(layout::quantizedDequantized("A"));
    break;
  case ErrorQuantity::OperandB:
    s.ref = sessionPath(layout::inputs("B"));
    s.test = sessionPath(layout::quantizedDequantized("B"));
    break;
  case ErrorQuantity::Observed:
    // The check's own ULP map counts ULPs as codes of the output type (kernel_check.h).
    if (k == ErrorKind::Ulp && run_->has(sessionPath(layout::kCheckUlps))) s.stored = sessionPath(layout::kCheckUlps);
    s.ref = sessionPath(layout::kCheckDReference);
    s.test = sessionPath(layout::kObservedD);
    break;
  }
  return s;
}

bool HeatmapModel::available(ErrorQuantity q, ErrorKind k, QString* why) const {
  if (!run_->type().startsWith(QStringLiteral("gemm"))) { // "gemm", "gemm-trained-weights"
    if (why) *why = QObject::tr("run '%1' is a %2 run; error maps belong to GEMM runs").arg(run_->id(), run_->type());
    return false;
  }
  const bool isD = q == ErrorQuantity::Total || q == ErrorQuantity::Quantization || q == ErrorQuantity::Accumulation ||
                   q == ErrorQuantity::Observed;
  if (k == ErrorKind::Ulp && !isD) {
    if (why)
      *why = QObject::tr("ULP errors are defined for D (in its output type); use absolute or relative for A and B");
    return false;
  }
  const Source s = source(q, k);
  if (!s.stored.isEmpty()) return true;
  QStringList missing;
  for (const QString& p : {s.ref, s.test})
    if (!run_->has(p)) missing << p;
  if (!missing.isEmpty()) {
    if (why)
      *why = QObject::tr("run '%1' has no %2 (needed for the %3)")
                 .arg(run_->id(), missing.join(QStringLiteral(", ")), toText(q));
    return false;
  }
  if (run_->dims(s.ref) != run_->dims(s.test)) {
    if (why) *why = QObject::tr("%1 and %2 have different shapes").arg(s.ref, s.test);
    return false;
  }
  return true;
}

std::pair<int64_t, int64_t> HeatmapModel::shape(ErrorQuantity q) const {
  const Source s = source(q, ErrorKind::Abs);
  if (!s.stored.isEmpty()) return run_->dims(s.stored);
  if (run_->has(s.ref)) return run_->dims(s.ref);
  if (run_->has(s.test)) return run_->dims(s.test);
  return {0, 0};
}

QString HeatmapModel::outputType() const {
  QString t = run_->datasetAttr(sessionPath(layout::kOutputD), QStringLiteral("output_type"));
  if (t.isEmpty()) t = run_->attr(QStringLiteral("output_type"));
  return t.isEmpty() ? QStringLiteral("fp32") : t.toLower();
}

QString HeatmapModel::unit(ErrorQuantity q, ErrorKind k) const {
  switch (k) {
  case ErrorKind::Abs: {
    QString u = run_->datasetAttr(source(q, k).ref, QStringLiteral("units"));
    if (u.isEmpty()) u = QStringLiteral("1");
    return u == QStringLiteral("1") ? QObject::tr("value units") : u;
  }
  case ErrorKind::Rel:
    return QObject::tr("relative, 1");
  case ErrorKind::Ulp:
    return QObject::tr("ULP of %1").arg(outputType());
  }
  return {};
}

std::pair<int64_t, int64_t> HeatmapModel::tileSize() const {
  for (const QString& p : {sessionPath(layout::kErrorTileMaxAbs), sessionPath(layout::kErrorTileMeanAbs)}) {
    const qint64 tr = run_->datasetAttr(p, QStringLiteral("tile_rows")).toLongLong();
    const qint64 tc = run_->datasetAttr(p, QStringLiteral("tile_cols")).toLongLong();
    if (tr > 0 && tc > 0) return {tr, tc};
  }
  const qint64 t = run_->config().value(QStringLiteral("tile")).toInteger();
  return {t, t};
}

bool HeatmapModel::ulpFormat(const Format** fmt, double* scale) const {
  const QString t = outputType();
  *scale = 1.0;
  *fmt = nullptr;
  if (t == QStringLiteral("fp32")) return true;
  if (t == QStringLiteral("bf16"))
    *fmt = &Format::BF16();
  else if (t == QStringLiteral("fp16"))
    *fmt = &Format::FP16();
  else if (t == QStringLiteral("e4m3fn"))
    *fmt = &Format::E4M3FN();
  else if (t == QStringLiteral("e5m2"))
    *fmt = &Format::E5M2();
  else
    return false;
  const QString qs = run_->datasetAttr(sessionPath(layout::kOutputDCodes), QStringLiteral("quant_scale"));
  if (!qs.isEmpty()) *scale = qs.toDouble();
  return true;
}

bool HeatmapModel::band(const Source& s, ErrorKind k, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                        std::vector<double>* out, QString* error) const {
  Block b;
  if (!s.stored.isEmpty()) {
    if (!run_->read(s.stored, r0, c0, nr, nc, &b, error)) return false;
    *out = std::move(b.v);
    return true;
  }
  Block ref;
  if (!run_->read(s.ref, r0, c0, nr, nc, &ref, error) || !run_->read(s.test, r0, c0, nr, nc, &b, error)) return false;
  const Format* fmt = nullptr;
  double scale = 1;
  if (k == ErrorKind::Ulp && !ulpFormat(&fmt, &scale)) {
    if (error) *error = QObject::tr("unknown output type '%1'").arg(outputType());
    return false;
  }
  const ErrorMapKind mk = k == ErrorKind::Abs   ? ErrorMapKind::Abs
                          : k == ErrorKind::Rel ? ErrorMapKind::Rel
                                                : ErrorMapKind::Ulp;
  const std::vector<float> m = errorMap(ref.v.data(), b.v.data(), nr * nc, mk, fmt, scale);
  out->assign(m.begin(), m.end());
  return true;
}

bool HeatmapModel::compute(ErrorQuantity q, ErrorKind k, int64_t r0, int64_t c0, int64_t nr, int64_t nc, int64_t br,
                           int64_t bc, CellReduce how, HeatmapGrid* out, QString* error,
                           const std::function<bool(double)>& progress) const {
  QString why;
  if (!available(q, k, &why)) {
    if (error) *error = why;
    return false;
  }
  const auto [rows, cols] = shape(q);
  if (r0 < 0 || c0 < 0 || nr < 1 || nc < 1 || r0 + nr > rows || c0 + nc > cols || br < 1 || bc < 1) {
    if (error) *error = QObject::tr("window outside the %1 x %2 map").arg(rows).arg(cols);
    return false;
  }
  HeatmapGrid g;
  g.r0 = r0;
  g.c0 = c0;
  g.rows = nr;
  g.cols = nc;
  g.block_rows = br;
  g.block_cols = bc;
  g.grid_rows = (nr + br - 1) / br;
  g.grid_cols = (nc + bc - 1) / bc;
  // The block reduction is core's (metrics/block_reduce.h), the one SessionReader::readReduced uses.
  BlockReducer reducer(nr, nc, br, bc, how == CellReduce::Max ? BlockReduce::Max : BlockReduce::Mean);
  const Source s = source(q, k);
  // Bands of whole cells, about 4 Mi elements each.
  const int64_t bandCells = std::max<int64_t>(1, (int64_t(1) << 22) / std::max<int64_t>(1, nc * br));
  std::vector<double> vals;
  for (int64_t gr0 = 0; gr0 < g.grid_rows; gr0 += bandCells) {
    const int64_t rr0 = r0 + gr0 * br;
    const int64_t rrn = std::min(r0 + nr, rr0 + bandCells * br) - rr0;
    if (!band(s, k, rr0, c0, rrn, nc, &vals, error)) return false;
    reducer.addRows(vals.data(), rr0 - r0, rrn);
    if (progress && !progress(double(gr0 + bandCells) / double(g.grid_rows))) {
      if (error) *error = QObject::tr("cancelled");
      return false;
    }
  }
  g.nan_elements = reducer.nanElements();
  g.v = reducer.finish();
  bool first = true;
  for (const double x : g.v) {
    if (std::isnan(x)) {
      ++g.nan_cells;
      continue;
    }
    if (!std::isfinite(x)) continue;
    ++g.finite_cells;
    if (first) {
      g.min = g.max = x;
      first = false;
    }
    g.min = std::min(g.min, x);
    g.max = std::max(g.max, x);
    if (x > 0 && (g.min_positive == 0 || x < g.min_positive)) g.min_positive = x;
  }
  *out = std::move(g);
  return true;
}

bool HeatmapModel::overview(ErrorQuantity q, ErrorKind k, int64_t max_cells, HeatmapGrid* out, QString* error) const {
  const auto [rows, cols] = shape(q);
  const int64_t b = std::max<int64_t>({1, (rows + max_cells - 1) / max_cells, (cols + max_cells - 1) / max_cells});
  return compute(q, k, 0, 0, rows, cols, b, b, CellReduce::Max, out, error);
}

bool HeatmapModel::element(ErrorQuantity q, ErrorKind k, int64_t i, int64_t j, HeatmapElement* out,
                           QString* error) const {
  QString why;
  if (!available(q, k, &why)) {
    if (error) *error = why;
    return false;
  }
  Source s = source(q, k);
  HeatmapElement e;
  e.i = i;
  e.j = j;
  e.ref_name = s.ref;
  e.test_name = s.test;
  Block b;
  if (run_->has(s.ref) && run_->read(s.ref, i, j, 1, 1, &b, nullptr))
    e.ref = b.v[0];
  else
    e.ref = std::numeric_limits<double>::quiet_NaN();
  if (run_->has(s.test) && run_->read(s.test, i, j, 1, 1, &b, nullptr))
    e.test = b.v[0];
  else
    e.test = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> v;
  if (!band(s, k, i, j, 1, 1, &v, error)) return false;
  e.error = v[0];
  *out = e;
  return true;
}

VectorStats vectorStats(const Block& b) {
  VectorStats s;
  double ss = 0;
  bool first = true;
  for (double x : b.v) {
    if (!std::isfinite(x)) {
      ++s.nonfinite;
      continue;
    }
    ++s.count;
    if (x == 0) ++s.zeros;
    if (first) {
      s.min = s.max = x;
      first = false;
    }
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    s.max_abs = std::max(s.max_abs, std::fabs(x));
    ss += x * x;
  }
  s.rms = s.count ? std::sqrt(ss / double(s.count)) : 0;
  return s;
}

bool HeatmapModel::rowOfA(int64_t i, VectorStats* out, QString* error) const {
  const auto [m, kk] = run_->dims(sessionPath(layout::inputs("A")));
  if (m == 0) {
    if (error) *error = QObject::tr("the run did not store %1").arg(sessionPath(layout::inputs("A")));
    return false;
  }
  Block b;
  if (!run_->read(sessionPath(layout::inputs("A")), i, 0, 1, kk, &b, error)) return false;
  *out = vectorStats(b);
  return true;
}

bool HeatmapModel::colOfB(int64_t j, VectorStats* out, QString* error) const {
  const auto [kk, n] = run_->dims(sessionPath(layout::inputs("B")));
  if (n == 0) {
    if (error) *error = QObject::tr("the run did not store %1").arg(sessionPath(layout::inputs("B")));
    return false;
  }
  Block b;
  if (!run_->read(sessionPath(layout::inputs("B")), 0, j, kk, 1, &b, error)) return false;
  *out = vectorStats(b);
  return true;
}

} // namespace fp8lab::ui
