// The named steps of one scheduling cycle (core/framework/cycle.h), each on its own where it can
// be: which kept reservations a cycle holds to (KeepReservations), what the search sees of the
// reservations in force (ReservationIndex), where and when the future view reserves (FutureView),
// the order the queue is walked (Cycle::Run), and the victim-search budget and memo (ShapeCache,
// ScheduleOne, RunCycle). Single-threaded, like the cycle.
#include "core/framework/cycle.h"

#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/support/builders.h"

namespace tidal {
namespace {

using testing::DefaultProfile;
using testing::DefaultScheduler;
using testing::FabricState;
using testing::MakeGang;

// One 8-GPU node per entry of `ends`, each wholly held since 0 by a job ("<prefix>-<node>",
// priority 0) expected to end then.
ClusterState Occupied(const std::vector<int64_t>& ends, const std::string& prefix = "run", bool preemptible = false) {
  ClusterState s = FabricState(1, 1, 1, static_cast<int32_t>(ends.size()));
  for (NodeId n = 0; n < s.node_count(); ++n) {
    Workload job = MakeGang(prefix + "-" + std::to_string(n)).Gpus(8).Limit(ends[static_cast<size_t>(n)]).Obj();
    job.preemptible = preemptible;
    EXPECT_TRUE(s.AddRunning(Allocation{std::move(job), {{n, 1}}, 0}).ok());
  }
  return s;
}
// Three nodes whose jobs end at 100, 200 and 300.
ClusterState Busy() { return Occupied({100, 200, 300}); }

Reservation On(std::string id, std::vector<MemberAssignment> at, int64_t start, int64_t gpus = 8) {
  return Reservation{std::move(id), start, std::move(at), Resources{gpus, 0, 0}, start + 1000};
}

std::vector<std::string> Ids(const CycleResult& r) {
  std::vector<std::string> out;
  for (const auto& d : r.decisions) out.push_back(d.workload_id);
  return out;
}

// --- KeepReservations ---------------------------------------------------------------------------

TEST(KeepReservationsTest, KeepsThoseOfTheBatchWhoseNodesAreStillSchedulable) {
  ClusterState s = FabricState(1, 1, 1, 3);
  s.SetHealth(2, NodeHealth::kCordoned);
  const std::map<std::string, Reservation> book = {
      {"kept", On("kept", {{0, 1}, {1, 1}}, 100)},
      {"cordoned", On("cordoned", {{1, 1}, {2, 1}}, 100)},  // node 2 is cordoned
      {"gone", On("gone", {{7, 1}}, 100)},                  // node 7 no longer exists
      {"absent", On("absent", {{0, 1}}, 100)},              // not in this batch
  };
  const Workload kept = MakeGang("kept").Obj(), cordoned = MakeGang("cordoned").Obj(), gone = MakeGang("gone").Obj(),
                 fresh = MakeGang("fresh").Obj();
  const KeptReservations k = KeepReservations(book, {&fresh, &gone, &cordoned, &kept}, s);
  ASSERT_EQ(k.kept.size(), 1u);
  EXPECT_EQ(k.kept.count("kept"), 1u);
  // Every book entry of the batch is "seen" (replaced at the end of the cycle), kept or not; the
  // absent workload's entry is not (the book keeps it for a later batch).
  EXPECT_THAT(k.in_batch, ::testing::UnorderedElementsAre("kept", "cordoned", "gone"));
}

TEST(KeepReservationsTest, AnEmptyBookKeepsNothing) {
  const Workload a = MakeGang("a").Obj();
  const KeptReservations k = KeepReservations({}, {&a}, FabricState(1, 1, 1, 1));
  EXPECT_TRUE(k.kept.empty());
  EXPECT_TRUE(k.in_batch.empty());
}

// --- ReservationIndex ---------------------------------------------------------------------------

TEST(ReservationIndexTest, EarliestStartAndReservedGpusPerNodeWithOwnHiddenRestoredAndLifted) {
  ReservationIndex index(3);
  EXPECT_EQ(index.view(), nullptr) << "no reservations: the search sees no restrictions";
  const Reservation late = On("late", {{0, 1}}, 300, 2), early = On("early", {{0, 1}, {1, 2}}, 100, 3);
  index.Add(late);
  index.Add(early);
  const BackfillView* v = index.view();
  ASSERT_NE(v, nullptr);
  auto from = [&](NodeId n) { return (*v->reserved_from)[static_cast<size_t>(n)]; };
  auto gpus = [&](NodeId n) { return (*v->reserved_gpus)[static_cast<size_t>(n)]; };
  EXPECT_EQ(from(0), 100);
  EXPECT_EQ(gpus(0), 5);
  EXPECT_EQ(from(1), 100);
  EXPECT_EQ(gpus(1), 6);  // two members of 3 GPUs
  EXPECT_EQ(from(2), INT64_MAX);
  EXPECT_EQ(gpus(2), 0);
  EXPECT_EQ(v->latest_start, 300);

  index.Hide(early);  // `early` is being considered: only `late` restricts it
  EXPECT_EQ(from(0), 300);
  EXPECT_EQ(gpus(0), 2);
  EXPECT_EQ(from(1), INT64_MAX);
  index.Restore(early);  // still waiting for room
  EXPECT_EQ(from(0), 100);
  EXPECT_EQ(gpus(1), 6);
  index.Lift(early);  // for good
  EXPECT_EQ(from(0), 300);
  EXPECT_EQ(gpus(0), 2);
  EXPECT_EQ(gpus(1), 0);
  index.Lift(late);
  EXPECT_EQ(from(0), INT64_MAX);
  EXPECT_EQ(index.view(), v) << "the view stays (with no restrictions left)";
  EXPECT_EQ(v->latest_start, 300) << "the latest start only grows within a cycle";
}

// --- FutureView ---------------------------------------------------------------------------------

TEST(FutureViewTest, DepthAndSizeDecideWhoMayReserve) {
  ProfileSpec spec = ProfileSpec::Default();
  const std::map<std::string, Reservation> none;
  const ClusterState s = FabricState(1, 1, 1, 1);  // 8 GPUs a node
  spec.backfill.depth = 0;
  EXPECT_FALSE(FutureView(*DefaultProfile(spec), 0, none).Enabled(0)) << "depth 0: backfill off";
  spec.backfill.depth = 2;
  auto two = DefaultProfile(spec);
  EXPECT_TRUE(FutureView(*two, 0, none).Enabled(1));
  EXPECT_FALSE(FutureView(*two, 0, none).Enabled(2));
  spec.backfill.depth = -1;
  EXPECT_TRUE(FutureView(*DefaultProfile(spec), 0, none).Enabled(1000)) << "depth -1: all";

  FutureView whole_node(*two, 0, none);
  EXPECT_TRUE(whole_node.ReservesFor(s, MakeGang("node").Gpus(8).Obj()));
  EXPECT_FALSE(whole_node.ReservesFor(s, MakeGang("half").Gpus(4).Obj())) << "min_gpus 0 = a whole node's worth";
  spec.backfill.min_gpus = 4;
  EXPECT_TRUE(FutureView(*DefaultProfile(spec), 0, none).ReservesFor(s, MakeGang("half").Gpus(4).Obj()));
}

TEST(FutureViewTest, ReservesAtTheEarliestStartTimeOnlyMovingForward) {
  auto profile = DefaultProfile();
  const std::map<std::string, Reservation> none;
  FutureView future(*profile, 0, none);
  const ClusterState s = Busy();
  CycleState cs;
  PlacementConstraints c;
  c.members = 1;
  const Workload a = MakeGang("a").Gpus(8).Limit(1000).Obj(), b = MakeGang("b").Gpus(8).Limit(1000).Obj();
  auto ra = future.Reserve(s, cs, a, c);
  ASSERT_TRUE(ra.has_value());
  EXPECT_EQ(ra->start_s, 100);
  EXPECT_EQ(ra->end_s, 1100);
  ASSERT_EQ(ra->assignments.size(), 1u);
  EXPECT_EQ(ra->assignments[0].node, 0);
  // `a` is held on node 0 from 100: `b` gets the next node to free.
  auto rb = future.Reserve(s, cs, b, c);
  ASSERT_TRUE(rb.has_value());
  EXPECT_EQ(rb->start_s, 200);
  EXPECT_EQ(rb->assignments[0].node, 1);
  // The view has moved past 100: `a` cannot move earlier than it is.
  EXPECT_FALSE(future.Replan(s, cs, a, c, *ra).has_value());
  EXPECT_EQ(s.running().size(), 3u) << "the live state is never touched";
}

TEST(FutureViewTest, AKeptReservationMovesEarlierWhenRoomFreesSooner) {
  auto profile = DefaultProfile();
  // Kept from an earlier cycle: node 1 at 200. Node 0 frees at 100.
  const std::map<std::string, Reservation> kept = {{"a", On("a", {{1, 1}}, 200)}};
  FutureView future(*profile, 0, kept);
  CycleState cs;
  PlacementConstraints c;
  c.members = 1;
  auto moved = future.Replan(Busy(), cs, MakeGang("a").Gpus(8).Limit(1000).Obj(), c, kept.at("a"));
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->start_s, 100);
  EXPECT_EQ(moved->assignments[0].node, 0);
}

TEST(FutureViewTest, ViewsAliveAtOnceOnOneThreadEachSeeTheirOwnCluster) {
  // The first view built on a thread holds the thread's scratch copy of the cluster (reused by
  // later cycles); another view alive at the same time builds a copy of its own.
  auto profile = DefaultProfile();
  const std::map<std::string, Reservation> none;
  CycleState cs;
  PlacementConstraints c;
  c.members = 1;
  const Workload a = MakeGang("a").Gpus(8).Limit(1000).Obj(), b = MakeGang("b").Gpus(8).Limit(1000).Obj();
  {
    FutureView first(*profile, 0, none), second(*profile, 0, none);
    auto r1 = first.Reserve(Busy(), cs, a, c);  // node 0 frees at 100, node 1 at 200
    auto r2 = second.Reserve(Occupied({500, 50}, "other"), cs, a, c);
    auto r3 = first.Reserve(Busy(), cs, b, c);
    ASSERT_TRUE(r1 && r2 && r3);
    EXPECT_EQ(r1->start_s, 100);
    EXPECT_EQ(r1->assignments[0].node, 0);
    EXPECT_EQ(r2->start_s, 50);
    EXPECT_EQ(r2->assignments[0].node, 1);
    EXPECT_EQ(r3->start_s, 200) << "the first view still sees its own cluster";
    EXPECT_EQ(r3->assignments[0].node, 1);
  }
  // A later view reuses the scratch, rebuilt whole from its own cluster.
  FutureView later(*profile, 0, none);
  auto r = later.Reserve(Occupied({70}, "late"), cs, a, c);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->start_s, 70);
  EXPECT_EQ(r->assignments[0].node, 0);
}

