#include "experiment/training/training_keys.h"

#include "experiment/param_schema.h"

#include <cctype>

namespace fp8lab {

std::string lowerName(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string schemaLeaf(std::string_view key) {
  const size_t dot = key.rfind('.');
  return std::string(dot == std::string_view::npos ? key : key.substr(dot + 1));
}

int64_t trainingInteger(ConfigReader& r, const Json& o, std::string_view key, std::string_view model,
                        const ConfigPath& at, std::optional<int64_t> def) {
  const ParamSpec& p = trainingParam(key, model);
  return r.integer(o, schemaLeaf(key), at, def ? *def : std::stoll(p.def), int64_t(p.min), int64_t(p.max));
}
double trainingNumber(ConfigReader& r, const Json& o, std::string_view key, std::string_view model,
                      const ConfigPath& at) {
  const ParamSpec& p = trainingParam(key, model);
  return r.number(o, schemaLeaf(key), at, std::stod(p.def));
}

std::string trainingChoice(ConfigReader& r, const Json& o, std::string_view key, std::string_view model,
                           const ConfigPath& at, const char* noun,
                           const std::function<bool(const std::string&)>& accepts) {
  const ParamSpec& p = trainingParam(key, model);
  const std::string leaf = schemaLeaf(key);
  const std::string v = lowerName(r.string(o, leaf, at, p.def));
  if (r.ok() && !accepts(v))
    r.fail(at.member(leaf), std::string("unknown ") + noun + " '" + v + "' (" + joinNames(p.choices) + ")");
  return v;
}

} // namespace fp8lab
