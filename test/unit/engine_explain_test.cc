// Engine::ExplainJson's bounded dry run (engine/engine_views.cc): for a short queue the
// answer is the whole queue's; beyond ExplainOptions::max_ahead gangs ahead the queue is cut, the
// answer says it is an estimate, and the work (workloads given to the dry cycle, counted in
// LastExplainStats) stays bounded; queue order across queues follows fair share; gangs holding a
// book reservation are always in the dry run.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include "engine/engine.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/explain_text.h"
#include "test/support/engine_objects.h"

namespace tidal {
namespace {

using testing::GangPod;
using testing::GpuNode;

class EngineExplainTest : public ::testing::Test {
 protected:
  void Start(EngineConfig cfg = {}) {
    auto e = Engine::Create(std::move(cfg), [this] { return now_; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    SyncBatch b;
    b.resync = true;
    for (int i = 0; i < 8; ++i) {
      b.upsert_nodes.push_back(GpuNode("n" + std::to_string(i), "l" + std::to_string(i / 4), "v" + std::to_string(i / 2)));
    }
    ASSERT_TRUE(Sync(b).ok());
  }
  void SetUp() override { Start(); }
  Status Sync(const SyncBatch& b) {
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  Status AddPods(std::vector<PodInfo> pods) {
    SyncBatch b;
    b.upsert_pods = std::move(pods);
    return Sync(b);
  }
  // Every node full with a bound 8-GPU pod of `queue`; node i's pod ends 1 h x (i + 1) after t=1000.
  Status FillCluster(const std::string& queue = "") {
    std::vector<PodInfo> bound;
    for (int i = 0; i < 8; ++i) {
      PodInfo p = GangPod("busy" + std::to_string(i), "", 1);
      p.annotations[kLabelRuntimeLimit] = std::to_string(i + 1) + "h";
      if (!queue.empty()) p.labels[kLabelQueue] = queue;
      p.node_name = "n" + std::to_string(i);
      p.phase = PodPhase::kRunning;
      bound.push_back(p);
    }
    return AddPods(bound);
  }
  // `n` pending lone 8-GPU pods "<prefix>0".. submitted one second apart from `first_s`.
  Status AddLonePods(const std::string& prefix, int n, int64_t first_s, const std::string& queue = "") {
    std::vector<PodInfo> pods;
    for (int i = 0; i < n; ++i) {
      PodInfo p = GangPod(prefix + std::to_string(i), "", 1);
      p.creation_unix = first_s + i;
      p.annotations[kLabelRuntimeLimit] = "1h";
      if (!queue.empty()) p.labels[kLabelQueue] = queue;
      pods.push_back(p);
    }
    return AddPods(pods);
  }
  nlohmann::json Explain(const std::string& name, int32_t max_ahead) {
    engine_->SetExplainOptions(Engine::ExplainOptions{max_ahead});
    auto j = engine_->ExplainJson(name);
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    return j.ok() ? *j : nlohmann::json{};
  }
  int64_t now_ = 1000;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineExplainTest, ShortQueueIsAnsweredFromTheWholeQueue) {
  ASSERT_TRUE(FillCluster().ok());
  ASSERT_TRUE(AddPods({GangPod("a0", "first", 2), GangPod("a1", "first", 2)}).ok());
  ASSERT_TRUE(AddPods({GangPod("b0", "second", 2), GangPod("b1", "second", 2)}).ok());
  std::vector<PodInfo> later = {GangPod("c0", "third", 2), GangPod("c1", "third", 2)};
  for (auto& p : later) p.creation_unix = now_ + 10;  // submitted after the others (no time: first seen, now_)
  ASSERT_TRUE(AddPods(later).ok());
  const nlohmann::json j = Explain("team/second", 2000);
  EXPECT_EQ(j["state"], "pending") << j.dump();
  EXPECT_EQ(j["position"], 2) << j.dump();
  EXPECT_EQ(j["queue_length"], 3) << j.dump();
  EXPECT_EQ(j["would"], "Pending") << j.dump();
  // "first" holds n0 and n1 from when busy1 ends (1000 + 2 h) for the batch class's default hour;
  // "second" starts when it ends, on n2 (free from 1000 + 3 h) and one of them.
  EXPECT_EQ(j["eta_unix"], 1000 + 3 * 3600) << j.dump();
  EXPECT_EQ(j["estimate"], false) << j.dump();
  EXPECT_FALSE(j.contains("estimate_reason")) << j.dump();
  EXPECT_EQ(j["dry_run"]["cut"], false);
  const Engine::ExplainStats st = engine_->LastExplainStats();
  EXPECT_EQ(st.considered, 3);
  EXPECT_FALSE(st.cut);
  EXPECT_GE(st.total_ns, st.lock_held_ns);
  // The fields every caller reads are still there (tidalctl explain, docs/operations.md).
  for (const char* k : {"workload", "text", "queue", "class", "members", "last", "quota", "state", "position",
                        "queue_length", "would", "why", "eta_unix"}) {
    EXPECT_TRUE(j.contains(k)) << k << " missing in " << j.dump();
  }
}

TEST_F(EngineExplainTest, BoundedRunAgreesWithTheWholeQueueWhenNothingAheadIsCut) {
  ASSERT_TRUE(FillCluster().ok());
  ASSERT_TRUE(AddLonePods("p", 12, 100).ok());
  const nlohmann::json whole = Explain("team/pod/p2", 1000);
  EXPECT_EQ(engine_->LastExplainStats().considered, 12);
  // 12 pending gangs > max_ahead: only the two ahead of p2 and p2 itself are built.
  const nlohmann::json bounded = Explain("team/pod/p2", 4);
  const Engine::ExplainStats st = engine_->LastExplainStats();
  EXPECT_EQ(st.considered, 3);
  EXPECT_FALSE(st.cut);
  EXPECT_EQ(st.ahead, 2);
  for (const char* k : {"position", "queue_length", "would", "why", "eta_unix", "estimate"}) {
    EXPECT_EQ(bounded[k], whole[k]) << k << ": " << bounded.dump() << " vs " << whole.dump();
  }
  EXPECT_EQ(bounded["position"], 3);
  // p0 on n0 from 1000 + 1 h for an hour; at 1000 + 2 h n0 and n1 are free for p1 and p2.
  EXPECT_EQ(bounded["eta_unix"], 1000 + 2 * 3600) << bounded.dump();
}

TEST_F(EngineExplainTest, LongQueueIsCutAtMaxAheadAndSaysSo) {
  ASSERT_TRUE(FillCluster().ok());
  ASSERT_TRUE(AddLonePods("p", 30, 100).ok());
  const nlohmann::json j = Explain("team/pod/p29", 5);
  const Engine::ExplainStats st = engine_->LastExplainStats();
  EXPECT_EQ(st.considered, 6);  // the first 5 in queue order and the asked one: not 30
  EXPECT_TRUE(st.cut);
  EXPECT_EQ(st.ahead, 29);
  EXPECT_EQ(j["estimate"], true) << j.dump();
  EXPECT_EQ(j["dry_run"]["cut"], true) << j.dump();
  EXPECT_EQ(j["dry_run"]["considered"], 6) << j.dump();
  EXPECT_EQ(j["dry_run"]["max_ahead"], 5) << j.dump();
  EXPECT_EQ(j["position"], 30) << j.dump();  // counted from the pending index, exactly
  EXPECT_EQ(j["queue_length"], 30) << j.dump();
  EXPECT_NE(j["estimate_reason"].get<std::string>().find("first 5 of the 29 gangs ahead"), std::string::npos) << j.dump();
  EXPECT_NE(j["why"].get<std::string>().find("estimate:"), std::string::npos) << j.dump();
  // Optimistic: as if the 24 gangs left out took nothing. p0 starts at 1000 + 1 h, p1 and p2 at
  // 1000 + 2 h, and at 1000 + 3 h three nodes are free for p3, p4 and p29.
  EXPECT_EQ(j["eta_unix"], 1000 + 3 * 3600) << j.dump();
  // The whole queue: every gang ahead takes its node first.
  const nlohmann::json whole = Explain("team/pod/p29", 1000);
  EXPECT_EQ(whole["estimate"], false);
  EXPECT_EQ(whole["position"], 30);
  EXPECT_EQ(engine_->LastExplainStats().considered, 30);
  EXPECT_GT(whole["eta_unix"].get<int64_t>(), j["eta_unix"].get<int64_t>()) << whole.dump();
}

TEST_F(EngineExplainTest, QueueOrderFollowsFairShareAcrossQueues) {
  EngineConfig cfg;
  for (const char* q : {"qa", "qb"}) {
    QueueSpec s;
    s.name = q;
    cfg.queues.queues.push_back(s);
  }
  Start(std::move(cfg));
  // qa uses the whole cluster, so qb is further below its fair share and goes first, although
  // qa's gangs were submitted earlier.
  ASSERT_TRUE(FillCluster("qa").ok());
  ASSERT_TRUE(AddLonePods("a", 5, 100, "qa").ok());
  ASSERT_TRUE(AddLonePods("b", 5, 200, "qb").ok());
  const nlohmann::json whole = Explain("team/pod/a0", 1000);
  EXPECT_EQ(whole["position"], 6) << whole.dump();
  const nlohmann::json cut = Explain("team/pod/a0", 3);
  EXPECT_EQ(cut["position"], 6) << cut.dump();
  EXPECT_EQ(cut["estimate"], true) << cut.dump();
  EXPECT_EQ(engine_->LastExplainStats().considered, 4);
  const nlohmann::json b1 = Explain("team/pod/b1", 3);
  EXPECT_EQ(b1["position"], 2) << b1.dump();
  EXPECT_EQ(b1["estimate"], false) << b1.dump();
  EXPECT_EQ(b1["eta_unix"], Explain("team/pod/b1", 1000)["eta_unix"]);
}

TEST_F(EngineExplainTest, GangsHoldingAReservationAreAlwaysInTheDryRun) {
  ASSERT_TRUE(FillCluster().ok());
  // A pair that does not fit gets a reservation on n0 and n1 from 1000 + 2 h (PlanPod).
  PodInfo a = GangPod("r0", "pair", 2), b = GangPod("r1", "pair", 2);
  a.annotations[kLabelRuntimeLimit] = b.annotations[kLabelRuntimeLimit] = "1h";
  ASSERT_TRUE(AddPods({a, b}).ok());
  ASSERT_FALSE(engine_->PlanPod("uid-r0").status.ok());
  // A later, higher-priority pod running 10 h goes ahead of the pair in queue order but may not
  // delay its reservation: not n0 (free at 1000 + 1 h), so n2 at 1000 + 3 h.
  PodInfo t = GangPod("urgent", "", 1);
  t.priority = 10;
  t.creation_unix = 50;
  t.annotations[kLabelRuntimeLimit] = "10h";
  ASSERT_TRUE(AddPods({t}).ok());
  ASSERT_TRUE(AddLonePods("p", 4, 100).ok());
  const nlohmann::json whole = Explain("team/pod/urgent", 1000);
  EXPECT_EQ(whole["position"], 1) << whole.dump();
  EXPECT_EQ(whole["eta_unix"], 1000 + 3 * 3600) << whole.dump();
  const nlohmann::json bounded = Explain("team/pod/urgent", 2);
  EXPECT_EQ(engine_->LastExplainStats().considered, 2);  // urgent and the pair behind it
  EXPECT_EQ(bounded["eta_unix"], whole["eta_unix"]) << bounded.dump();
  EXPECT_EQ(bounded["estimate"], false) << bounded.dump();
}

TEST_F(EngineExplainTest, PlannedRunningAndUnknownAnswersAreUnchanged) {
  ASSERT_TRUE(AddPods({GangPod("solo", "", 1)}).ok());
  ASSERT_TRUE(engine_->PlanPod("uid-solo").status.ok());
  nlohmann::json j = Explain("team/solo", 5);  // a pod's name resolves to its gang
  EXPECT_EQ(j["workload"], "team/pod/solo") << j.dump();
  EXPECT_EQ(j["state"], "planned") << j.dump();
  EXPECT_FALSE(j.contains("position"));
  EXPECT_FALSE(engine_->ExplainJson("team/nothing").ok());
}

// Regression: a gang waiting for members (held by CheckPod before any plan) explained with an
// empty "last:" line; now it says how many members exist, as the pods' event does.
TEST_F(EngineExplainTest, AnIncompleteGangSaysHowManyMembersExist) {
  ASSERT_TRUE(AddPods({GangPod("w0", "four", 4), GangPod("w1", "four", 4)}).ok());
  const nlohmann::json j = Explain("team/four", 5);
  EXPECT_EQ(j["last"], "gang team/four: 2 of 4 members exist") << j.dump();
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/four", &text).ok());
  EXPECT_NE(text.find("last: gang team/four: 2 of 4 members exist\n"), std::string::npos) << text;
  // Once complete it is planned, and "last" is the planner's word again.
  ASSERT_TRUE(AddPods({GangPod("w2", "four", 4), GangPod("w3", "four", 4)}).ok());
  ASSERT_TRUE(engine_->PlanPod("uid-w0").status.ok());
  EXPECT_EQ(Explain("team/four", 5)["last"].get<std::string>().rfind("planned: ", 0), 0u);
}

// Regression (a real cluster's exploratory test, finding 4): a pod whose spec the engine refused
// is in no gang, and explain called it "pending and is not scheduled by tidal-scheduler"; JSON
// had no state (tidalctl printed a blank record). Now it is "invalid" with the engine's own error,
// a pod naming a PodGroup that does not exist is "waiting" with why, and another scheduler's pod
// says whose it is.
TEST_F(EngineExplainTest, APodWhoseSpecIsRefusedIsExplainedWithTheEnginesError) {
  PodInfo bad = GangPod("inv", "", 1);
  bad.labels[kLabelClass] = "notebok";
  PodInfo held = GangPod("pg", "", 1);
  held.annotations[kPodGroupName] = "nopg9";
  PodInfo other = GangPod("web", "", 1);
  other.scheduler_name = "default-scheduler";
  ASSERT_TRUE(AddPods({bad, held, other}).ok());

  nlohmann::json j = Explain("team/inv", 5);
  EXPECT_EQ(j["state"], "invalid") << j.dump();
  EXPECT_NE(j.value("reason", "").find("tidal.dev/class: invalid value \"notebok\" (accepted: "), std::string::npos) << j.dump();
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/inv", &text).ok());
  EXPECT_EQ(text, j["text"]) << text;
  EXPECT_EQ(text.rfind("pod team/inv is pending: tidal-scheduler refuses its spec: tidal.dev/class: invalid value", 0), 0u) << text;

  j = Explain("team/pg", 5);
  EXPECT_EQ(j["state"], "waiting") << j.dump();
  EXPECT_NE(j.value("reason", "").find("PodGroup nopg9 (spec.schedulingGroup.podGroupName) does not exist yet"), std::string::npos)
      << j.dump();
  EXPECT_NE(j.value("text", "").find("tidal-scheduler holds it: PodGroup nopg9"), std::string::npos) << j.dump();

  j = Explain("team/web", 5);
  EXPECT_EQ(j["state"], "other-scheduler") << j.dump();
  EXPECT_EQ(j["text"], "pod team/web is pending and is not scheduled by tidal-scheduler") << j.dump();
  EXPECT_EQ(j["reason"], "its spec.schedulerName is default-scheduler, not tidal-scheduler") << j.dump();
}

// Regression (finding 5): a gang whose members disagree on a key of the gang was explained from
// one member's spec ("would: Placed" with an ETA, or "2 of 3 required members have arrived") and
// the disagreement was never named. Now it is "invalid" with CheckPod's own words, and no ETA.
TEST_F(EngineExplainTest, AGangWhoseMembersDisagreeIsExplainedWithTheConflict) {
  ASSERT_TRUE(AddPods({GangPod("dis-0", "dis", 2, 1), GangPod("dis-1", "dis", 3, 1)}).ok());
  std::string gang;
  const Status refused = engine_->CheckPod("uid-dis-0", &gang);
  ASSERT_FALSE(refused.ok());
  for (const std::string name : {"team/dis", "team/dis-0", "team/dis-1"}) {
    const nlohmann::json j = Explain(name, 5);
    EXPECT_EQ(j["state"], "invalid") << j.dump();
    EXPECT_EQ(j.value("reason", ""), refused.Message()) << j.dump();
    EXPECT_NE(j.value("reason", "").find("disagree on tidal.dev/gang-size: "), std::string::npos) << j.dump();
    EXPECT_FALSE(j.contains("eta_unix") || j.contains("would") || j.contains("position")) << j.dump();
  }
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/dis", &text).ok());
  EXPECT_NE(text.find("\ninvalid: " + refused.Message() + "\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("last:"), std::string::npos) << text;
}

// Regression (finding 8): a member joining a running gang that requires an NVLink domain was told
// "node selector topology.tidal.dev/nvlink=v0 does not match", a selector the pod never set (the
// engine's pin to its running members' domain). Now the reason says the member joins its gang's domain.
TEST_F(EngineExplainTest, AMemberJoiningARunningGangIsToldItJoinsTheGangsDomain) {
  std::vector<PodInfo> pods;
  for (int i = 0; i < 4; ++i) {
    PodInfo p = GangPod("tr" + std::to_string(i), "tr", 4, 4);
    p.labels[kLabelGangMin] = "2";
    p.annotations[kLabelTopologyRequired] = "nvlink";
    if (i < 2) p = testing::RunningOn(p, "n" + std::to_string(i), 900);  // NVLink domain v0 (n0, n1)
    pods.push_back(p);
  }
  for (int i = 0; i < 2; ++i) {  // v0's other GPUs taken
    PodInfo b = GangPod("b" + std::to_string(i), "", 1, 4);
    b.scheduler_name = "default-scheduler";
    pods.push_back(testing::RunningOn(b, "n" + std::to_string(i), 900));
  }
  ASSERT_TRUE(AddPods(pods).ok());
  const std::string why = engine_->PlanPod("uid-tr2").status.ToString();
  EXPECT_EQ(why.find("node selector"), std::string::npos) << why;
  EXPECT_NE(why.find("not in gang team/tr's nvlink domain, where its running members are (topology.tidal.dev/"), std::string::npos)
      << why;
}

// Regression (finding 8): tidalctl explain printed reservation times as unix seconds
// ("ETA: t=1796652189"); it words them as the pods' events do, against the engine's clock. A
// refused pod's record names the reason; an answer without a state prints its text (never blank).
TEST(ExplainRecordText, WordsTimesAndNeverPrintsABlankRecord) {
  const nlohmann::json pending = {{"workload", "team/g"}, {"state", "pending"}, {"now_unix", 1000},
                                  {"eta_unix", 4598},     {"queue", "q"},       {"reservation", {{"start_unix", 4598}, {"nodes", 2}}}};
  const std::string t = ExplainRecordText(pending, 0);
  EXPECT_NE(t.find("ETA:       in 59m58s (1970-01-01T01:16:38Z)\n"), std::string::npos) << t;
  EXPECT_NE(t.find("Reserved:  in 59m58s (1970-01-01T01:16:38Z) on 2 node(s)\n"), std::string::npos) << t;
  EXPECT_EQ(t.find("t="), std::string::npos) << t;
  EXPECT_NE(ExplainRecordText({{"eta_unix", 900}}, 1000).find("ETA:       now (1970-01-01T00:15:00Z)"), std::string::npos);
  const std::string bad = ExplainRecordText({{"workload", "team/inv"}, {"state", "invalid"}, {"reason", "tidal.dev/class: bad"}}, 0);
  EXPECT_EQ(bad, "Workload:  team/inv\nState:     invalid\nReason:    tidal.dev/class: bad\n");
  const std::string old = ExplainRecordText({{"workload", ""}, {"text", "pod team/x is pending"}}, 0);
  EXPECT_NE(old.find("Text:      pod team/x is pending\n"), std::string::npos) << old;
}

// Every node's work ran past its declared limit (enforcement off): by the declared run times the
// pending gang should have started already, but it cannot until that work ends. Its ETA was worded
// "now", as if it were starting. Now the record says the work it waits for runs past its expected end.
TEST_F(EngineExplainTest, AnEtaThatPassedWhileTheWorkItWaitsForRunsOnIsNotNow) {
  EngineConfig cfg;
  cfg.enforce_runtime_limit = false;
  Start(cfg);
  ASSERT_TRUE(FillCluster().ok());
  now_ = 1000 + 10 * 3600;  // every busy pod is past its limit (1-8 h)
  ASSERT_TRUE(AddPods({GangPod("late0", "late", 2), GangPod("late1", "late", 2)}).ok());
  const nlohmann::json j = Explain("team/late", 2000);
  ASSERT_NE(j.value("would", ""), "Placed") << j.dump();
  ASSERT_TRUE(j["eta_unix"].is_number()) << j.dump();
  ASSERT_LE(j["eta_unix"].get<int64_t>(), now_) << j.dump();
  EXPECT_EQ(j.value("eta_overdue", false), true) << j.dump();
  const std::string t = ExplainRecordText(j, now_);
  EXPECT_EQ(t.find("ETA:       now"), std::string::npos) << t;
  EXPECT_NE(t.find("runs past its expected end"), std::string::npos) << t;
}

}  // namespace
}  // namespace tidal
