// quota plugin: Admit (leaf queues only, minimum members against the ledger's rules), PreFilter
// (elastic gangs capped at what quota admits; per-model caps for any-model work), Reserve /
// Unreserve (charges with each node's GPU model, marked borrowed above nominal), and the no-queues
// case.
#include "plugins/quota/quota.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test/support/builders.h"

namespace tidal::plugins {
namespace {

using tidal::testing::CaseName;
using tidal::testing::MakeGang;
using tidal::testing::MakeNode;
using tidal::testing::NodesState;

template <typename T>
  requires requires(const T& t) { t.name; }
void PrintTo(const T& c, std::ostream* os) {
  *os << c.name;
}

QueueSpec Q(std::string name, std::string parent, int64_t nominal, int64_t borrow = kUnlimited,
            int64_t lend = kUnlimited) {
  QueueSpec q;
  q.name = std::move(name);
  q.parent = std::move(parent);
  q.nominal = {nominal, kUnlimited, kUnlimited};
  q.borrowing_limit = {borrow, kUnlimited, kUnlimited};
  q.lending_limit = {lend, kUnlimited, kUnlimited};
  return q;
}

// org (32) > teamA (16, borrows <= 8), teamB (16, lends <= 4); solo (8, never borrows); 40 GPUs
// (no unassigned capacity at the root).
std::unique_ptr<QuotaLedger> Ledger() {
  QueueConfig cfg;
  cfg.queues = {Q("org", "", 32), Q("teamA", "org", 16, 8), Q("teamB", "org", 16, kUnlimited, 4), Q("solo", "", 8, 0)};
  auto l = std::make_unique<QuotaLedger>(std::move(QueueTree::Build(cfg)).value());
  l->SetCapacity({40, 1000000, int64_t{1} << 50});
  return l;
}

Candidate On(int32_t members) {
  Candidate c;
  c.assignments = {{0, members}};
  return c;
}

// The node On() places on (no GPU model).
const ClusterState& OneNode() {
  static const ClusterState kState = NodesState({MakeNode("n0").Gpus(100).At("b0", "l0", "v0").Obj()});
  return kState;
}

struct AdmitCase {
  std::string name;
  Workload w;
  std::map<std::string, int64_t> used;  // GPUs already charged, per leaf
  StatusCode code;
  std::string reason;   // a substring of the refusal
};

class QuotaAdmitTest : public ::testing::TestWithParam<AdmitCase> {};

TEST_P(QuotaAdmitTest, Decides) {
  const AdmitCase& c = GetParam();
  auto l = Ledger();
  for (const auto& [q, gpus] : c.used) {
    ASSERT_TRUE(l->Charge(q + "-run", l->tree().Find(q), {gpus, 0, 0}, false).ok()) << q;
  }
  Quota quota(l.get());
  CycleState cs;
  const Status s = quota.Admit(cs, c.w);
  EXPECT_EQ(s.code(), c.code) << s.ToString();
  EXPECT_NE(s.Message().find(c.reason), std::string::npos) << s.Message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, QuotaAdmitTest,
    ::testing::Values(
        AdmitCase{"WithinNominal", MakeGang("w").Queue("teamA").Members(2).Gpus(8).Obj(), {}, StatusCode::kSuccess, ""},
        AdmitCase{"BorrowsWhatTheSiblingLends", MakeGang("w").Queue("teamA").Members(5).Gpus(4).Obj(), {},
                  StatusCode::kSuccess, ""},
        AdmitCase{"BeyondTheSiblingsLendingLimit", MakeGang("w").Queue("teamA").Members(3).Gpus(8).Obj(), {},
                  StatusCode::kUnschedulable, "would borrow beyond what its cohort org can lend"},
        AdmitCase{"BeyondTheBorrowingLimit", MakeGang("w").Queue("solo").Members(2).Gpus(8).Obj(), {},
                  StatusCode::kUnschedulable, "queue solo would use 16 gpus, over nominal 8 + borrowing limit 0"},
        // teamB is back, but org may still borrow solo's idle quota one level up.
        AdmitCase{"BorrowsThroughTheParentFromAnIdleQueueAbove", MakeGang("w").Queue("teamA").Members(17).Gpus(1).Obj(),
                  {{"teamB", 16}}, StatusCode::kSuccess, ""},
        AdmitCase{"NothingLeftToBorrowAnywhere", MakeGang("w").Queue("teamA").Members(17).Gpus(1).Obj(),
                  {{"teamB", 16}, {"solo", 8}}, StatusCode::kUnschedulable, "cohort org has 0 gpus lendable"},
        AdmitCase{"WithinNominalEvenWhenTheSiblingBorrowed", MakeGang("w").Queue("teamA").Members(2).Gpus(8).Obj(),
                  {{"teamB", 24}}, StatusCode::kSuccess, ""},
        AdmitCase{"ElasticJudgedByItsMinimum", MakeGang("w").Queue("solo").Members(4).MinMembers(1).Gpus(8).Obj(), {},
                  StatusCode::kSuccess, ""},
        AdmitCase{"UnknownQueueNamesTheLeaves", MakeGang("w").Queue("ghost").Obj(), {},
                  StatusCode::kUnschedulableAndUnresolvable,
                  "queue \"ghost\" is not configured (leaf queues: teamA, teamB, solo)"},
        AdmitCase{"InnerQueueIsRefused", MakeGang("w").Queue("org").Obj(), {}, StatusCode::kUnschedulableAndUnresolvable,
                  "queue \"org\" is not a leaf queue"}),
    CaseName());

struct CapCase {
  std::string name;
  Workload w;
  int32_t members;  // what PreFilter lets the search place
};

class QuotaPreFilterTest : public ::testing::TestWithParam<CapCase> {};

TEST_P(QuotaPreFilterTest, CapsMembersAtWhatQuotaAdmits) {
  auto l = Ledger();
  Quota quota(l.get());
  CycleState cs;
  ASSERT_TRUE(quota.Admit(cs, GetParam().w).ok());
  PlacementConstraints c;
  c.members = GetParam().w.members;
  ASSERT_TRUE(quota.PreFilter(cs, GetParam().w, TopologyLevels::Default(), c).ok());
  EXPECT_EQ(c.members, GetParam().members);
}

INSTANTIATE_TEST_SUITE_P(
    Table, QuotaPreFilterTest,
    ::testing::Values(
        // 16 nominal + 4 lent by teamB = 20 GPUs: two 8-GPU members.
        CapCase{"ElasticShrinksToQuota", MakeGang("w").Queue("teamA").Members(4).MinMembers(1).Gpus(8).Obj(), 2},
        CapCase{"FitsWhole", MakeGang("w").Queue("teamA").Members(2).Gpus(8).Obj(), 2},
        CapCase{"NoBorrowingQueueStopsAtNominal", MakeGang("w").Queue("solo").Members(8).MinMembers(1).Gpus(2).Obj(), 4}),
    CaseName());

TEST(QuotaPlugin, ReserveChargesAndMarksBorrowingAboveNominal) {
  auto l = Ledger();
  Quota quota(l.get());
  const int a = l->tree().Find("teamA");
  struct Step {
    std::string id;
    int32_t members;
    bool borrowed;
  };
  // 3 x 4 GPUs = 12 (within 16), then 2 x 4 = 8 more: 20, above nominal.
  for (const Step& s : {Step{"first", 3, false}, Step{"second", 2, true}}) {
    const Workload w = MakeGang(s.id).Queue("teamA").Members(s.members).Gpus(4).Obj();
    CycleState cs;
    ASSERT_TRUE(quota.Admit(cs, w).ok());
    ASSERT_TRUE(quota.Reserve(cs, OneNode(), w, On(s.members)).ok());
    ASSERT_EQ(l->charges().count(s.id), 1u);
    EXPECT_EQ(l->charges().at(s.id).borrowed, s.borrowed) << s.id;
  }
  EXPECT_EQ(l->Allocated(a)[0], 20);
  EXPECT_EQ(l->Allocated(l->tree().Find("org"))[0], 20) << "charged up the tree";
  CycleState cs;
  quota.Unreserve(cs, OneNode(), MakeGang("second").Obj(), On(2));
  EXPECT_EQ(l->Allocated(a)[0], 12);
  EXPECT_EQ(l->charges().count("second"), 0u);
}

TEST(QuotaPlugin, ReserveChargesOnlyThePlacedMembers) {
  auto l = Ledger();
  Quota quota(l.get());
  const Workload w = MakeGang("elastic").Queue("teamA").Members(4).MinMembers(1).Gpus(4).Obj();
  CycleState cs;
  ASSERT_TRUE(quota.Admit(cs, w).ok());
  ASSERT_TRUE(quota.Reserve(cs, OneNode(), w, On(3)).ok());
  EXPECT_EQ(l->Allocated(l->tree().Find("teamA"))[0], 12);
}

TEST(QuotaPlugin, ReserveRechecksQuotaTakenSinceAdmit) {
  auto l = Ledger();
  Quota quota(l.get());
  const Workload w = MakeGang("late").Queue("solo").Members(1).Gpus(8).Obj();
  CycleState cs;
  ASSERT_TRUE(quota.Admit(cs, w).ok());
  ASSERT_TRUE(l->Charge("sneaked-in", l->tree().Find("solo"), {8, 0, 0}, false).ok());
  const Status s = quota.Reserve(cs, OneNode(), w, On(1));
  EXPECT_EQ(s.code(), StatusCode::kUnschedulable) << s.ToString();
  EXPECT_EQ(l->charges().count("late"), 0u) << "a refused reserve charges nothing";
}

TEST(QuotaPlugin, PreFilterAndReserveWithoutAdmitAreErrors) {
  auto l = Ledger();
  Quota quota(l.get());
  const Workload w = MakeGang("w").Queue("teamA").Obj();
  CycleState cs;
  PlacementConstraints c;
  c.members = 1;
  EXPECT_EQ(quota.PreFilter(cs, w, TopologyLevels::Default(), c).code(), StatusCode::kError);
  EXPECT_EQ(quota.Reserve(cs, OneNode(), w, On(1)).code(), StatusCode::kError);
}

TEST(QuotaPlugin, WithoutQueuesEverythingIsAdmittedAndNothingCharged) {
  QueueConfig none;
  QuotaLedger empty(std::move(QueueTree::Build(none)).value());
  for (QuotaLedger* l : {static_cast<QuotaLedger*>(nullptr), &empty}) {
    Quota quota(l);
    const Workload w = MakeGang("w").Queue("anything").Members(100).Gpus(8).Obj();
    CycleState cs;
    EXPECT_TRUE(quota.Admit(cs, w).ok());
    PlacementConstraints c;
    c.members = 100;
    EXPECT_TRUE(quota.PreFilter(cs, w, TopologyLevels::Default(), c).ok());
    EXPECT_EQ(c.members, 100);
    EXPECT_TRUE(quota.Reserve(cs, OneNode(), w, On(100)).ok());
  }
  EXPECT_TRUE(empty.charges().empty());
}

// Per-model quota: queue "team" may use 8 H100 GPUs (never borrowing more) and any other GPUs.
std::unique_ptr<QuotaLedger> ModelLedger() {
  QueueConfig cfg;
  cfg.resources = {"gpus", "cpu", "memory", "gpus.a100", "gpus.h100"};
  QueueSpec q;
  q.name = "team";
  q.nominal = {kUnlimited, kUnlimited, kUnlimited, kUnlimited, 8};
  q.borrowing_limit = {kUnlimited, kUnlimited, kUnlimited, kUnlimited, 0};
  q.lending_limit = {kUnlimited, kUnlimited, kUnlimited, kUnlimited, kUnlimited};
  cfg.queues = {q};
  auto l = std::make_unique<QuotaLedger>(std::move(QueueTree::Build(cfg)).value());
  l->SetCapacity({32, 1000000, int64_t{1} << 50, 16, 16});
  return l;
}

// Two H100 nodes in NVLink domain v0 (ids 0, 1; the search's first choice), two A100 in v1 (2, 3).
ClusterState MixedModels(bool with_a100 = true) {
  std::vector<Node> nodes = {MakeNode("h100-0").Model("h100").At("b0", "l0", "v0").Obj(),
                             MakeNode("h100-1").Model("h100").At("b0", "l0", "v0").Obj()};
  if (with_a100) {
    nodes.push_back(MakeNode("a100-0").Model("a100").At("b0", "l0", "v1").Obj());
    nodes.push_back(MakeNode("a100-1").Model("a100").At("b0", "l0", "v1").Obj());
  }
  return NodesState(std::move(nodes));
}

Candidate OnNodes(std::vector<MemberAssignment> a) {
  Candidate c;
  c.assignments = std::move(a);
  return c;
}

TEST(QuotaPlugin, ReserveChargesEachMemberWithItsNodesGpuModel) {
  auto l = ModelLedger();
  Quota quota(l.get());
  const ClusterState s = MixedModels();
  const int team = l->tree().Find("team");
  // Any GPU model: one member on an H100 node, one on an A100 node, as the engine charges them
  // once bound (by the node's model), not by the workload's "any".
  const Workload w = MakeGang("any").Queue("team").Members(2).Gpus(4).Obj();
  CycleState cs;
  ASSERT_TRUE(quota.Admit(cs, w).ok());
  const Candidate c = OnNodes({{0, 1}, {2, 1}});
  ASSERT_TRUE(quota.Reserve(cs, s, w, c).ok());
  EXPECT_EQ(l->Allocated(team), (ResVec{8, 0, 0, 4, 4}));
  quota.Unreserve(cs, s, w, c);
  EXPECT_EQ(l->Allocated(team), (ResVec{0, 0, 0, 0, 0})) << "Unreserve releases exactly what Reserve charged";
}

TEST(QuotaPlugin, PlansInFlightCannotOvershootAPerModelQuota) {
  auto l = ModelLedger();
  Quota quota(l.get());
  const ClusterState s = MixedModels();
  const Workload first = MakeGang("first").Queue("team").Members(2).Gpus(4).Obj();
  CycleState c1;
  ASSERT_TRUE(quota.Admit(c1, first).ok());
  ASSERT_TRUE(quota.Reserve(c1, s, first, OnNodes({{0, 1}, {1, 1}})).ok()) << "8 of 8 H100 GPUs";
  // Nothing is bound yet: the next any-model plan on an H100 node must see the first one's charge.
  const Workload second = MakeGang("second").Queue("team").Members(1).Gpus(4).Obj();
  CycleState c2;
  ASSERT_TRUE(quota.Admit(c2, second).ok());
  const Status refused = quota.Reserve(c2, s, second, OnNodes({{1, 1}}));
  EXPECT_EQ(refused.code(), StatusCode::kUnschedulable) << refused.ToString();
  EXPECT_NE(refused.Message().find("gpus.h100"), std::string::npos) << refused.Message();
  EXPECT_EQ(l->charges().count("second"), 0u);
  EXPECT_TRUE(quota.Reserve(c2, s, second, OnNodes({{3, 1}})).ok()) << "an A100 node is within quota";
}

TEST(QuotaPlugin, PreFilterCapsAnyModelMembersPerModel) {
  auto l = ModelLedger();
  ASSERT_TRUE(l->Charge("running", l->tree().Find("team"), {4, 0, 0, 0, 4}, false).ok());
  Quota quota(l.get());
  auto prefilter = [&](const Workload& w) {
    CycleState cs;
    EXPECT_TRUE(quota.Admit(cs, w).ok());
    PlacementConstraints c;
    c.members = w.members;
    EXPECT_TRUE(quota.PreFilter(cs, w, TopologyLevels::Default(), c).ok());
    return c;
  };
  // 4 H100 GPUs left: at most two 2-GPU members on H100 nodes, the others anywhere else.
  const PlacementConstraints any = prefilter(MakeGang("any").Queue("team").Members(4).Gpus(2).Obj());
  EXPECT_EQ(any.members, 4);
  EXPECT_EQ(any.model_caps, (std::vector<PlacementConstraints::ModelCap>{{"h100", 2}}));
  const PlacementConstraints h100 = prefilter(MakeGang("h").Queue("team").Members(4).MinMembers(1).Gpus(2).Model("h100").Obj());
  EXPECT_EQ(h100.members, 2) << "a workload naming the model is capped as a whole";
  EXPECT_TRUE(h100.model_caps.empty());
  EXPECT_TRUE(prefilter(MakeGang("a").Queue("team").Members(4).Gpus(2).Model("a100").Obj()).model_caps.empty());
}

// The memo answers by (queue, request, GPU model) while the ledger is unchanged: workloads of
// the same shape on different models get their own model's answer, in any order.
TEST(QuotaPlugin, MemoizedAnswersTellGpuModelsApart) {
  auto l = ModelLedger();
  Quota quota(l.get());
  auto admit = [&](const std::string& model) {
    CycleState cs;
    auto b = MakeGang("w-" + model).Queue("team").Members(1).Gpus(12);
    if (!model.empty()) b.Model(model);
    return quota.Admit(cs, b.Obj());
  };
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(admit("h100").code(), StatusCode::kUnschedulable) << "12 H100 GPUs are over the queue's 8";
    EXPECT_TRUE(admit("a100").ok()) << "the same shape on A100 is within quota";
    EXPECT_TRUE(admit("").ok()) << "any model";
    EXPECT_TRUE(admit("v100").ok()) << "a model with no quota of its own";
  }
  auto members = [&](const std::string& model) {
    CycleState cs;
    const Workload w = MakeGang("m-" + model).Queue("team").Members(4).MinMembers(1).Gpus(4).Model(model).Obj();
    EXPECT_TRUE(quota.Admit(cs, w).ok());
    PlacementConstraints c;
    c.members = w.members;
    EXPECT_TRUE(quota.PreFilter(cs, w, TopologyLevels::Default(), c).ok());
    return c.members;
  };
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(members("h100"), 2) << "two 4-GPU members on H100";
    EXPECT_EQ(members("a100"), 4);
  }
}

