// Engine::ExplainJson (the /explain API) on a big engine (bench/engine_world.h): 10,000 nodes / 80,000 GPUs on the
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
#include <thread>

#include <benchmark/benchmark.h>

#include "bench/engine_world.h"

namespace tidal::bench {
namespace {

EngineWorld& TheEngine() {
  static EngineWorld* world = [] {
    EngineWorld* w = BuildEngineWorld().release();
    if (w == nullptr) std::abort();
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
