// A big engine for benchmarks that drive the Engine class directly (explain_bench.cc,
// plan_pod_bench.cc): 10,000 nodes / 80,000 GPUs on the default 4-level fabric, ~60% allocated by
// bound pods with declared runtimes, and 100,000 pending gangs (90% lone pods of 1-8 GPUs, 10%
// gangs of 2-4 x 8 GPUs; 12 queues under 3 orgs; random priorities and submit times), all fed
// through Engine::Sync in one resync batch, like the shim does.
// Ownership: the caller owns the returned world and its engine. Threading: built on the calling
// thread; the engine is then as thread-safe as Engine is.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace tidal::bench {

constexpr int64_t kWorldNow = 100000;  // the world's clock at build time (unix seconds)

struct EngineWorld {
  std::unique_ptr<Engine> engine;
  std::string target;   // a pending lone pod deep in queue order ("bench/pod/target")
  std::string running;  // a running pod ("bench/pod/run-0")
  std::vector<std::string> queues;  // the 12 leaf queues
  std::vector<std::string> nodes;   // node names
  int64_t pods = 0;     // pods synced
};

// The engine config: 3 orgs (nominal 40k/28k/12k GPUs) of 4 teams each (weights 1-4).
EngineConfig WorldConfig();
// A pod of the world's shape: namespace "bench", uid "uid-<name>", gpus x (4 CPUs, 32 GiB) each.
PodInfo WorldPod(const std::string& name, int64_t gpus, const std::string& queue);
// Builds the world on an engine reading `clock` (nullptr: always kWorldNow), its config first
// given to `tune` (nullptr: WorldConfig() as is). Null on failure.
std::unique_ptr<EngineWorld> BuildEngineWorld(std::function<int64_t()> clock = nullptr,
                                              const std::function<void(EngineConfig&)>& tune = nullptr);

}  // namespace tidal::bench
