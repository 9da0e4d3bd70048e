// Drains set on the Kubernetes node itself (engine/engine_closes.cc, AnnotatedDrainLocked): the
// annotation tidal.dev/drain-by drains the node for every engine that streams it (the leader's
// and the standby's), without the state file; the Drain RPC can neither cancel nor change it;
// removing it calls the drain off; a value that is no time is a warning on the node and changes
// nothing.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include <gtest/gtest.h>

#include <optional>

#include "core/api/duration.h"
#include "engine/engine.h"
#include "engine/maintenance.h"
#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;

class NodeDrainTest : public testing::EngineFixture {
 protected:
  // n0 as its shim reports it, with these annotations; the node warnings of that Sync.
  std::vector<NodeWarningInfo> Annotate(Engine& e, std::map<std::string, std::string> annotations) {
    SyncBatch b;
    NodeInfo n = Node(0);
    n.annotations = std::move(annotations);
    b.upsert_nodes = {n};
    uint64_t gen = 0;
    std::vector<NodeWarningInfo> warnings;
    EXPECT_TRUE(e.Sync(b, &gen, &warnings).ok());
    return warnings;
  }
  std::vector<NodeWarningInfo> Annotate(std::map<std::string, std::string> annotations) {
    return Annotate(*engine_, std::move(annotations));
  }
  // A running 8-GPU pod on n0 that checkpoints on 60 s notice.
  void RunCheckpointingPodOnN0() { ASSERT_TRUE(Add({testing::CheckpointingPod("ckpt", "n0", now_)}).ok()); }
  // The node's row of a Drain report (the first; nullopt: none).
  static std::optional<NodeDrainInfo> Find(const std::vector<NodeDrainInfo>& r, const std::string& node) {
    for (const auto& d : r) {
      if (d.node == node) return d;
    }
    return std::nullopt;
  }
};

TEST_F(NodeDrainTest, TheAnnotationDrainsTheNodeForEveryEngineThatStreamsIt) {
  RunCheckpointingPodOnN0();
  EXPECT_TRUE(Annotate({{kAnnotationDrainBy, FormatUnixTime(now_ + 60)}}).empty());
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kNotice);
  EXPECT_EQ(a[0].cause, "drain");
  std::optional<NodeDrainInfo> d = Find(engine_->Drain({}, 0, false), "n0");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->by_unix, now_ + 60);
  EXPECT_EQ(d->state, "draining");

  // The standby's engine hears the same node from its own shim: drained too, with no RPC and no
  // state file (a failover keeps the drain).
  auto standby = Engine::Create(EngineConfig{}, [this] { return now_; });
  ASSERT_TRUE(standby.ok());
  SyncBatch all;
  all.resync = true;
  for (int i = 1; i < 8; ++i) all.upsert_nodes.push_back(Node(i));
  uint64_t gen = 0;
  ASSERT_TRUE((*standby)->Sync(all, &gen).ok());
  Annotate(**standby, {{kAnnotationDrainBy, std::to_string(now_ + 60)}});  // unix seconds work too
  d = Find((*standby)->Drain({}, 0, false), "n0");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->by_unix, now_ + 60);

  // Not in the state file: the node's annotation brings it back.
  EXPECT_EQ(engine_->SaveLedger().find("\"drains\""), std::string::npos) << engine_->SaveLedger();
}

TEST_F(NodeDrainTest, TheRpcCannotCancelOrChangeItAndRemovingTheAnnotationCallsItOff) {
  RunCheckpointingPodOnN0();
  Annotate({{kAnnotationDrainBy, FormatUnixTime(now_ + 60)}});
  ASSERT_EQ(Poll().size(), 1u);
  for (bool cancel : {true, false}) {
    auto r = engine_->Drain({"n0"}, now_ + 3600, cancel);
    std::optional<NodeDrainInfo> d = Find(r, "n0");
    ASSERT_TRUE(d.has_value());
    bool annotated = false;
    for (const auto& e : r) annotated = annotated || (e.node == "n0" && e.state == "annotated");
    EXPECT_TRUE(annotated) << (cancel ? "cancel" : "re-drain") << " is refused, naming the annotation";
  }
  EXPECT_EQ(Find(engine_->Drain({}, 0, false), "n0")->by_unix, now_ + 60) << "unchanged";

  Annotate({});  // kubectl annotate node n0 tidal.dev/drain-by-
  EXPECT_TRUE(Poll().empty()) << "the drain is off: the job keeps running";
  EXPECT_FALSE(Find(engine_->Drain({}, 0, false), "n0").has_value());
  now_ += 120;
  EXPECT_TRUE(Poll().empty());
}

TEST_F(NodeDrainTest, ADeadlineInThePastClosesTheNodeAtOnceAndDecommissionIsRead) {
  Annotate({{kAnnotationDrainBy, FormatUnixTime(now_ - 10)}, {kAnnotationDecommission, "true"}});
  std::optional<NodeDrainInfo> d = Find(engine_->Drain({}, 0, false), "n0");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->state, "drained");
  EXPECT_NE(d->note.find("decommissioned"), std::string::npos) << d->note;
  // No new work lands on it.
  for (int i = 0; i < 8; ++i) {
    PodInfo p = GangPod("w" + std::to_string(i), "", 1);
    ASSERT_TRUE(Add({p}).ok());
    PlanResult plan = engine_->PlanPod(p.uid);
    EXPECT_NE(plan.node, "n0");
  }
}

TEST_F(NodeDrainTest, AValueThatIsNoTimeIsAWarningAndChangesNothing) {
  auto w = Annotate({{kAnnotationDrainBy, "tomorrow"}});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].node, "n0");
  EXPECT_EQ(w[0].reason, "TidalDrainAnnotationInvalid");
  EXPECT_NE(w[0].message.find("tidal.dev/drain-by"), std::string::npos) << w[0].message;
  EXPECT_NE(w[0].message.find("tomorrow"), std::string::npos) << w[0].message;
  EXPECT_FALSE(Find(engine_->Drain({}, 0, false), "n0").has_value()) << "not drained";
  // A drain it had stays while the value is unreadable (unknown is not "cancelled").
  Annotate({{kAnnotationDrainBy, FormatUnixTime(now_ + 600)}});
  Annotate({{kAnnotationDrainBy, "2026-13-45"}});
  std::optional<NodeDrainInfo> d = Find(engine_->Drain({}, 0, false), "n0");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->by_unix, now_ + 600);
}

TEST_F(NodeDrainTest, TheAnnotationTakesOverADrainTheRpcSetAndTheNodeLeavingEndsIt) {
  engine_->Drain({"n0"}, now_ + 3600, false);
  Annotate({{kAnnotationDrainBy, FormatUnixTime(now_ + 600)}});
  EXPECT_EQ(Find(engine_->Drain({}, 0, false), "n0")->by_unix, now_ + 600);
  SyncBatch gone;
  gone.delete_nodes = {"n0"};
  ASSERT_TRUE(Sync(gone).ok());
  SyncBatch back;  // the Node object again, without the annotation
  back.upsert_nodes = {Node(0)};
  ASSERT_TRUE(Sync(back).ok());
  EXPECT_FALSE(Find(engine_->Drain({}, 0, false), "n0").has_value());
}

}  // namespace
}  // namespace tidal
