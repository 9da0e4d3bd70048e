// Engine: the gang protocol behind the shim's extension points, on plain domain types.
#include "engine/engine.h"
#include "engine/observability.h"

#include <set>

#include <gtest/gtest.h>

#include "test/support/engine_objects.h"

namespace tidal {
namespace {

using testing::GangPod;
using testing::GpuNode;
using testing::RunningOn;

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = Engine::Create(EngineConfig{}, [this] { return now_; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    SyncBatch b;
    b.resync = true;
    // 2 leaves x 2 nvlink x 2 nodes.
    for (int i = 0; i < 8; ++i) {
      b.upsert_nodes.push_back(GpuNode("n" + std::to_string(i), "l" + std::to_string(i / 4), "v" + std::to_string(i / 2)));
    }
    ASSERT_TRUE(Sync(b).ok());
  }
  Status Sync(const SyncBatch& b) {
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  Status AddPods(std::vector<PodInfo> pods) {
    SyncBatch b;
    b.upsert_pods = std::move(pods);
    return Sync(b);
  }
  int64_t now_ = 1000;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineTest, GangWaitsUntilAllMembersExistThenPlansWholeGangInOneLeaf) {
  std::vector<PodInfo> pods;
  for (int i = 0; i < 4; ++i) {
    PodInfo p = GangPod("w" + std::to_string(i), "train", 4);
    p.labels[kLabelTopologyRequired] = "leaf";
    pods.push_back(p);
  }
  ASSERT_TRUE(AddPods({pods[0], pods[1]}).ok());
  std::string gang;
  Status st = engine_->CheckPod("uid-w0", &gang);
  EXPECT_EQ(st.code(), StatusCode::kWait);
  EXPECT_NE(st.Message().find("2 of 4 members"), std::string::npos) << st.Message();
  ASSERT_TRUE(AddPods({pods[2], pods[3]}).ok());
  EXPECT_TRUE(engine_->CheckPod("uid-w0", &gang).ok());
  EXPECT_EQ(gang, "team/train");

  std::set<std::string> nodes;
  std::string leaf;
  for (int i = 0; i < 4; ++i) {
    PlanResult r = engine_->PlanPod("uid-w" + std::to_string(i));
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    nodes.insert(r.node);
    if (i == 0) leaf = r.domain;
    EXPECT_EQ(r.domain, leaf);
  }
  EXPECT_EQ(nodes.size(), 4u);
  // Asking again returns the same slot.
  EXPECT_EQ(engine_->PlanPod("uid-w0").node, engine_->PlanPod("uid-w0").node);

  for (int i = 0; i < 4; ++i) {
    const std::string uid = "uid-w" + std::to_string(i);
    ASSERT_TRUE(engine_->Reserve(uid, engine_->PlanPod(uid).node).ok());
    PermitResult p = engine_->Permit(uid);
    if (i < 3) {
      EXPECT_EQ(p.status.code(), StatusCode::kWait);
      EXPECT_GT(p.wait_timeout_ms, 0);
    } else {
      ASSERT_TRUE(p.status.ok()) << p.status.ToString();
      EXPECT_EQ(p.allow.size(), 4u);
    }
  }
}

TEST_F(EngineTest, SecondGangThatDoesNotFitGetsNoSlotAndFirstPlanHoldsCapacity) {
  std::vector<PodInfo> a, b;
  for (int i = 0; i < 5; ++i) a.push_back(GangPod("a" + std::to_string(i), "ga", 5));
  for (int i = 0; i < 5; ++i) b.push_back(GangPod("b" + std::to_string(i), "gb", 5));
  ASSERT_TRUE(AddPods(a).ok());
  ASSERT_TRUE(AddPods(b).ok());
  ASSERT_TRUE(engine_->PlanPod("uid-a0").status.ok());
  PlanResult rb = engine_->PlanPod("uid-b0");
  EXPECT_EQ(rb.status.code(), StatusCode::kUnschedulable);
  EXPECT_TRUE(rb.node.empty());
  EXPECT_NE(rb.status.Message().find("room for 3 of 5"), std::string::npos) << rb.status.Message();
}

TEST_F(EngineTest, UnreserveReleasesWholeGangPlan) {
  std::vector<PodInfo> a;
  for (int i = 0; i < 3; ++i) a.push_back(GangPod("a" + std::to_string(i), "ga", 3));
  ASSERT_TRUE(AddPods(a).ok());
  for (int i = 0; i < 3; ++i) {
    const std::string uid = "uid-a" + std::to_string(i);
    ASSERT_TRUE(engine_->Reserve(uid, engine_->PlanPod(uid).node).ok());
  }
  auto released = engine_->Unreserve("uid-a1");
  EXPECT_EQ(released.size(), 2u);
  EXPECT_EQ(engine_->Permit("uid-a0").status.code(), StatusCode::kUnschedulable);
  EXPECT_EQ(engine_->Stats().plans, 0);
  // Capacity came back: an 8-node gang fits again.
  std::vector<PodInfo> big;
  for (int i = 0; i < 8; ++i) big.push_back(GangPod("big" + std::to_string(i), "big", 8));
  ASSERT_TRUE(AddPods(big).ok());
  EXPECT_TRUE(engine_->PlanPod("uid-big0").status.ok());
}

TEST_F(EngineTest, PodsOfOtherSchedulersUseCapacity) {
  std::vector<PodInfo> others;
  for (int i = 0; i < 7; ++i) {
    PodInfo p = GangPod("other" + std::to_string(i), "", 1);
    p.scheduler_name = "default-scheduler";
    p.node_name = "n" + std::to_string(i);
    p.phase = PodPhase::kRunning;
    others.push_back(p);
  }
  ASSERT_TRUE(AddPods(others).ok());
  ASSERT_TRUE(AddPods({GangPod("solo", "", 1)}).ok());
  PlanResult r = engine_->PlanPod("uid-solo");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.node, "n7");
  // A finished pod frees its node.
  others[0].phase = PodPhase::kSucceeded;
  ASSERT_TRUE(AddPods({others[0]}).ok());
  ASSERT_TRUE(AddPods({GangPod("solo2", "", 1)}).ok());
  EXPECT_EQ(engine_->PlanPod("uid-solo2").node, "n0");
}

TEST_F(EngineTest, MalformedAnnotationIsReportedNamingKeyAndAcceptedValues) {
  PodInfo p = GangPod("bad", "g", 2);
  p.annotations[kLabelTopologyRequired] = "rack";
  ASSERT_TRUE(AddPods({p}).ok());
  std::string gang;
  Status st = engine_->CheckPod("uid-bad", &gang);
  EXPECT_EQ(st.code(), StatusCode::kUnschedulableAndUnresolvable);
  EXPECT_NE(st.Message().find("tidal.dev/topology-required: invalid value \"rack\""), std::string::npos) << st.Message();
  EXPECT_NE(st.Message().find("block, leaf, nvlink, node"), std::string::npos);
  PodInfo q = GangPod("bad2", "g2", 2);
  q.labels[kLabelGangSize] = "many";
  ASSERT_TRUE(AddPods({q}).ok());
  EXPECT_NE(engine_->CheckPod("uid-bad2", &gang).Message().find("tidal.dev/gang-size"), std::string::npos);
}

TEST_F(EngineTest, BoundMembersMoveFromPlanToPodChargeAndPlanEnds) {
  std::vector<PodInfo> a;
  for (int i = 0; i < 2; ++i) a.push_back(GangPod("a" + std::to_string(i), "ga", 2));
  ASSERT_TRUE(AddPods(a).ok());
  for (auto& p : a) {
    p.node_name = engine_->PlanPod(p.uid).node;
    ASSERT_TRUE(engine_->Reserve(p.uid, p.node_name).ok());
  }
  ASSERT_TRUE(engine_->Permit("uid-a0").status.ok());
  for (const auto& p : a) ASSERT_TRUE(engine_->Bound(p.uid, p.node_name).ok());
  EXPECT_EQ(engine_->Stats().plans, 0);
  // The informer later reports the same binding: no double charge. 6 whole nodes remain.
  for (auto& p : a) p.phase = PodPhase::kRunning;
  ASSERT_TRUE(AddPods(a).ok());
  std::vector<PodInfo> c;
  for (int i = 0; i < 6; ++i) c.push_back(GangPod("c" + std::to_string(i), "gc", 6));
  ASSERT_TRUE(AddPods(c).ok());
  EXPECT_TRUE(engine_->PlanPod("uid-c0").status.ok());
}

TEST_F(EngineTest, PlanExpiresWhenMembersDoNotReserveInTime) {
  std::vector<PodInfo> a;
  for (int i = 0; i < 2; ++i) a.push_back(GangPod("a" + std::to_string(i), "ga", 2));
  ASSERT_TRUE(AddPods(a).ok());
  ASSERT_TRUE(engine_->PlanPod("uid-a0").status.ok());
  EXPECT_EQ(engine_->Stats().plans, 1);
  now_ += 121;
  ASSERT_TRUE(AddPods({}).ok());
  EXPECT_EQ(engine_->Stats().plans, 0);
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/ga", &text).ok());
  EXPECT_NE(text.find("plan expired"), std::string::npos) << text;
}

TEST_F(EngineTest, ResyncReplacesEverything) {
  ASSERT_TRUE(AddPods({GangPod("solo", "", 1)}).ok());
  ASSERT_TRUE(engine_->PlanPod("uid-solo").status.ok());
  SyncBatch b;
  b.resync = true;
  b.upsert_nodes.push_back(GpuNode("m0", "l0", "v0"));
  ASSERT_TRUE(Sync(b).ok());
  const EngineStats s = engine_->Stats();
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(s.pods, 0);
  EXPECT_EQ(s.plans, 0);
  EXPECT_EQ(engine_->PlanPod("uid-solo").status.code(), StatusCode::kUnschedulable);
}

TEST_F(EngineTest, MalformedSyncObjectsAreNamedAndTheRestApplies) {
  SyncBatch b;
  PodInfo nouid = GangPod("x", "", 1);
  nouid.uid = "";
  b.upsert_pods = {nouid, GangPod("fine", "", 1)};
  NodeInfo bad = GpuNode("neg", "l9", "v9");
  bad.capacity.gpus = -1;
  b.upsert_nodes = {bad};
  Status st = Sync(b);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(engine_->Stats().pods, 1);
  EXPECT_EQ(engine_->Stats().nodes, 8);
}

}  // namespace
}  // namespace tidal

