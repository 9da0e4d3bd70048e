// Rolling-upgrade waves: a pure planner that splits a set of nodes to upgrade (drivers, firmware,
// the OS image) into waves taken down one after another, without splitting a rigid gang:
//   - every node of the set is in exactly one wave; nodes outside the set never appear (a gang
//     may also run outside the set: those nodes are not upgraded, and the gang is taken down in
//     the wave that holds its in-set nodes);
//   - a rigid gang's in-set nodes are all in the same wave, so it is disrupted once; an elastic
//     gang does not link nodes (it shrinks while its nodes are upgraded);
//   - max_nodes mode: the groups of linked nodes, ordered by topology (their first node's domain
//     path, then name), fill waves of at most max_nodes nodes in that order (next-fit, so a wave
//     stays local); a group larger than max_nodes is a wave of its own, and a note says so;
//   - domain_level mode: one wave per topology domain at that level (the path down to it, so two
//     "leaf-1" under different blocks are two domains); domains linked by a rigid gang are one
//     wave, and a note says so.
// Output is deterministic: nodes and gangs sorted by name, waves ordered by their first node
// (the least by domain path, then name). Linear-ish: hash maps and union-find, no engine state.
// Threading: pure functions and plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/api/status.h"

namespace tidal {

struct WaveNode {
  std::string name;
  std::vector<std::string> domains;  // the topology path top-down, e.g. {"block-0","leaf-1","nvlink-3"}
};

struct WaveGang {
  std::string id;                  // "ns/gang"
  std::vector<std::string> nodes;  // the nodes its members run on (some may be outside the set)
  bool elastic = false;            // elastic gangs shrink: they do not link nodes
};

// Exactly one of: max_nodes > 0 (N nodes per wave), domain_level >= 0 (one domain at this index
// into WaveNode::domains per wave).
struct WaveOptions {
  int32_t max_nodes = 0;
  int32_t domain_level = -1;
};

struct Wave {
  std::vector<std::string> nodes;  // sorted
  std::vector<std::string> gangs;  // the rigid gangs taken down in this wave, sorted
  std::string why;                 // "4 nodes (max 8) in block-0/leaf-1", "domain block-0/leaf-1 (level 1)"
};

struct WavePlan {
  std::vector<Wave> waves;
  std::vector<std::string> notes;  // oversize waves, merged domains, gangs partly outside the set
};

// Errors name the field: "waves.max_nodes", "waves.domain_level", "waves.nodes[3].name",
// "waves.nodes[3].domains" (too few levels for domain_level), "waves.gangs[2].id".
StatusOr<WavePlan> PlanWaves(const std::vector<WaveNode>& nodes, const std::vector<WaveGang>& gangs,
                             const WaveOptions& opt);

}  // namespace tidal
