// The simulator's policies on small hand-made traces with known answers, the baselines' defining
// behaviour (EASY never delays the head job; kube-default holds partial gangs and spreads), the
// metrics' definitions, determinism, and the exactness of the tidal policy's prefix shortcut.
#include <iostream>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "sim/fabric.h"
#include "sim/replay.h"
#include "sim/report.h"
#include "sim/trace.h"

namespace tidal::sim {
namespace {

std::string Src(const std::string& rel) { return std::string(TIDAL_SOURCE_DIR) + "/" + rel; }

// `nodes` nodes of 8 GPUs, each its own NVLink domain, leaf and block.
ClusterState Nodes(int64_t nodes) {
  SyntheticFabric f;
  f.gpus = 8 * nodes;
  f.nodes_per_domain = 1;
  f.fanout = {1, 1};
  return std::move(BuildSyntheticFabric(TopologyLevels::Default(), f)).value();
}

struct Result {
  Replay replay;
  std::map<std::string, std::pair<int64_t, int64_t>> times;  // id -> (start, end)
  const JobRecord& rec(const std::string& id) const {
    for (const auto& r : replay.sim->records()) {
      if (r.id == id) return r;
    }
    throw std::runtime_error("no job " + id);
  }
};

Result Replay1(const ClusterState& fabric, const std::vector<SimJob>& jobs, const std::string& policy,
               bool prefix = true, const ProfileSpec& profile = ProfileSpec::Default()) {
  ReplaySpec spec;
  spec.fabric = &fabric;
  spec.jobs = &jobs;
  spec.profile = profile;
  spec.tidal_shortcuts = prefix;
  Result res{std::move(MakeReplay(spec, policy)).value(), {}};
  EXPECT_TRUE(res.replay.sim->Start().ok());
  res.replay.sim->Run();
  for (const auto& r : res.replay.sim->records()) res.times[r.id] = {r.start_s, r.end_s};
  return res;
}

std::vector<SimJob> Load(const std::string& rel) {
  auto t = LoadTrace(Src(rel), TraceOptions{});
  EXPECT_TRUE(t.ok()) << t.status().Message();
  EXPECT_TRUE(t->bad_rows.empty());
  return t->jobs;
}

using Times = std::map<std::string, std::pair<int64_t, int64_t>>;

TEST(SimPolicy, ThreeJobsOnOneNodeExactTimesUnderEveryPolicy) {
  const ClusterState fabric = Nodes(1);
  const auto jobs = Load("test/sim/three_jobs.csv");
  for (const auto& p : PolicyNames()) {
    Result r = Replay1(fabric, jobs, p);
    EXPECT_EQ(r.times, (Times{{"a", {0, 100}}, {"b", {100, 150}}, {"c", {100, 130}}})) << p;
    const auto m = ComputeMetrics(*r.replay.sim);
    EXPECT_NEAR(m["jct_s"]["avg"].get<double>(), (100 + 140 + 110) / 3.0, 1e-3) << p;
    EXPECT_EQ(m["jct_s"]["p50"].get<double>(), 110) << p;
    EXPECT_EQ(m["makespan_s"].get<int64_t>(), 150) << p;
    // 8x100 + 4x50 + 4x30 GPU-seconds over 8 GPUs x 150 s.
    EXPECT_NEAR(m["gpu_allocation_rate"].get<double>(), 1120.0 / 1200.0, 1e-6) << p;
    EXPECT_EQ(m["by_size"]["2-8"]["jobs"].get<int64_t>(), 3) << p;
    EXPECT_EQ(m["jobs"]["completed"].get<int64_t>(), 3) << p;
  }
}

TEST(SimPolicy, EasyBackfillStartsShortJobsBehindTheHeadFifoDoesNot) {
  const ClusterState fabric = Nodes(1);
  const auto jobs = Load("test/sim/easy_backfill.csv");
  Result fifo = Replay1(fabric, jobs, "fifo");
  EXPECT_EQ(fifo.times, (Times{{"a", {0, 100}}, {"b", {100, 150}}, {"c", {150, 200}}, {"d", {150, 650}}}));
  for (const char* p : {"easy-backfill", "tidal"}) {
    Result r = Replay1(fabric, jobs, p);
    EXPECT_EQ(r.times, (Times{{"a", {0, 100}}, {"b", {100, 150}}, {"c", {2, 52}}, {"d", {150, 650}}})) << p;
    EXPECT_EQ(r.rec("b").first_reservation_s, 100) << p;
  }
  Result kube = Replay1(fabric, jobs, "kube-default");
  EXPECT_EQ(kube.times, (Times{{"a", {0, 100}}, {"b", {552, 602}}, {"c", {2, 52}}, {"d", {52, 552}}}));
  // Stranded GPU-time: fifo leaves 4 GPUs idle from t=2 (c waits) to 100; EASY only from 52
  // (d waits; the head's reservation keeps them).
  EXPECT_DOUBLE_EQ(fifo.replay.sim->integrals().stranded_gpu_s, 4.0 * 98);
  EXPECT_DOUBLE_EQ(Replay1(fabric, jobs, "easy-backfill").replay.sim->integrals().stranded_gpu_s, 4.0 * 48);
}

// A random job stream: sizes 1..32 GPUs (`small`: 90% single GPUs, like Philly), durations up to
// 2 h, queues q0..q2.
std::vector<SimJob> RandomJobs(uint32_t seed, int n, double limit_factor_max, int64_t mean_gap_s, bool small = false) {
  std::mt19937 rng(seed);
  const int64_t mixed[] = {1, 1, 1, 1, 2, 4, 8, 8, 16, 32};
  const int64_t philly[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 16};
  const int64_t* sizes = small ? philly : mixed;
  const uint32_t nsizes = small ? 20 : 10;
  std::vector<SimJob> jobs;
  int64_t t = 0;
  for (int i = 0; i < n; ++i) {
    SimJob j;
    j.w.id = "j" + std::to_string(i);
    j.w.queue = "q" + std::to_string(rng() % 3);
    ShapeFromTotal(sizes[rng() % nsizes], 8, &j.w.members, &j.w.per_member.gpus);
    j.w.min_members = j.w.members;
    t += static_cast<int64_t>(rng() % static_cast<uint32_t>(2 * mean_gap_s + 1));
    j.w.submit_time_s = t;
    j.duration_s = 60 + static_cast<int64_t>(rng() % 7200);
    const double f = 1.0 + (limit_factor_max - 1.0) * static_cast<double>(rng() % 1000) / 1000.0;
    j.w.runtime_limit_s = static_cast<int64_t>(static_cast<double>(j.duration_s) * f) + 1;
    j.line = i + 2;
    jobs.push_back(std::move(j));
  }
  return jobs;
}

TEST(SimPolicy, EasyBackfillNeverDelaysTheHeadJob) {
  const ClusterState fabric = Nodes(6);
  for (uint32_t seed : {1u, 2u, 3u}) {
    const auto jobs = RandomJobs(seed, 600, seed == 1 ? 1.0 : 3.0, 120);
    Result r = Replay1(fabric, jobs, "easy-backfill");
    int reserved = 0, backfilled = 0;
    const auto& recs = r.replay.sim->records();
    for (const auto& rec : recs) {
      ASSERT_EQ(rec.state, JobState::kDone) << rec.id;
      if (rec.first_reservation_s >= 0) {
        ++reserved;
        EXPECT_LE(rec.start_s, rec.first_reservation_s) << rec.id << " seed " << seed;
      }
    }
    // Backfill happened: some job started before a job submitted earlier.
    for (size_t i = 1; i < recs.size(); ++i) backfilled += recs[i].start_s < recs[i - 1].start_s ? 1 : 0;
    EXPECT_GT(reserved, 20) << seed;
    EXPECT_GT(backfilled, 20) << seed;
  }
}

TEST(SimPolicy, KubeDefaultHoldsPartialGangsGangAwarePoliciesDoNot) {
  const ClusterState fabric = Nodes(2);
  const auto jobs = Load("test/sim/kube_partial.csv");
  Result kube = Replay1(fabric, jobs, "kube-default");
  EXPECT_EQ(kube.times, (Times{{"x", {0, 100}}, {"g", {100, 150}}}));
  // g's first pod binds to node-1 at t=1 and holds 8 GPUs until its second pod fits at t=100.
  EXPECT_DOUBLE_EQ(kube.replay.sim->integrals().held_gpu_s, 8.0 * 99);
  const auto m = ComputeMetrics(*kube.replay.sim);
  EXPECT_NEAR(m["partial_gang_gpu_hours"].get<double>(), 792.0 / 3600, 1e-3);
  // Allocation counts the held GPUs; the running rate does not.
  EXPECT_GT(m["gpu_allocation_rate"].get<double>(), m["gpu_running_rate"].get<double>());
  for (const char* p : {"fifo", "easy-backfill", "tidal"}) {
    Result r = Replay1(fabric, jobs, p);
    EXPECT_EQ(r.times, (Times{{"x", {0, 100}}, {"g", {100, 150}}})) << p;
    EXPECT_EQ(r.replay.sim->integrals().held_gpu_s, 0) << p;
  }
}

TEST(SimPolicy, KubeDefaultSpreadsSmallPodsAndStrandsWholeNodeJobs) {
  const ClusterState fabric = Nodes(2);
  const auto jobs = Load("test/sim/spread.csv");
  EXPECT_EQ(Replay1(fabric, jobs, "kube-default").times.at("z"), (std::pair<int64_t, int64_t>{1000, 1100}));
  for (const char* p : {"fifo", "easy-backfill", "tidal"}) {
    EXPECT_EQ(Replay1(fabric, jobs, p).times.at("z"), (std::pair<int64_t, int64_t>{2, 102})) << p;
  }
}

TEST(SimPolicy, JainIndexOfOneStarvedQueue) {
  // Queue a runs 8 GPUs on the only node; b's 1-GPU job waits from t=1 to 100. Weighted max-min
  // fair shares: b 1 GPU (its demand), a 7: x_a = 1 (capped), x_b = 0: Jain = 1/2.
  const ClusterState fabric = Nodes(1);
  std::vector<SimJob> jobs(2);
  jobs[0].w.id = "a1";
  jobs[0].w.queue = "a";
  jobs[0].w.per_member.gpus = 8;
  jobs[0].duration_s = 100;
  jobs[1].w.id = "b1";
  jobs[1].w.queue = "b";
  jobs[1].w.per_member.gpus = 1;
  jobs[1].w.submit_time_s = 1;
  jobs[1].duration_s = 10;
  for (auto& j : jobs) j.w.runtime_limit_s = j.duration_s;
  Result r = Replay1(fabric, jobs, "fifo");
  const auto m = ComputeMetrics(*r.replay.sim);
  EXPECT_DOUBLE_EQ(m["jain_index"].get<double>(), 0.5);
  EXPECT_NEAR(m["contended_hours"].get<double>(), 99.0 / 3600, 1e-3);
}

TEST(SimPolicy, DeterministicSameInputSameOutput) {
  SyntheticFabric f;
  f.gpus = 256;
  f.fanout = {2, 2};
  const ClusterState fabric = std::move(BuildSyntheticFabric(TopologyLevels::Default(), f)).value();
  const auto jobs = RandomJobs(7, 800, 2.0, 30);
  MetricsOptions mo;
  mo.timing = false;
  for (const auto& p : PolicyNames()) {
    Result a = Replay1(fabric, jobs, p), b = Replay1(fabric, jobs, p);
    EXPECT_EQ(ComputeMetrics(*a.replay.sim, mo).dump(), ComputeMetrics(*b.replay.sim, mo).dump()) << p;
    ASSERT_EQ(a.replay.sim->records().size(), b.replay.sim->records().size());
    for (size_t i = 0; i < a.replay.sim->records().size(); ++i) {
      const auto& x = a.replay.sim->records()[i];
      const auto& y = b.replay.sim->records()[i];
      EXPECT_EQ(std::tie(x.start_s, x.end_s, x.domain), std::tie(y.start_s, y.end_s, y.domain)) << p << " " << x.id;
    }
  }
}

TEST(SimPolicy, TidalShortcutsGiveTheSameDecisions) {
  // A contended stream (mean gap 20 s for ~1 h jobs on 64 GPUs: a queue of hundreds) with gangs,
  // three queues and declared limits up to 3x: every job starts at the same time, on the same
  // nodes, with the shortcuts (skip, verified prefix, no PostFilter while it is inert) as without,
  // under kept reservations of the default depth, EASY (depth 1), and reservations for every job.
  SyntheticFabric f;
  f.gpus = 64;
  f.nodes_per_domain = 2;
  f.fanout = {2, 2};
  const ClusterState fabric = std::move(BuildSyntheticFabric(TopologyLevels::Default(), f)).value();
  struct Backfill {
    int depth;
    int64_t min_gpus;
    int64_t aged_after_s = 0;  // aging (AgedFirst): the prefix puts aged jobs first, as the cycle does
  };
  for (const Backfill bf : {Backfill{16, 0}, Backfill{1, 0}, Backfill{4, 1}, Backfill{16, 0, 1800}})
  for (bool small : {false, true}) {
    ProfileSpec profile = ProfileSpec::Default();
    profile.backfill.depth = bf.depth;
    profile.backfill.min_gpus = bf.min_gpus;
    profile.backfill.aged_after_s = bf.aged_after_s;
    SCOPED_TRACE("depth " + std::to_string(bf.depth) + " minGpus " + std::to_string(bf.min_gpus) + " agedAfter " +
                 std::to_string(bf.aged_after_s));
    auto jobs = RandomJobs(11, 700, 3.0, small ? 4 : 20, small);
    std::mt19937 prio(3);  // priorities order each queue's jobs (the part of the key fixed per job)
    for (auto& j : jobs) j.w.priority = static_cast<int32_t>(prio() % 3);
    Result fast = Replay1(fabric, jobs, "tidal", true, profile), full = Replay1(fabric, jobs, "tidal", false, profile);
    const auto& a = fast.replay.sim->records();
    const auto& b = full.replay.sim->records();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(std::tie(a[i].start_s, a[i].end_s, a[i].domain), std::tie(b[i].start_s, b[i].end_s, b[i].domain))
          << a[i].id << " small=" << small;
      const auto& x = fast.replay.sim->assignments(i);
      const auto& y = full.replay.sim->assignments(i);
      ASSERT_EQ(x.size(), y.size()) << a[i].id;
      for (size_t k = 0; k < x.size(); ++k) {
        EXPECT_EQ(std::tie(x[k].node, x[k].members), std::tie(y[k].node, y[k].members)) << a[i].id;
      }
    }
    std::cerr << "decisions with the shortcuts " << fast.replay.sim->stats().decisions << ", without "
              << full.replay.sim->stats().decisions << "\n";
    // The shortcuts pay: at least 3x fewer decisions.
    EXPECT_LT(3 * fast.replay.sim->stats().decisions, full.replay.sim->stats().decisions);
  }
}

TEST(SimPolicy, JobsThatCanNeverFitAreRejectedNotLeftPending) {
  const ClusterState fabric = Nodes(2);
  std::vector<SimJob> jobs(2);
  jobs[0].w.id = "huge";
  jobs[0].w.members = 4;
  jobs[0].w.min_members = 4;
  jobs[0].w.per_member.gpus = 8;
  jobs[0].duration_s = 10;
  jobs[1].w.id = "ok";
  jobs[1].w.per_member.gpus = 8;
  jobs[1].w.submit_time_s = 1;
  jobs[1].duration_s = 10;
  for (const auto& p : PolicyNames()) {
    Result r = Replay1(fabric, jobs, p);
    EXPECT_TRUE(r.rec("huge").rejected) << p;
    EXPECT_EQ(r.times.at("ok"), (std::pair<int64_t, int64_t>{1, 11})) << p;
  }
}

}  // namespace
}  // namespace tidal::sim

