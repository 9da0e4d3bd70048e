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
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Run(Pod("rigid" + std::to_string(i), "batch", false)).ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Run(Pod("filler" + std::to_string(i), "batch", true)).ok());
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

TEST_F(HeadroomTest, TheRoomKeptShrinksAsTheQueueGrowsAndRigidWorkIsNeverItsVictim) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Run(Pod("serve" + std::to_string(i), "inference", false)).ok());
  // The queue uses its 32: nothing more is kept, other work may take the rest.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(Run(Pod("rigid" + std::to_string(i), "batch", false)).ok()) << i;
  PodInfo more = Pod("serve4", "inference", false);
  ASSERT_FALSE(Run(more).ok());
  PreemptResult r = engine_->Preempt(more.uid);
  EXPECT_FALSE(r.status.ok()) << "beyond its headroom, and batch's work is not preemptible";
}

TEST(HeadroomConfig, ErrorsNameTheField) {
  for (const auto& [yaml, field] : std::vector<std::pair<std::string, std::string>>{
           {"queues:\n  - {name: a, headroom: {gpus: -1}}\n", "queues[0].headroom.gpus"},
           {"queues:\n  - {name: a, headroom: {gpus: 8, graceCapSeconds: x}}\n", "queues[0].headroom.graceCapSeconds"},
           {"queues:\n  - {name: a, headroom: {gpu: 8}}\n", "queues[0].headroom.gpu: unknown field"},
           {"queues:\n  - {name: a, headroom: 8}\n", "queues[0].headroom: must be a mapping"},
       }) {
    auto cfg = ParseEngineConfig(yaml, "t.yaml");
    ASSERT_FALSE(cfg.ok()) << yaml;
    EXPECT_NE(cfg.status().ToString().find(field), std::string::npos) << cfg.status().ToString();
  }
}

}  // namespace
}  // namespace tidal
