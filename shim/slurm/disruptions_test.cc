// Slurm's side of the disruption path (disruptions.h): checkpointing declared with --signal and
// reported in the Comment, the notice (the job's signal, once per deadline), the eviction (requeue
// once, Evicted reported), the bounds per pass, and jobs that are gone or no longer running. The
// engine is a scripted EngineLink; slurmctld is a JsonFileApi over a recorded state file (its
// writes are recorded, not applied: the state reads the same until the test changes it).
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>

#include "shim/slurm/job_fields.h"
#include "shim/slurm/json_state.h"
#include "shim/slurm/reconciler.h"
#include "shim/slurm/to_engine.h"

namespace tidal::slurm {
namespace {

JobRecord RunningJob(uint32_t id, const std::string& node = "gpu01") {
  JobRecord j;
  j.id = std::to_string(id);
  j.job_id = id;
  j.user = "alice";
  j.account = "qa";
  j.partition = "batch";
  j.state = JobState::kRunning;
  j.priority = 1000;
  j.node_count = 1;
  j.gpus_per_node = 4;
  j.submit_time = 1000;
  j.start_time = 5000;
  j.nodes = {node};
  j.required_nodes = {node};
  j.admin_comment = "tidal: released to " + node;
  j.warn_signal = SIGUSR1;
  j.warn_time_s = 30;
  j.warn_batch_only = true;
  return j;
}

v1::Disruption Action(const std::string& job, v1::Disruption::Action action, int64_t deadline = 0, int members = 1) {
  v1::Disruption d;
  d.set_id("slurm/" + job);
  d.set_cause("drain");
  d.set_action(action);
  d.set_reason("node gpu01 drains by 2026-12-01T13:26:00Z");
  d.set_deadline_unix(deadline);
  for (int i = 0; i < members; ++i) {
    auto* p = d.add_pods();
    p->set_uid("slurm/" + job + "#" + std::to_string(i));
    p->set_namespace_("slurm");
    p->set_name(job + "#" + std::to_string(i));
  }
  return d;
}

// The engine: every Sync acknowledged, Admit admits nothing, Disruptions answers `actions`.
class ScriptedEngine : public EngineLink {
 public:
  std::vector<v1::Disruption> actions;
  std::vector<v1::EvictedRequest> evicted;
  std::vector<v1::SyncRequest> synced;
  int disruptions_calls = 0;
  Status fail_disruptions, fail_evicted;  // once
  Status Send(const v1::SyncRequest& req, v1::SyncAck* ack) override {
    synced.push_back(req);
    open_ = true;
    ack->mutable_status()->set_code(v1::Status::SUCCESS);
    return Status::Ok();
  }
  Status Admit(const v1::AdmitRequest&, v1::AdmitResponse*) override { return Status::Ok(); }
  Status Explain(const std::string&, std::string*) override { return Status::Ok(); }
  Status Disruptions(const v1::DisruptionsRequest& req, v1::DisruptionsResponse* out) override {
    ++disruptions_calls;
    EXPECT_EQ(req.door(), v1::SLURM);
    if (!fail_disruptions.ok()) return std::exchange(fail_disruptions, Status::Ok());
    for (const auto& a : actions) *out->add_disruptions() = a;
    return Status::Ok();
  }
  Status Evicted(const v1::EvictedRequest& req) override {
    if (!fail_evicted.ok()) return std::exchange(fail_evicted, Status::Ok());
    evicted.push_back(req);
    return Status::Ok();
  }
  void Close() override { open_ = false; }
  bool open() const override { return open_; }

