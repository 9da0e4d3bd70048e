// --exclusive jobs (plan_view.h AskWholeNodes). On a real slurmctld, `sbatch -N 1 --exclusive`
// (no --gres) was planned as 1 CPU and no GPU: Tidal released it to gpu02, where three 1-GPU jobs
// ran; Slurm kept it pending there (Reason Resources) until the node was empty, while the engine
// counted gpu02's GPUs free for other jobs. Once it ran it held all 4 GPUs (JOB_GRES=gpu:a100:4).
#include <gtest/gtest.h>

#include "shim/slurm/adapter_testing.h"
#include "shim/slurm/plan_view.h"
#include "shim/slurm/reconciler.h"

namespace tidal::slurm {
namespace {

TEST(AskWholeNodes, APendingExclusiveJobAsksForTheLargestNodeItMayRunOn) {
  std::vector<NodeRecord> nodes = {Node("gpu01", "l0"), Node("gpu02", "l0"), Node("gpu03", "l1")};
  nodes[2].gpus = 16;  // a larger node, in another partition
  nodes[2].partitions = {"big"};
  JobRecord j = HeldJob(5, 1, 0);
  j.cpus_per_node = 1;
  j.memory_mb_per_node = 1024;
  JobRecord plain = j;
  AskWholeNodes(nodes, &plain);
  EXPECT_EQ(plain.gpus_per_node, 0);  // not exclusive: as asked
  EXPECT_EQ(plain.cpus_per_node, 1);
  j.exclusive = true;
  JobRecord e = j;
  AskWholeNodes(nodes, &e);
  EXPECT_EQ(e.gpus_per_node, 8);  // batch's nodes, not big's 16
  EXPECT_EQ(e.cpus_per_node, 32);
  EXPECT_EQ(e.memory_mb_per_node, 256000);
  e = j;
  e.partition = "batch,big";
  AskWholeNodes(nodes, &e);
  EXPECT_EQ(e.gpus_per_node, 16);
  e = j;
  e.partition = "big";
  e.excluded_nodes = {"gpu03"};  // no node left: as asked, the engine says it fits nowhere
  AskWholeNodes(nodes, &e);
  EXPECT_EQ(e.gpus_per_node, 0);
  e = j;
  e.partition = "";
  e.features = "tidal-leaf-l1";
  AskWholeNodes(nodes, &e);
  EXPECT_EQ(e.gpus_per_node, 16);
  // Running: what Slurm allocated (node_gpus), not this.
  e = j;
  e.state = JobState::kRunning;
  AskWholeNodes(nodes, &e);
  EXPECT_EQ(e.gpus_per_node, 0);
}

TEST_F(ReconcileTest, AnExclusiveJobIsReleasedOnlyToANodeNothingElseUses) {
  // gpu01..gpu04 (8 GPUs each); jobs run on gpu01, gpu02 and gpu03 (one GPU each). An exclusive
  // job asking for nothing went to one of them; it must go to gpu04, and then hold all of it.
  std::vector<JobRecord> jobs;
  for (int i = 1; i <= 3; ++i) {
    JobRecord run = HeldJob(10 + i, 1, 1);
    run.state = JobState::kRunning;
    run.priority = 1000;
    run.nodes = run.required_nodes = {"gpu0" + std::to_string(i)};
    run.admin_comment = "tidal: released to gpu0" + std::to_string(i);
    run.start_time = 5000;
    jobs.push_back(run);
  }
  JobRecord ex = HeldJob(20, 1, 0);
  ex.gpu_model = "";
  ex.cpus_per_node = 1;
  ex.exclusive = true;
  jobs.push_back(ex);
  JobRecord after = HeldJob(21, 1, 1);  // 1 GPU: fits anywhere but gpu04
  jobs.push_back(after);
  slurm_.state.jobs = jobs;
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(slurm_.Find("20")->required_nodes, std::vector<std::string>{"gpu04"}) << slurm_.Find("20")->admin_comment;
  ASSERT_EQ(slurm_.Find("21")->priority, 1000u) << slurm_.Find("21")->admin_comment;
  EXPECT_NE(slurm_.Find("21")->required_nodes, std::vector<std::string>{"gpu04"});
}

}  // namespace
}  // namespace tidal::slurm
