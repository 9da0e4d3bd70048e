// Placement benchmarks on a 10,000-node / 80,000-GPU fleet, 60% allocated (see fabric.h).
// Each iteration schedules one workload through the full per-workload path (PreFilter, search,
// Score, Transaction, Reserve, Permit, commit) and then releases it, so every iteration sees the
// same fleet. Run: build/bin/tidal_bench --benchmark_filter=Place --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include "bench/fabric.h"
#include "core/framework/scheduler.h"
#include "plugins/registry.h"

namespace tidal::bench {
namespace {

Scheduler MakeScheduler(const ClusterState& s) {
  const Registry r = plugins::DefaultRegistry();
  return Scheduler(std::move(Profile::Build(ProfileSpec::Default(), r, PluginContext{s.levels()})).value());
}

void PlaceAndRelease(benchmark::State& bs, const Workload& w) {
  ClusterState fleet = MakeFleet(0.60);
  const Scheduler sched = MakeScheduler(fleet);
  const FleetStats st = Stats(fleet);
  int64_t placed = 0;
  for (auto _ : bs) {
    Decision d = sched.ScheduleOne(fleet, w, 0);
    if (d.outcome == Outcome::kPlaced) {
      ++placed;
      (void)fleet.RemoveRunning(w.id);
    } else {
      bs.SkipWithError(("not placed: " + d.explanation).c_str());
      break;
    }
    benchmark::DoNotOptimize(d);
  }
  bs.counters["nodes"] = fleet.node_count();
  bs.counters["utilisation"] = st.utilisation;
  bs.counters["whole_free_nodes"] = st.whole_free_nodes;
  bs.counters["placed"] = static_cast<double>(placed);
}

Workload Gang(std::string id, int32_t members, int64_t gpus, std::string required) {
  Workload w;
  w.id = std::move(id);
  w.members = w.min_members = members;
  w.per_member = Resources{gpus, gpus * 8000, gpus * (int64_t{64} << 30)};
  w.required_level = std::move(required);
  return w;
}

// 64 members x 8 GPUs = 512 GPUs, all inside one InfiniBand leaf.
void BM_PlaceGang_10kNodes_512Gpus(benchmark::State& bs) {
  PlaceAndRelease(bs, Gang("train-512", 64, 8, "leaf"));
}
BENCHMARK(BM_PlaceGang_10kNodes_512Gpus)->Unit(benchmark::kMicrosecond);

// The same gang with preferred=nvlink scoring on top.
void BM_PlaceGang_10kNodes_512Gpus_PreferNvlink(benchmark::State& bs) {
  Workload w = Gang("train-512p", 64, 8, "leaf");
  w.preferred_level = "nvlink";
  PlaceAndRelease(bs, w);
}
BENCHMARK(BM_PlaceGang_10kNodes_512Gpus_PreferNvlink)->Unit(benchmark::kMicrosecond);

// 32 x 8 GPUs with no required level: smallest domain that fits.
void BM_PlaceGang_10kNodes_256Gpus_AnyLevel(benchmark::State& bs) {
  PlaceAndRelease(bs, Gang("train-256", 32, 8, ""));
}
BENCHMARK(BM_PlaceGang_10kNodes_256Gpus_AnyLevel)->Unit(benchmark::kMicrosecond);

// One 1-GPU pod: best-fit node found through the aggregates.
void BM_PlaceSingleGpu_10kNodes(benchmark::State& bs) {
  PlaceAndRelease(bs, Gang("pod-1", 1, 1, ""));
}
BENCHMARK(BM_PlaceSingleGpu_10kNodes)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tidal::bench
