// One full scheduling cycle over a deep queue: 10,000 nodes / 80,000 GPUs on the default 4-level
// fabric, ~60% allocated by running workloads with expected ends, 100,000 pending workloads of
// mixed shapes (1-GPU pods to 512-GPU gangs) in 12 queues under 3 orgs with quotas. The cycle does
// ordering (hierarchical fair share), admission (quota), placement, reservations and backfill over
// the WHOLE queue. Each iteration runs on a fresh copy of the same cluster and ledger (copying is
// not timed). Run: build/bin/tidal_bench --benchmark_filter=Cycle --benchmark_repetitions=5
#include <sys/resource.h>

#include <random>

#include <benchmark/benchmark.h>

#include "core/framework/scheduler.h"
#include "core/io/cluster_file.h"
#include "core/state/queues.h"
#include "plugins/registry.h"

namespace tidal::bench {
namespace {

struct World {
  std::unique_ptr<QuotaLedger> ledger;
  std::unique_ptr<ClusterState> state;
  std::vector<Workload> pending;
  int64_t now = 100000;
};

Workload Shape(std::mt19937& rng, const std::string& id, const QueueTree& tree) {
  Workload w;
  w.id = id;
  const auto leaves = tree.LeafNames();
  w.queue = leaves[rng() % leaves.size()];
  w.queue_id = tree.Find(w.queue);
  const int r = static_cast<int>(rng() % 100);
  if (r < 60) {
    w.per_member = Resources{1, 4000, int64_t{32} << 30};
    w.workload_class = WorkloadClass::kBatch;
  } else if (r < 75) {
    const int64_t g = int64_t{2} << (rng() % 3);  // 2, 4, 8
    w.per_member = Resources{g, g * 4000, g * (int64_t{32} << 30)};
    w.workload_class = WorkloadClass::kInteractive;
  } else if (r < 95) {
    w.members = w.min_members = static_cast<int32_t>(2 + rng() % 15);  // 2..16 nodes
    w.per_member = Resources{8, 32000, int64_t{256} << 30};
    w.workload_class = WorkloadClass::kTraining;
    w.required_level = rng() % 2 ? "leaf" : "";
    w.preferred_level = "nvlink";
  } else {
    w.members = w.min_members = static_cast<int32_t>(32 << (rng() % 2));  // 256 or 512 GPUs
    w.per_member = Resources{8, 32000, int64_t{256} << 30};
    w.workload_class = WorkloadClass::kTraining;
    w.required_level = "block";
  }
  w.priority = static_cast<int32_t>(rng() % 4) * 10;
  w.runtime_limit_s = 600 + static_cast<int64_t>(rng() % 86400);
  w.preemptible = rng() % 3 == 0;
  return w;
}

const World& TheWorld() {
  static World* world = [] {
    auto* w = new World;
    QueueConfig qc;
    int org_i = 0;
    for (const char* org : {"research", "product", "infra"}) {
      QueueSpec o;
      o.name = org;
      o.nominal = {org_i == 0 ? 40000 : org_i == 1 ? 28000 : 12000, kUnlimited, kUnlimited};
      qc.queues.push_back(o);
      for (int t = 0; t < 4; ++t) {
        QueueSpec q;
        q.name = std::string(org) + "-team-" + std::to_string(t);
        q.parent = org;
        q.weight = 1 + t;
        q.nominal = {o.nominal[0] / 4, kUnlimited, kUnlimited};
        qc.queues.push_back(q);
      }
      ++org_i;
    }
    w->ledger = std::make_unique<QuotaLedger>(std::move(QueueTree::Build(qc)).value());
    FabricSpec f;
    f.per_level = {10, 10, 25};
    f.nodes_per_domain = 4;
    f.node_capacity = Resources{8, 128000, int64_t{1} << 40};
    auto levels = TopologyLevels::Default();
    w->state = std::make_unique<ClusterState>(std::move(ClusterState::Build(levels, GenerateFabric(levels, f))).value());
    w->ledger->SetCapacity({80000, 10000 * 128000LL, 10000LL << 40});
    w->ledger->Advance(0);
    // Fill to ~60% with running work placed by the same scheduler (best fit, gangs, topology).
    const Registry reg = plugins::DefaultRegistry();
    ProfileSpec fill_spec = ProfileSpec::Default();
    fill_spec.backfill.depth = 0;
    Scheduler filler(std::move(Profile::Build(fill_spec, reg, PluginContext{levels, w->ledger.get()})).value());
    std::mt19937 rng(1234);
    int i = 0;
    while (w->state->FreeGpus(w->state->root()) > 32000) {
      Workload job = Shape(rng, "run-" + std::to_string(i++), w->ledger->tree());
      job.min_members = job.members = std::min(job.members, 16);
      job.required_level.clear();
      (void)filler.ScheduleOne(*w->state, job, w->now - static_cast<int64_t>(rng() % 20000));
    }
    w->ledger->Advance(w->now);
    for (int k = 0; k < 100000; ++k) {
      Workload p = Shape(rng, "pend-" + std::to_string(k), w->ledger->tree());
      p.submit_time_s = w->now - static_cast<int64_t>(rng() % 50000);
      w->pending.push_back(std::move(p));
    }
    return w;
  }();
  return *world;
}

void BM_Cycle_10kNodes_100kPending(benchmark::State& bs) {
  const World& w = TheWorld();
  std::vector<const Workload*> refs;
  for (const auto& p : w.pending) refs.push_back(&p);
  const Registry reg = plugins::DefaultRegistry();
  CycleResult last;
  for (auto _ : bs) {
    bs.PauseTiming();
    ClusterState state = *w.state;
    QuotaLedger ledger = *w.ledger;
    Scheduler sched(std::move(Profile::Build(ProfileSpec::Default(), reg, PluginContext{state.levels(), &ledger})).value());
    bs.ResumeTiming();
    last = sched.RunCycle(state, refs, w.now);
    benchmark::DoNotOptimize(last);
  }
  int64_t placed = 0, reserved = 0, preempting = 0;
  for (const auto& d : last.decisions) {
    placed += d.outcome == Outcome::kPlaced;
    reserved += d.reserved;
    preempting += !d.preemption.victims.empty();
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  bs.counters["nodes"] = w.state->node_count();
  bs.counters["pending"] = static_cast<double>(w.pending.size());
  bs.counters["running_before"] = static_cast<double>(w.state->running().size());
  bs.counters["util_before"] = 1.0 - static_cast<double>(w.state->FreeGpus(w.state->root())) / 80000.0;
  bs.counters["placed"] = static_cast<double>(placed);
  bs.counters["reserved"] = static_cast<double>(reserved);
  bs.counters["preemptions_proposed"] = static_cast<double>(preempting);
  bs.counters["shape_cache_hits"] = static_cast<double>(last.shape_cache_hits);
  bs.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}
BENCHMARK(BM_Cycle_10kNodes_100kPending)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace tidal::bench
