// Named pools (engine/engine_lending.cc, core/state/lending.h): a pool such as `inference` owns
// nodes (tidal.dev/pool=inference, or its selector); its unlent nodes take only its owner queues'
// work, idle ones are lent to other queues' preemptible work, and the owners' waiting work takes
// them back (notice capped at graceCapSeconds, cause reclaim); a node returns only once its
// borrowers are gone; config errors name the field.
// Threading: single-threaded; the engine's clock is now_.
#include <algorithm>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/observability.h"
#include "test/support/engine_objects.h"

namespace tidal {
namespace {

using testing::GangPod;
using testing::GpuNode;

constexpr const char* kQueues =
    "queues:\n  - name: serving\n  - name: inference\n    parent: serving\n  - name: batch\n";

class EngineNamedPoolTest : public ::testing::Test {
 protected:
  void SetUp() override { Start("pools:\n  inference: {queues: [serving], idleSeconds: 60, graceCapSeconds: 30}\n"); }
  void Start(const std::string& pools) {
    auto cfg = ParseEngineConfig(std::string(kQueues) + pools, "t.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto e = Engine::Create(*cfg, [this] { return now_; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    engine_->SetObservability(&metrics_, nullptr);
    // i0, i1: the inference pool's (label); k0: nobody's.
    SyncBatch b;
    b.resync = true;
    b.upsert_nodes = {PoolNode("i0", "inference"), PoolNode("i1", "inference"), PoolNode("k0", "")};
    ASSERT_TRUE(Sync(std::move(b)).ok());
  }
  static NodeInfo PoolNode(const std::string& name, const std::string& pool) {
    NodeInfo n = GpuNode(name, "l0", "v-" + name);
    if (!pool.empty()) n.labels["tidal.dev/pool"] = pool;
    return n;
  }
  Status Sync(SyncBatch b) {
    b.door = FrontDoor::kKubernetes;
    for (auto& p : b.upsert_pods) p.door = FrontDoor::kKubernetes;
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  Status AddPod(PodInfo p) {
    SyncBatch b;
    b.upsert_pods = {std::move(p)};
    return Sync(std::move(b));
  }
  static PodInfo Pod(const std::string& name, const std::string& queue, bool preemptible = false) {
    PodInfo p = GangPod(name, "", 1, 8);
    p.labels[kLabelQueue] = queue;
    if (preemptible) p.labels[kLabelPreemptible] = "true";
    return p;
  }
  // Plans the pod, binds it there and reports it running; the node ("" when it found none, with
  // the reason in *why).
  std::string Run(PodInfo p, std::string* why = nullptr) {
    EXPECT_TRUE(AddPod(p).ok());
    PlanResult plan = engine_->PlanPod(p.uid);
    if (!plan.status.ok()) {
      if (why != nullptr) *why = plan.status.ToString();
      return "";
    }
    p.node_name = plan.node;
    p.phase = PodPhase::kRunning;
    p.start_unix = now_;
    EXPECT_TRUE(AddPod(p).ok());
    return plan.node;
  }
  void Gone(const std::string& name) {
    SyncBatch b;
    b.delete_pods = {"uid-" + name};
    ASSERT_TRUE(Sync(std::move(b)).ok());
  }
  std::vector<DisruptionAction> Poll() { return engine_->Disruptions(FrontDoor::kKubernetes); }
  double Lent() {
    double v = 0;
    for (const auto& r : engine_->Gauges().lent_gpus) v += r.value;
    return v;
  }
  // k0 busy with batch, then a preemptible batch pod waits until an idle inference node is lent to it.
  std::string LendToABorrower() {
    EXPECT_EQ(Run(Pod("busy", "batch")), "k0");
    EXPECT_EQ(Run(Pod("borrower", "batch", true)), "") << "the pool's nodes are not lent yet";
    Poll();
    now_ += 60;
    Poll();
    return Run(Pod("borrower", "batch", true));
  }

  int64_t now_ = 100000;
  metrics::Registry registry_;
  EngineMetrics metrics_{registry_};
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineNamedPoolTest, ItsUnlentNodesTakeOnlyItsOwnerQueuesWork) {
  EXPECT_EQ(Run(Pod("b1", "batch")), "k0");
  std::string why;
  EXPECT_EQ(Run(Pod("b2", "batch"), &why), "") << "i0 and i1 are the inference pool's";
  EXPECT_NE(why.find("2 node(s) belong to a named pool of other queues"), std::string::npos) << why;
  const std::string node = Run(Pod("serve", "inference"));
  EXPECT_TRUE(node == "i0" || node == "i1") << "a child of the owner queue serving owns the pool: " << node;
}

TEST_F(EngineNamedPoolTest, AnIdleNodeIsLentToOtherQueuesPreemptibleWorkAndTakenBackForItsOwner) {
  EXPECT_EQ(Run(Pod("busy", "batch")), "k0");
  EXPECT_EQ(Run(Pod("rigid", "batch")), "");
  Poll();
  now_ += 120;
  Poll();
  EXPECT_EQ(Lent(), 0) << "only non-preemptible work waits: the pool lends to preemptible work";
  EXPECT_EQ(Run(Pod("borrower", "batch", true)), "");
  Poll();  // its demand is seen; the nodes have been idle for 120 s
  const std::string lent = Run(Pod("borrower", "batch", true));
  ASSERT_EQ(lent, "i0");
  EXPECT_EQ(Lent(), 8) << "one node: what the borrower needed";
  EXPECT_EQ(metrics_.pool_lends.With({"inference", "others"}).Value(), 1);
  EXPECT_EQ(Run(Pod("rigid", "batch")), "") << "lent to preemptible work only";
  // The owner takes i1 (unlent); a second owner pod finds its pool's only other node lent out.
  EXPECT_EQ(Run(Pod("serve-0", "inference")), "i1");
  EXPECT_EQ(Run(Pod("serve-1", "inference")), "");
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].cause, "reclaim");
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kEvict) << "no checkpoint-on-notice asked: evicted at once";
  EXPECT_NE(a[0].reason.find("reclaimed by its owner pool inference"), std::string::npos) << a[0].reason;
  EXPECT_EQ(Run(Pod("serve-1", "inference")), "") << "the borrower still holds i0";
  Gone("borrower");
  Poll();
  EXPECT_EQ(Lent(), 0);
  EXPECT_EQ(metrics_.pool_reclaims.With({"inference", "others"}).Value(), 1);
  EXPECT_EQ(Run(Pod("serve-1", "inference")), "i0") << "returned to its owner";
}

TEST_F(EngineNamedPoolTest, TheOwnersWorkIsToldItsNodeIsLentOut) {
  PodInfo small = GangPod("borrower", "", 1, 4);
  small.labels[kLabelQueue] = "batch";
  small.labels[kLabelPreemptible] = "true";
  EXPECT_EQ(Run(Pod("busy", "batch")), "k0");
  EXPECT_EQ(Run(small), "");
  Poll();
  now_ += 60;
  Poll();
  ASSERT_EQ(Run(small), "i0");
  EXPECT_EQ(Run(Pod("serve-0", "inference")), "i1");
  PodInfo four = GangPod("serve-1", "", 1, 4);
  four.labels[kLabelQueue] = "inference";
  std::string why;
  EXPECT_EQ(Run(four, &why), "") << "i0 has 4 free GPUs, lent to other queues";
  EXPECT_NE(why.find("1 node(s) of pool inference are lent to other queues"), std::string::npos) << why;
}

TEST_F(EngineNamedPoolTest, TheOwnersWorkWaitingReclaimsWithNoticeCappedAtTheGraceCap) {
  PodInfo p = Pod("borrower", "batch", true);
  p.annotations[kLabelCheckpointOnNotice] = "120s";
  EXPECT_EQ(Run(Pod("busy", "batch")), "k0");
  EXPECT_EQ(Run(p), "");
  Poll();
  now_ += 60;
  Poll();
  ASSERT_EQ(Run(p), "i0");
  EXPECT_EQ(Run(Pod("serve-0", "inference")), "i1");
  EXPECT_EQ(Run(Pod("serve-1", "inference")), "");
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kNotice);
  EXPECT_EQ(a[0].deadline_unix, now_ + 30) << "asked 120 s, capped at the pool's 30 s";
}

