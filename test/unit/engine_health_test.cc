// Node health, lost members and gang-aware drains (engine/engine_health.cc, engine/node_health.h):
// the causes of the disruption path that come from the fleet. Every disruption takes a gang whole.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include "engine/engine.h"
#include "engine/observability.h"

#include <gtest/gtest.h>

#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;

class HealthTest : public testing::EngineFixture {
 protected:
  Status UpdateNode(const NodeInfo& n) {
    SyncBatch b;
    b.upsert_nodes = {n};
    return Sync(b);
  }
  // A running gang `gang` of `size` (gang-min `min`, 0 = rigid) on nodes first.., started at start.
  std::vector<PodInfo> Running(const std::string& gang, int size, int first, int min = 0, int64_t start = 9000) {
    std::vector<PodInfo> pods;
    for (int i = 0; i < size; ++i) {
      PodInfo p = GangPod(gang + std::to_string(i), gang, size);
      if (min > 0) p.labels[kLabelGangMin] = std::to_string(min);
      p.node_name = "n" + std::to_string(first + i);
      p.phase = PodPhase::kRunning;
      p.start_unix = start;
      pods.push_back(p);
    }
    return pods;
  }
  double Gauge(const std::vector<EngineGauges::Row>& rows, const std::string& label) {
    for (const auto& r : rows) {
      if (r.labels.size() == 1 && r.labels[0] == label) return r.value;
    }
    return -1;
  }
};

TEST(NodeHealthRules, DefaultsReadConditionsAndLabelsTheWorstWins) {
  NodeHealthConfig cfg;
  EXPECT_EQ(JudgeNodeHealth({}, {}, cfg).health, NodeHealth::kReady);
  EXPECT_EQ(JudgeNodeHealth({}, {{"GPUUnhealthy", "True", "XID 79"}}, cfg).health, NodeHealth::kUnhealthy);
  EXPECT_EQ(JudgeNodeHealth({}, {{"GPUUnhealthy", "False", ""}}, cfg).health, NodeHealth::kReady);
  EXPECT_EQ(JudgeNodeHealth({}, {{"AcceleratedHardwareReady", "False", ""}}, cfg).health, NodeHealth::kUnhealthy);
  auto v = JudgeNodeHealth({{"tidal.dev/health", "degraded"}}, {}, cfg);
  EXPECT_EQ(v.health, NodeHealth::kDegraded);
  EXPECT_EQ(v.reason, "label tidal.dev/health=degraded");
  EXPECT_EQ(JudgeNodeHealth({{"tidal.dev/health", "degraded"}}, {{"GPUUnhealthy", "True", ""}}, cfg).health,
            NodeHealth::kUnhealthy);
}

