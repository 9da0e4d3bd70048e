// Event-driven decisions on the Kubernetes path (issue 17): Engine::PlanPod latency for pods
// arriving at a big, busy engine (bench/engine_world.h: 10,000 nodes / 80,000 GPUs, ~60%
// allocated, 100,000 pending pods/gangs synced through Engine::Sync like the shim does).
// Then a stream of newly arriving work, like the shim and kube-scheduler drive the engine:
//   - each arrival (a lone pod of 1-8 GPUs, or an 8-pod gang of 8 GPUs each, 1 in 4; any of the
//     12 queues, random priority) is Synced in its own batch (the informer's event);
//   - every member is then PlanPod'ed (kube-scheduler's PreFilter), and one that gets a node is
//     Reserved and Bound (Reserve, PostBind); pods of gangs planned ahead by fair share
//     (PlanResult::activate) are PlanPod'ed, Reserved and Bound too, as the shim Activates them.
// The engine's clock advances one second every `rate` arrivals (Arg: arrivals per second), so
// per-second work (the reservation refresh, plan expiry) runs as often as it would live.
// Counters: p50/p99/p99.9/max of every PlanPod call (ms), the calls over 5 ms (those that
// refreshed the reservation book) and their mean, the Sync of each arrival (mean, p99, ms), p99
// of every timed call (PlanPod and Sync) and how many took over 1 ms, calls, how many were
// planned and how many activated, and the book's refreshes and their time under the engine's
// mutex (mean, ms).
// Run: build/bin/tidal_bench --benchmark_filter=PlanPod
// Threading: the benchmark thread only.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include <benchmark/benchmark.h>

#include "bench/engine_world.h"

