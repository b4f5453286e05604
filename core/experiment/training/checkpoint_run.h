// FP8 Lab — an FP8 checkpoint as a session run (type "checkpoint"), so that its weights appear in
// the views that read sessions (bit histograms, block map, number line) and can be compared with
// what other recipes would have stored.
//
// Layout (docs/checkpoints.md "In a session"; docs/session-format.md):
//   /runs/<id>/                 attrs: type "checkpoint", source (the file), tensors (count),
//                                      block (edge of the square scale blocks read)
//   quantized/<tensor>_*        the stored codes and scales exactly as read (Run::putQuantized)
//   block_stats/<tensor>/       per-block statistics of the stored quantization against the
//                               float32 dequantized weight x = f32(decode(code) · scale): one step,
//                               one map (putBlockStatsSeries)
//   what_if/steps               int64 [1] = {0}
//   what_if/<recipe>/<tensor>/  the summaries of x re-quantized under `recipe` (blocks along the
//                               columns: an nn.Linear weight [out, in] contracts over in): one
//                               step of the nine per-step series, no per-block maps
#pragma once

#include "json/json_document.h"
#include "session/session.h"
#include "training/diagnostics.h"

#include <string>
#include <utility>
#include <vector>

namespace fp8lab {

/// Options of checkpointRun.
struct CheckpointRunOptions {
  std::vector<std::string> tensors;  ///< FP8 tensors to take; empty: every importable one
  std::vector<WhatIfRecipe> what_if; ///< recipes to re-quantize each tensor with
  int64_t block = 128;               ///< edge of the square scale blocks (DeepSeek-V3: 128)
  int threads = 0;
};

/// Builds the session run of an FP8 safetensors checkpoint or shard index (layout above). Errors:
/// the file's (listFp8Checkpoint), a named tensor that is not in the file or cannot be imported
/// (its problem; for a tensor the shard index misplaces, listFp8Checkpoint's warning as an Error),
/// a file with no importable FP8 tensor (after the warnings below); importFp8Checkpoint's errors
/// for each tensor. On success the result carries listFp8Checkpoint's warnings (misplaced tensors,
/// which are not imported); without `opt.tensors`, a Warning (MalformedInput) at "<path>:<tensor>"
/// "not imported: <its problem>" for each FP8 tensor listFp8Checkpoint finds not importable and
/// has no warning for; and importFp8Checkpoint's warnings (NaN codes).
/// A what-if format suffix applies as in training; without one the tensor's own format is used.
Result<Run> checkpointRun(const std::string& path, const std::string& run_id, const CheckpointRunOptions& opt);

/// One tensor's SQNR (dB) against its float32 dequantized weight x, as a checkpoint run stores it.
struct CheckpointSqnr {
  std::string tensor;
  float stored_db = 0; ///< block_stats/<tensor>/sqnr_db: the stored quantization (+Inf when exact)
  std::vector<std::pair<std::string, float>> what_if_db; ///< (recipe id, what_if/<id>/<tensor>/sqnr_db)
};

/// The SQNR of each tensor of checkpoint run `run` (checkpointRun's result or one read back) in
/// the order of its config's "tensors", with the what-if recipes in the config's order. Tensors
/// without block_stats/<tensor>/sqnr_db are left out; empty for a run without a checkpoint config.
std::vector<CheckpointSqnr> checkpointRunSqnr(const Run& run);

/// The run id `checkpoint import` gives `path` when none is asked for: its file name without
/// ".index.json" (a shard index), or else without its last extension, then without a trailing
/// ".safetensors": "model.safetensors" and "model.safetensors.index.json" both give "model",
/// "weights.json" gives "weights". Characters other than ASCII letters, digits and _ - . + = are
/// replaced by '_' (one per character); an id that is empty or starts with '.' is prefixed with
/// "checkpoint".
std::string defaultCheckpointRunId(const std::string& path);

/// What `checkpoint import --json` prints after storing run `run_id` of `tensors` FP8 tensors in
/// session file `out`: {"file": out, "run", "tensors", "what_if": the recipe count, "sqnr": [{"tensor",
/// "stored_sqnr_db", "what_if_sqnr_db": {recipe: dB}}]} (checkpointRunSqnr; dB as numbers or "nan",
/// "inf", "-inf").
Json checkpointImportJson(const std::string& out, const std::string& run_id, int64_t tensors, size_t what_if,
                          const std::vector<CheckpointSqnr>& sqnr);

/// What `checkpoint import` prints: "FILE: run ID (N FP8 tensors[, K what-if recipes]) written to
/// OUT", then, with what-if recipes, a table of each tensor's SQNR (dB, shortest float32 text)
/// against the float32 dequantized weight: the stored quantization's and each recipe's (columns
/// headed by the recipes' ids), left-aligned in columns two spaces apart.
std::string checkpointImportText(const std::string& file, const std::string& run_id, int64_t tensors,
                                 const std::vector<WhatIfRecipe>& what_if, const std::vector<CheckpointSqnr>& sqnr,
                                 const std::string& out);

} // namespace fp8lab
