// Scenario harness: a YAML/JSON file gives the fabric, the workloads and what must happen; the
// runner places them with the default registry and checks every expectation plus the invariants
// that hold for every scenario (no partial gang, no node over capacity, nothing new on nodes that
// take no work).
//
//   description: free text
//   cluster:   {levels, fabric, switches, nodes, overrides}   # as in a cluster file
//   profile:   {name, maxCandidates, plugins}                 # optional; default profile
//   workloads: [...]                                          # as in a workloads file
//   expect:
//     - workload: name
//       outcome: Placed | Waiting | Pending | Rejected | Error
//       domain: block-0/leaf-1        # exact domain path
//       domainLevel: leaf             # level of the domain vertex
//       withinOne: leaf               # all members share one vertex of this level
//       spans: {leaf: 2}              # exact number of vertices used per level
//       nodes: [node-1, node-2]       # exact node set
//       notNodes: [node-17]           # none of these
//       members: 16                   # members placed
//       reasonContains: "no nvlink domain"
//   expectError: "text"              # the cluster itself must fail to load with this text
#pragma once

#include <string>
#include <vector>

#include "core/api/status.h"

namespace tidal::testing {

struct ScenarioReport {
  std::vector<std::string> failures;  // empty = passed
  std::string table;                  // the decisions, for the test log
};

ScenarioReport RunScenarioFile(const std::string& path);

}  // namespace tidal::testing
