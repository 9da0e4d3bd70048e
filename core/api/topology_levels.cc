#include "core/api/topology_levels.h"

namespace tidal {

TopologyLevels TopologyLevels::Default() {
  TopologyLevels t;
  for (const char* n : {"block", "leaf", "nvlink"}) {
    t.levels.push_back({n, std::string("topology.tidal.dev/") + n});
  }
  return t;
}

int TopologyLevels::Find(const std::string& name) const {
  for (size_t i = 0; i < levels.size(); ++i) {
    if (levels[i].name == name) return static_cast<int>(i);
  }
  return name == "node" ? node_level() : -1;
}

std::string TopologyLevels::Accepted() const {
  std::string out;
  for (const auto& l : levels) out += l.name + ", ";
  return out + "node";
}

}  // namespace tidal
