#include "views/view_registry.h"

#include <algorithm>

namespace fp8lab::ui {

namespace {
// Function-local: registrations run in static initialisers of other files, in no set order.
std::vector<ViewType>& registry() {
  static std::vector<ViewType> types;
  return types;
}
std::vector<std::pair<QString, ViewRendering>>& renderings() {
  static std::vector<std::pair<QString, ViewRendering>> r;
  return r;
}
} // namespace

bool registerViewType(ViewType type) {
  auto& types = registry();
  const bool known = std::any_of(types.begin(), types.end(), [&](const ViewType& t) { return t.id == type.id; });
  if (!known) types.push_back(std::move(type));
  return true;
}

bool registerViewRendering(const QString& id, ViewRendering rendering) {
  auto& r = renderings();
  if (std::none_of(r.begin(), r.end(), [&](const auto& e) { return e.first == id; }))
    r.emplace_back(id, std::move(rendering));
  return true;
}

std::vector<ViewType> viewTypes() {
  std::vector<ViewType> out = registry();
  for (ViewType& t : out)
    for (const auto& [id, rendering] : renderings())
      if (id == t.id) t.render = rendering;
  std::stable_sort(out.begin(), out.end(), [](const ViewType& a, const ViewType& b) {
    return a.order != b.order ? a.order < b.order : a.id < b.id;
  });
  return out;
}

} // namespace fp8lab::ui