namespace tidal {
namespace {

// Every node full with a bound 8-GPU pod; node i's pod ends 1 h x (i + 1) after t=1000.
std::vector<PodInfo> FullCluster() {
  std::vector<PodInfo> bound;
  for (int i = 0; i < 8; ++i) {
    PodInfo p = GangPod("busy" + std::to_string(i), "", 1);
    p.annotations[kLabelRuntimeLimit] = std::to_string(i + 1) + "h";
    p.node_name = "n" + std::to_string(i);
    p.phase = PodPhase::kRunning;
    bound.push_back(p);
  }
  return bound;
}

TEST_F(EngineTest, ExplainEtaReleasesBoundPodsAtTheirDeclaredEnd) {
  // Every node is full with a bound 8-GPU pod (runtime-limit annotation). A pending 2 x 8-GPU gang
  // can start when the second one ends.
  ASSERT_TRUE(AddPods(FullCluster()).ok());
  now_ = 1600;  // the bound times stay those the engine first saw (1000)
  ASSERT_TRUE(AddPods({GangPod("t0", "pair", 2), GangPod("t1", "pair", 2)}).ok());
  auto j = engine_->ExplainJson("team/pair");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["state"], "pending") << j->dump();
  ASSERT_TRUE((*j)["eta_unix"].is_number()) << j->dump();
  EXPECT_EQ((*j)["eta_unix"].get<int64_t>(), 1000 + 2 * 3600) << j->dump();
  // A pod's departure is its end: with busy1 gone, the pair can start when busy0 ends at 1000+1h.
  SyncBatch gone;
  gone.delete_pods = {"uid-busy1"};
  ASSERT_TRUE(Sync(gone).ok());
  j = engine_->ExplainJson("team/pair");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["eta_unix"].get<int64_t>(), 1000 + 3600) << j->dump();
}

}  // namespace
}  // namespace tidal

