// Waiting reasons of a pending job array whose tasks are still in Slurm's one array record
// (`--array=0-9999%10`: squeue shows 123_[7-9999%10]). An update naming one of its tasks
// ("123_7") makes slurmctld split that task off into a job record of its own; the adapter once
// wrote each waiting task's reason that way (up to 200 a pass), and a big array became thousands
// of job records, until MaxJobCount refused every sbatch. SplittingSlurm updates records as
// slurmctld 22.05 does (checked on a real one: to_engine.h PendingArrayId).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "shim/slurm/adapter_testing.h"
#include "shim/slurm/reconciler.h"
#include "shim/slurm/to_engine.h"

namespace tidal::slurm {
namespace {

// MemorySlurm whose array record splits as slurmctld's does: "A_T" naming a task of the record
// splits it off; "A_[list]" updates the record in place when the list names every task it holds
// (and the split tasks it names), else splits each task it names; "A" updates the record and
// every split task of the array.
class SplittingSlurm : public MemorySlurm {
 public:
  int splits = 0;
  std::vector<std::string> updated;  // the ids every update reached, in order

  Status Release(const std::string& id, const JobPin& pin, const std::string& text) override {
    for (const std::string& t : Targets(id)) (void)MemorySlurm::Release(t, pin, text);
    return Status::Ok();
  }
  Status Hold(const std::string& id, const std::string& text, const JobPin& pin) override {
    for (const std::string& t : Targets(id)) (void)MemorySlurm::Hold(t, text, pin);
    return Status::Ok();
  }
  Status SetComment(const std::string& id, const std::string& text) override {
    calls.push_back("comment " + id + " " + text);
    for (const std::string& t : Targets(id)) Find(t)->admin_comment = text;
    return Status::Ok();
  }

