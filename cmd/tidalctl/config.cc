// tidalctl config validate FILE: checks an engine config (topology levels, profile, queues) the way
// tidal-engine loads it; prints every problem as "file:line: field: reason".
#include <iostream>

#include "cmd/tidalctl/commands.h"
#include "engine/engine.h"

namespace tidal::cli {

int Config(const Args& args) {
  if (args.size() != 2 || args[0] != "validate") {
    std::cerr << "usage: tidalctl config validate FILE\n";
    return 2;
  }
  auto cfg = LoadEngineConfig(args[1]);
  if (!cfg.ok()) {
    for (const auto& r : cfg.status().reasons()) std::cerr << r << "\n";
    std::cerr << cfg.status().reasons().size() << " problem(s) in " << args[1] << "\n";
    return 1;
  }
  std::cout << args[1] << ": valid (" << cfg->queues.queues.size() << " queues, " << cfg->levels.size()
            << " topology levels, profile " << cfg->profile.name << ")\n";
  return 0;
}

}  // namespace tidal::cli