TEST(QuotaPlugin, TheSearchPutsAnyModelGangsWhereThePerModelQuotaAdmitsThem) {
  auto l = ModelLedger();
  auto profile = Profile::Build(ProfileSpec::Default(), DefaultRegistry(), PluginContext{TopologyLevels::Default(), l.get()});
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  Scheduler sched(std::move(profile).value());
  const Workload w = MakeGang("team/g").Queue("team").Members(2).Gpus(8).Obj();
  // The H100 domain comes first, but its 16 GPUs are over the queue's 8: the A100 domain it is.
  ClusterState s = MixedModels();
  const Decision d = sched.ScheduleOne(s, w, 0);
  ASSERT_EQ(d.outcome, Outcome::kPlaced) << d.explanation;
  EXPECT_EQ(d.placement.domain, "b0/l0/v1");
  EXPECT_EQ(l->Allocated(l->tree().Find("team")), (ResVec{16, 0, 0, 16, 0}));
  // Only H100 nodes: one member fits the quota, the gang does not, and the reason says so.
  ClusterState only_h100 = MixedModels(false);
  const Decision pending = sched.ScheduleOne(only_h100, MakeGang("team/h").Queue("team").Members(2).Gpus(8).Obj(), 0);
  EXPECT_EQ(pending.outcome, Outcome::kPending) << pending.explanation;
  EXPECT_NE(pending.status.ToString().find("beyond the queue's quota for it, first: h100-"), std::string::npos)
      << pending.status.ToString();
}

TEST(QuotaPlugin, ArgumentsAreRefused) {
  auto ok = Quota::New(nlohmann::json::object(), PluginContext{TopologyLevels::Default()});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->Name(), "quota");
  auto bad = Quota::New({{"strict", true}}, PluginContext{TopologyLevels::Default()});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().Message(), "strict: unknown argument (accepted: none)");
}

}  // namespace
}  // namespace tidal::plugins
