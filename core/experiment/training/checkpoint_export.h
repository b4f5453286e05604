// FP8 Lab — a training run of a session exported as an FP8 checkpoint in safetensors (what
// `fp8lab-cli checkpoint export` writes; docs/checkpoints.md "Export"): the Linear weights in FP8
// with their scales in one of the layouts of io/fp8_checkpoint.h, everything else in float32,
// and the file's __metadata__ saying how.
#pragma once

#include "io/fp8_checkpoint.h"
#include "json/json_document.h"
#include "session/session.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fp8lab {

/// The layout named by `checkpoint export --layout`: "per_tensor", "per_channel", "block128" or
/// "block128x128"; nullopt for any other name.
std::optional<Fp8ScaleLayout> parseCheckpointExportLayout(const std::string& name);

/// A checkpoint built from a training run (checkpointOfRun).
struct CheckpointExport {
  std::vector<SafetensorsTensor> tensors;      ///< what the file holds
  std::map<std::string, std::string> metadata; ///< its __metadata__
  Json layers = Json::array();                 ///< per FP8 weight: {"name", "weight_shape", "scales", "saturated"}
  bool transformer = false;                    ///< a language-model run (by its `sites` attribute)
};

/// The checkpoint of training run `run` in `layout` and `format` (E4M3FN or E5M2), `source` naming
/// the run in the metadata ("SESSION#/runs/ID").
/// An MLP run (weights/fc<l>/kernel [in, out] and bias): per layer "fc<l>.weight" [out, in] =
/// kernelᵀ (nn.Linear's layout, y = x · Wᵀ) in FP8 with its scale (fp8WeightTensors,
/// quantizeForCheckpoint) and "fc<l>.bias" in F32.
/// A language-model run (docs/session-format.md "Language-model runs"): the weight of every
/// Linear site of its `sites` list but lm_head, stored [in, out], becomes "<site>.weight" [out, in]
/// in FP8; every other parameter — the Linear biases, the embeddings wte.weight [V, C] and
/// wpe.weight [T, C] as stored (nn.Embedding's layout), the norms' weights and biases, an untied
/// lm_head transposed to [V, C] — in F32, as FP8 checkpoints keep embeddings, norms and the head
/// in high precision (llm-compressor's FP8 scheme, DeepSeek-V3).
/// Metadata: format "pt", producer, layout (toString), quantization (the preset: te_current,
/// per_row or deepgemm_128x128), element_format, scale_convention, source; for a language model
/// also model "transformer", quantized_modules (the sites, comma-separated) and tied_embeddings.
/// Errors (nullopt, *error): "<path> is not 2-D [in, out]" (a Linear weight), "<path> is not a
/// vector or a matrix" (another parameter), no Linear weight, trainedWeightsFromRun's errors,
/// "run 'ID' stores no trained weights (weights/fc1/kernel)".
std::optional<CheckpointExport> checkpointOfRun(const Run& run, Fp8ScaleLayout layout, const Format& format,
                                                const std::string& source, std::string* error);

/// Reads run `run_id` of session file `session`, builds its checkpoint (checkpointOfRun, source
/// "SESSION#/runs/ID") and writes it to `out` (writeSafetensors: atomic). The result keeps the
/// metadata and layers, not the tensors. Errors (nullopt, *error): the reader's, "run 'ID' is a
/// TYPE run; checkpoints are exported from training runs", checkpointOfRun's, writeSafetensors'.
std::optional<CheckpointExport> exportRunCheckpoint(const std::string& session, const std::string& run_id,
                                                    Fp8ScaleLayout layout, const Format& format, const std::string& out,
                                                    std::string* error);

/// What `checkpoint export --json` prints: {"file": out, "layout", "layers"}.
Json checkpointExportJson(const CheckpointExport& x, const std::string& out);

/// What `checkpoint export` prints: "wrote OUT (N layers, LAYOUT)", for a language model "wrote OUT
/// (N Linear weights in FP8, LAYOUT; embeddings, norms, biases[, lm_head] in F32)".
std::string checkpointExportText(const CheckpointExport& x, const std::string& out);

} // namespace fp8lab
