// Safe rollout (engine/rollout.h, server/config_watcher.cc): a reloaded config is watched for the
// running config's rollout.watchSeconds; one that rejects work the previous config would run is
// rolled back to the previous version (decision log config-rolled-back with both versions,
// tidal_config_rollbacks_total), and not activated again until the file changes; a watch that
// holds for its window passes; the rule alone (RolloutWatch) and its config errors.
// Threading: single-threaded; the watcher is driven by CheckOnce, its clock is now_.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/observability.h"
#include "server/config_load.h"
#include "server/config_watcher.h"
#include "test/support/engine_objects.h"

namespace tidal {
namespace {

constexpr const char* kGood = "rollout: {watchSeconds: 60}\nqueues:\n  - {name: default}\n  - {name: team}\n";
constexpr const char* kDropsTeam = "rollout: {watchSeconds: 60}\nqueues:\n  - {name: default}\n";

class ConfigRolloutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() / ("tidal-rollout-" + std::to_string(::getpid()) + ".yaml")).string();
    Write(kGood);
    auto cfg = ParseEngineConfig(kGood, path_);
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto e = Engine::Create(*cfg, [] { return int64_t{1000}; });
    ASSERT_TRUE(e.ok());
    engine_ = std::move(e).value();
    SyncBatch b;
    b.resync = true;
    b.upsert_nodes = {testing::GpuNode("n0", "l0", "v0")};
    uint64_t gen = 0;
    ASSERT_TRUE(engine_->Sync(b, &gen).ok());
    log_file_ = std::tmpfile();
    log_ = std::make_unique<DecisionLog>(log_file_, 1000.0);
    watcher_ = std::make_unique<ConfigWatcher>(*engine_, path_, std::chrono::milliseconds(1000));
    watcher_->set_decision_log(log_.get());
    watcher_->set_clock([this] { return now_; });
    watcher_->CheckOnce();  // the baseline: what the engine was started with
  }
  void TearDown() override {
    watcher_.reset();
    if (log_file_ != nullptr) std::fclose(log_file_);
    std::filesystem::remove(path_);
  }
  void Write(const std::string& text) {
    std::ofstream(path_, std::ios::trunc) << text;
    // A distinct modification time for every write, however fast the test runs.
    std::filesystem::last_write_time(path_, std::filesystem::file_time_type::clock::now() + std::chrono::seconds(++writes_));
  }
  std::string Log() {
    std::fflush(log_file_);
    std::rewind(log_file_);
    std::string out;
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, log_file_)) out.append(buf, n);
    return out;
  }
  // A pending 1-GPU pod of `queue`; whether the engine plans it.
  bool Plans(const std::string& name, const std::string& queue) {
    PodInfo p = testing::GangPod(name, "", 1, 1);
    p.labels[kLabelQueue] = queue;
    SyncBatch b;
    b.upsert_pods = {p};
    uint64_t gen = 0;
    EXPECT_TRUE(engine_->Sync(b, &gen).ok());
    return engine_->PlanPod(p.uid).status.ok();
  }

  std::string path_;
  int writes_ = 0;
  int64_t now_ = 5000;
  std::unique_ptr<Engine> engine_;
  FILE* log_file_ = nullptr;
  std::unique_ptr<DecisionLog> log_;
  std::unique_ptr<ConfigWatcher> watcher_;
};

