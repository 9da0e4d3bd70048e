// Cycles that re-plan kept reservations on a full cluster, as `tidalctl sim` runs them at every
// event of a contended replay (docs/benchmarks-sim.md, "Trace replay (Philly)", 512 GPUs): 64 nodes /
// 512 GPUs all taken by 512 running 1-GPU workloads with staggered expected ends, 16 pending
// 2-node gangs that hold reservations, and 240 pending 1-GPU workloads. Nothing fits, so every
// cycle leaves the cluster unchanged; each one builds the future view (a copy of the cluster on
// which running work is released in order of expected end) to see whether a kept reservation can
// move earlier. Run: build/bin/tidal_bench --benchmark_filter=FutureView --benchmark_repetitions=5
//
// Single-threaded: the world is built once and read by the benchmark's thread only.
#include <benchmark/benchmark.h>

#include "core/framework/scheduler.h"
#include "core/io/cluster_file.h"
#include "plugins/registry.h"

namespace tidal::bench {
namespace {

struct ReplanWorld {
  std::unique_ptr<ClusterState> state;
  std::vector<Workload> pending;
  int64_t now = 100000;
};

const ReplanWorld& TheReplanWorld() {
  static ReplanWorld* world = [] {
    auto* w = new ReplanWorld;
    FabricSpec f;
    f.per_level = {1, 2, 8};  // 1 block, 2 leaves, 16 NVLink domains of 4 nodes: 64 nodes
    f.node_capacity = Resources{8, 128000, int64_t{1} << 40};
    auto levels = TopologyLevels::Default();
    w->state = std::make_unique<ClusterState>(std::move(ClusterState::Build(levels, GenerateFabric(levels, f))).value());
    const Registry reg = plugins::DefaultRegistry();
    ProfileSpec fill_spec = ProfileSpec::Default();
    fill_spec.backfill.depth = 0;
    Scheduler filler(std::move(Profile::Build(fill_spec, reg, PluginContext{levels, nullptr})).value());
    for (int i = 0; w->state->FreeGpus(w->state->root()) > 0; ++i) {
      Workload job;
      job.id = "run-" + std::to_string(i);
      job.per_member = Resources{1, 4000, int64_t{32} << 30};
      job.runtime_limit_s = 3600 + 97 * i;
      (void)filler.ScheduleOne(*w->state, job, w->now - 60);
    }
    for (int k = 0; k < 256; ++k) {
      Workload p;
      p.id = "pend-" + std::to_string(k);
      p.submit_time_s = w->now - 3600 + k;
      p.runtime_limit_s = 7200;
      if (k % 16 == 0) {
        p.members = p.min_members = 2;
        p.per_member = Resources{8, 32000, int64_t{256} << 30};
      } else {
        p.per_member = Resources{1, 4000, int64_t{32} << 30};
      }
      w->pending.push_back(std::move(p));
    }
    return w;
  }();
  return *world;
}

void BM_FutureView_Replan_512Gpus(benchmark::State& bs) {
  const ReplanWorld& w = TheReplanWorld();
  std::vector<const Workload*> refs;
  for (const auto& p : w.pending) refs.push_back(&p);
  ClusterState state = *w.state;
  const Registry reg = plugins::DefaultRegistry();
  Scheduler sched(std::move(Profile::Build(ProfileSpec::Default(), reg, PluginContext{state.levels(), nullptr})).value());
  CycleResult last = sched.RunCycle(state, refs, w.now);  // the gangs take their reservations
  int64_t t = w.now;
  for (auto _ : bs) {
    last = sched.RunCycle(state, refs, ++t);
    benchmark::DoNotOptimize(last);
  }
  int64_t reserved = 0;
  for (const auto& d : last.decisions) reserved += d.reserved;
  bs.counters["running"] = static_cast<double>(state.running().size());
  bs.counters["reserved"] = static_cast<double>(reserved);
}
BENCHMARK(BM_FutureView_Replan_512Gpus)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tidal::bench
