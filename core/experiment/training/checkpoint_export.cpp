// A training run exported as an FP8 checkpoint (checkpoint_export.h).
#include "experiment/training/checkpoint_export.h"
#include "training/sites.h"

#include "common/names.h"
#include "common/number_text.h"
#include "formats/format.h"
#include "session/session_layout.h"
#include "training/training_session.h"

#include <set>
#include <utility>

namespace fp8lab {
namespace {

std::vector<float> float32Of(const Dataset& d) {
  std::vector<float> v(size_t(d.elementCount()));
  for (int64_t i = 0; i < d.elementCount(); ++i) v[size_t(i)] = float(d.valueAt(i));
  return v;
}

/// `w` [rows, cols] (row-major) transposed to [cols, rows].
std::vector<float> transposed(const std::vector<float>& w, int64_t rows, int64_t cols) {
  std::vector<float> t(w.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[size_t(j * rows + i)] = w[size_t(i * cols + j)];
  return t;
}

/// Adds weight `name` [out, in] (the run's [in, out] kernel transposed) in FP8 to `x`.
void addFp8Weight(CheckpointExport& x, const std::string& name, const std::vector<float>& kernel, int64_t in,
                  int64_t out, Fp8ScaleLayout scale_layout, const Format& format) {
  const QuantizedTensor q = quantizeForCheckpoint(transposed(kernel, in, out), out, in, scale_layout, format);
  for (auto& t : fp8WeightTensors(name, q, scale_layout)) x.tensors.push_back(std::move(t));
  x.layers.push_back({{"name", name},
                      {"weight_shape", {out, in}},
                      {"scales", q.dequant_scales.size()},
                      {"saturated", q.stats.saturated}});
}

bool transformerTensors(CheckpointExport& x, const Run& run, const std::string& sites, Fp8ScaleLayout scale_layout,
                        const Format& format, std::string* why) {
  std::set<std::string> linear;
  for (const std::string& item : commaItems(sites)) {
    const std::string name(trimmedText(item));
    const Dataset* w = run.find(layout::weights(name + ".weight"));
    if (!w || name == kLmHeadName) continue; // attention matmuls have no weight; the head stays F32
    if (w->shape.size() != 2) {
      *why = layout::weights(name + ".weight") + " is not 2-D [in, out]";
      return false;
    }
    addFp8Weight(x, name, float32Of(*w), w->shape[0], w->shape[1], scale_layout, format);
    linear.insert(name + ".weight");
  }
  const std::string prefix = std::string(layout::kWeightsGroup) + "/";
  for (const auto& [path, d] : run.datasets) {
    if (path.rfind(prefix, 0) != 0) continue;
    const std::string name = path.substr(prefix.size());
    if (linear.count(name)) continue;
    if (d.shape.empty() || d.shape.size() > 2) {
      *why = path + " is not a vector or a matrix";
      return false;
    }
    std::vector<float> v = float32Of(d);
    int64_t rows = d.shape.size() == 2 ? d.shape[0] : 0, cols = d.shape.back();
    if (name == std::string(kLmHeadName) + ".weight" && d.shape.size() == 2) { // [C, V] → nn.Linear's [V, C]
      v = transposed(v, rows, cols);
      std::swap(rows, cols);
    }
    x.tensors.push_back(float32Tensor(name, v, rows, cols));
  }
  if (x.layers.empty()) {
    *why = "the run stores no Linear weights (weights/<site>.weight)";
    return false;
  }
  return true;
}

} // namespace

std::optional<Fp8ScaleLayout> parseCheckpointExportLayout(const std::string& name) {
  if (name == "per_tensor") return Fp8ScaleLayout::PerTensor;
  if (name == "per_channel") return Fp8ScaleLayout::PerChannel;
  if (name == "block128" || name == "block128x128") return Fp8ScaleLayout::Block;
  return std::nullopt;
}

std::optional<CheckpointExport> checkpointOfRun(const Run& run, Fp8ScaleLayout scale_layout, const Format& format,
                                                const std::string& source, std::string* error) {
  CheckpointExport x;
  const std::string sites = attrString(run.attrs, "sites").value_or("");
  x.transformer = !sites.empty();
  if (x.transformer && !transformerTensors(x, run, sites, scale_layout, format, error)) return std::nullopt;
  for (int l = 1; !x.transformer; ++l) {
    const std::string name = mlpLayerName(l - 1);
    if (!run.find(layout::weights(name + "/kernel"))) break;
    auto w = trainedWeightsFromRun(run, name);
    if (!w.ok()) {
      *error = w.errors();
      return std::nullopt;
    }
    addFp8Weight(x, name, w.value.kernel, w.value.in, w.value.out, scale_layout, format);
    x.tensors.push_back(float32Tensor(name + ".bias", w.value.bias, 0, w.value.out));
  }
  if (x.tensors.empty()) {
    *error = "run '" + run.id + "' stores no trained weights (weights/fc1/kernel)";
    return std::nullopt;
  }
  x.metadata = {{"format", "pt"},
                {"producer", "fp8lab-cli checkpoint export"},
                {"layout", toString(scale_layout)},
                {"quantization", scale_layout == Fp8ScaleLayout::PerTensor    ? "te_current"
                                 : scale_layout == Fp8ScaleLayout::PerChannel ? "per_row"
                                                                              : "deepgemm_128x128"},
                {"element_format", format.name()},
                {"scale_convention", "dequant: w = decode(weight) * scale"},
                {"source", source}};
  if (x.transformer) {
    std::string modules;
    for (const Json& l : x.layers) modules += (modules.empty() ? "" : ",") + l["name"].get<std::string>();
    x.metadata["model"] = "transformer";
    x.metadata["quantized_modules"] = modules;
    x.metadata["tied_embeddings"] = run.find(layout::weights(std::string(kLmHeadName) + ".weight")) ? "false" : "true";
  }
  return x;
}

std::optional<CheckpointExport> exportRunCheckpoint(const std::string& session, const std::string& run_id,
                                                    Fp8ScaleLayout scale_layout, const Format& format,
                                                    const std::string& out, std::string* error) {
  auto rd = SessionReader::open(session);
  if (!rd.ok()) {
    *error = rd.errors();
    return std::nullopt;
  }
  auto run = rd.value->readRun(run_id);
  if (!run.ok()) {
    *error = run.errors();
    return std::nullopt;
  }
  if (run.value.type != "training") {
    *error = "run '" + run_id + "' is a " + run.value.type + " run; checkpoints are exported from training runs";
    return std::nullopt;
  }
  auto x = checkpointOfRun(run.value, scale_layout, format, session + "#/runs/" + run_id, error);
  if (!x) return std::nullopt;
  const Status st = writeSafetensors(out, std::move(x->tensors), x->metadata);
  x->tensors.clear();
  if (!st.ok()) {
    *error = st.errors();
    return std::nullopt;
  }
  return x;
}

Json checkpointExportJson(const CheckpointExport& x, const std::string& out) {
  return {{"file", out}, {"layout", x.metadata.at("layout")}, {"layers", x.layers}};
}

std::string checkpointExportText(const CheckpointExport& x, const std::string& out) {
  const std::string n = std::to_string(x.layers.size()), layout = x.metadata.at("layout");
  if (!x.transformer) return "wrote " + out + " (" + n + " layers, " + layout + ")\n";
  return "wrote " + out + " (" + n + " Linear weights in FP8, " + layout + "; embeddings, norms, biases" +
         (x.metadata.at("tied_embeddings") == "false" ? ", lm_head" : "") + " in F32)\n";
}

} // namespace fp8lab
