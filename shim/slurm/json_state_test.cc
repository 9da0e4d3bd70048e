// squeue --json / sinfo --json readers over real Slurm 22.05 output (testdata/, captured from a
// real slurmctld: held, pending array, multi-node, running, requeue-held, GPU typed and untyped
// jobs; failing, drained, not-responding and maintenance nodes) and over broken documents.
//
// Threading: single-threaded tests.
#include <gtest/gtest.h>

#include <map>

#include "shim/slurm/job_fields.h"
#include "shim/slurm/json_state.h"

namespace tidal::slurm {
namespace {

std::string Fixture(const std::string& name) {
  std::string text;
  Status st = ReadTextFile(std::string(TIDAL_SOURCE_DIR) + "/shim/slurm/testdata/" + name, &text);
  EXPECT_TRUE(st.ok()) << st.Message();
  return text;
}

std::map<uint32_t, JobRecord> ByJobId(const std::vector<JobRecord>& jobs) {
  std::map<uint32_t, JobRecord> m;
  for (const JobRecord& j : jobs) m[j.job_id] = j;
  return m;
}

TEST(SqueueJson, RealSlurm2205Output) {
  std::vector<JobRecord> jobs;
  Status st = ParseSqueueJson(Fixture("squeue_22.05.json"), &jobs);
  ASSERT_TRUE(st.ok()) << st.Message();
  ASSERT_EQ(jobs.size(), 10u);
  auto j = ByJobId(jobs);
  for (const JobRecord& r : jobs) EXPECT_EQ(r.parse_error, "") << r.id;

  const JobRecord& held = j[1];  // sbatch -H --gres=gpu:a100:4 -c 4 --mem=16G -t 60 --comment=...
  EXPECT_EQ(held.id, "1");
  EXPECT_EQ(held.state, JobState::kPending);
  EXPECT_EQ(held.priority, 0u);
  EXPECT_EQ(held.state_reason, "JobHeldUser");
  EXPECT_EQ(held.gpus_per_node, 4);
  EXPECT_EQ(held.gpu_model, "a100");
  EXPECT_EQ(held.node_count, 1u);
  EXPECT_EQ(held.cpus_per_node, 4);
  EXPECT_EQ(held.memory_mb_per_node, 16384);
  EXPECT_EQ(held.time_limit_min, 60);
  EXPECT_EQ(held.comment, "tidal: waiting");
  EXPECT_EQ(held.user, "root");
  EXPECT_EQ(held.partition, "batch");
  EXPECT_GT(held.submit_time, 0);

  const JobRecord& array = j[2];  // --array=0-99%4 --gpus-per-node=2, held
  EXPECT_EQ(array.id, "2");
  EXPECT_EQ(array.array_job_id, 2u);
  EXPECT_FALSE(array.array_task_id.has_value());
  ASSERT_EQ(array.pending_array_tasks.size(), 100u);
  EXPECT_EQ(array.pending_array_tasks.front(), 0u);
  EXPECT_EQ(array.pending_array_tasks.back(), 99u);
  EXPECT_EQ(array.array_max_tasks, 4u);
  EXPECT_EQ(array.gpus_per_node, 2);
  EXPECT_EQ(array.gpu_model, "");
  EXPECT_EQ(array.memory_mb_per_node, 1024);

  const JobRecord& multi = j[3];  // -N2 --gpus=16, running
  EXPECT_EQ(multi.state, JobState::kRunning);
  EXPECT_EQ(multi.nodes, (std::vector<std::string>{"gpu01", "gpu02"}));
  EXPECT_EQ(multi.node_count, 2u);
  EXPECT_EQ(multi.gpus_total, 16);
  EXPECT_EQ(multi.gpus_per_node, 8);
  EXPECT_EQ(multi.cpus_per_node, 1);
  EXPECT_EQ(multi.memory_mb_per_node, 1024);
  EXPECT_GT(multi.priority, 0u);
  EXPECT_GT(multi.start_time, 0);

  const JobRecord& requeued = j[4];  // -w gpu03 --gres=gpu:2, then `scontrol requeuehold`
  EXPECT_EQ(requeued.state, JobState::kPending);
  EXPECT_EQ(requeued.priority, 0u);
  EXPECT_EQ(requeued.restart_cnt, 1u);
  EXPECT_EQ(requeued.required_nodes, std::vector<std::string>{"gpu03"});
  EXPECT_EQ(requeued.gpus_per_node, 2);

  const JobRecord& dep = j[5];  // --dependency=afterok:1 --gpus-per-node=a100:1 -x gpu04
  EXPECT_EQ(dep.dependency, "afterok:1(unfulfilled)");
  EXPECT_EQ(dep.excluded_nodes, std::vector<std::string>{"gpu04"});
  EXPECT_EQ(dep.gpu_model, "a100");
  EXPECT_EQ(dep.gpus_per_node, 1);

  EXPECT_EQ(j[6].state, JobState::kCancelled);
  EXPECT_EQ(j[6].time_limit_min, 0) << "UNLIMITED is null in v0.0.38";
  EXPECT_EQ(j[6].gpus_per_node, 0);
  EXPECT_EQ(j[6].cpus_per_node, 2);
  EXPECT_EQ(j[6].memory_mb_per_node, 4096);
  EXPECT_EQ(j[10].state, JobState::kFailed);

  const JobRecord& task = j[8];  // --array=1-3, task 1 split off with its own job id
  EXPECT_EQ(task.id, "7_1");
  EXPECT_EQ(task.array_job_id, 7u);
  EXPECT_EQ(task.array_task_id, 1u);
  EXPECT_TRUE(task.pending_array_tasks.empty());
  EXPECT_EQ(j[7].id, "7_3") << "the last task keeps the array's job id";
}

TEST(SqueueJson, BadFieldsOfOneJobKeepTheOthers) {
  std::vector<JobRecord> jobs;
  Status st = ParseSqueueJson(Fixture("squeue_bad_job.json"), &jobs);
  ASSERT_TRUE(st.ok()) << st.Message();
  auto j = ByJobId(jobs);
  ASSERT_EQ(jobs.size(), 10u);
  EXPECT_EQ(j[5].parse_error, "job 5: tres_per_node: gpu count 'x' is not a number");
  EXPECT_EQ(j[1].parse_error, "job 1: field 'priority' should be an integer, is string");
  EXPECT_EQ(j[1].gpus_per_node, 4) << "the fields that could be read are still read";
  for (uint32_t id : {2u, 3u, 4u, 6u, 7u, 8u, 9u, 10u}) EXPECT_EQ(j[id].parse_error, "") << id;
}

TEST(SqueueJson, ErrorsArrayFailsTheWholeRead) {
  // Real output of `squeue --json` with slurmctld unreachable: exit code 0, "jobs": [].
  std::vector<JobRecord> jobs{JobRecord{}};
  Status st = ParseSqueueJson(Fixture("squeue_errors.json"), &jobs);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.Message(),
            "squeue --json: Slurm reported 1 error(s): slurm_load_jobs, Failed while looking for jobs, Unspecified "
            "error (error_number -1)");
  EXPECT_EQ(jobs.size(), 1u) << "unchanged";
  std::vector<NodeRecord> nodes;
  st = ParseSinfoJson(Fixture("sinfo_errors.json"), &nodes);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.Message(), "sinfo --json: Slurm reported 1 error(s): Unspecified error (errno -1)");
}

