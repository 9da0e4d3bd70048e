// Engine::ExplainJson (the /explain API) on a big engine: 10,000 nodes / 80,000 GPUs on the
// default 4-level fabric, ~60% allocated by bound pods with declared runtimes, and 100,000
// pending gangs (90% lone pods of 1-8 GPUs, 10% gangs of 2-4 x 8 GPUs; 12 queues under 3 orgs;
// random priorities and submit times), all fed through Engine::Sync like the shim does.
// One iteration = one ExplainJson of a gang deep in the queue. Measured:
//   - the call's wall time (the benchmark's time);
//   - max_stall_ms: the longest any other RPC waited for the engine's mutex during the call, seen
//     by a second thread calling the cheap Engine::Explain of a running gang in a loop (so it
//     measures what every other RPC feels, whatever the implementation);
//   - lock_held_ms (mean) / lock_held_max_ms: how long each call held the mutex, and considered /
//     cut for the last call: the engine's own account (Engine::LastExplainStats).
// Args: max_ahead = 2000 (the default bound) and 1 << 30 (the whole queue considered).
// Run: build/bin/tidal_bench --benchmark_filter=Explain
// BM_Snapshot_10kNodes_100kPending: Engine::Snapshot (GET /snapshot) on the same engine.
// Threading: the benchmark thread and one contender thread; the engine serialises them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include <benchmark/benchmark.h>

#include "engine/engine.h"
#include "core/io/cluster_file.h"

namespace tidal::bench {
namespace {

constexpr int64_t kNow = 100000;

struct EngineWorld {
  std::unique_ptr<Engine> engine;
  std::string target;   // a pending gang deep in queue order
  std::string running;  // a running gang (the contender's cheap Explain)
  int64_t pods = 0;
};

EngineConfig BenchConfig() {
  EngineConfig cfg;
  int org_i = 0;
  for (const char* org : {"research", "product", "infra"}) {
    QueueSpec o;
    o.name = org;
    o.nominal = {org_i == 0 ? 40000 : org_i == 1 ? 28000 : 12000, kUnlimited, kUnlimited};
    cfg.queues.queues.push_back(o);
    for (int t = 0; t < 4; ++t) {
      QueueSpec q;
      q.name = std::string(org) + "-team-" + std::to_string(t);
      q.parent = org;
      q.weight = 1 + t;
      q.nominal = {o.nominal[0] / 4, kUnlimited, kUnlimited};
      cfg.queues.queues.push_back(q);
    }
    ++org_i;
  }
  return cfg;
}

PodInfo Pod(const std::string& name, int64_t gpus, const std::string& queue) {
  PodInfo p;
  p.uid = "uid-" + name;
  p.ns = "bench";
  p.name = name;
  p.scheduler_name = "tidal-scheduler";
  p.request = Resources{gpus, gpus * 4000, gpus * (int64_t{32} << 30)};
  p.labels[kLabelQueue] = queue;
  return p;
}

EngineWorld& TheEngine() {
  static EngineWorld* world = [] {
    auto* w = new EngineWorld;
    auto e = Engine::Create(BenchConfig(), [] { return kNow; });
    if (!e.ok()) std::abort();
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
      b.upsert_nodes.push_back(std::move(ni));
    }
    std::vector<std::string> queues;
    for (const char* org : {"research", "product", "infra"}) {
      for (int t = 0; t < 4; ++t) queues.push_back(std::string(org) + "-team-" + std::to_string(t));
    }
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
        PodInfo p = Pod("run-" + std::to_string(bound++), g, queues[rng() % queues.size()]);
        p.node_name = b.upsert_nodes[i].name;
        p.phase = PodPhase::kRunning;
        p.start_unix = kNow - static_cast<int64_t>(rng() % 20000);
        p.annotations[kLabelRuntimeLimit] = std::to_string(1 + rng() % 24) + "h";
        b.upsert_pods.push_back(std::move(p));
      }
    }
    w->running = "bench/pod/run-0";
    // 100,000 pending gangs.
    for (int k = 0; k < 100000; ++k) {
      const std::string& q = queues[rng() % queues.size()];
      const int32_t prio = static_cast<int32_t>(rng() % 4) * 10;
      const int64_t created = kNow - static_cast<int64_t>(rng() % 50000);
      const std::string runtime = std::to_string(1 + rng() % 24) + "h";
      if (rng() % 10 != 0) {
        PodInfo p = Pod("pend-" + std::to_string(k), 1 + static_cast<int64_t>(rng() % 8), q);
        p.priority = prio;
        p.creation_unix = created;
        p.annotations[kLabelRuntimeLimit] = runtime;
        b.upsert_pods.push_back(std::move(p));
        continue;
      }
      const int size = 2 + static_cast<int>(rng() % 3);
      for (int m = 0; m < size; ++m) {
        PodInfo p = Pod("gang-" + std::to_string(k) + "-" + std::to_string(m), 8, q);
        p.labels[kLabelGang] = "g" + std::to_string(k);
        p.labels[kLabelGangSize] = std::to_string(size);
        p.priority = prio;
        p.creation_unix = created;
        p.annotations[kLabelRuntimeLimit] = runtime;
        b.upsert_pods.push_back(std::move(p));
      }
    }
    // The target: a lone pod of the lowest priority, submitted last (deep in its queue's order).
    PodInfo t = Pod("target", 8, "research-team-0");
    t.creation_unix = kNow;
    b.upsert_pods.push_back(t);
    w->target = "bench/pod/target";
    w->pods = static_cast<int64_t>(b.upsert_pods.size());
    uint64_t gen = 0;
    (void)w->engine->Sync(b, &gen);
    (void)w->engine->ExplainJson(w->target);  // builds the engine's ClusterState (not timed)
    return w;
  }();
  return *world;
}