 private:
  bool open_ = false;
};

class DisruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NodeRecord n;
    n.name = "gpu01";
    n.state = NodeState::kAllocated;
    n.gpus = 8;
    n.partitions = {"batch"};
    state_.nodes = {n};
  }
  void Write() {
    std::ofstream f(path_);
    f << WriteStateJson(state_);
  }
  // The writes of one op ("signal", "requeue", "set_comment", "hold").
  std::vector<JsonFileApi::Call> Calls(const std::string& op) const {
    std::vector<JsonFileApi::Call> out;
    for (const auto& c : slurm_.calls()) {
      if (c.op == op) out.push_back(c);
    }
    return out;
  }
  ReconcileStats Pass() {
    Write();
    return r_.ReconcileOnce();
  }

  std::string path_ = ::testing::TempDir() + "/tidal_disruption_state_" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
  ClusterRecords state_;
  AdapterConfig cfg_ = [] {
    AdapterConfig c;
    c.holder = "a";
    return c;
  }();
  ScriptedEngine engine_;
  JsonFileApi slurm_{path_};
  Reconciler r_{cfg_, &slurm_, &engine_};
};

TEST(DisruptionMapping, SignalAndCommentBecomeTheCheckpointAnnotations) {
  AdapterConfig cfg;
  JobRecord j = RunningJob(5);
  j.comment = "my run tidal.dev/last-checkpoint=2026-12-01T13:20:00Z";
  auto m = MembersOf(j, "5", cfg);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].annotations().at("tidal.dev/checkpoint-on-notice"), "30s");
  EXPECT_EQ(m[0].annotations().at("tidal.dev/last-checkpoint"), "2026-12-01T13:20:00Z");
  // Unix seconds, and a value the engine cannot read: passed through as written.
  j.comment = "tidal.dev/last-checkpoint=1764595200";
  EXPECT_EQ(MembersOf(j, "5", cfg)[0].annotations().at("tidal.dev/last-checkpoint"), "1764595200");
  j.comment = "tidal.dev/last-checkpoint=yesterday";
  EXPECT_EQ(MembersOf(j, "5", cfg)[0].annotations().at("tidal.dev/last-checkpoint"), "yesterday");
  // The user's own key wins over --signal's time; no --signal, no key.
  j.comment = "tidal.dev/checkpoint-on-notice=2m";
  EXPECT_EQ(MembersOf(j, "5", cfg)[0].annotations().at("tidal.dev/checkpoint-on-notice"), "2m");
  j.comment.clear();
  j.warn_signal = 0;
  j.warn_time_s = 0;
  EXPECT_EQ(MembersOf(j, "5", cfg)[0].annotations().count("tidal.dev/checkpoint-on-notice"), 0u);
}

