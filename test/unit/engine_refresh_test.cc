// The backfill book's refresh (engine/engine_reservations.cc) walks a prefix of the queue in
// fair-share order and the whole queue only when the prefix did not settle the book: the book
// must be the one the whole queue gives. Two engines fed the same events, one walking a 4-gang
// prefix and one always the whole queue (refresh_prefix 0), must hold the same reservations and
// answer every PlanPod alike, over a busy 8-node cluster with 3 queues and ~60 pending gangs
// (lone pods and gangs, random sizes, priorities and submit times), pods ending and arriving,
// nodes refused by kube-scheduler's filters (those gangs' workloads are built per walk). So
// must one that refreshes on its refresher thread (refresh_in_background) and one in place.
// Threading: the test's thread; a refresher thread reads the test's clock, written only while
// its engine is idle (after WaitForRefresh).
#include <random>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "test/support/engine_objects.h"

namespace tidal {
namespace {

using testing::GangPod;
using testing::GpuNode;
using testing::RunningOn;

constexpr char kConfig[] =
    "queues:\n  - name: qa\n    weight: 1\n  - name: qb\n    weight: 2\n  - name: qc\n    weight: 1\n"
    "profile:\n  plugins: [fairshare, quota, gang, {name: topology, weight: 1}, preemption]\n"
    "  backfill: {depth: DEPTH}\n";

// `background`: the second engine walks the same prefix and refreshes on its refresher thread.
class RefreshPair {
 public:
  RefreshPair(int depth, int64_t* now, bool background = false) {
    std::string yaml = kConfig;
    yaml.replace(yaml.find("DEPTH"), 5, std::to_string(depth));
    for (int prefix : {4, background ? 4 : 0}) {
      auto cfg = ParseEngineConfig(yaml, "engine.yaml");
      EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
      cfg->refresh_prefix = prefix;
      cfg->refresh_in_background = background && engines_.size() == 1;
      auto e = Engine::Create(*cfg, [now] { return *now; });
      EXPECT_TRUE(e.ok()) << e.status().ToString();
      engines_.push_back(std::move(e).value());
    }
  }
  void Sync(const SyncBatch& b) {
    for (auto& e : engines_) {
      uint64_t gen = 0;
      ASSERT_TRUE(e->Sync(b, &gen).ok());
    }
  }
  // PlanPod on both; the answers must be the same. Returns the prefix engine's.
  PlanResult Plan(const std::string& uid) {
    PlanResult a = engines_[0]->PlanPod(uid), b = engines_[1]->PlanPod(uid);
    EXPECT_EQ(a.node, b.node) << uid;
    EXPECT_EQ(a.status.ToString(), b.status.ToString()) << uid;
    EXPECT_EQ(a.activate.size(), b.activate.size()) << uid;
    return a;
  }
  nlohmann::json Book(size_t i) { return engines_[i]->Snapshot()["reservations"]; }
  // Asks both for a refresh and waits for it (the refresher's too).
  void Refresh() {
    for (auto& e : engines_) {
      e->RefreshReservations();
      e->WaitForRefresh();
    }
  }
  EngineStats Stats(size_t i) { return engines_[i]->Stats(); }
  // kube-scheduler's own filters refused `node` for the pod: its gang's workload is then built
  // for each walk (excluded nodes), not the cached one.
  void Refused(const std::string& uid, const std::string& node) {
    for (auto& e : engines_) (void)e->NodeRefused(uid, node, "NodePorts");
  }

