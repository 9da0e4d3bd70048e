// Fillers in the gap before a reserved start (engine/engine_gap_fill.cc): a gang reserved behind
// running work leaves its other nodes idle until its start; by perishable.fill, preemptible work
// that checkpoints on notice may use them while its notice, kDrainSlackS and perishable.minSeconds
// fit before the start. It gets its notice (cause reservation) at start - notice - kDrainSlackS,
// so the gang starts at its start; at once when the gang could start now but for it; and the
// notice is withdrawn when the reservation no longer needs the filler gone.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include <cstdio>

#include <gtest/gtest.h>

#include "core/api/duration.h"
#include "engine/engine.h"
#include "engine/maintenance.h"
#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;

class ReservationFillTest : public testing::EngineFixture {
 protected:
  void SetUp() override { MakeWith(""); }
  // Two nodes: busy on n0 until now + 1 h (declared), the 16-GPU pair reserved on n0 + n1 from
  // then, so n1 is idle for an hour: the gap.
  void MakeWith(const std::string& yaml) {
    if (log_ != nullptr) fclose(log_);  // a second MakeWith: the first log's buffer goes too
    free(log_buf_);
    log_buf_ = nullptr;
    log_ = open_memstream(&log_buf_, &log_len_);
    log_writer_ = std::make_unique<DecisionLog>(log_, 1e6);
    auto cfg = ParseEngineConfig(yaml.empty() ? "perishable: {fill: checkpointing}\n" : yaml, "engine.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    Make(*cfg);
    engine_->SetObservability(&metrics_, log_writer_.get());
    SyncBatch b;
    for (int i = 2; i < 8; ++i) b.delete_nodes.push_back("n" + std::to_string(i));
    ASSERT_TRUE(Sync(b).ok());
    start_ = now_ + 3600;
    ASSERT_TRUE(Add({Running(Pod("busy", false, "", "1h"), "n0", now_), GangPod("p0", "pair", 2), GangPod("p1", "pair", 2)}).ok());
    PlanResult r = engine_->PlanPod("uid-p0");
    ASSERT_FALSE(r.status.ok());
    ASSERT_NE(r.status.ToString().find("reserved to start in 1h"), std::string::npos) << r.status.ToString();
  }
  void TearDown() override {
    if (log_ != nullptr) fclose(log_);
    free(log_buf_);
  }
  std::string Log() {
    fflush(log_);
    return std::string(log_buf_, log_len_);
  }
  static PodInfo Pod(const std::string& name, bool preemptible, const std::string& notice, const std::string& limit = "",
                     int64_t gpus = 8) {
    return testing::FillerPod(name, preemptible, notice, limit, gpus);
  }
  static PodInfo Running(PodInfo p, const std::string& node, int64_t start) { return testing::RunningOn(std::move(p), node, start); }
  // The filler: preemptible, checkpoints on 60 s notice, declares 3 h (past the reserved start).
  void RunFiller() { ASSERT_TRUE(Add({Running(Pod("filler", true, "60s", "3h"), "n1", now_)}).ok()); }

  int64_t start_ = 0;
  FILE* log_ = nullptr;
  char* log_buf_ = nullptr;
  size_t log_len_ = 0;
  std::unique_ptr<DecisionLog> log_writer_;
};

TEST_F(ReservationFillTest, TheGapTakesPreemptibleWorkThatCheckpointsOnNoticeAndNotWorkThatWouldDelayTheGang) {
  std::string node;
  Status st = Plan(Pod("rigid", false, "", "3h"), &node);
  EXPECT_FALSE(st.ok()) << "not preemptible and runs past the reserved start: took " << node;
  EXPECT_NE(st.ToString().find("held for earlier reservations"), std::string::npos) << st.ToString();
  EXPECT_FALSE(Plan(Pod("plain", true, "", "3h")).ok()) << "preemptible, but it would lose its work (fill: checkpointing)";
  ASSERT_TRUE(Plan(Pod("short", false, "", "30m"), &node).ok()) << "it ends before the start (backfill)";
  EXPECT_EQ(node, "n1");
  ASSERT_TRUE(Plan(Pod("filler", true, "60s", "3h"), &node).ok()) << "a filler: preemptible, checkpoints on notice";
  EXPECT_EQ(node, "n1");
}

TEST_F(ReservationFillTest, NoFillerOnceTooLittleOfTheGapIsLeft) {
  now_ = start_ - 60 - kDrainSlackS - 300;  // 60 s notice, the slack and perishable.minSeconds
  EXPECT_TRUE(Plan(Pod("in-time", true, "60s", "3h")).ok());
  now_ += 1;
  EXPECT_FALSE(Plan(Pod("late", true, "60s", "3h")).ok());
}

TEST_F(ReservationFillTest, PerishableFillDecidesAsForTheCloses) {
  MakeWith("perishable: {fill: preemptible, minSeconds: 60}\n");
  std::string node;
  ASSERT_TRUE(Plan(Pod("plain", true, "", "3h"), &node).ok()) << "fill: preemptible";
  EXPECT_EQ(node, "n1");
  EXPECT_FALSE(Plan(Pod("rigid", false, "", "3h")).ok());

  MakeWith("perishable: {fill: none}\n");
  EXPECT_FALSE(Plan(Pod("filler", true, "60s", "3h")).ok()) << "fill: none: only work that ends before the start";
  EXPECT_TRUE(Plan(Pod("short", false, "", "30m")).ok());
  EXPECT_EQ(Gpus("perishable"), 0) << "no gap is offered";
  // A preemptible job already there (it came before the reservation) is not a filler: it stays.
  RunFiller();
  now_ = start_ - 60;
  EXPECT_TRUE(Poll().empty());
}

TEST_F(ReservationFillTest, TheFillerGetsItsNoticeAsLateAsItAllowsAndTheGangStartsAtItsStart) {
  RunFiller();
  EXPECT_TRUE(Poll().empty());
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/filler", &text).ok());
  EXPECT_NE(text.find("window: runs on borrowed time: gang team/pair is reserved to start on its node(s) at " +
                      FormatUnixTime(start_)),
            std::string::npos)
      << text;
  auto j = engine_->ExplainJson("team/filler");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["borrowed"]["until_unix"], start_) << j->dump();
  ASSERT_TRUE(engine_->Explain("team/pair", &text).ok());
  EXPECT_NE(text.find("fillers: fillers (team/pod/filler) hold its nodes until " + FormatUnixTime(start_ - kDrainSlackS)),
            std::string::npos)
      << text;