TEST_F(ConfigRolloutTest, AConfigThatRejectsWorkThePreviousWouldRunIsRolledBack) {
  const std::string good = watcher_->versions().running;
  Write(kDropsTeam);
  ASSERT_TRUE(watcher_->CheckOnce());
  const std::string bad = watcher_->versions().running;
  ASSERT_NE(bad, good);
  EXPECT_TRUE(watcher_->Watching());
  EXPECT_FALSE(Plans("p1", "team")) << "queue team is not configured any more";
  now_ += 5;
  watcher_->CheckOnce();
  EXPECT_FALSE(watcher_->Watching());
  EXPECT_EQ(watcher_->versions().running, good) << "rolled back to the previous version";
  EXPECT_TRUE(watcher_->versions().drift()) << "the file still holds the bad one";
  EXPECT_EQ(watcher_->counts().rollbacks, 1);
  EXPECT_NE(watcher_->LastError().find("rolled back"), std::string::npos) << watcher_->LastError();
  EXPECT_TRUE(Plans("p2", "team")) << "the previous config runs again";
  const std::string log = Log();
  EXPECT_NE(log.find("\"outcome\":\"config-rolled-back\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"rolled_back\":\"" + bad + "\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"version\":\"" + good + "\""), std::string::npos) << log;
  EXPECT_NE(log.find("team/pod/p1"), std::string::npos) << "the evidence: the workload it rejected\n" << log;
  // The same bad file again (touched, not changed) is refused; a fixed file is taken.
  Write(kDropsTeam);
  ASSERT_TRUE(watcher_->CheckOnce());
  EXPECT_EQ(watcher_->versions().running, good);
  EXPECT_NE(watcher_->LastError().find("was rolled back"), std::string::npos) << watcher_->LastError();
  Write(std::string(kGood) + "planTtlSeconds: 100\n");
  ASSERT_TRUE(watcher_->CheckOnce());
  EXPECT_NE(watcher_->versions().running, good);
  EXPECT_EQ(watcher_->counts().rollbacks, 1);
}

TEST_F(ConfigRolloutTest, AWatchThatHoldsForItsWindowPassesAndWorkOfAQueueNeitherHadDoesNotCount) {
  Write(std::string(kGood) + "planTtlSeconds: 100\n");
  ASSERT_TRUE(watcher_->CheckOnce());
  const std::string next = watcher_->versions().running;
  EXPECT_FALSE(Plans("p1", "nobody")) << "a queue neither config has: rejected by both";
  EXPECT_TRUE(Plans("p2", "team"));
  now_ += 59;
  watcher_->CheckOnce();
  EXPECT_TRUE(watcher_->Watching());
  now_ += 1;
  watcher_->CheckOnce();
  EXPECT_FALSE(watcher_->Watching());
  EXPECT_EQ(watcher_->versions().running, next);
  EXPECT_EQ(watcher_->counts().rollbacks, 0);
  EXPECT_NE(Log().find("config-watch-passed"), std::string::npos);
}

TEST_F(ConfigRolloutTest, NewTopologyLevelsThatPendingPodsCannotReadAreRolledBack) {
  PodInfo p = testing::GangPod("nv", "g", 2, 8);  // a 2-node gang that needs one nvlink domain; one node here
  p.annotations[kLabelTopologyRequired] = "nvlink";
  SyncBatch b;
  b.upsert_pods = {p};
  uint64_t gen = 0;
  ASSERT_TRUE(engine_->Sync(b, &gen).ok());
  const std::string good = watcher_->versions().running;
  Write(std::string(kGood) + "topology:\n  levels:\n    - {name: block, label: topology.tidal.dev/block}\n"
                             "    - {name: rack, label: topology.tidal.dev/leaf}\n");
  ASSERT_TRUE(watcher_->CheckOnce());
  ASSERT_NE(watcher_->versions().running, good);
  now_ += 2;
  watcher_->CheckOnce();
  EXPECT_EQ(watcher_->versions().running, good) << "tidal.dev/topology-required: nvlink names no level any more";
  EXPECT_NE(watcher_->LastError().find("1 pending pod(s) whose Tidal labels the new config cannot read"), std::string::npos)
      << watcher_->LastError();
}

TEST_F(ConfigRolloutTest, WithoutAWatchInTheRunningConfigNothingIsRolledBack) {
  Write("queues:\n  - {name: default}\n  - {name: team}\n");  // activated under the old watch...
  ASSERT_TRUE(watcher_->CheckOnce());
  now_ += 61;
  watcher_->CheckOnce();  // ...which passes
  Write("queues:\n  - {name: default}\n");  // this one runs under no watch
  ASSERT_TRUE(watcher_->CheckOnce());
  EXPECT_FALSE(watcher_->Watching());
  EXPECT_FALSE(Plans("p1", "team"));
  now_ += 5;
  watcher_->CheckOnce();
  EXPECT_EQ(watcher_->counts().rollbacks, 0);
}