TEST(DisruptionMapping, TheCommentDeclaresTheSignalLikeSlurmsSignalOption) {
  NoticeSignal sig;
  ASSERT_TRUE(ParseNoticeSignal("B:USR1@30", &sig).ok());
  EXPECT_EQ(sig.signal, SIGUSR1);
  EXPECT_EQ(sig.time_s, 30);
  EXPECT_TRUE(sig.batch_only);
  ASSERT_TRUE(ParseNoticeSignal("USR1", &sig).ok());  // sbatch's default time: 60 s; the steps
  EXPECT_EQ(sig.time_s, 60);
  EXPECT_FALSE(sig.batch_only);
  ASSERT_TRUE(ParseNoticeSignal("R:SIGTERM@90", &sig).ok());
  EXPECT_EQ(sig.signal, SIGTERM);
  EXPECT_FALSE(sig.batch_only);
  ASSERT_TRUE(ParseNoticeSignal("RB:12@5", &sig).ok());
  EXPECT_EQ(sig.signal, 12);
  EXPECT_TRUE(sig.batch_only);
  for (const char* bad : {"B:FOO@3", "USR1@x", "X:USR1", "0", "99", "", "USR1@70000"}) {
    EXPECT_FALSE(ParseNoticeSignal(bad, &sig).ok()) << bad;
  }
  // Both readers derive it from the comment; a bad one is the job's parse error (shown to its owner).
  JobRecord j;
  j.id = "5";
  j.comment = "run 3 tidal.dev/signal=B:USR1@30, tidal.dev/class=training";
  DeriveJobFields(RawJob{}, &j);
  EXPECT_EQ(j.warn_signal, SIGUSR1);
  EXPECT_EQ(j.warn_time_s, 30);
  EXPECT_TRUE(j.warn_batch_only);
  EXPECT_EQ(j.parse_error, "");
  j.comment = "tidal.dev/signal=B:NOPE";
  DeriveJobFields(RawJob{}, &j);
  EXPECT_EQ(j.warn_signal, 0);
  EXPECT_NE(j.parse_error.find("tidal.dev/signal=B:NOPE"), std::string::npos) << j.parse_error;
  std::vector<JobRecord> jobs;
  ASSERT_TRUE(ParseSqueueJson(R"({"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "errors": [], "jobs": [
      {"job_id": 5, "job_state": "RUNNING", "priority": 1000, "node_count": 1, "nodes": "gpu01",
       "comment": "tidal.dev/signal=TERM@45 tidal.dev/last-checkpoint=1764595200"}]})",
                              &jobs).ok());
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].warn_signal, SIGTERM);
  EXPECT_EQ(jobs[0].warn_time_s, 45);
  EXPECT_FALSE(jobs[0].warn_batch_only);
  AdapterConfig cfg;
  auto m = MembersOf(jobs[0], "5", cfg);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].annotations().at("tidal.dev/checkpoint-on-notice"), "45s");
  EXPECT_EQ(m[0].annotations().at("tidal.dev/last-checkpoint"), "1764595200");
}

TEST(DisruptionMapping, AJobSlurmWouldNotRequeueIsMarkedSoItIsNeverAPreemptionVictim) {
  AdapterConfig cfg;
  JobRecord j = RunningJob(5);
  auto m = MembersOf(j, "5", cfg);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].annotations().count("slurm.tidal.dev/requeue"), 0u);
  const uint64_t requeueable = MembersKey(j);
  j.requeueable = false;  // --no-requeue, or an salloc allocation
  m = MembersOf(j, "5", cfg);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].annotations().at("slurm.tidal.dev/requeue"), "false");
  EXPECT_NE(MembersKey(j), requeueable) << "the engine hears of the change";
}

TEST(DisruptionMapping, ANewCheckpointReportOrSignalChangesTheMembersKey) {
  JobRecord j = RunningJob(5);
  const uint64_t k0 = MembersKey(j);
  j.comment = "tidal.dev/last-checkpoint=1764595200";
  const uint64_t k1 = MembersKey(j);
  EXPECT_NE(k0, k1);
  j.comment = "tidal.dev/last-checkpoint=1764595260";
  EXPECT_NE(MembersKey(j), k1);
  JobRecord s = RunningJob(5);
  s.warn_time_s = 60;
  EXPECT_NE(MembersKey(s), k0);
  // Tidal's notice in the AdminComment keeps its pin Tidal's (not the user's --nodelist): the
  // members keep only their partition's node constraint.
  JobRecord n = RunningJob(5);
  n.admin_comment = "tidal: notice (drain): ...";
  EXPECT_TRUE(TidalPin(n));
  AdapterConfig cfg;
  const auto m = MembersOf(n, "5", cfg);
  ASSERT_EQ(m.size(), 1u);
  ASSERT_EQ(m[0].required_node_affinity_size(), 1);
  EXPECT_EQ(m[0].required_node_affinity(0).match_fields_size(), 0);
  n.admin_comment = "ops: hands off";  // an admin's words: the ReqNodeList reads as the user's
  EXPECT_EQ(MembersOf(n, "5", cfg)[0].required_node_affinity(0).match_fields_size(), 1);
}

