// tidal-slurm's own logic: jobs and nodes as engine messages, the jobcomp reader, and reconcile
// passes against a real Engine behind a real gRPC server (slurmctld's side is an in-memory
// SlurmApi here; test/slurm/ runs the same adapter against a real slurmctld).
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <fstream>

#include "shim/slurm/adapter_testing.h"
#include "shim/slurm/jobcomp.h"
#include "shim/slurm/json_state.h"
#include "shim/slurm/reconciler.h"
#include "shim/slurm/to_engine.h"

namespace tidal::slurm {
namespace {

TEST(ToEngine, AHeldMultiNodeJobIsAPendingGangOfOneMemberPerNode) {
  AdapterConfig cfg;
  JobRecord j = HeldJob(12, 2, 8);
  j.comment = "my run tidal.dev/topology-required=leaf, tidal.dev/class=training";
  j.nice = 5;
  auto m = MembersOf(j, "12", cfg);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].uid(), "slurm/12#0");
  EXPECT_EQ(m[1].uid(), "slurm/12#1");
  EXPECT_TRUE(m[0].node_name().empty());
  EXPECT_EQ(m[0].request().gpus(), 8);
  EXPECT_EQ(m[0].priority(), -5);
  const auto& a = m[0].annotations();
  EXPECT_EQ(a.at("tidal.dev/gang"), "12");
  EXPECT_EQ(a.at("tidal.dev/gang-size"), "2");
  EXPECT_EQ(a.at("tidal.dev/queue"), "qa");
  EXPECT_EQ(a.at("tidal.dev/runtime-limit"), "30m");
  EXPECT_EQ(a.at("tidal.dev/gpu-model"), "a100");
  EXPECT_EQ(a.at("tidal.dev/topology-required"), "leaf");
  EXPECT_EQ(a.at("tidal.dev/class"), "training");
  EXPECT_EQ(m[0].self_anti_affinity_key(), "kubernetes.io/hostname");
  ASSERT_EQ(m[0].required_node_affinity_size(), 1);  // its partition
  EXPECT_EQ(m[0].required_node_affinity(0).match_expressions(0).key(), PartitionLabel("batch"));
}

TEST(ToEngine, ReleasedRunningFinishedAndSkippedJobs) {
  AdapterConfig cfg;
  JobRecord r = HeldJob(13, 2, 4);
  r.priority = 100;
  r.required_nodes = {"gpu02", "gpu01"};
  r.admin_comment = "tidal: released to gpu01,gpu02";
  EXPECT_EQ(StanceOf(r), JobStance::kReleased);
  auto m = MembersOf(r, "13", cfg);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].node_name(), "gpu01");
  EXPECT_EQ(m[1].node_name(), "gpu02");
  JobRecord escaped = r;
  escaped.admin_comment = "";  // released by hand, not by Tidal
  EXPECT_EQ(StanceOf(escaped), JobStance::kEscaped);
  JobRecord run = HeldJob(14, 1, 8);
  run.state = JobState::kRunning;
  run.priority = 100;
  run.nodes = {"gpu03"};
  run.start_time = 5000;
  m = MembersOf(run, "14", cfg);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].node_name(), "gpu03");
  EXPECT_EQ(m[0].phase(), v1::Pod::RUNNING);
  JobRecord done = run;
  done.state = JobState::kCompleted;
  EXPECT_TRUE(MembersOf(done, "14", cfg).empty());
  done.completing = true;  // still holds its node
  EXPECT_EQ(MembersOf(done, "14", cfg).size(), 1u);
  JobRecord dep = HeldJob(15, 1, 8);
  dep.dependency = "afterok:14(unfulfilled)";
  EXPECT_NE(SkipReason(dep).find("dependency"), std::string::npos);
  JobRecord bad = HeldJob(16, 1, 8);
  bad.features = "a|b";
  EXPECT_NE(ConstraintError(bad).find("'&'"), std::string::npos);
  EXPECT_TRUE(MembersOf(bad, "16", cfg).empty());
  JobRecord broken = HeldJob(17, 1, 8);
  broken.parse_error = "tres_per_node: gpu count 'x' is not a number";
  EXPECT_NE(SkipReason(broken).find("tres_per_node"), std::string::npos);
  JobRecord array = HeldJob(20, 1, 1);
  array.array_job_id = 20;
  array.pending_array_tasks = {3, 4};
  EXPECT_EQ(JobIdsOf(array), (std::vector<std::string>{"20_3", "20_4"}));
}

