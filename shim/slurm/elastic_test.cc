// Elastic Slurm jobs (--nodes=MIN-MAX, to_engine.h NodeRange): the gang they are while they wait
// and while they run, the range Tidal keeps in its AdminComment once Slurm's own fields no longer
// say it, and reconcile passes against a real Engine (adapter_testing.h): released on as many
// nodes as fit with NumNodes set to that count, the range put back on a requeue.
#include <gtest/gtest.h>

#include "shim/slurm/adapter_testing.h"
#include "shim/slurm/json_state.h"
#include "shim/slurm/reconciler.h"
#include "shim/slurm/to_engine.h"

namespace tidal::slurm {
namespace {

std::string Ann(const v1::Pod& p, const std::string& key) {
  auto it = p.annotations().find(key);
  return it == p.annotations().end() ? "(none)" : it->second;
}

// Regression: a job of --nodes=MIN-MAX was refused ("Tidal places a job on a fixed node count").
TEST(ElasticSlurm, AWaitingRangeIsAGangOfMaxMembersDownToMin) {
  JobRecord j = HeldJob(7, 2, 8);
  j.max_node_count = 4;
  EXPECT_EQ(SkipReason(j), "");
  auto m = MembersOf(j, "7", AdapterConfig{});
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[3].uid(), "slurm/7#3");
  EXPECT_EQ(Ann(m[0], "tidal.dev/gang-size"), "4");
  EXPECT_EQ(Ann(m[0], "tidal.dev/gang-min"), "2");
  EXPECT_EQ(NodeRangeNote(j), " [nodes: 2-4]");
  // GPUs per job have no per-node share while the count is open: refused, saying what to ask.
  j.gpus_total = 16;
  EXPECT_EQ(SkipReason(j),
            "cannot schedule: --nodes=2-4 with GPUs per job (--gpus or --gpus-per-task): ask for GPUs per node "
            "(--gpus-per-node) with a node range");
  EXPECT_TRUE(MembersOf(j, "7", AdapterConfig{}).empty());
  // The range's MAX counts against Tidal's bounds.
  JobRecord big = HeldJob(8, 2, 8);
  big.max_node_count = 20000;
  EXPECT_NE(SkipReason(big).find("node_count: 20000"), std::string::npos) << SkipReason(big);
  // -N 2 (max = min) is rigid; a running job reads no range.
  j = HeldJob(9, 2, 8);
  j.max_node_count = 2;
  EXPECT_EQ(Ann(MembersOf(j, "9", AdapterConfig{})[0], "tidal.dev/gang-min"), "(none)");
  std::vector<JobRecord> jobs;
  ASSERT_TRUE(ParseSqueueJson(R"({"jobs": [
      {"job_id": 1, "job_state": "PENDING", "priority": 0, "node_count": 2, "max_nodes": 4},
      {"job_id": 2, "job_state": "RUNNING", "priority": 1, "node_count": 3, "max_nodes": 4, "batch_host": "gpu02"}]})",
                              &jobs).ok());
  EXPECT_EQ(jobs[0].max_node_count, 4u);
  EXPECT_EQ(jobs[1].max_node_count, 0u) << "a running job got its nodes: no range";
  EXPECT_EQ(jobs[1].batch_host, "gpu02");
  EXPECT_EQ(jobs[0].batch_host, "");
}

TEST(ElasticSlurm, TidalsNoteKeepsTheRangeOnceSlurmsFieldsNoLongerSayIt) {
  // Released on 3 (NumNodes=3-3): Slurm reads 3-3, the note says 2-4.
  JobRecord j = HeldJob(7, 3, 8);
  j.max_node_count = 3;
  j.priority = 1000;
  j.required_nodes = {"gpu03", "gpu01", "gpu02"};
  j.admin_comment = "tidal: released to gpu01,gpu02,gpu03 [nodes: 2-4]";
  auto m = MembersOf(j, "7", AdapterConfig{});
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].node_name(), "gpu01");
  EXPECT_EQ(Ann(m[0], "tidal.dev/gang-size"), "3");
  EXPECT_EQ(Ann(m[0], "tidal.dev/gang-min"), "2");
  // Requeued: Slurm 22.05 reads the count it last ran with and no MAX; the note still says 2-4.
  j.priority = 0;
  j.max_node_count = 0;
  j.restart_cnt = 1;
  j.required_nodes.clear();
  j.admin_comment = "tidal: requeued; held to be placed anew [nodes: 2-4]";
  m = MembersOf(j, "7", AdapterConfig{});
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(Ann(m[0], "tidal.dev/gang-min"), "2");
  // Only Tidal's own comment is read, and only a valid range.
  for (const char* c : {"ops: [nodes: 1-9]", "tidal: held [nodes: 4-2]", "tidal: held [nodes: 0-2]", "tidal: held [nodes: 2-x]"}) {
    j.admin_comment = c;
    EXPECT_FALSE(NodeRangeOf(j).Elastic()) << c;
    EXPECT_EQ(MembersOf(j, "7", AdapterConfig{}).size(), 3u) << c;
  }
  // The note is part of the members' key: a new range converts the job again.
  j.admin_comment = "tidal: held [nodes: 2-4]";
  const uint64_t before = MembersKey(j);
  j.admin_comment = "tidal: held [nodes: 2-5]";
  EXPECT_NE(MembersKey(j), before);
}

