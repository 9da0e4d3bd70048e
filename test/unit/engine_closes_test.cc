// Node closes (engine/engine_closes.cc, engine/maintenance.h): drains and maintenance windows.
// Before its close a node takes only work expected to end by then; from it, none; a window's nodes
// take work again at its end; a decommissioned node's drain ends when it leaves; a cancelled drain
// calls off the notices it gave.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include <algorithm>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/maintenance.h"
#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;

class ClosesTest : public testing::EngineFixture {
 protected:
  // An 8-GPU pod (a whole node) with a runtime limit ("" = none).
  PodInfo Pod(const std::string& name, const std::string& limit) {
    PodInfo p = GangPod(name, "", 1);
    if (!limit.empty()) p.annotations[kLabelRuntimeLimit] = limit;
    return p;
  }
  // Leaves only the named nodes of the fixture's eight, so a pod's plan can land on no other.
  void OnlyNodes(const std::vector<int>& keep) {
    SyncBatch b;
    for (int i = 0; i < 8; ++i) {
      if (std::find(keep.begin(), keep.end(), i) == keep.end()) b.delete_nodes.push_back("n" + std::to_string(i));
    }
    ASSERT_TRUE(Sync(b).ok());
  }
  Status Plan(const PodInfo& p, std::string* node) {
    EXPECT_TRUE(Add({p}).ok());
    PlanResult plan = engine_->PlanPod(p.uid);
    *node = plan.node;
    return plan.status;
  }
  void MakeWithWindows(const std::string& yaml) {
    auto cfg = ParseEngineConfig(yaml, "engine.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    Make(*cfg);
  }
};

TEST(Maintenance, WindowsParseAndErrorsNameTheField) {
  auto cfg = ParseEngineConfig(
      "maintenance:\n  windows:\n"
      "    - {name: fw, nodes: [n0, n1], start: \"2026-12-05T02:00:00Z\", duration: 4h}\n"
      "    - {name: leaf, selector: {topology.tidal.dev/leaf: l1}, start: 1800000000, end: 1800003600}\n",
      "engine.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_EQ(cfg->maintenance.size(), 2u);
  EXPECT_EQ(cfg->maintenance[0].end_s - cfg->maintenance[0].start_s, 4 * 3600);
  EXPECT_TRUE(cfg->maintenance[1].Covers("x", {{"topology.tidal.dev/leaf", "l1"}}));
  EXPECT_FALSE(cfg->maintenance[1].Covers("x", {{"topology.tidal.dev/leaf", "l0"}}));
  for (const auto& [yaml, field] : std::vector<std::pair<std::string, std::string>>{
           {"maintenance: {windows: [{name: a, nodes: [n0], start: 100, end: 50}]}", "maintenance.windows[0].end: must be after start"},
           {"maintenance: {windows: [{name: a, start: 100, end: 200}]}", "maintenance.windows[0]: name nodes or a selector"},
           {"maintenance: {windows: [{name: a, nodes: [n0], start: soon, end: 200}]}", "maintenance.windows[0].start"},
           {"maintenance: {windows: [{name: a, nodes: [n0], start: 100, end: 200, duration: 1h}]}", "exactly one of end, duration"},
           {"maintenance: {windows: [{name: a, nodes: [n0], start: 100, end: 200}, {name: a, nodes: [n1], start: 100, end: 200}]}",
            "maintenance.windows[1].name"},
           {"maintenance: {windows: [{name: a, nodes: [n0], start: 100, end: 200, when: x}]}", "maintenance.windows[0].when: unknown field"},
           {"maintenance: {later: []}", "maintenance.later: unknown field"},
       }) {
    auto bad = ParseEngineConfig(yaml, "engine.yaml");
    ASSERT_FALSE(bad.ok()) << yaml;
    EXPECT_NE(bad.status().ToString().find(field), std::string::npos) << bad.status().ToString();
  }
}

TEST(Maintenance, EarliestClosePrefersTheCurrentOneThenTheSoonest) {
  NodeClose c;
  EXPECT_FALSE(EarliestClose({{10, 20, DisruptionCause::kMaintenance, "old"}}, 30, &c)) << "over";
  ASSERT_TRUE(EarliestClose({{100, 200, DisruptionCause::kMaintenance, "later"}, {50, INT64_MAX, DisruptionCause::kDrain, "drain"}}, 10, &c));
  EXPECT_EQ(c.what, "drain");
  ASSERT_TRUE(EarliestClose({{5, 200, DisruptionCause::kMaintenance, "now"}, {50, INT64_MAX, DisruptionCause::kDrain, "drain"}}, 10, &c));
  EXPECT_EQ(c.what, "now");
}

TEST_F(ClosesTest, BeforeADrainsDeadlineANodeTakesOnlyWorkThatEndsInTime) {
  OnlyNodes({0});
  engine_->Drain({"n0"}, now_ + 1800, false);
  std::string node;
  Status st = Plan(Pod("long", "2h"), &node);
  EXPECT_FALSE(st.ok()) << "a 2 h job would run into the drain";
  EXPECT_NE(st.ToString().find("close (a drain, a maintenance window"), std::string::npos) << st.ToString();
  st = Plan(Pod("nolimit", ""), &node);
  EXPECT_FALSE(st.ok()) << "no runtime limit: its class's default runtime (batch: 1 h) runs past the deadline";
  ASSERT_TRUE(Plan(Pod("short", "20m"), &node).ok()) << "a 20 m job ends in time";
  EXPECT_EQ(node, "n0");
  (void)engine_->Unreserve("uid-short");  // its plan given back: n0 is empty again
  now_ += 1800;  // the deadline: the node takes no work at all
  st = Plan(Pod("tiny", "1m"), &node);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.ToString().find("close for a drain"), std::string::npos) << "closed now, not closing: " << st.ToString();
}

TEST_F(ClosesTest, AMaintenanceWindowClosesItsNodesAtStartAndOpensThemAtEnd) {
  MakeWithWindows("maintenance:\n  windows:\n    - {name: fw, nodes: [n1], start: " + std::to_string(now_ + 600) +
                  ", duration: 1h}\n");
  OnlyNodes({1});
  PodInfo running = GangPod("job", "", 1);
  running.node_name = "n1";
  running.phase = PodPhase::kRunning;
  running.start_unix = now_;
  ASSERT_TRUE(Add({running}).ok());
  auto report = engine_->Drain({}, 0, false);
  ASSERT_EQ(report.size(), 1u) << "the status lists the window's node with when it closes";
  EXPECT_EQ(report[0].node, "n1");
  EXPECT_EQ(report[0].by_unix, now_ + 600);
  EXPECT_NE(report[0].note.find("maintenance window fw"), std::string::npos) << report[0].note;
  ASSERT_TRUE(Delete({"uid-job"}).ok());
  std::string node;
  EXPECT_FALSE(Plan(Pod("long", "20m"), &node).ok()) << "20 m would run into the window";
  ASSERT_TRUE(Add({running}).ok());
  EXPECT_TRUE(Poll().empty()) << "the running job has until start - slack";
  now_ += 570;  // start - 30 s of slack
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].cause, "maintenance");
  EXPECT_NE(a[0].reason.find("maintenance window fw"), std::string::npos) << a[0].reason;
  ASSERT_TRUE(Delete({"uid-job"}).ok());
  EXPECT_EQ(metrics_.disruptions.With({"maintenance"}).Value(), 1);
  now_ += 60;  // in the window
  EXPECT_FALSE(Plan(Pod("in", "1m"), &node).ok());
  (void)engine_->TakeActivations(FrontDoor::kKubernetes);
  now_ += 3600;  // after its end
  EXPECT_TRUE(engine_->Drain({}, 0, false).empty()) << "the window is over";
  auto act = engine_->TakeActivations(FrontDoor::kKubernetes);
  EXPECT_FALSE(act.empty()) << "kube-scheduler sees no event when a window ends: the engine hands pending pods back";
  ASSERT_TRUE(Plan(Pod("after", ""), &node).ok());
  EXPECT_EQ(node, "n1");
}

