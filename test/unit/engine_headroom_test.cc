// Inference headroom (core/state/headroom.h) through the engine: a queue with headroom keeps room
// to grow to its GPUs; other queues' non-preemptible work may not take that room, preemptible work
// may fill it; the queue's new pods take it back from the preemptible work (any quota, reason
// reclaim) with at most the headroom's grace cap of notice; the room kept shrinks as the queue
// grows. And the config's errors.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include <gtest/gtest.h>

#include "core/io/queue_config.h"
#include "engine/engine.h"
#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;

class HeadroomTest : public testing::EngineFixture {
 protected:
  void SetUp() override {
    auto cfg = ParseEngineConfig(
        "queues:\n  - {name: inference, headroom: {gpus: 32, graceCapSeconds: 20}}\n  - {name: batch}\n", "t.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    Make(*cfg);
  }
  static PodInfo Pod(const std::string& name, const std::string& queue, bool preemptible) {
    PodInfo p = GangPod(name, "", 1);
    p.labels[kLabelQueue] = queue;
    if (preemptible) p.labels[kLabelPreemptible] = "true";
    p.annotations[kLabelCheckpointOnNotice] = "600s";
    return p;
  }
  // Plans the pod and reports it running where it was planned; the plan's status.
  Status Run(PodInfo p) {
    EXPECT_TRUE(Add({p}).ok());
    PlanResult plan = engine_->PlanPod(p.uid);
    if (!plan.status.ok()) return plan.status;
    p.node_name = plan.node;
    p.phase = PodPhase::kRunning;
    p.start_unix = now_ - 3600;
    EXPECT_TRUE(Add({p}).ok());
    return plan.status;
  }
  // Half of the 64 GPUs to batch's rigid pods, the inference queue's room (32) to its preemptible ones.
  void RigidAndFillers() {
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(Run(Pod("rigid" + std::to_string(i), "batch", false)).ok()) << i;
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(Run(Pod("filler" + std::to_string(i), "batch", true)).ok()) << i;
  }
};

TEST_F(HeadroomTest, OtherQueuesRigidWorkLeavesTheRoomAndPreemptibleWorkFillsIt) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Run(Pod("rigid" + std::to_string(i), "batch", false)).ok()) << i;
  Status st = Run(Pod("rigid4", "batch", false));
  ASSERT_FALSE(st.ok()) << "32 of 64 GPUs left: all of them the inference queue's room";
  EXPECT_NE(st.ToString().find("queue inference keeps room to grow to 32 GPUs"), std::string::npos) << st.ToString();
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(Run(Pod("filler" + std::to_string(i), "batch", true)).ok()) << i;
  EXPECT_FALSE(Run(Pod("rigid5", "batch", false)).ok()) << "the room held by preemptible work is still kept";
}

TEST_F(HeadroomTest, TheQueuesNewPodsTakeTheRoomBackFromPreemptibleWorkWithinTheGraceCap) {
  ASSERT_NO_FATAL_FAILURE(RigidAndFillers());
  // batch has no quota, so it borrows nothing: only the headroom makes its fillers victims.
  PodInfo serve = Pod("serve0", "inference", false);
  ASSERT_FALSE(Run(serve).ok()) << "full";
  PreemptResult r = engine_->Preempt(serve.uid);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.victim_gangs.size(), 1u) << "one 8-GPU filler is enough";
  EXPECT_NE(r.victim_gangs[0].first.find("filler"), std::string::npos) << r.victim_gangs[0].first;
  EXPECT_NE(r.reason.find("reclaim"), std::string::npos) << r.reason;
  ASSERT_EQ(r.victim_notice.size(), 1u);
  EXPECT_EQ(r.victim_notice[0].first, 20) << "600 s asked, the headroom's grace cap is 20 s";
}

