// One full scheduling cycle over a deep queue, at several scales (the scale curve, issue 17 item 4):
// N nodes (N/1,000 blocks x 10 leaves x 25 NVLink domains x 4 nodes, 8 GPUs each) on the default
// 4-level fabric, ~60% allocated by running workloads with expected ends, P pending workloads of
// mixed shapes (1-GPU pods to 512-GPU gangs) in 12 queues under 3 orgs with quotas proportional to
// the fleet. Cases: N in {1k, 10k, 50k} x P in {10k, 100k, 1M}, named BM_Cycle/nodes:N/pending:P;
// nodes:10000/pending:100000 is the world of the earlier BM_Cycle_10kNodes_100kPending (same seed,
// same shapes, same counters). The cycle does ordering (hierarchical fair share), admission (quota),
// placement, reservations and backfill over the WHOLE queue. Each iteration runs on a fresh copy of
// the same cluster and ledger; only Scheduler::RunCycle is timed (copying the cluster before and
// destroying it and the decisions after are not; `teardown_ms` says what destroying took, the part
// the earlier harness timed too). Memory: one process per case (bench/scale_curve.sh) reads the
// peak RSS counter; `world_MiB` is the resident size once the world is built, before any cycle.
// Run: build/bin/tidal_bench --benchmark_filter='Cycle/nodes:10000/pending:100000/'
//
// Single-threaded: the benchmark's thread builds the world and runs the cycles.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <random>

#include <benchmark/benchmark.h>

#include "bench/bench_queues.h"
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

// The world of one case, built on first use; one at a time (a new case frees the last one's).
const World& TheWorld(int32_t nodes, int32_t pending) {
  static std::unique_ptr<World> world;
  static std::pair<int32_t, int32_t> built{-1, -1};
  if (world && built == std::make_pair(nodes, pending)) return *world;
  world.reset();
  built = {nodes, pending};
  world = std::make_unique<World>();
  World* w = world.get();
  const int64_t gpus = int64_t{8} * nodes;
  QueueConfig qc = BenchQueues(gpus);
  w->ledger = std::make_unique<QuotaLedger>(std::move(QueueTree::Build(qc)).value());
  FabricSpec f;
  f.per_level = {std::max(1, nodes / 1000), 10, 25};  // blocks of 1,000 nodes
  f.nodes_per_domain = 4;
  f.node_capacity = Resources{8, 128000, int64_t{1} << 40};
  auto levels = TopologyLevels::Default();
  w->state = std::make_unique<ClusterState>(std::move(ClusterState::Build(levels, GenerateFabric(levels, f))).value());
  w->ledger->SetCapacity({gpus, int64_t{nodes} * 128000, int64_t{nodes} << 40});
  w->ledger->Advance(0);
  // Fill to ~60% with running work placed by the same scheduler (best fit, gangs, topology).
  const Registry reg = plugins::DefaultRegistry();
  ProfileSpec fill_spec = ProfileSpec::Default();
  fill_spec.backfill.depth = 0;
  Scheduler filler(std::move(Profile::Build(fill_spec, reg, PluginContext{levels, w->ledger.get()})).value());
  std::mt19937 rng(1234);
  int i = 0;
  while (w->state->FreeGpus(w->state->root()) > gpus * 2 / 5) {
    Workload job = Shape(rng, "run-" + std::to_string(i++), w->ledger->tree());
    job.min_members = job.members = std::min(job.members, 16);
    job.required_level.clear();
    (void)filler.ScheduleOne(*w->state, job, w->now - static_cast<int64_t>(rng() % 20000));
  }
  w->ledger->Advance(w->now);
  w->pending.reserve(static_cast<size_t>(pending));
  for (int k = 0; k < pending; ++k) {
    Workload p = Shape(rng, "pend-" + std::to_string(k), w->ledger->tree());
    p.submit_time_s = w->now - static_cast<int64_t>(rng() % 50000);
    w->pending.push_back(std::move(p));
  }
  return *w;
}

// Resident set size now, in MiB (/proc/self/statm).
double RssMiB() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

void BM_Cycle(benchmark::State& bs) {
  const World& w = TheWorld(static_cast<int32_t>(bs.range(0)), static_cast<int32_t>(bs.range(1)));
  const double world_mib = RssMiB();
  std::vector<const Workload*> refs;
  refs.reserve(w.pending.size());
  for (const auto& p : w.pending) refs.push_back(&p);
  const Registry reg = plugins::DefaultRegistry();
  int64_t placed = 0, reserved = 0, preempting = 0, hits = 0;
  double teardown_s = 0;
  for (auto _ : bs) {
    bs.PauseTiming();
    std::optional<ClusterState> state(*w.state);
    std::optional<QuotaLedger> ledger(*w.ledger);
    std::optional<Scheduler> sched(
        std::move(Profile::Build(ProfileSpec::Default(), reg, PluginContext{state->levels(), &*ledger})).value());
    bs.ResumeTiming();
    std::optional<CycleResult> last(sched->RunCycle(*state, refs, w.now));
    bs.PauseTiming();
    placed = reserved = preempting = 0;
    for (const auto& d : last->decisions) {
      placed += d.outcome == Outcome::kPlaced;
      reserved += d.reserved;
      preempting += !d.preemption.victims.empty();
    }
    hits = last->shape_cache_hits;
    // What the earlier harness timed as well: freeing the decisions, the scheduler and the copies.
    const auto t0 = std::chrono::steady_clock::now();
    last.reset();
    sched.reset();
    ledger.reset();
    state.reset();
    teardown_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bs.ResumeTiming();
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double total_gpus = 8.0 * w.state->node_count();
  bs.counters["nodes"] = w.state->node_count();
  bs.counters["pending"] = static_cast<double>(w.pending.size());
  bs.counters["running_before"] = static_cast<double>(w.state->running().size());
  bs.counters["util_before"] = 1.0 - static_cast<double>(w.state->FreeGpus(w.state->root())) / total_gpus;
  bs.counters["placed"] = static_cast<double>(placed);
  bs.counters["reserved"] = static_cast<double>(reserved);
  bs.counters["preemptions_proposed"] = static_cast<double>(preempting);
  bs.counters["shape_cache_hits"] = static_cast<double>(hits);
  bs.counters["teardown_ms"] = 1000.0 * teardown_s / static_cast<double>(bs.iterations());
  bs.counters["world_MiB"] = world_mib;
  bs.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}
BENCHMARK(BM_Cycle)
    ->ArgNames({"nodes", "pending"})
    ->ArgsProduct({{1000, 10000, 50000}, {10000, 100000, 1000000}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace tidal::bench