  now_ = start_ - 60 - kDrainSlackS - 1;
  EXPECT_TRUE(Poll().empty()) << "91 s before the start: it keeps running";
  now_ += 1;
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kNotice);
  EXPECT_EQ(a[0].cause, "reservation");
  EXPECT_NE(a[0].reason.find("reserved for gang team/pair"), std::string::npos) << a[0].reason;
  EXPECT_NE(Log().find("reservation-gap-given-back"), std::string::npos) << Log();
  now_ += 60;  // no checkpoint reported: evicted kDrainSlackS before the start
  a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kEvict);
  EXPECT_EQ(now_, start_ - kDrainSlackS);
  ASSERT_TRUE(Delete({"uid-filler"}).ok());
  EXPECT_EQ(metrics_.disruptions.With({"reservation"}).Value(), 1);
  now_ += 1;
  Poll();
  bool activated = false;
  for (const auto& p : engine_->TakeActivations(FrontDoor::kKubernetes)) activated = activated || p.uid == "uid-p0";
  EXPECT_TRUE(activated) << "the gang gets another try once its fillers are gone";
  EXPECT_FALSE(Plan(Pod("filler2", true, "60s", "3h")).ok()) << "its nodes take no new filler now";

  now_ = start_;  // busy ends: the pair starts on its reserved nodes, at its start
  ASSERT_TRUE(Delete({"uid-busy"}).ok());
  PlanResult p0 = engine_->PlanPod("uid-p0");
  ASSERT_TRUE(p0.status.ok()) << p0.status.ToString();
  PlanResult p1 = engine_->PlanPod("uid-p1");
  ASSERT_TRUE(p1.status.ok()) << p1.status.ToString();
  EXPECT_NE(p0.node, p1.node);
}

