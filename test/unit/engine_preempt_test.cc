// Engine::Preempt / Engine::Evicted (engine/engine_preempt.cc): victims on the incrementally
// maintained preemption view, the reservation book honoured, freed capacity held for the
// preemptor, terminating and PDB-protected victims skipped, minRuntime from the pods' real start,
// and tidal_preemptions_total counting evictions the front door reports.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include "engine/engine.h"
#include "engine/observability.h"

#include <set>

#include <gtest/gtest.h>

#include "test/support/engine_objects.h"

namespace tidal {
namespace {

// 2 leaves (l0: n0-n3, l1: n4-n7) x 2 NVLink domains of 2 nodes each, 8 GPUs a node.
using testing::GangPod;
using testing::GpuNode;

// A bound, running, preemptible pod of priority 1 that the kubelet started at `start`.
PodInfo Running(PodInfo p, int node, int64_t start) {
  p.labels[kLabelPreemptible] = "true";
  p.priority = 1;
  p.node_name = "n" + std::to_string(node);
  p.phase = PodPhase::kRunning;
  p.start_unix = start;
  return p;
}

class PreemptTest : public ::testing::Test {
 protected:
  void SetUp() override { Make(EngineConfig{}); }
  void Make(const EngineConfig& cfg) {
    auto e = Engine::Create(cfg, [this] { return now_; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    engine_->SetObservability(&metrics_, nullptr);
    SyncBatch b;
    b.resync = true;
    for (int i = 0; i < 8; ++i) {
      b.upsert_nodes.push_back(GpuNode("n" + std::to_string(i), "l" + std::to_string(i / 4), "v" + std::to_string(i / 2)));
    }
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
  Status Delete(std::vector<std::string> uids) {
    SyncBatch b;
    b.delete_pods = std::move(uids);
    return Sync(b);
  }
  // Every node runs one lone preemptible 8-GPU pod "busy<i>", started at starts[i] (default 1000).
  void FillWithLonePods(std::vector<int64_t> starts = {}) {
    std::vector<PodInfo> pods;
    for (int i = 0; i < 8; ++i) {
      pods.push_back(Running(GangPod("busy" + std::to_string(i), "", 1), i, i < static_cast<int>(starts.size()) ? starts[i] : 1000));
    }
    ASSERT_TRUE(Add(pods).ok());
  }
  // Two preemptible 4-pod gangs: low-a on l0 (started at 5000), low-b on l1 (started at 1000).
  void FillWithTwoGangs() {
    std::vector<PodInfo> pods;
    for (int i = 0; i < 8; ++i) {
      pods.push_back(Running(GangPod("low" + std::to_string(i), i < 4 ? "low-a" : "low-b", 4), i, i < 4 ? 5000 : 1000));
    }
    ASSERT_TRUE(Add(pods).ok());
  }
  // A pending gang of `size` 8-GPU pods at `priority`, optionally topology-required.
  void AddPending(const std::string& gang, int size, int32_t priority, const std::string& level = "",
                  const std::string& runtime = "") {
    std::vector<PodInfo> pods;
    for (int i = 0; i < size; ++i) {
      PodInfo p = GangPod(gang + std::to_string(i), gang, size);
      p.priority = priority;
      if (!level.empty()) p.labels[kLabelTopologyRequired] = level;
      if (!runtime.empty()) p.annotations[kLabelRuntimeLimit] = runtime;
      p.creation_unix = now_ - 10;
      pods.push_back(p);
    }
    ASSERT_TRUE(Add(pods).ok());
  }
  static std::set<std::string> Names(const PreemptResult& r) {
    std::set<std::string> out;
    for (const auto& v : r.victims) out.insert(v.name);
    return out;
  }
  double Preemptions(const std::string& reason) { return metrics_.preemptions.With({reason}).Value(); }

  int64_t now_ = 10000;
  metrics::Registry registry_;
  EngineMetrics metrics_{registry_};
  std::unique_ptr<Engine> engine_;
};

TEST_F(PreemptTest, ChoosesAWholeLowPriorityGangInOneLeaf) {
  FillWithTwoGangs();
  AddPending("high", 4, 100, "leaf");
  ASSERT_EQ(engine_->PlanPod("uid-high0").status.code(), StatusCode::kUnschedulable);
  PreemptResult r = engine_->Preempt("uid-high0");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(Names(r), (std::set<std::string>{"low0", "low1", "low2", "low3"})) << "low-a lost least work; evicted whole";
  ASSERT_EQ(r.victim_gangs.size(), 1u);
  EXPECT_EQ(r.victim_gangs[0].first, "team/low-a");
  EXPECT_EQ(r.victim_gangs[0].second.size(), 4u);
  EXPECT_EQ(r.reason, "priority");
  EXPECT_EQ(r.nominated_domain, "b0/l0") << "a 4-node hold is reported as its domain, not a node";
}

TEST_F(PreemptTest, NeverTakesNonPreemptibleOrOtherSchedulersPods) {
  std::vector<PodInfo> pods;
  for (int i = 0; i < 8; ++i) {
    PodInfo p = Running(GangPod("busy" + std::to_string(i), "", 1), i, 1000);
    p.labels.erase(kLabelPreemptible);
    if (i % 2) p.scheduler_name = "default-scheduler";  // the rest: Tidal pods, not preemptible
    pods.push_back(p);
  }
  ASSERT_TRUE(Add(pods).ok());
  AddPending("urgent", 1, 1000);
  PreemptResult r = engine_->Preempt("uid-urgent0");
  EXPECT_FALSE(r.status.ok());
  EXPECT_TRUE(r.victims.empty());
}

// Bug: run time counted from the pod's creation, so a pod that queued for long was preempted the
// moment it started (minRuntime defeated).
TEST_F(PreemptTest, MinRuntimeCountsFromThePodsStartNotItsCreation) {
  std::vector<PodInfo> pods;
  for (int i = 0; i < 8; ++i) {
    PodInfo p = Running(GangPod("busy" + std::to_string(i), "", 1), i, now_ - 60);  // started a minute ago
    p.creation_unix = 0;                                                            // queued for hours
    pods.push_back(p);
  }
  ASSERT_TRUE(Add(pods).ok());
  AddPending("urgent", 1, 100);
  PreemptResult r = engine_->Preempt("uid-urgent0");
  EXPECT_TRUE(r.victims.empty()) << "ran 60 s < minRuntime 300 s: " << *Names(r).begin();
  now_ += 239;
  EXPECT_TRUE(engine_->Preempt("uid-urgent0").victims.empty()) << "ran 299 s";
  now_ += 1;
  EXPECT_EQ(engine_->Preempt("uid-urgent0").victims.size(), 1u);
}

TEST_F(PreemptTest, WithoutAStartTimeRunTimeCountsFromWhenTheEngineSawItBound) {
  std::vector<PodInfo> pods;
  for (int i = 0; i < 8; ++i) pods.push_back(Running(GangPod("busy" + std::to_string(i), "", 1), i, 0));
  ASSERT_TRUE(Add(pods).ok());  // seen bound at 10000, no status.startTime yet
  AddPending("urgent", 1, 100);
  now_ = 10000 + 299;
  EXPECT_TRUE(engine_->Preempt("uid-urgent0").victims.empty());
  now_ = 10000 + 300;
  EXPECT_EQ(engine_->Preempt("uid-urgent0").victims.size(), 1u);
}

// Bug: victims were chosen for capacity the preemptor could not use: a backfill reservation of
// another gang holds it.
TEST_F(PreemptTest, NoVictimsForCapacityTheReservationBookHolds) {
  // l0's pods end soon (started 9000, 30 m), l1's in hours (started 1000, 10 h): l0's lost least.
  std::vector<PodInfo> pods;
  for (int i = 0; i < 8; ++i) {
    PodInfo p = Running(GangPod("busy" + std::to_string(i), "", 1), i, i < 4 ? 9000 : 1000);
    p.annotations[kLabelRuntimeLimit] = i < 4 ? "30m" : "10h";
    pods.push_back(p);
  }
  ASSERT_TRUE(Add(pods).ok());
  // A leaf gang of the same priority (it cannot preempt) waits with a reservation on l0 at 10800.
  AddPending("big", 4, 1, "leaf", "1h");
  ASSERT_FALSE(engine_->PlanPod("uid-big0").status.ok());
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/big", &text).ok());
  ASSERT_NE(text.find("reservation: reserved to start in 13m20s"), std::string::npos) << text;
  // A 10 h pod of high priority would run past that start: l0's GPUs are not its to take.
  AddPending("urgent", 1, 100, "", "10h");
  PreemptResult r = engine_->Preempt("uid-urgent0");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.victims.size(), 1u);
  const int node = r.victims[0].name.back() - '0';
  EXPECT_GE(node, 4) << "victim " << r.victims[0].name << " frees an l0 node the reservation holds";
  EXPECT_EQ(r.nominated_domain, "n" + std::to_string(node)) << "a one-node hold nominates the node";
}

// Bug: a tidal.dev/last-checkpoint stamp from the future (a host clock hours fast, local time
// written as UTC) made its pod look like it would lose no work, so it was evicted first; it loses
// everything since its start. A stamp beyond the clock-skew allowance counts as none.
TEST_F(PreemptTest, AFutureCheckpointStampDoesNotMakeAPodTheCheapestVictim) {
  FillWithLonePods({1000, 1000, 1000, 1000, 1000, 2000, 1000, 1000});  // busy5 lost least
  PodInfo fast = Running(GangPod("busy2", "", 1), 2, 1000);
  fast.annotations[kLabelLastCheckpoint] = std::to_string(now_ + 2 * 3600);
  ASSERT_TRUE(Add({fast}).ok());
  AddPending("urgent", 1, 100);
  PreemptResult r = engine_->Preempt("uid-urgent0");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(Names(r), std::set<std::string>{"busy5"}) << "busy2 has run since 1000 and saved nothing";
}

// Bug: freed capacity was not held: while the victims terminated any other pod could take it, and
// the preemptor preempted again.
TEST_F(PreemptTest, FreedCapacityIsHeldForThePreemptorUntilItPlans) {
  FillWithLonePods({1000, 1000, 1000, 1000, 1000, 2000, 1000, 1000});  // busy5 lost least
  AddPending("urgent", 1, 100);
  PreemptResult r = engine_->Preempt("uid-urgent0");
  ASSERT_EQ(Names(r), std::set<std::string>{"busy5"});
  EXPECT_EQ(r.nominated_domain, "n5");
  ASSERT_TRUE(engine_->Evicted({"uid-urgent0", r.victims, r.reason, {}, ""}).ok());
  ASSERT_TRUE(Delete({"uid-busy5"}).ok());
  // Another pending pod (higher priority than anything running, no preemption for it) may not
  // take n5 while it is held.
  AddPending("other", 1, 50);
  PlanResult other = engine_->PlanPod("uid-other0");
  EXPECT_FALSE(other.status.ok()) << "took held node " << other.node;
  PlanResult mine = engine_->PlanPod("uid-urgent0");
  ASSERT_TRUE(mine.status.ok()) << mine.status.ToString();
  EXPECT_EQ(mine.node, "n5");
}

TEST_F(PreemptTest, AMultiNodeHoldKeepsEveryNodeAndEndsAfterThePlanTtl) {
  FillWithTwoGangs();
  AddPending("high", 4, 100, "leaf");
  PreemptResult r = engine_->Preempt("uid-high0");
  ASSERT_EQ(r.victims.size(), 4u);
  ASSERT_TRUE(engine_->Evicted({"uid-high0", r.victims, r.reason, {}, ""}).ok());
  ASSERT_TRUE(Delete({"uid-low0", "uid-low1", "uid-low2", "uid-low3"}).ok());
  // Neither a 1-node pod nor a 2-node gang gets any of l0's 4 held nodes.
  AddPending("one", 1, 50);
  AddPending("two", 2, 50);
  EXPECT_FALSE(engine_->PlanPod("uid-one0").status.ok());
  EXPECT_FALSE(engine_->PlanPod("uid-two0").status.ok());
  // The preemptor gives up (it never plans): after the plan TTL the hold is released.
  now_ += EngineConfig{}.plan_ttl_s + 1;
  PlanResult one = engine_->PlanPod("uid-one0");
  ASSERT_TRUE(one.status.ok()) << one.status.ToString();
  EXPECT_LT(one.node, "n4");
}

TEST_F(PreemptTest, TheHoldGoesWhenThePreemptorIsPlannedOrDeleted) {
  FillWithLonePods({1000, 1000, 1000, 1000, 1000, 2000, 1000, 1000});
  AddPending("urgent", 1, 100);
  ASSERT_EQ(engine_->Preempt("uid-urgent0").victims.size(), 1u);
  ASSERT_TRUE(Delete({"uid-busy5"}).ok());
  ASSERT_TRUE(Delete({"uid-urgent0"}).ok());  // the preemptor is gone
  AddPending("other", 1, 50);
  PlanResult other = engine_->PlanPod("uid-other0");
  ASSERT_TRUE(other.status.ok()) << other.status.ToString();
  EXPECT_EQ(other.node, "n5");
}

// Bug: victims already terminating were proposed again (and more victims taken for the same room).
TEST_F(PreemptTest, TerminatingVictimsAreNotProposedAgain) {
  FillWithLonePods({1000, 1000, 1000, 1000, 1000, 2000, 1000, 1000});
  AddPending("urgent", 1, 100);
  PreemptResult first = engine_->Preempt("uid-urgent0");
  ASSERT_EQ(Names(first), std::set<std::string>{"busy5"});
  // The shim evicted it (no Evicted report: an older shim); it is terminating.
  PodInfo going = Running(GangPod("busy5", "", 1), 5, 2000);
  going.terminating = true;
  ASSERT_TRUE(Add({going}).ok());
  PreemptResult again = engine_->Preempt("uid-urgent0");
  EXPECT_TRUE(again.victims.empty()) << "proposed " << (again.victims.empty() ? "" : again.victims[0].name);
  EXPECT_NE(again.status.Message().find("to terminate"), std::string::npos) << again.status.ToString();
  // Another preemptor neither gets the terminating pod nor its (held) node.
  AddPending("second", 1, 100);
  PreemptResult other = engine_->Preempt("uid-second0");
  ASSERT_EQ(other.victims.size(), 1u) << other.status.ToString();
  EXPECT_NE(other.victims[0].name, "busy5");
}

TEST_F(PreemptTest, ATerminatingGangOfAnotherPreemptionIsNeverAVictim) {
  FillWithTwoGangs();
  std::vector<PodInfo> going;
  for (int i = 0; i < 4; ++i) {
    going.push_back(Running(GangPod("low" + std::to_string(i), "low-a", 4), i, 5000));
    going.back().terminating = i == 2;  // one member being deleted: the whole gang is going
  }
  ASSERT_TRUE(Add(going).ok());
  AddPending("high", 4, 100, "leaf");
  PreemptResult r = engine_->Preempt("uid-high0");
  EXPECT_EQ(r.victims.size(), 0u) << "low-a is terminating; proposing it again, or low-b beside it, is not needed: "
                                  << r.status.ToString();
  EXPECT_EQ(Names(r).count("low0"), 0u);
}

// PDBs: a victim gang the front door cannot evict whole is reported and not chosen again.
TEST_F(PreemptTest, PdbProtectedGangsAreSkippedForThePlanTtl) {
  FillWithTwoGangs();
  AddPending("high", 4, 100, "leaf");
  PreemptResult r = engine_->Preempt("uid-high0");
  ASSERT_EQ(r.victim_gangs.size(), 1u);
  ASSERT_EQ(r.victim_gangs[0].first, "team/low-a");
  // Nothing evicted: the shim reports low-a protected; the hold on l0 goes with it.
  ASSERT_TRUE(engine_->Evicted({"uid-high0", {}, r.reason, {"team/low-a"}, ""}).ok());
  PreemptResult next = engine_->Preempt("uid-high0");
  ASSERT_EQ(next.victim_gangs.size(), 1u) << next.status.ToString();
  EXPECT_EQ(next.victim_gangs[0].first, "team/low-b");
  EXPECT_EQ(Preemptions("priority"), 0) << "nothing was evicted yet";
  // Both protected: no victims at all.
  ASSERT_TRUE(engine_->Evicted({"uid-high0", {}, next.reason, {"team/low-b"}, ""}).ok());
  EXPECT_TRUE(engine_->Preempt("uid-high0").victims.empty());
  // The protection lapses after the plan TTL (the budget may allow it by then).
  now_ += EngineConfig{}.plan_ttl_s + 1;
  EXPECT_EQ(engine_->Preempt("uid-high0").victim_gangs.size(), 1u);
}

// Bug: tidal_preemptions_total counted victims proposed, once per Preempt call (a retry while the
// evictions were in flight counted them twice), not evictions done.
TEST_F(PreemptTest, PreemptionsCountEvictionsTheFrontDoorReportsOnce) {
  FillWithTwoGangs();
  AddPending("high", 4, 100, "leaf");
  PreemptResult r = engine_->Preempt("uid-high0");
  ASSERT_EQ(r.victims.size(), 4u);
  EXPECT_EQ(Preemptions("priority"), 0) << "proposed is not preempted";
  ASSERT_TRUE(engine_->Evicted({"uid-high0", {r.victims[0], r.victims[1]}, r.reason, {}, ""}).ok());
  EXPECT_EQ(Preemptions("priority"), 1) << "one victim workload (a gang counts once)";
  EXPECT_GT(metrics_.preempted_gpu_seconds.With({"priority"}).Value(), 0);
  ASSERT_TRUE(engine_->Evicted({"uid-high0", r.victims, r.reason, {}, ""}).ok());
  EXPECT_EQ(Preemptions("priority"), 1) << "the rest of the same gang, reported again, is not counted again";
  // An eviction the engine holds nothing for (e.g. after the hold expired) still counts.
  ASSERT_TRUE(engine_->Evicted({"", {{"uid-low4", "team", "low4"}}, "reclaim", {}, ""}).ok());
  EXPECT_EQ(Preemptions("reclaim"), 1);
}

// The view is maintained incrementally (no rebuild per call): bindings and deletions between
// calls are seen exactly as a fresh engine with the same pods sees them.
TEST_F(PreemptTest, TheViewFollowsBindingsReleasesAndNodeChanges) {
  FillWithTwoGangs();
  AddPending("high", 4, 100, "leaf");
  ASSERT_EQ(engine_->Preempt("uid-high0").victim_gangs.at(0).first, "team/low-a");
  ASSERT_TRUE(engine_->Evicted({"uid-high0", {}, "priority", {}, ""}).ok());
  // low-a finishes by itself; a new preemptible gang low-c starts on l0 later than low-b.
  ASSERT_TRUE(Delete({"uid-low0", "uid-low1", "uid-low2", "uid-low3"}).ok());
  std::vector<PodInfo> c;
  for (int i = 0; i < 4; ++i) c.push_back(Running(GangPod("c" + std::to_string(i), "low-c", 4), i, 6000));
  ASSERT_TRUE(Add(c).ok());
  now_ += EngineConfig{}.plan_ttl_s + 1;  // the earlier hold (on l0) lapses
  PreemptResult r = engine_->Preempt("uid-high0");
  ASSERT_EQ(r.victim_gangs.size(), 1u) << r.status.ToString();
  EXPECT_EQ(r.victim_gangs[0].first, "team/low-c");
  // A node change rebuilds the view: low-b's node n7 leaves, low-c is still the only choice.
  SyncBatch b;
  b.delete_nodes = {"n7"};
  ASSERT_TRUE(Sync(b).ok());
  now_ += EngineConfig{}.plan_ttl_s + 1;
  r = engine_->Preempt("uid-high0");
  ASSERT_EQ(r.victim_gangs.size(), 1u) << r.status.ToString();
  EXPECT_EQ(r.victim_gangs[0].first, "team/low-c");
}

// Queues a and b each have a nominal half of the 64 GPUs. Queue a took all 64 (32 borrowed) with
// non-preemptible pods; b asks for its own share back.
TEST(EnginePreemptTest, QueueWithinItsNominalReclaimsFromABorrowingQueue) {
  auto cfg = ParseEngineConfig(
      "queues:\n  - name: a\n    nominal: {gpus: 32}\n  - name: b\n    nominal: {gpus: 32}\n", "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto e = Engine::Create(*cfg, [] { return int64_t{5000}; });
  ASSERT_TRUE(e.ok());
  SyncBatch b;
  b.resync = true;
  for (int i = 0; i < 8; ++i) {
    b.upsert_nodes.push_back(GpuNode("n" + std::to_string(i), "l" + std::to_string(i / 4), "v" + std::to_string(i / 2)));
    PodInfo p = GangPod("a" + std::to_string(i), "", 1);
    p.labels[kLabelQueue] = "a";
    p.node_name = "n" + std::to_string(i);
    p.phase = PodPhase::kRunning;
    p.creation_unix = 1000;
    p.start_unix = 1000;
    b.upsert_pods.push_back(p);
  }
  for (const std::string q : {"b", "a"}) {
    for (int i = 0; i < 2; ++i) {
      PodInfo p = GangPod(q + "-want" + std::to_string(i), q + "-want", 2);
      p.labels[kLabelQueue] = q;
      b.upsert_pods.push_back(p);
    }
  }
  uint64_t gen = 0;
  ASSERT_TRUE((*e)->Sync(b, &gen).ok());
  ASSERT_FALSE((*e)->PlanPod("uid-b-want0").status.ok()) << "the cluster is full";
  PreemptResult r = (*e)->Preempt("uid-b-want0");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.reason, "reclaim");
  EXPECT_EQ(r.victims.size(), 2u) << "exactly the two nodes b needs";
  for (const auto& v : r.victims) EXPECT_EQ(v.name.substr(0, 1), "a") << v.name;
  // a asking for more of what it already borrows reclaims nothing (and its pods are not preemptible).
  PreemptResult more = (*e)->Preempt("uid-a-want0");
  EXPECT_FALSE(more.status.ok());
  EXPECT_TRUE(more.victims.empty());
}

// The same in a tree (org 48 > a 32, b 16; other 16): b borrowed a's idle share (40 GPUs), other
// holds its 16, a runs 8 and asks for 16 more, within its nominal. It was refused by org's rule
// ("would borrow beyond what its cohort cluster can lend") and nothing was reclaimed for it.
TEST(EnginePreemptTest, AQueueWithinItsNominalReclaimsFromASiblingThatBorrowedItsParentOverNominal) {
  auto cfg = ParseEngineConfig(
      "queues:\n  - {name: org, nominal: {gpus: 48}}\n  - {name: a, parent: org, nominal: {gpus: 32}}\n"
      "  - {name: b, parent: org, nominal: {gpus: 16}}\n  - {name: other, nominal: {gpus: 16}}\n",
      "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto e = Engine::Create(*cfg, [] { return int64_t{5000}; });
  ASSERT_TRUE(e.ok());
  SyncBatch batch;
  batch.resync = true;
  const std::vector<std::string> owner = {"b", "b", "b", "b", "b", "a", "other", "other"};
  for (int i = 0; i < 8; ++i) {
    batch.upsert_nodes.push_back(GpuNode("n" + std::to_string(i), "l" + std::to_string(i / 4), "v" + std::to_string(i / 2)));
    PodInfo p = GangPod(owner[static_cast<size_t>(i)] + std::to_string(i), "", 1);
    p.labels[kLabelQueue] = owner[static_cast<size_t>(i)];
    p.node_name = "n" + std::to_string(i);
    p.phase = PodPhase::kRunning;
    p.creation_unix = 1000;
    p.start_unix = 1000;
    batch.upsert_pods.push_back(p);
  }
  for (int i = 0; i < 2; ++i) {
    PodInfo p = GangPod("a-want" + std::to_string(i), "a-want", 2);
    p.labels[kLabelQueue] = "a";
    batch.upsert_pods.push_back(p);
  }
  uint64_t gen = 0;
  ASSERT_TRUE((*e)->Sync(batch, &gen).ok());
  PlanResult plan = (*e)->PlanPod("uid-a-want0");
  ASSERT_FALSE(plan.status.ok());
  EXPECT_EQ(plan.status.ToString().find("can lend"), std::string::npos) << "a is within its nominal: " << plan.status.ToString();
  PreemptResult r = (*e)->Preempt("uid-a-want0");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.reason, "reclaim");
  EXPECT_EQ(r.victims.size(), 2u) << "exactly the two nodes a needs";
  for (const auto& v : r.victims) EXPECT_EQ(v.name.substr(0, 1), "b") << v.name;
  // The front door names the queues in its events: the preemptor's, and each victim's (reclaimed from).
  EXPECT_EQ(r.queue, "a");
  ASSERT_EQ(r.victim_queues.size(), r.victim_gangs.size());
  for (const auto& q : r.victim_queues) EXPECT_EQ(q, "b");
}

}  // namespace
}  // namespace tidal