TEST(NodeHealthRules, ConfigRulesReplaceTheDefaultsAndErrorsNameTheField) {
  auto cfg = ParseEngineConfig(
      "nodeHealth:\n  unhealthyAfterSeconds: 5\n  rules:\n    - {label: nvidia.com/gpu.xid-errors, above: 2, health: degraded}\n",
      "engine.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->node_health.unhealthy_after_s, 5);
  EXPECT_EQ(JudgeNodeHealth({{"nvidia.com/gpu.xid-errors", "3"}}, {}, cfg->node_health).health, NodeHealth::kDegraded);
  EXPECT_EQ(JudgeNodeHealth({{"nvidia.com/gpu.xid-errors", "2"}}, {}, cfg->node_health).health, NodeHealth::kReady);
  EXPECT_EQ(JudgeNodeHealth({{"nvidia.com/gpu.xid-errors", "many"}}, {}, cfg->node_health).health, NodeHealth::kReady);
  EXPECT_EQ(JudgeNodeHealth({}, {{"GPUUnhealthy", "True", ""}}, cfg->node_health).health, NodeHealth::kReady) << "replaced";
  for (const auto& [yaml, field] : std::vector<std::pair<std::string, std::string>>{
           {"nodeHealth: {rules: [{condition: X, health: sick}]}", "nodeHealth.rules[0].health"},
           {"nodeHealth: {rules: [{condition: X, label: y, health: degraded}]}", "nodeHealth.rules[0]"},
           {"nodeHealth: {rules: [{label: y, health: degraded}]}", "nodeHealth.rules[0]"},
           {"nodeHealth: {unhealthyAfterSeconds: -1}", "nodeHealth.unhealthyAfterSeconds"},
           {"nodeHealth: {grace: 1}", "nodeHealth.grace"}}) {
    auto bad = ParseEngineConfig(yaml, "engine.yaml");
    ASSERT_FALSE(bad.ok()) << yaml;
    EXPECT_NE(bad.status().ToString().find(field), std::string::npos) << bad.status().ToString();
  }
}

TEST_F(HealthTest, AnUnhealthyNodeDisruptsEveryGangWithAMemberThereWholeAfterTheGrace) {
  ASSERT_TRUE(Add(Running("job", 2, 0)).ok());
  NodeInfo bad = Node(0);
  bad.conditions = {{"GPUUnhealthy", "True", "XID 79"}};
  ASSERT_TRUE(UpdateNode(bad).ok());
  EXPECT_EQ(Gauge(engine_->Gauges().node_health, "unhealthy"), 1);
  now_ += 60;
  EXPECT_TRUE(Poll().empty()) << "a node flapping for no more than unhealthyAfterSeconds costs nothing "
                                 "(it may have turned unhealthy late in its whole second)";
  now_ += 1;
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].cause, "unhealthy-node");
  EXPECT_EQ(a[0].pods.size(), 2u) << "the member on the healthy node goes too: the gang is requeued whole";
  EXPECT_NE(a[0].reason.find("GPUUnhealthy"), std::string::npos) << a[0].reason;
  ASSERT_TRUE(Delete({"uid-job0", "uid-job1"}).ok());
  EXPECT_EQ(metrics_.disruptions.With({"unhealthy-node"}).Value(), 1);
  EXPECT_EQ(metrics_.gangs_requeued_whole.With({"unhealthy-node"}).Value(), 1);
}

TEST_F(HealthTest, AnElasticGangOnAnUnhealthyNodeGivesBackOnlyItsMembersThere) {
  ASSERT_TRUE(Add(Running("el", 4, 0, 2)).ok());
  NodeInfo bad = Node(0);
  bad.labels["tidal.dev/health"] = "unhealthy";
  ASSERT_TRUE(UpdateNode(bad).ok());
  now_ += 61;
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(a[0].pods.size(), 1u) << "three of four stay, gang-min 2: it shrinks";
  EXPECT_EQ(a[0].pods[0].name, "el0");
  ASSERT_TRUE(Delete({"uid-el0"}).ok());
  EXPECT_EQ(metrics_.gangs_requeued_whole.With({"unhealthy-node"}).Value(), 0);
}

TEST_F(HealthTest, ANodeThatRecoversWithinTheGraceDisruptsNothing) {
  ASSERT_TRUE(Add(Running("job", 2, 0)).ok());
  NodeInfo n = Node(0);
  n.ready = false;
  ASSERT_TRUE(UpdateNode(n).ok());
  now_ += 30;
  n.ready = true;
  ASSERT_TRUE(UpdateNode(n).ok());
  now_ += 60;
  EXPECT_TRUE(Poll().empty());
}

TEST_F(HealthTest, DegradedNodesTakeSingleMemberWorkButNoGangs) {
  for (int i = 0; i < 8; ++i) {
    NodeInfo n = Node(i);
    n.labels["tidal.dev/health"] = "degraded";
    ASSERT_TRUE(UpdateNode(n).ok());
  }
  std::vector<PodInfo> gang = {GangPod("g0", "g", 2), GangPod("g1", "g", 2)};
  ASSERT_TRUE(Add(gang).ok());
  PlanResult r = engine_->PlanPod("uid-g0");
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.ToString().find("degraded"), std::string::npos) << r.status.ToString();
  ASSERT_TRUE(Add({GangPod("solo", "", 1)}).ok());
  EXPECT_TRUE(engine_->PlanPod("uid-solo").status.ok());
}

