// Jobs Slurm does not start in their partition (waiting.h PartitionReason): DOWN or INACTIVE, a
// MaxTime below the job's --time (an UNLIMITED one included), a node count outside MinNodes..
// MaxNodes. On a real slurmctld, `sbatch -p short --time=20` (MaxTime=10) was released by Tidal
// to gpu05 and stayed there, Reason PartitionTimeLimit, for ever: its GPU idle, charged to its
// queue, `tidalctl explain` saying "running", its AdminComment "tidal: released to gpu05".
#include <gtest/gtest.h>

#include "shim/slurm/adapter_testing.h"
#include "shim/slurm/json_state.h"
#include "shim/slurm/reconciler.h"
#include "shim/slurm/waiting.h"

namespace tidal::slurm {
namespace {

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

PartitionRecord Part(const std::string& name) {
  PartitionRecord p;
  p.name = name;
  return p;
}

TEST(PartitionReason, StateMaxTimeAndNodeLimitsAsSlurmChecksThem) {
  JobRecord j = HeldJob(5, 1, 1);  // batch, --time=30
  std::vector<PartitionRecord> parts = {Part("batch"), Part("other")};
  EXPECT_EQ(PartitionReason(j, parts), "");
  EXPECT_EQ(PartitionReason(j, {}), "");  // not read: nothing is checked
  parts[0].schedules = false;
  parts[0].state = "DOWN";
  EXPECT_TRUE(Has(PartitionReason(j, parts), "partition batch is DOWN")) << PartitionReason(j, parts);
  parts[0].state = "DRAIN";  // DRAIN takes no new job but starts those queued
  parts[0].schedules = true;
  EXPECT_EQ(PartitionReason(j, parts), "");
  parts[0].max_time_min = 10;
  EXPECT_TRUE(Has(PartitionReason(j, parts), "partition batch's MaxTime is 10m, below its --time 30m")) << PartitionReason(j, parts);
  EXPECT_TRUE(Has(PartitionReason(j, parts), "scontrol update JobId=5 TimeLimit=")) << PartitionReason(j, parts);
  j.time_limit_min = 10;
  EXPECT_EQ(PartitionReason(j, parts), "");
  j.time_limit_min = 0;
  j.time_unlimited = true;  // --time=UNLIMITED: over any MaxTime
  EXPECT_TRUE(Has(PartitionReason(j, parts), "below its --time UNLIMITED")) << PartitionReason(j, parts);
  parts[0].max_time_min = 0;
  EXPECT_EQ(PartitionReason(j, parts), "");
  parts[0].max_nodes = 2;
  j.node_count = 3;
  EXPECT_TRUE(Has(PartitionReason(j, parts), "partition batch runs jobs of 1-2 nodes, not 3")) << PartitionReason(j, parts);
  j.max_node_count = 4;  // --nodes=3-4 still does not fit 2
  EXPECT_TRUE(Has(PartitionReason(j, parts), "not 3-4")) << PartitionReason(j, parts);
  j.node_count = 2;  // --nodes=2-4 may run on 2
  EXPECT_EQ(PartitionReason(j, parts), "");
  // -p batch,other: only when no partition would start it.
  j.node_count = 3;
  j.max_node_count = 0;
  j.partition = "batch,other";
  EXPECT_EQ(PartitionReason(j, parts), "");
  parts[1].schedules = false;
  parts[1].state = "INACTIVE";
  EXPECT_TRUE(Has(PartitionReason(j, parts), "(PartitionNodeLimit); partition other is INACTIVE")) << PartitionReason(j, parts);
  // A partition the table does not name: Slurm's to judge. A running job: not Tidal's to hold.
  j.partition = "gone";
  EXPECT_EQ(PartitionReason(j, parts), "");
  j.partition = "batch";
  j.state = JobState::kRunning;
  EXPECT_EQ(PartitionReason(j, parts), "");
}

TEST(PartitionReason, TheRecordedStateKeepsPartitionsAndTheirAbsence) {
  ClusterRecords in;
  in.jobs = {HeldJob(5, 1, 1)};
  in.jobs[0].time_unlimited = true;
  in.jobs[0].exclusive = true;
  ClusterRecords out;
  ASSERT_TRUE(ReadStateJson(WriteStateJson(in), &out).ok());
  EXPECT_TRUE(out.partitions.empty());
  EXPECT_TRUE(out.jobs[0].time_unlimited);
  EXPECT_TRUE(out.jobs[0].exclusive);
  in.partitions = {Part("batch"), Part("short")};
  in.partitions[1].max_time_min = 10;
  in.partitions[1].schedules = false;
  in.partitions[1].state = "DOWN";
  in.partitions[1].min_nodes = 2;
  in.partitions[1].max_nodes = 4;
  ASSERT_TRUE(ReadStateJson(WriteStateJson(in), &out).ok());
  EXPECT_EQ(out.partitions, in.partitions);
}

TEST_F(ReconcileTest, AJobItsPartitionDoesNotStartIsNeitherSentNorReleased) {
  JobRecord too_long = HeldJob(70, 1, 4);
  too_long.partition = "short";
  too_long.time_limit_min = 20;
  JobRecord down = HeldJob(71, 1, 4);
  down.partition = "other";
  JobRecord ok = HeldJob(72, 1, 4);
  slurm_.state.jobs = {too_long, down, ok};
  PartitionRecord batch = Part("batch"), shorter = Part("short"), other = Part("other");
  shorter.max_time_min = 10;
  other.schedules = false;
  other.state = "DOWN";
  slurm_.state.partitions = {batch, shorter, other};
  for (auto& n : slurm_.state.nodes) n.partitions = {"batch", "short", "other"};
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(slurm_.Find("70")->priority, 0u);
  EXPECT_EQ(slurm_.Find("71")->priority, 0u);
  EXPECT_EQ(slurm_.Find("72")->priority, 1000u);
  EXPECT_EQ(st.skipped, 2);
  EXPECT_EQ(engine_->Stats().pods, 1);  // only job 72's member: the others hold nothing
  EXPECT_TRUE(Has(slurm_.Find("70")->admin_comment, "tidal: partition short's MaxTime is 10m, below its --time 20m"))
      << slurm_.Find("70")->admin_comment;
  EXPECT_TRUE(Has(slurm_.Find("71")->admin_comment, "tidal: partition other is DOWN")) << slurm_.Find("71")->admin_comment;
  // The owner shortens the job's time limit; the admin brings the partition up: both go.
  slurm_.Find("70")->time_limit_min = 10;
  slurm_.state.partitions[2].schedules = true;
  st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(slurm_.Find("70")->priority, 1000u) << slurm_.Find("70")->admin_comment;
  EXPECT_EQ(slurm_.Find("71")->priority, 1000u) << slurm_.Find("71")->admin_comment;
}

TEST_F(ReconcileTest, AReleasedJobItsPartitionDoesNotStartIsHeldAgainAndStaysHeld) {
  // Released before the partition went DOWN (or by an adapter that did not check): Slurm says
  // PartitionDown and keeps it pending on its pin.
  JobRecord j = HeldJob(80, 1, 4);
  j.partition = "other";
  j.priority = 1000;
  j.required_nodes = {"gpu02"};
  j.admin_comment = "tidal: released to gpu02";
  j.state_reason = "PartitionDown";
  PartitionRecord other = Part("other");
  other.schedules = false;
  other.state = "DOWN";
  slurm_.state.jobs = {j};
  slurm_.state.partitions = {Part("batch"), other};
  for (auto& n : slurm_.state.nodes) n.partitions = {"batch", "other"};
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  ASSERT_FALSE(slurm_.calls.empty());
  EXPECT_EQ(slurm_.calls[0], "hold 80");
  EXPECT_EQ(slurm_.Find("80")->priority, 0u);
  EXPECT_TRUE(slurm_.Find("80")->required_nodes.empty());
  // Held (JobHeldAdmin): not sent again while the partition is down, and it says why.
  slurm_.Find("80")->state_reason = "JobHeldAdmin";
  for (int pass = 0; pass < 2; ++pass) {
    st = r.ReconcileOnce();
    ASSERT_TRUE(st.admitted) << st.status.ToString();
  }
  EXPECT_EQ(slurm_.Find("80")->priority, 0u);
  EXPECT_EQ(engine_->Stats().pods, 0);
  EXPECT_TRUE(Has(slurm_.Find("80")->admin_comment, "tidal: partition other is DOWN")) << slurm_.Find("80")->admin_comment;
}

}  // namespace
}  // namespace tidal::slurm