// The dry-run gate: the running config's rollout.dryRunGate replays the live snapshot under both
// configs before activating; a config that would reject the pending work of queue team is refused
// (the running one stays), one that does not is activated.
TEST(RolloutGate, ADryRunBreachRefusesTheNewConfigBeforeItRuns) {
  const std::string path = (std::filesystem::temp_directory_path() / ("tidal-gate-" + std::to_string(::getpid()) + ".yaml")).string();
  const std::string gated = "rollout: {dryRunGate: {horizonSeconds: 3600, failOn: rejects-work}}\n";
  auto write = [&, n = 0](const std::string& text) mutable {
    std::ofstream(path, std::ios::trunc) << text;
    std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now() + std::chrono::seconds(++n));
  };
  write(gated + "queues:\n  - {name: default}\n  - {name: team}\n");
  auto cfg = ParseEngineConfig(gated + "queues:\n  - {name: default}\n  - {name: team}\n", path);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto e = Engine::Create(*cfg, [] { return int64_t{1000}; });
  ASSERT_TRUE(e.ok());
  SyncBatch b;
  b.resync = true;
  b.upsert_nodes = {testing::GpuNode("n0", "l0", "v0")};
  PodInfo run = testing::GangPod("run", "", 1, 8);  // fills n0
  run.node_name = "n0";
  run.phase = PodPhase::kRunning;
  PodInfo wait = testing::GangPod("wait", "", 1, 8);  // queue team's: pending in the snapshot
  wait.labels[kLabelQueue] = "team";
  b.upsert_pods = {run, wait};
  uint64_t gen = 0;
  ASSERT_TRUE((*e)->Sync(b, &gen).ok());
  (*e)->PlanPod(wait.uid);
  ConfigWatcher w(**e, path, std::chrono::milliseconds(1000));
  w.CheckOnce();
  const std::string good = w.versions().running;
  write(gated + "queues:\n  - {name: default}\n");  // drops team: its pending work is rejected
  ASSERT_TRUE(w.CheckOnce());
  EXPECT_EQ(w.versions().running, good) << "refused before it ran";
  EXPECT_EQ(w.counts().failure, 1);
  EXPECT_NE(w.LastError().find("rollout.dryRunGate"), std::string::npos) << w.LastError();
  write(gated + "queues:\n  - {name: default}\n  - {name: team, weight: 2}\n");
  ASSERT_TRUE(w.CheckOnce());
  EXPECT_NE(w.versions().running, good) << "a change the dry-run finds harmless is activated";
  EXPECT_EQ(w.counts().success, 1);
  std::filesystem::remove(path);
}