TEST(ElasticSlurm, AShrunkJobsMembersKeepTheirUidsAndTheBatchHostLeads) {
  JobRecord j = HeldJob(7, 2, 8);
  j.state = JobState::kRunning;
  j.priority = 1000;
  j.required_nodes = {"gpu01", "gpu02", "gpu03"};
  j.nodes = {"gpu03", "gpu01"};  // gpu02 given back
  j.batch_host = "gpu03";
  j.start_time = 5000;
  j.admin_comment = "tidal: released to gpu01,gpu02,gpu03 [nodes: 1-4]";
  auto m = MembersOf(j, "7", AdapterConfig{});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].uid(), "slurm/7#0");
  EXPECT_EQ(m[0].node_name(), "gpu01");
  EXPECT_EQ(m[1].uid(), "slurm/7#2");
  EXPECT_EQ(m[1].node_name(), "gpu03");
  EXPECT_EQ(Ann(m[1], "tidal.dev/gang-leader"), "true");
  EXPECT_EQ(Ann(m[0], "tidal.dev/gang-leader"), "(none)");
  EXPECT_EQ(Ann(m[0], "tidal.dev/gang-size"), "2");
  EXPECT_EQ(Ann(m[0], "tidal.dev/gang-min"), "1");
  // Not on Tidal's pin (released by hand): indices by the job's own nodes.
  j.admin_comment = "ops: ran by hand";
  m = MembersOf(j, "7", AdapterConfig{});
  EXPECT_EQ(m[1].uid(), "slurm/7#1");
}

TEST_F(ReconcileTest, AnElasticJobIsReleasedOnWhatFitsWithItsCountAndGetsItsRangeBackOnARequeue) {
  slurm_.state.nodes[3].drain = true;  // three usable nodes
  JobRecord j = HeldJob(7, 2, 4);      // 4 GPUs a node: 4 nodes fit the queue's 16
  j.max_node_count = 4;
  slurm_.state.jobs = {j};
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  ASSERT_EQ(st.released, 1) << ::testing::PrintToString(slurm_.calls);
  EXPECT_EQ(slurm_.calls.back(), "release 7 gpu01,gpu02,gpu03 nodes=3-3");
  JobRecord* seven = slurm_.Find("7");
  EXPECT_NE(seven->admin_comment.find(" [nodes: 2-4]"), std::string::npos) << seven->admin_comment;
  // Slurm starts it on its pin; later it is requeued (held): it reads 3 nodes and no MAX.
  seven->state = JobState::kRunning;
  seven->nodes = seven->required_nodes;
  seven->batch_host = "gpu01";
  seven->start_time = 6000;
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  seven->state = JobState::kPending;
  seven->priority = 0;
  seven->nodes.clear();
  seven->batch_host.clear();
  seven->max_node_count = 0;
  seven->restart_cnt = 1;
  slurm_.state.nodes[3].drain = false;
  slurm_.calls.clear();
  st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  ASSERT_FALSE(slurm_.calls.empty());
  EXPECT_EQ(slurm_.calls[0], "hold_requeued 7 nodes=2-4") << "its --nodes=2-4 again";
  EXPECT_NE(seven->admin_comment.find(" [nodes: 2-4]"), std::string::npos) << seven->admin_comment;
  // Placed anew: all four nodes are free now.
  st = r.ReconcileOnce();
  ASSERT_EQ(st.released, 1) << ::testing::PrintToString(slurm_.calls);
  EXPECT_EQ(slurm_.calls.back(), "release 7 gpu01,gpu02,gpu03,gpu04 nodes=4-4");
}

TEST_F(ReconcileTest, AnElasticJobBelowItsMinimumWaits) {
  for (int i = 1; i < 4; ++i) slurm_.state.nodes[static_cast<size_t>(i)].drain = true;  // only gpu01
  JobRecord j = HeldJob(7, 2, 8);
  j.max_node_count = 4;
  slurm_.state.jobs = {j};
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(st.released, 0);
  EXPECT_EQ(slurm_.Find("7")->priority, 0u);
  EXPECT_NE(slurm_.Find("7")->admin_comment.find(" [nodes: 2-4]"), std::string::npos)
      << "its waiting reason keeps the range: " << slurm_.Find("7")->admin_comment;
}

}  // namespace
}  // namespace tidal::slurm
