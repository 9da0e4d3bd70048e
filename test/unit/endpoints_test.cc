// server/endpoints: what tidal-engine serves over HTTP, on a real HttpServer: /readyz follows the
// first full sync and names the doors awaited after a restart, /metrics shows the configured
// queues and known label values at 0 from the first scrape and bounds queue labels, private routes
// stay private.
#include "server/endpoints.h"

#include <httplib.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include "engine/observability.h"
#include "test/support/engine_objects.h"

namespace tidal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kConfig = R"(
queues:
  - {name: research, nominal: {gpus: 64}}
  - {name: team-a, parent: research, nominal: {gpus: 32}}
  - {name: team-b, parent: research, nominal: {gpus: 32}}
)";

class EndpointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cfg = ParseEngineConfig(kConfig, "test.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto e = Engine::Create(*cfg, [] { return int64_t{1000}; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    engine_->SetObservability(&metrics_, nullptr);
    RegisterEngineGauges(registry_, *engine_, nullptr);
    RegisterProcessGauges(registry_, [] { return true; }, [] { return StateFileSaves{3, 1}; });  // as main.cc
    ASSERT_TRUE(registry_.status().ok()) << registry_.status().ToString();
    RegisterEngineRoutes(http_, *engine_, registry_, nullptr);
    ASSERT_TRUE(http_.Start("127.0.0.1:0").ok());
  }
  httplib::Result Get(const std::string& path) {
    httplib::Client c("127.0.0.1", http_.port());
    c.set_read_timeout(std::chrono::seconds(5));
    return c.Get(path.c_str());
  }
  Status FullSync(std::vector<PodInfo> pods) {
    SyncBatch b;
    b.resync = true;
    for (int i = 0; i < 2; ++i) b.upsert_nodes.push_back(testing::GpuNode("n" + std::to_string(i), "l0", "v0"));
    b.upsert_pods = std::move(pods);
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }

  metrics::Registry registry_;
  EngineMetrics metrics_{registry_};
  std::unique_ptr<Engine> engine_;
  HttpServer http_;
};

// Regression: /readyz answered 200 from start-up, before any front door had synced, so a
// Deployment's readiness probe passed for an engine that knew no nodes.
TEST_F(EndpointsTest, ReadyzIs503UntilTheFirstFullSync) {
  auto r = Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_THAT(r->body, HasSubstr("synced: false"));
  EXPECT_EQ(Get("/healthz")->status, 200);  // alive all the same
  ASSERT_TRUE(FullSync({}).ok());
  r = Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->body, HasSubstr("synced: true"));
}

TEST_F(EndpointsTest, KnownLabelValuesShowZeroFromTheFirstScrape) {
  auto r = Get("/metrics");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), metrics::kContentType);
  const std::string& m = r->body;
  for (const char* q : {"team-a", "team-b"}) {
    EXPECT_THAT(m, HasSubstr("tidal_pending_workloads{queue=\"" + std::string(q) + "\",class=\"training\"} 0\n"));
    EXPECT_THAT(m, HasSubstr("tidal_runtime_limit_exceeded_total{queue=\"" + std::string(q) + "\"} 0\n"));
    EXPECT_THAT(m, HasSubstr("tidal_backfill_reservations{queue=\"" + std::string(q) + "\"} 0\n"));
  }
  for (const char* reason : kPreemptionReasons) {
    EXPECT_THAT(m, HasSubstr("tidal_preemptions_total{reason=\"" + std::string(reason) + "\"} 0\n"));
  }
  EXPECT_THAT(m, HasSubstr("tidal_decisions_total{outcome=\"Placed\"} 0\n"));
  EXPECT_THAT(m, HasSubstr("tidal_cycle_duration_seconds_count 0\n"));
  // The process's series, from the callbacks main.cc gives (here: leading, 3 saves and 1 failure).
  EXPECT_THAT(m, HasSubstr("tidal_engine_leading 1\n"));
  EXPECT_THAT(m, HasSubstr("tidal_state_file_saves_total{result=\"success\"} 3\n"));
  EXPECT_THAT(m, HasSubstr("tidal_state_file_saves_total{result=\"failure\"} 1\n"));
}

