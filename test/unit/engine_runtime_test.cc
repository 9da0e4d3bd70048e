// How work ended and the learned runtime correction (engine/engine_runtime.cc): a pod that
// Succeeded completed (a sample of its queue), one the engine disrupted is never a sample, a
// vanished one is unknown, one deleted while it ran is cancelled, a runtime-limit eviction is a
// timeout (its whole limit); a Slurm job ends as its FinishedJob says. With a learned ratio a
// preemptible job that does not checkpoint fills a perishable window its corrected runtime fits;
// without enough samples it does not, and non-preemptible work never does by an estimate.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include <gtest/gtest.h>

#include "core/api/duration.h"
#include "engine/engine.h"
#include "engine/maintenance.h"
#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;
using testing::SlurmMember;

class RuntimeTest : public testing::EngineFixture {
 protected:
  static PodInfo Pod(const std::string& name, bool preemptible, const std::string& limit, const std::string& gang = "",
                     int size = 1) {
    PodInfo p = GangPod(name, gang, size);
    if (preemptible) p.labels[kLabelPreemptible] = "true";
    if (!limit.empty()) p.annotations[kLabelRuntimeLimit] = limit;
    return p;
  }
  static PodInfo Running(PodInfo p, const std::string& node, int64_t start) { return testing::RunningOn(std::move(p), node, start); }
  // Pod `name` declaring `limit` ran ran_s on n1 and ended in `phase`.
  void Ended(const std::string& name, const std::string& limit, int64_t ran_s, PodPhase phase = PodPhase::kSucceeded) {
    PodInfo p = Running(Pod(name, false, limit), "n1", now_ - ran_s);
    ASSERT_TRUE(Add({p}).ok());
    p.phase = phase;
    ASSERT_TRUE(Add({p}).ok());
  }
  double Finished(const std::string& door, const std::string& end) {
    return metrics_.finished_workloads.With({door, end}).Value();
  }
  // Explain's "runtime:" line of a pending probe declaring 1 h (preemptible or not).
  std::string RuntimeLine(bool preemptible = true) {
    const std::string name = preemptible ? "probe" : "rigid-probe";
    EXPECT_TRUE(Add({Pod(name, preemptible, "1h")}).ok());
    std::string text;
    EXPECT_TRUE(engine_->Explain("team/" + name, &text).ok());
    const size_t at = text.find("runtime: ");
    return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at);
  }
  double Ratio(const std::string& queue) {
    for (const auto& r : engine_->Gauges().runtime_correction) {
      if (r.labels == std::vector<std::string>{queue}) return r.value;
    }
    return -1;
  }
  void MakeWith(const std::string& yaml) {
    auto cfg = ParseEngineConfig(yaml, "engine.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    Make(*cfg);
  }
  Status SlurmSync(SyncBatch b) {
    b.door = FrontDoor::kSlurm;
    for (auto& p : b.upsert_pods) p.door = FrontDoor::kSlurm;
    return Sync(b);
  }
  // Slurm job `job` (declaring 1 h) ran ran_s on n2; its member goes and jobcomp says `end`.
  void SlurmEnded(const std::string& job, int64_t ran_s, WorkloadEnd end) {
    PodInfo m = SlurmMember(job, 0, 1, "default", 8, "n2");
    m.annotations[kLabelRuntimeLimit] = "1h";
    m.start_unix = now_ - ran_s;
    SyncBatch up;
    up.upsert_pods = {m};
    ASSERT_TRUE(SlurmSync(up).ok());
    SyncBatch gone;
    gone.delete_pods = {m.uid};
    gone.finished = {{"slurm/" + job, now_ - ran_s, now_, 1, 8, end}};
    ASSERT_TRUE(SlurmSync(gone).ok());
  }
};

