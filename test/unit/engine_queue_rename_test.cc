// queues[].formerNames on a live engine: a queue renamed in config keeps its running work's charge
// and takes the pods that still carry the old label, in the ledger, the by-door ledger and the
// metrics. A plain rename left the running work uncharged ("unconfigured") and refused new pods of
// the old label as naming an unconfigured queue.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include <gtest/gtest.h>

#include <string>

#include "engine/pod_spec.h"
#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;

class QueueRenameTest : public testing::EngineFixture {
 protected:
  void Reload(const std::string& yaml) {
    auto cfg = ParseEngineConfig(yaml, "t.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    ASSERT_TRUE(engine_->Reconfigure(*cfg).ok());
  }
  static PodInfo InQueue(const std::string& name, const std::string& queue) {
    PodInfo p = GangPod(name, "", 1);
    p.labels[kLabelQueue] = queue;
    p.creation_unix = 1;
    return p;
  }
  // Plans, reserves and binds p, and syncs it running there; the plan's status.
  Status Start(const PodInfo& p) {
    EXPECT_TRUE(Add({p}).ok());
    PlanResult plan = engine_->PlanPod(p.uid);
    if (!plan.status.ok()) return plan.status;
    EXPECT_TRUE(engine_->Reserve(p.uid, plan.node).ok());
    EXPECT_TRUE(engine_->Bound(p.uid, plan.node).ok());
    EXPECT_TRUE(Add({testing::RunningOn(p, plan.node, now_)}).ok());
    return Status::Ok();
  }
};

constexpr char kLlm[] = "queues:\n  - name: llm\n    nominal: {gpus: 16}\n    borrowingLimit: {gpus: 0}\n";
constexpr char kRenamed[] =
    "queues:\n  - name: team-llm\n    formerNames: [llm]\n    nominal: {gpus: 16}\n    borrowingLimit: {gpus: 0}\n";

TEST_F(QueueRenameTest, RunningWorkAndPodsOfTheFormerNameAreTheRenamedQueues) {
  Reload(kLlm);
  ASSERT_TRUE(Start(InQueue("a", "llm")).ok());
  Reload(kRenamed);
  const std::string queues = engine_->DescribeQueues();
  EXPECT_NE(queues.find("team-llm"), std::string::npos) << queues;
  EXPECT_NE(queues.find("gpus by door: kubernetes 8, slurm 0"), std::string::npos)
      << "the running pod of the old label is the renamed queue's:\n" << queues;

  // 8 of the queue's 16 GPUs are taken by a: b (old label) fits, c (new label) is over the quota.
  Status b = Start(InQueue("b", "llm"));
  EXPECT_TRUE(b.ok()) << b.ToString();
  Status c = Start(InQueue("c", "team-llm"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.ToString().find("team-llm"), std::string::npos) << c.ToString();

  // b started after the rename: its time to start is the renamed queue's (a's, before, is llm's).
  const std::string text = registry_.Render();
  EXPECT_EQ(text.find("tidal_time_to_start_seconds_count{class=\"batch\",queue=\"unconfigured\""), std::string::npos) << text;
  EXPECT_NE(text.find("tidal_time_to_start_seconds_count{class=\"batch\",queue=\"team-llm\",size_bucket=\"2-8\"} 1"),
            std::string::npos) << text;
}

TEST_F(QueueRenameTest, DroppingTheFormerNameLaterMakesItUnconfigured) {
  Reload(kRenamed);
  Reload("queues:\n  - name: team-llm\n    nominal: {gpus: 16}\n");
  Status s = Start(InQueue("late", "llm"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("queue \"llm\" is not configured"), std::string::npos) << s.ToString();
}

// A reload that drops a queue leaves its running work charged to no queue; a later reload that
// brings the name back (a reverted typo, a rollback) must charge that work to it again, or the
// queue's quota and fair share leave it out and the queue can be admitted past its limits.
TEST_F(QueueRenameTest, RunningWorkIsChargedAgainWhenItsQueueComesBack) {
  Reload(kLlm);
  ASSERT_TRUE(Start(InQueue("a", "llm")).ok());
  Reload("queues:\n  - name: other\n    nominal: {gpus: 8}\n");
  Reload(kLlm);
  const std::string queues = engine_->DescribeQueues();
  EXPECT_NE(queues.find("queue llm uses 8/16 gpus"), std::string::npos) << queues;

  // 8 of the queue's 16 GPUs are a's again: b fits, c is over the quota.
  Status b = Start(InQueue("b", "llm"));
  EXPECT_TRUE(b.ok()) << b.ToString();
  Status c = Start(InQueue("c", "llm"));
  ASSERT_FALSE(c.ok()) << "a is running in llm: 24 of 16 GPUs";
  EXPECT_NE(c.ToString().find("llm"), std::string::npos) << c.ToString();
}

}  // namespace
}  // namespace tidal
