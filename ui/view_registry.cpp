#include "view_registry.h"

#include <algorithm>

namespace fp8lab::ui {

namespace {
// Function-local: registrations run in static initialisers of other files, in no set order.
std::vector<ViewType>& registry() {
  static std::vector<ViewType> types;
  return types;
}
} // namespace

bool registerViewType(ViewType type) {
  auto& types = registry();
  const bool known = std::any_of(types.begin(), types.end(), [&](const ViewType& t) { return t.id == type.id; });
  if (!known) types.push_back(std::move(type));
  return true;
}

std::vector<ViewType> viewTypes() {
  std::vector<ViewType> out = registry();
  std::stable_sort(out.begin(), out.end(), [](const ViewType& a, const ViewType& b) {
    return a.order != b.order ? a.order < b.order : a.id < b.id;
  });
  return out;
}

} // namespace fp8lab::ui
