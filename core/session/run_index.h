// FP8 Lab — what a run holds, read from the paths of its datasets against the session layout
// (session_layout.h): the operands with a per-step scaling history, those with block statistics
// (trained or under the what-if recipes), the what-if recipes, the attention blocks. Readers and
// views ask these instead of matching path strings themselves. Paths are relative to the run
// ("history/fc1/input/amax").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fp8lab::layout {

/// The values of the <placeholders> of `pattern` ("history/<operand>/amax") in `path`, in the
/// pattern's order: each placeholder takes the shortest run of one or more characters (slashes
/// included) that lets the rest match, as match() reads the table. nullopt when `path` does not
/// match. bind("history/<operand>/amax", "history/fc1/input/amax") = {"fc1/input"}.
std::optional<std::vector<std::string>> bind(std::string_view pattern, std::string_view path);

/// The operands with a per-step scaling history ("fc1/input" of history/<operand>/amax), in the
/// order of `datasets`.
std::vector<std::string> historyOperands(const std::vector<std::string>& datasets);

/// Whether an operand has delayed-scaling windows (history/<operand>/amax_history).
bool hasAmaxWindows(const std::vector<std::string>& datasets);

/// A layer and one of its operands: ("fc1", "input"), ("blocks.0.attn.qkv", "kernel").
using LayerOperand = std::pair<std::string, std::string>;

/// The (layer, operand) pairs with block statistics, block_stats/<layer>/<operand>/<stat> (each
/// part one path segment), sorted and unique.
std::vector<LayerOperand> blockStatOperands(const std::vector<std::string>& datasets);

/// The (layer, operand) pairs with block statistics under a what-if recipe,
/// what_if/<recipe>/<layer>/<operand>/<stat> (each part one segment), sorted and unique.
std::vector<LayerOperand> whatIfOperands(const std::vector<std::string>& datasets);

/// The what-if recipes of those paths, in the order they first appear.
std::vector<std::string> whatIfRecipes(const std::vector<std::string>& datasets);

/// The attention blocks with snapshots, "blocks.<l>" of attention/blocks.<l>/probs, by l.
std::vector<std::string> attentionBlocks(const std::vector<std::string>& datasets);

/// The layers whose GEMM operands (input, kernel, output_grad) have a history, block statistics or
/// what-if statistics (history/<layer>/<operand>/<stat>, block_stats/…, what_if/<recipe>/…; each
/// part one segment), sorted by name: the sites of an older run that does not list them.
std::vector<std::string> operandLayers(const std::vector<std::string>& datasets);

/// A weight matrix of a trained model and the module it belongs to.
struct WeightTensor {
  std::string path;   ///< "weights/fc1/kernel", "weights/blocks.0.attn.qkv.weight"
  std::string module; ///< "fc1", "blocks.0.attn.qkv"
};
/// The weights of a run: the MLP's weights/<module>/kernel and a language model's
/// weights/<module>.weight (the Linear weights and the embeddings), sorted by path. The biases and
/// norms' vectors are not listed.
std::vector<WeightTensor> weightTensors(const std::vector<std::string>& datasets);

/// The dequantized tensors a checkpoint run stores, quantized/<tensor>_dequantized, sorted.
std::vector<std::string> dequantizedTensors(const std::vector<std::string>& datasets);

} // namespace fp8lab::layout