TEST(SqueueJson, BrokenDocuments) {
  auto error = [](const std::string& text) {
    std::vector<JobRecord> jobs;
    Status st = ParseSqueueJson(text, &jobs);
    EXPECT_FALSE(st.ok()) << text;
    return st.Message();
  };
  std::string good = Fixture("squeue_22.05.json");
  EXPECT_NE(error(good.substr(0, good.size() / 2)).find("squeue --json: not JSON: "), std::string::npos);
  EXPECT_NE(error("").find("not JSON"), std::string::npos);
  EXPECT_EQ(error("[]"), "squeue --json: the document is not an object");
  EXPECT_EQ(error(R"({"errors": []})"), "squeue --json: no 'jobs' array (state unknown)");
  EXPECT_EQ(error(R"({"jobs": {}})"), "squeue --json: 'jobs' is not an array");
  EXPECT_EQ(error(R"({"errors": {}, "jobs": []})"), "squeue --json: 'errors' is not an array");
  EXPECT_EQ(error(R"({"jobs": [{"job_state": "PENDING"}]})"), "squeue --json: jobs[0]: no 'job_id'");
  EXPECT_EQ(error(R"({"jobs": [{"job_id": -3}]})"), "squeue --json: jobs[0]: 'job_id' -3 is not a job id");
  EXPECT_EQ(error(R"({"jobs": [7]})"), "squeue --json: jobs[0] is not an object");
  EXPECT_NE(error(R"({"meta": {"plugin": {"type": "openapi/v0.0.40"}}, "jobs": []})").find("is not openapi/v0.0.38"),
            std::string::npos);
  std::vector<JobRecord> jobs;
  EXPECT_TRUE(ParseSqueueJson(R"({"errors": [], "jobs": []})", &jobs).ok()) << "an empty queue is fine";
}