namespace tidal {
namespace {

TEST_F(EngineTest, GangThatDoesNotFitGetsAReservationThatLaterPlansHonour) {
  ASSERT_TRUE(AddPods(FullCluster()).ok());
  PodInfo a = GangPod("p0", "pair", 2), b = GangPod("p1", "pair", 2);
  a.annotations[kLabelRuntimeLimit] = b.annotations[kLabelRuntimeLimit] = "1h";
  ASSERT_TRUE(AddPods({a, b}).ok());
  // Nothing is free: the pair waits, with a reservation when n0 and n1 are both free (1000 + 2 h).
  PlanResult r = engine_->PlanPod("uid-p0");
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.ToString().find("reserved to start in 2h (1970-01-01T02:16:40Z)"), std::string::npos) << r.status.ToString();
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/pair", &text).ok());
  EXPECT_NE(text.find("reserved to start in 2h (1970-01-01T02:16:40Z)"), std::string::npos) << text;
  const EngineGauges held = engine_->Gauges();
  ASSERT_EQ(held.reservations.size(), 1u);
  EXPECT_EQ(held.reservations[0].value, 1);

  // busy0 leaves at 1600: n0 is free, but it is held for the pair from 8200. A pod that would
  // still run then may not take it; one that ends before may.
  now_ = 1600;
  SyncBatch gone;
  gone.delete_pods = {"uid-busy0"};
  ASSERT_TRUE(Sync(gone).ok());
  PodInfo longer = GangPod("long", "", 1, 1), shorter = GangPod("short", "", 1, 1);
  longer.annotations[kLabelRuntimeLimit] = "10h";
  shorter.annotations[kLabelRuntimeLimit] = "30m";
  ASSERT_TRUE(AddPods({longer, shorter}).ok());
  PlanResult l = engine_->PlanPod("uid-long");
  EXPECT_FALSE(l.status.ok()) << "took " << l.node << ": it would delay the pair's reservation";
  PlanResult s = engine_->PlanPod("uid-short");
  ASSERT_TRUE(s.status.ok()) << s.status.ToString();
  EXPECT_EQ(s.node, "n0");

