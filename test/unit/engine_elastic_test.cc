// Elastic gangs growing back with hysteresis (engine/engine_elastic.cc): a running elastic gang's
// waiting members are placed only once room for them has stayed free for
// elastic.growAfterSeconds, at least elastic.growMinMembers at once.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include "engine/explain_text.h"
#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;

class ElasticGrowTest : public testing::EngineFixture {
 protected:
  // Gang "el" of 4 (gang-min 2): members el0, el1 running on n0, n1; el2, el3 pending. Every
  // other node holds a pod of another scheduler (uid-b<i>), so the gang has no room to grow.
  void SetUpGang() {
    std::vector<PodInfo> pods;
    for (int i = 0; i < 4; ++i) {
      PodInfo p = GangPod("el" + std::to_string(i), "el", 4);
      p.labels[kLabelGangMin] = "2";
      p.creation_unix = 9000;
      if (i < 2) {
        p.node_name = "n" + std::to_string(i);
        p.phase = PodPhase::kRunning;
        p.start_unix = 9000;
      }
      pods.push_back(p);
    }
    for (int i = 2; i < 8; ++i) pods.push_back(Blocker(i));
    ASSERT_TRUE(Add(pods).ok());
  }
  static PodInfo Blocker(int node) {
    PodInfo p = GangPod("b" + std::to_string(node), "", 1);
    p.scheduler_name = "default-scheduler";
    p.node_name = "n" + std::to_string(node);
    p.phase = PodPhase::kRunning;
    return p;
  }
  std::vector<std::string> Activated() {
    std::vector<std::string> out;
    for (const auto& p : engine_->TakeActivations(FrontDoor::kKubernetes)) out.push_back(p.name);
    std::sort(out.begin(), out.end());
    return out;
  }
  size_t GrowWaits() {
    for (const auto& [name, n] : engine_->Census()) {
      if (name == "grow_waits") return n;
    }
    return 999;
  }
};

TEST_F(ElasticGrowTest, AGangGrowsOnlyOnceTheRoomHasStayedFreeForTheWait) {
  SetUpGang();
  PlanResult r = engine_->PlanPod("uid-el2");
  EXPECT_FALSE(r.status.ok()) << "no room yet";
  EXPECT_EQ(GrowWaits(), 0u) << "no room: no wait starts";
  ASSERT_TRUE(Delete({"uid-b2", "uid-b3"}).ok());  // room for both waiting members
  r = engine_->PlanPod("uid-el2");
  ASSERT_FALSE(r.status.ok()) << "room appeared just now: the gang waits";
  EXPECT_EQ(r.status.code(), StatusCode::kUnschedulable);
  EXPECT_NE(r.status.Message().find("grows by 2 once the room stays free for 30s (in 30s"), std::string::npos)
      << r.status.Message();
  EXPECT_TRUE(Activated().empty());
  now_ += 29;
  EXPECT_TRUE(Activated().empty()) << "the wait has not ended";
  r = engine_->PlanPod("uid-el3");
  EXPECT_NE(r.status.Message().find("(in 1s"), std::string::npos) << r.status.Message();
  now_ += 1;
  EXPECT_EQ(Activated(), (std::vector<std::string>{"el2", "el3"})) << "kube-scheduler sees no event when a wait ends";
  EXPECT_TRUE(Activated().empty()) << "each pod is handed over once";
  r = engine_->PlanPod("uid-el2");
  ASSERT_TRUE(r.status.ok()) << r.status.Message();
  PlanResult r3 = engine_->PlanPod("uid-el3");
  ASSERT_TRUE(r3.status.ok()) << r3.status.Message();
  EXPECT_NE(r.node, r3.node);
  EXPECT_TRUE((r.node == "n2" || r.node == "n3") && (r3.node == "n2" || r3.node == "n3")) << r.node << " " << r3.node;
  EXPECT_EQ(GrowWaits(), 0u);
}

