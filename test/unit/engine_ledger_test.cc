// Engine bookkeeping on the Kubernetes path: quota charges follow plans and bindings exactly
// (no leak when a planned node leaves, no uncharge by a stale update, per-model quota charged from
// the node's GPU model) and plans expire from their deadline.
#include <gtest/gtest.h>

#include "engine/engine.h"

namespace tidal {
namespace {

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineConfig cfg;
    cfg.queues.resources = {"gpus", "cpu", "memory", "gpus.h100"};
    QueueSpec q;
    q.name = "team";
    q.nominal.assign(4, 0);
    q.nominal[0] = 64;
    q.borrowing_limit.assign(4, kUnlimited);
    q.lending_limit.assign(4, kUnlimited);
    cfg.queues.queues.push_back(q);
    auto e = Engine::Create(cfg, [this] { return now_; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    SyncBatch b;
    b.resync = true;
    for (int i = 0; i < 4; ++i) {
      NodeInfo n;
      n.name = "n" + std::to_string(i);
      n.labels = {{"topology.tidal.dev/block", "b0"}, {"topology.tidal.dev/leaf", "l0"},
                  {"topology.tidal.dev/nvlink", "v" + std::to_string(i / 2)}};
      n.capacity = Resources{8, 64000, int64_t{512} << 30};
      n.gpu_model = "h100";
      b.upsert_nodes.push_back(n);
    }
    ASSERT_TRUE(Sync(b).ok());
  }
  Status Sync(const SyncBatch& b) {
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  PodInfo Member(const std::string& name, const std::string& gang, int size) {
    PodInfo p;
    p.uid = "uid-" + name;
    p.ns = "ns";
    p.name = name;
    p.scheduler_name = "tidal-scheduler";
    p.request = Resources{8, 1000, 1 << 30};
    p.labels = {{kLabelQueue, "team"}};
    if (!gang.empty()) {
      p.labels[kLabelGang] = gang;
      p.labels[kLabelGangSize] = std::to_string(size);
    }
    return p;
  }
  double Usage(const std::string& resource) {
    for (const auto& row : engine_->Gauges().queue_usage) {
      if (row.labels == std::vector<std::string>{"team", resource}) return row.value;
    }
    return -1;
  }
  int64_t now_ = 1000;
  std::unique_ptr<Engine> engine_;
};

TEST_F(LedgerTest, APlanDroppedBecauseItsNodeLeftIsUnchargedBeforeTheReplan) {
  SyncBatch b;
  b.upsert_pods = {Member("a", "pair", 2), Member("b", "pair", 2)};
  ASSERT_TRUE(Sync(b).ok());
  PlanResult first = engine_->PlanPod("uid-a");
  ASSERT_TRUE(first.status.ok()) << first.status.ToString();
  EXPECT_EQ(Usage("gpus"), 16);
  SyncBatch gone;
  gone.delete_nodes = {first.node};
  ASSERT_TRUE(Sync(gone).ok());
  PlanResult again = engine_->PlanPod("uid-a");
  ASSERT_TRUE(again.status.ok()) << again.status.ToString();
  EXPECT_NE(again.node, first.node);
  EXPECT_EQ(Usage("gpus"), 16) << "the dropped plan's charge leaked";
}

TEST_F(LedgerTest, AStaleUpdateAfterBoundKeepsTheBindingAndItsCharge) {
  PodInfo p = Member("solo", "", 1);
  SyncBatch b;
  b.upsert_pods = {p};
  ASSERT_TRUE(Sync(b).ok());
  PlanResult r = engine_->PlanPod("uid-solo");
  ASSERT_TRUE(r.status.ok());
  ASSERT_TRUE(engine_->Reserve("uid-solo", r.node).ok());
  ASSERT_TRUE(engine_->Permit("uid-solo").status.ok());
  ASSERT_TRUE(engine_->Bound("uid-solo", r.node).ok());
  EXPECT_EQ(Usage("gpus"), 8);
  // The informer's last pre-bind view of the pod arrives after PostBind.
  ASSERT_TRUE(Sync(b).ok());
  EXPECT_EQ(Usage("gpus"), 8) << "a stale update uncharged a bound pod";
  // Its node stays taken: three more 8-GPU pods fit on the other three nodes, a fourth does not.
  SyncBatch more;
  for (int i = 0; i < 4; ++i) more.upsert_pods.push_back(Member("m" + std::to_string(i), "", 1));
  ASSERT_TRUE(Sync(more).ok());
  int placed = 0;
  for (int i = 0; i < 4; ++i) placed += engine_->PlanPod("uid-m" + std::to_string(i)).status.ok() ? 1 : 0;
  EXPECT_EQ(placed, 3);
}

TEST_F(LedgerTest, PerModelQuotaIsChargedFromTheNodesGpuModel) {
  PodInfo p = Member("bound", "", 1);
  p.node_name = "n1";
  p.phase = PodPhase::kRunning;
  SyncBatch b;
  b.upsert_pods = {p};
  ASSERT_TRUE(Sync(b).ok());
  EXPECT_EQ(Usage("gpus"), 8);
  EXPECT_EQ(Usage("gpus.h100"), 8);
}

TEST_F(LedgerTest, AnUnreservedPlanExpiresAfterItsTtl) {
  SyncBatch b;
  b.upsert_pods = {Member("x", "pair", 2), Member("y", "pair", 2)};
  ASSERT_TRUE(Sync(b).ok());
  ASSERT_TRUE(engine_->PlanPod("uid-x").status.ok());
  EXPECT_EQ(engine_->Stats().plans, 1);
  now_ += EngineConfig{}.plan_ttl_s;
  ASSERT_TRUE(Sync(SyncBatch{}).ok());
  EXPECT_EQ(engine_->Stats().plans, 1) << "not expired before its TTL";
  now_ += 1;
  ASSERT_TRUE(Sync(SyncBatch{}).ok());
  EXPECT_EQ(engine_->Stats().plans, 0);
  EXPECT_EQ(Usage("gpus"), 0);
}

TEST(EngineConfigFields, ExclusionTtlAndExplainBoundAreReadAndChecked) {
  auto ok = ParseEngineConfig("exclusionTtlSeconds: 30\nexplain: {maxAhead: 500}\n", "e.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->exclusion_ttl_s, 30);
  EXPECT_EQ(ok->explain_max_ahead, 500);
  auto bad = ParseEngineConfig("explain: {maxAhead: 0}\n", "e.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("explain.maxAhead"), std::string::npos) << bad.status().ToString();
  auto unknown = ParseEngineConfig("explain: {depth: 3}\n", "e.yaml");
  EXPECT_FALSE(unknown.ok());
}

TEST(EngineConfigFields, ReservationsRefreshInBackgroundIsReadAndChecked) {
  auto off = ParseEngineConfig("schedulerName: tidal\n", "e.yaml");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_FALSE(off->refresh_in_background);
  auto on = ParseEngineConfig("reservations: {refreshInBackground: true}\n", "e.yaml");
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_TRUE(on->refresh_in_background);
  for (const char* text : {"reservations: {refreshInBackground: often}\n", "reservations: {background: true}\n"}) {
    auto bad = ParseEngineConfig(text, "e.yaml");
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_NE(bad.status().ToString().find("reservations."), std::string::npos) << bad.status().ToString();
  }
}

// Regression: the profile's errors (Profile::Build: an unknown plugin, one listed twice, a bad
// weight or maxCandidates, no QueueSort) had no line ("e.yaml: profile default: plugins[2] ...");
// now each names the line of the plugin, or of the field, it is about.
TEST(EngineConfigFields, ProfileErrorsNameTheirLine) {
  const std::string head = "queues:\n  - {name: a}\nprofile:\n  maxCandidates: 65\n  plugins:\n";
  for (const auto& [plugins, want] : std::vector<std::pair<std::string, std::string>>{
           {"    - fairshare\n    - quota\n    - nosuch\n", "e.yaml:8: profile default: plugins[2] (nosuch): unknown plugin"},
           {"    - fairshare\n    - gang\n    - gang\n", "e.yaml:8: profile default: plugins[2] (gang): listed twice"},
           {"    - fairshare\n    - {name: topology, weight: 500}\n", "e.yaml:7: profile.plugins[1].weight: must be 1..100, got 500"},
           {"    - fairshare\n    - {name: gang, args: {x: 1}}\n", "e.yaml:7: profile default: plugins[1] (gang): args: x: unknown argument"}}) {
    std::string text = head + plugins;
    text.replace(text.find("  maxCandidates: 65\n"), 20, "  maxCandidates: 4\n");
    auto bad = ParseEngineConfig(text, "e.yaml");
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_NE(bad.status().ToString().find(want), std::string::npos) << bad.status().ToString();
  }
  auto candidates = ParseEngineConfig(head + "    - fairshare\n", "e.yaml");
  ASSERT_FALSE(candidates.ok());
  EXPECT_NE(candidates.status().ToString().find("e.yaml:4: profile default: maxCandidates: must be 1..64"), std::string::npos)
      << candidates.status().ToString();
  auto no_sort = ParseEngineConfig("profile:\n  plugins: [quota, gang]\n", "e.yaml");
  ASSERT_FALSE(no_sort.ok());
  EXPECT_NE(no_sort.status().ToString().find("e.yaml:2: profile default: plugins: no QueueSort plugin"), std::string::npos)
      << no_sort.status().ToString();
}

}  // namespace
}  // namespace tidal