TEST_F(ReservationFillTest, AReservationDueWhileItsFillerStillTerminatesKeepsItsNodesAndStart) {
  RunFiller();
  now_ = start_ - 60 - kDrainSlackS;
  ASSERT_EQ(Poll().size(), 1u);
  now_ += 60;
  ASSERT_EQ(Poll().size(), 1u);  // evicted; its pod takes its time to go
  PodInfo going = Running(Pod("filler", true, "60s", "3h"), "n1", start_ - 3600);
  going.terminating = true;
  ASSERT_TRUE(Add({going}).ok());
  now_ = start_ + 5;
  ASSERT_TRUE(Delete({"uid-busy"}).ok());
  EXPECT_FALSE(engine_->PlanPod("uid-p0").status.ok()) << "the filler's pod is still there";
  auto j = engine_->ExplainJson("team/pair");
  ASSERT_TRUE(j.ok());
  ASSERT_TRUE(j->contains("reservation")) << j->dump();
  EXPECT_LE((*j)["reservation"]["start_unix"].get<int64_t>(), now_) << "not moved past the filler's declared end: " << j->dump();
  ASSERT_TRUE(Delete({"uid-filler"}).ok());
  PlanResult p0 = engine_->PlanPod("uid-p0");
  ASSERT_TRUE(p0.status.ok()) << p0.status.ToString();
}

TEST_F(ReservationFillTest, WhenTheGangCouldStartNowTheFillerGetsItsNoticeAtOnce) {
  RunFiller();
  now_ += 600;
  ASSERT_TRUE(Delete({"uid-busy"}).ok());  // it ended 50 min early
  EXPECT_FALSE(engine_->PlanPod("uid-p0").status.ok()) << "the filler holds n1";
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kNotice);
  EXPECT_EQ(a[0].cause, "reservation");
  EXPECT_NE(a[0].reason.find("could start now"), std::string::npos) << a[0].reason;
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/pair", &text).ok());
  EXPECT_NE(text.find("hold its nodes until " + FormatUnixTime(now_ + 60)), std::string::npos) << text;
  now_ += 60;
  a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kEvict);
  ASSERT_TRUE(Delete({"uid-filler"}).ok());
  ASSERT_TRUE(engine_->PlanPod("uid-p0").status.ok()) << "50 min before its reserved start";
}

TEST_F(ReservationFillTest, AFillerThatNoLongerBlocksTheReservationKeepsRunning) {
  RunFiller();
  now_ = start_ - 60 - kDrainSlackS;
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kNotice);
  // The gang goes (deleted): nothing needs the filler gone, its notice is withdrawn.
  ASSERT_TRUE(Delete({"uid-p0", "uid-p1"}).ok());
  now_ += 10;
  EXPECT_TRUE(Poll().empty());
  EXPECT_NE(Log().find("\"disruption-cancelled\""), std::string::npos) << Log();
  now_ += 120;
  EXPECT_TRUE(Poll().empty()) << "never evicted";
  EXPECT_EQ(metrics_.disruptions.With({"reservation"}).Value(), 0);
}

