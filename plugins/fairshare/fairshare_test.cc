// fairshare plugin: hierarchical fair-share ranks (whatever order the config lists the queues in),
// weights, ties, and the queue order Less / SortKey give.
#include "plugins/fairshare/fairshare.h"

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

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

constexpr int64_t kCapacityGpus = 64;

QueueSpec Q(std::string name, std::string parent = "", double weight = 1) {
  QueueSpec q;
  q.name = std::move(name);
  q.parent = std::move(parent);
  q.weight = weight;
  return q;  // nominal, borrowing and lending limits: unlimited (Build fills them)
}

// A ledger over `queues` (in this order) with `gpus` charged to each named leaf.
std::unique_ptr<QuotaLedger> Ledger(const std::vector<QueueSpec>& queues, const std::map<std::string, int64_t>& gpus) {
  QueueConfig cfg;
  cfg.queues = queues;
  cfg.default_half_life_s = 3600;
  auto l = std::make_unique<QuotaLedger>(std::move(QueueTree::Build(cfg)).value());
  l->SetCapacity({kCapacityGpus, 1000000, int64_t{1} << 50});
  for (const auto& [q, g] : gpus) {
    EXPECT_TRUE(l->Charge("run-" + q, l->tree().Find(q), {g, 0, 0}, false).ok()) << q;
  }
  return l;
}

// ---- Ranks under every permutation of the config's queue order.

struct RankCase {
  std::string name;
  std::vector<QueueSpec> queues;
  std::map<std::string, int64_t> gpus;
  // Leaves in fair-share order; the leaves of one inner list share a rank.
  std::vector<std::vector<std::string>> order;
};

class FairShareRankTest : public ::testing::TestWithParam<RankCase> {};

