// FP8 Lab — an FP8 checkpoint as a session run (see checkpoint_run.h).
#include "experiment/training/checkpoint_run.h"
#include "session/session_layout.h"

#include "io/fp8_checkpoint.h"
#include "json/json_document.h"
#include "json/json_number.h"
#include "common/number_text.h"
#include "metrics/block_stats.h"
#include "training/training_session.h"

#include <algorithm>
#include <filesystem>
#include <optional>

namespace fp8lab {

namespace {

/// The per-block statistics of `q` against `x` as a one-step series with its map.
OperandBlockSeries oneStep(const std::string& name, const std::string& quantization, const float* x,
                           const QuantizedTensor& q, bool with_map) {
  OperandBlockSeries s;
  s.operand = name;
  s.quantization = quantization;
  s.format = q.format->name();
  s.scale_format = q.scale_codes.empty() ? std::string("float32") : q.scaleCodeFormat().name();
  BlockStatsMap m;
  s.steps.push_back(computeBlockStats(x, q, m, with_map ? BlockStatsDetail::Full : BlockStatsDetail::Summary));
  s.setShape(m);
  if (with_map) {
    s.map_steps.push_back(0);
    s.maps.push_back(std::move(m));
  }
  return s;
}

QuantizedTensor quantizeUnder(const WhatIfRecipe& r, const std::vector<float>& x, int64_t rows, int64_t cols,
                              const Format& own, int threads, std::vector<float>* source) {
  *source = x;
  if (r.kind == WhatIfRecipe::Kind::Nvfp4) {
    Nvfp4Config nc = r.nvfp4;
    nc.threads = threads;
    const int64_t pc = (cols + 15) / 16 * 16, pr = nc.tile_2d ? (rows + 15) / 16 * 16 : rows;
    if (pc != cols || pr != rows) {
      source->assign(static_cast<size_t>(pr * pc), 0.0f);
      for (int64_t i = 0; i < rows; ++i) std::copy_n(x.begin() + i * cols, cols, source->begin() + i * pc);
    }
    const Nvfp4Tensor t = quantizeNvfp4(source->data(), pr, pc, nc, Axis::Cols);
    QuantizedTensor q = nc.tile_2d ? mergeScaleBlocks(toQuantizedTensor(t, nc, source->data()), {16, 16})
                                   : toQuantizedTensor(t, nc, source->data());
    if (nc.rht) *source = rhtOperand(source->data(), pr, pc, nc.rht_sign_mask, Axis::Cols, threads);
    return q;
  }
  const Format& f = r.format ? *r.format : own;
  if (r.kind == WhatIfRecipe::Kind::Delayed) {
    // a single tensor has no history: the first step of delayed scaling (scale 1, TE's initial)
    DelayedScaling st(f, r.delayed);
    return st.quantizeStep(x.data(), rows, cols);
  }
  ScalingConfig sc = r.scaling;
  sc.threads = threads;
  return quantize(x.data(), rows, cols, f, sc, Axis::Cols);
}

} // namespace

Result<Run> checkpointRun(const std::string& path, const std::string& run_id, const CheckpointRunOptions& opt) {
  Result<Run> res;
  auto listed = listFp8Checkpoint(path, opt.block);
  if (!listed.ok()) {
    res.issues = listed.issues;
    return res;
  }
  std::vector<std::string> names = opt.tensors;
  Status skipped; // one warning per FP8 tensor that is not importable, unless listed has one for it
  if (names.empty()) {
    for (const Fp8CheckpointEntry& e : listed.value) {
      if (e.problem.empty()) {
        names.push_back(e.name);
        continue;
      }
      const std::string where = path + ":" + e.name;
      const bool warned =
          std::any_of(listed.issues.begin(), listed.issues.end(), [&](const Issue& i) { return i.where == where; });
      if (!warned) skipped.add(Issue::Code::MalformedInput, where, "not imported: " + e.problem, Severity::Warning);
    }
    if (names.empty()) {
      res.issues = listed.issues;
      res.merge(skipped);
      res.add(Issue::Code::NotFound, path, "the file holds no FP8 tensor that can be read with its scale");
      return res;
    }
  }
  for (const std::string& n : names) {
    const auto it = std::find_if(listed.value.begin(), listed.value.end(),
                                 [&](const Fp8CheckpointEntry& e) { return e.name == n; });
    if (it == listed.value.end()) {
      const std::string misplaced_at = path + ":" + n;
      for (const Issue& i : listed.issues)
        if (i.severity == Severity::Warning && i.where == misplaced_at) {
          res.add(i.code, i.where, i.detail);
          return res;
        }
      std::string have;
      for (const Fp8CheckpointEntry& e : listed.value) have += (have.empty() ? "" : ", ") + e.name;
      res.add(Issue::Code::NotFound, path + "#" + n,
              "no FP8 tensor '" + n + "' in the file; its FP8 tensors: " + (have.empty() ? "none" : have));
      return res;
    }
    if (!it->problem.empty()) {
      res.add(Issue::Code::MalformedInput, path + "#" + n, it->problem);
      return res;
    }
  }
  for (size_t i = 0; i < opt.what_if.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (opt.what_if[i].id == opt.what_if[j].id) {
        res.add(Issue::Code::InvalidArgument, path, "what-if recipe '" + opt.what_if[i].id + "' is listed twice");
        return res;
      }
  res.issues = listed.issues; // the warnings: tensors the shard index misplaces
  res.merge(skipped);
  Run& run = res.value;
  run.id = run_id;
  run.type = "checkpoint";
  run.backend = "cpu";
  run.device = "CPU";
  run.attrs["source"] = path;
  run.attrs["tensors"] = static_cast<int64_t>(names.size());
  run.attrs["block"] = opt.block;
  run.attrs["description"] = std::string("FP8 checkpoint ") + path + ": " + std::to_string(names.size()) +
                             (names.size() == 1 ? " tensor" : " tensors");
  std::string ids;
  for (const WhatIfRecipe& r : opt.what_if) ids += (ids.empty() ? "" : ",") + r.id;
  Json cfg = Json::object();
  cfg["type"] = "checkpoint";
  cfg["file"] = path;
  cfg["tensors"] = names;
  cfg["what_if"] = Json::array();
  for (const WhatIfRecipe& r : opt.what_if) cfg["what_if"].push_back(r.id);
  run.config_json = cfg.dump(2);
  for (const std::string& n : names) {
    Fp8ImportOptions io;
    io.block = opt.block;
    auto q = importFp8Checkpoint(path, n, io);
    if (!q.ok()) {
      res.issues = q.issues;
      return res;
    }
    res.merge(q); // its warnings (NaN codes)
    const QuantizedTensor& t = q.value;
    const std::vector<float> x = t.dequantize();
    run.putQuantized(layout::quantized(n), t, "FP8 weight " + n + " as stored in " + path);
    const auto entry = std::find_if(listed.value.begin(), listed.value.end(),
                                    [&](const Fp8CheckpointEntry& e) { return e.name == n; });
    putBlockStatsSeries(run, layout::blockStats(n),
                        oneStep(n, "stored " + entry->layout + " (" + entry->scale_name + ")", x.data(), t, true), 1);
    for (const WhatIfRecipe& r : opt.what_if) {
      std::vector<float> src;
      QuantizedTensor w;
      try {
        w = quantizeUnder(r, x, t.rows, t.cols, *t.format, opt.threads, &src);
      } catch (const std::invalid_argument& e) {
        res.add(Issue::Code::InvalidArgument, path + "#" + n, "what-if " + r.id + ": " + e.what());
        return res;
      }
      Attributes a;
      a["recipe"] = r.id;
      a["semantics"] = r.semantics;
      putBlockStatsSeries(run, layout::whatIf(r.id, n),
                          oneStep(n, r.describe(t.format == &Format::E5M2()), src.data(), w, false), 0, a);
    }
  }
  if (!opt.what_if.empty()) {
    run.datasets[layout::kWhatIfSteps] = Dataset::int64({1}, {0}, "steps", "one step: the checkpoint as stored");
    Attributes wa;
    wa["every"] = int64_t{1};
    wa["recipes"] = ids;
    wa["meaning"] =
        std::string("each weight, dequantized, re-quantized under other recipes: what they would have stored");
    run.group_attrs[layout::kWhatIf] = wa;
  }
  return res;
}

std::vector<CheckpointSqnr> checkpointRunSqnr(const Run& run) {
  std::vector<CheckpointSqnr> out;
  Json cfg;
  try {
    cfg = Json::parse(run.config_json);
  } catch (const std::exception&) {
    return out;
  }
  if (!cfg.is_object() || !cfg.contains("tensors") || !cfg["tensors"].is_array()) return out;
  std::vector<std::string> ids;
  if (cfg.contains("what_if") && cfg["what_if"].is_array())
    for (const Json& id : cfg["what_if"])
      if (id.is_string()) ids.push_back(id.get<std::string>());
  const auto first = [&](const std::string& name) {
    const Dataset* d = run.find(name);
    return d && !d->f32.empty() ? std::optional<float>(d->f32.front()) : std::nullopt;
  };
  for (const Json& t : cfg["tensors"]) {
    if (!t.is_string()) continue;
    CheckpointSqnr row;
    row.tensor = t.get<std::string>();
    const auto stored = first(layout::blockStats(row.tensor, "sqnr_db"));
    if (!stored) continue;
    row.stored_db = *stored;
    for (const std::string& id : ids)
      if (const auto v = first(layout::whatIf(id, row.tensor, "sqnr_db"))) row.what_if_db.emplace_back(id, *v);
    out.push_back(std::move(row));
  }
  return out;
}

std::string defaultCheckpointRunId(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  const auto strip = [&](const std::string& suffix) {
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      name.resize(name.size() - suffix.size());
      return true;
    }
    return false;
  };
  if (!strip(".index.json"))
    if (const size_t dot = name.rfind('.'); dot != std::string::npos) name.resize(dot);
  strip(".safetensors");
  std::string id;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c >= 0x80) { // a UTF-8 sequence: one '_' for the character
      id += '_';
      while (i + 1 < name.size() && (static_cast<unsigned char>(name[i + 1]) & 0xC0) == 0x80) ++i;
      continue;
    }
    const bool keep = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                      c == '-' || c == '.' || c == '+' || c == '=';
    id += keep ? static_cast<char>(c) : '_';
  }
  if (id.empty() || id.front() == '.') id.insert(0, "checkpoint");
  return id;
}

