// fp8lab-cli command registry. A command is a name, a one-line summary and a function taking
// the arguments after the command name. Commands register themselves with a static
// CommandRegistrar in their own cmd_<name>.cpp file.
#pragma once

#include <QStringList>

#include <functional>
#include <vector>

namespace fp8lab::cli {

struct Command {
  QString name;                                    ///< e.g. "encode"; sub-commands are handled by the command itself
  QString summary;                                 ///< one line for `fp8lab-cli --help`
  std::function<int(const QStringList& args)> run; ///< args[0] is "fp8lab-cli <name>"
  int order = 100;                                 ///< position in the help listing
};

/// All registered commands, sorted by order then name.
std::vector<Command>& commands();

struct CommandRegistrar {
  explicit CommandRegistrar(Command c);
};

} // namespace fp8lab::cli