  // At 8200 busy1 has left and short is done: the pair starts on its reserved nodes.
  now_ = 8200;
  SyncBatch done;
  done.delete_pods = {"uid-busy1", "uid-short"};
  ASSERT_TRUE(Sync(done).ok());
  PlanResult p0 = engine_->PlanPod("uid-p0");
  ASSERT_TRUE(p0.status.ok()) << p0.status.ToString();
  PlanResult p1 = engine_->PlanPod("uid-p1");
  ASSERT_TRUE(p1.status.ok()) << p1.status.ToString();
  EXPECT_EQ(std::set<std::string>({p0.node, p1.node}), (std::set<std::string>{"n0", "n1"}));
  for (const auto& row : engine_->Gauges().reservations) EXPECT_EQ(row.value, 0) << "a planned gang holds no reservation";
}

}  // namespace
}  // namespace tidal

namespace tidal {
namespace {

// The pair of FullCluster() waits with a reservation on n0 and n1 (from 1000 + 2 h).
class ReservedPairTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_TRUE(AddPods(FullCluster()).ok());
    PodInfo a = GangPod("p0", "pair", 2), b = GangPod("p1", "pair", 2);
    a.annotations[kLabelRuntimeLimit] = b.annotations[kLabelRuntimeLimit] = "1h";
    a.creation_unix = b.creation_unix = 900;  // ahead of anything created later
    ASSERT_TRUE(AddPods({a, b}).ok());
    ASSERT_FALSE(engine_->PlanPod("uid-p0").status.ok());
    ASSERT_EQ(engine_->Gauges().reservations.size(), 1u);
  }
  // busy0 leaves: n0 is free but reserved. A 10 h 1-GPU pod arrives and asks for a plan.
  PlanResult FreeN0AndPlanLong() {
    SyncBatch gone;
    gone.delete_pods = {"uid-busy0"};
    EXPECT_TRUE(Sync(gone).ok());
    PodInfo longer = GangPod("long", "", 1, 1);
    longer.annotations[kLabelRuntimeLimit] = "10h";
    longer.creation_unix = now_;
    EXPECT_TRUE(AddPods({longer}).ok());
    return engine_->PlanPod("uid-long");
  }
};

