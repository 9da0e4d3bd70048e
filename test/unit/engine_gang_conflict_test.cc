// A gang whose running or pending members disagree on its size, minimum or queue (hand-made pods,
// an annotation edited on some of them) is refused as a spec error naming the field, both values
// and both pods, and never planned until they agree. Before, each member went by its own spec: one
// member was planned and reserved while another waited in PreEnqueue for a larger gang, and the
// gang went round Permit timeouts with nothing saying why.
#include <gtest/gtest.h>

#include <vector>

#include "engine/engine.h"
#include "engine/engine_gang_constraints.h"
#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;
using testing::RunningOn;

class GangConflictTest : public testing::EngineFixture {
 protected:
  static PodInfo Member(const std::string& name, int size) { return GangPod(name, "mix", size); }
  // CheckPod's and PlanPod's answers for uid are the same spec error naming `field`.
  void ExpectRefused(const std::string& uid, const std::string& field) {
    std::string gang;
    const Status c = engine_->CheckPod(uid, &gang);
    EXPECT_EQ(c.code(), StatusCode::kUnschedulableAndUnresolvable) << c.ToString();
    EXPECT_EQ(c.plugin(), "podspec");
    EXPECT_NE(c.Message().find(field), std::string::npos) << c.Message();
    const PlanResult p = engine_->PlanPod(uid);
    EXPECT_EQ(p.status.code(), StatusCode::kUnschedulableAndUnresolvable) << p.status.ToString();
    EXPECT_EQ(p.status.Message(), c.Message());
  }
};

TEST_F(GangConflictTest, MembersDisagreeingOnTheSizeAreRefusedUntilTheyAgree) {
  ASSERT_TRUE(Add({Member("a", 2), Member("b", 3)}).ok());
  ExpectRefused("uid-a", "tidal.dev/gang-size: 2 (pod a) and 3 (pod b)");
  ExpectRefused("uid-b", "tidal.dev/gang-size");
  EXPECT_EQ(engine_->Stats().plans, 0);
  ASSERT_TRUE(Add({Member("b", 2)}).ok());  // the annotation fixed
  std::string gang;
  ASSERT_TRUE(engine_->CheckPod("uid-b", &gang).ok());
  for (const std::string uid : {"uid-a", "uid-b"}) {
    const PlanResult r = engine_->PlanPod(uid);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_TRUE(engine_->Reserve(uid, r.node).ok());
  }
  EXPECT_EQ(engine_->Permit("uid-b").allow.size(), 2u);
}

TEST_F(GangConflictTest, MembersInDifferentQueuesAreRefused) {
  PodInfo a = Member("a", 2), b = Member("b", 2);
  a.labels[kLabelQueue] = "team-a";
  b.labels[kLabelQueue] = "team-b";
  ASSERT_TRUE(Add({a, b}).ok());
  ExpectRefused("uid-a", "tidal.dev/queue: \"team-a\" (pod a) and \"team-b\" (pod b)");
}