TEST_F(ElasticGrowTest, RoomTakenBackDuringTheWaitStartsItAgain) {
  SetUpGang();
  ASSERT_TRUE(Delete({"uid-b2", "uid-b3"}).ok());
  EXPECT_FALSE(engine_->PlanPod("uid-el2").status.ok());
  EXPECT_EQ(GrowWaits(), 1u);
  now_ += 10;
  ASSERT_TRUE(Add({Blocker(2), Blocker(3)}).ok());  // the room is taken back
  PlanResult r = engine_->PlanPod("uid-el2");
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.Message().find("grows by"), std::string::npos) << "no room, no wait: " << r.status.Message();
  EXPECT_EQ(GrowWaits(), 0u);
  now_ += 30;
  EXPECT_TRUE(Activated().empty()) << "a wait that ended without room activates nothing";
  ASSERT_TRUE(Delete({"uid-b2", "uid-b3"}).ok());
  r = engine_->PlanPod("uid-el2");
  EXPECT_NE(r.status.Message().find("(in 30s"), std::string::npos) << "the clock starts again: " << r.status.Message();
}

TEST_F(ElasticGrowTest, GrowthNeedsRoomForGrowMinMembersAtOnce) {
  EngineConfig cfg;
  cfg.elastic_grow_after_s = 0;  // at once: only the step size is tested here
  cfg.elastic_grow_min_members = 2;
  Make(cfg);
  SetUpGang();
  ASSERT_TRUE(Delete({"uid-b2"}).ok());  // room for one member only
  EXPECT_FALSE(engine_->PlanPod("uid-el2").status.ok()) << "one member of room is not worth a restart";
  ASSERT_TRUE(Delete({"uid-b3"}).ok());
  PlanResult r = engine_->PlanPod("uid-el2");
  EXPECT_TRUE(r.status.ok()) << r.status.Message();
}

TEST_F(ElasticGrowTest, AGangBelowItsMinimumStartsWithoutWaitingAndZeroSecondsTurnsTheWaitOff) {
  // Not running yet: an elastic gang starts as soon as its minimum fits (no growth, no wait).
  std::vector<PodInfo> pods;
  for (int i = 0; i < 4; ++i) {
    PodInfo p = GangPod("st" + std::to_string(i), "st", 4);
    p.labels[kLabelGangMin] = "2";
    pods.push_back(p);
  }
  ASSERT_TRUE(Add(pods).ok());
  EXPECT_TRUE(engine_->PlanPod("uid-st0").status.ok());
  EXPECT_EQ(GrowWaits(), 0u);

  EngineConfig cfg;
  cfg.elastic_grow_after_s = 0;
  Make(cfg);
  SetUpGang();
  ASSERT_TRUE(Delete({"uid-b2"}).ok());
  PlanResult r = engine_->PlanPod("uid-el2");
  EXPECT_TRUE(r.status.ok()) << "growAfterSeconds 0: grows when room appears: " << r.status.Message();
}

TEST_F(ElasticGrowTest, AGangDeletedDuringItsWaitLeavesNothingBehind) {
  SetUpGang();
  ASSERT_TRUE(Delete({"uid-b2", "uid-b3"}).ok());
  EXPECT_FALSE(engine_->PlanPod("uid-el2").status.ok());
  EXPECT_EQ(GrowWaits(), 1u);
  ASSERT_TRUE(Delete({"uid-el0", "uid-el1", "uid-el2", "uid-el3"}).ok());
  EXPECT_EQ(GrowWaits(), 0u);
  now_ += 60;
  EXPECT_TRUE(Activated().empty());
}