TEST(DisruptionMapping, TheRecordedStateKeepsTheSignal) {
  ClusterRecords in;
  in.jobs = {RunningJob(5)};
  ClusterRecords out;
  ASSERT_TRUE(ReadStateJson(WriteStateJson(in), &out).ok());
  ASSERT_EQ(out.jobs.size(), 1u);
  EXPECT_EQ(out.jobs[0].warn_signal, SIGUSR1);
  EXPECT_EQ(out.jobs[0].warn_time_s, 30);
  EXPECT_TRUE(out.jobs[0].warn_batch_only);
}

TEST(DisruptionMapping, MemberUidsNameTheirJobs) {
  EXPECT_EQ(DisruptionHandler::JobOfMember("slurm/123#0"), "123");
  EXPECT_EQ(DisruptionHandler::JobOfMember("slurm/123_7#2"), "123_7");
  EXPECT_EQ(DisruptionHandler::JobOfMember("default/pod-a"), "");
  EXPECT_EQ(DisruptionHandler::JobOfMember("slurm/#0"), "");
  EXPECT_EQ(DisruptionHandler::Rfc3339(1764595200), "2025-12-01T13:20:00Z");
}

TEST_F(DisruptionTest, ANoticeSignalsTheJobOncePerDeadlineAndSaysWhyInItsAdminComment) {
  state_.jobs = {RunningJob(5)};
  engine_.actions = {Action("5", v1::Disruption::NOTICE, 1764595200)};
  ReconcileStats st = Pass();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(st.notices, 1);
  ASSERT_EQ(Calls("signal").size(), 1u);
  EXPECT_EQ(Calls("signal")[0].target, "5");
  EXPECT_EQ(Calls("signal")[0].text, std::to_string(SIGUSR1) + " batch");  // --signal=B:USR1
  ASSERT_EQ(Calls("set_comment").size(), 1u);
  EXPECT_EQ(Calls("set_comment")[0].text,
            "tidal: notice (drain): node gpu01 drains by 2026-12-01T13:26:00Z; requeued at 2025-12-01T13:20:00Z at the latest");
  // The engine repeats the notice at every poll: the job is not signalled again, and its comment
  // (now as written) is left alone.
  state_.jobs[0].admin_comment = Calls("set_comment")[0].text;
  slurm_.ClearCalls();
  st = Pass();
  EXPECT_EQ(st.notices, 0);
  EXPECT_TRUE(slurm_.calls().empty()) << slurm_.calls()[0].op;
  // A new notice (another deadline) is a new signal.
  engine_.actions = {Action("5", v1::Disruption::NOTICE, 1764595260)};
  st = Pass();
  EXPECT_EQ(st.notices, 1);
  EXPECT_EQ(Calls("signal").size(), 1u);
  EXPECT_EQ(r_.totals().notices, 2);
}

TEST_F(DisruptionTest, ANoticeUsesTheDeclaredSignalElseSigusr1ToTheStepsAndKeepsAnAdminsComment) {
  JobRecord steps = RunningJob(6);
  steps.warn_signal = SIGTERM;
  steps.warn_batch_only = false;
  JobRecord none = RunningJob(7, "gpu01");
  none.warn_signal = 0;
  none.warn_time_s = 0;
  none.comment = "tidal.dev/checkpoint-on-notice=30s";
  none.admin_comment = "ops: keep running, ticket 42";
  state_.jobs = {steps, none};
  engine_.actions = {Action("6", v1::Disruption::NOTICE, 1764595200), Action("7", v1::Disruption::NOTICE, 1764595200)};
  ReconcileStats st = Pass();
  EXPECT_EQ(st.notices, 2);
  ASSERT_EQ(Calls("signal").size(), 2u);
  EXPECT_EQ(Calls("signal")[0].text, std::to_string(SIGTERM));
  EXPECT_EQ(Calls("signal")[1].text, std::to_string(SIGUSR1));
  ASSERT_EQ(Calls("set_comment").size(), 1u);
  EXPECT_EQ(Calls("set_comment")[0].target, "6");
}

