// `tessera demo`: built-in models with seeded weights, run on every device.
#include <fmt/format.h>

#include "cli.h"

namespace tessera::cli {

void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "Build small models in memory and run them on every device");
  cmd->callback([] { fmt::print("demo: not built yet\n"); });
}

}  // namespace tessera::cli