// A pod may name any queue; the label must stay one of the configured ones, or series would grow
// with every typo (and every attacker-chosen string).
TEST_F(EndpointsTest, QueueLabelsAreBoundedToConfiguredQueues) {
  std::vector<PodInfo> pods;
  for (const char* q : {"team-a", "no-such-queue-1", "no-such-queue-2"}) {
    PodInfo p = testing::GangPod(std::string("p-") + q, "", 1);
    p.labels[kLabelQueue] = q;
    pods.push_back(p);
  }
  ASSERT_TRUE(FullSync(pods).ok());
  const std::string m = Get("/metrics")->body;
  EXPECT_THAT(m, HasSubstr("tidal_pending_workloads{queue=\"team-a\",class=\"batch\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("tidal_pending_workloads{queue=\"unconfigured\",class=\"batch\"} 2\n"));
  EXPECT_THAT(m, Not(HasSubstr("no-such-queue")));
}

// Regression (SRE exploration): tidal_queue_usage / _nominal / _borrowed{resource="cpu"} were in
// millicores, so a queue configured with `cpu: 64` (and shown as 64 by /queues) read 64000 on
// /metrics. Prometheus' base units: cpu in cores, memory in bytes, GPUs in devices.
TEST(EndpointsUnitsTest, QueueResourcesAreInBaseUnits) {
  auto cfg = ParseEngineConfig(R"(
queues:
  - {name: team-a, nominal: {gpus: 16, cpu: 64, memory: 256Gi}, borrowingLimit: {cpu: 8}}
)", "test.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto e = Engine::Create(*cfg, [] { return int64_t{1000}; });
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  metrics::Registry registry;
  RegisterEngineGauges(registry, **e, nullptr);
  ASSERT_TRUE(registry.status().ok()) << registry.status().ToString();
  SyncBatch b;
  b.resync = true;
  b.upsert_nodes = {testing::GpuNode("n0", "l0", "v0")};
  PodInfo p = testing::RunningOn(testing::GangPod("p", "", 1), "n0", 900);
  p.labels[kLabelQueue] = "team-a";
  p.request.cpu_milli = 2500;
  b.upsert_pods = {p};
  uint64_t gen = 0;
  ASSERT_TRUE((*e)->Sync(b, &gen).ok());
  const std::string m = registry.Render();
  EXPECT_THAT(m, HasSubstr("tidal_queue_nominal{queue=\"team-a\",resource=\"cpu\"} 64\n"));
  EXPECT_THAT(m, HasSubstr("tidal_queue_usage{queue=\"team-a\",resource=\"cpu\"} 2.5\n"));
  EXPECT_THAT(m, HasSubstr("tidal_queue_borrowed{queue=\"team-a\",resource=\"cpu\"} 0\n"));
  EXPECT_THAT(m, HasSubstr("tidal_queue_nominal{queue=\"team-a\",resource=\"memory\"} 274877906944\n"));
  EXPECT_THAT(m, HasSubstr("tidal_queue_usage{queue=\"team-a\",resource=\"memory\"} 1073741824\n"));
  EXPECT_THAT(m, HasSubstr("tidal_queue_usage{queue=\"team-a\",resource=\"gpus\"} 8\n"));
}

// After a restart the doors still awaited are named (/readyz, its JSON, and a gauge per door whose
// series exist from the first scrape): nodes they may run work on take no new work meanwhile.
TEST_F(EndpointsTest, ReadyzAndAGaugeNameTheDoorsAwaitedAfterARestart) {
  std::string m = Get("/metrics")->body;
  EXPECT_THAT(m, HasSubstr("tidal_door_awaiting_resync{door=\"kubernetes\"} 0\n"));
  EXPECT_THAT(m, HasSubstr("tidal_door_awaiting_resync{door=\"slurm\"} 0\n"));
  ASSERT_TRUE(engine_->LoadLedger(R"({"time": 1000, "usage": {}, "doorNodes": {"slurm": ["n0"]}})").ok());
  ASSERT_TRUE(FullSync({}).ok());  // the Kubernetes door's snapshot: n0, n1
  auto r = Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->body, HasSubstr("synced: true\n"));
  EXPECT_THAT(r->body, HasSubstr("awaiting doors: slurm\n"));
  r = Get("/readyz?format=json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  const auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["awaitingDoors"], nlohmann::json({"slurm"}));
  EXPECT_EQ(j["synced"], true);
  EXPECT_EQ(j["nodes"], 2);
  m = Get("/metrics")->body;
  EXPECT_THAT(m, HasSubstr("tidal_door_awaiting_resync{door=\"slurm\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("tidal_door_awaiting_resync{door=\"kubernetes\"} 0\n"));
  SyncBatch s;
  s.door = FrontDoor::kSlurm;
  s.resync = true;
  uint64_t gen = 0;
  ASSERT_TRUE(engine_->Sync(s, &gen).ok());
  EXPECT_THAT(Get("/readyz")->body, HasSubstr("awaiting doors: none\n"));
  EXPECT_THAT(Get("/metrics")->body, HasSubstr("tidal_door_awaiting_resync{door=\"slurm\"} 0\n"));
}

TEST_F(EndpointsTest, ExplainQueuesAndConfigAreServed) {
  ASSERT_TRUE(FullSync({}).ok());
  auto r = Get("/queues?format=json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->body, HasSubstr("\"queue\": \"team-a\""));
  r = Get("/explain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  r = Get("/explain?workload=team%2Fnothing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  r = Get("/config");
  ASSERT_TRUE(r);
  EXPECT_THAT(r->body, HasSubstr("built-in defaults"));
}

// Regression (admin exploration, finding 6): without --config, /config?format=json sent no config
// document, so `tidalctl config diff` compared a file with nothing and reported drift with "0
// field(s)". The built-in defaults are served as the document they are: {}.
TEST_F(EndpointsTest, ConfigJsonServesTheBuiltInDefaultsAsAnEmptyDocument) {
  auto r = Get("/config?format=json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  const nlohmann::json j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["version"], "builtin");
  ASSERT_TRUE(j.contains("config")) << r->body;
  EXPECT_EQ(j["config"], nlohmann::json::object());
}

// The metric names of docs/operations.md's Metrics table ("Every metric tidal-engine exports").
std::set<std::string> DocumentedMetrics() {
  std::ifstream in(std::string(TIDAL_SOURCE_DIR) + "/docs/operations.md");
  std::set<std::string> out;
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Metrics";
    if (in_section && line.rfind("| `tidal_", 0) == 0) out.insert(line.substr(3, line.find('`', 3) - 3));
  }
  return out;
}

// The metric families /metrics exports ("# TYPE NAME ...").
std::set<std::string> ExportedMetrics(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) out.insert(line.substr(7, line.find(' ', 7) - 7));
  }
  return out;
}