TEST(ToEngine, NodesCarryTopologyPartitionsAndDoorHealth) {
  AdapterConfig cfg;
  NodeRecord n = Node("gpu01", "l0");
  v1::Node out = NodeOf(n, cfg);
  EXPECT_EQ(out.labels().at("topology.tidal.dev/leaf"), "l0");
  EXPECT_EQ(out.labels().at(PartitionLabel("batch")), "true");
  EXPECT_TRUE(out.ready());
  EXPECT_FALSE(out.unschedulable());
  n.drain = true;
  EXPECT_TRUE(NodeOf(n, cfg).unschedulable());
  EXPECT_FALSE(Pinnable(n));
  n.drain = false;
  n.state = NodeState::kDown;
  EXPECT_FALSE(NodeOf(n, cfg).ready());
}

TEST(Jobcomp, ReadsFinishedJobsOnceAndSkipsBadLines) {
  const std::string path = ::testing::TempDir() + "/jobcomp.txt";
  {
    std::ofstream f(path);
    f << "JobId=7 UserId=a(1) JobState=COMPLETED Partition=batch StartTime=2026-12-01T12:00:00 "
         "EndTime=2026-12-01T13:00:00 NodeList=gpu[01-02] NodeCnt=2 Tres=cpu=2,mem=2G,node=2,gres/gpu=16 Account=qa\n"
      << "garbage line\n";
  }
  JobcompReader r(path);
  std::vector<v1::FinishedJob> got;
  ASSERT_TRUE(r.ReadNew(&got).ok());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].gang(), "slurm/7");
  EXPECT_EQ(got[0].end_unix() - got[0].start_unix(), 3600);
  EXPECT_EQ(got[0].members(), 2);
  EXPECT_EQ(got[0].gpus_per_member(), 8);
  EXPECT_EQ(r.bad_lines(), 1);
  got.clear();
  ASSERT_TRUE(r.ReadNew(&got).ok());
  EXPECT_TRUE(got.empty());
  JobcompReader missing(path + ".none");
  EXPECT_TRUE(missing.ReadNew(&got).ok());
}

TEST(Jobcomp, TheJobStateSaysHowTheJobEnded) {
  auto end_of = [](const std::string& state) {
    v1::FinishedJob j;
    EXPECT_TRUE(ParseJobcompLine("JobId=9 JobState=" + state + " StartTime=2026-12-01T12:00:00 EndTime=2026-12-01T12:10:00 NodeCnt=1", &j))
        << state;
    return j.end();
  };
  EXPECT_EQ(end_of("COMPLETED"), v1::FinishedJob::COMPLETED);
  EXPECT_EQ(end_of("TIMEOUT"), v1::FinishedJob::TIMEOUT);
  EXPECT_EQ(end_of("PREEMPTED"), v1::FinishedJob::PREEMPTED);
  EXPECT_EQ(end_of("REQUEUED"), v1::FinishedJob::PREEMPTED) << "a requeue cut the run short";
  EXPECT_EQ(end_of("NODE_FAIL"), v1::FinishedJob::PREEMPTED);
  EXPECT_EQ(end_of("CANCELLED"), v1::FinishedJob::CANCELLED);
  EXPECT_EQ(end_of("CANCELLED by 1000"), v1::FinishedJob::CANCELLED);
  EXPECT_EQ(end_of("FAILED"), v1::FinishedJob::FAILED);
  EXPECT_EQ(end_of("OUT_OF_MEMORY"), v1::FinishedJob::FAILED);
  EXPECT_EQ(end_of("RESIZING"), v1::FinishedJob::END_UNKNOWN) << "anything else is unknown, never completed";
  v1::FinishedJob none;
  ASSERT_TRUE(ParseJobcompLine("JobId=9 StartTime=2026-12-01T12:00:00 EndTime=2026-12-01T12:10:00 NodeCnt=1", &none));
  EXPECT_EQ(none.end(), v1::FinishedJob::END_UNKNOWN) << "no JobState";
  EXPECT_EQ(EndOfJobState("COMPLETED+"), v1::FinishedJob::COMPLETED);
}

