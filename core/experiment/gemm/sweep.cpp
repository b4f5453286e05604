#include "experiment/gemm/sweep.h"

#include "experiment/config_reader.h"
#include "experiment/gemm/gemm_config.h"

#include "common/number_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string_view>

namespace fp8lab {

namespace {

constexpr std::string_view kSpace = " \t\n\v\f\r";

std::string trimmed(std::string_view s) {
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return std::string(s.substr(b, s.find_last_not_of(kSpace) - b + 1));
}

/// `s` split at every ':', empty parts kept ("A:" → {"A", ""}).
std::vector<std::string> splitFormats(const std::string& s) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t at; (at = s.find(':', from)) != std::string::npos; from = at + 1)
    parts.push_back(s.substr(from, at - from));
  parts.push_back(s.substr(from));
  return parts;
}

/// The experiment type the CLI's `run` gives an object: its "type", or "gemm" for an object without
/// one that has "m" or the desktop panel's older keys.
std::string typeOf(const Json& o) {
  std::string t = o.contains("type") && o["type"].is_string() ? o["type"].get<std::string>() : std::string();
  if (t.empty() && (o.contains("m") || isOldPanelFormGemmConfig(o))) t = "gemm";
  return t;
}

} // namespace

std::string parseSweepSpec(const Json& config, const SweepAxisOverrides& overrides, SweepSpec* spec,
                           const JsonDocument* doc) {
  if (typeOf(config) != "gemm") return "sweep: the config must be a GEMM experiment (\"type\": \"gemm\")";
  const Json sw = config.contains("sweep") && config["sweep"].is_object() ? config["sweep"] : Json::object();
  for (auto it = sw.begin(); it != sw.end(); ++it)
    if (it.key() != "formats" && it.key() != "scalings" && it.key() != "distributions" && it.key() != "seeds")
      return "sweep." + it.key() + ": unknown key (formats, scalings, distributions, seeds)";
  SweepSpec s;
  s.base = config;
  s.base.erase("sweep");
  s.base.erase("name");
  {
    ConfigReader r(doc);
    if (!parseGemmConfig(s.base, &s.base_config, r)) return "config: " + r.error();
    s.notes = r.notes();
  }
  const GemmExperimentConfig& b = s.base_config;
  // An axis given but empty ("--formats ''", "formats": []) is a mistake, not the default.
  std::string list_error;
  auto axis = [&](const std::optional<std::vector<std::string>>& over, const char* key, const std::string& dflt,
                  bool* given_out = nullptr) {
    std::vector<std::string> raw;
    const bool given = over.has_value() || sw.contains(key);
    if (given_out) *given_out = given;
    if (over) {
      raw = *over;
    } else if (sw.contains(key)) {
      const Json& v = sw[key];
      if (v.is_string()) raw.push_back(v.get<std::string>());
      for (const Json& x : v.is_array() ? v : Json::array())
        if (x.is_string()) raw.push_back(x.get<std::string>());
    }
    std::vector<std::string> l;
    for (const std::string& x : raw)
      if (std::string t = trimmed(x); !t.empty()) l.push_back(std::move(t));
    if (l.empty() && given && list_error.empty())
      list_error =
          (over ? "--" : "sweep.") + std::string(key) + ": an empty list (leave it out to use the config's own value)";
    if (l.empty()) l.push_back(dflt);
    return l;
  };
  s.formats = axis(overrides.formats, "formats", b.format_a + (b.format_b != b.format_a ? ":" + b.format_b : ""),
                   &s.formats_given);
  s.scalings = axis(overrides.scalings, "scalings", b.scaling + (b.scaling_b.empty() ? "" : ":" + b.scaling_b));
  s.distributions = axis(overrides.distributions, "distributions", toString(b.a.random.distribution));
  // Seeds: integers (JSON numbers without a fraction), each at most once.
  s.seeds_given = overrides.seeds.has_value() || sw.contains("seeds");
  if (overrides.seeds) {
    s.seeds = *overrides.seeds;
  } else if (sw.contains("seeds")) {
    const Json& v = sw["seeds"];
    const Json list = v.is_array() ? v : Json::array({v});
    for (size_t i = 0; i < list.size() && list_error.empty(); ++i) {
      const Json& x = list[i];
      const bool integral = x.is_number_unsigned() || (x.is_number_integer() && x.get<int64_t>() >= 0);
      if (!integral || x.get<uint64_t>() > (uint64_t(1) << 53))
        list_error = "sweep.seeds: entry " + std::to_string(i) + " is not an integer seed in [0, 2^53]";
      else
        s.seeds.push_back(x.get<uint64_t>());
    }
  }
  const std::string seeds_key = overrides.seeds ? "--seeds" : "sweep.seeds";
  if (list_error.empty() && s.seeds_given && s.seeds.empty())
    list_error = seeds_key + ": an empty list (leave it out to use the config's own value)";
  for (size_t i = 0; i < s.seeds.size() && list_error.empty(); ++i)
    if (std::find(s.seeds.begin(), s.seeds.begin() + static_cast<std::ptrdiff_t>(i), s.seeds[i]) !=
        s.seeds.begin() + static_cast<std::ptrdiff_t>(i))
      list_error = seeds_key + ": seed " + std::to_string(s.seeds[i]) + " is listed twice";
  if (s.seeds.empty()) s.seeds.push_back(b.seed);
  for (const std::string& f : s.formats) {
    if (!list_error.empty()) break;
    const auto ab = splitFormats(f);
    if (ab.size() > 2 || std::find(ab.begin(), ab.end(), std::string()) != ab.end())
      list_error = "formats: '" + f + "' is not FORMAT or FORMAT_A:FORMAT_B";
  }
  for (const std::string& sc : s.scalings) {
    if (!list_error.empty()) break;
    const auto ab = splitFormats(sc);
    if (ab.size() > 2 || std::find(ab.begin(), ab.end(), std::string()) != ab.end())
      list_error = "scalings: '" + sc + "' is not PRESET or PRESET_A:PRESET_B";
  }
  if (!list_error.empty()) {
    spec->notes = std::move(s.notes); // the base config's notes still stand
    return list_error;
  }
  *spec = std::move(s);
  return {};
}