TEST(SqueueJson, MissingAndMistypedFieldsNameTheJob) {
  std::vector<JobRecord> jobs;
  ASSERT_TRUE(ParseSqueueJson(R"({"jobs": [
      {"job_id": 5},
      {"job_id": 6, "job_state": "WEIRD", "priority": 1, "node_count": 1},
      {"job_id": 7, "job_state": "RUNNING", "priority": 1, "node_count": 1, "nodes": "gpu[01-"},
      {"job_id": 8, "job_state": "RUNNING", "priority": -1, "node_count": 99999999999, "comment": 3},
      {"job_id": 9, "job_state": "COMPLETING", "priority": 1, "node_count": 1, "het_job_id": 9, "nice": -10},
      {"job_id": 10, "job_state": "PENDING", "priority": 0, "node_count": 1, "array_job_id": 10,
       "array_task_string": "1-5..."}]})",
                              &jobs)
                  .ok());
  ASSERT_EQ(jobs.size(), 6u);
  EXPECT_EQ(jobs[0].parse_error,
            "job 5: field 'job_state' is missing; field 'priority' is missing; field 'node_count' is missing");
  EXPECT_EQ(jobs[1].parse_error, "job 6: field 'job_state' 'WEIRD' is not a job state this reader knows");
  EXPECT_EQ(jobs[1].state, JobState::kUnknown);
  EXPECT_EQ(jobs[2].parse_error, "job 7: nodes: unbalanced '[' in 'gpu[01-'");
  EXPECT_EQ(jobs[3].parse_error,
            "job 8: field 'priority' is negative: -1; field 'node_count' = 99999999999 is over the limit of "
            "1000000000; field 'comment' should be a string, is number");
  EXPECT_EQ(jobs[4].state, JobState::kCompleting);
  EXPECT_TRUE(jobs[4].completing);
  EXPECT_EQ(jobs[4].parse_error, "job 9: heterogeneous job (het_job_id 9) is not supported");
  EXPECT_EQ(jobs[4].nice, -10);
  EXPECT_EQ(jobs[0].nice, 0);
  EXPECT_EQ(jobs[5].parse_error, "job 10: array_task_str: truncated list in '1-5...'");
}

TEST(SqueueJson, RequeueAndBatchFlagsSayWhetherSlurmWouldRequeueTheJob) {
  std::vector<JobRecord> jobs;
  ASSERT_TRUE(ParseSqueueJson(R"({"jobs": [
      {"job_id": 1, "job_state": "RUNNING", "priority": 1, "node_count": 1},
      {"job_id": 2, "job_state": "RUNNING", "priority": 1, "node_count": 1, "requeue": true, "batch_flag": true},
      {"job_id": 3, "job_state": "RUNNING", "priority": 1, "node_count": 1, "requeue": false, "batch_flag": true},
      {"job_id": 4, "job_state": "RUNNING", "priority": 1, "node_count": 1, "requeue": true, "batch_flag": 0},
      {"job_id": 5, "job_state": "RUNNING", "priority": 1, "node_count": 1, "requeue": "no"}]})",
                              &jobs)
                  .ok());
  ASSERT_EQ(jobs.size(), 5u);
  EXPECT_TRUE(jobs[0].requeueable) << "not stated: Slurm's default (JobRequeue=1, a batch job)";
  EXPECT_TRUE(jobs[1].requeueable);
  EXPECT_FALSE(jobs[2].requeueable) << "--no-requeue";
  EXPECT_FALSE(jobs[3].requeueable) << "an salloc/srun allocation";
  EXPECT_EQ(jobs[4].parse_error, "job 5: field 'requeue' should be a boolean, is string");
  // The real 22.05 output: sbatch jobs, requeueable.
  ASSERT_TRUE(ParseSqueueJson(Fixture("squeue_22.05.json"), &jobs).ok());
  for (const JobRecord& r : jobs) EXPECT_TRUE(r.requeueable) << r.id;
}