// The sources that register tidal-engine's metric families (the table names them).
std::string RegisteringSources() {
  std::string out;
  for (const char* f : {"/engine/observability.cc", "/server/endpoints.cc"}) {
    std::ifstream in(std::string(TIDAL_SOURCE_DIR) + f);
    out += std::string(std::istreambuf_iterator<char>(in), {});
  }
  return out;
}

// Regression (admin exploration, finding 14): the Metrics table, which says it lists every metric
// the engine exports, missed tidal_door_gpus, tidal_door_members, tidal_door_nodes and
// tidal_queue_door_gpus. Every family /metrics exports is in the table, and every row names a
// family the engine registers (a family without series yet, such as a histogram nothing was
// observed in, is not rendered: its name is looked for where families are registered).
TEST_F(EndpointsTest, TheOperationsMetricsTableListsExactlyTheExportedMetrics) {
  auto r = Get("/metrics");
  ASSERT_TRUE(r);
  const std::set<std::string> exported = ExportedMetrics(r->body);
  const std::set<std::string> documented = DocumentedMetrics();
  ASSERT_GT(documented.size(), 20u) << "docs/operations.md: no Metrics table found";
  ASSERT_GT(exported.size(), 20u) << r->body;
  for (const auto& m : exported) EXPECT_TRUE(documented.count(m)) << m << " is exported but not in docs/operations.md";
  const std::string sources = RegisteringSources();
  for (const auto& m : documented) {
    EXPECT_THAT(sources, HasSubstr("\"" + m + "\"")) << m << " is in docs/operations.md but no family of that name is registered";
  }
}