TEST_F(DisruptionTest, AnEvictionRequeuesTheJobOnceAndReportsIt) {
  state_.jobs = {RunningJob(5)};
  engine_.actions = {Action("5", v1::Disruption::EVICT, 0, 2)};
  state_.jobs[0].node_count = 2;
  state_.jobs[0].nodes = {"gpu01", "gpu02"};
  ReconcileStats st = Pass();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(st.disruption_requeues, 1);
  ASSERT_EQ(Calls("requeue").size(), 1u);
  EXPECT_EQ(Calls("requeue")[0].target, "5");
  ASSERT_EQ(engine_.evicted.size(), 1u);
  EXPECT_EQ(engine_.evicted[0].disruption(), "slurm/5");
  EXPECT_EQ(engine_.evicted[0].reason(), "drain");
  ASSERT_EQ(engine_.evicted[0].pods_size(), 2);
  EXPECT_EQ(engine_.evicted[0].pods(1).uid(), "slurm/5#1");
  EXPECT_EQ(engine_.evicted[0].pods(1).namespace_(), "slurm");
  // The engine asks again before it sees the job go (slurmctld still reads it RUNNING): nothing more.
  slurm_.ClearCalls();
  st = Pass();
  EXPECT_EQ(st.disruption_requeues, 0);
  EXPECT_TRUE(Calls("requeue").empty());
  EXPECT_EQ(engine_.evicted.size(), 1u);
  // Requeued: pending, held, still pinned (Slurm keeps ReqNodeList) with Tidal's comment, a new
  // SubmitTime (Slurm's, at the requeue), Restarts=1: it is held again without the pin (and
  // without Slurm's 120 s BeginTime), the engine is told its first submit time (its place in queue
  // order), and no longer asks.
  JobRecord& j = state_.jobs[0];
  j.state = JobState::kPending;
  j.priority = 0;
  j.state_reason = "JobHeldAdmin";
  j.nodes.clear();
  j.submit_time = 9000;
  j.restart_cnt = 1;
  engine_.actions.clear();
  engine_.synced.clear();
  st = Pass();
  ASSERT_FALSE(engine_.synced.empty());
  ASSERT_GT(engine_.synced.back().upsert_pods_size(), 0);
  EXPECT_EQ(engine_.synced.back().upsert_pods(0).creation_unix(), 1000);
  ASSERT_EQ(Calls("hold_requeued").size(), 1u) << st.status.ToString();
  EXPECT_EQ(Calls("hold_requeued")[0].target, "5");
  EXPECT_EQ(Calls("hold_requeued")[0].text, "tidal: requeued; held to be placed anew");
  EXPECT_EQ(r_.totals().disruption_requeues, 1);
}

TEST_F(DisruptionTest, AJobHeldSinceTidalReleasedItLosesThePinAndOnlyARequeuedOneItsBeginTime) {
  JobRecord held = RunningJob(5);  // released by Tidal, then an admin's `scontrol hold`: never ran
  held.state = JobState::kPending;
  held.priority = 0;
  held.nodes.clear();
  JobRecord requeued = held;  // ran, requeued with `scontrol requeuehold` (Tidal gave it notice)
  requeued.id = "6";
  requeued.job_id = 6;
  requeued.restart_cnt = 2;
  requeued.admin_comment = "tidal: notice (drain): ...";
  JobRecord user_pin = held;  // the user's --nodelist, held waiting: kept
  user_pin.id = "7";
  user_pin.job_id = 7;
  user_pin.admin_comment = "tidal: waiting for Tidal";
  state_.jobs = {held, requeued, user_pin};
  ReconcileStats st = Pass();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  ASSERT_EQ(Calls("hold").size(), 1u);
  EXPECT_EQ(Calls("hold")[0].target, "5");
  ASSERT_EQ(Calls("hold_requeued").size(), 1u);
  EXPECT_EQ(Calls("hold_requeued")[0].target, "6");
  EXPECT_EQ(st.held, 2);
}

