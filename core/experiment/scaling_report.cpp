// The reports of the scaling and scale-layout commands (scaling_report.h).
#include "experiment/scaling_report.h"
#include "json/json_number.h"

#include "common/number_text.h"
#include "formats/format.h"
#include "scaling/nvfp4.h"
#include "scaling/scaling.h"

#include <algorithm>
#include <cmath>

namespace fp8lab {

namespace {

/// Both preset tables, in display order.
struct PresetRow {
  const std::string *name, *summary, *source;
  bool delayed, nvfp4;
};
std::vector<PresetRow> presetRows() {
  std::vector<PresetRow> rows;
  for (const auto& s : scalingPresets()) rows.push_back({&s.name, &s.summary, &s.source, s.delayed, false});
  for (const auto& s : nvfp4Presets()) rows.push_back({&s.name, &s.summary, &s.source, false, true});
  return rows;
}

} // namespace

Json scalingPresetsJson() {
  Json a = Json::array();
  for (const PresetRow& r : presetRows())
    a.push_back({{"name", *r.name},
                 {"summary", *r.summary},
                 {"source", *r.source},
                 {"delayed", r.delayed},
                 {"nvfp4", r.nvfp4}});
  return a;
}

std::string scalingPresetsText() {
  std::string t;
  bool nvfp4 = false;
  for (const PresetRow& r : presetRows()) {
    if (r.nvfp4 && !nvfp4)
      t += "\nNVFP4 presets: E2M1 elements, E4M3FN scales of 16-element blocks and a float32 tensor scale\n";
    nvfp4 = r.nvfp4;
    t += padded(*r.name, -24) + ' ' + *r.summary + '\n' + std::string(24, ' ') + " source: " + *r.source + '\n';
  }
  return t;
}

Json delayedStepJson(int64_t step, double amax, const DelayedUpdate& u, const std::vector<float>& history) {
  Json h = Json::array();
  for (float x : history) h.push_back(numberJson(x));
  return {{"step", step},
          {"amax", numberJson(amax)},
          {"scale", numberJson(u.scale)},
          {"quant_scale", numberJson(u.quant_scale)},
          {"dequant_scale", numberJson(u.dequant_scale)},
          {"history", h},
          {"kept_previous", u.kept_previous},
          {"scale_used", numberJson(u.scale_used)},
          {"window_amax", numberJson(u.window_amax)},
          {"rolled", u.rolled},
          {"clamped", u.clamped}};
}

std::string delayedSimulationText(const Format& fmt, const DelayedScalingConfig& cfg, const std::vector<double>& amax) {
  DelayedScaling state(fmt, cfg);
  const bool flax = cfg.preset == DelayedPreset::Flax;
  std::string t =
      std::string(flax                              ? "Flax fp8_ops"
                  : cfg.preset == DelayedPreset::TE ? "Transformer Engine"
                                                    : "Transformer Engine JAX") +
      " delayed scaling, " + fmt.name() + " (max " + shortestText(fmt.maxFinite()) + "), history " +
      std::to_string(cfg.history_len) + ", algo " + toString(cfg.algo) + ", margin " + std::to_string(cfg.margin) +
      "; scale = " +
      (flax ? "dequant (x_q = cast(x / scale)), used this step" : "quant (x_q = cast(x * scale)), for the next step") +
      '\n';
  const std::vector<int> widths = {5, 14, 14, 14, 14, 14, 14};
  t += tableLine({"step", "amax", "window amax", "scale used", "scale", "quant", "dequant", "note"}, widths);
  for (size_t i = 0; i < amax.size(); ++i) {
    const DelayedUpdate u = state.update(static_cast<float>(amax[i]));
    std::string note;
    for (const auto& [on, what] :
         {std::pair{u.kept_previous, "kept previous"}, {u.clamped, "clamped to FLT_MAX"}, {!u.rolled, "no roll"}})
      if (on) note += (note.empty() ? "" : ", ") + std::string(what);
    t += tableLine({std::to_string(i), shortestText(amax[i]), shortestText(u.window_amax), shortestText(u.scale_used),
                    shortestText(u.scale), shortestText(u.quant_scale), shortestText(u.dequant_scale), note},
                   widths);
  }
  const std::vector<float> last = state.historyChronological();
  const size_t show = std::min<size_t>(last.size(), 16);
  std::string h;
  for (size_t k = last.size() - show; k < last.size(); ++k) h += (h.empty() ? "" : " ") + shortestText(last[k]);
  return t + "history after the last step (oldest first" + (flax ? "" : ", last = staging slot") +
         "): " + (show < last.size() ? "... " : "") + h + '\n';
}

Json scaleIndexJson(ScaleLayout layout, ScaleGridShape g, const std::vector<std::pair<int64_t, int64_t>>& at) {
  Json rows = Json::array();
  for (const auto& [o, k] : at)
    rows.push_back({{"outer", double(o)}, {"k_block", double(k)}, {"offset", double(scaleOffset(layout, g, o, k))}});
  return {{"layout", toString(layout)},
          {"storage_elements", double(scaleStorageSize(layout, g))},
          {"unit", scaleLayoutHoldsCodes(layout) ? "byte" : "element"},
          {"scales", rows}};
}

std::string scaleIndexText(ScaleLayout layout, ScaleGridShape g, const std::vector<std::pair<int64_t, int64_t>>& at) {
  const std::string unit = scaleLayoutHoldsCodes(layout) ? "byte" : "element";
  std::string s = std::string(toString(layout)) + " storage of a [" + std::to_string(g.outer) + ", " +
                  std::to_string(g.kblocks) + "] grid: " + std::to_string(scaleStorageSize(layout, g)) + ' ' + unit +
                  "s\n";
  for (const auto& [o, k] : at)
    s += "  (" + std::to_string(o) + ", " + std::to_string(k) + ") -> " + unit + ' ' +
         std::to_string(scaleOffset(layout, g, o, k)) + '\n';
  return s;
}

bool writeScaleIndexGrid(ScaleLayout layout, ScaleGridShape g, bool json, std::ostream& out) {
  const std::string unit = scaleLayoutHoldsCodes(layout) ? "byte" : "element";
  const int64_t storage = scaleStorageSize(layout, g);
  std::string buf;
  buf.reserve(1 << 16);
  auto flush = [&] {
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
    buf.clear();
    return bool(out);
  };
  if (json)
    buf += "{\"layout\":\"" + std::string(toString(layout)) + "\",\"scales\":[";
  else
    buf += std::string(toString(layout)) + " storage of a [" + std::to_string(g.outer) + ", " +
           std::to_string(g.kblocks) + "] grid: " + std::to_string(storage) + ' ' + unit + "s\n";
  bool first = true;
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t k = 0; k < g.kblocks; ++k) {
      const std::string off = std::to_string(scaleOffset(layout, g, o, k));
      if (json) {
        buf += std::string(first ? "" : ",") + "{\"k_block\":" + std::to_string(k) + ",\"offset\":" + off +
               ",\"outer\":" + std::to_string(o) + "}";
        first = false;
      } else {
        buf += "  (" + std::to_string(o) + ", " + std::to_string(k) + ") -> " + unit + ' ' + off + '\n';
      }
      if (buf.size() > (1 << 16) - 256 && !flush()) return false;
    }
  if (json) buf += "],\"storage_elements\":" + std::to_string(storage) + ",\"unit\":\"" + unit + "\"}\n";
  return flush();
}

} // namespace fp8lab