TEST_F(RuntimeTest, APodThatSucceededCompletedAndTeachesItsQueue) {
  Ended("a", "1h", 900);
  EXPECT_EQ(Finished("kubernetes", "completed"), 1);
  EXPECT_EQ(RuntimeLine(), "runtime: declared 1h; queue default has 1 of the 20 completed jobs it needs to learn a runtime correction");
  Ended("b", "", 900);
  EXPECT_EQ(Finished("kubernetes", "completed"), 2);
  EXPECT_NE(RuntimeLine().find("has 1 of the 20"), std::string::npos) << "no declared runtime: nothing to learn";
  Ended("c", "1h", 900, PodPhase::kFailed);
  EXPECT_EQ(Finished("kubernetes", "failed"), 1);
  EXPECT_NE(RuntimeLine().find("has 1 of the 20"), std::string::npos) << "a failed run is no sample";
}

TEST_F(RuntimeTest, WorkTheEngineDisruptedIsNeverASample) {
  ASSERT_TRUE(Add({Running(Pod("victim", true, "1h"), "n1", now_ - 60)}).ok());
  engine_->Drain({"n1"}, now_, false);
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kEvict);
  // The eviction ends it: its short run (60 s of 1 h) must not teach the queue its jobs are short.
  PodInfo done = Running(Pod("victim", true, "1h"), "n1", now_ - 60);
  done.phase = PodPhase::kSucceeded;
  ASSERT_TRUE(Add({done}).ok());
  EXPECT_EQ(Finished("kubernetes", "disrupted"), 1);
  EXPECT_EQ(Finished("kubernetes", "completed"), 0);
  EXPECT_NE(RuntimeLine().find("has 0 of the 20"), std::string::npos);
}

TEST_F(RuntimeTest, VanishedIsUnknownAndDeletedWhileRunningIsCancelled) {
  ASSERT_TRUE(Add({Running(Pod("lost", false, "1h"), "n1", now_ - 60)}).ok());
  SyncBatch v;
  v.vanished_pods = {"uid-lost"};
  ASSERT_TRUE(Sync(v).ok());
  EXPECT_EQ(Finished("kubernetes", "unknown"), 1) << "unknown is never completed";
  ASSERT_TRUE(Add({Running(Pod("killed", false, "1h"), "n1", now_ - 60)}).ok());
  ASSERT_TRUE(Delete({"uid-killed"}).ok());
  EXPECT_EQ(Finished("kubernetes", "cancelled"), 1);
  PodInfo going = Running(Pod("going", false, "1h"), "n1", now_ - 60);
  ASSERT_TRUE(Add({going}).ok());
  going.terminating = true;
  ASSERT_TRUE(Add({going}).ok());
  going.phase = PodPhase::kSucceeded;  // exited 0 on SIGTERM: its run was still cut short
  ASSERT_TRUE(Add({going}).ok());
  EXPECT_EQ(Finished("kubernetes", "cancelled"), 2);
  EXPECT_EQ(Finished("kubernetes", "completed"), 0);
  EXPECT_NE(RuntimeLine().find("has 0 of the 20"), std::string::npos);
}

TEST_F(RuntimeTest, ARuntimeLimitEvictionIsATimeoutThatUsedItsWholeLimit) {
  MakeWith("perishable: {runtimeCorrection: {minSamples: 1}}\n");
  ASSERT_TRUE(Add({Running(Pod("long", false, "10m"), "n1", now_)}).ok());
  now_ += 600 + 61;  // past its limit and the grace
  ASSERT_EQ(Poll().size(), 1u);
  ASSERT_TRUE(Delete({"uid-long"}).ok());
  EXPECT_EQ(Finished("kubernetes", "timeout"), 1);
  EXPECT_DOUBLE_EQ(Ratio("default"), 1.0);
}

TEST_F(RuntimeTest, AGangEndsWhenItsLastMemberDoes) {
  PodInfo a = Running(Pod("g0", false, "1h", "g", 2), "n1", now_ - 600);
  PodInfo b = Running(Pod("g1", false, "1h", "g", 2), "n2", now_ - 600);
  ASSERT_TRUE(Add({a, b}).ok());
  a.phase = PodPhase::kSucceeded;
  ASSERT_TRUE(Add({a}).ok());
  EXPECT_EQ(Finished("kubernetes", "completed"), 0) << "g1 still runs";
  now_ += 300;
  b.phase = PodPhase::kSucceeded;
  ASSERT_TRUE(Add({b}).ok());
  EXPECT_EQ(Finished("kubernetes", "completed"), 1) << "one workload";
}