TEST_F(DisruptionTest, FailedRequeuesAndReportsAreRetriedNextPass) {
  state_.jobs = {RunningJob(5)};
  engine_.actions = {Action("5", v1::Disruption::EVICT)};
  slurm_.FailNextWrite(Status::Error("slurm_requeue 5: Unable to contact slurm controller"));
  ReconcileStats st = Pass();
  EXPECT_EQ(st.apply_errors, 1);
  EXPECT_EQ(st.disruption_requeues, 0);
  EXPECT_FALSE(st.status.ok());
  EXPECT_TRUE(engine_.evicted.empty());
  engine_.fail_evicted = Status::Error("engine Evicted: 14 unavailable");
  st = Pass();
  EXPECT_EQ(st.apply_errors, 0);
  EXPECT_EQ(st.disruption_requeues, 1);
  EXPECT_TRUE(engine_.evicted.empty());
  EXPECT_NE(st.status.ToString().find("Evicted"), std::string::npos) << st.status.ToString();
  st = Pass();  // reported now, not requeued again
  EXPECT_EQ(st.disruption_requeues, 0);
  EXPECT_EQ(Calls("requeue").size(), 1u);
  EXPECT_EQ(engine_.evicted.size(), 1u);
}

TEST_F(DisruptionTest, ACheckpointReportThatRewritesTheCommentKeepsTheNoticeSignal) {
  JobRecord j = RunningJob(5);
  j.comment = "tidal.dev/signal=B:USR1@30";  // as read: the fields derived from it
  state_.jobs = {j};
  Pass();
  // The job reports its checkpoint: `scontrol update comment=tidal.dev/last-checkpoint=...`
  // replaces the whole comment (the reader derives no signal from it now).
  state_.jobs[0].comment = "tidal.dev/last-checkpoint=1764595200";
  state_.jobs[0].warn_signal = 0;
  state_.jobs[0].warn_time_s = 0;
  state_.jobs[0].warn_batch_only = false;
  engine_.synced.clear();
  engine_.actions = {Action("5", v1::Disruption::NOTICE, 1764595300)};
  ReconcileStats st = Pass();
  ASSERT_EQ(Calls("signal").size(), 1u);
  EXPECT_EQ(Calls("signal")[0].text, std::to_string(SIGUSR1) + " batch");
  // and the members still say it checkpoints on notice, with the new report.
  ASSERT_FALSE(engine_.synced.empty());
  ASSERT_GT(engine_.synced.back().upsert_pods_size(), 0);
  const auto& a = engine_.synced.back().upsert_pods(0).annotations();
  EXPECT_EQ(a.at("tidal.dev/checkpoint-on-notice"), "30s");
  EXPECT_EQ(a.at("tidal.dev/last-checkpoint"), "1764595200");
  // Another job under the same id (another submit time, not requeued) is not given it.
  state_.jobs[0].submit_time = 7777;
  engine_.actions = {Action("5", v1::Disruption::NOTICE, 1764595400)};
  slurm_.ClearCalls();
  st = Pass();
  ASSERT_EQ(Calls("signal").size(), 1u);
  EXPECT_EQ(Calls("signal")[0].text, std::to_string(SIGUSR1));
}

TEST_F(DisruptionTest, JobsGoneEndingOrPendingAreSkipped) {
  JobRecord completing = RunningJob(6);
  completing.completing = true;
  JobRecord done = RunningJob(7);
  done.state = JobState::kCompleted;
  JobRecord pending = RunningJob(8);
  pending.state = JobState::kPending;
  pending.priority = 0;
  pending.required_nodes.clear();
  pending.nodes.clear();
  state_.jobs = {completing, done, pending};
  // Job 5 is gone from the read; a pod of another door in the action is none of this adapter's.
  v1::Disruption mixed = Action("5", v1::Disruption::EVICT);
  auto* pod = mixed.add_pods();
  pod->set_uid("team/pod-a");
  engine_.actions = {mixed, Action("6", v1::Disruption::EVICT), Action("7", v1::Disruption::NOTICE, 1764595200),
                     Action("8", v1::Disruption::EVICT)};
  ReconcileStats st = Pass();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(st.notices + st.disruption_requeues, 0);
  EXPECT_TRUE(Calls("requeue").empty());
  EXPECT_TRUE(Calls("signal").empty());
  EXPECT_TRUE(engine_.evicted.empty());
}