TEST_F(HealthTest, ARigidGangThatLosesAMemberIsRequeuedWhole) {
  std::vector<PodInfo> pods = Running("rigid", 3, 0);
  ASSERT_TRUE(Add(pods).ok());
  pods[1].terminating = true;  // deleted while it ran: its kubelet terminates it
  ASSERT_TRUE(Add({pods[1]}).ok());
  ASSERT_TRUE(Delete({"uid-rigid1"}).ok());
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].cause, "member-lost");
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kEvict);
  EXPECT_EQ(a[0].pods.size(), 2u);
  EXPECT_NE(a[0].reason.find("rigid1"), std::string::npos) << a[0].reason;
  // Their own evictions lose no further "member".
  ASSERT_TRUE(Delete({"uid-rigid0", "uid-rigid2"}).ok());
  EXPECT_TRUE(Poll().empty());
  EXPECT_EQ(metrics_.disruptions.With({"member-lost"}).Value(), 1);
}

TEST_F(HealthTest, AFailedMemberCountsAsLostACompletedOneDoesNot) {
  std::vector<PodInfo> pods = Running("rigid", 2, 0);
  ASSERT_TRUE(Add(pods).ok());
  pods[0].phase = PodPhase::kSucceeded;
  ASSERT_TRUE(Add({pods[0]}).ok());
  EXPECT_TRUE(Poll().empty()) << "a member that finished is not lost";
  std::vector<PodInfo> other = Running("other", 2, 4);
  ASSERT_TRUE(Add(other).ok());
  other[1].phase = PodPhase::kFailed;
  ASSERT_TRUE(Add({other[1]}).ok());
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].id, "team/other");
}

// Bug (seen in the soak): a member whose completion the engine never saw (Succeeded and reaped
// while the scheduler restarted, so its resync no longer named it) counted as lost, and the rest
// of its gang was evicted.
TEST_F(HealthTest, AMemberThatOnlyVanishesFromAResyncIsNotLost) {
  ASSERT_TRUE(Add(Running("rigid", 3, 0)).ok());
  SyncBatch resync;  // a door's snapshot that names only rigid0
  resync.resync = true;
  for (int i = 0; i < 8; ++i) resync.upsert_nodes.push_back(Node(i));
  std::vector<PodInfo> left = Running("rigid", 3, 0);
  resync.upsert_pods = {left[0]};
  ASSERT_TRUE(Sync(resync).ok());
  EXPECT_TRUE(Poll().empty()) << "unknown is never lost";
}

// Bug (seen in the soak, issue 14): a member that finished and was reaped within one coalesced
// Sync batch reached the engine as a bare delete of a running pod, so its gang was evicted. The
// shim now sends the final state before the delete in the same batch (deletes_test.go); the
// engine applies a batch's upserts first, so it is a completion, not a lost member.
TEST_F(HealthTest, AMemberSucceededAndDeletedInOneBatchIsNotLost) {
  std::vector<PodInfo> pods = Running("rigid", 3, 0);
  ASSERT_TRUE(Add(pods).ok());
  SyncBatch b;
  pods[2].phase = PodPhase::kSucceeded;
  b.upsert_pods = {pods[2]};
  b.delete_pods = {"uid-rigid2"};
  ASSERT_TRUE(Sync(b).ok());
  EXPECT_TRUE(Poll().empty()) << "a member that finished is not lost";
}

// A tombstone (the door's informer found the pod gone on a relist) is vanished, not deleted: how
// it ended is unknown, and unknown is never lost. The same bare delete is a lost member.
TEST_F(HealthTest, AVanishedMemberIsRemovedButNotLost) {
  ASSERT_TRUE(Add(Running("rigid", 3, 0)).ok());
  SyncBatch b;
  b.vanished_pods = {"uid-rigid1"};
  ASSERT_TRUE(Sync(b).ok());
  EXPECT_TRUE(Poll().empty()) << "unknown is never lost";
  ASSERT_TRUE(Delete({"uid-rigid0"}).ok());
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u) << "an observed delete of a running member is a lost member";
  EXPECT_EQ(a[0].cause, "member-lost");
  EXPECT_EQ(a[0].pods.size(), 1u) << "rigid1 is gone from the engine: only rigid2 is left to evict";
}

TEST_F(HealthTest, AnElasticGangShrinksUntilBelowItsMinimum) {
  std::vector<PodInfo> pods = Running("elastic", 3, 0, 2);
  ASSERT_TRUE(Add(pods).ok());
  for (int i : {0, 1}) pods[i].terminating = true;
  ASSERT_TRUE(Add({pods[0]}).ok());
  ASSERT_TRUE(Delete({"uid-elastic0"}).ok());
  EXPECT_TRUE(Poll().empty()) << "two of three left, gang-min 2: it keeps running";
  ASSERT_TRUE(Add({pods[1]}).ok());
  ASSERT_TRUE(Delete({"uid-elastic1"}).ok());
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].pods.size(), 1u);
  EXPECT_NE(a[0].reason.find("gang-min 2"), std::string::npos) << a[0].reason;
}