std::string expandSweep(const SweepSpec& spec, std::vector<SweepPoint>* grid) {
  // The base config's own element formats, for recipes that take one when the grid names none: its
  // formats as parsed, except the E2M1 an NVFP4 base scaling implies when no format key is given.
  const Json& base = spec.base;
  const GemmExperimentConfig& bc = spec.base_config;
  auto baseFormat = [&](const std::string& parsed, const std::string& scaling, const char* side) {
    const bool named = base.contains(side) || base.contains("format");
    return !named && isNvfp4Scaling(scaling) ? GemmExperimentConfig{}.format_a : parsed;
  };
  const std::string base_fa = baseFormat(bc.format_a, bc.scaling, "format_a");
  const std::string base_fb = baseFormat(bc.format_b, bc.scaling_b.empty() ? bc.scaling : bc.scaling_b, "format_b");
  std::vector<SweepPoint> g;
  int64_t index = 0;
  for (size_t fi = 0; fi < spec.formats.size(); ++fi)
    for (const std::string& sc : spec.scalings) {
      const auto sab = splitFormats(sc);
      const std::string sa = sab[0], sb = sab.size() > 1 ? sab[1] : sab[0];
      const bool nv_a = isNvfp4Scaling(sa), nv_b = isNvfp4Scaling(sb);
      // An NVFP4 recipe brings E2M1 whatever the formats axis says: it runs once, in the first pass.
      if (nv_a && nv_b && fi > 0) continue;
      std::string fa, fb;
      if (spec.formats_given) {
        const auto ab = splitFormats(spec.formats[fi]);
        fa = ab[0];
        fb = ab.size() > 1 ? ab[1] : ab[0];
      } else {
        fa = base_fa;
        fb = base_fb;
      }
      if (nv_a) fa = "E2M1";
      if (nv_b) fb = "E2M1";
      for (const std::string& d : spec.distributions)
        for (const uint64_t seed : spec.seeds) {
          SweepPoint pt;
          pt.index = index++;
          pt.format = fa == fb ? fa : fa + ":" + fb;
          pt.scaling = sc;
          pt.distribution = d;
          pt.seed = seed;
          Json obj = spec.base;
          for (const char* k : {"format", "format_a", "format_b", "scaling", "scaling_b"}) obj.erase(k);
          obj["format_a"] = fa;
          obj["format_b"] = fb;
          obj["scaling"] = sa;
          if (sb != sa) obj["scaling_b"] = sb;
          obj["distribution"] = d;
          if (spec.seeds_given) obj["seed"] = seed;
          for (const char* op : {"a", "b"}) // the grid's distribution wins over per-operand ones
            if (obj.contains(op) && obj[op].is_object()) obj[op].erase("distribution");
          const std::string fid = fa + (fb != fa ? "x" + fb : std::string());
          const std::string sid = sa + (sb != sa ? "+" + sb : std::string());
          pt.id = "sweep-" + fid + "-" + sid + "-" + d + (spec.seeds_given ? "-s" + std::to_string(seed) : "");
          if (const std::string e = parseGemmConfig(obj, &pt.config); !e.empty())
            return "grid point " + std::to_string(pt.index) + " (" + pt.id + "): " + e;
          if (std::string why; !isValidRunId(pt.id, &why)) return why;
          g.push_back(std::move(pt));
        }
    }
  *grid = std::move(g);
  return {};
}

