// Explain as a researcher reads it (engine/engine_views.cc, engine/explain_text.cc): why a gang
// waits, in the same words as its pods' events, never a time in the past worded as the future,
// never a dry-run artefact ("t=UNIX", the workload id "plan:KEY", "0 free GPUs" of nodes left out);
// what a preempted workload and its preemptor are told; the quota line without queues.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/explain_text.h"
#include "test/support/engine_objects.h"

namespace tidal {
namespace {

using testing::GangPod;
using testing::GpuNode;
using testing::RunningOn;

class ExplainWaitsTest : public ::testing::Test {
 protected:
  void Start(const std::string& yaml, const std::vector<NodeInfo>& extra = {}, int nodes = 8) {
    EngineConfig cfg;
    if (!yaml.empty()) {
      auto c = ParseEngineConfig(yaml, "t.yaml");
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      cfg = *c;
    }
    auto e = Engine::Create(std::move(cfg), [this] { return now_; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    SyncBatch b;
    b.resync = true;
    for (int i = 0; i < nodes; ++i) {
      b.upsert_nodes.push_back(GpuNode("n" + std::to_string(i), "l" + std::to_string(i / 4), "v" + std::to_string(i / 2)));
    }
    for (const auto& n : extra) b.upsert_nodes.push_back(n);
    ASSERT_TRUE(Sync(b).ok());
  }
  Status Sync(const SyncBatch& b) {
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  Status Add(std::vector<PodInfo> pods) {
    SyncBatch b;
    b.upsert_pods = std::move(pods);
    return Sync(b);
  }
  // Node i busy with a bound 8-GPU pod declared to run (i + 1) h from now_ - 10.
  Status Fill(const std::string& queue = "") {
    std::vector<PodInfo> pods;
    for (int i = 0; i < 8; ++i) {
      PodInfo p = GangPod("busy" + std::to_string(i), "", 1);
      p.annotations[kLabelRuntimeLimit] = std::to_string(i + 1) + "h";
      if (!queue.empty()) p.labels[kLabelQueue] = queue;
      pods.push_back(RunningOn(p, "n" + std::to_string(i), now_ - 10));
    }
    return Add(pods);
  }
  nlohmann::json Json(const std::string& name) {
    auto j = engine_->ExplainJson(name);
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    return j.ok() ? *j : nlohmann::json{};
  }
  std::string Text(const std::string& name) {
    std::string t;
    EXPECT_TRUE(engine_->Explain(name, &t).ok());
    return t;
  }
  int64_t now_ = 100000;
  std::unique_ptr<Engine> engine_;
};

// Regression: explain's "why" (the dry run's) said "reserved to start at t=107190 (in 7190s)"
// while the events, "last" and tidalctl's Reserved line say "in 1h59m50s (T)"; and a reservation
// whose start had passed (due, its nodes still busy) read "reserved to start in 0s (T)" with T an
// hour ago. Both are worded as the events are, a past start as "1h15s ago (T)".
TEST_F(ExplainWaitsTest, ReservedStartsAreWordedAsTheEventsAndNeverInThePastAsFuture) {
  Start("");
  ASSERT_TRUE(Fill().ok());
  PodInfo a = GangPod("r0", "pair", 2), b = GangPod("r1", "pair", 2);
  a.annotations[kLabelRuntimeLimit] = b.annotations[kLabelRuntimeLimit] = "1h";
  ASSERT_TRUE(Add({a, b}).ok());
  const std::string event = engine_->PlanPod("uid-r0").status.ToString();
  EXPECT_NE(event.find("reserved to start in 1h59m50s (1970-01-02T05:46:30Z) on 2 node(s)"), std::string::npos) << event;
  nlohmann::json j = Json("team/pair");
  EXPECT_EQ(j["why"], "the cluster has room for 0 of 2 members of 8 GPU now (0 free GPUs); preemption: no eligible victims: 8 "
                      "running workload(s) started less than minRuntime (5m) ago and may not be preempted yet; reserved to "
                      "start in 1h59m50s (1970-01-02T05:46:30Z) on 2 node(s)") << j.dump();
  EXPECT_EQ(ExplainRecordText(j, 0).find("t="), std::string::npos) << ExplainRecordText(j, 0);

  now_ += 3 * 3600 + 5;  // the start passed 1h15s ago; its nodes' pods outran their limits
  const std::string text = Text("team/pair");
  EXPECT_NE(text.find("reservation: reserved to start 1h15s ago (1970-01-02T05:46:30Z) on 2 node(s)\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("in 0s"), std::string::npos) << text;
  j = Json("team/pair");
  const std::string record = ExplainRecordText(j, 0);
  EXPECT_NE(record.find("Reserved:  1h15s ago (1970-01-02T05:46:30Z) on 2 node(s)\n"), std::string::npos) << record;
  EXPECT_EQ(ReservedStartInWords(100, 100), "now (1970-01-01T00:01:40Z)");
  EXPECT_EQ(WordReservedStarts("x; reserved to start at t=160 (in 60s) on 1 node(s)", 100),
            "x; reserved to start in 1m (1970-01-01T00:02:40Z) on 1 node(s)");
}

// Regression: the FailedScheduling event of a gang that waits behind another queue's gang said
// "fair share: queue qb is further below its share than qa; its gang team/gb was planned first",
// but explain's "last" stopped before it, leaving only "0 free GPUs": the user never learned who
// took the room. "last" now carries the event's notes.
TEST_F(ExplainWaitsTest, LastNamesTheFairShareGangPlannedFirstAsTheEventDoes) {
  Start("queues:\n  - {name: qa}\n  - {name: qb}\n");
  std::vector<PodInfo> pods;
  for (int i = 0; i < 6; ++i) {
    PodInfo p = GangPod("ra" + std::to_string(i), "", 1);
    p.labels[kLabelQueue] = "qa";
    pods.push_back(RunningOn(p, "n" + std::to_string(i), now_ - 10));
  }
  for (const char* n : {"wa0", "wa1"}) {
    PodInfo p = GangPod(n, "ga", 2);
    p.labels[kLabelQueue] = "qa";
    p.creation_unix = now_ - 100;  // submitted first
    pods.push_back(p);
  }
  for (const char* n : {"wb0", "wb1"}) {
    PodInfo p = GangPod(n, "gb", 2);
    p.labels[kLabelQueue] = "qb";
    p.creation_unix = now_;
    pods.push_back(p);
  }
  ASSERT_TRUE(Add(pods).ok());
  const std::string event = engine_->PlanPod("uid-wa0").status.ToString();
  const std::string note = "fair share: queue qb is further below its share than qa; its gang team/gb was planned first";
  ASSERT_NE(event.find(note), std::string::npos) << event;
  EXPECT_NE(Json("team/ga")["last"].get<std::string>().find(note), std::string::npos) << Json("team/ga").dump();
  EXPECT_NE(Text("team/ga").find(note), std::string::npos) << Text("team/ga");
  // The same decision again: still noted, and the decision's words did not change.
  (void)engine_->PlanPod("uid-wa0");
  const std::string last = Json("team/ga")["last"];
  EXPECT_EQ(last.find(note), last.rfind(note)) << "noted once: " << last;
}

// Regression: a pod being reclaimed (under notice) was explained as "running" with a blank last
// line: nothing said it was being taken off GPUs, by whom, for which queue, or by when. Its
// preemptor's explain did not say it waits for victims either. Now the victim has "disruption"
// (cause, the preemptor, the queues, the deadline) and the preemptor "preempting" (its victims).
TEST_F(ExplainWaitsTest, AReclaimedPodAndItsPreemptorSayWhoTakesWhatAndWhen) {
  Start("queues:\n  - {name: hi, nominal: {gpus: 64}}\n  - {name: lo, nominal: {gpus: 0}, borrowingLimit: {gpus: 64}}\n");
  std::vector<PodInfo> pods;
  for (int i = 0; i < 8; ++i) {
    PodInfo p = GangPod("lo" + std::to_string(i), "", 1);
    p.labels[kLabelQueue] = "lo";
    p.annotations[kLabelCheckpointOnNotice] = "60s";
    pods.push_back(RunningOn(p, "n" + std::to_string(i), now_ - 1000));
  }
  PodInfo h = GangPod("h", "", 1);
  h.labels[kLabelQueue] = "hi";
  pods.push_back(h);
  ASSERT_TRUE(Add(pods).ok());
  ASSERT_FALSE(engine_->PlanPod("uid-h").status.ok());
  const PreemptResult pr = engine_->Preempt("uid-h");
  ASSERT_TRUE(pr.status.ok()) << pr.status.ToString();
  ASSERT_EQ(pr.victim_gangs.size(), 1u);
  const std::string victim = pr.victim_gangs[0].first;

  nlohmann::json j = Json(victim);
  EXPECT_EQ(j["state"], "running") << j.dump();
  ASSERT_TRUE(j.contains("disruption")) << j.dump();
  EXPECT_EQ(j["disruption"]["cause"], "reclaim");
  EXPECT_EQ(j["disruption"]["deadline_unix"], now_ + 60);
  EXPECT_EQ(j["disruption"]["why"], "reclaim: preempted for team/pod/h (reclaim); queue hi reclaims quota from queue lo; notice: "
                                    "evicted at the latest in 1m (1970-01-02T03:47:40Z) (a checkpoint reported in "
                                    "tidal.dev/last-checkpoint ends it sooner)") << j.dump();
  const std::string record = ExplainRecordText(j, 0);
  EXPECT_NE(record.find("Disrupted: reclaim: preempted for team/pod/h"), std::string::npos) << record;
  EXPECT_EQ(record.find("Last:"), std::string::npos) << "no blank Last line for a pod never tried: " << record;
  EXPECT_NE(Text(victim).find("\ndisruption: reclaim: preempted for team/pod/h"), std::string::npos) << Text(victim);
  EXPECT_EQ(Text(victim).find("last:"), std::string::npos) << Text(victim);

  j = Json("team/h");
  ASSERT_TRUE(j.contains("preempting")) << j.dump();
  EXPECT_EQ(j["preempting"]["victims"], nlohmann::json::array({victim})) << j.dump();
  EXPECT_NE(j["preempting"]["why"].get<std::string>().find("reclaim of 1 workload(s) (" + victim + ") chosen now"), std::string::npos)
      << j.dump();
  EXPECT_NE(Text("team/h").find("\npreempting: reclaim of 1 workload(s)"), std::string::npos) << Text("team/h");
}

// Regression: with no queues configured (no quota anywhere) every explain said "quota: queue
// default is not configured", which reads as the reason the pod waits.
TEST_F(ExplainWaitsTest, WithoutQueuesTheQuotaLineSaysNoQuotaApplies) {
  Start("");
  ASSERT_TRUE(Add({GangPod("solo", "", 1)}).ok());
  EXPECT_EQ(Json("team/solo")["quota"], "no queues configured: no quota applies (queue default)");
  EXPECT_NE(Text("team/solo").find("quota: no queues configured: no quota applies (queue default)\n"), std::string::npos);
}

// Regression: the dry run's "why" of a gang whose nodes all close before it would end (a
// maintenance window) said "room for 0 of 1 members ... (0 free GPUs)" of an idle cluster (closing
// nodes take no reservation in the dry run); of an incomplete gang it named the workload id
// "gang plan:team/four". It now says which nodes it left out, and names the gang by its key; a
// gang that can never be placed as asked has "ETA: never" in tidalctl's record, not "unknown".
TEST_F(ExplainWaitsTest, DryRunWhyNamesWhatItLeftOutAndNoInternalIds) {
  Start("maintenance:\n  windows:\n    - {name: fw, selector: {topology.tidal.dev/block: b0}, start: 103600, duration: 4h}\n");
  PodInfo p = GangPod("long", "", 1);
  p.annotations[kLabelRuntimeLimit] = "2h";
  ASSERT_TRUE(Add({p, GangPod("w0", "four", 4)}).ok());
  ASSERT_FALSE(engine_->PlanPod("uid-long").status.ok());
  nlohmann::json j = Json("team/long");
  EXPECT_NE(j["why"].get<std::string>().find(
                "the dry run leaves out 8 node(s) that close (a drain, a maintenance window or a perishable window's end)"),
            std::string::npos)
      << j.dump();
  j = Json("team/four");
  EXPECT_EQ(j["why"].get<std::string>().find("plan:"), std::string::npos) << j.dump();
  EXPECT_NE(j["why"].get<std::string>().find("gang team/four: "), std::string::npos) << j.dump();

  Start("");
  std::vector<PodInfo> big;
  for (int i = 0; i < 3; ++i) {
    PodInfo m = GangPod("m" + std::to_string(i), "big", 3);
    m.annotations[kLabelTopologyRequired] = "nvlink";
    big.push_back(m);
  }
  ASSERT_TRUE(Add(big).ok());
  j = Json("team/big");
  ASSERT_EQ(j["would"], "Rejected") << j.dump();
  EXPECT_NE(ExplainRecordText(j, 0).find("ETA:       never, as asked (see Why)\n"), std::string::npos) << ExplainRecordText(j, 0);
}

// Regression: tidalctl queues printed a parent queue over its nominal (research: 40 of 32 GPUs,
// its child team-a borrowing) with BORROWED 0 and PENDING 0: the ledger's borrowed charges are its
// leaves', so the parent read as borrowing nothing. The table now has OVER (GPUs above nominal now,
// parents too) and shows "-" where a parent has no value of its own (BORROWED, PENDING, doors).
TEST(QueuesTable, AParentOverItsNominalShowsItAndNoBorrowedOfItsOwn) {
  const nlohmann::json queues = nlohmann::json::parse(R"([
    {"queue": "research", "usage": {"gpus": 40}, "nominal": {"gpus": 32}, "borrowed": {"gpus": 0}, "share": 0.3125},
    {"queue": "team-a", "usage": {"gpus": 40}, "nominal": {"gpus": 16}, "borrowed": {"gpus": 16}, "share": 0.3125,
     "pending": {"batch": 1, "training": 0}, "door_gpus": {"kubernetes": 32, "slurm": 8}},
    {"queue": "open", "usage": {"gpus": 8}, "borrowed": {"gpus": 0}, "share": 0.1, "pending": {}, "door_gpus": {"kubernetes": 8, "slurm": 0}}
  ])");
  const std::string t = QueuesTable(queues);
  EXPECT_NE(t.find("QUEUE               GPUS    NOMINAL  OVER   BORROWED  SHARE   PENDING  K8S-GPUS  SLURM-GPUS\n"), std::string::npos) << t;
  EXPECT_NE(t.find("research            40      32       8      -         0.312   -        -         -\n"), std::string::npos) << t;
  EXPECT_NE(t.find("team-a              40      16       24     16        0.312   1        32        8\n"), std::string::npos) << t;
  EXPECT_NE(t.find("open                8       -        -      0         0.100   0        8         0\n"), std::string::npos) << t;
}

// Regression: with queues configured, tidalctl queues listed a row "default" of dashes (the pending
// series of pods without a queue key), even with nothing waiting there, and never its pending count.
// It is now left out while nothing waits, and otherwise says the queue is not configured.
TEST(QueuesTable, AQueueTheConfigDoesNotNameShowsOnlyWhileWorkWaitsThere) {
  auto queues = nlohmann::json::parse(R"([
    {"queue": "default", "pending": {"batch": 0, "training": 0}},
    {"queue": "qa", "usage": {"gpus": 0}, "nominal": {"gpus": 8}, "borrowed": {"gpus": 0}, "share": 0, "pending": {},
     "door_gpus": {"kubernetes": 0, "slurm": 0}}
  ])");
  std::string t = QueuesTable(queues);
  EXPECT_EQ(t.find("default"), std::string::npos) << t;
  EXPECT_NE(t.find("qa "), std::string::npos) << t;
  queues[0]["pending"]["batch"] = 3;
  t = QueuesTable(queues);
  EXPECT_NE(t.find("default (not configured)"), std::string::npos) << t;
  EXPECT_NE(t.find("3        -         -\n"), std::string::npos) << t;
  EXPECT_EQ(t.find("no queues configured"), std::string::npos) << t;
  // No queues at all: the table says so rather than standing empty.
  t = QueuesTable(nlohmann::json::parse(R"([{"queue": "default", "pending": {"batch": 0}}])"));
  EXPECT_NE(t.find("(no queues configured: every pod is in queue default, and no quota applies)"), std::string::npos) << t;
}

}  // namespace
}  // namespace tidal
