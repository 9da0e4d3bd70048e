// TopologyLevels: the names of the fabric's levels, outermost first, ending with "node".
// Default: block > leaf > nvlink > node. Each configured level (all but "node") is read from a node
// label whose key comes from config (default "topology.tidal.dev/<level>").
// Thread-safety: plain value.
#pragma once

#include <string>
#include <vector>

namespace tidal {

struct TopologyLevel {
  std::string name;       // e.g. "leaf"
  std::string label_key;  // e.g. "topology.tidal.dev/leaf"
};

struct TopologyLevels {
  std::vector<TopologyLevel> levels;  // configured levels, outermost first; "node" is implicit

  static TopologyLevels Default();
  // Number of levels including the implicit node level.
  int size() const { return static_cast<int>(levels.size()) + 1; }
  int node_level() const { return static_cast<int>(levels.size()); }
  // Index of `name` (the node level is "node"); -1 if unknown.
  int Find(const std::string& name) const;
  std::string Name(int level) const { return level == node_level() ? "node" : levels.at(level).name; }
  // "block, leaf, nvlink, node" for error messages.
  std::string Accepted() const;
};

}  // namespace tidal