// --- Cycle::Run: the order the queue is walked --------------------------------------------------

TEST(CycleWalkTest, WalksTheWholeQueueInQueueSortOrderTiesById) {
  Scheduler sched = DefaultScheduler();
  ClusterState s = FabricState(1, 1, 1, 2);  // 16 GPUs
  const std::vector<Workload> q = {
      MakeGang("low").Gpus(1).Priority(1).Obj(),
      MakeGang("mid-late").Gpus(1).Priority(5).Submitted(20).Obj(),
      MakeGang("mid-b").Gpus(1).Priority(5).Submitted(10).Obj(),
      MakeGang("mid-a").Gpus(1).Priority(5).Submitted(10).Obj(),
      MakeGang("huge").Members(3).Gpus(8).Priority(9).Obj(),  // never fits: 24 of 16 GPUs
  };
  CycleResult r = sched.RunCycle(s, q, 0);
  EXPECT_EQ(Ids(r), (std::vector<std::string>{"huge", "mid-a", "mid-b", "mid-late", "low"}));
  EXPECT_NE(r.decisions[0].outcome, Outcome::kPlaced);
  for (size_t i = 1; i < r.decisions.size(); ++i) {
    EXPECT_EQ(r.decisions[i].outcome, Outcome::kPlaced) << r.decisions[i].workload_id << " behind a blocked head";
  }
}

