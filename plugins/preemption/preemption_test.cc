// preemption plugin: who may be a victim (priority, reclaim, queues' current borrowing, never below
// nominal, terminating work), in which order, elastic shrinks, and the domain it frees. The plugin
// is called directly with a GPU-only stand-in for the profile's search.
#include "plugins/preemption/preemption.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/state/cluster_state.h"
#include "test/support/builders.h"

namespace tidal::plugins {
namespace {

using ::testing::UnorderedElementsAreArray;
using tidal::testing::CaseName;
using tidal::testing::MakeGang;

template <typename T>
  requires requires(const T& t) { t.name; }
void PrintTo(const T& c, std::ostream* os) {
  *os << c.name;
}

constexpr int64_t kNow = 10000;

// A running workload: one 8-GPU member on each listed node.
struct Job {
  std::string id = {};
  std::string queue = "default";
  std::vector<std::string> nodes = {};
  int32_t priority = 0;
  bool preemptible = true;
  int64_t start = 0;
  int32_t min_members = 0;  // 0 = all members (not elastic)
  int64_t checkpoint = 0;   // checkpoint interval in seconds
  bool terminating = false;
  bool borrowed = false;    // the flag frozen at admission (Allocation::borrowed and the charge's)
};

// Holds a node with work of no configured queue that nobody may preempt.
Job Other(std::string node) {
  return Job{.id = "other-" + node, .queue = "", .nodes = {std::move(node)}, .priority = 1000, .preemptible = false};
}

QueueSpec Q(std::string name, int64_t nominal_gpus) {
  QueueSpec q;
  q.name = std::move(name);
  q.nominal = {nominal_gpus, kUnlimited, kUnlimited};
  return q;
}

struct PreemptCase {
  std::string name = {};
  int32_t leaves = 1, nodes_per_leaf = 2;  // one block; one NVLink domain per leaf; 8 GPUs a node
  std::vector<QueueSpec> queues = {};      // none: no ledger
  std::vector<Job> running = {};
  Workload preemptor = {};
  // Expected victims and shrunk workloads; both empty: the plugin refuses, with `reason` in the
  // message. Otherwise `reason` is the result's reason.
  std::vector<std::string> victims = {};
  std::vector<std::string> shrunk = {};
  std::string reason = {};
  std::string domain = {};  // expected nominated domain, when set
};

class PreemptionTest : public ::testing::TestWithParam<PreemptCase> {};

TEST_P(PreemptionTest, ChoosesVictims) {
  const PreemptCase& c = GetParam();
  ClusterState state = tidal::testing::FabricState(1, c.leaves, 1, c.nodes_per_leaf);
  std::unique_ptr<QuotaLedger> ledger;
  if (!c.queues.empty()) {
    QueueConfig cfg;
    cfg.queues = c.queues;
    ledger = std::make_unique<QuotaLedger>(std::move(QueueTree::Build(cfg)).value());
    ledger->SetCapacity({state.FreeGpus(state.root()), 1000000, int64_t{1} << 50});
  }
  for (const Job& r : c.running) {
    Workload v = MakeGang(r.id).Queue(r.queue).Members(static_cast<int32_t>(r.nodes.size())).Gpus(8).Priority(r.priority).Obj();
    if (r.min_members > 0) v.min_members = r.min_members;
    v.preemptible = r.preemptible;
    v.checkpoint_interval_s = r.checkpoint;
    Allocation a;
    a.workload = v;
    a.start_time_s = r.start;
    a.borrowed = r.borrowed;
    a.terminating = r.terminating;
    for (const auto& n : r.nodes) a.assignments.push_back({state.FindNode(n), 1});
    ASSERT_TRUE(state.AddRunning(a).ok()) << r.id;
    if (ledger != nullptr && ledger->tree().Find(r.queue) > 0) {
      ASSERT_TRUE(ledger->Charge(r.id, ledger->tree().Find(r.queue), ledger->tree().Request(v.Total(), ""), r.borrowed).ok());
    }
  }
  const int64_t free_before = state.FreeGpus(state.root());
  const size_t running_before = state.running().size();

  const Workload& w = c.preemptor;
  PlacementConstraints pc;
  pc.members = w.members;
  pc.required_level = w.required_level.empty() ? -1 : state.levels().Find(w.required_level);
  const int64_t g = w.per_member.gpus;
  // GPU-only stand-in for the profile's search: inside `within`, else any domain of the required
  // level, else anywhere.
  auto fits = [&state, g](const PlacementConstraints& p) {
    if (p.within >= 0) return state.MemberCapacity(p.within, g) >= p.members;
    if (p.required_level >= 0) {
      auto [b, e] = state.LevelRange(p.required_level);
      for (VertexId v = b; v < e; ++v) {
        if (state.MemberCapacity(v, g) >= p.members) return true;
      }
      return false;
    }
    return state.MemberCapacity(state.root(), g) >= p.members;
  };
  PostFilterContext ctx{state, kNow, fits};
  Preemption plugin(ledger.get(), Preemption::Args{});
  CycleState cs;
  PostFilterResult result;
  const Status s = plugin.PostFilter(cs, w, Status::Unschedulable("no room"), ctx, pc, result);

  EXPECT_EQ(state.FreeGpus(state.root()), free_before) << "the plugin must leave the cluster as it found it";
  EXPECT_EQ(state.running().size(), running_before);
  if (c.victims.empty() && c.shrunk.empty()) {
    EXPECT_FALSE(s.ok()) << "victims: " << ::testing::PrintToString(result.victims);
    EXPECT_NE(s.Message().find(c.reason), std::string::npos) << s.Message();
    return;
  }
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_THAT(result.victims, UnorderedElementsAreArray(c.victims));
  std::vector<std::string> shrunk;
  for (const auto& sh : result.shrinks) {
    if (std::find(shrunk.begin(), shrunk.end(), sh.workload) == shrunk.end()) shrunk.push_back(sh.workload);
  }
  EXPECT_THAT(shrunk, UnorderedElementsAreArray(c.shrunk));
  EXPECT_EQ(result.reason, c.reason);
  if (!c.domain.empty()) {
    EXPECT_EQ(result.nominated_domain, c.domain);
  }
}

Workload Want(std::string id, std::string queue, int32_t members, int32_t priority = 0, std::string required = "") {
  return MakeGang(std::move(id)).Queue(std::move(queue)).Members(members).Gpus(8).Priority(priority).Required(std::move(required)).Obj();
}

INSTANTIATE_TEST_SUITE_P(
    Priority, PreemptionTest,
    ::testing::Values(
        PreemptCase{.name = "LowerPriorityPreemptibleIsTaken",
                    .running = {Job{.id = "low", .nodes = {"node-0"}}, Job{.id = "low2", .nodes = {"node-1"}, .start = 5000}},
                    .preemptor = Want("high", "default", 1, 10),
                    .victims = {"low2"},  // least work lost: it started later
                    .reason = "priority"},
        PreemptCase{.name = "NeverAHigherOrEqualPriority",
                    .running = {Job{.id = "equal", .nodes = {"node-0"}, .priority = 10},
                                Job{.id = "higher", .nodes = {"node-1"}, .priority = 11}},
                    .preemptor = Want("high", "default", 1, 10),
                    .reason = "no eligible victims: no running workload is both of lower priority and preemptible"},
        // The refusal says why: the work that would do runs too short a time yet (minRuntime).
        PreemptCase{.name = "NeverFreshWork",
                    .running = {Job{.id = "fresh", .nodes = {"node-0", "node-1"}, .start = kNow - 100}},
                    .preemptor = Want("high", "default", 1, 10),
                    .reason = "no eligible victims: 1 running workload(s) started less than minRuntime (5m) ago"},
        PreemptCase{.name = "NeverNonPreemptibleByPriority",
                    .running = {Job{.id = "pinned", .nodes = {"node-0", "node-1"}, .preemptible = false}},
                    .preemptor = Want("high", "default", 1, 10),
                    .reason = "no eligible victims"},
        PreemptCase{.name = "LeastWorkLostBeatsRecency",
                    .running = {Job{.id = "recent", .nodes = {"node-0"}, .start = 5000},
                                Job{.id = "checkpoints", .nodes = {"node-1"}, .checkpoint = 600}},
                    .preemptor = Want("high", "default", 1, 10),
                    .victims = {"checkpoints"},  // 400 s at risk against 5000 s
                    .reason = "priority"},
        PreemptCase{.name = "FreesTheLeafLosingLeastWork",
                    .leaves = 2,
                    .running = {Job{.id = "old-a", .nodes = {"node-0"}}, Job{.id = "old-b", .nodes = {"node-1"}},
                                Job{.id = "new-a", .nodes = {"node-2"}, .start = 9000},
                                Job{.id = "new-b", .nodes = {"node-3"}, .start = 9000}},
                    .preemptor = Want("high", "default", 2, 10, "leaf"),
                    .victims = {"new-a", "new-b"},
                    .reason = "priority",
                    .domain = "block-0/leaf-1"},
        PreemptCase{.name = "ElasticGivesBackSurplusInsteadOfBeingEvicted",
                    .running = {Job{.id = "elastic", .nodes = {"node-0", "node-1"}, .min_members = 1}},
                    .preemptor = Want("high", "default", 1, 10),
                    .shrunk = {"elastic"},
                    .reason = "priority"}),
    CaseName());

INSTANTIATE_TEST_SUITE_P(
    Terminating, PreemptionTest,
    ::testing::Values(
        // Regression: a terminating workload was proposed again (and its capacity counted as held).
        PreemptCase{.name = "ATerminatingWorkloadIsNeverAVictim",
                    .running = {Job{.id = "leaving", .nodes = {"node-0"}, .terminating = true},
                                Job{.id = "staying", .nodes = {"node-1"}}},
                    .preemptor = Want("high", "default", 2, 10),
                    .victims = {"staying"},
                    .reason = "priority"},
        PreemptCase{.name = "WaitsForTerminatingWorkInsteadOfTakingMore",
                    .running = {Job{.id = "leaving", .nodes = {"node-0"}, .terminating = true},
                                Job{.id = "staying", .nodes = {"node-1"}}},
                    .preemptor = Want("high", "default", 1, 10),
                    .reason = "waiting for 1 terminating workload(s)"},
        // b uses 24 of its nominal 8, but 8 of that is leaving: only 8 more may be reclaimed, and a
        // needs 16 more than what is leaving.
        PreemptCase{.name = "TerminatingWorkCountsAgainstTheOverage",
                    .nodes_per_leaf = 4,
                    .queues = {Q("a", 24), Q("b", 8)},
                    .running = {Job{.id = "b1", .queue = "b", .nodes = {"node-0"}, .terminating = true, .borrowed = true},
                                Job{.id = "b2", .queue = "b", .nodes = {"node-1"}, .borrowed = true},
                                Job{.id = "b3", .queue = "b", .nodes = {"node-2"}, .borrowed = true}, Other("node-3")},
                    .preemptor = Want("a-want", "a", 3),
                    .reason = "would not make room"},
        PreemptCase{.name = "TerminatingWorkPlusTheRestOfTheOverage",
                    .nodes_per_leaf = 4,
                    .queues = {Q("a", 24), Q("b", 8)},
                    .running = {Job{.id = "b1", .queue = "b", .nodes = {"node-0"}, .terminating = true},
                                Job{.id = "b2", .queue = "b", .nodes = {"node-1"}},
                                Job{.id = "b3", .queue = "b", .nodes = {"node-2"}, .start = 100}, Other("node-3")},
                    .preemptor = Want("a-want", "a", 2),
                    .victims = {"b3"},
                    .reason = "reclaim"}),
    CaseName());

INSTANTIATE_TEST_SUITE_P(
    Quota, PreemptionTest,
    ::testing::Values(
        // Regression: reclaim took b1 and b2, leaving b at 0 of its nominal 8.
        PreemptCase{.name = "ReclaimStopsAtNominal",
                    .leaves = 2,
                    .queues = {Q("a", 24), Q("b", 8)},
                    .running = {Job{.id = "a1", .queue = "a", .nodes = {"node-0"}, .preemptible = false},
                                Job{.id = "b1", .queue = "b", .nodes = {"node-2"}, .borrowed = true},
                                Job{.id = "b2", .queue = "b", .nodes = {"node-3"}, .borrowed = true}},
                    .preemptor = Want("a-want", "a", 2, 0, "leaf"),
                    .reason = "would not make room"},
        PreemptCase{.name = "ReclaimTakesTheOverageMostRecentFirst",
                    .leaves = 2,
                    .nodes_per_leaf = 3,
                    .queues = {Q("a", 16), Q("b", 8), Q("c", 24)},
                    .running = {Job{.id = "c1", .queue = "c", .nodes = {"node-0", "node-1", "node-2"}, .preemptible = false},
                                Job{.id = "b1", .queue = "b", .nodes = {"node-3"}, .preemptible = false, .borrowed = true},
                                Job{.id = "b2", .queue = "b", .nodes = {"node-4"}, .preemptible = false, .start = 1000,
                                    .borrowed = true},
                                Job{.id = "b3", .queue = "b", .nodes = {"node-5"}, .preemptible = false, .start = 2000,
                                    .borrowed = true}},
                    .preemptor = Want("a-want", "a", 2, 0, "leaf"),
                    .victims = {"b2", "b3"},
                    .reason = "reclaim",
                    .domain = "block-0/leaf-1"},
        // Regression: the flag frozen at admission said "borrowed", but b is back at its nominal.
        PreemptCase{.name = "FrozenBorrowedFlagIgnoredOnceTheQueueIsAtNominal",
                    .queues = {Q("a", 8), Q("b", 8)},
                    .running = {Other("node-0"), Job{.id = "b2", .queue = "b", .nodes = {"node-1"}, .borrowed = true}},
                    .preemptor = Want("a-want", "a", 1),
                    .reason = "no eligible victims"},
        // Regression: no flag (b's nominal was lowered by a reload), yet b uses 16 of 8 now.
        PreemptCase{.name = "OverNominalNowIsReclaimableWithoutTheFlag",
                    .queues = {Q("a", 8), Q("b", 8)},
                    .running = {Job{.id = "b1", .queue = "b", .nodes = {"node-0"}, .preemptible = false},
                                Job{.id = "b2", .queue = "b", .nodes = {"node-1"}, .preemptible = false, .start = 1000}},
                    .preemptor = Want("a-want", "a", 1),
                    .victims = {"b2"},
                    .reason = "reclaim"},
        // Regression: priority preemption took another queue's work within its nominal.
        PreemptCase{.name = "PriorityNeverTakesAnotherQueuesInQuotaWork",
                    .queues = {Q("a", 8), Q("b", 8)},
                    .running = {Other("node-0"), Job{.id = "b1", .queue = "b", .nodes = {"node-1"}}},
                    .preemptor = Want("a-high", "a", 1, 10),
                    .reason = "no eligible victims"},
        PreemptCase{.name = "PriorityTakesFromItsOwnQueue",
                    .queues = {Q("a", 8), Q("b", 8)},
                    .running = {Job{.id = "a1", .queue = "a", .nodes = {"node-0"}},
                                Job{.id = "b1", .queue = "b", .nodes = {"node-1"}}},
                    .preemptor = Want("a-high", "a", 1, 10),
                    .victims = {"a1"},
                    .reason = "priority"},
        PreemptCase{.name = "PriorityMayTakeAnotherQueuesBorrowedWork",
                    .queues = {Q("a", 8), Q("b", 8)},
                    .running = {Job{.id = "b1", .queue = "b", .nodes = {"node-0"}},
                                Job{.id = "b2", .queue = "b", .nodes = {"node-1"}, .start = 1000}},
                    .preemptor = Want("a-high", "a", 1, 10),
                    .victims = {"b2"},
                    .reason = "priority"},
        // a would borrow: no reclaim, and b's in-quota work is safe even at lower priority.
        PreemptCase{.name = "ABorrowingPreemptorReclaimsNothing",
                    .queues = {Q("a", 8), Q("b", 8)},
                    .running = {Job{.id = "a1", .queue = "a", .nodes = {"node-0"}, .priority = 10},
                                Job{.id = "b1", .queue = "b", .nodes = {"node-1"}, .preemptible = false}},
                    .preemptor = Want("a-more", "a", 1, 10),
                    .reason = "no eligible victims"},
        // Elastic e (24 GPUs, b's nominal 8): two members may go back, never the last one.
        PreemptCase{.name = "ElasticReclaimGivesBackOnlyTheOverage",
                    .nodes_per_leaf = 4,
                    .queues = {Q("a", 16), Q("b", 8)},
                    .running = {Job{.id = "e", .queue = "b", .nodes = {"node-0", "node-1", "node-2"}, .preemptible = false,
                                    .min_members = 1},
                                Other("node-3")},
                    .preemptor = Want("a-want", "a", 2),
                    .shrunk = {"e"},
                    .reason = "reclaim"},
        PreemptCase{.name = "ElasticReclaimStopsAtNominal",
                    .nodes_per_leaf = 4,
                    .queues = {Q("a", 24), Q("b", 8)},
                    .running = {Job{.id = "e", .queue = "b", .nodes = {"node-0", "node-1", "node-2"}, .preemptible = false,
                                    .min_members = 1, .borrowed = true},
                                Other("node-3")},
                    .preemptor = Want("a-want", "a", 3),
                    .reason = "would not make room"}),
    CaseName());

TEST(Preemption, OnlyAnUnschedulableFailureLooksForVictims) {
  ClusterState state = tidal::testing::FabricState(1, 1, 1, 1);
  PostFilterContext ctx{state, kNow, [](const PlacementConstraints&) { return false; }};
  Preemption plugin(nullptr, Preemption::Args{});
  CycleState cs;
  PostFilterResult r;
  PlacementConstraints pc;
  pc.members = 1;
  const Status s = plugin.PostFilter(cs, MakeGang("w").Gpus(8).Obj(), Status::Unresolvable("never fits"), ctx, pc, r);
  EXPECT_EQ(s.code(), StatusCode::kUnschedulable);
  EXPECT_EQ(s.Message(), "nothing to preempt for");
}

TEST(Preemption, WorkLostCountsFromTheLastCheckpoint) {
  Workload v = MakeGang("v").Members(2).Gpus(4).Obj();
  EXPECT_EQ(Preemption::WorkLost(v, 1000, 4000), 8.0 * 3000) << "no checkpoints: everything since start";
  v.checkpoint_interval_s = 600;
  EXPECT_EQ(Preemption::WorkLost(v, 1000, 4000), 8.0 * (3000 % 600));
  v.last_checkpoint_s = 3900;
  EXPECT_EQ(Preemption::WorkLost(v, 1000, 4000), 8.0 * 100) << "a reported checkpoint wins";
}

struct ArgsCase {
  std::string name;
  nlohmann::json args;
  std::string error;  // "" = accepted
};

class PreemptionArgsTest : public ::testing::TestWithParam<ArgsCase> {};

TEST_P(PreemptionArgsTest, Validates) {
  auto p = Preemption::New(GetParam().args, PluginContext{TopologyLevels::Default()});
  if (GetParam().error.empty()) {
    EXPECT_TRUE(p.ok()) << p.status().ToString();
  } else {
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().Message().find(GetParam().error), std::string::npos) << p.status().Message();
  }
}

INSTANTIATE_TEST_SUITE_P(Table, PreemptionArgsTest,
                         ::testing::Values(ArgsCase{"Defaults", nlohmann::json::object(), ""},
                                           ArgsCase{"DurationString", {{"minRuntime", "5m"}, {"maxDomains", 8}}, ""},
                                           ArgsCase{"Seconds", {{"minRuntime", 60}}, ""},
                                           ArgsCase{"NegativeRuntime", {{"minRuntime", -1}}, "minRuntime"},
                                           ArgsCase{"TooManyDomains", {{"maxDomains", 65}}, "maxDomains"},
                                           ArgsCase{"UnknownKey", {{"grace", 1}}, "grace: unknown argument"}),
                         CaseName());

}  // namespace
}  // namespace tidal::plugins