 private:
  JobRecord* ArrayRecord(uint32_t array) {
    for (auto& j : state.jobs) {
      if (j.array_job_id == array && !j.pending_array_tasks.empty()) return &j;
    }
    return nullptr;
  }
  std::string Split(uint32_t array, uint32_t task) {
    JobRecord* rec = ArrayRecord(array);
    JobRecord t = *rec;
    rec->pending_array_tasks.erase(std::find(rec->pending_array_tasks.begin(), rec->pending_array_tasks.end(), task));
    t.pending_array_tasks.clear();
    t.array_task_id = task;
    t.job_id = 100000 + static_cast<uint32_t>(state.jobs.size());
    t.id = std::to_string(array) + "_" + std::to_string(task);
    state.jobs.push_back(t);
    ++splits;
    return t.id;
  }
  std::vector<std::string> Targets(const std::string& id) {
    std::vector<std::string> out;
    const size_t under = id.find('_');
    const uint32_t array = static_cast<uint32_t>(std::strtoul(id.c_str(), nullptr, 10));
    JobRecord* rec = ArrayRecord(array);
    std::set<uint32_t> named;
    if (under == std::string::npos) {  // "A": the record and every split task
      for (auto& j : state.jobs) {
        if (j.array_job_id == array || j.id == id) out.push_back(j.id);
      }
    } else if (id[under + 1] == '[') {
      for (const char* p = id.c_str() + under + 2; *p != '\0' && *p != ']';) {
        char* end = nullptr;
        const uint32_t lo = static_cast<uint32_t>(std::strtoul(p, &end, 10));
        uint32_t hi = lo;
        if (*end == '-') hi = static_cast<uint32_t>(std::strtoul(end + 1, &end, 10));
        for (uint32_t t = lo; t <= hi; ++t) named.insert(t);
        p = *end == ',' ? end + 1 : end;
      }
      bool whole = rec != nullptr;
      for (uint32_t t : rec == nullptr ? std::vector<uint32_t>{} : rec->pending_array_tasks) whole = whole && named.count(t) > 0;
      if (whole) {
        out.push_back(rec->id);
        for (uint32_t t : rec->pending_array_tasks) named.erase(t);
      }
    } else {
      named.insert(static_cast<uint32_t>(std::strtoul(id.c_str() + under + 1, nullptr, 10)));
    }
    for (uint32_t t : named) {
      rec = ArrayRecord(array);
      const bool held = rec != nullptr && std::count(rec->pending_array_tasks.begin(), rec->pending_array_tasks.end(), t) > 0;
      const std::string task_id = std::to_string(array) + "_" + std::to_string(t);
      if (held) {
        out.push_back(Split(array, t));
      } else if (Find(task_id) != nullptr) {
        out.push_back(task_id);
      }
    }
    updated.insert(updated.end(), out.begin(), out.end());
    return out;
  }
};

JobRecord ArrayRecordOf(uint32_t array, uint32_t tasks, uint32_t limit, int64_t gpus) {
  JobRecord j = HeldJob(array, 1, gpus);
  j.array_job_id = array;
  j.array_max_tasks = limit;
  for (uint32_t t = 0; t < tasks; ++t) j.pending_array_tasks.push_back(t);
  return j;
}

TEST(PendingArrayId, NamesExactlyTheTasksTheRecordHolds) {
  JobRecord j = ArrayRecordOf(30, 0, 0, 1);
  EXPECT_EQ(PendingArrayId(j), "");
  j.pending_array_tasks = {21, 7, 8, 9, 11, 20, 9};
  EXPECT_EQ(PendingArrayId(j), "30_[7-9,11,20-21]");
  j.pending_array_tasks = {5};
  EXPECT_EQ(PendingArrayId(j), "30_[5]");
}

class ArrayCommentTest : public ReconcileTest {
 protected:
  SplittingSlurm split_;
};

TEST_F(ArrayCommentTest, AWaitingArrayGetsOneCommentOnItsRecordAndIsNeverSplitForIt) {
  // --array=0-49%2 of 8-GPU tasks while job 9 uses qa's whole quota (16 GPUs): tasks 0 and 1 wait
  // for the quota, 2-49 for the array's limit. Before, each got its own comment by task id: 50
  // job records after one pass.
  JobRecord busy = HeldJob(9, 2, 8);
  busy.state = JobState::kRunning;
  busy.priority = 1000;
  busy.nodes = {"gpu01", "gpu02"};
  busy.admin_comment = "tidal: released to gpu01,gpu02";
  split_.state.nodes = slurm_.state.nodes;
  split_.state.jobs = {busy, ArrayRecordOf(30, 50, 2, 8)};
  split_.state.read_unix = 10000;
  Reconciler r(acfg_, &split_, link_.get());
  for (int pass = 0; pass < 3; ++pass) {
    ReconcileStats st = r.ReconcileOnce();
    ASSERT_TRUE(st.admitted) << st.status.ToString();
    EXPECT_EQ(st.pending, 2);   // tasks 0 and 1 sent to the engine
    EXPECT_EQ(st.skipped, 48);  // the others wait for the limit
  }
  EXPECT_EQ(split_.splits, 0);
  EXPECT_EQ(split_.state.jobs.size(), 2u);
  // One update, of the record in place; the reason is its next task's (task 0: qa's quota).
  ASSERT_EQ(split_.calls.size(), 1u) << split_.calls.back();
  EXPECT_EQ(split_.calls[0].rfind("comment 30_[0-49] tidal: ", 0), 0u) << split_.calls[0];
  const JobRecord* rec = split_.Find("30");
  ASSERT_NE(rec, nullptr);
  EXPECT_NE(rec->admin_comment.find("qa"), std::string::npos) << rec->admin_comment;

  // Job 9 ends: tasks 0 and 1 are released (split off: pinned, as they must be), the record says
  // why the others wait, in place; nothing else splits.
  split_.state.jobs[0].state = JobState::kCompleted;
  split_.calls.clear();
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  EXPECT_EQ(split_.splits, 2);
  ASSERT_NE(split_.Find("30_0"), nullptr);
  ASSERT_NE(split_.Find("30_1"), nullptr);
  EXPECT_EQ(split_.Find("30_0")->priority, 1000u) << split_.Find("30_0")->admin_comment;
  EXPECT_EQ(split_.Find("30_1")->priority, 1000u) << split_.Find("30_1")->admin_comment;
  rec = split_.Find("30");
  EXPECT_EQ(rec->pending_array_tasks.size(), 48u);
  EXPECT_NE(rec->admin_comment.find("runs at most 2 task(s) at once"), std::string::npos) << rec->admin_comment;
  ASSERT_TRUE(r.ReconcileOnce().admitted);  // both released, still pending: nothing more
  EXPECT_EQ(split_.splits, 2);
  for (const auto& c : split_.calls) {
    if (c.rfind("comment 30_", 0) == 0) {
      EXPECT_EQ(c.rfind("comment 30_[", 0), 0u) << c;
    }
  }
}

TEST_F(ArrayCommentTest, AnAdminsCommentOnTheArrayRecordIsKeptAndSplitTasksKeepTheirOwn) {
  // A task split off earlier (an old adapter's comment) is its own record: commented by its id.
  JobRecord rec = ArrayRecordOf(31, 6, 1, 8);
  rec.pending_array_tasks = {2, 3, 4, 5};
  JobRecord running = rec;
  running.pending_array_tasks.clear();
  running.id = "31_0", running.job_id = 40, running.array_task_id = 0;
  running.state = JobState::kRunning, running.priority = 1000, running.nodes = {"gpu01"};
  running.admin_comment = "tidal: released to gpu01";
  JobRecord old = rec;
  old.pending_array_tasks.clear();
  old.id = "31_1", old.job_id = 41, old.array_task_id = 1;
  old.admin_comment = "tidal: an old reason";
  rec.admin_comment = "ops: keep this array waiting";
  split_.state.nodes = slurm_.state.nodes;
  split_.state.jobs = {running, old, rec};
  split_.state.read_unix = 10000;
  Reconciler r(acfg_, &split_, link_.get());
  for (int pass = 0; pass < 2; ++pass) ASSERT_TRUE(r.ReconcileOnce().admitted);
  EXPECT_EQ(split_.splits, 0);
  EXPECT_EQ(split_.Find("31")->admin_comment, "ops: keep this array waiting");
  EXPECT_NE(split_.Find("31_1")->admin_comment.find("runs at most 1 task(s) at once"), std::string::npos)
      << split_.Find("31_1")->admin_comment;
  EXPECT_EQ(split_.Find("31_0")->admin_comment, "tidal: released to gpu01");
  EXPECT_EQ(split_.updated, (std::vector<std::string>{"31_1"}));
}

TEST_F(ArrayCommentTest, AnArrayReleasedByHandIsHeldAgainByItsRecordNotTheTasksTidalReleased) {
  // An admin's `scontrol release 32` let the array's pending record out of the gate's hold
  // (escaped); task 32_0, split off and released by Tidal onto gpu01, waits for Slurm to start it.
  // The record is held again in place, by the tasks it holds: before, the hold went to "32", which
  // Slurm applies to every task of the array, 32_0 too (its release lost, its nodes idle).
  JobRecord rec = ArrayRecordOf(32, 6, 0, 8);
  rec.pending_array_tasks = {1, 2, 3, 4, 5};
  rec.priority = 1000;  // released by hand: no pin, no Tidal comment
  rec.admin_comment = "tidal: waiting for Tidal";
  JobRecord released = rec;
  released.pending_array_tasks.clear();
  released.id = "32_0", released.job_id = 50, released.array_task_id = 0;
  released.required_nodes = {"gpu01"};
  released.admin_comment = "tidal: released to gpu01";
  split_.state.nodes = slurm_.state.nodes;
  split_.state.jobs = {released, rec};
  split_.state.read_unix = 10000;
  Reconciler r(acfg_, &split_, link_.get());
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  EXPECT_EQ(split_.splits, 0);
  EXPECT_EQ(split_.Find("32")->priority, 0u) << split_.Find("32")->admin_comment;
  EXPECT_NE(split_.Find("32")->admin_comment.find("released outside Tidal"), std::string::npos) << split_.Find("32")->admin_comment;
  EXPECT_EQ(split_.Find("32_0")->priority, 1000u) << split_.Find("32_0")->admin_comment;
  EXPECT_EQ(split_.Find("32_0")->required_nodes, std::vector<std::string>{"gpu01"});
  ASSERT_FALSE(split_.updated.empty());
  EXPECT_EQ(split_.updated.front(), "32");  // the record, updated in place
  EXPECT_EQ(std::count(split_.updated.begin(), split_.updated.end(), "32_0"), 0) << "the hold reached Tidal's released task";
}

}  // namespace
}  // namespace tidal::slurm
