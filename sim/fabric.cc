#include "sim/fabric.h"

namespace tidal::sim {

StatusOr<ClusterState> BuildSyntheticFabric(const TopologyLevels& levels, const SyntheticFabric& f) {
  const size_t nl = levels.levels.size();
  if (f.gpus <= 0) return Status::Error("--gpus: must be > 0");
  if (f.gpus_per_node <= 0 || f.gpus_per_node > 1024) return Status::Error("--gpus-per-node: must be 1..1024");
  if (f.nodes_per_domain <= 0) return Status::Error("--nodes-per-domain: must be > 0");
  if (nl > 0 && f.fanout.size() != nl - 1) {
    return Status::Error("--fanout: needs " + std::to_string(nl - 1) + " value(s) for topology levels " +
                         levels.Accepted() + " (children per vertex, outermost first, all but the outermost)");
  }
  for (int32_t x : f.fanout) {
    if (x <= 0) return Status::Error("--fanout: values must be > 0");
  }
  const int64_t nodes = (f.gpus + f.gpus_per_node - 1) / f.gpus_per_node;
  if (nodes > 1000000) return Status::Error("--gpus: at most 1,000,000 nodes");
  std::vector<Node> out;
  out.reserve(static_cast<size_t>(nodes));
  for (int64_t i = 0; i < nodes; ++i) {
    Node n;
    n.name = "node-" + std::to_string(i);
    n.capacity = Resources{f.gpus_per_node, f.gpus_per_node * f.cpu_milli_per_gpu, f.gpus_per_node * f.memory_per_gpu};
    if (nl > 0) {
      int64_t idx = i / f.nodes_per_domain;  // index at the deepest level
      std::vector<int64_t> at(nl);
      for (size_t l = nl; l-- > 0;) {
        at[l] = idx;
        if (l > 0) idx /= f.fanout[l - 1];
      }
      for (size_t l = 0; l < nl; ++l) {
        n.labels[levels.levels[l].label_key] = levels.levels[l].name + "-" + std::to_string(at[l]);
      }
    }
    out.push_back(std::move(n));
  }
  return ClusterState::Build(levels, std::move(out));
}

std::string DescribeFabric(const TopologyLevels& levels, const SyntheticFabric& f) {
  const int64_t nodes = (f.gpus + f.gpus_per_node - 1) / f.gpus_per_node;
  std::string s = std::to_string(nodes * f.gpus_per_node) + " GPUs = " + std::to_string(nodes) + " nodes x " +
                  std::to_string(f.gpus_per_node) + " GPUs";
  const size_t nl = levels.levels.size();
  if (nl == 0) return s;
  int64_t count = (nodes + f.nodes_per_domain - 1) / f.nodes_per_domain;
  s += "; " + levels.levels[nl - 1].name + ": " + std::to_string(f.nodes_per_domain) + " nodes";
  for (size_t l = nl - 1; l-- > 0;) {
    s += ", " + levels.levels[l].name + ": " + std::to_string(f.fanout[l]) + " " + levels.levels[l + 1].name;
    count = (count + f.fanout[l] - 1) / f.fanout[l];
  }
  s += " (" + std::to_string(count) + " " + levels.levels[0].name + ")";
  return s;
}

Status SplitPools(ClusterState& state, int64_t slurm_gpus) {
  int64_t total = 0;
  for (const auto& n : state.nodes()) total += n.capacity.gpus;
  if (slurm_gpus <= 0 || slurm_gpus >= total) {
    return Status::Error("--slurm-gpus: must leave both pools GPUs: 1.." + std::to_string(total - 1) + ", got " +
                         std::to_string(slurm_gpus));
  }
  int64_t slurm = 0;
  for (NodeId id = state.node_count() - 1; id >= 0; --id) {
    const bool to_slurm = slurm < slurm_gpus;
    if (to_slurm) slurm += state.node(id).capacity.gpus;
    state.SetPool(id, to_slurm ? Pool::kSlurm : Pool::kKubernetes, Pool::kShared, false);
  }
  if (slurm >= total) return Status::Error("--slurm-gpus: " + std::to_string(slurm_gpus) + " leaves the Kubernetes pool no node");
  return Status::Ok();
}

bool HasPools(const ClusterState& state) {
  for (const auto& n : state.nodes()) {
    if (n.pool != Pool::kShared || n.lent_by != Pool::kShared) return true;
  }
  return false;
}

}  // namespace tidal::sim
