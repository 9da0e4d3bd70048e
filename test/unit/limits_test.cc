// Bounds on input (core/api/limits.h) at every door: durations, GPUs per node, members x GPUs,
// string sizes, the keys the engine reads (and the Go shim's copy of their list), and the engine
// config's topology levels. Each case here was accepted before the bounds, some with overflow.
#include <cctype>
#include <fstream>
#include <functional>
#include <limits>
#include <set>

#include <gtest/gtest.h>

#include "core/api/duration.h"
#include "core/api/limits.h"
#include "core/io/document.h"
#include "core/io/workload_file.h"
#include "engine/engine.h"
#include "engine/pod_spec.h"
#include "test/support/engine_objects.h"

namespace tidal {
namespace {

using Map = std::map<std::string, std::string>;
using testing::GangPod;
using testing::GpuNode;

bool Has(const Status& s, const std::string& text) { return s.Message().find(text) != std::string::npos; }

TEST(LimitsTest, DurationsAboveAYearAreRefusedNamingTheField) {
  EXPECT_EQ(*ParseDurationSeconds("365d", "f"), limits::kMaxDurationS);
  for (const char* text : {"366d", "9999999999999h", "106751991167d", "99999999999999999999s", "31536001"}) {
    auto d = ParseDurationSeconds(text, "runtimeLimit");
    ASSERT_FALSE(d.ok()) << text << " read as " << *d;
    EXPECT_TRUE(Has(d.status(), "runtimeLimit: invalid duration")) << d.status().Message();
  }
  EXPECT_TRUE(Has(ParseDurationSeconds("366d", "f").status(), "over the limit of 365d"));
}

TEST(LimitsTest, RuntimeLimitAnnotationOverTheCapIsAPodspecError) {
  for (const char* key : {kLabelRuntimeLimit, kLabelCheckpointInterval}) {
    auto s = ParsePodSchedulingSpec({}, {{key, "9999999999999h"}}, TopologyLevels::Default());
    ASSERT_FALSE(s.ok()) << key << " accepted: " << s->runtime_limit_s << "s";
    EXPECT_EQ(s.status().code(), StatusCode::kUnschedulableAndUnresolvable);
    EXPECT_EQ(s.status().plugin(), "podspec");
    EXPECT_TRUE(Has(s.status(), std::string(key) + ": invalid value \"9999999999999h\"")) << s.status().Message();
    EXPECT_TRUE(Has(s.status(), "at most 365d")) << s.status().Message();
  }
}

class LimitsEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = Engine::Create(EngineConfig{}, [this] { return now_; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    SyncBatch b;
    b.resync = true;
    for (int i = 0; i < 4; ++i) b.upsert_nodes.push_back(GpuNode("n" + std::to_string(i), "l0", "v" + std::to_string(i / 2)));
    ASSERT_TRUE(Sync(b).ok());
  }
  Status Sync(const SyncBatch& b) {
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  Status Add(PodInfo p) {
    SyncBatch b;
    b.upsert_pods.push_back(std::move(p));
    return Sync(b);
  }
  int64_t now_ = 1700000000;
  std::unique_ptr<Engine> engine_;
};

// A runtime limit near int64's end overflowed since + limit + grace in Overdue: the pod read as
// overdue and was evicted at once. Now it is refused on the pod and never reported overdue.
TEST_F(LimitsEngineTest, HugeRuntimeLimitNeitherOverflowsNorEvicts) {
  PodInfo p = GangPod("r", "", 1);
  p.annotations[kLabelRuntimeLimit] = "106751991167d";
  p.node_name = "n0";
  p.phase = PodPhase::kRunning;
  p.start_unix = now_;
  ASSERT_TRUE(Add(p).ok());
  now_ += 60;
  EXPECT_TRUE(engine_->Overdue().empty()) << engine_->Overdue()[0].reason;
  PodInfo q = GangPod("q", "", 1);
  q.annotations[kLabelRuntimeLimit] = "9999999999999h";
  ASSERT_TRUE(Add(q).ok());
  std::string gang;
  Status st = engine_->CheckPod("uid-q", &gang);
  EXPECT_EQ(st.plugin(), "podspec");
  EXPECT_TRUE(Has(st, "tidal.dev/runtime-limit")) << st.Message();
}

TEST_F(LimitsEngineTest, NodeOverTheGpuCapIsRefusedNamingIt) {
  SyncBatch b;
  NodeInfo n = GpuNode("huge", "l0", "v9");
  n.capacity.gpus = limits::kMaxGpusPerNode + 1;
  b.upsert_nodes.push_back(n);
  NodeInfo ok = GpuNode("big", "l0", "v9");
  ok.capacity.gpus = limits::kMaxGpusPerNode;
  b.upsert_nodes.push_back(ok);
  Status st = Sync(b);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(Has(st, "node huge: capacity.gpus: 1025 is over the limit of 1024 per node")) << st.Message();
  // The node within the cap is taken; the other is not (a 1024-GPU pod fits only "big").
  PodInfo p = GangPod("wide", "", 1, limits::kMaxGpusPerNode);
  ASSERT_TRUE(Add(p).ok());
  EXPECT_EQ(engine_->PlanPod("uid-wide").node, "big");
  for (auto [field, mutate] : std::vector<std::pair<std::string, std::function<void(NodeInfo&)>>>{
           {"capacity.memory_bytes", [](NodeInfo& x) { x.capacity.memory_bytes = limits::kMaxMemoryBytesPerNode + 1; }},
           {"capacity.cpu_milli", [](NodeInfo& x) { x.capacity.cpu_milli = limits::kMaxCpuMilliPerNode + 1; }},
           {"name", [](NodeInfo& x) { x.name = std::string(300, 'n'); }},
           {"label topology.tidal.dev/leaf", [](NodeInfo& x) { x.labels["topology.tidal.dev/leaf"] = std::string(2000, 'l'); }}}) {
    SyncBatch c;
    NodeInfo x = GpuNode("x", "l0", "v9");
    mutate(x);
    c.upsert_nodes.push_back(x);
    Status s = Sync(c);
    EXPECT_TRUE(Has(s, field)) << field << ": " << s.Message();
  }
}

// A pod asking for more than a node's worth, or a gang whose members x GPUs is over the cap, is
// kept (never dropped) and refused where it is reported: CheckPod / PlanPod, plugin podspec.
TEST_F(LimitsEngineTest, RequestsOverTheCapsStayPendingWithAReason) {
  PodInfo p = GangPod("fat", "", 1);
  p.request.memory_bytes = int64_t{1} << 62;
  ASSERT_TRUE(Add(p).ok());
  std::string gang;
  Status st = engine_->CheckPod("uid-fat", &gang);
  EXPECT_EQ(st.code(), StatusCode::kUnschedulableAndUnresolvable);
  EXPECT_EQ(st.plugin(), "podspec");
  EXPECT_TRUE(Has(st, "pod team/fat: request.memory_bytes: 4611686018427387904 is over the limit of 16Ti per node"))
      << st.Message();
  EXPECT_EQ(engine_->PlanPod("uid-fat").status.plugin(), "podspec");

  // 10000 members x 1024 GPUs = 10,240,000 GPUs > 2^20.
  PodInfo m = GangPod("m0", "vast", 10000, 1024);
  ASSERT_TRUE(Add(m).ok());
  st = engine_->CheckPod("uid-m0", &gang);
  EXPECT_EQ(st.plugin(), "podspec");
  EXPECT_TRUE(Has(st, "10000 members x 1024 GPUs = 10240000 GPUs is over the limit of 1048576 per workload"))
      << st.Message();
}

// A bound pod over the caps is charged at most the caps: the node's allocation does not overflow.
TEST_F(LimitsEngineTest, BoundPodOverTheCapsIsChargedAtMostTheCaps) {
  for (int i = 0; i < 4; ++i) {
    PodInfo p = GangPod("b" + std::to_string(i), "", 1);
    p.request = Resources{0, 0, std::numeric_limits<int64_t>::max() / 2};
    p.node_name = "n0";
    p.phase = PodPhase::kRunning;
    ASSERT_TRUE(Add(p).ok());
  }
  // n0 is full (memory), the others are not: a pod asking 1 byte of memory goes elsewhere.
  PodInfo small = GangPod("s", "", 1, 1);
  ASSERT_TRUE(Add(small).ok());
  PlanResult r = engine_->PlanPod("uid-s");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_NE(r.node, "n0");
}

TEST_F(LimitsEngineTest, OverlongNamesAndValuesAreRefusedNamingTheField) {
  PodInfo p = GangPod("x", "", 1);
  p.name = std::string(300, 'x');
  EXPECT_TRUE(Has(Add(p), ": name: 300 bytes, over the limit of 253"));
  PodInfo g = GangPod("g", std::string(5000, 'g'), 2);
  ASSERT_TRUE(Add(g).ok());
  std::string gang;
  Status st = engine_->CheckPod("uid-g", &gang);
  EXPECT_TRUE(Has(st, "tidal.dev/gang: a value of 5000 bytes, over the limit of 1024")) << st.Message();
  PodInfo o = GangPod("o", "", 1);
  o.annotations = {{limits::kOversizeAnnotation, "2000000"}};
  ASSERT_TRUE(Add(o).ok());
  st = engine_->CheckPod("uid-o", &gang);
  EXPECT_EQ(st.plugin(), "podspec");
  EXPECT_TRUE(Has(st, "2000000 bytes as a Sync message, over the limit of 1048576")) << st.Message();
}

// The Go shim forwards only the keys of shim/kube/pkg/convert/engine_keys.txt: it must list
// exactly the keys the engine reads, or a key would silently stop reaching the engine.
TEST(LimitsTest, ShimForwardsExactlyTheKeysTheEngineReads) {
  std::ifstream in(std::string(TIDAL_SOURCE_DIR) + "/shim/kube/pkg/convert/engine_keys.txt");
  ASSERT_TRUE(in.good());
  std::set<std::string> listed;
  for (std::string line; std::getline(in, line);) {
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) listed.insert(line);
  }
  const auto& read = podkeys::KeysRead();
  EXPECT_EQ(listed, std::set<std::string>(read.begin(), read.end()));
  EXPECT_TRUE(listed.count(kLabelRuntimeLimit) && listed.count(kJobSetExclusiveTopology) && listed.count(kPodGroupName));
}

TEST(LimitsTest, WorkloadFilesAreBounded) {
  auto load = [](const std::string& body) {
    auto doc = ParseDocument("workloads:\n  - name: w\n" + body, "w.yaml");
    return doc.ok() ? DecodeWorkloads(*doc).status() : doc.status();
  };
  EXPECT_TRUE(load("    request: {gpus: 8}\n    members: 10000\n").ok());
  EXPECT_TRUE(Has(load("    request: {gpus: 8}\n    members: 10001\n"), "workloads[0].members: must be 1..10000"));
  EXPECT_TRUE(Has(load("    request: {gpus: 2000}\n"), "workloads[0].request.gpus: 2000 is over the limit of 1024"));
  EXPECT_TRUE(Has(load("    request: {gpus: 1024}\n    members: 2000\n"), "over the limit of 1048576 per workload"));
  EXPECT_TRUE(Has(load("    request: {gpus: 1}\n    runtimeLimit: 400d\n"), "workloads[0].runtimeLimit: invalid duration"));
  EXPECT_TRUE(Has(load("    request: {gpus: 1}\n    runtimeLimit: 99999999999\n"), "workloads[0].runtimeLimit: "));
}

StatusOr<EngineConfig> Config(const std::string& text) { return ParseEngineConfig(text, "engine.yaml"); }

TEST(LimitsTest, ConfigRefusesEmptyAndInvalidTopologyKeysNamingThePath) {
  auto st = Config("topology:\n  levels:\n    - {name: leaf, label: \"\"}\n").status();
  EXPECT_TRUE(Has(st, "topology.levels[0].label: must not be empty")) << st.Message();
  st = Config("topology:\n  levels:\n    - {name: leaf, label: \"Not A Key\"}\n").status();
  EXPECT_TRUE(Has(st, "topology.levels[0].label: invalid node label key")) << st.Message();
  st = Config("topology:\n  levels:\n    - {name: \"\", label: a.b/c}\n").status();
  EXPECT_TRUE(Has(st, "topology.levels[0]: level name must not be empty")) << st.Message();
  st = Config("topology:\n  levels:\n    - {name: \"le af\"}\n").status();
  EXPECT_TRUE(Has(st, "topology.levels[0].name: invalid level name")) << st.Message();
  st = Config("topology:\n  levels:\n    - {name: a, label: x.io/r}\n    - {name: b, label: x.io/r}\n").status();
  EXPECT_TRUE(Has(st, "topology.levels[1].label: \"x.io/r\" is already the label of topology.levels[0] (a)")) << st.Message();
  EXPECT_TRUE(Has(Config("poolLabel: \"\"\n").status(), "poolLabel: invalid node label key"));
  EXPECT_TRUE(Has(Config("schedulerName: \"\"\n").status(), "schedulerName: must not be empty"));
  EXPECT_TRUE(Has(Config("runtimeLimit: {graceSeconds: 10}\nusageHalfLife: 400d\n").status(), "usageHalfLife"));
  // Omitting the label still gives the default; a valid one is kept.
  auto ok = Config("topology:\n  levels:\n    - {name: leaf}\n    - {name: rack, label: example.com/rack}\n");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->levels.levels[0].label_key, "topology.tidal.dev/leaf");
  EXPECT_EQ(ok->levels.levels[1].label_key, "example.com/rack");
}

}  // namespace
}  // namespace tidal
