#include "command.h"

#include <algorithm>

namespace fp8lab::cli {

std::vector<Command>& commands() {
  static std::vector<Command> list;
  return list;
}

CommandRegistrar::CommandRegistrar(Command c) {
  auto& l = commands();
  l.push_back(std::move(c));
  std::sort(l.begin(), l.end(), [](const Command& a, const Command& b) {
    return a.order != b.order ? a.order < b.order : a.name < b.name;
  });
}

} // namespace fp8lab::cli