 private:
  std::vector<std::unique_ptr<Engine>> engines_;
};

PodInfo Pending(std::mt19937& rng, const std::string& name, int64_t now) {
  const char* queues[] = {"qa", "qb", "qc"};
  PodInfo p = GangPod(name, "", 1, 1 + static_cast<int64_t>(rng() % 8));
  p.labels[kLabelQueue] = queues[rng() % 3];
  p.priority = static_cast<int32_t>(rng() % 3) * 10;
  p.creation_unix = now - static_cast<int64_t>(rng() % 3600);
  p.annotations[kLabelRuntimeLimit] = std::to_string(1 + rng() % 4) + "h";
  return p;
}

// background: the second engine refreshes on its refresher thread, and refreshes are asked for
// by RefreshReservations at each step (time moved on by a second or more), so both refresh from
// the same state; plans in between are in the same second (no refresh in them).
void RunScenario(int depth, uint32_t seed, bool background = false) {
  int64_t now = 100000;
  RefreshPair pair(depth, &now, background);
  std::mt19937 rng(seed);
  SyncBatch b;
  b.resync = true;
  for (int i = 0; i < 8; ++i) b.upsert_nodes.push_back(GpuNode("n" + std::to_string(i), "l" + std::to_string(i / 4), "v" + std::to_string(i / 2)));
  // Every node busy until a random end, so gangs wait and take reservations.
  std::vector<std::string> running;
  for (int i = 0; i < 8; ++i) {
    PodInfo p = RunningOn(GangPod("run" + std::to_string(i), "", 1, 8), "n" + std::to_string(i), now - 600);
    p.labels[kLabelQueue] = i % 2 == 0 ? "qa" : "qb";
    p.annotations[kLabelRuntimeLimit] = std::to_string(1 + rng() % 5) + "h";
    running.push_back(p.uid);
    b.upsert_pods.push_back(std::move(p));
  }
  std::vector<std::string> pending;
  for (int k = 0; k < 60; ++k) {
    if (rng() % 5 == 0) {  // a gang of 2 x 8 GPUs
      for (int m = 0; m < 2; ++m) {
        PodInfo p = GangPod("g" + std::to_string(k) + "-" + std::to_string(m), "g" + std::to_string(k), 2, 8);
        p.labels[kLabelQueue] = k % 3 == 0 ? "qa" : k % 3 == 1 ? "qb" : "qc";
        p.creation_unix = now - static_cast<int64_t>(k * 7 % 3600);
        p.annotations[kLabelRuntimeLimit] = "2h";
        pending.push_back(p.uid);
        b.upsert_pods.push_back(std::move(p));
      }
      continue;
    }
    PodInfo p = Pending(rng, "p" + std::to_string(k), now);
    pending.push_back(p.uid);
    b.upsert_pods.push_back(std::move(p));
  }
  pair.Sync(b);
  bool full_book = false;
  for (int step = 0; step < 40; ++step) {
    now += 1 + static_cast<int64_t>(rng() % 3);
    SyncBatch s;
    if (step % 7 == 6 && !running.empty()) {  // work ends: capacity frees, reservations move
      s.delete_pods.push_back(running.back());
      running.pop_back();
    }
    if (step % 3 == 0) {  // an arrival
      PodInfo p = Pending(rng, "new" + std::to_string(step), now);
      pending.push_back(p.uid);
      s.upsert_pods.push_back(std::move(p));
    }
    pair.Sync(s);
    if (step % 4 == 1) pair.Refused(pending[rng() % pending.size()], "n" + std::to_string(rng() % 8));
    if (background) pair.Refresh();
    const std::string uid = pending[rng() % pending.size()];
    (void)pair.Plan(uid);
    const nlohmann::json a = pair.Book(0), c = pair.Book(1);
    ASSERT_EQ(a.dump(), c.dump()) << "seed " << seed << " step " << step;
    full_book = full_book || a.size() >= static_cast<size_t>(depth);
  }
  EXPECT_TRUE(full_book) << "the book never reached the depth: the prefix was never enough";
  if (background) {
    EXPECT_GT(pair.Stats(1).book_refreshes, 0);
    EXPECT_EQ(pair.Stats(0).book_refreshes, pair.Stats(1).book_refreshes) << "seed " << seed;
  }
}

// Found by the perishable-gap e2e case under load: a gang whose PlanPod failed under a second
// after a refresh only marked the book stale, and with no later call (kube-scheduler parks the
// pod until a cluster event) it never got a reservation. The front doors' disruption poll now
// refreshes a stale book.
TEST(EngineReservationRefreshTest, AStaleBookIsRefreshedByTheDisruptionPoll) {
  int64_t now = 100000;
  auto cfg = ParseEngineConfig(
      "profile:\n  plugins: [fairshare, quota, gang, {name: topology, weight: 1}, preemption]\n  backfill: {depth: 16}\n",
      "engine.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto e = Engine::Create(*cfg, [&now] { return now; });
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  Engine& engine = **e;
  SyncBatch b;
  b.resync = true;
  for (int i = 0; i < 2; ++i) {
    b.upsert_nodes.push_back(GpuNode("n" + std::to_string(i), "l0", "v0"));
    PodInfo run = RunningOn(GangPod("run" + std::to_string(i), "", 1, 8), "n" + std::to_string(i), now - 600);
    run.annotations[kLabelRuntimeLimit] = std::to_string(i + 1) + "h";
    b.upsert_pods.push_back(std::move(run));
  }
  PodInfo a = GangPod("a", "", 1, 8);
  a.annotations[kLabelRuntimeLimit] = "1h";
  b.upsert_pods.push_back(a);
  uint64_t gen = 0;
  ASSERT_TRUE(engine.Sync(b, &gen).ok());
  auto holds = [&](const std::string& name) {
    const std::string book = engine.Snapshot()["reservations"].dump();
    return book.find(name) != std::string::npos;
  };
  EXPECT_FALSE(engine.PlanPod(a.uid).status.ok());  // nothing fits: the book is refreshed
  ASSERT_TRUE(holds("/a")) << engine.Snapshot()["reservations"].dump();
  // The same second: "late" arrives and fails too; the refresh is skipped (at most one a second).
  PodInfo late = GangPod("late", "", 1, 8);
  late.annotations[kLabelRuntimeLimit] = "1h";
  SyncBatch s;
  s.upsert_pods.push_back(late);
  ASSERT_TRUE(engine.Sync(s, &gen).ok());
  EXPECT_FALSE(engine.PlanPod(late.uid).status.ok());
  EXPECT_FALSE(holds("/late")) << "refreshed within the second: the test does not test the poll";
  // No call follows; the disruption poll two seconds later refreshes the stale book.
  now += 2;
  (void)engine.Disruptions(FrontDoor::kKubernetes);
  EXPECT_TRUE(holds("/late")) << engine.Snapshot()["reservations"].dump();
  EXPECT_TRUE(holds("/a"));
}

TEST(EngineReservationRefreshTest, APrefixOfTheQueueGivesTheWholeQueuesBook) {
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u}) RunScenario(3, seed);
}

TEST(EngineReservationRefreshTest, ADeeperBookThanThePrefixFallsBackToTheWholeQueue) {
  // depth 8 > the 4-gang prefix: the prefix cannot reach the depth; the whole queue decides.
  for (uint32_t seed : {11u, 12u}) RunScenario(8, seed);
}

// refresh_in_background: the refresher thread's job (its own copies of the batch's workloads,
// taken under the mutex and read after it) installs the book an in-place refresh makes, with the
// prefix and with the whole queue's fallback (depth 8).
TEST(EngineReservationRefreshTest, TheRefresherThreadInstallsTheBookAnInPlaceRefreshMakes) {
  for (uint32_t seed : {21u, 22u, 23u}) RunScenario(3, seed, /*background=*/true);
  for (uint32_t seed : {24u, 25u}) RunScenario(8, seed, /*background=*/true);
}

}  // namespace
}  // namespace tidal