TEST_F(RuntimeTest, ASlurmJobEndsAsItsFinishedJobSays) {
  MakeWith("perishable: {runtimeCorrection: {minSamples: 1}}\n");
  SlurmEnded("7", 900, WorkloadEnd::kCompleted);
  EXPECT_EQ(Finished("slurm", "completed"), 1);
  EXPECT_DOUBLE_EQ(Ratio("default"), 0.25);
  SlurmEnded("8", 60, WorkloadEnd::kDisrupted);  // PREEMPTED: a short run, no sample
  EXPECT_EQ(Finished("slurm", "disrupted"), 1);
  EXPECT_DOUBLE_EQ(Ratio("default"), 0.25);
  SlurmEnded("9", 3600, WorkloadEnd::kTimeout);
  EXPECT_EQ(Finished("slurm", "timeout"), 1);
  EXPECT_DOUBLE_EQ(Ratio("default"), 1.0) << "p90 of {0.25, 1.0}";
  // The same record again (tidal-slurm re-read its jobcomp after a restart): counted once.
  SyncBatch again;
  again.finished = {{"slurm/9", now_ - 3600, now_, 1, 8, WorkloadEnd::kTimeout}};
  ASSERT_TRUE(SlurmSync(again).ok());
  EXPECT_EQ(Finished("slurm", "timeout"), 1);
  // A job the engine never knew, or an older door's record without an end state.
  SyncBatch unknown;
  unknown.finished = {{"slurm/99", now_ - 60, now_, 1, 8, WorkloadEnd::kCompleted}, {"slurm/98", now_ - 60, now_, 1, 8}};
  ASSERT_TRUE(SlurmSync(unknown).ok());
  EXPECT_EQ(Finished("slurm", "completed"), 2) << "counted";
  EXPECT_EQ(Finished("slurm", "unknown"), 1);
  EXPECT_DOUBLE_EQ(Ratio("default"), 1.0) << "but nothing to learn: no queue, no declared runtime";
}

TEST_F(RuntimeTest, ALearnedRatioLetsPreemptibleWorkFillAWindowItsCorrectedRuntimeFits) {
  MakeWith("perishable: {runtimeCorrection: {minSamples: 3, window: 10}}\n");
  const int64_t until = now_ + 1800;  // 30 min: shorter than the 1 h the jobs declare
  SyncBatch b;
  b.upsert_nodes = {Node(0)};
  b.upsert_nodes[0].annotations[kAnnotationAvailableUntil] = FormatUnixTime(until);
  for (int i = 1; i < 8; ++i) b.delete_nodes.push_back("n" + std::to_string(i));
  auto plan = [&](const std::string& name, bool preemptible) {
    EXPECT_TRUE(Add({Pod(name, preemptible, "1h")}).ok());
    PlanResult r = engine_->PlanPod("uid-" + name);
    if (r.status.ok()) (void)engine_->Unreserve("uid-" + name);
    return r.status.ok() ? r.node : "";
  };
  for (int i = 0; i < 2; ++i) Ended("done" + std::to_string(i), "1h", 900);  // 25% of their limit
  ASSERT_TRUE(Sync(b).ok());
  EXPECT_EQ(plan("early", true), "") << "2 of 3 samples: no correction yet; it does not checkpoint (fill: checkpointing)";
  EXPECT_EQ(plan("rigid", false), "");
  // The third sample (on n0 before the window matters: n1 is gone) completes the minimum.
  PodInfo p = Running(Pod("done2", false, "1h"), "n0", now_ - 900);
  ASSERT_TRUE(Add({p}).ok());
  p.phase = PodPhase::kSucceeded;
  ASSERT_TRUE(Add({p}).ok());
  EXPECT_DOUBLE_EQ(Ratio("default"), 0.25);
  EXPECT_EQ(plan("filler", true), "n0") << "1 h x 0.25 = 15 min ends before the window does";
  EXPECT_EQ(plan("rigid2", false), "") << "not preemptible: only its declared 1 h counts";
  EXPECT_NE(RuntimeLine().find("used at most 25% of their limit (p90 of 3) -> expected 15m"), std::string::npos) << RuntimeLine();
  EXPECT_NE(RuntimeLine(false).find("not preemptible"), std::string::npos) << RuntimeLine(false);
  auto j = engine_->ExplainJson("team/probe");  // tidalctl explain's "Runtime:"
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_NE(j->value("runtime", "").find("-> expected 15m"), std::string::npos) << j->dump();
  // Still there near the close, it gets its notice like any filler (it is preemptible).
  ASSERT_TRUE(Add({Running(Pod("stays", true, "1h"), "n0", now_)}).ok());
  now_ = until - kDrainSlackS;
  bool told = false;
  for (const auto& a : Poll()) told = told || (a.pods.size() == 1 && a.pods[0].name == "stays" && a.cause == "window-end");
  EXPECT_TRUE(told);
}