TEST_F(ClosesTest, AWindowBySelectorCoversADomainAndNodesThatJoinIt) {
  MakeWithWindows("maintenance:\n  windows:\n    - {name: leaf1, selector: {topology.tidal.dev/leaf: l1}, start: " +
                  std::to_string(now_ - 10) + ", end: " + std::to_string(now_ + 3600) + "}\n");
  std::string node;
  for (int i = 0; i < 4; ++i) {  // four whole-node plans fit, all on leaf l0
    ASSERT_TRUE(Plan(Pod("p" + std::to_string(i), "1m"), &node).ok()) << i;
    EXPECT_TRUE(node == "n0" || node == "n1" || node == "n2" || node == "n3") << node;
  }
  EXPECT_FALSE(Plan(Pod("p4", "1m"), &node).ok()) << "leaf l1 is in its window";
  SyncBatch join;  // a new node of leaf l1 (scale-up during the window)
  join.upsert_nodes = {testing::GpuNode("n9", "l1", "v9")};
  ASSERT_TRUE(Sync(join).ok());
  EXPECT_FALSE(Plan(Pod("p5", "1m"), &node).ok()) << "a node joining the leaf is in the window too";
  SyncBatch other;  // one joining leaf l0 takes work at once
  other.upsert_nodes = {testing::GpuNode("n10", "l0", "v10")};
  ASSERT_TRUE(Sync(other).ok());
  ASSERT_TRUE(Plan(Pod("p6", "1m"), &node).ok());
  EXPECT_EQ(node, "n10");
}

