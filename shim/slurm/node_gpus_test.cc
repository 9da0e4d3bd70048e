// A running job's GPUs per node as Slurm allocated them (JobRecord::node_gpus, from its per-node
// GRES detail): `sbatch -N 2 --gpus=4` ran on a real slurmctld as 3 GPUs on one node and 1 on the
// other; read as 2 + 2, the engine counted a GPU free that Slurm had given away (a pod or a job
// could be planned on it) and one busy that was free.
#include <gtest/gtest.h>

#include "shim/slurm/adapter_testing.h"
#include "shim/slurm/job_fields.h"
#include "shim/slurm/json_state.h"
#include "shim/slurm/reconciler.h"
#include "shim/slurm/to_engine.h"

namespace tidal::slurm {
namespace {

JobRecord RunningPerJob(const RawJob& raw) {
  JobRecord j;
  j.id = "5";
  j.job_id = 5;
  j.account = "qa";
  j.state = JobState::kRunning;
  j.priority = 1000;
  j.node_count = 2;
  DeriveJobFields(raw, &j);
  return j;
}

TEST(NodeGpus, ReadFromTheGresDetailInTheJobsNodeOrder) {
  RawJob raw;
  raw.tres_per_job = "gres:gpu:4";
  raw.nodes = "gpu[01,04]";
  raw.gres_detail = {"gpu:a100:3(IDX:0-2)", "gpu:a100:1(IDX:2)"};
  JobRecord j = RunningPerJob(raw);
  ASSERT_TRUE(j.parse_error.empty()) << j.parse_error;
  EXPECT_EQ(j.gpus_per_node, 2);
  EXPECT_EQ(j.node_gpus, (std::vector<int64_t>{3, 1}));
  // The entries' nodes from the node table (libslurm: node_inx), here not in name order.
  raw.gres_detail_nodes = {"gpu04", "gpu01"};
  j = RunningPerJob(raw);
  EXPECT_EQ(j.node_gpus, (std::vector<int64_t>{1, 3}));
  // What does not line up is not used: each node then counts gpus_per_node, as before.
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"gpu:a100:3(IDX:0-2)"}, {"gpu:a100:x", "gpu:1"}, {"(null)", "gpu:1"}, {}}) {
    raw.gres_detail = bad;
    raw.gres_detail_nodes.clear();
    EXPECT_TRUE(RunningPerJob(raw).node_gpus.empty()) << (bad.empty() ? "" : bad[0]);
  }
  raw.gres_detail = {"gpu:3", "gpu:1"};
  raw.gres_detail_nodes = {"gpu01", "gpu09"};  // a node not the job's
  EXPECT_TRUE(RunningPerJob(raw).node_gpus.empty());
}

TEST(NodeGpus, AnExclusiveJobThatAskedForNoGpusHoldsWhatSlurmAllocated) {
  // `sbatch -N 1 --exclusive` on a real slurmctld: no GPUs asked, JOB_GRES=gpu:a100:4 allocated
  // (GRES=gpu:a100:4(IDX:0-3) on its node). Read as 0, the engine counted the node's 4 GPUs free
  // (and released other jobs there that Slurm could not start) and charged its queue nothing.
  RawJob raw;
  raw.nodes = "gpu02";
  raw.tres_alloc_str = "cpu=32,mem=32G,node=1,billing=32";
  raw.gres_detail = {"gpu:a100:4(IDX:0-3)"};
  JobRecord j = RunningPerJob(raw);
  j.node_count = 1;
  DeriveJobFields(raw, &j);
  ASSERT_TRUE(j.parse_error.empty()) << j.parse_error;
  EXPECT_EQ(j.gpus_per_node, 0);
  EXPECT_EQ(j.node_gpus, (std::vector<int64_t>{4}));
  auto m = MembersOf(j, "5", AdapterConfig{});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].request().gpus(), 4);
  EXPECT_EQ(m[0].request().cpu_milli(), 32000);
  // A job that holds no GPU there has no detail to read: nothing changes.
  raw.gres_detail.clear();
  EXPECT_TRUE(RunningPerJob(raw).node_gpus.empty());
}

TEST(NodeGpus, TheMembersOfARunningJobAskForWhatSlurmAllocatedOnTheirNode) {
  RawJob raw;
  raw.tres_per_job = "gres:gpu:4";
  raw.nodes = "gpu[01,04]";
  raw.gres_detail = {"gpu:a100:3(IDX:0-2)", "gpu:a100:1(IDX:2)"};
  JobRecord j = RunningPerJob(raw);
  auto m = MembersOf(j, "5", AdapterConfig{});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].node_name(), "gpu01");
  EXPECT_EQ(m[0].request().gpus(), 3);
  EXPECT_EQ(m[1].node_name(), "gpu04");
  EXPECT_EQ(m[1].request().gpus(), 1);
  // A different allocation is a different record for the reconciler's cache.
  JobRecord other = j;
  other.node_gpus = {2, 2};
  EXPECT_NE(MembersKey(j), MembersKey(other));
}

TEST(NodeGpus, SqueueJsonGresDetail) {
  const std::string doc = R"json({"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "errors": [], "jobs": [
    {"job_id": 5, "job_state": "RUNNING", "priority": 1000, "node_count": 2, "nodes": "gpu[01,04]",
     "tres_per_job": "gres:gpu:4", "gres_detail": ["gpu:a100:3(IDX:0-2)", "gpu:a100:1(IDX:2)"]}]})json";
  std::vector<JobRecord> jobs;
  Status st = ParseSqueueJson(doc, &jobs);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_TRUE(jobs[0].parse_error.empty()) << jobs[0].parse_error;
  EXPECT_EQ(jobs[0].node_gpus, (std::vector<int64_t>{3, 1}));
  // The recorded-state format keeps it.
  ClusterRecords in;
  in.jobs = jobs;
  ClusterRecords out;
  ASSERT_TRUE(ReadStateJson(WriteStateJson(in), &out).ok());
  ASSERT_EQ(out.jobs.size(), 1u);
  EXPECT_EQ(out.jobs[0].node_gpus, (std::vector<int64_t>{3, 1}));
}

TEST_F(ReconcileTest, TheEngineCountsTheGpusSlurmAllocatedOnEachNode) {
  // gpu01..gpu04, 8 GPUs each; gpu03 and gpu04 drained. A running --gpus=8 job got 7 GPUs on
  // gpu01 and 1 on gpu02: gpu02 has 7 free, gpu01 1. Read as 4 + 4, no node had room for a
  // 5-GPU job.
  JobRecord run = HeldJob(5, 2, 4);
  run.state = JobState::kRunning;
  run.priority = 1000;
  run.gpus_total = 8;
  run.nodes = run.required_nodes = {"gpu01", "gpu02"};
  run.node_gpus = {7, 1};
  run.admin_comment = "tidal: released to gpu01,gpu02";
  run.start_time = 5000;
  slurm_.state.jobs = {run, HeldJob(6, 1, 5)};
  for (const char* n : {"gpu03", "gpu04"}) slurm_.FindNode(n)->drain = true;
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(st.gpus_running, 8);
  ASSERT_EQ(st.released, 1) << slurm_.Find("6")->admin_comment;
  EXPECT_EQ(slurm_.Find("6")->required_nodes, std::vector<std::string>{"gpu02"});
}

}  // namespace
}  // namespace tidal::slurm