// --- The victim-search budget -------------------------------------------------------------------

// Two 8-GPU nodes held by preemptible priority-0 work that has run long enough to be preempted.
ClusterState HeldByLowPriority() { return Occupied({100000, 100000}, "low", true); }
constexpr int64_t kLater = 10000;  // past the preemption plugin's minRuntime

TEST(VictimSearchBudgetTest, AtMostMaxPostfilterAttemptsSearchesPerCycleInQueueOrder) {
  SchedulerOptions opts;
  opts.max_postfilter_attempts = 2;
  Scheduler sched(DefaultProfile(), opts);
  ClusterState s = HeldByLowPriority();
  const std::vector<Workload> q = {MakeGang("hi-c").Gpus(8).Priority(10).Obj(),
                                   MakeGang("hi-a").Gpus(8).Priority(10).Obj(),
                                   MakeGang("hi-b").Gpus(8).Priority(10).Obj()};
  CycleResult r = sched.RunCycle(s, q, kLater);
  ASSERT_EQ(Ids(r), (std::vector<std::string>{"hi-a", "hi-b", "hi-c"}));
  EXPECT_FALSE(r.decisions[0].preemption.victims.empty());
  EXPECT_FALSE(r.decisions[1].preemption.victims.empty());
  EXPECT_TRUE(r.decisions[2].preemption.victims.empty()) << "the budget of 2 is spent";
  EXPECT_EQ(s.running().size(), 2u) << "without apply_preemptions nothing is evicted";
}