TEST_F(EngineNamedPoolTest, AnOwnerPodPinnedToTheLentNodeGetsItBackWhileAnotherPoolNodeIsFree) {
  ASSERT_EQ(LendToABorrower(), "i0");  // i1 stays free and unlent
  PodInfo pinned = Pod("serve", "inference");
  auto c = std::make_shared<NodeConstraints>();
  c->node_selector["topology.tidal.dev/nvlink"] = "v-i0";
  pinned.constraints = c;
  std::string why;
  EXPECT_EQ(Run(pinned, &why), "") << "the borrower holds i0";
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u) << "its own node is reclaimed, though i1 is free";
  EXPECT_EQ(a[0].cause, "reclaim");
}

TEST_F(EngineNamedPoolTest, OtherQueuesNonPreemptibleWorkNeverBorrowsAndNothingIsLentBelowKeep) {
  Start("pools:\n  inference: {queues: [serving], keep: 1, to: preemptible, idleSeconds: 60}\n");
  ASSERT_EQ(LendToABorrower(), "i0");
  EXPECT_EQ(Run(Pod("second", "batch", true)), "") << "keep 1: i1 stays the owner's";
  Poll();
  now_ += 600;
  Poll();
  EXPECT_EQ(Run(Pod("second", "batch", true)), "");
  EXPECT_EQ(Lent(), 8);
}

