// Synthetic fabric for replays: `gpus` GPUs in nodes of `gpus_per_node`, grouped bottom-up into
// the configured topology levels. The deepest level (NVLink domains by default) holds
// `nodes_per_domain` nodes; each level above holds `fanout[i]` children of the level below, from
// the outermost inward (default levels block > leaf > nvlink: fanout = {leaves per block, NVLink
// domains per leaf}); the outermost level has as many vertices as needed. The last vertex of each
// level may be partial when `gpus` is not a whole number of them.
// Node names "node-<i>", labels "<level>-<global index>" as in core/io/cluster_file.h.
// Threading: plain function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/state/cluster_state.h"

namespace tidal::sim {

struct SyntheticFabric {
  int64_t gpus = 2048;
  int64_t gpus_per_node = 8;
  int32_t nodes_per_domain = 4;          // nodes per deepest-level vertex (NVLink domain)
  std::vector<int32_t> fanout = {4, 8};  // per level except the outermost, outermost first
  int64_t cpu_milli_per_gpu = 8000;
  int64_t memory_per_gpu = int64_t{64} << 30;
};

StatusOr<ClusterState> BuildSyntheticFabric(const TopologyLevels& levels, const SyntheticFabric& f);
// "2048 GPUs = 256 nodes x 8; nvlink: 4 nodes, leaf: 8 nvlink, block: 4 leaf (2 block)"
std::string DescribeFabric(const TopologyLevels& levels, const SyntheticFabric& f);
// Two pools on one fabric (sim/lending.h): the last nodes in topology order holding at least
// `slurm_gpus` GPUs become the Slurm pool's, the others the Kubernetes pool's. Errors when either
// pool would be empty.
Status SplitPools(ClusterState& state, int64_t slurm_gpus);
// Does the fabric have pools (a node owned by a door's pool, lent or not)?
bool HasPools(const ClusterState& state);

}  // namespace tidal::sim