TEST(VictimSearchBudgetTest, ScheduleOneCountsSearchesAndSkipsThemOnceSpentOrKnownFruitless) {
  Scheduler sched = DefaultScheduler();
  ClusterState s = HeldByLowPriority();
  const Workload hi = MakeGang("hi").Gpus(8).Priority(10).Obj();

  ShapeCache spent;
  spent.postfilter_attempts = SchedulerOptions{}.max_postfilter_attempts;
  EXPECT_TRUE(sched.ScheduleOne(s, hi, kLater, &spent).preemption.victims.empty());
  EXPECT_EQ(spent.postfilter_attempts, SchedulerOptions{}.max_postfilter_attempts);

  ShapeCache cache;
  EXPECT_FALSE(sched.ScheduleOne(s, hi, kLater, &cache).preemption.victims.empty());
  EXPECT_EQ(cache.postfilter_attempts, 1);
  // Priority 0 cannot preempt priority 0: no victims, remembered for its shape and queue ...
  const Workload peer = MakeGang("peer").Gpus(8).Obj();
  EXPECT_TRUE(sched.ScheduleOne(s, peer, kLater, &cache).preemption.victims.empty());
  EXPECT_EQ(cache.postfilter_attempts, 2);
  // ... so a second of the same shape, queue and no higher priority costs no search; a higher one does.
  EXPECT_TRUE(sched.ScheduleOne(s, MakeGang("peer-2").Gpus(8).Obj(), kLater, &cache).preemption.victims.empty());
  EXPECT_EQ(cache.postfilter_attempts, 2);
  EXPECT_FALSE(sched.ScheduleOne(s, MakeGang("hi-2").Gpus(8).Priority(10).Obj(), kLater, &cache).preemption.victims.empty());
  EXPECT_EQ(cache.postfilter_attempts, 3);
}

TEST(VictimSearchBudgetTest, NoVictimsMemoIsPerQueueUpToTheHighestPriorityTried) {
  ShapeCache cache;
  ShapeCache::Key k;
  k.per_member = Resources{8, 0, 0};
  k.members = k.min_members = 1;
  cache.SetNoVictims(k, 1, 5);
  EXPECT_TRUE(cache.NoVictims(k, 1, 5));
  EXPECT_TRUE(cache.NoVictims(k, 1, 3));
  EXPECT_FALSE(cache.NoVictims(k, 1, 6));
  EXPECT_FALSE(cache.NoVictims(k, 2, 0)) << "another queue may have victims";
  cache.SetNoVictims(k, 1, 2);  // never lowers what is known
  EXPECT_TRUE(cache.NoVictims(k, 1, 5));
  cache.Clear();  // capacity freed: known-fruitless shapes may find victims again
  EXPECT_FALSE(cache.NoVictims(k, 1, 0));
}

TEST(VictimSearchBudgetTest, AppliedEvictionsPlaceThePreemptorAtOnce) {
  SchedulerOptions opts;
  opts.apply_preemptions = true;
  std::vector<std::string> evicted;
  opts.on_evict = [&](const std::string& id, int32_t) { evicted.push_back(id); };
  Scheduler sched(DefaultProfile(), opts);
  ClusterState s = HeldByLowPriority();
  CycleResult r = sched.RunCycle(s, {MakeGang("hi").Gpus(8).Priority(10).Obj()}, kLater);
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_EQ(r.decisions[0].outcome, Outcome::kPlaced) << r.decisions[0].explanation;
  EXPECT_NE(r.decisions[0].explanation.find("after preempting 1 workload(s)"), std::string::npos);
  EXPECT_EQ(evicted.size(), 1u);
  EXPECT_EQ(r.decisions[0].preemption.victims, evicted);
}