TEST_F(ClosesTest, CancellingADrainCallsOffTheNoticesItGave) {
  ASSERT_TRUE(Add({testing::CheckpointingPod("ckpt", "n0", now_)}).ok());
  engine_->Drain({"n0"}, now_ + 60, false);
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kNotice);
  engine_->Drain({"n0"}, 0, true);
  EXPECT_TRUE(Poll().empty()) << "the drain is off: the job keeps running";
  now_ += 120;
  EXPECT_TRUE(Poll().empty());
}

TEST_F(ClosesTest, ADecommissionEndsWhenTheNodeLeavesAndSurvivesARestartUntilThen) {
  OnlyNodes({2});
  engine_->Drain({"n2"}, now_, false, /*decommission=*/true);
  auto report = engine_->Drain({}, 0, false);
  ASSERT_EQ(report.size(), 1u);
  EXPECT_NE(report[0].note.find("decommissioned"), std::string::npos) << report[0].note;
  const std::string saved = engine_->SaveLedger();
  Make(EngineConfig{});
  ASSERT_TRUE(engine_->LoadLedger(saved).ok());
  OnlyNodes({2});
  ASSERT_EQ(engine_->Drain({}, 0, false).size(), 1u) << "kept in the state file";
  SyncBatch gone;
  gone.delete_nodes = {"n2"};
  ASSERT_TRUE(Sync(gone).ok());
  EXPECT_TRUE(engine_->Drain({}, 0, false).empty()) << "it left for good";
  SyncBatch back;  // a new machine under the old name
  back.upsert_nodes = {Node(2)};
  ASSERT_TRUE(Sync(back).ok());
  std::string node;
  ASSERT_TRUE(Plan(Pod("new", ""), &node).ok()) << "not drained";
}

TEST_F(ClosesTest, APlainDrainOutlivesTheNodeLeavingAndComingBack) {
  OnlyNodes({3});
  engine_->Drain({"n3"}, now_, false);
  SyncBatch gone;
  gone.delete_nodes = {"n3"};
  ASSERT_TRUE(Sync(gone).ok());
  SyncBatch back;
  back.upsert_nodes = {Node(3)};
  ASSERT_TRUE(Sync(back).ok());
  std::string node;
  EXPECT_FALSE(Plan(Pod("p", "1m"), &node).ok()) << "reimaged under a drain: still drained until cancelled";
}

// Rolling upgrades: the engine plans waves from the running gangs (engine_waves.cc).
TEST_F(ClosesTest, WavesKeepEachRunningRigidGangsNodesTogether) {
  auto running = [](const std::string& name, const std::string& gang, int size, const std::string& node, int min) {
    PodInfo p = GangPod(name, gang, size);
    if (min > 0) p.labels[kLabelGangMin] = std::to_string(min);
    p.node_name = node;
    p.phase = PodPhase::kRunning;
    p.start_unix = 9000;
    return p;
  };
  ASSERT_TRUE(Add({running("r0", "rigid", 2, "n0", 0), running("r1", "rigid", 2, "n4", 0),
                   running("e0", "elastic", 2, "n1", 1), running("e1", "elastic", 2, "n5", 1)})
                  .ok());
  auto plan = engine_->PlanWaves({}, 2, "");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  size_t nodes = 0;
  bool together = false;
  for (const auto& w : plan->waves) {
    nodes += w.nodes.size();
    EXPECT_LE(w.nodes.size(), 2u);
    const bool has0 = std::find(w.nodes.begin(), w.nodes.end(), "n0") != w.nodes.end();
    const bool has4 = std::find(w.nodes.begin(), w.nodes.end(), "n4") != w.nodes.end();
    EXPECT_EQ(has0, has4) << "the rigid gang's two nodes are in one wave";
    if (has0) {
      together = true;
      EXPECT_EQ(w.gangs, std::vector<std::string>{"team/rigid"});
    }
  }
  EXPECT_TRUE(together);
  EXPECT_EQ(nodes, 8u) << "every node once";
  auto leaves = engine_->PlanWaves({"n0", "n1", "n4", "n5"}, 0, "leaf");
  ASSERT_TRUE(leaves.ok()) << leaves.status().ToString();
  ASSERT_EQ(leaves->waves.size(), 1u) << "the rigid gang spans both leaves: one wave";
  EXPECT_FALSE(leaves->notes.empty());
  auto bad = engine_->PlanWaves({"n0", "nope"}, 2, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("nodes[1]"), std::string::npos) << bad.status().ToString();
  bad = engine_->PlanWaves({}, 0, "rack");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("domain: unknown topology level \"rack\""), std::string::npos) << bad.status().ToString();
}

}  // namespace
}  // namespace tidal