TEST_F(ReconcileTest, AdmittedJobsArePinnedAndReleasedOnceAndTheOthersSayWhy) {
  slurm_.state.jobs = {HeldJob(1, 2, 8), HeldJob(2, 1, 8), HeldJob(3, 1, 8, "nosuchqueue")};
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  // Job 1 (16 GPUs) fills qa's quota of 16: job 2 waits for quota, job 3's queue does not exist.
  ASSERT_EQ(st.released, 1) << st.status.ToString();
  EXPECT_EQ(slurm_.calls[0].rfind("release 1 gpu0", 0), 0u) << slurm_.calls[0];
  EXPECT_EQ(slurm_.Find("1")->required_nodes.size(), 2u);
  EXPECT_NE(slurm_.Find("2")->admin_comment.find("qa"), std::string::npos) << slurm_.Find("2")->admin_comment;
  EXPECT_NE(slurm_.Find("3")->admin_comment.find("nosuchqueue"), std::string::npos) << slurm_.Find("3")->admin_comment;
  EXPECT_EQ(slurm_.Find("3")->priority, 0u);
  // The next pass sees job 1 released: it is bound, not released again; the quota still holds.
  slurm_.calls.clear();
  st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted);
  EXPECT_EQ(st.released, 0);
  for (const auto& c : slurm_.calls) EXPECT_EQ(c.rfind("release", 0), std::string::npos) << c;
  // Job 1 runs and finishes: job 2 is released.
  JobRecord* one = slurm_.Find("1");
  one->state = JobState::kRunning;
  one->nodes = one->required_nodes;
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  one->state = JobState::kCompleted;
  st = r.ReconcileOnce();
  EXPECT_EQ(st.released, 1);
  EXPECT_EQ(slurm_.Find("2")->priority, 1000u);
}

TEST_F(ReconcileTest, WithoutAJobcompLogAFinishedJobsStateTellsTheEngineHowItEnded) {
  metrics::Registry registry;
  EngineMetrics metrics(registry);
  engine_->SetObservability(&metrics, nullptr);
  slurm_.state.jobs = {HeldJob(1, 1, 8), HeldJob(2, 1, 8)};
  Reconciler r(acfg_, &slurm_, link_.get());
  ASSERT_EQ(r.ReconcileOnce().released, 2);
  for (const char* id : {"1", "2"}) {
    JobRecord* j = slurm_.Find(id);
    j->state = JobState::kRunning;
    j->nodes = j->required_nodes;
    j->start_time = 5000;
  }
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  slurm_.Find("1")->state = JobState::kCompleted;
  slurm_.Find("2")->state = JobState::kPreempted;
  for (const char* id : {"1", "2"}) slurm_.Find(id)->end_time = 5600;
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  EXPECT_EQ(metrics.finished_workloads.With({"slurm", "completed"}).Value(), 1);
  EXPECT_EQ(metrics.finished_workloads.With({"slurm", "disrupted"}).Value(), 1);
  ASSERT_TRUE(r.ReconcileOnce().admitted);  // still listed (MinJobAge): not sent again
  EXPECT_EQ(metrics.finished_workloads.With({"slurm", "completed"}).Value(), 1);
}

TEST_F(ReconcileTest, AFailedReadChangesNothingAndEscapedJobsAreHeldAgain) {
  JobRecord escaped = HeldJob(5, 1, 8);
  escaped.priority = 500;  // requeued: back in the queue, not held, no Tidal pin
  escaped.admin_comment = "";
  slurm_.state.jobs = {escaped};
  Reconciler r(acfg_, &slurm_, link_.get());
  slurm_.fail_load = true;
  ReconcileStats st = r.ReconcileOnce();
  EXPECT_FALSE(st.read_ok);
  EXPECT_TRUE(slurm_.calls.empty());
  EXPECT_EQ(engine_->Stats().pods, 0);
  slurm_.fail_load = false;
  st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(st.held, 1);
  ASSERT_FALSE(slurm_.calls.empty());
  EXPECT_EQ(slurm_.calls[0], "hold 5");
}

