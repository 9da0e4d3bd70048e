// priority plugin: queue order (priority, then submit time, then the framework's id tie-break).
#include "plugins/priority/priority.h"

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/support/builders.h"

namespace tidal::plugins {
namespace {

using tidal::testing::CaseName;
using tidal::testing::MakeGang;

template <typename T>
  requires requires(const T& t) { t.name; }
void PrintTo(const T& c, std::ostream* os) {
  *os << c.name;
}

// A profile whose QueueSort is priority (spelled out, whatever the default profile becomes).
Scheduler PriorityScheduler() { return tidal::testing::DefaultScheduler(tidal::testing::PrioritySpec()); }

struct LessCase {
  std::string name;
  Workload a, b;
  bool a_first;  // Less(a, b)
  bool b_first;  // Less(b, a)
};

class PriorityLessTest : public ::testing::TestWithParam<LessCase> {};

TEST_P(PriorityLessTest, Orders) {
  const PrioritySort sort;
  EXPECT_EQ(sort.Less(GetParam().a, GetParam().b), GetParam().a_first);
  EXPECT_EQ(sort.Less(GetParam().b, GetParam().a), GetParam().b_first);
  EXPECT_FALSE(sort.Less(GetParam().a, GetParam().a)) << "irreflexive";
}

INSTANTIATE_TEST_SUITE_P(
    Table, PriorityLessTest,
    ::testing::Values(
        LessCase{"HigherPriorityFirst", MakeGang("a").Priority(10).Obj(), MakeGang("b").Priority(1).Obj(), true, false},
        LessCase{"PriorityBeatsSubmitTime", MakeGang("a").Priority(2).Submitted(100).Obj(),
                 MakeGang("b").Priority(1).Submitted(0).Obj(), true, false},
        LessCase{"NegativePriorityLast", MakeGang("a").Priority(-5).Obj(), MakeGang("b").Priority(0).Obj(), false, true},
        LessCase{"EarlierSubmitFirstOnTie", MakeGang("a").Priority(3).Submitted(10).Obj(),
                 MakeGang("b").Priority(3).Submitted(20).Obj(), true, false},
        LessCase{"FullTieIsNeither", MakeGang("a").Priority(3).Submitted(10).Obj(),
                 MakeGang("b").Priority(3).Submitted(10).Obj(), false, false},
        LessCase{"IdIsNotConsulted", MakeGang("z").Obj(), MakeGang("a").Obj(), false, false},
        LessCase{"OtherFieldsIgnored", MakeGang("a").Members(64).Gpus(8).Queue("q1").Obj(),
                 MakeGang("b").Members(1).Gpus(1).Queue("q0").Obj(), false, false}),
    CaseName());

TEST(PriorityTest, SchedulerQueueOrder) {
  Scheduler sched = PriorityScheduler();
  std::vector<Workload> q = {MakeGang("late-low").Priority(0).Submitted(50).Obj(),
                             MakeGang("b-tie").Priority(5).Submitted(10).Obj(),
                             MakeGang("early-low").Priority(0).Submitted(5).Obj(),
                             MakeGang("a-tie").Priority(5).Submitted(10).Obj(),
                             MakeGang("urgent").Priority(100).Submitted(99).Obj(),
                             MakeGang("negative").Priority(-1).Submitted(0).Obj()};
  sched.SortQueue(q);
  std::vector<std::string> ids;
  for (const auto& w : q) ids.push_back(w.id);
  EXPECT_THAT(ids, ::testing::ElementsAre("urgent", "a-tie", "b-tie", "early-low", "late-low", "negative"));
}

TEST(PriorityTest, RunCycleDecidesInQueueOrder) {
  // One node: whichever goes first takes it.
  ClusterState s = tidal::testing::FabricState(1, 1, 1, 1);
  Scheduler sched = PriorityScheduler();
  CycleResult r = sched.RunCycle(
      s, {MakeGang("first-come").Gpus(8).Submitted(0).Obj(), MakeGang("important").Gpus(8).Priority(7).Submitted(9).Obj()},
      10);
  ASSERT_EQ(r.decisions.size(), 2u);
  EXPECT_EQ(r.decisions[0].workload_id, "important");
  EXPECT_EQ(r.decisions[0].outcome, Outcome::kPlaced);
  EXPECT_EQ(r.decisions[1].workload_id, "first-come");
  EXPECT_EQ(r.decisions[1].outcome, Outcome::kPending);
}

TEST(PriorityTest, StrictWeakOrderOverRandomQueues) {
  const PrioritySort sort;
  std::vector<Workload> ws;
  for (int p = -1; p <= 1; ++p) {
    for (int t = 0; t < 3; ++t) ws.push_back(MakeGang("w" + std::to_string(ws.size())).Priority(p).Submitted(t).Obj());
  }
  for (const auto& a : ws) {
    for (const auto& b : ws) {
      EXPECT_FALSE(sort.Less(a, b) && sort.Less(b, a)) << a.id << " " << b.id;
      for (const auto& c : ws) {
        if (sort.Less(a, b) && sort.Less(b, c)) {
          EXPECT_TRUE(sort.Less(a, c)) << a.id << " " << b.id << " " << c.id;
        }
      }
    }
  }
}

// SortKey orders exactly as Less (Scheduler::SortQueue and the simulator use the key), and its
// first element is the queue part QueueRank gives: none, 0 for every queue.
TEST(PriorityTest, SortKeyAgreesWithLessAndHasNoQueuePart) {
  const PrioritySort sort;
  std::vector<Workload> ws;
  for (int p = -2; p <= 2; ++p) {
    for (int t = 0; t < 3; ++t) {
      ws.push_back(MakeGang("w" + std::to_string(ws.size())).Priority(p).Submitted(t).Queue(t % 2 ? "a" : "b").Obj());
    }
  }
  for (const auto& a : ws) {
    std::array<int64_t, 3> ka{}, kb{};
    ASSERT_TRUE(sort.SortKey(a, &ka));
    int64_t rank = -1;
    ASSERT_TRUE(sort.QueueRank(a.queue_id, &rank));
    EXPECT_EQ(ka[0], rank);
    for (const auto& b : ws) {
      ASSERT_TRUE(sort.SortKey(b, &kb));
      EXPECT_EQ(ka < kb, sort.Less(a, b)) << a.id << " " << b.id;
    }
  }
}

struct ArgsCase {
  std::string name;
  nlohmann::json args;
  std::string error;
};

class PriorityArgsTest : public ::testing::TestWithParam<ArgsCase> {};

TEST_P(PriorityArgsTest, Validates) {
  auto p = PrioritySort::New(GetParam().args, PluginContext{TopologyLevels::Default()});
  if (GetParam().error.empty()) {
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ((*p)->Name(), "priority");
    EXPECT_NE(dynamic_cast<QueueSortPlugin*>(p->get()), nullptr);
    EXPECT_EQ(dynamic_cast<PreFilterPlugin*>(p->get()), nullptr);
  } else {
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().Message(), GetParam().error);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, PriorityArgsTest,
                         ::testing::Values(ArgsCase{"Empty", nlohmann::json::object(), ""}, ArgsCase{"Null", nullptr, ""},
                                           ArgsCase{"UnknownKey", {{"agingSeconds", 60}},
                                                    "agingSeconds: unknown argument (accepted: none)"},
                                           ArgsCase{"NotAMapping", "fifo", "args must be a mapping"}),
                         CaseName());

}  // namespace
}  // namespace tidal::plugins