TEST_F(ReservedPairTest, ReservationSurvivesANodeChangeThatRebuildsTheState) {
  // A label on an unrelated node rebuilds the engine's cluster state (new NodeIds by name): the
  // book moves with it, so n0 is still held for the pair.
  SyncBatch relabel;
  NodeInfo n7 = GpuNode("n7", "l1", "v3");
  n7.labels["team"] = "infra";
  relabel.upsert_nodes = {n7};
  ASSERT_TRUE(Sync(relabel).ok());
  PlanResult l = FreeN0AndPlanLong();
  EXPECT_FALSE(l.status.ok()) << "took " << l.node << ": it would delay the pair's reservation";
  EXPECT_NE(l.status.ToString().find("held for earlier reservations"), std::string::npos) << l.status.ToString();
}

TEST_F(ReservedPairTest, ReservationOnACordonedNodeIsDroppedAndReplannedAtTheNextPlan) {
  // n1 is cordoned: the reservation on n0+n1 cannot start there, so it is dropped; the next plan
  // (here another pod's, in the same second) re-plans it on nodes that take work.
  SyncBatch cordon;
  NodeInfo n1 = GpuNode("n1", "l0", "v0");
  n1.unschedulable = true;
  cordon.upsert_nodes = {n1};
  ASSERT_TRUE(Sync(cordon).ok());
  now_ += 1;
  (void)FreeN0AndPlanLong();
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/pair", &text).ok());
  // n0 free now and n2 free at 1000 + 3 h: the pair is reserved from then on two nodes.
  EXPECT_NE(text.find("reservation: reserved to start in 2h59m59s"), std::string::npos) << text;
}

TEST_F(EngineTest, AGangRefusedWhileTheBookIsFreshGetsItsReservationAtTheNextPlan) {
  // Two gangs fail in the same second: the second one's refresh is skipped (at most one a
  // second), and the book is refreshed by the next plan of any pod a second later, even one that
  // fits (n7 frees).
  ASSERT_TRUE(AddPods(FullCluster()).ok());
  ASSERT_TRUE(AddPods({GangPod("a0", "first", 1)}).ok());
  ASSERT_FALSE(engine_->PlanPod("uid-a0").status.ok());
  ASSERT_TRUE(AddPods({GangPod("b0", "second", 1)}).ok());
  PlanResult b = engine_->PlanPod("uid-b0");
  ASSERT_FALSE(b.status.ok());
  EXPECT_EQ(b.status.ToString().find("reserved to start"), std::string::npos) << "refreshed twice in one second";
  now_ += 1;
  SyncBatch gone;
  gone.delete_pods = {"uid-busy7"};
  ASSERT_TRUE(Sync(gone).ok());
  ASSERT_TRUE(AddPods({GangPod("c0", "", 1, 1)}).ok());
  ASSERT_TRUE(engine_->PlanPod("uid-c0").status.ok());
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/second", &text).ok());
  EXPECT_NE(text.find("reservation: reserved to start"), std::string::npos) << text;
}

}  // namespace
}  // namespace tidal