TEST_F(DisruptionTest, AtMostSoManyJobsAreActedOnPerPass) {
  const int n = DisruptionHandler::kMaxActionsPerPass + 30;
  for (int i = 0; i < n; ++i) {
    state_.jobs.push_back(RunningJob(100 + static_cast<uint32_t>(i)));
    engine_.actions.push_back(Action(std::to_string(100 + i), v1::Disruption::EVICT));
  }
  ReconcileStats st = Pass();
  EXPECT_EQ(st.disruption_requeues, DisruptionHandler::kMaxActionsPerPass);
  EXPECT_EQ(static_cast<int>(engine_.evicted.size()), DisruptionHandler::kMaxActionsPerPass);
  st = Pass();
  EXPECT_EQ(st.disruption_requeues, 30);
  EXPECT_EQ(static_cast<int>(engine_.evicted.size()), n);
  st = Pass();
  EXPECT_EQ(st.disruption_requeues, 0);
  EXPECT_EQ(static_cast<int>(Calls("requeue").size()), n);
}

TEST_F(DisruptionTest, AFailedDisruptionsCallDoesNothingAndAPassWithoutAdmitDoesNotAsk) {
  state_.jobs = {RunningJob(5)};
  engine_.actions = {Action("5", v1::Disruption::EVICT)};
  engine_.fail_disruptions = Status::Error("engine Disruptions: 14 unavailable");
  ReconcileStats st = Pass();
  EXPECT_FALSE(st.status.ok());
  EXPECT_TRUE(slurm_.calls().empty());
  // A pass that did not get Admit's answer (the read failed) asks nothing.
  slurm_.FailNextLoad(Status::Error("slurm_load_jobs: down"));
  const int asked = engine_.disruptions_calls;
  st = Pass();
  EXPECT_EQ(engine_.disruptions_calls, asked);
  st = Pass();
  EXPECT_EQ(st.disruption_requeues, 1);
}

// An elastic job (--nodes=2-4) running on gpu01..gpu03, released by Tidal (its range in the note),
// its batch script on gpu01.
JobRecord ElasticJob(uint32_t id) {
  JobRecord j = RunningJob(id);
  j.node_count = 3;
  j.nodes = {"gpu01", "gpu02", "gpu03"};
  j.required_nodes = j.nodes;
  j.batch_host = "gpu01";
  j.admin_comment = "tidal: released to gpu01,gpu02,gpu03 [nodes: 2-4]";
  return j;
}

v1::Disruption MemberAction(const std::string& job, v1::Disruption::Action action, std::vector<int> members,
                            int64_t deadline = 0) {
  v1::Disruption d = Action(job, action, deadline, 0);
  for (int i : members) {
    auto* p = d.add_pods();
    p->set_uid("slurm/" + job + "#" + std::to_string(i));
    p->set_namespace_("slurm");
    p->set_name(job + "#" + std::to_string(i));
  }
  return d;
}