// Regression: a failOn the simulator cannot read passed at start and on reload (only tidalctl config
// validate checked it), and broke at the next reload, when the running config's gate ran: every
// later config was refused with the old typo. Now it is refused where the config is read, naming
// the file, line and field, and the config that runs keeps accepting good edits.
TEST(RolloutGate, AFailOnTypoIsRefusedWhenTheConfigIsReadNotAtTheNextReload) {
  const std::string path = (std::filesystem::temp_directory_path() / ("tidal-failon-" + std::to_string(::getpid()) + ".yaml")).string();
  const std::string typo = "queues:\n  - {name: team}\nrollout: {dryRunGate: {horizonSeconds: 60, failOn: rejects-wrok}}\n";
  auto parsed = ParseServedConfig(typo, "t.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().Message().find("t.yaml:3: rollout.dryRunGate.failOn: --fail-on: \"rejects-wrok\": unknown check"),
            std::string::npos)
      << parsed.status().Message();
  EXPECT_TRUE(ParseServedConfig("rollout: {dryRunGate: {horizonSeconds: 60, failOn: rejects-work}}\n", "t.yaml").ok());
  auto write = [&, n = 0](const std::string& text) mutable {
    std::ofstream(path, std::ios::trunc) << text;
    std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now() + std::chrono::seconds(++n));
  };
  const std::string good = "queues:\n  - {name: team}\n";
  write(good);
  auto e = Engine::Create(*ParseEngineConfig(good, path), [] { return int64_t{1000}; });
  ASSERT_TRUE(e.ok());
  ConfigWatcher w(**e, path, std::chrono::milliseconds(1000));
  w.CheckOnce();
  const std::string v0 = w.versions().running;
  write(typo);
  ASSERT_TRUE(w.CheckOnce());
  EXPECT_EQ(w.versions().running, v0) << "the typo is refused";
  EXPECT_EQ(w.counts().failure, 1);
  EXPECT_NE(w.LastError().find(path + ":3: rollout.dryRunGate.failOn"), std::string::npos) << w.LastError();
  write("queues:\n  - {name: team, weight: 2}\n");
  ASSERT_TRUE(w.CheckOnce());
  EXPECT_NE(w.versions().running, v0) << "the next good edit runs: " << w.LastError();
  EXPECT_EQ(w.counts().success, 1);
  std::filesystem::remove(path);
}

TEST(RolloutWatch, CountsOnlyWhatThePreviousConfigWouldRunAndErrorsAndPreemptions) {
  RolloutWatch w;
  w.policy.max_newly_rejected = 1;
  w.policy.max_preemptions = 2;
  w.previous_leaves = {"team", "default"};
  w.at_start.rejected["a/old"] = {"team", "quota"};
  RolloutSignals now;
  now.rejected["a/old"] = {"team", "quota"};       // rejected already: not new
  now.rejected["a/ghost"] = {"ghost", "quota"};    // a queue the previous config lacked too
  now.rejected["a/huge"] = {"team", "placement"};  // placement unchanged: the previous rejects it too
  now.rejected["a/new"] = {"team", "quota"};
  EXPECT_EQ(w.NewlyRejected(now), (std::set<std::string>{"a/new"}));
  EXPECT_EQ(w.Breach(now), "") << "one is allowed";
  w.placement_changed = true;
  EXPECT_NE(w.Breach(now).find("2 workload(s) the previous config would run are rejected now"), std::string::npos);
  w.placement_changed = false;
  now.preemptions = 3;
  EXPECT_NE(w.Breach(now).find("3 workload(s) preempted (at most 2)"), std::string::npos);
  now.preemptions = 0;
  now.errors = 1;
  EXPECT_NE(w.Breach(now).find("1 scheduling decision(s) ended in an error"), std::string::npos);
}

TEST(RolloutConfig, ErrorsNameTheField) {
  RolloutPolicy p;
  EXPECT_TRUE(DecodeRollout(nlohmann::json::parse(R"({"watchSeconds": 300, "maxPreemptions": 5})"), "rollout", &p).ok());
  EXPECT_EQ(p.watch_s, 300);
  EXPECT_EQ(p.max_preemptions, 5);
  for (const auto& [text, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"watchSeconds": -1})", "rollout.watchSeconds"},
           {R"({"watch": 5})", "rollout.watch"},
           {R"({"maxErrors": "x"})", "rollout.maxErrors"},
           {R"(3)", "rollout: must be a mapping"},
           {R"({"dryRunGate": {"failOn": "x"}})", "rollout.dryRunGate.horizonSeconds"},
           {R"({"dryRunGate": 5})", "rollout.dryRunGate: must be a mapping"}}) {
    RolloutPolicy bad;
    Status st = DecodeRollout(nlohmann::json::parse(text), "rollout", &bad);
    ASSERT_FALSE(st.ok()) << text;
    EXPECT_NE(st.ToString().find(field), std::string::npos) << st.ToString();
  }
}

}  // namespace
}  // namespace tidal