// An elastic gang with tidal.dev/topology-required grows only inside the domain its running
// members are in: the level is the whole gang's. Before, the members it grew by were planned as a
// workload of their own and went to whichever NVLink domain had room (on the e2e cluster a gang
// "required nvlink" ran on nvlink-0 and nvlink-2, in two leaves).
TEST_F(ElasticGrowTest, AGangWithARequiredLevelGrowsOnlyInsideItsRunningMembersDomain) {
  EngineConfig cfg;
  cfg.elastic_grow_after_s = 0;  // grows as soon as there is room: only where is tested here
  Make(cfg);
  std::vector<PodInfo> pods;
  for (int i = 0; i < 4; ++i) {
    PodInfo p = GangPod("tr" + std::to_string(i), "tr", 4, 4);
    p.labels[kLabelGangMin] = "2";
    p.annotations[kLabelTopologyRequired] = "nvlink";
    if (i < 2) p = testing::RunningOn(p, "n" + std::to_string(i), 9000);  // NVLink domain v0 (n0, n1)
    pods.push_back(p);
  }
  for (int i = 0; i < 6; ++i) {  // 4 GPUs taken beside each member in v0, and the whole of v1, v2
    PodInfo b = GangPod("b" + std::to_string(i), "", 1, i < 2 ? 4 : 8);
    b.scheduler_name = "default-scheduler";
    pods.push_back(testing::RunningOn(b, "n" + std::to_string(i), 9000));
  }
  ASSERT_TRUE(Add(pods).ok());  // v3 (n6, n7) is empty
  PlanResult r = engine_->PlanPod("uid-tr2");
  EXPECT_FALSE(r.status.ok()) << "v3 has room, but the gang runs in v0: planned on " << r.node;
  EXPECT_NE(r.status.ToString().find("has 2 member(s) running: the rest goes only into their nvlink domain"), std::string::npos)
      << r.status.ToString();
  ASSERT_TRUE(Delete({"uid-b0", "uid-b1"}).ok());  // room beside the running members
  r = engine_->PlanPod("uid-tr2");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  PlanResult r3 = engine_->PlanPod("uid-tr3");
  ASSERT_TRUE(r3.status.ok()) << r3.status.ToString();
  EXPECT_TRUE((r.node == "n0" || r.node == "n1") && (r3.node == "n0" || r3.node == "n1")) << r.node << " " << r3.node;
}

TEST(ElasticConfig, FieldsAreReadAndErrorsNameThem) {
  auto ok = ParseEngineConfig("elastic: {growAfterSeconds: 45, growMinMembers: 4}\n", "tidal.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status().Message();
  EXPECT_EQ(ok->elastic_grow_after_s, 45);
  EXPECT_EQ(ok->elastic_grow_min_members, 4);
  auto neg = ParseEngineConfig("elastic: {growAfterSeconds: -1}\n", "tidal.yaml");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().Message().find("elastic.growAfterSeconds"), std::string::npos) << neg.status().Message();
  auto zero = ParseEngineConfig("elastic: {growMinMembers: 0}\n", "tidal.yaml");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().Message().find("elastic.growMinMembers"), std::string::npos) << zero.status().Message();
  auto unknown = ParseEngineConfig("elastic: {growAfter: 5}\n", "tidal.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().Message().find("growAfter"), std::string::npos) << unknown.status().Message();
}

// An elastic gang running at or above its minimum is running, not pending: its explain record (and
// tidalctl explain) said "pending" because not all of its members were bound. It now says running,
// with the members that wait to grow it back, and still gives their dry run.
TEST_F(ElasticGrowTest, ExplainSaysAGangRunningAtItsMinimumIsRunningAndWaitsToGrow) {
  SetUpGang();
  auto j = engine_->ExplainJson("team/el");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["state"], "running") << j->dump();
  EXPECT_EQ((*j)["members"]["bound"], 2) << j->dump();
  EXPECT_EQ((*j)["growing"], 2) << j->dump();
  EXPECT_TRUE(j->contains("would")) << "the waiting members' dry run: " << j->dump();
  EXPECT_NE(ExplainRecordText(*j, now_).find("Growing:   2 member(s) wait to grow it back"), std::string::npos)
      << ExplainRecordText(*j, now_);
  // Below its minimum it is pending, as before.
  ASSERT_TRUE(Delete({"uid-el1"}).ok());
  j = engine_->ExplainJson("team/el");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["state"], "pending") << j->dump();
  EXPECT_FALSE(j->contains("growing")) << j->dump();
}

}  // namespace
}  // namespace tidal
