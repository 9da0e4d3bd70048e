// A job its owner or an admin holds: the comment key tidal.dev/hold=true (waiting.h
// UserHoldReason; the submit gate writes it for `sbatch --hold` and the owner's `scontrol hold`).
// The gate holds every job, so before this key Tidal could not tell such a hold from its own: it
// placed and released the job like any other.
//
// Threading: single-threaded tests.
#include <gtest/gtest.h>

#include "shim/slurm/adapter_testing.h"
#include "shim/slurm/reconciler.h"
#include "shim/slurm/to_engine.h"
#include "shim/slurm/waiting.h"

namespace tidal::slurm {
namespace {

int Releases(const MemorySlurm& s) {
  int n = 0;
  for (const auto& c : s.calls) n += c.rfind("release ", 0) == 0 ? 1 : 0;
  return n;
}

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(UserHoldReason, TheLastHoldWordSaysTrueInAnyCase) {
  JobRecord j = HeldJob(5, 1, 1);
  EXPECT_EQ(UserHoldReason(j), "");
  j.comment = "mine tidal.dev/class=training tidal.dev/hold=true";
  EXPECT_TRUE(Has(UserHoldReason(j), "held: tidal.dev/hold=true in its comment")) << UserHoldReason(j);
  EXPECT_TRUE(Has(UserHoldReason(j), "`scontrol release 5`")) << UserHoldReason(j);
  j.comment = "tidal.dev/hold=TRUE,tidal.dev/class=x";
  EXPECT_NE(UserHoldReason(j), "");
  for (const char* c : {"tidal.dev/hold=false", "tidal.dev/hold=true tidal.dev/hold=false", "tidal.dev/hold=",
                        "tidal.dev/hold", "tidal.dev/hold=truely", "my.dev/hold=true"}) {
    j.comment = c;
    EXPECT_EQ(UserHoldReason(j), "") << c;
  }
  // Only a pending job: a running one with the key is not Tidal's to hold.
  j.comment = "tidal.dev/hold=true";
  j.state = JobState::kRunning;
  EXPECT_EQ(UserHoldReason(j), "");
  j.state = JobState::kPending;
  EXPECT_EQ(SkipReason(j), UserHoldReason(j));
}

TEST_F(ReconcileTest, AJobHeldByItsKeyIsNotSentNorReleasedUntilTheKeyGoes) {
  // sbatch --hold (the gate wrote the key): before, it was released like any job and ran.
  JobRecord h = HeldJob(70, 1, 8);
  h.comment = "mine tidal.dev/hold=true";
  JobRecord other = HeldJob(71, 1, 8);
  slurm_.state.jobs = {h, other};
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(slurm_.Find("70")->priority, 0u);
  EXPECT_EQ(slurm_.Find("71")->priority, 1000u);
  EXPECT_EQ(Releases(slurm_), 1);
  EXPECT_EQ(st.skipped, 1);
  EXPECT_TRUE(Has(slurm_.Find("70")->admin_comment, "tidal: held: tidal.dev/hold=true in its comment"))
      << slurm_.Find("70")->admin_comment;
  EXPECT_TRUE(Has(slurm_.Find("70")->admin_comment, "scontrol release 70")) << slurm_.Find("70")->admin_comment;
  // Only job 71's member reached the engine: the held job takes no capacity, quota or reservation.
  EXPECT_EQ(engine_->Stats().pods, 1);
  // Nothing more while it stays held.
  slurm_.calls.clear();
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  EXPECT_TRUE(slurm_.calls.empty()) << slurm_.calls[0];
  // Its owner's `scontrol release` removed the key (the gate): an ordinary waiting job again.
  slurm_.Find("70")->comment = "mine";
  st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(slurm_.Find("70")->priority, 1000u) << slurm_.Find("70")->admin_comment;
  EXPECT_TRUE(Has(slurm_.Find("70")->admin_comment, "tidal: released to")) << slurm_.Find("70")->admin_comment;
}

TEST_F(ReconcileTest, AReleasedJobThatGetsTheKeyIsHeldAgainAndARunningOneIsNot) {
  // Released by Tidal, not started yet (Slurm's scheduling interval); an admin sets the key.
  JobRecord rel = HeldJob(80, 1, 8);
  rel.priority = 1000;
  rel.required_nodes = {"gpu01"};
  rel.admin_comment = "tidal: released to gpu01";
  rel.state_reason = "None";
  rel.comment = "tidal.dev/hold=true";
  // Running with the key: untouched, still charged.
  JobRecord run = HeldJob(81, 1, 8);
  run.state = JobState::kRunning;
  run.priority = 1000;
  run.nodes = run.required_nodes = {"gpu02"};
  run.start_time = 2000;
  run.admin_comment = "tidal: released to gpu02";
  run.comment = "tidal.dev/hold=true";
  slurm_.state.jobs = {rel, run};
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  ASSERT_FALSE(slurm_.calls.empty());
  EXPECT_EQ(slurm_.calls[0], "hold 80");
  EXPECT_EQ(slurm_.Find("80")->priority, 0u);
  EXPECT_TRUE(slurm_.Find("80")->required_nodes.empty());  // Tidal's pin is gone
  EXPECT_TRUE(Has(slurm_.Find("80")->admin_comment, "held: tidal.dev/hold=true")) << slurm_.Find("80")->admin_comment;
  EXPECT_EQ(Releases(slurm_), 0);
  EXPECT_EQ(st.running, 1);
  EXPECT_EQ(engine_->Stats().pods, 1);  // the running job's member only
  for (const auto& c : slurm_.calls) EXPECT_FALSE(Has(c, " 81")) << c;
  // Next pass: held, skipped, nothing written.
  slurm_.calls.clear();
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  EXPECT_TRUE(slurm_.calls.empty()) << slurm_.calls[0];
}

TEST_F(ReconcileTest, TheOwnersHoldOfAReleasedJobClearsThePinAndSaysWhy) {
  // The gate lets the owner's `scontrol hold` set priority 0 (Slurm stops the job at once) and
  // adds the key: the job reads held, on Tidal's old pin.
  JobRecord j = HeldJob(90, 1, 8);
  j.required_nodes = {"gpu03"};
  j.admin_comment = "tidal: released to gpu03";
  j.comment = "tidal.dev/hold=true";
  slurm_.state.jobs = {j};
  Reconciler r(acfg_, &slurm_, link_.get());
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  ASSERT_FALSE(slurm_.calls.empty());
  EXPECT_EQ(slurm_.calls[0], "hold 90");
  EXPECT_TRUE(slurm_.Find("90")->required_nodes.empty());
  EXPECT_TRUE(Has(slurm_.Find("90")->admin_comment, "tidal: held: tidal.dev/hold=true")) << slurm_.Find("90")->admin_comment;
  EXPECT_EQ(Releases(slurm_), 0);
  EXPECT_EQ(engine_->Stats().pods, 0);
}

TEST_F(ReconcileTest, AHeldArrayTaskTakesNoSlotOfItsTaskLimit) {
  // --array=0-1%1, task 0 held by its owner: task 1 may start.
  JobRecord t0 = HeldJob(3000, 1, 4), t1 = HeldJob(3001, 1, 4);
  t0.id = "30_0", t1.id = "30_1";
  t0.array_job_id = t1.array_job_id = 30;
  t0.array_task_id = 0, t1.array_task_id = 1;
  t0.array_max_tasks = t1.array_max_tasks = 1;
  t0.comment = "tidal.dev/hold=true";
  EXPECT_TRUE(ThrottledArrayTasks({t0, t1}).empty());
  slurm_.state.jobs = {t0, t1};
  Reconciler r(acfg_, &slurm_, link_.get());
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  EXPECT_EQ(slurm_.Find("30_0")->priority, 0u);
  EXPECT_EQ(slurm_.Find("30_1")->priority, 1000u) << slurm_.Find("30_1")->admin_comment;
}

}  // namespace
}  // namespace tidal::slurm