void BM_ExplainJson_10kNodes_100kPending(benchmark::State& bs) {
  EngineWorld& w = TheEngine();
  w.engine->SetExplainOptions(Engine::ExplainOptions{static_cast<int32_t>(bs.range(0))});
  std::atomic<bool> stop{false}, measuring{false};
  std::atomic<int64_t> max_stall_ns{0};
  std::thread contender([&] {
    std::string text;
    while (!stop.load()) {
      const auto t0 = std::chrono::steady_clock::now();
      (void)w.engine->Explain(w.running, &text);
      const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
      if (measuring.load() && ns > max_stall_ns.load()) max_stall_ns.store(ns);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  nlohmann::json last;
  int64_t lock_max_ns = 0, lock_sum_ns = 0;
  for (auto _ : bs) {
    measuring.store(true);
    auto j = w.engine->ExplainJson(w.target);
    measuring.store(false);
    if (!j.ok()) {
      bs.SkipWithError(j.status().ToString().c_str());
      break;
    }
    last = *j;
    benchmark::DoNotOptimize(last);
    const Engine::ExplainStats st = w.engine->LastExplainStats();
    lock_max_ns = std::max(lock_max_ns, st.lock_held_ns);
    lock_sum_ns += st.lock_held_ns;
  }
  stop.store(true);
  contender.join();
  const Engine::ExplainStats st = w.engine->LastExplainStats();
  bs.counters["pods"] = static_cast<double>(w.pods);
  bs.counters["lock_held_ms"] = static_cast<double>(lock_sum_ns) / 1e6 / static_cast<double>(bs.iterations());
  bs.counters["lock_held_max_ms"] = static_cast<double>(lock_max_ns) / 1e6;
  bs.counters["considered"] = static_cast<double>(st.considered);
  bs.counters["cut"] = st.cut ? 1 : 0;
  bs.counters["max_stall_ms"] = static_cast<double>(max_stall_ns.load()) / 1e6;
  bs.counters["position"] = last.value("position", 0.0);
  bs.counters["queue_length"] = last.value("queue_length", 0.0);
}
// Arg: ExplainOptions::max_ahead (2000: the default; 1 << 30: the whole queue, as before the bound,
// but still with the dry cycle outside the lock).
BENCHMARK(BM_ExplainJson_10kNodes_100kPending)
    ->Arg(2000)
    ->Arg(1 << 30)
    ->ArgName("max_ahead")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5)
    ->UseRealTime();

// GET /snapshot on the same engine (docs/simulator.md, "Snapshots"): the call's wall time (the
// benchmark's time); max_stall_ms, the longest a contender calling the cheap Engine::Stats in a
// loop waited meanwhile (Snapshot copies under the mutex and builds the JSON after it); dump_ms
// the route's dump to text after it; mb the document's size.
void BM_Snapshot_10kNodes_100kPending(benchmark::State& bs) {
  EngineWorld& w = TheEngine();
  std::atomic<bool> stop{false}, measuring{false};
  std::atomic<int64_t> max_stall_ns{0};
  std::thread contender([&] {
    while (!stop.load()) {
      const auto t0 = std::chrono::steady_clock::now();
      (void)w.engine->Stats();
      const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
      if (measuring.load() && ns > max_stall_ns.load()) max_stall_ns.store(ns);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  nlohmann::json s;
  for (auto _ : bs) {
    measuring.store(true);
    s = w.engine->Snapshot();
    measuring.store(false);
    benchmark::DoNotOptimize(s);
  }
  stop.store(true);
  contender.join();
  bs.counters["max_stall_ms"] = static_cast<double>(max_stall_ns.load()) / 1e6;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string text = s.dump();
  bs.counters["dump_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  bs.counters["mb"] = static_cast<double>(text.size()) / 1e6;
  bs.counters["running"] = static_cast<double>(s["running"].size());
  bs.counters["pending"] = static_cast<double>(s["pending"].size());
}
BENCHMARK(BM_Snapshot_10kNodes_100kPending)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace
}  // namespace tidal::bench