// Members that disagree on any other key that shapes how the whole gang is planned, held, given
// notice or ended are refused the same way, naming the key and both values (a key left out is its
// default). Before, only size, minimum and queue were compared, and the gang was planned with the
// spec of whichever member was tried first (PlanPod's) or the first by uid (Admit, reservations):
// a launcher without topology-required beside workers with "leaf" enforced leaf or not by chance.
TEST_F(GangConflictTest, MembersDisagreeingOnAnyKeyOfTheGangAreRefused) {
  struct Case {
    const char* key;
    std::string a, b;  // "" = not set
    std::string says;
  };
  const std::vector<Case> cases = {
      {kLabelTopologyRequired, "leaf", "", "tidal.dev/topology-required: \"leaf\" (pod a0) and (not set) (pod b0)"},
      {kLabelTopologyPreferred, "nvlink", "leaf", "tidal.dev/topology-preferred: \"nvlink\" (pod a1) and \"leaf\" (pod b1)"},
      {kLabelPreemptible, "true", "", "tidal.dev/preemptible: true (pod a2) and false (pod b2)"},
      {kLabelClass, "training", "", "tidal.dev/class: \"training\" (pod a3) and \"batch\" (pod b3)"},
      {kLabelGpuModel, "NVIDIA-H100-80GB-HBM3", "", "tidal.dev/gpu-model: \"NVIDIA-H100-80GB-HBM3\" (pod a4) and (not set)"},
      {kLabelRuntimeLimit, "2h", "3h", "tidal.dev/runtime-limit: 2h (pod a5) and 3h (pod b5)"},
      {kLabelCheckpointInterval, "30m", "", "tidal.dev/checkpoint-interval: 30m (pod a6) and (not set) (pod b6)"},
      {kLabelCheckpointOnNotice, "", "90s", "tidal.dev/checkpoint-on-notice: (not set) (pod a7) and 1m30s (pod b7)"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const std::string n = std::to_string(i);
    PodInfo a = GangPod("a" + n, "g" + n, 2), b = GangPod("b" + n, "g" + n, 2);
    if (!c.a.empty()) a.annotations[c.key] = c.a;
    if (!c.b.empty()) b.labels[c.key] = c.b;
    ASSERT_TRUE(Add({a, b}).ok());
    SCOPED_TRACE(c.key);
    ExpectRefused("uid-a" + n, "gang team/g" + n + ": its members disagree on " + c.says);
    ExpectRefused("uid-b" + n, c.key);
  }
  EXPECT_EQ(engine_->Stats().plans, 0);
}

// tidal.dev/gang-leader (and last-checkpoint) are per member: one member marked is no conflict.
TEST_F(GangConflictTest, TheGangLeaderMarkIsPerMember) {
  PodInfo a = Member("a", 2);
  a.labels[kLabelGangLeader] = "true";
  ASSERT_TRUE(Add({a, Member("b", 2)}).ok());
  std::string gang;
  EXPECT_TRUE(engine_->CheckPod("uid-b", &gang).ok());
  EXPECT_TRUE(engine_->PlanPod("uid-b").status.ok());
}

// A member that joins with another size drops the plan made for the others.
TEST_F(GangConflictTest, AConflictingMemberDropsThePlanOfTheOthers) {
  ASSERT_TRUE(Add({Member("a", 2), Member("b", 2)}).ok());
  ASSERT_TRUE(engine_->PlanPod("uid-a").status.ok());
  EXPECT_EQ(engine_->Stats().plans, 1);
  ASSERT_TRUE(Add({Member("c", 4)}).ok());
  EXPECT_EQ(engine_->Stats().plans, 0);
  ExpectRefused("uid-c", "tidal.dev/gang-size");
}

// Succeeded pods of an earlier run of the same gang name may carry another size: no conflict.
TEST_F(GangConflictTest, FinishedMembersOfAnEarlierRunDoNotConflict) {
  PodInfo old = RunningOn(Member("old", 4), "n0", now_ - 100);
  old.phase = PodPhase::kSucceeded;
  ASSERT_TRUE(Add({old, Member("a", 2), Member("b", 2)}).ok());
  std::string gang;
  EXPECT_TRUE(engine_->CheckPod("uid-a", &gang).ok());
  EXPECT_TRUE(engine_->PlanPod("uid-a").status.ok());
}

// Members whose node constraints differ (a launcher beside its workers in one Kueue pod group,
// pods made by hand) are no conflict: the gang is planned on the nodes every pending member may
// use. Before, it was planned with the constraints of one member: on the e2e cluster a 3-pod gang
// whose third pod's nodeSelector matched no node had its nodes refused by kube-scheduler's
// NodeAffinity one by one (14 TidalPlannedNodeRefused, 14 plans), each excluded for 120 s, the
// wait said "refused by the front door's own filters", and it all began again once they expired.
class GangConstraintsTest : public GangConflictTest {
 protected:
  // A pod as the API server makes it: the DefaultTolerationSeconds tolerations on every pod, so
  // every member has constraints; with a node selector when key is not empty.
  static PodInfo Selecting(PodInfo p, const std::string& key = "", const std::string& value = "") {
    auto c = std::make_shared<NodeConstraints>();
    c->tolerations = {Toleration{"node.kubernetes.io/not-ready", "", true, TaintEffect::kNoExecute},
                      Toleration{"node.kubernetes.io/unreachable", "", true, TaintEffect::kNoExecute}};
    if (!key.empty()) c->node_selector[key] = value;
    p.constraints = std::move(c);
    return p;
  }
};

TEST_F(GangConstraintsTest, MembersWithDifferentNodeConstraintsArePlannedWhereEachMayGo) {
  // m0 (first by uid) may go anywhere; m1 only into NVLink domain v2 (n4, n5).
  ASSERT_TRUE(Add({Selecting(Member("m0", 2)), Selecting(Member("m1", 2), "topology.tidal.dev/nvlink", "v2")}).ok());
  for (const std::string uid : {"uid-m0", "uid-m1"}) {
    const PlanResult r = engine_->PlanPod(uid);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_TRUE(r.node == "n4" || r.node == "n5") << uid << " planned on " << r.node;
    ASSERT_TRUE(engine_->Reserve(uid, r.node).ok());
  }
  EXPECT_EQ(engine_->Permit("uid-m1").allow.size(), 2u);
}

TEST_F(GangConstraintsTest, AMemberNoNodeAdmitsKeepsTheGangWaitingAndTheReasonNamesIt) {
  ASSERT_TRUE(Add({Selecting(Member("m0", 2)), Selecting(Member("m1", 2), "zone", "nowhere")}).ok());
  const PlanResult r = engine_->PlanPod("uid-m0");
  EXPECT_FALSE(r.status.ok()) << "planned on " << r.node << " where m1 may not go";
  EXPECT_NE(r.status.ToString().find("node selector zone=nowhere does not match"), std::string::npos)
      << r.status.ToString();
  EXPECT_EQ(engine_->Stats().plans, 0);
}

TEST(GangConstraints, AllOfAdmitsANodeExactlyWhenBothDo) {
  Node n;
  n.name = "n";
  n.labels = {{"zone", "a"}, {"gpu", "h100"}};
  n.taints = {Taint{"dedicated", "infer", TaintEffect::kNoSchedule}};
  Node plain = n;
  plain.taints.clear();
  plain.labels["gpu"] = "a100";
  auto make = [](auto fill) {
    auto c = std::make_shared<NodeConstraints>();
    fill(*c);
    return std::shared_ptr<const NodeConstraints>(c);
  };
  auto any_dedicated = make([](NodeConstraints& c) { c.tolerations = {Toleration{"dedicated", "", true, std::nullopt}}; });
  auto infer = make([](NodeConstraints& c) { c.tolerations = {Toleration{"dedicated", "infer", false, TaintEffect::kNoSchedule}}; });
  auto train = make([](NodeConstraints& c) { c.tolerations = {Toleration{"dedicated", "train", false, std::nullopt}}; });
  EXPECT_EQ(AllOf(any_dedicated, infer)->Refusal(n), "") << "both tolerate dedicated=infer";
  EXPECT_NE(AllOf(any_dedicated, train)->Refusal(n), "") << "only one tolerates dedicated=infer";
  EXPECT_NE(AllOf(infer, nullptr)->Refusal(n), "") << "a member without tolerations keeps the gang off tainted nodes";
  EXPECT_EQ(AllOf(infer, nullptr)->Refusal(plain), "");

  auto zone_a = make([](NodeConstraints& c) { c.node_selector = {{"zone", "a"}}; });
  auto zone_b = make([](NodeConstraints& c) { c.node_selector = {{"zone", "b"}}; });
  EXPECT_NE(AllOf(zone_a, zone_b)->Refusal(plain), "") << "zone a and zone b: no node";
  EXPECT_EQ(AllOf(zone_a, zone_a), zone_a) << "the same constraints are shared, not copied";

  auto in_zones = make([](NodeConstraints& c) {
    c.required = {SelectorTerm{{SelectorRequirement{"zone", SelectorOp::kIn, {"a", "b"}}}, {}}};
  });
  auto h100 = make([](NodeConstraints& c) {
    c.required = {SelectorTerm{{SelectorRequirement{"gpu", SelectorOp::kIn, {"h100"}}}, {}}};
    c.tolerations = {Toleration{"", "", true, std::nullopt}};
  });
  auto both = AllOf(in_zones, h100);
  Node untainted = n;
  untainted.taints.clear();
  EXPECT_EQ(both->Refusal(untainted), "") << "zone a, h100: both members' affinity holds";
  EXPECT_NE(both->Refusal(plain), "") << "an a100 node fails the second member's affinity";
  EXPECT_NE(both->Refusal(n), "") << "the first member tolerates no taint, though the second tolerates every one";
  auto nothing = make([](NodeConstraints& c) { c.required = {SelectorTerm{}}; });  // a term that matches nothing
  EXPECT_NE(AllOf(nothing, h100)->Refusal(n), "");
  EXPECT_TRUE(SameNodeConstraints(nullptr, make([](NodeConstraints&) {}).get()));
}

}  // namespace
}  // namespace tidal
