// What a run holds, read from its dataset paths (core/session/run_index.h): the placeholders of a
// layout pattern bound to a path, and the readers the views use (history operands, block
// statistics, what-if recipes, attention blocks, weights). The paths are written out by hand from
// docs/session-format.md's index.
#include <QtTest>

#include "session/run_index.h"

using namespace fp8lab;
using Strings = std::vector<std::string>;

namespace {
// A small language-model run's datasets, as a training run writes them (docs/session-format.md).
const Strings kRun = {"history/blocks.0.attn.qkv/input/amax",
                      "history/blocks.0.attn.qkv/input/amax_history",
                      "history/fc10/kernel/amax",
                      "history/fc2/kernel/scale",
                      "block_stats/fc2/input/log2_scale_min",
                      "block_stats/fc2/input/underflow_fraction",
                      "block_stats/fc10/output_grad/log2_scale_max",
                      "block_stats/a/b/c/d",
                      "what_if/mx_rceil/fc2/input/log2_scale_min",
                      "what_if/te_block/fc2/kernel/log2_scale_min",
                      "what_if/mx_rceil/fc3/input/log2_scale_min",
                      "attention/blocks.10/probs",
                      "attention/blocks.2/probs",
                      "attention/steps",
                      "weights/fc1/kernel",
                      "weights/fc1/bias",
                      "weights/blocks.0.attn.qkv.weight",
                      "weights/blocks.0.norm1.scale",
                      "quantized/fc1.kernel_dequantized",
                      "quantized/fc1.kernel_codes"};
} // namespace

class TestRunIndex : public QObject {
  Q_OBJECT
private Q_SLOTS:
  // A placeholder takes the shortest run that lets the rest match, slashes included: the operand
  // of history/<operand>/amax is "fc1/input"; a path of another shape does not bind.
  void bindReadsThePlaceholders() {
    QCOMPARE(layout::bind("history/<operand>/amax", "history/fc1/input/amax"), std::optional<Strings>({"fc1/input"}));
    QCOMPARE(layout::bind("what_if/<r>/<l>/<o>/<s>", "what_if/mx/fc2/input/x"),
             std::optional<Strings>({"mx", "fc2", "input", "x"}));
    QCOMPARE(layout::bind("history/<operand>/amax", "history/fc1/input/scale"), std::nullopt);
    QCOMPARE(layout::bind("history/<operand>/amax", "history//amax"), std::nullopt); // one or more characters
  }

  void historyOperandsAndWindows() {
    QCOMPARE(layout::historyOperands(kRun), (Strings{"blocks.0.attn.qkv/input", "fc10/kernel"}));
    QVERIFY(layout::hasAmaxWindows(kRun));
    QVERIFY(!layout::hasAmaxWindows({"history/fc1/input/amax", "history/fc1/input/scale"}));
  }

  // Block statistics: (layer, operand) sorted and unique, each part one segment (block_stats/a/b/c/d
  // has four and is not a statistic); the what-if pairs and recipes in order of appearance.
  void blockStatisticsAndWhatIf() {
    using P = layout::LayerOperand;
    QCOMPARE(layout::blockStatOperands(kRun), (std::vector<P>{{"fc10", "output_grad"}, {"fc2", "input"}}));
    QCOMPARE(layout::whatIfOperands(kRun), (std::vector<P>{{"fc2", "input"}, {"fc2", "kernel"}, {"fc3", "input"}}));
    QCOMPARE(layout::whatIfRecipes(kRun), (Strings{"mx_rceil", "te_block"}));
    QCOMPARE(layout::operandLayers(kRun), (Strings{"blocks.0.attn.qkv", "fc10", "fc2", "fc3"}));
  }

  // Attention blocks by their number (2 before 10), not by name.
  void attentionBlocksByNumber() { QCOMPARE(layout::attentionBlocks(kRun), (Strings{"blocks.2", "blocks.10"})); }

  // Weights: kernels and .weight matrices with their module, biases and norm scales left out;
  // a checkpoint's dequantized tensors.
  void weightsAndDequantized() {
    const auto w = layout::weightTensors(kRun);
    QCOMPARE(w.size(), size_t(2));
    QCOMPARE(w[0].path, std::string("weights/blocks.0.attn.qkv.weight"));
    QCOMPARE(w[0].module, std::string("blocks.0.attn.qkv"));
    QCOMPARE(w[1].path, std::string("weights/fc1/kernel"));
    QCOMPARE(w[1].module, std::string("fc1"));
    QCOMPARE(layout::dequantizedTensors(kRun), (Strings{"quantized/fc1.kernel_dequantized"}));
  }
};

QTEST_MAIN(TestRunIndex)
#include "test_run_index.moc"
