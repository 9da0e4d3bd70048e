// Cluster files: the fabric and its nodes, from YAML/JSON, and a generator for regular fabrics.
//
// File shape (every section optional but there must be nodes from somewhere):
//   levels:   [{name: block, label: topology.tidal.dev/block}, ...]   # outermost first; default
//             block > leaf > nvlink; a plain string "rack" means label topology.tidal.dev/rack
//   fabric:   {block: 2, leaf: 4, nvlink: 4, node: 4,                 # children per parent, per level
//              capacity: {gpus: 8, cpu: 64, memory: 512Gi}, gpuModel: h100}
//   switches: [{name: leaf-0, level: leaf, parent: block-0}, ...]     # explicit tree (Slurm
//             topology.conf style); nodes then name their deepest switch with `switch:` (a
//             topology label given beside it must agree with the switch)
//   nodes:    [{name, labels, switch, capacity, allocated, health, pool, gpuModel}, ...]
//   overrides: [{node: node-3, allocated: {gpus: 4}, health: unhealthy, pool: slurm}, ...]
// Errors name the field with the file's line ("nodes[3].capacity.gpus: ...", "nodes[1].name:
// duplicate node "a1" (first at nodes[0])", "nodes[0].labels: node a has no label ...",
// "overrides[1].node: node node-0 is overridden already by overrides[0]") or the switch
// ("switches: cycle: a -> b -> a"). GPU quantities are whole devices.
#pragma once

#include <string>
#include <vector>

#include "core/api/node.h"
#include "core/api/topology_levels.h"
#include "core/io/document.h"
#include "core/state/cluster_state.h"

namespace tidal {

struct ClusterSpec {
  TopologyLevels levels = TopologyLevels::Default();
  std::vector<Node> nodes;
};

struct FabricSpec {
  std::vector<int32_t> per_level;  // children per parent for each configured level
  int32_t nodes_per_domain = 4;    // nodes per deepest-level vertex
  Resources node_capacity{8, 64000, int64_t{512} << 30};
  std::string gpu_model;
};

// Nodes "node-<i>" labelled "<level>-<i>" (global indices) for every configured level.
std::vector<Node> GenerateFabric(const TopologyLevels& levels, const FabricSpec& f);

// Decodes a level list: [block, {name: leaf, label: example.com/leaf}, ...].
Status DecodeLevels(const nlohmann::json& j, const std::string& path, TopologyLevels* out);

StatusOr<ClusterSpec> DecodeClusterSpec(const Document& doc, const std::string& field = "");
StatusOr<ClusterSpec> LoadClusterFile(const std::string& path);
// Decodes and builds, with errors located in the file.
StatusOr<ClusterState> LoadCluster(const std::string& path);

}  // namespace tidal