TEST_F(EngineNamedPoolTest, ASelectorPutsUnlabelledNodesInThePool) {
  Start("pools:\n  inference: {queues: [inference], selector: {topology.tidal.dev/nvlink: v-k0}}\n");
  std::string why;
  EXPECT_EQ(Run(Pod("b1", "batch"), &why), "") << "k0 is the pool's by its selector; i0, i1 by their label";
  EXPECT_NE(why.find("3 node(s) belong to a named pool of other queues"), std::string::npos) << why;
  EXPECT_NE(Run(Pod("s1", "inference")), "");
}

TEST_F(EngineNamedPoolTest, WithoutPoolsTheLabelIsOnlyALabel) {
  Start("");
  EXPECT_NE(Run(Pod("b1", "batch")), "");
  EXPECT_NE(Run(Pod("b2", "batch")), "");
  EXPECT_NE(Run(Pod("b3", "batch")), "") << "no named pool configured: every node is anyone's";
}

TEST(EngineNamedPoolConfig, AnUnknownOwnerQueueIsNamed) {
  const std::string text = std::string(kQueues) + "pools:\n  inference:\n    queues: [inference, serve]\n";
  auto cfg = ParseEngineConfig(text, "t.yaml");
  ASSERT_FALSE(cfg.ok());
  // With the file's line (before: "t.yaml: pools.inference.queues: ..." with none).
  const int line = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  EXPECT_NE(cfg.status().ToString().find("t.yaml:" + std::to_string(line) + ": pools.inference.queues[1]: unknown queue serve"),
            std::string::npos)
      << cfg.status().ToString();
}

// A pool's owners name queues by their name: a former name (queues[].formerNames) would match no
// pod's queue, whose specs read it as the queue's name, so the pool would have lost its owner.
TEST(EngineNamedPoolConfig, AnOwnerNamedByAFormerNameIsRefused) {
  const std::string text =
      "queues:\n  - name: serve\n    formerNames: [inference-old]\npools:\n  inference:\n    queues: [inference-old]\n";
  auto cfg = ParseEngineConfig(text, "t.yaml");
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().ToString().find("pools.inference.queues[0]: inference-old is a former name of queue serve: name the queue"),
            std::string::npos)
      << cfg.status().ToString();
}

}  // namespace
}  // namespace tidal