std::vector<SweepPoint> sweepShard(const std::vector<SweepPoint>& grid, int shard, int shards) {
  if (shards < 1 || shard < 0 || shard >= shards)
    throw std::invalid_argument("sweep shard " + std::to_string(shard) + "/" + std::to_string(shards) +
                                ": expected 0 <= i < n");
  std::vector<SweepPoint> r;
  for (const SweepPoint& p : grid)
    if (p.index % shards == shard) r.push_back(p);
  return r;
}

std::vector<std::string> removeStoredPoints(std::vector<SweepPoint>* points, const std::vector<RunInfo>& stored) {
  std::vector<Json> canonical;
  for (const RunInfo& ri : stored) {
    if (ri.type != "gemm") continue;
    try {
      const JsonDocument d = JsonDocument::parse(ri.config_json);
      GemmExperimentConfig c;
      const std::string name =
          d.root().contains("name") && d.root()["name"].is_string() ? d.root()["name"].get<std::string>() : "";
      if (parseGemmConfig(d.root(), &c).empty()) canonical.push_back(gemmConfigJson(c, name));
    } catch (const JsonTextError&) {
    }
  }
  std::vector<std::string> removed;
  std::erase_if(*points, [&](const SweepPoint& pt) {
    const Json mine = gemmConfigJson(pt.config, pt.id);
    const bool done = std::find(canonical.begin(), canonical.end(), mine) != canonical.end();
    if (done) removed.push_back(pt.id);
    return done;
  });
  return removed;
}