// A preemptor kube-scheduler retried while its victims had notice may sit in its backoff (1 s
// doubling per attempt, up to 10 s) after their deletion event. Once every victim of a hold is
// gone, the preemptor's pending pods are handed to TakeActivations, which moves them past that.
TEST_F(HeadroomTest, APreemptorWhoseVictimsHaveAllGoneIsActivatedOnce) {
  ASSERT_NO_FATAL_FAILURE(RigidAndFillers());
  PodInfo serve = Pod("serve0", "inference", false);
  ASSERT_FALSE(Run(serve).ok()) << "full";
  PreemptResult r = engine_->Preempt(serve.uid);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.victim_gangs.size(), 1u);
  ASSERT_EQ(r.victim_gangs[0].second.size(), 1u);
  const std::string victim = r.victim_gangs[0].second[0].uid;
  EXPECT_TRUE(engine_->TakeActivations(FrontDoor::kKubernetes).empty()) << "the victim still runs (on notice)";
  now_ += 20;
  ASSERT_TRUE(Delete({victim}).ok());
  auto act = engine_->TakeActivations(FrontDoor::kKubernetes);
  ASSERT_EQ(act.size(), 1u);
  EXPECT_EQ(act[0].name, "serve0");
  EXPECT_TRUE(engine_->TakeActivations(FrontDoor::kKubernetes).empty()) << "once";
  EXPECT_TRUE(engine_->PlanPod(serve.uid).status.ok()) << "the freed room is the replica's";
}

TEST_F(HeadroomTest, TheRoomKeptShrinksAsTheQueueGrowsAndRigidWorkIsNeverItsVictim) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Run(Pod("serve" + std::to_string(i), "inference", false)).ok());
  // The queue uses its 32: nothing more is kept, other work may take the rest.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(Run(Pod("rigid" + std::to_string(i), "batch", false)).ok()) << i;
  PodInfo more = Pod("serve4", "inference", false);
  ASSERT_FALSE(Run(more).ok());
  PreemptResult r = engine_->Preempt(more.uid);
  EXPECT_FALSE(r.status.ok()) << "beyond its headroom, and batch's work is not preemptible";
}