namespace tidal::sim {
namespace {

TEST(SimPolicy, TidalPreemptionEvictsRequeuesAndCountsLostWork) {
  // One node. L (preemptible, priority 0) runs from 0; H (priority 10) arrives at 400, after L's
  // minimum runtime: the preemption plugin evicts L, H runs 400-500, L restarts from scratch.
  const ClusterState fabric = Nodes(1);
  auto t = ParseTrace("id,submit,duration,gpus,priority,preemptible\nL,0,1000,8,0,true\nH,400,100,8,10,false\n",
                      "p.csv", TraceOptions{});
  ASSERT_TRUE(t.ok()) << t.status().Message();
  Result r = Replay1(fabric, t->jobs, "tidal");
  EXPECT_EQ(r.times, (Times{{"L", {500, 1500}}, {"H", {400, 500}}}));
  EXPECT_EQ(r.rec("L").preemptions, 1);
  EXPECT_DOUBLE_EQ(r.rec("L").lost_gpu_seconds, 8.0 * 400);
  const auto m = ComputeMetrics(*r.replay.sim);
  EXPECT_EQ(m["preemptions"].get<int64_t>(), 1);
  EXPECT_NEAR(m["gpu_hours_lost"].get<double>(), 3200.0 / 3600, 1e-3);
  // Baselines never preempt: H waits for L.
  EXPECT_EQ(Replay1(fabric, t->jobs, "fifo").times.at("H"), (std::pair<int64_t, int64_t>{1000, 1100}));
}

// A rejected job never runs, so the metrics and the report say why, per policy: before, a
// --config whose queues did not cover the trace's showed only "0/3 (3 rejected)" for tidal.
TEST(SimPolicy, RejectionsAreReportedWithTheirReasons) {
  const ClusterState fabric = Nodes(1);
  auto t = ParseTrace("id,submit,duration,gpus,queue\na,0,10,1,vc1\nb,1,10,1,vc1\nc,2,10,1,vc2\nd,3,10,64,default\n",
                      "r.csv", TraceOptions{});
  ASSERT_TRUE(t.ok()) << t.status().Message();
  ReplaySpec spec;
  spec.fabric = &fabric;
  spec.jobs = &t->jobs;
  QueueSpec q;
  q.name = "default";
  q.nominal = {kUnlimited, kUnlimited, kUnlimited};
  spec.queues.queues = {q};
  auto tidal = RunPolicy(spec, "tidal", MetricsOptions{false, false});
  ASSERT_TRUE(tidal.ok()) << tidal.status().Message();
  EXPECT_EQ((*tidal)["jobs"]["rejected"].get<int64_t>(), 4);
  const auto& rj = (*tidal)["rejections"];
  ASSERT_EQ(rj.size(), 3u) << rj.dump();
  EXPECT_EQ(rj[0]["jobs"].get<int64_t>(), 2);  // the most frequent reason first
  EXPECT_EQ(rj[0]["first"].get<std::string>(), "a");
  EXPECT_NE(rj[0]["reason"].get<std::string>().find("queue \"vc1\" is not configured"), std::string::npos) << rj.dump();
  auto fifo = RunPolicy(spec, "fifo", MetricsOptions{false, false});  // baselines ignore queues
  ASSERT_TRUE(fifo.ok());
  ASSERT_EQ((*fifo)["rejections"].size(), 1u);
  EXPECT_EQ((*fifo)["rejections"][0]["first"].get<std::string>(), "d");
  EXPECT_NE((*fifo)["rejections"][0]["reason"].get<std::string>().find("can never fit"), std::string::npos);

  nlohmann::json doc = {{"input", nlohmann::json::object()}, {"policies", {*fifo, *tidal}}};
  const std::string md = MarkdownReport(doc);
  EXPECT_NE(md.find("Rejected jobs, why"), std::string::npos) << md;
  EXPECT_NE(md.find("| tidal | 2 | a | queue \"vc1\" is not configured"), std::string::npos) << md;
  EXPECT_NE(md.find("| fifo | 1 | d | can never fit"), std::string::npos) << md;
}

// CPU-only jobs (0 GPUs) are their own size bucket ("0"): they were counted with the 1-GPU jobs,
// whose waits they diluted. The report shows the column only when there are any.
TEST(SimPolicy, CpuOnlyJobsAreTheirOwnSizeBucket) {
  const ClusterState fabric = Nodes(1);
  auto t = ParseTrace("jobs:\n"
                      "  - {name: a, request: {cpu: 2}, submitTime: 0, duration: 10}\n"
                      "  - {name: b, request: {cpu: 2}, submitTime: 1, duration: 10}\n"
                      "  - {name: c, request: {gpus: 1}, submitTime: 2, duration: 10}\n",
                      "c.yaml", TraceOptions{});
  ASSERT_TRUE(t.ok()) << t.status().Message();
  ReplaySpec spec;
  spec.fabric = &fabric;
  spec.jobs = &t->jobs;
  auto fifo = RunPolicy(spec, "fifo", MetricsOptions{false, false});
  ASSERT_TRUE(fifo.ok()) << fifo.status().Message();
  EXPECT_EQ((*fifo)["by_size"]["0"]["jobs"].get<int64_t>(), 2) << (*fifo)["by_size"].dump();
  EXPECT_EQ((*fifo)["by_size"]["1"]["jobs"].get<int64_t>(), 1) << (*fifo)["by_size"].dump();
  const std::string md = MarkdownReport({{"input", nlohmann::json::object()}, {"policies", {*fifo}}});
  EXPECT_NE(md.find("| policy | CPU only | 1 GPU | 2-8 GPUs | 9-64 GPUs | 65+ GPUs |"), std::string::npos) << md;

  auto gpu_only = ParseTrace("id,submit,duration,gpus,queue\nc,2,10,1,default\n", "g.csv", TraceOptions{});
  ASSERT_TRUE(gpu_only.ok());
  spec.jobs = &gpu_only->jobs;
  auto g = RunPolicy(spec, "fifo", MetricsOptions{false, false});
  ASSERT_TRUE(g.ok());
  const std::string md2 = MarkdownReport({{"input", nlohmann::json::object()}, {"policies", {*g}}});
  EXPECT_NE(md2.find("| policy | 1 GPU | 2-8 GPUs | 9-64 GPUs | 65+ GPUs |"), std::string::npos) << md2;
}

// A trace from before a queue was renamed replays under today's config with formerNames: its
// jobs are the renamed queue's (one per-queue row, nothing rejected as an unconfigured queue).
TEST(SimPolicy, JobsOfAFormerQueueNameAreTheRenamedQueues) {
  const ClusterState fabric = Nodes(1);
  auto t = ParseTrace("id,submit,duration,gpus,queue\na,0,10,4,llm\nb,1,10,4,llm\nc,2,10,4,other\n", "r.csv", TraceOptions{});
  ASSERT_TRUE(t.ok()) << t.status().Message();
  QueueConfig queues;
  QueueSpec q;
  q.name = "team-llm";
  q.nominal = {kUnlimited, kUnlimited, kUnlimited};
  q.borrowing_limit = q.lending_limit = q.nominal;
  q.former_names = {"llm"};
  queues.queues = {q};
  std::vector<SimJob> jobs = t->jobs;
  EXPECT_EQ(UseQueueNames(queues, &jobs), 2);
  EXPECT_EQ(jobs[0].w.queue, "team-llm");
  EXPECT_EQ(jobs[2].w.queue, "other");
  ReplaySpec spec;
  spec.fabric = &fabric;
  spec.jobs = &jobs;
  spec.queues = queues;
  auto m = RunPolicy(spec, "tidal", MetricsOptions{false, false});
  ASSERT_TRUE(m.ok()) << m.status().Message();
  EXPECT_EQ((*m)["jobs"]["completed"].get<int64_t>(), 2) << (*m)["rejections"].dump();
  EXPECT_EQ((*m)["jobs"]["rejected"].get<int64_t>(), 1) << "only c: queue other is not configured";
}

}  // namespace
}  // namespace tidal::sim