SweepOutcome runSweep(const std::vector<SweepPoint>& points, GemmBackend& backend, const SweepHooks& hooks,
                      const SweepRunOptions& opt) {
  SweepOutcome out;
  std::vector<Run> pending;
  int64_t pending_bytes = 0;
  auto save = [&]() {
    if (pending.empty()) return true;
    std::string error;
    if (hooks.save && !hooks.save(pending, &error)) {
      out.save_error = error.empty() ? std::string("the save failed") : error;
      return false;
    }
    pending.clear();
    pending_bytes = 0;
    return true;
  };
  auto stop = [&](SweepOutcome::Status status, bool in_point, std::string error = {}) {
    out.status = status;
    out.in_point = in_point;
    out.error = std::move(error);
    save();
    return out;
  };
  const size_t n = points.size();
  for (size_t i = 0; i < n; ++i) {
    const SweepPoint& pt = points[i];
    const std::string stage = std::to_string(i + 1) + "/" + std::to_string(n) + " " + pt.id;
    const ProgressFn progress = [&](double f, const std::string&) {
      return !hooks.progress || hooks.progress((double(i) + f) / double(n), stage);
    };
    const std::string text = gemmConfigJson(pt.config, pt.id).dump(2);
    GemmExperimentConfig c = pt.config;
    c.gemm.threads = opt.threads;
    Result<Run> r;
    try {
      r = runGemmExperimentRun(c, text, pt.id, backend, progress);
    } catch (const Cancelled&) {
      return stop(SweepOutcome::Status::Cancelled, true);
    } catch (const std::exception& e) {
      return stop(SweepOutcome::Status::Failed, true, e.what());
    }
    if (hooks.warning)
      for (const Issue& issue : r.issues)
        if (issue.severity != Severity::Error) hooks.warning(pt, issue);
    if (!r.ok()) return stop(SweepOutcome::Status::Failed, true, r.errors());
    if (hooks.point_done) hooks.point_done(pt, r.value);
    for (const auto& [path, d] : r.value.datasets) pending_bytes += d.storedCount() * int64_t(d.elementBytes());
    pending.push_back(std::move(r.value));
    out.finished = i + 1;
    if (pending_bytes > opt.save_batch_bytes && !save()) {
      out.status = SweepOutcome::Status::Failed;
      return out;
    }
    // A cancel that arrives after the point's last check stops before the next point starts.
    if (i + 1 < n && hooks.progress && !hooks.progress(double(i + 1) / double(n), stage))
      return stop(SweepOutcome::Status::Cancelled, false);
  }
  if (!save()) out.status = SweepOutcome::Status::Failed;
  return out;
}

std::optional<std::vector<uint64_t>> parseSeedList(const std::string& text, std::string* error) {
  std::vector<uint64_t> seeds;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    std::string item = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) continue;
    const auto space = [](unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
    while (!item.empty() && space(item.back())) item.pop_back();
    item.erase(item.begin(), std::find_if_not(item.begin(), item.end(), space));
    // ^(\d+)(?:-(\d+))?$ with both numbers in uint64
    const auto digits = [](std::string_view s) {
      return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    const size_t dash = item.find('-');
    const std::string_view a = std::string_view(item).substr(0, dash);
    const std::string_view b = dash == std::string::npos ? a : std::string_view(item).substr(dash + 1);
    uint64_t first = 0, last = 0;
    const bool ok = digits(a) && digits(b) && std::from_chars(a.data(), a.data() + a.size(), first).ec == std::errc() &&
                    std::from_chars(b.data(), b.data() + b.size(), last).ec == std::errc();
    if (!ok || last < first || last - first >= 10000 || last > (uint64_t(1) << 53)) {
      if (error)
        *error = "'" + item + "' is not a seed or a range FIRST-LAST of at most 10000 seeds (integers in [0, 2^53])";
      return std::nullopt;
    }
    for (uint64_t v = first; v <= last; ++v) seeds.push_back(v);
  }
  return seeds;
}

namespace {
std::string num6(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  return std::string(buf, r.ptr);
}
} // namespace

std::string sweepTableText(const std::vector<SweepTableRow>& rows, const std::vector<std::string>& backends) {
  const std::vector<int> w{-40, -14, -22, -12, 9, 11, 9};
  std::string t = tableLine({"run", "format", "scaling", "distribution", "SQNR dB", "rel_fro", "saturated"}, w, "  ");
  for (const auto& r : rows)
    t += tableLine({r.id, r.format, r.scaling, r.distribution, num6(r.sqnr_db), num6(r.rel_fro), num6(r.saturated)}, w,
                   "  ");
  for (const auto& b : backends) t += "backend " + b + "\n";
  return t;
}

} // namespace fp8lab
