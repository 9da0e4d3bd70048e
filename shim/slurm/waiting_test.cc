// Jobs Slurm would hold back even when released (waiting.h): an array's task limit, a begin time,
// a requeued job's 120 s. Tidal must not release them early (their pinned GPUs would sit idle,
// counted as Slurm's, for as long as Slurm holds them back), and holds again those it released.
#include <gtest/gtest.h>

#include "shim/slurm/adapter_testing.h"
#include "shim/slurm/reconciler.h"
#include "shim/slurm/waiting.h"

namespace tidal::slurm {
namespace {

JobRecord ArrayTask(uint32_t array, uint32_t task, uint32_t limit, int64_t gpus) {
  JobRecord j = HeldJob(array * 100 + task, 1, gpus);
  j.id = std::to_string(array) + "_" + std::to_string(task);
  j.array_job_id = array;
  j.array_task_id = task;
  j.array_max_tasks = limit;
  return j;
}

int Releases(const MemorySlurm& s) {
  int n = 0;
  for (const auto& c : s.calls) n += c.rfind("release ", 0) == 0 ? 1 : 0;
  return n;
}

TEST(ThrottledArrayTasks, OnlyTheLimitLessTheBusyTasksMayStartLowestIdsFirst) {
  JobRecord running = ArrayTask(30, 0, 2, 1);
  running.state = JobState::kRunning;
  running.nodes = {"gpu01"};
  JobRecord meta = HeldJob(30, 1, 1);  // the array's record: the tasks not split off yet
  meta.array_job_id = 30;
  meta.array_max_tasks = 2;
  meta.pending_array_tasks = {3, 4, 5};
  JobRecord split = ArrayTask(30, 2, 2, 1);
  JobRecord other = HeldJob(7, 1, 1);  // not an array
  const auto t = ThrottledArrayTasks({running, meta, split, other});
  // One running, limit 2: task 2 may start; 3, 4 and 5 wait.
  EXPECT_EQ(t.count("30_2"), 0u);
  for (const char* id : {"30_3", "30_4", "30_5"}) {
    ASSERT_EQ(t.count(id), 1u) << id;
    EXPECT_NE(t.at(id).find("at most 2 task(s) at once"), std::string::npos) << t.at(id);
  }
  EXPECT_EQ(t.size(), 3u);
  meta.array_max_tasks = split.array_max_tasks = running.array_max_tasks = 0;  // no limit
  EXPECT_TRUE(ThrottledArrayTasks({running, meta, split}).empty());
}

TEST_F(ReconcileTest, AnArrayWithATaskLimitIsReleasedOnlyUpToItsLimit) {
  // --array=0-2%1, 4 GPUs a task: the cluster (and qa's quota) has room for all three, but Slurm
  // runs one at a time. Before, all three were released: two waited pinned (JobArrayTaskLimit)
  // with their 8 GPUs counted as Slurm's.
  slurm_.state.jobs = {ArrayTask(30, 0, 1, 4), ArrayTask(30, 1, 1, 4), ArrayTask(30, 2, 1, 4), HeldJob(8, 1, 8)};
  slurm_.state.read_unix = 10000;
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(slurm_.Find("30_0")->priority, 1000u);
  EXPECT_EQ(slurm_.Find("30_1")->priority, 0u);
  EXPECT_EQ(slurm_.Find("30_2")->priority, 0u);
  EXPECT_NE(slurm_.Find("30_1")->admin_comment.find("runs at most 1 task(s) at once"), std::string::npos)
      << slurm_.Find("30_1")->admin_comment;
  // The 8 GPUs the throttled tasks would have held are there for job 8 (qa: 16 GPUs).
  EXPECT_EQ(slurm_.Find("8")->priority, 1000u) << slurm_.Find("8")->admin_comment;
  EXPECT_EQ(Releases(slurm_), 2);
  // Task 0 runs: still one at a time.
  JobRecord* t0 = slurm_.Find("30_0");
  t0->state = JobState::kRunning;
  t0->nodes = t0->required_nodes;
  slurm_.calls.clear();
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  EXPECT_EQ(Releases(slurm_), 0);
  // It ends: task 1 (the lowest id) is next.
  t0->state = JobState::kCompleted;
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  EXPECT_EQ(slurm_.Find("30_1")->priority, 1000u) << slurm_.Find("30_1")->admin_comment;
  EXPECT_EQ(slurm_.Find("30_2")->priority, 0u);
}

TEST_F(ReconcileTest, AReleasedTaskSlurmThrottlesIsHeldAgain) {
  // Released past the limit (by an older adapter, or a race): Slurm says JobArrayTaskLimit.
  JobRecord a = ArrayTask(40, 0, 1, 4);
  a.state = JobState::kRunning;
  a.priority = 1000;
  a.nodes = a.required_nodes = {"gpu01"};
  a.admin_comment = "tidal: released to gpu01";
  JobRecord b = ArrayTask(40, 1, 1, 4);
  b.priority = 1000;
  b.required_nodes = {"gpu02"};
  b.admin_comment = "tidal: released to gpu02";
  b.state_reason = "JobArrayTaskLimit";
  slurm_.state.jobs = {a, b};
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  ASSERT_FALSE(slurm_.calls.empty());
  EXPECT_EQ(slurm_.calls[0], "hold 40_1");
  EXPECT_EQ(slurm_.Find("40_1")->priority, 0u);
  EXPECT_TRUE(slurm_.Find("40_1")->required_nodes.empty());  // Tidal's pin is gone
  EXPECT_EQ(Releases(slurm_), 0);
}

TEST_F(ReconcileTest, AJobIsNotReleasedBeforeItsBeginTime) {
  // sbatch --begin=now+300: before, Tidal released it at once and its node sat idle, counted as
  // Slurm's, for five minutes.
  JobRecord j = HeldJob(50, 1, 8);
  j.eligible_time = 10300;
  slurm_.state.jobs = {j};
  slurm_.state.read_unix = 10000;
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(Releases(slurm_), 0);
  EXPECT_EQ(st.skipped, 1);
  EXPECT_NE(slurm_.Find("50")->admin_comment.find("not before its begin time"), std::string::npos)
      << slurm_.Find("50")->admin_comment;
  EXPECT_EQ(engine_->Stats().pods, 0);
  // The begin time passes (its record reads the same): it is sent and released.
  slurm_.state.read_unix = 10300;
  st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(Releases(slurm_), 1);
  EXPECT_EQ(slurm_.Find("50")->priority, 1000u);
}

TEST_F(ReconcileTest, AReleasedJobWaitingForItsBeginTimeIsHeldAgain) {
  // `scontrol requeue` of a running job by its owner: pending, not held, Reason BeginTime for
  // 120 s, Tidal's old AdminComment and pin still on it. Before, it read as released: its GPUs
  // were kept idle and Slurm restarted it on the old pin by itself.
  JobRecord q = HeldJob(60, 1, 8);
  q.priority = 1000;
  q.required_nodes = {"gpu03"};
  q.admin_comment = "tidal: released to gpu03 [nodelist: gpu03]";
  q.state_reason = "BeginTime";
  q.restart_cnt = 1;
  q.eligible_time = 10120;
  // A user's --begin job Tidal released early (an older adapter): held again, begin time kept.
  JobRecord b = HeldJob(61, 1, 8);
  b.priority = 1000;
  b.required_nodes = {"gpu04"};
  b.admin_comment = "tidal: released to gpu04";
  b.state_reason = "BeginTime";
  b.eligible_time = 10300;
  slurm_.state.jobs = {q, b};
  slurm_.state.read_unix = 10000;
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  ASSERT_GE(slurm_.calls.size(), 2u);
  EXPECT_EQ(slurm_.calls[0], "hold_requeued 60");
  EXPECT_EQ(slurm_.calls[1], "hold 61");
  EXPECT_EQ(slurm_.Find("60")->required_nodes, std::vector<std::string>{"gpu03"});  // the user's -w again
  EXPECT_TRUE(slurm_.Find("61")->required_nodes.empty());
  EXPECT_EQ(Releases(slurm_), 0);
  // HoldRequeued set the requeued job's begin time to now: it is placed anew on the next pass.
  slurm_.Find("60")->eligible_time = 10000;
  slurm_.Find("60")->state_reason = slurm_.Find("61")->state_reason = "JobHeldAdmin";
  slurm_.calls.clear();
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  EXPECT_EQ(Releases(slurm_), 1);
  EXPECT_EQ(slurm_.Find("60")->priority, 1000u);
  EXPECT_EQ(slurm_.Find("61")->priority, 0u);
}

}  // namespace
}  // namespace tidal::slurm
