// A queue's running charges on a live engine. queues[].formerNames: a queue renamed in config keeps
// its running work's charge and takes the pods that still carry the old label, in the ledger, the
// by-door ledger and the metrics (a plain rename left the running work uncharged, "unconfigured",
// and refused new pods of the old label). A queue that comes back charges its running work again,
// and a running pod whose keys are edited to a value the engine cannot read keeps its charge.
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
  Status Start(const PodInfo& p, std::string* node = nullptr) {
    EXPECT_TRUE(Add({p}).ok());
    PlanResult plan = engine_->PlanPod(p.uid);
    if (!plan.status.ok()) return plan.status;
    if (node != nullptr) *node = plan.node;
    EXPECT_TRUE(engine_->Reserve(p.uid, plan.node).ok());
    EXPECT_TRUE(engine_->Bound(p.uid, plan.node).ok());
    EXPECT_TRUE(Add({testing::RunningOn(p, plan.node, now_)}).ok());
    return Status::Ok();
  }
  // Pod r (queue llm, team/r) first seen running on n0: its 8 GPUs are charged to llm, and explain
  // names its unreadable keys as not applied.
  void ExpectChargedToLlmWithKeysNotApplied(const PodInfo& r) {
    ASSERT_TRUE(Add({testing::RunningOn(r, "n0", now_)}).ok());
    const std::string queues = engine_->DescribeQueues();
    EXPECT_NE(queues.find("queue llm uses 8/16 gpus"), std::string::npos) << queues;
    std::string text;
    ASSERT_TRUE(engine_->Explain("team/r", &text).ok());
    EXPECT_NE(text.find("not applied"), std::string::npos) << text;
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

// kubectl label / scontrol update on a running pod with a value the engine cannot read: the pod
// left its gang and its queue's charge (quota and fair share then left it out, it was no victim and
// had no runtime limit). It keeps the spec it runs with, and explain says what was not applied.
TEST_F(QueueRenameTest, ARunningPodWhoseKeysBecomeUnreadableKeepsItsCharge) {
  Reload(kLlm);
  PodInfo a = InQueue("a", "llm");
  std::string node;
  ASSERT_TRUE(Start(a, &node).ok());
  // The pod as the door reports it now: running where it was bound, with the edited label.
  a.labels[kLabelClass] = "notebok";
  ASSERT_TRUE(Add({testing::RunningOn(a, node, now_)}).ok());
  const std::string queues = engine_->DescribeQueues();
  EXPECT_NE(queues.find("queue llm uses 8/16 gpus"), std::string::npos) << queues;
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/a", &text).ok()) << "the pod is still its gang";
  EXPECT_NE(text.find("not applied: pod team/a keeps the spec it runs with"), std::string::npos) << text;
  EXPECT_NE(text.find("notebok"), std::string::npos) << text;
  Status b = Start(InQueue("b", "llm"));
  EXPECT_TRUE(b.ok()) << b.ToString();
  EXPECT_FALSE(Start(InQueue("c", "llm")).ok()) << "a still holds 8 of llm's 16 GPUs";

  // Labels fixed again: applied, and nothing left to explain.
  a.labels[kLabelClass] = "batch";
  ASSERT_TRUE(Add({testing::RunningOn(a, node, now_)}).ok());
  ASSERT_TRUE(engine_->Explain("team/a", &text).ok());
  EXPECT_EQ(text.find("not applied"), std::string::npos) << text;
}

// The same pod first seen running so (an engine restart, a resync): its queue and gang keys are
// readable, so it is charged to its queue.
TEST_F(QueueRenameTest, APodFirstSeenRunningWithAnUnreadableKeyIsChargedToItsQueue) {
  Reload(kLlm);
  PodInfo r = InQueue("r", "llm");
  r.labels[kLabelPreemptible] = "True";
  ExpectChargedToLlmWithKeysNotApplied(r);
}

// A pod first seen running whose gang keys cannot be read (two peer schedulers' keys that disagree,
// 761e5b9) but whose queue can: charged to its queue, as a pod of its own. It was charged nowhere.
TEST_F(QueueRenameTest, APodFirstSeenRunningWithUnreadableGangKeysIsChargedToItsQueue) {
  Reload(kLlm);
  PodInfo r = InQueue("r", "llm");
  r.labels["scheduling.x-k8s.io/pod-group"] = "sp";
  r.annotations["scheduling.k8s.io/group-name"] = "vc";
  r.labels[kLabelGangSize] = "2";
  ExpectChargedToLlmWithKeysNotApplied(r);
}

// kubectl label pod rg-1 tidal.dev/gang=other on a running member split the rigid gang: rg was
// booked 2 of 3 bound and "other" 1 of 3, both pending, with no event and nothing evicted. A running
// pod keeps what it is and is entitled to (explain names the edits not applied); edits that give
// (a shorter limit, a checkpoint declared) apply.
TEST_F(QueueRenameTest, ARunningMembersKeysEditedStayTheOnesItRunsWith) {
  Reload(kLlm);
  std::vector<PodInfo> rg;
  for (int i = 0; i < 2; ++i) {
    rg.push_back(GangPod("rg-" + std::to_string(i), "rg", 2));
    rg.back().labels[kLabelQueue] = "llm";
    rg.back().labels[kLabelRuntimeLimit] = "20m";
    rg.back().creation_unix = 1;
  }
  ASSERT_TRUE(Add(rg).ok());
  std::vector<std::string> nodes;
  for (const auto& p : rg) {
    PlanResult plan = engine_->PlanPod(p.uid);
    ASSERT_TRUE(plan.status.ok()) << plan.status.ToString();
    ASSERT_TRUE(engine_->Reserve(p.uid, plan.node).ok());
    nodes.push_back(plan.node);
  }
  for (size_t i = 0; i < rg.size(); ++i) {
    ASSERT_TRUE(engine_->Bound(rg[i].uid, nodes[i]).ok());
    ASSERT_TRUE(Add({testing::RunningOn(rg[i], nodes[i], now_)}).ok());
  }
  PodInfo edited = rg[1];
  edited.labels[kLabelGang] = "other";
  edited.labels[kLabelRuntimeLimit] = "1h";
  ASSERT_TRUE(Add({testing::RunningOn(edited, nodes[1], now_)}).ok());
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/rg", &text).ok());
  EXPECT_NE(text.find("0 pending, 2 bound"), std::string::npos) << "the gang is whole:\n" << text;
  EXPECT_NE(text.find("tidal.dev/gang: other (runs as rg)"), std::string::npos) << text;
  EXPECT_NE(text.find("tidal.dev/runtime-limit: 1h (runs as 20m)"), std::string::npos) << "no longer by a label:\n" << text;
  EXPECT_FALSE(engine_->Explain("team/other", &text).ok()) << "no gang other: " << text;

  // Taken back, and a shorter limit and a checkpoint on notice declared: applied, nothing kept.
  PodInfo gives = rg[1];
  gives.labels[kLabelRuntimeLimit] = "10m";
  gives.annotations[kLabelCheckpointOnNotice] = "60s";
  ASSERT_TRUE(Add({testing::RunningOn(gives, nodes[1], now_)}).ok());
  ASSERT_TRUE(engine_->Explain("team/rg", &text).ok());
  EXPECT_EQ(text.find("not applied"), std::string::npos) << text;
}

// After an engine restart every running pod was charged as within quota: tidal_queue_borrowed and
// "admitted on borrowed quota" went to 0 while the queue still ran above its nominal.
TEST_F(QueueRenameTest, WorkAboveNominalSeenFirstRunningIsOnBorrowedQuota) {
  Reload("queues:\n  - name: llm\n    nominal: {gpus: 8}\n  - name: other\n    nominal: {gpus: 56}\n");
  ASSERT_TRUE(Add({testing::RunningOn(InQueue("r0", "llm"), "n0", now_), testing::RunningOn(InQueue("r1", "llm"), "n1", now_),
                   testing::RunningOn(InQueue("r2", "llm"), "n2", now_)})
                  .ok());
  const std::string queues = engine_->DescribeQueues();
  EXPECT_NE(queues.find("queue llm uses 24/8 gpus"), std::string::npos) << queues;
  EXPECT_NE(queues.find("16 gpus in work admitted on borrowed quota"), std::string::npos) << queues;
}

}  // namespace
}  // namespace tidal