TEST_F(ReservationFillTest, AReservationMovedOffTheFillersNodeWithdrawsItsNotice) {
  // n0 is cordoned: the reservation on n0 + n1 cannot start there and is dropped (the gang's next
  // try re-plans it), so nothing needs the filler gone from n1.
  RunFiller();
  now_ = start_ - 60 - kDrainSlackS;
  ASSERT_EQ(Poll().size(), 1u);
  SyncBatch cordon;
  NodeInfo n0 = Node(0);
  n0.unschedulable = true;
  cordon.upsert_nodes = {n0};
  ASSERT_TRUE(Sync(cordon).ok());
  now_ += 1;
  EXPECT_TRUE(Poll().empty()) << "the reservation that needed n1 is gone";
  now_ += 120;
  EXPECT_TRUE(Poll().empty());
}

TEST_F(ReservationFillTest, AdmitDoesNotRefuseAJobForASameShapedOneThatMayNotUseTheGap) {
  // Regression: Admit answers gangs of one shape from the first one's failure; a job that may not
  // fill the gap (it would lose its work) and a checkpointing one are not of one shape.
  auto job = [](const std::string& name, const std::string& notice) {
    PodInfo p = testing::SlurmMember(name, 0, 1, "default");
    p.annotations[kLabelPreemptible] = "true";
    p.annotations[kLabelRuntimeLimit] = "3h";
    if (!notice.empty()) p.annotations[kLabelCheckpointOnNotice] = notice;
    return p;
  };
  SyncBatch slurm;  // tidal-slurm reports both nodes and the two jobs, plain submitted first
  slurm.door = FrontDoor::kSlurm;
  slurm.resync = true;
  slurm.upsert_nodes = {Node(0), Node(1)};
  slurm.upsert_pods = {job("a-plain", "")};
  ASSERT_TRUE(Sync(slurm).ok());
  now_ += 1;
  slurm.resync = false;
  slurm.upsert_nodes.clear();
  slurm.upsert_pods = {job("b-ckpt", "60s")};
  ASSERT_TRUE(Sync(slurm).ok());
  AdmitResult r = engine_->Admit(FrontDoor::kSlurm, 10);
  ASSERT_EQ(r.admitted.size(), 1u) << (r.waiting.empty() ? "" : r.waiting[0].reason);
  EXPECT_EQ(r.admitted[0].gang, "slurm/b-ckpt");

  // The same for the run time (plain backfill): a job that ends before the start after a longer one.
  auto timed = [&](const std::string& name, const std::string& limit) {
    PodInfo p = testing::SlurmMember(name, 0, 1, "default");
    p.annotations[kLabelRuntimeLimit] = limit;
    return p;
  };
  slurm.delete_pods = {"slurm/a-plain#0", "slurm/b-ckpt#0"};
  slurm.upsert_pods = {timed("c-long", "3h")};
  ASSERT_TRUE(Sync(slurm).ok());
  slurm.delete_pods.clear();
  now_ += 1;
  slurm.upsert_pods = {timed("d-short", "30m")};
  ASSERT_TRUE(Sync(slurm).ok());
  r = engine_->Admit(FrontDoor::kSlurm, 10);
  bool short_in = false;
  for (const auto& a : r.admitted) short_in = short_in || a.gang == "slurm/d-short";
  EXPECT_TRUE(short_in) << "it ends before the reserved start";
}

TEST_F(ReservationFillTest, TheGapIsMeasuredLikeTheWindows) {
  EXPECT_EQ(Gpus("perishable"), 8) << "n1's idle GPUs are held for the pair from its start";
  EXPECT_EQ(Gpus("idle"), 0);
  RunFiller();
  EXPECT_EQ(Gpus("perishable"), 0);
  Poll();
  now_ += 10;
  Poll();
  // n0 (busy) and n1 (the filler) are reserved for the pair: 16 GPUs offered, all in use.
  EXPECT_DOUBLE_EQ(metrics_.perishable_gpu_seconds.With({"offered"}).Value(), 160);
  EXPECT_DOUBLE_EQ(metrics_.perishable_gpu_seconds.With({"filled"}).Value(), 160);
}

}  // namespace
}  // namespace tidal