// Headroom derived from HPAs (engine/autoscalers.h): maxReplicas x GPUs per replica of the HPAs
// whose pods are in the queue and scheduled by Tidal, as the Kubernetes door reports them.
class HpaHeadroomTest : public HeadroomTest {
 protected:
  void SetUp() override { MakeWith("{fromHPA: true, graceCapSeconds: 20}"); }
  void MakeWith(const std::string& headroom) {
    auto cfg = ParseEngineConfig("queues:\n  - {name: inference, headroom: " + headroom + "}\n  - {name: batch}\n", "t.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    Make(*cfg);
  }
  static AutoscalerInfo Hpa(const std::string& name, int64_t max_replicas, int64_t gpus, const std::string& queue = "inference",
                            const std::string& scheduler = "tidal-scheduler") {
    AutoscalerInfo a;
    a.ns = "e2e";
    a.name = name;
    a.target_kind = "Deployment";
    a.target_name = name;
    a.target_api_version = "apps/v1";
    a.max_replicas = max_replicas;
    a.target_found = true;
    a.scheduler_name = scheduler;
    a.labels[kLabelQueue] = queue;
    a.gpus_per_replica = gpus;
    return a;
  }
  Status SyncHpas(std::vector<AutoscalerInfo> up, std::vector<std::string> del = {}) {
    SyncBatch b;
    b.upsert_autoscalers = std::move(up);
    b.delete_autoscalers = std::move(del);
    return Sync(b);
  }
  double HeadroomGauge(const std::string& queue) {
    for (const auto& r : engine_->Gauges().queue_headroom) {
      if (r.labels == std::vector<std::string>{queue}) return r.value;
    }
    return -1;
  }
  // Runs rigid batch pods rigid<from>.. until one is refused; how many ran.
  int RunRigid(int from, int at_most) {
    for (int i = from; i < from + at_most; ++i) {
      if (!Run(Pod("rigid" + std::to_string(i), "batch", false)).ok()) return i - from;
    }
    return at_most;
  }
};

TEST_F(HpaHeadroomTest, TheHeadroomIsMaxReplicasTimesGpusPerReplicaAndTheRefusalSaysWhereItCameFrom) {
  EXPECT_EQ(HeadroomGauge("inference"), 0) << "fromHPA without an HPA: no headroom yet";
  ASSERT_TRUE(SyncHpas({Hpa("serve", 4, 8)}).ok());
  EXPECT_EQ(HeadroomGauge("inference"), 32);
  EXPECT_EQ(RunRigid(0, 8), 4) << "64 GPUs, 32 kept for inference";
  Status st = Run(Pod("rigid9", "batch", false));
  EXPECT_NE(st.ToString().find("queue inference keeps room to grow to 32 GPUs (HPA e2e/serve: maxReplicas 4 x 8 GPUs; it uses 0)"),
            std::string::npos) << st.ToString();
  EXPECT_NE(engine_->DescribeQueues().find("headroom 32 GPUs (HPA e2e/serve: maxReplicas 4 x 8 GPUs)"), std::string::npos)
      << engine_->DescribeQueues();
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/rigid9", &text).ok()) << text;
  EXPECT_NE(text.find("(HPA e2e/serve: maxReplicas 4 x 8 GPUs; it uses 0)"), std::string::npos) << "tidalctl explain: " << text;
}

TEST_F(HpaHeadroomTest, LoweringMaxReplicasShrinksTheRoomAndDeletingTheHpaLeavesNone) {
  ASSERT_TRUE(SyncHpas({Hpa("serve", 4, 8)}).ok());
  ASSERT_EQ(RunRigid(0, 8), 4);
  ASSERT_TRUE(SyncHpas({Hpa("serve", 2, 8)}).ok());
  EXPECT_EQ(HeadroomGauge("inference"), 16);
  EXPECT_EQ(RunRigid(10, 8), 2) << "16 kept now: two more rigid pods fit";
  ASSERT_TRUE(SyncHpas({}, {"e2e/serve"}).ok());
  EXPECT_EQ(HeadroomGauge("inference"), 0);
  EXPECT_EQ(RunRigid(20, 8), 2) << "nothing kept: the last 16 GPUs go too";
}

TEST_F(HpaHeadroomTest, TheTemplatesGpusChangingChangesTheRoom) {
  ASSERT_TRUE(SyncHpas({Hpa("serve", 4, 8)}).ok());
  ASSERT_TRUE(SyncHpas({Hpa("serve", 4, 2)}).ok());  // the Deployment's template now asks 2 GPUs
  EXPECT_EQ(HeadroomGauge("inference"), 8);
  EXPECT_EQ(RunRigid(0, 8), 7);
}

TEST_F(HpaHeadroomTest, TwoHpasOfTheQueueAddUpAndBothAreNamed) {
  ASSERT_TRUE(SyncHpas({Hpa("serve", 2, 8), Hpa("embed", 4, 4)}).ok());
  EXPECT_EQ(HeadroomGauge("inference"), 32);
  EXPECT_EQ(RunRigid(0, 8), 4);
  const std::string q = engine_->DescribeQueues();
  EXPECT_NE(q.find("(HPA e2e/embed: maxReplicas 4 x 4 GPUs + HPA e2e/serve: maxReplicas 2 x 8 GPUs)"), std::string::npos) << q;
}

TEST_F(HpaHeadroomTest, AnotherSchedulersHpaAnotherQueuesAndCpuOnlyOnesAreNotCounted) {
  ASSERT_TRUE(SyncHpas({Hpa("theirs", 4, 8, "inference", "default-scheduler"), Hpa("web", 10, 0),
                        Hpa("other-queue", 4, 8, "batch")}).ok());
  EXPECT_EQ(HeadroomGauge("inference"), 0);
  EXPECT_EQ(RunRigid(0, 8), 8) << "no headroom kept for inference";
}

TEST_F(HpaHeadroomTest, BadFactsAreRefusedOrSkippedWithAMessageAndNothingElseChanges) {
  ASSERT_TRUE(SyncHpas({Hpa("serve", 4, 8)}).ok());
  Status st = SyncHpas({Hpa("serve", -1, 8)});
  EXPECT_NE(st.ToString().find("autoscaler e2e/serve: maxReplicas: -1: must not be negative"), std::string::npos) << st.ToString();
  EXPECT_EQ(HeadroomGauge("inference"), 0) << "the bad version replaces the good one: not counted";
  AutoscalerInfo cron = Hpa("cron", 4, 8);
  cron.target_kind = "CronJob";
  AutoscalerInfo missing = Hpa("missing", 4, 8);
  missing.target_found = false;
  AutoscalerInfo bad_queue = Hpa("bad-queue", 4, 8, std::string(64, 'q'));  // tidal.dev/queue: 1-63 characters
  ASSERT_TRUE(SyncHpas({cron, missing, bad_queue, Hpa("serve", 1, 8)}).ok());
  EXPECT_EQ(HeadroomGauge("inference"), 8) << "only serve counts";
  const std::string q = engine_->DescribeQueues();
  EXPECT_NE(q.find("HPA e2e/cron: scaleTargetRef kind \"CronJob\" is not counted"), std::string::npos) << q;
  EXPECT_NE(q.find("HPA e2e/missing: its target Deployment e2e/missing is not known (yet)"), std::string::npos) << q;
  EXPECT_NE(q.find("HPA e2e/bad-queue: its pod template's queue"), std::string::npos) << q;
  SyncBatch slurm;
  slurm.door = FrontDoor::kSlurm;
  slurm.upsert_autoscalers = {Hpa("serve", 10, 8)};
  EXPECT_FALSE(Sync(slurm).ok()) << "only the Kubernetes door reports HPAs";
  EXPECT_EQ(HeadroomGauge("inference"), 8);
}

TEST_F(HpaHeadroomTest, AResyncDropsTheHpasItDoesNotName) {
  ASSERT_TRUE(SyncHpas({Hpa("serve", 4, 8), Hpa("embed", 2, 8)}).ok());
  ASSERT_EQ(HeadroomGauge("inference"), 48);
  SyncBatch b;
  b.resync = true;
  b.snapshot_continues = true;
  for (int i = 0; i < 8; ++i) b.upsert_nodes.push_back(Node(i));
  b.upsert_autoscalers = {Hpa("embed", 2, 8)};
  ASSERT_TRUE(Sync(b).ok());
  EXPECT_EQ(HeadroomGauge("inference"), 48) << "removed at the snapshot's last message, not its first";
  ASSERT_TRUE(Sync(SyncBatch{}).ok());
  EXPECT_EQ(HeadroomGauge("inference"), 16) << "serve was not named";
}

TEST_F(HpaHeadroomTest, WithGpusAsWellTheLargerCountsAndAReloadKeepsTheDerivedNumber) {
  MakeWith("{gpus: 24, fromHPA: true}");
  ASSERT_TRUE(SyncHpas({Hpa("serve", 2, 8)}).ok());
  EXPECT_EQ(HeadroomGauge("inference"), 24) << "the configured 24 is a floor over the HPA's 16";
  EXPECT_NE(engine_->DescribeQueues().find("headroom 24 GPUs (headroom.gpus 24, above the 16 from HPAs: HPA e2e/serve"),
            std::string::npos) << engine_->DescribeQueues();
  ASSERT_TRUE(SyncHpas({Hpa("serve", 4, 8)}).ok());
  EXPECT_EQ(HeadroomGauge("inference"), 32);
  auto cfg = ParseEngineConfig("queues:\n  - {name: inference, headroom: {fromHPA: true}}\n  - {name: batch}\n", "t.yaml");
  ASSERT_TRUE(cfg.ok());
  ASSERT_TRUE(engine_->Reconfigure(*cfg).ok());
  EXPECT_EQ(HeadroomGauge("inference"), 32) << "the HPAs are kept across a reload";
  cfg = ParseEngineConfig("schedulerName: other\nqueues:\n  - {name: inference, headroom: {fromHPA: true}}\n  - {name: batch}\n",
                          "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_TRUE(engine_->Reconfigure(*cfg).ok());
  EXPECT_EQ(HeadroomGauge("inference"), 0) << "the HPA's pods are another scheduler's now";
}

TEST(HeadroomConfig, ErrorsNameTheField) {
  for (const auto& [yaml, field] : std::vector<std::pair<std::string, std::string>>{
           {"queues:\n  - {name: a, headroom: {gpus: -1}}\n", "queues[0].headroom.gpus"},
           {"queues:\n  - {name: a, headroom: {gpus: 8, graceCapSeconds: x}}\n", "queues[0].headroom.graceCapSeconds"},
           {"queues:\n  - {name: a, headroom: {gpu: 8}}\n", "queues[0].headroom.gpu: unknown field"},
           {"queues:\n  - {name: a, headroom: 8}\n", "queues[0].headroom: must be a mapping"},
           {"queues:\n  - {name: a, headroom: {fromHPA: 1}}\n", "queues[0].headroom.fromHPA: must be true or false"},
           {"queues:\n  - {name: a, headroom: {fromHPA: \"true\"}}\n", "queues[0].headroom.fromHPA: must be true or false"},
           {"queues:\n  - {name: b}\n  - {name: a, headroom: {fromHpa: true}}\n", "queues[1].headroom.fromHpa: unknown field (accepted: gpus, fromHPA"},
       }) {
    auto cfg = ParseEngineConfig(yaml, "t.yaml");
    ASSERT_FALSE(cfg.ok()) << yaml;
    EXPECT_NE(cfg.status().ToString().find(field), std::string::npos) << cfg.status().ToString();
  }
}

}  // namespace
}  // namespace tidal