TEST_F(RuntimeTest, TheSamplesSurviveARestartAndTheCorrectionCanBeTurnedOff) {
  MakeWith("perishable: {runtimeCorrection: {minSamples: 2}}\n");
  Ended("a", "1h", 900);
  Ended("b", "1h", 1800);
  EXPECT_DOUBLE_EQ(Ratio("default"), 0.5);
  const std::string saved = engine_->SaveLedger();
  MakeWith("perishable: {runtimeCorrection: {minSamples: 2}}\n");
  EXPECT_DOUBLE_EQ(Ratio("default"), -1) << "a new engine knows nothing";
  ASSERT_TRUE(engine_->LoadLedger(saved).ok());
  EXPECT_DOUBLE_EQ(Ratio("default"), 0.5) << "restored from the state file";
  MakeWith("perishable: {runtimeCorrection: false}\n");
  ASSERT_TRUE(engine_->LoadLedger(saved).ok());
  EXPECT_DOUBLE_EQ(Ratio("default"), -1) << "runtimeCorrection: false";
  EXPECT_NE(RuntimeLine().find("no runtime correction"), std::string::npos) << RuntimeLine();
  auto bad = ParseEngineConfig("perishable: {runtimeCorrection: {quantile: 2}}", "engine.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("perishable.runtimeCorrection.quantile: must be in (0, 1]"), std::string::npos)
      << bad.status().ToString();
}

// A borrower the engine evicted because its owner pool reclaimed the node: its run was as long
// as the owner allowed, so it is disrupted and never a sample, whatever phase it ends in.
TEST(RuntimeReclaim, ABorrowerEvictedByReclaimIsDisruptedNeverASample) {
  int64_t now = 100000;
  metrics::Registry registry;
  EngineMetrics metrics(registry);
  auto cfg = ParseEngineConfig("queues:\n  - name: batch\n    weight: 1\n  - name: hpc\n    weight: 1\n"
                               "pools:\n  slurm: {idleSeconds: 60, graceCapSeconds: 30}\n"
                               "perishable: {runtimeCorrection: {minSamples: 1}}\n",
                               "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto e = Engine::Create(*cfg, [&now] { return now; });
  ASSERT_TRUE(e.ok());
  Engine& engine = **e;
  engine.SetObservability(&metrics, nullptr);
  auto sync = [&engine](SyncBatch b, FrontDoor door) {
    b.door = door;
    for (auto& p : b.upsert_pods) p.door = door;
    uint64_t gen = 0;
    return engine.Sync(b, &gen);
  };
  for (FrontDoor door : {FrontDoor::kKubernetes, FrontDoor::kSlurm}) {  // Slurm's nodes, both doors report them
    SyncBatch b;
    b.resync = true;
    for (const char* n : {"s0", "s1"}) {
      b.upsert_nodes.push_back(testing::GpuNode(n, "l0", std::string("v-") + n));
      b.upsert_nodes.back().labels["tidal.dev/pool"] = "slurm";
    }
    ASSERT_TRUE(sync(b, door).ok());
  }
  PodInfo p = GangPod("borrower", "", 1);
  p.labels[kLabelQueue] = "batch";
  p.labels[kLabelPreemptible] = "true";
  p.annotations[kLabelRuntimeLimit] = "1h";
  SyncBatch add;
  add.upsert_pods = {p};
  ASSERT_TRUE(sync(add, FrontDoor::kKubernetes).ok());
  EXPECT_FALSE(engine.PlanPod(p.uid).status.ok()) << "Slurm's node: not lent yet";
  engine.Disruptions(FrontDoor::kKubernetes);
  now += 60;
  engine.Disruptions(FrontDoor::kKubernetes);
  PlanResult plan = engine.PlanPod(p.uid);
  ASSERT_TRUE(plan.status.ok()) << plan.status.ToString();
  p.node_name = plan.node;
  p.phase = PodPhase::kRunning;
  p.start_unix = now;
  add.upsert_pods = {p};
  ASSERT_TRUE(sync(add, FrontDoor::kKubernetes).ok());
  now += 600;
  SyncBatch job;  // Slurm's 2-node job wants both its nodes back
  for (int i = 0; i < 2; ++i) job.upsert_pods.push_back(SlurmMember("7", i, 2, "hpc"));
  ASSERT_TRUE(sync(job, FrontDoor::kSlurm).ok());
  engine.Admit(FrontDoor::kSlurm, 0);
  bool evicted = false;
  for (int i = 0; i < 4 && !evicted; ++i, now += 30) {
    for (const auto& a : engine.Disruptions(FrontDoor::kKubernetes)) {
      evicted = evicted || (a.cause == "reclaim" && a.kind == DisruptionAction::Kind::kEvict);
    }
  }
  ASSERT_TRUE(evicted);
  p.phase = PodPhase::kSucceeded;  // it exited 0 on its SIGTERM
  add.upsert_pods = {p};
  ASSERT_TRUE(sync(add, FrontDoor::kKubernetes).ok());
  EXPECT_EQ(metrics.finished_workloads.With({"kubernetes", "disrupted"}).Value(), 1);
  EXPECT_EQ(metrics.finished_workloads.With({"kubernetes", "completed"}).Value(), 0);
  EXPECT_TRUE(engine.Gauges().runtime_correction.empty()) << "no sample";
}

TEST(WorkloadEnds, ItsMemoryIsBounded) {
  WorkloadEnds e;
  for (size_t i = 0; i < WorkloadEnds::kMaxSeen; ++i) ASSERT_TRUE(e.FirstFinish("slurm/" + std::to_string(i), 100));
  EXPECT_FALSE(e.FirstFinish("slurm/0", 100)) << "seen";
  EXPECT_TRUE(e.FirstFinish("slurm/0", 200)) << "another run of the same job (requeued)";
  EXPECT_TRUE(e.FirstFinish("slurm/0", 100)) << "the oldest record was forgotten";
  EXPECT_FALSE(e.FirstFinish("slurm/2", 100)) << "a newer one is still remembered";
  for (size_t i = 0; i <= WorkloadEnds::kMaxOpen / 2; ++i) e.open["g" + std::to_string(i)].touched_s = 1000;
  e.open["fresh"].touched_s = 1000 + WorkloadEnds::kForgetAfterS;
  e.Prune(1000 + WorkloadEnds::kForgetAfterS + 1);
  ASSERT_EQ(e.open.size(), 1u) << "gangs untouched for a day are forgotten";
  EXPECT_TRUE(e.open.count("fresh"));
}

}  // namespace
}  // namespace tidal