TEST_F(HealthTest, ADrainLetsWorkThatEndsInTimeFinishAndMovesTheRestBeforeTheDeadline) {
  PodInfo shortp = GangPod("short", "", 1);
  shortp.annotations[kLabelRuntimeLimit] = "20s";
  shortp.node_name = "n0";
  shortp.phase = PodPhase::kRunning;
  shortp.start_unix = now_ - 5;
  PodInfo longp = GangPod("long", "", 1);
  longp.node_name = "n1";
  longp.phase = PodPhase::kRunning;
  longp.start_unix = now_ - 5;
  ASSERT_TRUE(Add({shortp, longp}).ok());
  auto report = engine_->Drain({"n0", "n1", "nope"}, now_ + 100, false);
  ASSERT_EQ(report.size(), 3u);
  EXPECT_EQ(report[0].node, "n0");
  EXPECT_EQ(report[0].state, "draining");
  EXPECT_EQ(report[0].free_at_unix, now_ + 15) << "short ends by its runtime limit";
  EXPECT_EQ(report[1].state, "draining");
  EXPECT_EQ(report[1].free_at_unix, now_ + 100);
  EXPECT_EQ(report[2].state, "unknown-node");
  EXPECT_EQ(Gauge(engine_->Gauges().node_health, "draining"), 2);
  EXPECT_TRUE(Poll().empty()) << "long still runs: it goes as late as its notice allows";
  now_ += 70;  // by - 30 s of slack
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].id, "team/pod/long");
  EXPECT_EQ(a[0].cause, "drain");
  ASSERT_TRUE(Delete({"uid-long", "uid-short"}).ok());
  report = engine_->Drain({}, 0, false);
  ASSERT_EQ(report.size(), 2u);
  EXPECT_EQ(report[0].state, "drained");
  EXPECT_EQ(report[1].state, "drained");
  EXPECT_EQ(metrics_.disruptions.With({"drain"}).Value(), 1);
  ASSERT_TRUE(Add({GangPod("after", "", 1)}).ok());
  (void)engine_->TakeActivations(FrontDoor::kKubernetes);
  engine_->Drain({"n0", "n1"}, 0, true);
  EXPECT_TRUE(engine_->Drain({}, 0, false).empty());
  auto act = engine_->TakeActivations(FrontDoor::kKubernetes);
  ASSERT_EQ(act.size(), 1u) << "kube-scheduler sees no event for a cancelled drain: the engine hands the pod back";
  EXPECT_EQ(act[0].name, "after");
  EXPECT_EQ(Gauge(engine_->Gauges().node_health, "draining"), 0);
}

TEST_F(HealthTest, ADrainedWorkloadThatCheckpointsOnNoticeGetsItsNoticeBeforeTheDeadline) {
  ASSERT_TRUE(Add({testing::CheckpointingPod("ckpt", "n0", now_)}).ok());
  engine_->Drain({"n0"}, now_ + 200, false);
  now_ += 109;
  EXPECT_TRUE(Poll().empty());
  now_ += 1;  // by - 60 s notice - 30 s slack
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kNotice);
  EXPECT_EQ(a[0].deadline_unix, now_ + 60);
  EXPECT_LE(a[0].deadline_unix, now_ + 90) << "the notice ends before the drain's deadline";
}

TEST_F(HealthTest, DrainsSurviveARestartInTheStateFile) {
  engine_->Drain({"n3"}, now_ + 500, false);
  const std::string saved = engine_->SaveLedger();
  Make(EngineConfig{});
  ASSERT_TRUE(engine_->LoadLedger(saved).ok());
  auto report = engine_->Drain({}, 0, false);
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0].node, "n3");
  EXPECT_EQ(report[0].by_unix, now_ + 500);
  EXPECT_FALSE(engine_->LoadLedger(R"({"drains": {"n1": "soon"}})").ok());
}

}  // namespace
}  // namespace tidal
