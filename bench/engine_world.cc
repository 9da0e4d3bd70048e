// The shared 10k-node / 100k-pending engine of the engine benchmarks (engine_world.h).
#include "bench/engine_world.h"

#include <random>

#include "bench/bench_queues.h"
#include "core/io/cluster_file.h"

namespace tidal::bench {

EngineConfig WorldConfig() {
  EngineConfig cfg;
  cfg.queues = BenchQueues(80000);  // 10k nodes x 8 GPUs
  return cfg;
}

PodInfo WorldPod(const std::string& name, int64_t gpus, const std::string& queue) {
  PodInfo p;
  p.uid = "uid-" + name;
  p.ns = "bench";
  p.name = name;
  p.scheduler_name = "tidal-scheduler";
  p.request = Resources{gpus, gpus * 4000, gpus * (int64_t{32} << 30)};
  p.labels[kLabelQueue] = queue;
  return p;
}

std::unique_ptr<EngineWorld> BuildEngineWorld(std::function<int64_t()> clock, const std::function<void(EngineConfig&)>& tune) {
  auto w = std::make_unique<EngineWorld>();
  if (!clock) clock = [] { return kWorldNow; };
  EngineConfig cfg = WorldConfig();
  if (tune) tune(cfg);
  auto e = Engine::Create(cfg, std::move(clock));
  if (!e.ok()) return nullptr;
  w->engine = std::move(e).value();
  FabricSpec f;
  f.per_level = {10, 10, 25};
  f.nodes_per_domain = 4;
  f.node_capacity = Resources{8, 128000, int64_t{1} << 40};
  SyncBatch b;
  b.resync = true;
  for (const Node& n : GenerateFabric(TopologyLevels::Default(), f)) {
    NodeInfo ni;
    ni.name = n.name;
    ni.labels = n.labels;
    ni.capacity = n.capacity;
    w->nodes.push_back(n.name);
    b.upsert_nodes.push_back(std::move(ni));
  }
  for (const char* org : {"research", "product", "infra"}) {
    for (int t = 0; t < 4; ++t) w->queues.push_back(std::string(org) + "-team-" + std::to_string(t));
  }
  const std::vector<std::string>& queues = w->queues;
  // ~60% of GPUs bound: per node a whole-node pod (50%) or a few small pods (20%), each with a
  // declared runtime and a start time, so the dry run's timeline has ends.
  std::mt19937 rng(1234);
  int bound = 0;
  for (size_t i = 0; i < b.upsert_nodes.size(); ++i) {
    const int r = static_cast<int>(rng() % 100);
    std::vector<int64_t> sizes;
    if (r < 65) sizes = {8};
    else if (r < 85) sizes = {1 + static_cast<int64_t>(rng() % 3), 1 + static_cast<int64_t>(rng() % 3)};
    for (int64_t g : sizes) {
      PodInfo p = WorldPod("run-" + std::to_string(bound++), g, queues[rng() % queues.size()]);
      p.node_name = b.upsert_nodes[i].name;
      p.phase = PodPhase::kRunning;
      p.start_unix = kWorldNow - static_cast<int64_t>(rng() % 20000);
      p.annotations[kLabelRuntimeLimit] = std::to_string(1 + rng() % 24) + "h";
      b.upsert_pods.push_back(std::move(p));
    }
  }
  w->running = "bench/pod/run-0";
  // 100,000 pending gangs.
  for (int k = 0; k < 100000; ++k) {
    const std::string& q = queues[rng() % queues.size()];
    const int32_t prio = static_cast<int32_t>(rng() % 4) * 10;
    const int64_t created = kWorldNow - static_cast<int64_t>(rng() % 50000);
    const std::string runtime = std::to_string(1 + rng() % 24) + "h";
    if (rng() % 10 != 0) {
      PodInfo p = WorldPod("pend-" + std::to_string(k), 1 + static_cast<int64_t>(rng() % 8), q);
      p.priority = prio;
      p.creation_unix = created;
      p.annotations[kLabelRuntimeLimit] = runtime;
      b.upsert_pods.push_back(std::move(p));
      continue;
    }
    const int size = 2 + static_cast<int>(rng() % 3);
    for (int m = 0; m < size; ++m) {
      PodInfo p = WorldPod("gang-" + std::to_string(k) + "-" + std::to_string(m), 8, q);
      p.labels[kLabelGang] = "g" + std::to_string(k);
      p.labels[kLabelGangSize] = std::to_string(size);
      p.priority = prio;
      p.creation_unix = created;
      p.annotations[kLabelRuntimeLimit] = runtime;
      b.upsert_pods.push_back(std::move(p));
    }
  }
  // The target: a lone pod of the lowest priority, submitted last (deep in its queue's order).
  PodInfo t = WorldPod("target", 8, "research-team-0");
  t.creation_unix = kWorldNow;
  b.upsert_pods.push_back(t);
  w->target = "bench/pod/target";
  w->pods = static_cast<int64_t>(b.upsert_pods.size());
  uint64_t gen = 0;
  if (!w->engine->Sync(std::move(b), &gen).ok()) return nullptr;
  return w;
}

}  // namespace tidal::bench
