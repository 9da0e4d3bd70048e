// Synthetic fleets for benchmarks: 10,000 nodes x 8 GPUs on the default 4-level fabric
// (10 blocks x 10 leaves x 25 NVLink domains x 4 nodes), filled to a target utilisation with
// realistic fragmentation: each leaf draws its own load (some nearly full, some light), nodes are
// either whole-node jobs or partly used by small jobs. Deterministic (fixed seed).
#pragma once

#include <cmath>
#include <random>

#include "core/io/cluster_file.h"
#include "core/state/cluster_state.h"

namespace tidal::bench {

struct FleetStats {
  double utilisation = 0;
  int64_t free_gpus = 0;
  int32_t whole_free_nodes = 0;
};

inline ClusterState FillFleet(double load, uint32_t seed) {
  FabricSpec f;
  f.per_level = {10, 10, 25};
  f.nodes_per_domain = 4;
  f.node_capacity = Resources{8, 128000, int64_t{1} << 40};
  auto levels = TopologyLevels::Default();
  auto nodes = GenerateFabric(levels, f);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u01(0, 1);
  const size_t per_leaf = 100;
  for (size_t leaf = 0; leaf * per_leaf < nodes.size(); ++leaf) {
    // Leaf load spread around the target: [target - 0.4, target + 0.35], clamped.
    const double u = std::clamp(load - 0.4 + 0.75 * u01(rng), 0.05, 0.98);
    for (size_t i = leaf * per_leaf; i < (leaf + 1) * per_leaf; ++i) {
      const double r = u01(rng);
      int64_t g = 0;
      if (r < u * 0.85) {
        g = 8;  // a whole-node job
      } else if (r < u * 0.85 + 0.12) {
        g = 1 + static_cast<int64_t>(u01(rng) * 7);  // small jobs leave fragments
      }
      nodes[i].allocated = Resources{g, g * 8000, g * (int64_t{64} << 30)};
    }
  }
  return std::move(ClusterState::Build(levels, std::move(nodes))).value();
}

inline FleetStats Stats(const ClusterState& s) {
  FleetStats st;
  st.free_gpus = s.FreeGpus(s.root());
  st.whole_free_nodes = s.WholeFreeNodes(s.root());
  st.utilisation = 1.0 - static_cast<double>(st.free_gpus) / (8.0 * s.node_count());
  return st;
}

// A fleet whose GPU utilisation is within 0.5% of `target` (bisection on the load parameter).
inline ClusterState MakeFleet(double target, uint32_t seed = 42) {
  double lo = 0.0, hi = 1.5;
  for (int i = 0; i < 30; ++i) {
    const double mid = (lo + hi) / 2;
    ClusterState s = FillFleet(mid, seed);
    const double u = Stats(s).utilisation;
    if (std::abs(u - target) < 0.005) return s;
    (u < target ? lo : hi) = mid;
  }
  return FillFleet((lo + hi) / 2, seed);
}

}  // namespace tidal::bench
