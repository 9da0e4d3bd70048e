// Aging (core/framework/cycle.h AgedFirst, `backfill.agedAfter`): a workload big enough to reserve
// that has waited agedAfter is walked first, oldest first, so a large gang that the queue order
// keeps passing gets the reservation; the rest keep their order. Off by default (0).
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/framework/cycle.h"
#include "core/framework/scheduler.h"
#include "test/support/builders.h"

namespace tidal {
namespace {

using testing::DefaultScheduler;
using testing::FabricState;
using testing::MakeGang;
using testing::Of;

// Three 8-GPU nodes, each running a job started at `t` expected to end at t+100, t+200, t+300.
ClusterState BusyFrom(int64_t t) {
  ClusterState s = FabricState(1, 1, 1, 3);
  for (int i = 0; i < 3; ++i) {
    Workload w = MakeGang("run-" + std::to_string(i)).Gpus(8).Limit(100 * (i + 1)).Obj();
    EXPECT_TRUE(s.AddRunning(Allocation{w, {{static_cast<NodeId>(i), 1}}, t}).ok());
  }
  return s;
}

// EASY depth (1): a 16-GPU gang submitted at 0, and a stream of higher-priority 8-GPU jobs, each
// submitted at the cycle's time. The queue order always puts the newcomer first.
std::vector<Workload> Queue(int64_t now) {
  return {MakeGang("big").Gpus(8).Members(2).Priority(1).Submitted(0).Limit(1000).Obj(),
          MakeGang("small-" + std::to_string(now)).Gpus(8).Priority(10).Submitted(now).Limit(1000).Obj()};
}

TEST(AgingTest, OldCodeStarvesTheLargeGangAgingReservesForIt) {
  const int64_t now = 3600;
  // Without aging the newcomer takes the one reservation at every cycle: the gang never gets one.
  {
    ProfileSpec spec = ProfileSpec::Default();
    spec.backfill.depth = 1;
    spec.backfill.aged_after_s = 0;
    Scheduler sched = DefaultScheduler(spec);
    for (int64_t t : {now, now + 1, now + 2}) {
      ClusterState s = BusyFrom(now);
      CycleResult r = sched.RunCycle(s, Queue(t), t);
      EXPECT_TRUE(Of(r, "small-" + std::to_string(t)).reserved);
      EXPECT_FALSE(Of(r, "big").reserved) << "t=" << t;
      sched.reservation_book()->clear();  // the newcomer started elsewhere; a new one arrives
    }
  }
  // With aging (waited 1h >= agedAfter) the gang is walked first and gets the reservation, at the
  // earliest time two nodes are free (t+200); the newcomer waits without one (depth 1).
  ProfileSpec spec = ProfileSpec::Default();
  spec.backfill.depth = 1;
  spec.backfill.aged_after_s = 3600;
  Scheduler sched = DefaultScheduler(spec);
  ClusterState s = BusyFrom(now);
  CycleResult r = sched.RunCycle(s, Queue(now), now);
  ASSERT_EQ(r.decisions.size(), 2u);
  EXPECT_EQ(r.decisions.front().workload_id, "big") << "aged: walked first";
  EXPECT_TRUE(Of(r, "big").reserved);
  EXPECT_EQ(Of(r, "big").eta_s, now + 200);
  EXPECT_FALSE(Of(r, "small-" + std::to_string(now)).reserved);
  // One second short of agedAfter it is not aged: the queue order holds.
  Scheduler young = DefaultScheduler(spec);
  ClusterState s2 = BusyFrom(now - 1);
  CycleResult r2 = young.RunCycle(s2, Queue(now - 1), now - 1);
  EXPECT_FALSE(Of(r2, "big").reserved);
}

TEST(AgingTest, AgedFirstMovesOnlyAgedReservableWorkOldestFirst) {
  BackfillSpec bf;
  bf.aged_after_s = 100;
  ClusterState s = FabricState(1, 1, 1, 2);  // 8-GPU nodes: reservations from 8 GPUs
  const Workload a = MakeGang("a").Gpus(1).Submitted(0).Obj();             // aged but too small
  const Workload b = MakeGang("b").Gpus(8).Submitted(50).Obj();            // aged, younger
  const Workload c = MakeGang("c").Gpus(8).Members(2).Submitted(10).Obj(); // aged, oldest
  const Workload d = MakeGang("d").Gpus(8).Submitted(150).Obj();           // not aged
  std::vector<const Workload*> q = {&a, &d, &b, &c};
  AgedFirst(bf, s, 200, q);
  std::vector<std::string> ids;
  for (const Workload* w : q) ids.push_back(w->id);
  EXPECT_EQ(ids, (std::vector<std::string>{"c", "b", "a", "d"}));
  bf.aged_after_s = 0;  // off: untouched
  q = {&a, &d, &b, &c};
  AgedFirst(bf, s, 200, q);
  EXPECT_EQ(q.front()->id, "a");
}

TEST(AgingTest, ConfigDefaultsOffAndNamesTheFieldOnError) {
  EXPECT_EQ(ProfileSpec::Default().backfill.aged_after_s, 0);
  auto ok = ProfileSpec::FromJson(nlohmann::json::parse(R"({"backfill": {"agedAfter": "30m"}})"));
  ASSERT_TRUE(ok.ok()) << ok.status().Message();
  EXPECT_EQ(ok->backfill.aged_after_s, 1800);
  auto off = ProfileSpec::FromJson(nlohmann::json::parse(R"({"backfill": {"agedAfter": 0}})"));
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->backfill.aged_after_s, 0);
  auto bad = ProfileSpec::FromJson(nlohmann::json::parse(R"({"backfill": {"agedAfter": -5}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().Message().find("profile.backfill.agedAfter"), std::string::npos) << bad.status().Message();
}

}  // namespace
}  // namespace tidal