TEST(SinfoJson, RealSlurm2205Output) {
  std::vector<NodeRecord> nodes;
  Status st = ParseSinfoJson(Fixture("sinfo_22.05.json"), &nodes);
  ASSERT_TRUE(st.ok()) << st.Message();
  ASSERT_EQ(nodes.size(), 4u);
  for (const NodeRecord& n : nodes) {
    EXPECT_EQ(n.parse_error, "") << n.name;
    EXPECT_EQ(n.gpus, 8);
    EXPECT_EQ(n.gpu_model, "a100");
    EXPECT_EQ(n.gpu_types, (std::vector<NodeRecord::GpuType>{{"a100", 8}}));
    EXPECT_EQ(n.cpus, 32);
    EXPECT_EQ(n.real_memory_mb, 256000);
    EXPECT_EQ(n.partitions, std::vector<std::string>{"batch"});
  }
  EXPECT_EQ(nodes[0].name, "gpu01");
  EXPECT_TRUE(nodes[0].drain) << "FAIL reads as drain";
  EXPECT_EQ(nodes[0].reason, "admin: bad dimm");
  EXPECT_EQ(nodes[1].state, NodeState::kMixed);
  EXPECT_TRUE(nodes[1].not_responding);
  EXPECT_EQ(nodes[1].gpus_used, 3);
  EXPECT_EQ(nodes[2].state, NodeState::kAllocated);
  EXPECT_EQ(nodes[2].gpus_used, 8);
  EXPECT_FALSE(nodes[2].drain || nodes[2].not_responding || nodes[2].maint);
  EXPECT_EQ(nodes[3].state, NodeState::kIdle);
  EXPECT_TRUE(nodes[3].drain && nodes[3].maint && nodes[3].reserved);
  EXPECT_EQ(nodes[3].reason, "tidal: maintenance");
  EXPECT_EQ(nodes[3].gpus_used, 0);
}

TEST(SinfoJson, BadNodeKeepsTheOthers) {
  std::vector<NodeRecord> nodes;
  ASSERT_TRUE(ParseSinfoJson(R"J({"errors": [], "nodes": [
      {"name": "a", "state": "idle", "gres": "gpu:a100:x"},
      {"name": "b", "state": "mixed", "state_flags": ["DRAIN", "COMPLETING"], "gres": "gpu:a100:4,gpu:v100:4",
       "gres_used": "gpu:a100:1(IDX:0),gpu:v100:0(IDX:N/A)", "features": "ib,nvlink"},
      {"name": "c", "state": "sleepy", "cpus": "many"}]})J",
                             &nodes)
                  .ok());
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].parse_error, "node a: gres: gpu count 'x' is not a number");
  EXPECT_EQ(nodes[1].parse_error, "");
  EXPECT_TRUE(nodes[1].drain && nodes[1].completing);
  EXPECT_EQ(nodes[1].gpus, 8);
  EXPECT_EQ(nodes[1].gpu_model, "") << "mixed models: see gpu_types";
  EXPECT_EQ(nodes[1].gpu_types, (std::vector<NodeRecord::GpuType>{{"a100", 4}, {"v100", 4}}));
  EXPECT_EQ(nodes[1].gpus_used, 1);
  EXPECT_EQ(nodes[1].features, (std::vector<std::string>{"ib", "nvlink"}));
  EXPECT_EQ(nodes[2].parse_error,
            "node c: field 'state' 'sleepy' is not a node state this reader knows; field 'cpus' should be an "
            "integer, is string");
  std::vector<NodeRecord> none;
  EXPECT_EQ(ParseSinfoJson(R"({"nodes": [{"state": "idle"}]})", &none).Message(),
            "sinfo --json: nodes[0]: no 'name' string");
  EXPECT_EQ(ParseSinfoJson(R"({"errors": []})", &none).Message(), "sinfo --json: no 'nodes' array (state unknown)");
}

TEST(ArrayTasks, Forms) {
  std::vector<uint32_t> t;
  uint32_t max = 0;
  ASSERT_TRUE(ExpandArrayTasks("1,3,5-7", &t, &max).ok());
  EXPECT_EQ(t, (std::vector<uint32_t>{1, 3, 5, 6, 7}));
  EXPECT_EQ(max, 0u);
  ASSERT_TRUE(ExpandArrayTasks("0-15:4%2", &t, &max).ok());
  EXPECT_EQ(t, (std::vector<uint32_t>{0, 4, 8, 12}));
  EXPECT_EQ(max, 2u);
  ASSERT_TRUE(ExpandArrayTasks("0x15", &t, &max).ok());
  EXPECT_EQ(t, (std::vector<uint32_t>{0, 2, 4}));
  EXPECT_FALSE(ExpandArrayTasks("0-99999999", &t, &max).ok());
  EXPECT_FALSE(ExpandArrayTasks("5-1", &t, &max).ok());
  EXPECT_FALSE(ExpandArrayTasks("1-3%x", &t, &max).ok());
  EXPECT_FALSE(ExpandArrayTasks("0xZZ", &t, &max).ok());
  EXPECT_FALSE(ExpandArrayTasks("1-4:0", &t, &max).ok());
}

}  // namespace
}  // namespace tidal::slurm