Json checkpointImportJson(const std::string& out, const std::string& run_id, int64_t tensors, size_t what_if,
                          const std::vector<CheckpointSqnr>& sqnr) {
  Json rows = Json::array();
  for (const CheckpointSqnr& r : sqnr) {
    Json w = Json::object();
    for (const auto& [id, db] : r.what_if_db) w[id] = numberJson(db);
    rows.push_back({{"tensor", r.tensor}, {"stored_sqnr_db", numberJson(r.stored_db)}, {"what_if_sqnr_db", w}});
  }
  return {{"file", out}, {"run", run_id}, {"tensors", tensors}, {"what_if", what_if}, {"sqnr", rows}};
}

std::string checkpointImportText(const std::string& file, const std::string& run_id, int64_t tensors,
                                 const std::vector<WhatIfRecipe>& what_if, const std::vector<CheckpointSqnr>& sqnr,
                                 const std::string& out) {
  const size_t nw = what_if.size();
  std::string s = file + ": run " + run_id + " (" + std::to_string(tensors) + " FP8 " +
                  (tensors == 1 ? "tensor" : "tensors") +
                  (nw == 0   ? ""
                   : nw == 1 ? ", 1 what-if recipe"
                             : ", " + std::to_string(nw) + " what-if recipes") +
                  ") written to " + out + "\n";
  if (what_if.empty() || sqnr.empty()) return s;
  std::vector<std::vector<std::string>> cells{{"tensor", "stored"}};
  for (const WhatIfRecipe& r : what_if) cells[0].push_back(r.id);
  for (const CheckpointSqnr& r : sqnr) {
    cells.push_back({r.tensor, shortestText(r.stored_db)});
    for (const auto& w : r.what_if_db) cells.back().push_back(shortestText(w.second));
  }
  std::vector<int> width(cells[0].size(), 0);
  for (const auto& row : cells)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], textWidth(row[c]));
  s += "SQNR (dB) vs the weight as stored (decode * scale, float32):\n";
  for (const auto& row : cells) {
    for (size_t c = 0; c < row.size(); ++c)
      s += (c ? "  " : "") + (c + 1 < row.size() ? padded(row[c], -width[c]) : row[c]);
    s += "\n";
  }
  return s;
}

} // namespace fp8lab