namespace tidal::bench {
namespace {

double Percentile(std::vector<int64_t> ns, double p) {
  if (ns.empty()) return 0;
  const size_t i = std::min(ns.size() - 1, static_cast<size_t>(p * static_cast<double>(ns.size())));
  std::nth_element(ns.begin(), ns.begin() + static_cast<std::ptrdiff_t>(i), ns.end());
  return static_cast<double>(ns[i]) / 1e6;
}

void BM_PlanPod_10kNodes_100kPending(benchmark::State& bs) {
  const int rate = static_cast<int>(bs.range(0));
  const int arrivals = static_cast<int>(bs.range(1));
  const auto prefix = static_cast<int32_t>(bs.range(2));
  const bool background = bs.range(3) != 0;
  const int64_t pace_ms = bs.range(4);
  const bool spread = bs.range(5) != 0;
  auto now = std::make_shared<std::atomic<int64_t>>(kWorldNow);
  std::unique_ptr<EngineWorld> w =
      BuildEngineWorld([now] { return now->load(); }, [prefix, background](EngineConfig& c) {
        c.refresh_prefix = prefix;
        c.refresh_in_background = background;
      });
  if (w == nullptr) {
    bs.SkipWithError("world");
    return;
  }
  Engine& e = *w->engine;
  (void)e.PlanPod(w->running);  // builds the engine's ClusterState (not timed)
  std::vector<int64_t> plan_ns, sync_ns;
  int64_t planned = 0, activated = 0;
  std::mt19937 rng(99);
  auto timed = [](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  };
  auto plan = [&](const std::string& uid) {
    PlanResult r;
    plan_ns.push_back(timed([&] { r = e.PlanPod(uid); }));
    if (r.node.empty()) return r;
    ++planned;
    (void)e.Reserve(uid, r.node);
    (void)e.Bound(uid, r.node);
    return r;
  };
  for (auto _ : bs) {
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < arrivals; ++k) {
      if (k > 0 && k % rate == 0) {
        now->fetch_add(1);
        // Paced: a simulated second takes pace_ms of wall time at least (not timed), so the
        // refresher thread runs its once-a-second refresh while the calls go on, as it would live.
        if (pace_ms > 0 && !spread) std::this_thread::sleep_until(start + std::chrono::milliseconds(pace_ms * (k / rate)));
      }
      // Spread: each arrival at its own time, evenly over the simulated second (not in a burst).
      if (pace_ms > 0 && spread) std::this_thread::sleep_until(start + std::chrono::microseconds(pace_ms * 1000 * k / rate));
      const std::string& q = w->queues[rng() % w->queues.size()];
      const int32_t prio = static_cast<int32_t>(rng() % 4) * 10;
      SyncBatch b;
      if (rng() % 4 != 0) {
        PodInfo p = WorldPod("new-" + std::to_string(k), 1 + static_cast<int64_t>(rng() % 8), q);
        p.priority = prio;
        p.creation_unix = now->load();
        p.annotations[kLabelRuntimeLimit] = std::to_string(1 + rng() % 24) + "h";
        b.upsert_pods.push_back(std::move(p));
      } else {
        for (int m = 0; m < 8; ++m) {
          PodInfo p = WorldPod("new-" + std::to_string(k) + "-" + std::to_string(m), 8, q);
          p.labels[kLabelGang] = "new" + std::to_string(k);
          p.labels[kLabelGangSize] = "8";
          p.priority = prio;
          p.creation_unix = now->load();
          p.annotations[kLabelRuntimeLimit] = std::to_string(1 + rng() % 24) + "h";
          b.upsert_pods.push_back(std::move(p));
        }
      }
      std::vector<std::string> uids;
      for (const auto& p : b.upsert_pods) uids.push_back(p.uid);
      uint64_t gen = 0;
      sync_ns.push_back(timed([&] { (void)e.Sync(std::move(b), &gen); }));
      for (const auto& u : uids) {
        PlanResult r = plan(u);
        for (const auto& a : r.activate) {
          ++activated;
          (void)plan(a.uid);
        }
      }
    }
  }
  e.WaitForRefresh();  // not timed: the refresher's last job, before the world goes
  const EngineStats stats = e.Stats();
  bs.counters["refreshes"] = static_cast<double>(stats.book_refreshes);
  bs.counters["refresh_locked_ms"] =
      stats.book_refreshes == 0 ? 0 : static_cast<double>(stats.refresh_locked_ns) / 1e6 / static_cast<double>(stats.book_refreshes);
  int64_t sync_sum = 0;
  for (int64_t s : sync_ns) sync_sum += s;
  bs.counters["plan_p50_ms"] = Percentile(plan_ns, 0.50);
  bs.counters["plan_p99_ms"] = Percentile(plan_ns, 0.99);
  bs.counters["plan_p999_ms"] = Percentile(plan_ns, 0.999);
  bs.counters["plan_max_ms"] = Percentile(plan_ns, 1.0);
  // Calls over 5 ms: those that refreshed the reservation book (a dry cycle), and their mean.
  int64_t slow = 0, slow_sum = 0;
  for (int64_t ns : plan_ns) {
    if (ns > 5'000'000) ++slow, slow_sum += ns;
  }
  bs.counters["slow_calls"] = static_cast<double>(slow);
  bs.counters["slow_mean_ms"] = slow == 0 ? 0 : static_cast<double>(slow_sum) / 1e6 / static_cast<double>(slow);
  bs.counters["sync_mean_ms"] = sync_ns.empty() ? 0 : static_cast<double>(sync_sum) / 1e6 / static_cast<double>(sync_ns.size());
  bs.counters["sync_p99_ms"] = Percentile(sync_ns, 0.99);
  // Every timed call (PlanPod and Sync): whichever call waits while the refresher holds the mutex.
  std::vector<int64_t> any = plan_ns;
  any.insert(any.end(), sync_ns.begin(), sync_ns.end());
  bs.counters["any_p99_ms"] = Percentile(any, 0.99);
  bs.counters["any_over_1ms"] = static_cast<double>(std::count_if(any.begin(), any.end(), [](int64_t ns) { return ns > 1'000'000; }));
  bs.counters["calls"] = static_cast<double>(plan_ns.size());
  bs.counters["planned"] = static_cast<double>(planned);
  bs.counters["activated"] = static_cast<double>(activated);
  bs.counters["sim_seconds"] = static_cast<double>(now->load() - kWorldNow);
}
// Args: arrivals per simulated second, arrivals, EngineConfig::refresh_prefix (0: every book
// refresh walks the whole queue, as before issue 17; 1024: the default), and
// EngineConfig::refresh_in_background (1: the refresher thread runs the book's dry cycle), and
// the wall time of one simulated second at least (ms; 0: as fast as the calls go), and whether a
// second's arrivals come evenly spread over it (1) or back to back at its start (0).
BENCHMARK(BM_PlanPod_10kNodes_100kPending)
    ->Args({10, 300, 1024, 0, 0, 0})
    ->Args({10, 1000, 1024, 0, 0, 0})
    ->Args({10, 1000, 0, 0, 0, 0})
    ->Args({100, 1000, 1024, 0, 0, 0})
    ->Args({10, 1000, 1024, 0, 100, 0})
    ->Args({10, 1000, 1024, 1, 100, 0})
    ->Args({100, 1000, 1024, 1, 100, 0})
    ->Args({10, 1000, 1024, 0, 100, 1})
    ->Args({10, 1000, 1024, 1, 100, 1})
    ->Args({10, 1000, 1024, 1, 1000, 1})
    ->ArgNames({"rate", "arrivals", "prefix", "background", "pace_ms", "spread"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
}  // namespace tidal::bench