namespace tidal {
namespace {

// Three bound pods of tidal-scheduler (10 m declared, 2 h declared, none declared) and one of
// another scheduler (10 m declared), all first seen bound at t=1000.
std::vector<PodInfo> Runners() {
  std::vector<PodInfo> pods;
  for (const auto& [name, limit] : std::vector<std::pair<std::string, std::string>>{{"short", "10m"}, {"long", "2h"}, {"open", ""}, {"other", "10m"}}) {
    PodInfo p = GangPod(name, "", 1, 1);
    if (!limit.empty()) p.annotations[kLabelRuntimeLimit] = limit;
    if (name == "other") p.scheduler_name = "default-scheduler";
    p.node_name = "n0";
    p.phase = PodPhase::kRunning;
    pods.push_back(p);
  }
  return pods;
}

std::vector<std::string> OverdueNames(Engine& e) {
  std::vector<std::string> out;
  for (const auto& o : e.Overdue()) out.push_back(o.pod.name + ": " + o.reason);
  return out;
}

TEST_F(EngineTest, OverdueReportsOwnPodsPastTheirDeclaredLimitPlusGrace) {
  metrics::Registry reg;
  EngineMetrics m(reg);
  engine_->SetObservability(&m, nullptr);
  ASSERT_TRUE(AddPods(Runners()).ok());
  now_ = 1000 + 600 + 59;  // 10 m + 59 s: inside the default 60 s grace
  EXPECT_TRUE(engine_->Overdue().empty());
  now_ = 1000 + 600 + 60;
  EXPECT_EQ(OverdueNames(*engine_), std::vector<std::string>{"short: ran 11m, over its tidal.dev/runtime-limit of 10m (grace 1m)"});
  now_ = 1000 + 3 * 3600;  // every declared limit passed; "open" declared none, "other" is not ours
  EXPECT_EQ(engine_->Overdue().size(), 2u);
  EXPECT_EQ(m.runtime_limit_exceeded.With({"default"}).Value(), 2) << "each pod counted once, however often asked";
  // Once terminating (being evicted) a pod is not reported again.
  PodInfo going = Runners()[0];
  going.terminating = true;
  ASSERT_TRUE(AddPods({going}).ok());
  ASSERT_EQ(engine_->Overdue().size(), 1u);
  EXPECT_EQ(engine_->Overdue()[0].pod.name, "long");
}

TEST_F(EngineTest, RunTimeCountsFromTheKubeletsStartTime) {
  // Seen bound at 1000 but not started (an image pull): nothing counts yet beyond the bound time.
  std::vector<PodInfo> pods = Runners();
  pods.resize(1);  // "short": 10 m declared
  ASSERT_TRUE(AddPods(pods).ok());
  // The kubelet reports the start at 1300: the limit runs out at 1300 + 10 m + 1 m grace.
  pods[0].start_unix = 1300;
  ASSERT_TRUE(AddPods(pods).ok());
  now_ = 1300 + 600 + 59;
  EXPECT_TRUE(engine_->Overdue().empty()) << "counted from the bound time, not the start";
  now_ = 1300 + 600 + 60;
  EXPECT_EQ(engine_->Overdue().size(), 1u);
}

TEST(EngineConfigTest, RuntimeLimitEnforcementCanBeTurnedOffOrGivenAGrace) {
  auto off = ParseEngineConfig("runtimeLimit: {enforce: false}\n", "t.yaml");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_FALSE(off->enforce_runtime_limit);
  auto graced = ParseEngineConfig("runtimeLimit: {graceSeconds: 0}\n", "t.yaml");
  ASSERT_TRUE(graced.ok()) << graced.status().ToString();
  EXPECT_TRUE(graced->enforce_runtime_limit);
  EXPECT_EQ(graced->runtime_limit_grace_s, 0);

  int64_t now = 1000;
  auto e = Engine::Create(*off, [&now] { return now; });
  ASSERT_TRUE(e.ok());
  SyncBatch b;
  b.resync = true;
  b.upsert_nodes = {GpuNode("n0", "l0", "v0")};
  b.upsert_pods = Runners();
  uint64_t gen = 0;
  ASSERT_TRUE((*e)->Sync(b, &gen).ok());
  now = 1000 + 86400;
  EXPECT_TRUE((*e)->Overdue().empty()) << "enforcement is off";
}

}  // namespace
}  // namespace tidal