TEST_F(ReconcileTest, APinOnANodeThatWentDownIsHeldAgain) {
  JobRecord j = HeldJob(6, 1, 8);
  j.priority = 1000;
  j.required_nodes = {"gpu04"};
  j.admin_comment = "tidal: released to gpu04";
  slurm_.state.jobs = {j};
  slurm_.state.nodes[3].state = NodeState::kDown;
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(slurm_.calls.at(0), "hold 6");
}

// Regression: a job's own --nodelist was lost once Tidal had pinned it: after a requeue the
// pin (Tidal's, so not the user's) was cleared and the job planned anywhere.
TEST_F(ReconcileTest, AUsersNodelistSurvivesTidalsPinAndARequeue) {
  JobRecord j = HeldJob(9, 1, 8);
  j.required_nodes = {"gpu03"};  // sbatch -w gpu03
  slurm_.state.jobs = {j};
  Reconciler r(acfg_, &slurm_, link_.get());
  ASSERT_EQ(r.ReconcileOnce().released, 1);
  JobRecord* nine = slurm_.Find("9");
  EXPECT_EQ(nine->required_nodes, std::vector<std::string>{"gpu03"});
  EXPECT_NE(nine->admin_comment.find(" [nodelist: gpu03]"), std::string::npos) << nine->admin_comment;
  EXPECT_EQ(UserPin(*nine), std::vector<std::string>{"gpu03"}) << "read back from Tidal's note";
  nine->state = JobState::kRunning;
  nine->nodes = {"gpu03"};
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  // Requeued (a disruption): pending, held, Tidal's pin and comment still there. Its members ask
  // for gpu03 (not any node), and the hold puts the user's --nodelist back.
  nine->state = JobState::kPending;
  nine->priority = 0;
  nine->nodes.clear();
  nine->restart_cnt = 1;
  auto members = MembersOf(*nine, "9", acfg_);
  ASSERT_EQ(members.size(), 1u);
  ASSERT_EQ(members[0].required_node_affinity_size(), 1);
  bool pinned = false;
  for (const auto& f : members[0].required_node_affinity(0).match_fields()) {
    pinned = pinned || (f.operator_() == "In" && f.values_size() == 1 && f.values(0) == "gpu03");
  }
  EXPECT_TRUE(pinned) << members[0].DebugString();
  slurm_.calls.clear();
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  ASSERT_FALSE(slurm_.calls.empty());
  EXPECT_EQ(slurm_.calls[0], "hold_requeued 9");
  EXPECT_EQ(nine->required_nodes, std::vector<std::string>{"gpu03"}) << "the user's --nodelist, not cleared";
  // Placed again: on gpu03 only.
  ASSERT_EQ(r.ReconcileOnce().released, 1);
  EXPECT_EQ(nine->required_nodes, std::vector<std::string>{"gpu03"});
}

// Regression: a Slurm job's members are a rigid gang whatever its --comment says: a
// tidal.dev/gang-min there let the engine plan fewer nodes than the job's node count, and Slurm
// would have picked the rest itself, on nodes Tidal counts as free.
TEST_F(ReconcileTest, AGangMinInAJobsCommentDoesNotReleaseItOnFewerNodes) {
  for (int i = 0; i < 3; ++i) slurm_.state.nodes[static_cast<size_t>(i)].drain = true;  // only gpu04 is usable
  JobRecord j = HeldJob(9, 2, 8);
  j.comment = "tidal.dev/gang-min=1";
  slurm_.state.jobs.push_back(j);
  auto members = MembersOf(j, "9", acfg_);
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0].annotations().count("tidal.dev/gang-min"), 0u) << "not elastic";
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(slurm_.Find("9")->priority, 0u) << "released to " << ::testing::PrintToString(slurm_.Find("9")->required_nodes);
}