TEST_F(DisruptionTest, AnElasticJobGivesBackOnlyTheNamedNodesAndGoesOn) {
  state_.jobs = {ElasticJob(8)};
  engine_.actions = {MemberAction("8", v1::Disruption::NOTICE, {2}, 1764595200)};
  ReconcileStats st = Pass();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  ASSERT_EQ(Calls("signal").size(), 1u) << "the job is told (it checkpoints)";
  ASSERT_EQ(Calls("set_comment").size(), 1u);
  EXPECT_EQ(Calls("set_comment")[0].text,
            "tidal: notice (drain): node gpu01 drains by 2026-12-01T13:26:00Z; gpu03 given back at "
            "2025-12-01T13:20:00Z at the latest [nodes: 2-4]");
  slurm_.ClearCalls();
  engine_.actions = {MemberAction("8", v1::Disruption::EVICT, {2})};
  st = Pass();
  EXPECT_EQ(st.disruption_shrinks, 1);
  EXPECT_EQ(st.disruption_requeues, 0);
  EXPECT_TRUE(Calls("requeue").empty());
  ASSERT_EQ(Calls("shrink").size(), 1u);
  EXPECT_EQ(Calls("shrink")[0].target, "8");
  EXPECT_EQ(Calls("shrink")[0].nodes, (std::vector<std::string>{"gpu01", "gpu02"}));
  ASSERT_EQ(engine_.evicted.size(), 1u);
  ASSERT_EQ(engine_.evicted[0].pods_size(), 1);
  EXPECT_EQ(engine_.evicted[0].pods(0).uid(), "slurm/8#2");
  // Shrunk (Slurm keeps ReqNodeList): the engine still names the member until it sees it gone;
  // nothing more is done, and the members left keep their uids (#0 on gpu01, #1 on gpu02).
  state_.jobs[0].nodes = {"gpu01", "gpu02"};
  state_.jobs[0].node_count = 2;
  slurm_.ClearCalls();
  engine_.synced.clear();
  st = Pass();
  EXPECT_TRUE(Calls("shrink").empty());
  EXPECT_TRUE(Calls("requeue").empty());
  EXPECT_EQ(engine_.evicted.size(), 1u);
  ASSERT_FALSE(engine_.synced.empty());
  const v1::SyncRequest& sync = engine_.synced[0];
  ASSERT_EQ(sync.delete_pods_size(), 1);
  EXPECT_EQ(sync.delete_pods(0), "slurm/8#2");
  ASSERT_EQ(sync.upsert_pods_size(), 2);
  EXPECT_EQ(sync.upsert_pods(0).uid(), "slurm/8#0");
  EXPECT_EQ(sync.upsert_pods(0).annotations().at("tidal.dev/gang-leader"), "true") << "the batch host";
  EXPECT_EQ(sync.upsert_pods(1).uid(), "slurm/8#1");
  EXPECT_EQ(sync.upsert_pods(1).annotations().count("tidal.dev/gang-leader"), 0u);
  EXPECT_EQ(r_.totals().disruption_shrinks, 1);
}

TEST_F(DisruptionTest, AnElasticJobIsRequeuedWholeWhenItsBatchHostOrItsMinimumWouldGo) {
  JobRecord batch = ElasticJob(8);  // the engine takes gpu01, the batch host: Slurm cannot
  JobRecord under = ElasticJob(9);  // 2 of 3 nodes: 1 left, under its minimum of 2
  under.nodes = under.required_nodes = {"gpu04", "gpu05", "gpu06"};
  under.batch_host = "gpu04";
  JobRecord rigid = ElasticJob(10);  // -N 3: not elastic
  rigid.nodes = rigid.required_nodes = {"gpu07", "gpu08", "gpu09"};
  rigid.admin_comment = "tidal: released to gpu07,gpu08,gpu09";
  rigid.batch_host = "gpu07";
  state_.jobs = {batch, under, rigid};
  engine_.actions = {MemberAction("8", v1::Disruption::EVICT, {0}), MemberAction("9", v1::Disruption::EVICT, {1, 2}),
                     MemberAction("10", v1::Disruption::EVICT, {2})};
  ReconcileStats st = Pass();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_TRUE(Calls("shrink").empty());
  EXPECT_EQ(Calls("requeue").size(), 3u);
  EXPECT_EQ(st.disruption_requeues, 3);
}

}  // namespace
}  // namespace tidal::slurm
