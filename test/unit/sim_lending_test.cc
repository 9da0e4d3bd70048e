// Two pools in the simulator (sim/lending.h): the static partition keeps each door to its pool,
// tidal+lending lends idle nodes to the other door by the engine's rules and reclaims them with
// notice; the figures (per-door queueing delay, windows, reclaim latency, work lost) are exact on
// small hand-made traces, no node ever holds both doors' work, and the tidal policy's shortcuts
// give the same replay with lending as without them.
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "sim/fabric.h"
#include "sim/lending.h"
#include "sim/replay.h"
#include "sim/trace.h"

namespace tidal::sim {
namespace {

// `nodes` nodes of 8 GPUs (one per NVLink domain), the last `slurm_nodes` the Slurm pool's.
ClusterState Pools(int64_t nodes, int64_t slurm_nodes) {
  SyntheticFabric f;
  f.gpus = 8 * nodes;
  f.nodes_per_domain = 1;
  f.fanout = {1, 1};
  ClusterState st = std::move(BuildSyntheticFabric(TopologyLevels::Default(), f)).value();
  EXPECT_TRUE(SplitPools(st, 8 * slurm_nodes).ok());
  return st;
}

SimJob Job(const std::string& id, FrontDoor door, int64_t gpus, int64_t submit, int64_t duration, int64_t limit = 0) {
  SimJob j;
  j.w.id = id;
  j.w.queue = door == FrontDoor::kSlurm ? "hpc" : "ml";
  j.w.front_door = door;
  ShapeFromTotal(gpus, 8, &j.w.members, &j.w.per_member.gpus);
  j.w.min_members = j.w.members;
  j.w.submit_time_s = submit;
  j.w.runtime_limit_s = limit > 0 ? limit : duration;
  j.duration_s = duration;
  return j;
}
constexpr FrontDoor kK8s = FrontDoor::kKubernetes, kSlurm = FrontDoor::kSlurm;

struct Replayed {
  Replay replay;
  nlohmann::json m;
  bool both_sides = false;  // a node ever held both doors' work
  const JobRecord& rec(const std::string& id) const {
    for (const auto& r : replay.sim->records()) {
      if (r.id == id) return r;
    }
    throw std::runtime_error("no job " + id);
  }
  const nlohmann::json& pool(const char* name) const {
    for (const auto& p : m["pools"]["pools"]) {
      if (p["pool"] == name) return p;
    }
    throw std::runtime_error("no pool");
  }
};

Replayed Replay1(const ClusterState& fabric, const std::vector<SimJob>& jobs, const std::string& policy,
            std::vector<LendingPolicy> lending = DefaultSimLending(), bool shortcuts = true) {
  ReplaySpec spec;
  spec.fabric = &fabric;
  spec.jobs = &jobs;
  spec.lending = std::move(lending);
  spec.tidal_shortcuts = shortcuts;
  Replayed r{std::move(MakeReplay(spec, policy)).value(), {}, false};
  bool* both = &r.both_sides;
  r.replay.sim->OnCycle([both](int64_t, const Simulator& sim) {
    std::map<NodeId, std::set<FrontDoor>> doors;
    for (const auto& [id, a] : sim.state().running()) {
      for (const auto& as : a.assignments) doors[as.node].insert(a.workload.front_door);
    }
    for (const auto& [n, d] : doors) *both = *both || d.size() > 1;
  });
  EXPECT_TRUE(r.replay.sim->Start().ok());
  r.replay.sim->Run();
  r.m = ComputeMetrics(*r.replay.sim);
  return r;
}

// Kubernetes backlogged (four 8-GPU jobs of 1000 s on its one node), Slurm idle (two nodes).
std::vector<SimJob> Backlog() {
  std::vector<SimJob> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(Job("k" + std::to_string(i), kK8s, 8, 0, 1000));
  return jobs;
}

TEST(SimLending, StaticPartitionKeepsEachDoorToItsPool) {
  const ClusterState fabric = Pools(3, 2);
  Replayed r = Replay1(fabric, Backlog(), "tidal");
  EXPECT_EQ(r.m["policy"], "tidal");
  EXPECT_EQ(r.rec("k0").start_s, 0);
  EXPECT_EQ(r.rec("k1").start_s, 1000);
  EXPECT_EQ(r.rec("k3").start_s, 3000);  // one at a time on the Kubernetes node
  const auto& slurm = r.pool("slurm");
  EXPECT_EQ(slurm["lends"], 0);
  EXPECT_EQ(slurm["filled_gpu_hours"].get<double>(), 0);
  // Slurm's two nodes sat idle for 4000 s; Kubernetes had 8-24 GPUs waiting they could run:
  // offered = min(16, waiting): 16 GPUs x 2000 s + 8 GPUs x 1000 s, one window of 3000 s.
  EXPECT_NEAR(slurm["idle_gpu_hours"].get<double>(), 16.0 * 4000 / 3600, 1e-3);
  EXPECT_NEAR(slurm["long_windows"]["offered_gpu_hours"].get<double>(), (16.0 * 2000 + 8.0 * 1000) / 3600, 1e-3);
  EXPECT_EQ(slurm["long_windows"]["filled_share"].get<double>(), 0);
  EXPECT_EQ(r.m["pools"]["by_door"]["kubernetes"]["queueing_delay_s"]["avg"].get<double>(), 1500);
  EXPECT_FALSE(r.both_sides);
}

TEST(SimLending, IdleSlurmNodesAreLentAfterIdleSecondsAndFilled) {
  const ClusterState fabric = Pools(3, 2);
  Replayed r = Replay1(fabric, Backlog(), kLendingPolicyName);
  EXPECT_EQ(r.m["policy"], "tidal+lending");
  // The Slurm nodes have been idle since t=0: lent at idleSeconds (60), the backlog starts there.
  EXPECT_EQ(r.rec("k0").start_s, 0);
  EXPECT_EQ(r.rec("k1").start_s, 60);
  EXPECT_EQ(r.rec("k2").start_s, 60);
  EXPECT_EQ(r.rec("k3").start_s, 1000);  // the Kubernetes node again, before a lent one frees
  const auto& slurm = r.pool("slurm");
  EXPECT_EQ(slurm["lends"], 2);
  EXPECT_EQ(slurm["reclaims"], 0);  // Slurm never wanted them back
  EXPECT_NEAR(slurm["filled_gpu_hours"].get<double>(), 16.0 * 1000 / 3600, 1e-3);
  EXPECT_EQ(slurm["lost_gpu_hours"].get<double>(), 0);
  // One window: 16 GPUs offered for the 60 s of hysteresis, then filled for 1000 s (until t=1060,
  // when the backlog is gone): 16000 of 16960 GPU-s.
  EXPECT_NEAR(slurm["long_windows"]["filled_share"].get<double>(), 16000.0 / 16960.0, 1e-4);
  EXPECT_LT(r.m["pools"]["by_door"]["kubernetes"]["queueing_delay_s"]["avg"].get<double>(), 1500);
  EXPECT_FALSE(r.both_sides);
}

TEST(SimLending, OwnerDemandReclaimsWithNoticeAndLeastWorkLostFirst) {
  const ClusterState fabric = Pools(3, 2);
  std::vector<SimJob> jobs = Backlog();
  // A Slurm job for one node at t=500: one loan is reclaimed; its borrower (started at 60, ends
  // at 1060 by its limit, after the 120 s grace cap) is evicted at 620 and the node returned.
  jobs.push_back(Job("s0", kSlurm, 8, 500, 300));
  Replayed r = Replay1(fabric, jobs, kLendingPolicyName);
  const auto& slurm = r.pool("slurm");
  EXPECT_EQ(slurm["reclaims"], 1);
  EXPECT_EQ(slurm["reclaim_evictions"], 1);
  EXPECT_EQ(r.rec("s0").start_s, 620);  // the grace cap after its demand
  EXPECT_EQ(slurm["reclaim_s"]["max"].get<double>(), 120);
  EXPECT_NEAR(slurm["lost_gpu_hours"].get<double>(), 8.0 * 560 / 3600, 1e-3);  // 8 GPUs, 60..620
  int preempted = 0;
  for (const char* k : {"k1", "k2"}) preempted += r.rec(k).preemptions;
  EXPECT_EQ(preempted, 1);
  EXPECT_FALSE(r.both_sides);
}

TEST(SimLending, CheckpointsBoundTheWorkAReclaimLoses) {
  const ClusterState fabric = Pools(3, 2);
  for (const int64_t every : {int64_t{0}, int64_t{200}}) {
    std::vector<SimJob> jobs = Backlog();
    for (auto& j : jobs) {
      j.w.checkpoints_on_notice = every == 0;
      j.w.checkpoint_interval_s = every;
    }
    jobs.push_back(Job("s0", kSlurm, 8, 500, 300));
    Replayed r = Replay1(fabric, jobs, kLendingPolicyName);
    // Evicted at 620 after 560 s: on notice it keeps all of it; every 200 s it keeps 400 s.
    const double lost = every == 0 ? 0.0 : 8.0 * 160;
    EXPECT_NEAR(r.pool("slurm")["lost_gpu_hours"].get<double>(), lost / 3600, 1e-3) << every;
    const JobRecord& victim = r.rec("k1").preemptions > 0 ? r.rec("k1") : r.rec("k2");
    EXPECT_EQ(victim.saved_s, every == 0 ? 560 : 400);
    EXPECT_EQ(victim.end_s - victim.start_s, 1000 - victim.saved_s);  // the rest of its work
    EXPECT_EQ(r.m["jobs"]["completed"], 5);
  }
}

TEST(SimLending, BorrowerEndingWithinTheGraceCapFinishesInstead) {
  const ClusterState fabric = Pools(2, 1);
  // k1 borrows the Slurm node from 60 and declares 100 s; Slurm's job at 100 waits for it to end
  // (160 <= 100 + 120): drain-and-wait, nothing evicted, nothing lost.
  std::vector<SimJob> jobs = {Job("k0", kK8s, 8, 0, 1000), Job("k1", kK8s, 8, 0, 100), Job("s0", kSlurm, 8, 100, 50)};
  Replayed r = Replay1(fabric, jobs, kLendingPolicyName);
  EXPECT_EQ(r.rec("k1").start_s, 60);
  EXPECT_EQ(r.rec("k1").preemptions, 0);
  EXPECT_EQ(r.rec("s0").start_s, 160);
  const auto& slurm = r.pool("slurm");
  EXPECT_EQ(slurm["reclaim_evictions"], 0);
  EXPECT_EQ(slurm["lost_gpu_hours"].get<double>(), 0);
  EXPECT_EQ(slurm["reclaim_s"]["max"].get<double>(), 60);
}

TEST(SimLending, KeepAndPreemptibleOnlyPoliciesHold) {
  const ClusterState fabric = Pools(3, 2);
  LendingPolicy keep;
  keep.pool = "slurm";
  keep.keep_nodes = 1;  // one of the two stays unlent
  keep.preemptible_only = false;
  keep.idle_s = 60;
  Replayed r = Replay1(fabric, Backlog(), kLendingPolicyName, {keep});
  EXPECT_EQ(r.pool("slurm")["lends"], 1);
  keep.keep_nodes = 0;
  keep.preemptible_only = true;  // the backlog is not preemptible: nothing is lent
  Replayed p = Replay1(fabric, Backlog(), kLendingPolicyName, {keep});
  EXPECT_EQ(p.pool("slurm")["lends"], 0);
  std::vector<SimJob> jobs = Backlog();
  for (auto& j : jobs) j.w.preemptible = true;
  Replayed q = Replay1(fabric, jobs, kLendingPolicyName, {keep});
  EXPECT_EQ(q.pool("slurm")["lends"], 2);
}

// Random mixed traffic on both doors: never both sides on one node, and the tidal policy's exact
// shortcuts change nothing with lending either.
TEST(SimLending, RandomTrafficNeverSharesANodeAndShortcutsAreExact) {
  const ClusterState fabric = Pools(12, 6);
  std::mt19937 rng(7);
  std::vector<SimJob> jobs;
  const int64_t sizes[] = {1, 2, 4, 8, 8, 16, 32};
  for (int i = 0; i < 300; ++i) {
    const FrontDoor d = (rng() % 3 == 0) ? kSlurm : kK8s;  // bursts on each side
    const int64_t submit = static_cast<int64_t>(i) * 40 + (d == kSlurm ? 20000 * (i / 100 % 2) : 0);
    const int64_t dur = 60 + static_cast<int64_t>(rng() % 3000);
    jobs.push_back(Job((d == kSlurm ? "s" : "k") + std::to_string(i), d, sizes[rng() % 7], submit, dur,
                       dur * (1 + static_cast<int64_t>(rng() % 3))));
  }
  Replayed fast = Replay1(fabric, jobs, kLendingPolicyName, DefaultSimLending(), true);
  Replayed slow = Replay1(fabric, jobs, kLendingPolicyName, DefaultSimLending(), false);
  EXPECT_FALSE(fast.both_sides);
  EXPECT_GT(fast.pool("slurm")["lends"].get<int64_t>() + fast.pool("kubernetes")["lends"].get<int64_t>(), 0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobRecord &a = fast.replay.sim->records()[i], &b = slow.replay.sim->records()[i];
    ASSERT_EQ(a.start_s, b.start_s) << a.id;
    ASSERT_EQ(a.end_s, b.end_s) << a.id;
    ASSERT_EQ(a.preemptions, b.preemptions) << a.id;
  }
  EXPECT_EQ(fast.m["pools"].dump(), slow.m["pools"].dump());
  EXPECT_EQ(fast.m["jobs"]["completed"], 300);
}

TEST(SimLending, LendingNeedsTwoPools) {
  SyntheticFabric f;
  f.gpus = 16;
  const ClusterState shared = std::move(BuildSyntheticFabric(TopologyLevels::Default(), f)).value();
  const std::vector<SimJob> jobs = Backlog();
  ReplaySpec spec;
  spec.fabric = &shared;
  spec.jobs = &jobs;
  auto r = MakeReplay(spec, kLendingPolicyName);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().Message().find("needs two pools"), std::string::npos);
  ClusterState st = shared;
  EXPECT_FALSE(SplitPools(st, 16).ok());  // Kubernetes would get nothing
  EXPECT_FALSE(SplitPools(st, 0).ok());
  EXPECT_TRUE(ParsePolicies("tidal,tidal+lending").ok());
}

}  // namespace
}  // namespace tidal::sim
