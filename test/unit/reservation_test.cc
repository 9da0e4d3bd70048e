// Kept reservations (core/framework/scheduler.h): a reservation made in one cycle holds its nodes
// and start in the next (it may only move earlier, unless it is overdue and cannot start), starts
// there when due, and `backfill.depth` bounds the reservations in force (kept ones count once; one
// that started frees its place at once).
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/framework/scheduler.h"
#include "test/support/builders.h"

namespace tidal {
namespace {

using testing::DefaultScheduler;
using testing::FabricState;
using testing::MakeGang;
using testing::Of;

// Three 8-GPU nodes, each running a job that ends at 100, 200 and 300.
ClusterState Busy() {
  ClusterState s = FabricState(1, 1, 1, 3);
  for (int i = 0; i < 3; ++i) {
    Workload w = MakeGang("run-" + std::to_string(i)).Gpus(8).Limit(100 * (i + 1)).Obj();
    EXPECT_TRUE(s.AddRunning(Allocation{w, {{static_cast<NodeId>(i), 1}}, 0}).ok());
  }
  return s;
}

TEST(KeptReservationTest, HeldAcrossCyclesStartedWhenDueAndDepthCountsThoseInForce) {
  ProfileSpec spec = ProfileSpec::Default();
  spec.backfill.depth = 2;
  Scheduler sched = DefaultScheduler(spec);
  ClusterState s = Busy();
  const std::vector<Workload> q = {MakeGang("a").Gpus(8).Priority(10).Limit(1000).Obj(),
                                   MakeGang("b").Gpus(8).Priority(9).Limit(1000).Obj(),
                                   MakeGang("c").Gpus(8).Priority(8).Limit(1000).Obj()};
  CycleResult r0 = sched.RunCycle(s, q, 0);
  EXPECT_TRUE(Of(r0, "a").reserved);
  EXPECT_EQ(Of(r0, "a").eta_s, 100);
  EXPECT_TRUE(Of(r0, "b").reserved);
  EXPECT_EQ(Of(r0, "b").eta_s, 200);
  EXPECT_FALSE(Of(r0, "c").reserved) << "depth 2 is reached";
  ASSERT_EQ(r0.reservations.size(), 2u);

  // A second cycle at the same time changes nothing: both kept, counted once each.
  CycleResult r1 = sched.RunCycle(s, q, 0);
  EXPECT_EQ(Of(r1, "a").eta_s, 100);
  EXPECT_EQ(Of(r1, "b").eta_s, 200);
  EXPECT_FALSE(Of(r1, "c").reserved);
  EXPECT_EQ(r1.reservations.size(), 2u);
  EXPECT_EQ(sched.reservation_book()->size(), 2u);

  // At 100 node 0 frees: `a` starts there, on its reservation, and its place in the depth goes to
  // `c` in the same cycle. `b` keeps its node and start.
  ASSERT_TRUE(s.RemoveRunning("run-0").ok());
  CycleResult r2 = sched.RunCycle(s, q, 100);
  ASSERT_EQ(Of(r2, "a").outcome, Outcome::kPlaced);
  EXPECT_EQ(s.running().at("a").assignments.front().node, 0);
  EXPECT_TRUE(Of(r2, "b").reserved);
  EXPECT_EQ(Of(r2, "b").eta_s, 200);
  EXPECT_TRUE(Of(r2, "c").reserved);
  EXPECT_EQ(Of(r2, "c").eta_s, 300);
  ASSERT_EQ(r2.reservations.size(), 2u);
  EXPECT_EQ(sched.reservation_book()->count("a"), 0u);
}

TEST(KeptReservationTest, NewcomerCannotTakeAKeptReservationsNodes) {
  ProfileSpec spec = ProfileSpec::Default();
  spec.backfill.depth = 1;
  Scheduler sched = DefaultScheduler(spec);
  ClusterState s = Busy();
  std::vector<Workload> q = {MakeGang("a").Gpus(8).Priority(1).Limit(1000).Obj()};
  CycleResult r0 = sched.RunCycle(s, q, 0);
  ASSERT_TRUE(Of(r0, "a").reserved);
  ASSERT_EQ(Of(r0, "a").eta_s, 100);
  // A higher-priority job arrives; at 100 node 0 frees. The kept reservation wins the node.
  q.push_back(MakeGang("urgent").Gpus(8).Priority(50).Limit(1000).Obj());
  ASSERT_TRUE(s.RemoveRunning("run-0").ok());
  CycleResult r1 = sched.RunCycle(s, q, 100);
  EXPECT_EQ(Of(r1, "a").outcome, Outcome::kPlaced);
  EXPECT_EQ(Of(r1, "urgent").outcome, Outcome::kPending);
}

TEST(KeptReservationTest, MovesEarlierWhenWorkEndsSoonerNeverLater) {
  ProfileSpec spec = ProfileSpec::Default();
  spec.backfill.depth = 1;
  Scheduler sched = DefaultScheduler(spec);
  ClusterState s = Busy();
  const std::vector<Workload> q = {MakeGang("pair").Members(2).Gpus(8).Limit(1000).Obj()};
  CycleResult r0 = sched.RunCycle(s, q, 0);
  ASSERT_TRUE(Of(r0, "pair").reserved);
  EXPECT_EQ(Of(r0, "pair").eta_s, 200);  // nodes 0 and 1
  // run-1 (expected to end at 200) ends at 50: node 0 frees at 100, so the pair can start then.
  ASSERT_TRUE(s.RemoveRunning("run-1").ok());
  CycleResult r1 = sched.RunCycle(s, q, 50);
  ASSERT_EQ(Of(r1, "pair").outcome, Outcome::kPending);
  EXPECT_TRUE(Of(r1, "pair").reserved);
  EXPECT_EQ(Of(r1, "pair").eta_s, 100);
  // A job that would delay it cannot start on node 1 meanwhile; the reservation stays at 100.
  std::vector<Workload> q2 = q;
  q2.push_back(MakeGang("long").Gpus(8).Priority(-1).Limit(5000).Obj());
  CycleResult r2 = sched.RunCycle(s, q2, 60);
  EXPECT_EQ(Of(r2, "pair").eta_s, 100);
  EXPECT_EQ(Of(r2, "long").outcome, Outcome::kPending);
  // At 100 it starts on its nodes.
  ASSERT_TRUE(s.RemoveRunning("run-0").ok());
  CycleResult r3 = sched.RunCycle(s, q2, 100);
  EXPECT_EQ(Of(r3, "pair").outcome, Outcome::kPlaced);
}

TEST(KeptReservationTest, OverdueReservationWhoseNodesAreTakenIsReplannedLater) {
  ProfileSpec spec = ProfileSpec::Default();
  spec.backfill.depth = 1;
  Scheduler sched = DefaultScheduler(spec);
  ClusterState s = Busy();
  const std::vector<Workload> q = {MakeGang("a").Gpus(8).Limit(1000).Obj()};
  CycleResult r0 = sched.RunCycle(s, q, 0);
  ASSERT_EQ(Of(r0, "a").eta_s, 100);  // node 0
  // At 100 node 0's job is gone, but work this scheduler did not place (another scheduler, or a
  // pod past its declared runtime) holds node 0 until 600. Node 1 frees at 200.
  ASSERT_TRUE(s.RemoveRunning("run-0").ok());
  Workload other = MakeGang("other").Gpus(8).Limit(500).Obj();
  ASSERT_TRUE(s.AddRunning(Allocation{other, {{0, 1}}, 100}).ok());
  CycleResult r1 = sched.RunCycle(s, q, 100);
  ASSERT_EQ(Of(r1, "a").outcome, Outcome::kPending);
  EXPECT_TRUE(Of(r1, "a").reserved);
  EXPECT_EQ(Of(r1, "a").eta_s, 200) << "an overdue reservation that cannot start is re-planned";
  ASSERT_EQ(r1.reservations.size(), 1u);
  EXPECT_EQ(r1.reservations[0].assignments.front().node, 1);
}

// The engine's book refresh runs cycles for their reservations only (keep_decisions = false),
// which stop walking the queue once nothing later can change the book. Over busy cycles with
// reservations kept, started, moved and dropped, that book is the one a full walk leaves.
TEST(KeptReservationTest, AReservationsOnlyCycleLeavesTheBookAFullWalkLeaves) {
  ProfileSpec spec = ProfileSpec::Default();
  spec.backfill.depth = 3;
  SchedulerOptions lean;
  lean.keep_decisions = false;
  Scheduler full(testing::DefaultProfile(spec));
  Scheduler book_only(testing::DefaultProfile(spec), lean);
  ClusterState s = FabricState(1, 2, 2, 4);  // 16 nodes x 8 GPUs
  for (int i = 0; i < 16; ++i) {
    Workload w = MakeGang("run-" + std::to_string(i)).Gpus(8 - i % 3).Limit(50 * (i % 7 + 1)).Obj();
    ASSERT_TRUE(s.AddRunning(Allocation{w, {{static_cast<NodeId>(i), 1}}, 0}).ok());
  }
  std::vector<Workload> q;
  for (int i = 0; i < 400; ++i) {
    const int32_t members = i % 11 == 0 ? 4 : i % 5 == 0 ? 2 : 1;
    q.push_back(MakeGang("p" + std::to_string(i)).Members(members).Gpus(i % 4 == 0 ? 8 : 1 + i % 3)
                    .Priority(i % 13 == 0 ? 5 : 0).Submitted(i).Limit(40 + 17 * (i % 9)).Obj());
  }
  int stopped_early = 0;
  for (int64_t now = 0; now <= 400; now += 25) {
    for (const auto& [id, a] : std::map<std::string, Allocation>(s.running().begin(), s.running().end())) {
      if (a.start_time_s + a.workload.runtime_limit_s <= now) {
        ASSERT_TRUE(s.RemoveRunning(id).ok());
      }
    }
    ClusterState lean_state = s;
    CycleResult r = full.RunCycle(s, q, now);
    CycleResult l = book_only.RunCycle(lean_state, q, now);
    EXPECT_TRUE(l.decisions.empty());
    const auto& a = *full.reservation_book();
    const auto& b = *book_only.reservation_book();
    ASSERT_EQ(a.size(), b.size()) << "t=" << now;
    for (const auto& [id, res] : a) {
      auto it = b.find(id);
      ASSERT_NE(it, b.end()) << id << " t=" << now;
      EXPECT_EQ(it->second.start_s, res.start_s) << id << " t=" << now;
      EXPECT_EQ(it->second.end_s, res.end_s) << id;
      ASSERT_EQ(it->second.assignments.size(), res.assignments.size()) << id;
      for (size_t k = 0; k < res.assignments.size(); ++k) {
        EXPECT_EQ(it->second.assignments[k].node, res.assignments[k].node) << id;
        EXPECT_EQ(it->second.assignments[k].members, res.assignments[k].members) << id;
      }
    }
    if (lean_state.running().size() < s.running().size()) ++stopped_early;
    // The queue moves on: what the full walk placed leaves it.
    std::erase_if(q, [&](const Workload& w) { return s.running().count(w.id) > 0; });
  }
  EXPECT_GT(stopped_early, 0) << "the reservations-only walk never stopped early (nothing measured)";
}

}  // namespace
}  // namespace tidal
