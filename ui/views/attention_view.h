// Attention view: the softmax probabilities of one transformer block's heads as query × key maps of
// the fixed validation sequence a language-model run snapshots (attention/steps, attention/tokens,
// attention/blocks.<l>/probs [snapshots, heads, T, T]; docs/session-format.md "Language-model
// runs"), at the snapshot step a slider chooses, the sequence's bytes on the axes. Over each map
// stands the head's mass on key position 0 — the attention sink (probes.h attentionSink: the mean
// over query positions t ≥ 1 of P[t, 0]) — and under the maps that mass over every snapshot step,
// so that a sink forming during training can be shown step by step, and the sink's profile at the
// chosen step: P[t, 0] against the query position t, with the 1/(t+1) a uniform causal head puts
// on position 0 as the reference a sink rises above.
//
// The numbers come from the free functions below (no widgets): a snapshot of the default model is
// 4 heads × 64 × 64 float32 (64 KiB), read on the GUI thread.
#pragma once

#include "views/analysis_view.h"

#include <memory>
#include <vector>

class QCheckBox;
class QComboBox;
class QCPAxisRect;
class QCPColorMap;
class QCPColorScale;
class QCPLayoutGrid;
class QCPLegend;
class QCPMarginGroup;
class QLabel;
class QSlider;

namespace fp8lab::ui {

/// One block's attention probabilities at one snapshot step.
struct AttentionSnapshot {
  QString block;      ///< "blocks.0"
  int64_t step = -1;  ///< the optimizer step after which it was taken (attention/steps)
  int snapshot = -1;  ///< its index in attention/steps
  int64_t heads = 0;  ///< H
  int64_t length = 0; ///< T, the sequence length
  /// [heads, T, T] row-major: probs[(h·T + q)·T + k] = P(query q attends to key k) of head h;
  /// zero above the diagonal (k > q: future keys, masked).
  std::vector<double> probs;
  /// Per head, the attention sink: mean over queries q = 1 … T−1 of P[q, 0] (attentionSink).
  std::vector<double> sink;
  double at(int64_t h, int64_t q, int64_t k) const { return probs[size_t((h * length + q) * length + k)]; }
};

/// The blocks of `run` with attention snapshots ("blocks.0", "blocks.1", …, by block number).
QStringList attentionBlocks(const RunAccess& run);
/// The snapshot steps of `run` (attention/steps; empty when it has none).
std::vector<int64_t> attentionSteps(const RunAccess& run);
/// The validation sequence the snapshots look at (attention/tokens, bytes; empty when absent).
QByteArray attentionTokens(const RunAccess& run);
/// Reads snapshot `snapshot` (an index into attentionSteps) of block `block`. False and *why (what
/// to do) when the run has no such snapshot or its shape is not [snapshots, heads, T, T].
bool readAttentionSnapshot(const RunAccess& run, const QString& block, int snapshot, AttentionSnapshot* out,
                           QString* why);
/// The sink of every head at every snapshot of `block`: [snapshots][heads] (empty when none).
std::vector<std::vector<double>> attentionSinkSeries(const RunAccess& run, const QString& block);
/// A byte of the sequence as an axis label: itself when printable ASCII, "␣" for a space, "↵" for
/// a newline, "⇥" for a tab, else its value as "\xNN".
QString tokenLabel(uint8_t byte);

/// The Attention view (id "attention").
class AttentionView : public AnalysisView {
  Q_OBJECT
public:
  explicit AttentionView(QWidget* parent = nullptr);
  QString viewId() const override { return QStringLiteral("attention"); }
  QString title() const override { return tr("Attention"); }
  QCustomPlot* exportPlot() const override { return plot_; }
  /// The snapshot shown: "block,step,head,query,key,query_byte,key_byte,probability" then one line
  /// per causal cell (k ≤ q) of every head shown.
  QString csv() const override;

  /// Shows a run directly (tests, the renderer) and draws at once; nullptr clears the view.
  void setRunAccess(std::shared_ptr<RunAccess> run);
  /// Shows block `block` ("blocks.1"); false when the run has no snapshots of it.
  bool setBlock(const QString& block);
  /// Shows snapshot `index` of attention/steps (the slider); false when out of range.
  bool setSnapshot(int index);
  /// Shows head `head` alone, or every head (−1); false when the block has no such head.
  bool setHead(int head);
  /// Colours on a log₁₀ scale (10⁻⁴ … 1) instead of a linear one (0 … 1).
  void setLogScale(bool on);

  const AttentionSnapshot& snapshot() const { return snap_; }
  QString block() const { return snap_.block; }
  int head() const { return head_; }
  /// The text in the plot in the empty or failed state ("" when maps are shown).
  /// The sequence line over the maps and the per-head sink line under the slider.
  QString sequenceText() const;
  QString sinkText() const;
  /// The title over the map of head `head` ("" when not drawn).
  QString headTitle(int head) const;
  /// The axis rect of head `head`'s map (nullptr when not drawn), for tests and hover mapping.
  QCPAxisRect* headRect(int head) const;
  /// The profile plot (nullptr when not drawn): the reference 100/(t+1) first, then a graph per
  /// head shown, P[t, 0] in % at t = 1 … T−1.
  QCPAxisRect* profileRect() const { return profile_rect_; }
  /// What hovering over cell (query q, key k) of head h shows; hoverAt is what a mouse move does.
  void hoverAt(int h, int q, int k);
  QString hoverText() const { return hover_text_; }
  QCustomPlot* plot() const { return plot_; }

private:
  void runChosen(Read read = Read::Now) override;
  void fillBlocks();
  void reload();
  void draw();
  void drawHeadMaps(QCPLayoutGrid* maps, QCPColorScale* scale);
  double drawSinkPlots(QCPLayoutGrid* body);
  void drawSinkProfile(QCPAxisRect* prect, QCPLegend* legend, QCPMarginGroup* side_margins);
  void drawEmptyState(const QString& text) override;
  bool cellAt(const QPoint& pos, int* h, int* q, int* k) const;
  /// Lays the maps out in the grid of the largest square maps the plot's area holds (after each
  /// layout of the plot: the window's size or an export's).
  void arrangeMaps();

  std::shared_ptr<RunAccess> run_;
  std::vector<int64_t> steps_;
  QByteArray tokens_;
  AttentionSnapshot snap_;
  std::vector<std::vector<double>> sink_series_;
  int head_ = -1;
  int snapshot_ = -1;
  bool log_ = false;
  bool updating_ = false;
  QString hover_text_;
  std::vector<int> drawn_heads_;
  std::vector<QCPAxisRect*> rects_;
  QCPLayoutGrid* body_ = nullptr; // maps, colour scale, spacer or the sink plot
  QCPLayoutGrid* maps_ = nullptr;
  QCPAxisRect* sink_rect_ = nullptr;
  QCPAxisRect* profile_rect_ = nullptr;
  int maps_cols_ = 0;
  bool arranging_ = false;
  std::vector<QString> titles_;

  QComboBox* block_box_;
  QComboBox* head_box_;
  QSlider* slider_;
  QLabel* step_label_;
  QCheckBox* log_box_;
  QLabel* sequence_;
  QCustomPlot* plot_;
  QLabel* sink_label_;
  QLabel* hover_;
};

} // namespace fp8lab::ui