TEST_F(ReconcileTest, APinOnANodeThatDoesNotRespondIsKept) {
  // Right after a slurmctld restart every node reads "not responding" until its slurmd registers:
  // a released job pinned there keeps its pin (Slurm starts it once the node is back).
  JobRecord j = HeldJob(8, 1, 8);
  j.priority = 1000;
  j.required_nodes = {"gpu04"};
  j.admin_comment = "tidal: released to gpu04";
  slurm_.state.jobs = {j};
  slurm_.state.nodes[3].not_responding = true;
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(st.held, 0);
  for (const auto& c : slurm_.calls) EXPECT_EQ(c.rfind("hold", 0), std::string::npos) << c;
  EXPECT_EQ(slurm_.Find("8")->required_nodes, std::vector<std::string>{"gpu04"});
  // It stays silent and Slurm marks it DOWN: now the pin is lost.
  slurm_.state.nodes[3].state = NodeState::kDown;
  st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(st.held, 1);
}

TEST_F(ReconcileTest, AnUnchangedStateSendsNothing) {
  // Nodes carry several labels (a protobuf map): equal nodes must compare equal from pass to pass.
  slurm_.state.jobs = {HeldJob(9, 1, 8)};
  Reconciler r(acfg_, &slurm_, link_.get());
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  ASSERT_TRUE(r.ReconcileOnce().admitted);  // job 9 now reads released: its member is bound
  for (int i = 0; i < 3; ++i) {
    ReconcileStats st = r.ReconcileOnce();
    ASSERT_TRUE(st.admitted) << st.status.ToString();
    EXPECT_EQ(st.upserts, 0) << "pass " << i;
    EXPECT_EQ(st.deletes, 0) << "pass " << i;
  }
}

TEST_F(ReconcileTest, ASecondAdapterIsRefusedAndAppliesNothing) {
  slurm_.state.jobs = {HeldJob(7, 1, 8)};
  Reconciler a(acfg_, &slurm_, link_.get());
  ASSERT_TRUE(a.ReconcileOnce().admitted);
  MemorySlurm other;
  other.state = slurm_.state;
  AdapterConfig bcfg = acfg_;
  bcfg.holder = "adapter-b";
  auto link_b = NewGrpcEngineLink("127.0.0.1:" + std::to_string(port_));
  Reconciler b(bcfg, &other, link_b.get());
  ReconcileStats st = b.ReconcileOnce();
  EXPECT_FALSE(st.synced);
  EXPECT_NE(st.status.ToString().find("adapter-a"), std::string::npos) << st.status.ToString();
  EXPECT_TRUE(other.calls.empty());
  EXPECT_EQ(engine_->Stats().pods, 1);  // a's objects untouched
}

TEST_F(ReconcileTest, OnlyWhatChangedIsSentAgain) {
  slurm_.state.jobs = {HeldJob(1, 2, 8), HeldJob(2, 1, 8), HeldJob(3, 1, 1)};
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_TRUE(st.resynced);
  EXPECT_EQ(st.upserts, 4 + 4);  // the nodes, then every member
  ASSERT_EQ(st.released, 1);     // job 1 (16 GPUs): its record changes (pinned, released)
  st = r.ReconcileOnce();
  EXPECT_EQ(st.upserts, 2) << "job 1's two members, bound to its pin";
  EXPECT_EQ(st.deletes, 0);
  st = r.ReconcileOnce();
  EXPECT_EQ(st.upserts + st.deletes, 0) << "nothing changed";
  slurm_.Find("3")->node_count = 2;  // a gang grows
  st = r.ReconcileOnce();
  EXPECT_EQ(st.upserts, 2);
  EXPECT_EQ(engine_->Stats().pods, 5);
  slurm_.Find("3")->node_count = 1;  // and shrinks: its second member goes
  st = r.ReconcileOnce();
  EXPECT_EQ(st.upserts, 1);
  EXPECT_EQ(st.deletes, 1);
  EXPECT_EQ(engine_->Stats().pods, 4);
  slurm_.state.jobs.erase(slurm_.state.jobs.begin() + 1);  // job 2 is gone from the read
  st = r.ReconcileOnce();
  EXPECT_EQ(st.upserts, 0);
  EXPECT_EQ(st.deletes, 1);
  EXPECT_EQ(engine_->Stats().pods, 3);
  slurm_.Find("3")->parse_error = "tres_per_node: bad";  // now skipped: its member goes too
  st = r.ReconcileOnce();
  EXPECT_EQ(st.deletes, 1);
  EXPECT_EQ(st.skipped, 1);
  EXPECT_EQ(engine_->Stats().pods, 2);
}

}  // namespace
}  // namespace tidal::slurm