// ?format= takes json or text; anything else (a typo, yaml) was answered as text, which a script
// asking for JSON then failed to parse far from the cause. Now a 400 naming the parameter.
TEST_F(EndpointsTest, AnUnknownFormatIsRefusedNamingTheParameter) {
  ASSERT_TRUE(FullSync({}).ok());
  for (const std::string path : {"/queues", "/config", "/readyz", "/explain?workload=team%2Fnothing&"}) {
    const std::string sep = path.back() == '&' ? "" : "?";
    auto r = Get(path + sep + "format=yaml");
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 400) << path;
    EXPECT_THAT(r->body, HasSubstr("format: unknown value \"yaml\" (accepted: json, text)")) << path;
    r = Get(path + sep + "format=text");
    ASSERT_TRUE(r) << path;
    EXPECT_NE(r->status, 400) << path << ": text is a format";
  }
}

// GET /snapshot (Engine::Snapshot, docs/simulator.md "Snapshots"): the live state for a policy
// dry-run, with the config (built-in here), and nothing of the pods beyond what the dry-run uses.
TEST_F(EndpointsTest, SnapshotServesTheLiveStateWithoutPodSpecs) {
  PodInfo mine = testing::CheckpointingPod("solo", "n0", 900);
  mine.labels[kLabelQueue] = "team-a";
  PodInfo other = testing::GangPod("other", "", 1, 4);
  other.scheduler_name = "default-scheduler";
  other.node_name = "n1";
  other.phase = PodPhase::kRunning;
  other.annotations["secret-annotation"] = "s3cr3t";
  other.labels["secret-label"] = "hush";
  std::vector<PodInfo> pods = {mine, other};
  for (int i = 0; i < 3; ++i) {  // 24 GPUs on 16: pending
    PodInfo p = testing::GangPod("big-" + std::to_string(i), "big", 3);
    p.labels[kLabelQueue] = "team-b";
    pods.push_back(p);
  }
  ASSERT_TRUE(FullSync(pods).ok());
  auto r = Get("/snapshot");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->body, Not(HasSubstr("s3cr3t")));
  EXPECT_THAT(r->body, Not(HasSubstr("secret-")));
  const nlohmann::json s = nlohmann::json::parse(r->body);
  EXPECT_EQ(s["format"], "tidal.dev/snapshot");
  EXPECT_EQ(s["version"], 1);
  EXPECT_EQ(s["taken_at"], 1000);
  EXPECT_EQ(s["config"], nlohmann::json({{"version", "builtin"}, {"document", nullptr}}));
  ASSERT_EQ(s["nodes"].size(), 2u);
  EXPECT_EQ(s["nodes"][0]["name"], "n0");
  EXPECT_EQ(s["nodes"][0]["health"], "ready");
  EXPECT_EQ(s["nodes"][0]["capacity"]["gpus"], 8);
  EXPECT_EQ(s["nodes"][0]["labels"].size(), 3u);  // the three levels' labels only
  ASSERT_EQ(s["running"].size(), 2u) << s["running"].dump();
  const nlohmann::json& a = s["running"][0]["id"] == "pod:team/other" ? s["running"][0] : s["running"][1];
  const nlohmann::json& b = s["running"][0]["id"] == "pod:team/other" ? s["running"][1] : s["running"][0];
  EXPECT_EQ(a["tidal"], false);
  EXPECT_EQ(a["queue"], "");  // another scheduler's pod naming no queue
  EXPECT_EQ(a["per_member"]["gpus"], 4);
  EXPECT_EQ(a["placement"], nlohmann::json::parse(R"([{"node": "n1", "members": 1}])"));
  EXPECT_EQ(b["tidal"], true);
  EXPECT_EQ(b["queue"], "team-a");
  EXPECT_EQ(b["start"], 900);
  EXPECT_EQ(b["checkpoint_on_notice"], true);
  EXPECT_EQ(b["placement"], nlohmann::json::parse(R"([{"node": "n0", "members": 1}])"));
  ASSERT_EQ(s["pending"].size(), 1u);
  EXPECT_EQ(s["pending"][0]["id"], "team/big");
  EXPECT_EQ(s["pending"][0]["queue"], "team-b");
  EXPECT_EQ(s["pending"][0]["members"], 3);
  EXPECT_TRUE(s["usage"].contains("usage"));
  EXPECT_TRUE(s["reservations"].is_array());
}

}  // namespace
}  // namespace tidal