TEST_P(FairShareRankTest, SameLeafOrderForEveryListingOrder) {
  const RankCase& c = GetParam();
  std::vector<size_t> perm(c.queues.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  int permutations = 0;
  do {
    std::vector<QueueSpec> listed;
    std::string listing;
    for (size_t i : perm) {
      listed.push_back(c.queues[i]);
      listing += (listing.empty() ? "" : ", ") + c.queues[i].name;
    }
    SCOPED_TRACE("queues listed as [" + listing + "]");
    auto l = Ledger(listed, c.gpus);
    FairShare fs(l.get());
    fs.PrepareSort();
    auto rank_of = [&](const std::string& q) {
      std::array<int64_t, 3> key{};
      EXPECT_TRUE(fs.SortKey(MakeGang("w").Queue(q).Obj(), &key));
      return key[0];
    };
    int64_t prev = -1;
    for (const auto& group : c.order) {
      const int64_t r = rank_of(group.front());
      EXPECT_GT(r, prev) << group.front() << " must rank after the leaves listed before it";
      for (const auto& q : group) EXPECT_EQ(rank_of(q), r) << q << " ties with " << group.front();
      prev = r;
    }
    ++permutations;
  } while (std::next_permutation(perm.begin(), perm.end()));
  EXPECT_GE(permutations, 6);
}

INSTANTIATE_TEST_SUITE_P(
    Table, FairShareRankTest,
    ::testing::Values(
        // org = 12 GPUs vs solo = 6: solo first; inside org, teamB (4) before teamA (8).
        RankCase{"TeamsUnderOrgAndASoloQueue",
                 {Q("teamA", "org"), Q("org"), Q("teamB", "org"), Q("solo")},
                 {{"teamA", 8}, {"teamB", 4}, {"solo", 6}},
                 {{"solo"}, {"teamB"}, {"teamA"}}},
        // x1 uses least of all, but its org uses more than orgY: the common ancestor decides.
        RankCase{"CousinsCompareAtTheirCommonAncestor",
                 {Q("x1", "orgX"), Q("orgX"), Q("y1", "orgY"), Q("x2", "orgX"), Q("orgY")},
                 {{"x1", 1}, {"x2", 20}, {"y1", 10}},
                 {{"y1"}, {"x1"}, {"x2"}}},
        RankCase{"EqualSiblingsTie",
                 {Q("teamA", "org"), Q("org"), Q("teamB", "org"), Q("solo")},
                 {{"teamA", 4}, {"teamB", 4}, {"solo", 16}},
                 {{"teamA", "teamB"}, {"solo"}}},
        // Equal at every level (orgs 4 = 4, each leaf 2): all four leaves tie.
        RankCase{"EqualAtEveryLevelTiesAcrossOrgs",
                 {Q("x1", "orgX"), Q("y2", "orgY"), Q("orgX"), Q("y1", "orgY"), Q("x2", "orgX"), Q("orgY")},
                 {{"x1", 2}, {"x2", 2}, {"y1", 2}, {"y2", 2}},
                 {{"x1", "x2", "y1", "y2"}}},
        // orgX = solo at the root, but x1 is one level deeper: no tie; the name breaks it.
        RankCase{"EqualSharesAtDifferentDepthsOrderByName",
                 {Q("solo"), Q("x1", "orgX"), Q("orgX")},
                 {{"x1", 4}, {"solo", 4}},
                 {{"x1"}, {"solo"}}},
        // Weights 1:3 at equal usage: the weight-3 queue has a third of the share and goes first.
        RankCase{"WeightThreeBeforeWeightOneAtEqualUsage",
                 {Q("light", "org", 1), Q("org"), Q("heavy", "org", 3)},
                 {{"light", 8}, {"heavy", 8}},
                 {{"heavy"}, {"light"}}},
        // 8/1 vs 12/3: the weight-3 queue still goes first with more GPUs.
        RankCase{"WeightsOneToThreeOutweighUsage",
                 {Q("light", "", 1), Q("heavy", "", 3), Q("idle")},
                 {{"light", 8}, {"heavy", 12}},
                 {{"idle"}, {"heavy"}, {"light"}}},
        // 8/1 vs 28/3 (= 9.33): now the weight-1 queue goes first.
        RankCase{"WeightsOneToThreeBeyondTheirRatio",
                 {Q("light", "", 1), Q("heavy", "", 3), Q("idle")},
                 {{"light", 8}, {"heavy", 28}},
                 {{"idle"}, {"light"}, {"heavy"}}}),
    CaseName());

// ---- Less and SortKey.

struct LessCase {
  std::string name;
  std::map<std::string, int64_t> gpus;  // charged per leaf of org{teamA, teamB}, solo
  Workload a, b;
  bool a_first, b_first;
};

class FairShareLessTest : public ::testing::TestWithParam<LessCase> {};

TEST_P(FairShareLessTest, Orders) {
  const LessCase& c = GetParam();
  auto l = Ledger({Q("org"), Q("teamA", "org"), Q("teamB", "org"), Q("solo")}, c.gpus);
  FairShare fs(l.get());
  fs.PrepareSort();
  EXPECT_EQ(fs.Less(c.a, c.b), c.a_first);
  EXPECT_EQ(fs.Less(c.b, c.a), c.b_first);
  EXPECT_FALSE(fs.Less(c.a, c.a)) << "irreflexive";
  std::array<int64_t, 3> ka{}, kb{};
  ASSERT_TRUE(fs.SortKey(c.a, &ka));
  ASSERT_TRUE(fs.SortKey(c.b, &kb));
  EXPECT_EQ(ka < kb, c.a_first) << "SortKey agrees with Less";
  EXPECT_EQ(kb < ka, c.b_first) << "SortKey agrees with Less";
}

INSTANTIATE_TEST_SUITE_P(
    Table, FairShareLessTest,
    ::testing::Values(
        LessCase{"LowerShareQueueBeatsPriority", {{"teamA", 8}, {"teamB", 2}},
                 MakeGang("a").Queue("teamA").Priority(100).Obj(), MakeGang("b").Queue("teamB").Obj(), false, true},
        LessCase{"EqualUsageFallsThroughToPriority", {{"teamA", 4}, {"teamB", 4}},
                 MakeGang("a").Queue("teamA").Priority(1).Obj(), MakeGang("b").Queue("teamB").Priority(5).Obj(), false,
                 true},
        LessCase{"EqualUsageAndPriorityEarlierSubmitFirst", {{"teamA", 4}, {"teamB", 4}},
                 MakeGang("a").Queue("teamA").Submitted(10).Obj(), MakeGang("b").Queue("teamB").Submitted(20).Obj(),
                 true, false},
        LessCase{"SameQueueHigherPriorityFirst", {{"teamA", 4}},
                 MakeGang("a").Queue("teamA").Priority(1).Obj(), MakeGang("b").Queue("teamA").Priority(2).Obj(), false,
                 true},
        LessCase{"FullTieIsNeither", {{"teamA", 4}, {"teamB", 4}},
                 MakeGang("a").Queue("teamA").Submitted(5).Obj(), MakeGang("b").Queue("teamB").Submitted(5).Obj(),
                 false, false},
        LessCase{"OrgSubtreeComparedWhole", {{"teamA", 1}, {"teamB", 30}, {"solo", 16}},
                 MakeGang("a").Queue("teamA").Obj(), MakeGang("b").Queue("solo").Obj(), false, true},
        LessCase{"UnknownQueueAfterEveryLeaf", {{"solo", 60}},
                 MakeGang("a").Queue("ghost").Priority(100).Obj(), MakeGang("b").Queue("solo").Obj(), false, true},
        LessCase{"InnerQueueAfterEveryLeaf", {{"teamA", 60}},
                 MakeGang("a").Queue("org").Priority(100).Obj(), MakeGang("b").Queue("teamA").Obj(), false, true},
        LessCase{"UnknownAndInnerQueuesTie", {},
                 MakeGang("a").Queue("ghost").Priority(1).Obj(), MakeGang("b").Queue("org").Priority(2).Obj(), false,
                 true}),
    CaseName());

// QueueRank is SortKey's queue part (the simulator keeps each queue's order across events by it):
// for every queue, inner and unknown ones too, the key's first element is the rank of the
// workload's queue_id, and the other two do not depend on the queue.
TEST(FairShare, QueueRankIsTheQueuePartOfSortKey) {
  auto l = Ledger({Q("org"), Q("teamA", "org"), Q("teamB", "org"), Q("solo")}, {{"teamA", 8}, {"teamB", 2}, {"solo", 5}});
  FairShare fs(l.get());
  fs.PrepareSort();
  std::array<int64_t, 3> first{};
  ASSERT_TRUE(fs.SortKey(MakeGang("x").Queue("solo").Priority(2).Submitted(7).Obj(), &first));
  std::set<int64_t> ranks;
  for (const std::string q : {"org", "teamA", "teamB", "solo", "ghost"}) {
    Workload w = MakeGang("w").Queue(q).Priority(2).Submitted(7).Obj();
    w.queue_id = l->tree().Find(q);
    std::array<int64_t, 3> key{};
    int64_t rank = -1;
    ASSERT_TRUE(fs.SortKey(w, &key));
    ASSERT_TRUE(fs.QueueRank(w.queue_id, &rank));
    EXPECT_EQ(key[0], rank) << q;
    EXPECT_EQ(key[1], first[1]) << q;
    EXPECT_EQ(key[2], first[2]) << q;
    ranks.insert(rank);
  }
  EXPECT_GE(ranks.size(), 4u) << "the three leaves rank apart, unknown and inner queues after them";
  FairShare none(nullptr);
  none.PrepareSort();
  int64_t rank = -1;
  ASSERT_TRUE(none.QueueRank(3, &rank));
  EXPECT_EQ(rank, 0) << "without a ledger, no queue part";
}

TEST(FairShare, DecayedUsageHistoryCounts) {
  // teamA ran 8 GPUs for one half-life and stopped; teamB runs 1 GPU now. teamA's blended share
  // (0.5 x 4 GPUs average rate) is above teamB's (0.5 x 1): teamB first.
  auto l = Ledger({Q("org"), Q("teamA", "org"), Q("teamB", "org")}, {});
  l->Advance(0);
  ASSERT_TRUE(l->Charge("old", l->tree().Find("teamA"), {8, 0, 0}, false).ok());
  l->Advance(3600);
  l->Uncharge("old");
  ASSERT_TRUE(l->Charge("now", l->tree().Find("teamB"), {1, 0, 0}, false).ok());
  FairShare fs(l.get());
  fs.PrepareSort();
  EXPECT_TRUE(fs.Less(MakeGang("b").Queue("teamB").Obj(), MakeGang("a").Queue("teamA").Obj()));
  EXPECT_FALSE(fs.Less(MakeGang("a").Queue("teamA").Obj(), MakeGang("b").Queue("teamB").Obj()));
}

TEST(FairShare, WithoutALedgerOrdersByPriorityThenSubmitTime) {
  FairShare fs(nullptr);
  fs.PrepareSort();
  EXPECT_TRUE(fs.Less(MakeGang("a").Queue("x").Priority(2).Obj(), MakeGang("b").Queue("y").Priority(1).Obj()));
  EXPECT_TRUE(fs.Less(MakeGang("a").Submitted(1).Obj(), MakeGang("b").Submitted(2).Obj()));
  std::array<int64_t, 3> k{};
  EXPECT_TRUE(fs.SortKey(MakeGang("a").Priority(3).Obj(), &k));
  EXPECT_EQ(k[1], -3);
}

// Property: over random workloads of every queue (and unknown ones), Less is a strict weak order
// and sorting by SortKey gives the same order as sorting by Less.
TEST(FairShare, LessIsAStrictWeakOrderMatchingSortKey) {
  auto l = Ledger({Q("teamA", "org"), Q("org"), Q("teamB", "org"), Q("solo"), Q("x1", "deep"), Q("deep", "org")},
                  {{"teamA", 4}, {"teamB", 4}, {"solo", 8}, {"x1", 2}});
  FairShare fs(l.get());
  fs.PrepareSort();
  const std::vector<std::string> queues = {"teamA", "teamB", "solo", "x1", "org", "ghost"};
  std::mt19937 rng(11);
  std::vector<Workload> ws;
  for (int i = 0; i < 60; ++i) {
    ws.push_back(MakeGang("w" + std::to_string(i))
                     .Queue(queues[rng() % queues.size()])
                     .Priority(static_cast<int32_t>(rng() % 3))
                     .Submitted(static_cast<int64_t>(rng() % 4))
                     .Obj());
  }
  for (const auto& a : ws) {
    for (const auto& b : ws) {
      const bool equiv_ab = !fs.Less(a, b) && !fs.Less(b, a);
      for (const auto& c : ws) {
        if (fs.Less(a, b) && fs.Less(b, c)) {
          ASSERT_TRUE(fs.Less(a, c)) << a.id << " " << b.id << " " << c.id;
        }
        const bool equiv_bc = !fs.Less(b, c) && !fs.Less(c, b);
        if (equiv_ab && equiv_bc) {
          ASSERT_TRUE(!fs.Less(a, c) && !fs.Less(c, a)) << a.id << " " << b.id << " " << c.id;
        }
      }
    }
  }
  auto by_less = ws, by_key = ws;
  std::sort(by_less.begin(), by_less.end(), [&](const Workload& a, const Workload& b) {
    if (fs.Less(a, b)) return true;
    if (fs.Less(b, a)) return false;
    return a.id < b.id;
  });
  std::sort(by_key.begin(), by_key.end(), [&](const Workload& a, const Workload& b) {
    std::array<int64_t, 3> ka{}, kb{};
    EXPECT_TRUE(fs.SortKey(a, &ka) && fs.SortKey(b, &kb));
    return ka != kb ? ka < kb : a.id < b.id;
  });
  for (size_t i = 0; i < ws.size(); ++i) EXPECT_EQ(by_less[i].id, by_key[i].id) << i;
}

}  // namespace
}  // namespace tidal::plugins
