// Preemption and backfill over many cycles, replayed through the simulator with the tidal policy
// (default profile: fairshare, quota, gang, topology, preemption; backfill depth 16).
#include <gtest/gtest.h>

#include "sim/fabric.h"
#include "sim/replay.h"

namespace tidal::sim {
namespace {

ClusterState Fabric(int64_t gpus, int32_t nodes_per_nvlink) {
  SyntheticFabric f;
  f.gpus = gpus;
  f.nodes_per_domain = nodes_per_nvlink;
  f.fanout = {1, 2};
  return std::move(BuildSyntheticFabric(TopologyLevels::Default(), f)).value();
}

SimJob Job(const std::string& id, const std::string& queue, int32_t members, int64_t gpus, int64_t submit,
           int64_t duration, bool preemptible = false) {
  SimJob j;
  j.w.id = id;
  j.w.queue = queue;
  j.w.members = j.w.min_members = members;
  j.w.per_member = Resources{gpus, gpus * 1000, gpus * (int64_t{1} << 30)};
  j.w.submit_time_s = submit;
  j.w.runtime_limit_s = duration;
  j.w.preemptible = preemptible;
  j.duration_s = duration;
  return j;
}

struct Replayed {
  Replay replay;
  const JobRecord& rec(const std::string& id) const {
    for (const auto& r : replay.sim->records()) {
      if (r.id == id) return r;
    }
    throw std::runtime_error("no job " + id);
  }
};

Replayed Replay1(const ClusterState& fabric, const std::vector<SimJob>& jobs, int backfill_depth, QueueConfig queues = {}) {
  ReplaySpec spec;
  spec.fabric = &fabric;
  spec.jobs = &jobs;
  spec.queues = std::move(queues);
  spec.profile.backfill.depth = backfill_depth;
  spec.tidal_shortcuts = false;  // every cycle over the whole queue, as tidal-engine runs it
  Replayed r{std::move(MakeReplay(spec, "tidal")).value()};
  EXPECT_TRUE(r.replay.sim->Start().ok());
  r.replay.sim->Run();
  return r;
}

// A 32-GPU (4 whole nodes) job arrives behind a stream of 1-GPU jobs: with reservations it starts no later than
// its first reserved start; without them the stream keeps every node partly busy and it starves.
TEST(BackfillSim, BigJobBehindStreamStartsByItsReservation) {
  const ClusterState fabric = Fabric(64, 4);  // 8 nodes, kept saturated by the stream
  std::vector<SimJob> jobs;
  for (int i = 0; i < 1500; ++i) jobs.push_back(Job("small-" + std::to_string(i), "q", 1, 1, i * 2, 600 + (i * 37) % 600));
  jobs.push_back(Job("big", "q", 4, 8, 300, 1000));  // 32 GPUs: half the cluster, as whole nodes
  Replayed with = Replay1(fabric, jobs, 16);
  const JobRecord& big = with.rec("big");
  ASSERT_GE(big.start_s, 0);
  ASSERT_GE(big.first_reservation_s, 0) << "the big job was never reserved";
  EXPECT_LE(big.start_s, big.first_reservation_s);
  Replayed without = Replay1(fabric, jobs, 0);
  EXPECT_LT(big.start_s, without.rec("big").start_s) << "reservations should stop the stream from starving it";
}

// No backfilled job ever delays a reservation: every job that was reserved starts by the time of
// its first reservation (equal priorities, one queue, so nothing may legitimately jump ahead).
TEST(BackfillSim, BackfillNeverDelaysAReservation) {
  const ClusterState fabric = Fabric(256, 4);  // 32 nodes
  std::vector<SimJob> jobs;
  for (int i = 0; i < 600; ++i) {
    const int kind = i % 10;
    const int32_t members = kind == 0 ? 8 : kind == 1 ? 4 : 1;
    const int64_t gpus = kind <= 1 ? 8 : 1 + (i % 4);
    jobs.push_back(Job("j" + std::to_string(i), "q", members, gpus, i * 5, 200 + (i * 53) % 1500));
  }
  Replayed r = Replay1(fabric, jobs, 16);
  int reserved = 0;
  for (const auto& rec : r.replay.sim->records()) {
    ASSERT_GE(rec.start_s, 0) << rec.id << " never ran";
    if (rec.first_reservation_s < 0) continue;
    ++reserved;
    EXPECT_LE(rec.start_s, rec.first_reservation_s) << rec.id;
  }
  EXPECT_GT(reserved, 5);
}

// Two queues reclaiming from each other do not loop: b borrows a's idle quota; a comes back and
// reclaims it by preemption; b (now within its guarantee) cannot reclaim back. Every job finishes,
// only b's borrowing jobs are preempted, and none twice.
TEST(BackfillSim, ReclaimingQueuesDoNotLoop) {
  const ClusterState fabric = Fabric(64, 4);  // 8 nodes
  QueueConfig queues;
  for (const char* q : {"a", "b"}) {
    QueueSpec s;
    s.name = q;
    s.nominal = {32, kUnlimited, kUnlimited};
    queues.queues.push_back(s);
  }
  std::vector<SimJob> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back(Job("b-" + std::to_string(i), "b", 1, 8, 0, 5000, true));
  for (int i = 0; i < 8; ++i) jobs.push_back(Job("a-" + std::to_string(i), "a", 1, 8, 1000, 5000, true));
  Replayed r = Replay1(fabric, jobs, 16, queues);
  int preempted = 0;
  for (const auto& rec : r.replay.sim->records()) {
    EXPECT_GE(rec.end_s, 0) << rec.id << " never finished";
    EXPECT_LE(rec.preemptions, 1) << rec.id << " preempted more than once";
    if (rec.preemptions > 0) {
      ++preempted;
      EXPECT_EQ(rec.queue, "b") << "only the borrower is reclaimed from";
    }
  }
  EXPECT_EQ(preempted, 4);  // b held 64 GPUs with a nominal of 32: four 8-GPU jobs were borrowed
  // a got its guarantee back at once (t = 1000), not after b's jobs ended.
  int a_started_at_1000 = 0;
  for (const auto& rec : r.replay.sim->records()) a_started_at_1000 += rec.queue == "a" && rec.start_s == 1000;
  EXPECT_EQ(a_started_at_1000, 4);
}

}  // namespace
}  // namespace tidal::sim