// --- SchedulerOptions::explain ------------------------------------------------------------------

// explain = false (the simulator) drops the text of every decision but a rejection's; nothing else.
TEST(ExplainOptionTest, WithoutExplanationsTheCycleDecidesTheSameAndStillSaysWhyARejection) {
  std::mt19937 rng(17);
  for (int round = 0; round < 20; ++round) {
    ClusterState world = FabricState(1, 2, 2, 4);  // 16 nodes of 8 GPUs, nvlink domains of 4
    for (NodeId n = 0; n < world.node_count(); ++n) {
      if (rng() % 3 == 0) continue;
      Workload job = MakeGang("run-" + std::to_string(n)).Gpus(1 + static_cast<int64_t>(rng() % 8)).Limit(50 + rng() % 500).Obj();
      job.preemptible = rng() % 4 == 0;
      ASSERT_TRUE(world.AddRunning(Allocation{std::move(job), {{n, 1}}, 0}).ok());
    }
    std::vector<Workload> pending;
    for (int i = 0; i < 40; ++i) {
      const int64_t gpus = int64_t{1} << (rng() % 4);
      auto g = MakeGang("w" + std::to_string(i)).Gpus(gpus).Members(1 + static_cast<int32_t>(rng() % 6));
      g.Limit(60 + rng() % 900).Priority(static_cast<int32_t>(rng() % 3)).Submitted(static_cast<int64_t>(rng() % 100));
      if (rng() % 5 == 0) g.Required(rng() % 2 ? "nvlink" : "node");  // some can never fit
      if (i % 13 == 0) g.Members(20).Gpus(8);                        // more than the cluster
      pending.push_back(g.Obj());
    }
    std::vector<const Workload*> batch;
    for (const auto& w : pending) batch.push_back(&w);
    auto run = [&](bool explain) {
      SchedulerOptions o;
      o.explain = explain;
      Scheduler s(DefaultProfile(), std::move(o));
      ClusterState st = world;
      return s.RunCycle(st, batch, 10);
    };
    const CycleResult said = run(true), quiet = run(false);
    ASSERT_EQ(said.decisions.size(), quiet.decisions.size());
    int rejected = 0, waiting = 0;
    for (size_t i = 0; i < said.decisions.size(); ++i) {
      const Decision &a = said.decisions[i], &b = quiet.decisions[i];
      SCOPED_TRACE(a.workload_id + ": " + a.explanation);
      EXPECT_EQ(a.workload_id, b.workload_id);
      EXPECT_EQ(a.outcome, b.outcome);
      EXPECT_EQ(a.status.code(), b.status.code());
      EXPECT_EQ(a.eta_s, b.eta_s);
      EXPECT_EQ(a.reserved, b.reserved);
      EXPECT_EQ(a.preemption.victims, b.preemption.victims);
      ASSERT_EQ(a.placement.assignments.size(), b.placement.assignments.size());
      for (size_t k = 0; k < a.placement.assignments.size(); ++k) {
        EXPECT_EQ(a.placement.assignments[k].node, b.placement.assignments[k].node);
        EXPECT_EQ(a.placement.assignments[k].members, b.placement.assignments[k].members);
      }
      EXPECT_FALSE(a.explanation.empty());
      if (a.outcome == Outcome::kRejected) {
        ++rejected;
        EXPECT_EQ(b.explanation, a.explanation) << "a rejection is described either way";
      } else {
        waiting += a.outcome == Outcome::kPending ? 1 : 0;
        EXPECT_EQ(b.explanation, "");
      }
    }
    EXPECT_GT(rejected, 0);
    EXPECT_GT(waiting, 0);
    ASSERT_EQ(said.reservations.size(), quiet.reservations.size());
    for (size_t k = 0; k < said.reservations.size(); ++k) {
      EXPECT_EQ(said.reservations[k].workload, quiet.reservations[k].workload);
      EXPECT_EQ(said.reservations[k].start_s, quiet.reservations[k].start_s);
    }
  }
}

}  // namespace
}  // namespace tidal
