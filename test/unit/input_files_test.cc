// core/io input files, regressions from the admin exploration (config and input-file parsing):
// GPUs are whole devices, one YAML document per file, gpus vs nvidia.com/gpu, large integers,
// every problem of a mapping reported, cluster-file node errors with line and path, directories,
// YAML merge keys.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/io/cluster_file.h"
#include "core/io/document.h"
#include "core/io/workload_file.h"
#include "test/support/text.h"

namespace tidal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::LineOfText;

StatusOr<std::vector<Workload>> Workloads(const std::string& yaml) {
  auto d = ParseDocument(yaml, "w.yaml");
  if (!d.ok()) return d.status();
  return DecodeWorkloads(*d);
}

StatusOr<ClusterSpec> Cluster(const std::string& yaml) {
  auto d = ParseDocument(yaml, "c.yaml");
  if (!d.ok()) return d.status();
  return DecodeClusterSpec(*d);
}

// ---------------------------------------------------------------------------------------------
// GPUs are whole devices (was: 0.5 and 100m rounded up to 1, 1.5 to 2, without a word)
// ---------------------------------------------------------------------------------------------

class FractionalGpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FractionalGpusTest, RequestIsRefusedNamingTheField) {
  const std::string yaml = "workloads:\n  - name: w\n    request: {gpus: " + GetParam() + "}\n";
  auto ws = Workloads(yaml);
  ASSERT_FALSE(ws.ok()) << "a fractional GPU request must not be rounded";
  EXPECT_THAT(ws.status().Message(), HasSubstr("w.yaml:3: workloads[0].request.gpus: "));
  EXPECT_THAT(ws.status().Message(), HasSubstr("not a whole number of GPUs"));
}

TEST_P(FractionalGpusTest, NvidiaAliasIsRefusedToo) {
  auto ws = Workloads("workloads:\n  - name: w\n    request: {nvidia.com/gpu: " + GetParam() + "}\n");
  ASSERT_FALSE(ws.ok());
  EXPECT_THAT(ws.status().Message(), HasSubstr("workloads[0].request.nvidia.com/gpu: "));
}

TEST_P(FractionalGpusTest, CapacityIsRefused) {
  auto spec = Cluster("levels: [leaf]\nfabric: {leaf: 1, node: 1, capacity: {gpus: " + GetParam() + "}}\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().Message(), HasSubstr("c.yaml:2: fabric.capacity.gpus: "));
  EXPECT_THAT(spec.status().Message(), HasSubstr("not a whole number of GPUs"));
}

INSTANTIATE_TEST_SUITE_P(Values, FractionalGpusTest, ::testing::Values("0.5", "1.5", "100m", "\"0.5\"", "1500m"),
                         [](const auto& i) { return "Case" + std::to_string(i.index); });

TEST(WholeGpusTest, WholeQuantitiesAndOtherResourcesStillParse) {
  auto ws = Workloads("workloads:\n  - name: w\n    request: {gpus: 3000m, cpu: 0.5, memory: 1.5Gi}\n");
  ASSERT_TRUE(ws.ok()) << ws.status().ToString();
  EXPECT_EQ((*ws)[0].per_member.gpus, 3);
  EXPECT_EQ((*ws)[0].per_member.cpu_milli, 500) << "cpu keeps its milli-units";
  EXPECT_EQ((*ws)[0].per_member.memory_bytes, int64_t{3} << 29);
}

// ---------------------------------------------------------------------------------------------
// gpus and nvidia.com/gpu in one mapping (was: nvidia.com/gpu won silently, whatever the order)
// ---------------------------------------------------------------------------------------------

TEST(GpuAliasTest, DifferentValuesAreAnErrorWhateverTheOrder) {
  for (const std::string req : {"{gpus: 8, nvidia.com/gpu: 1}", "{nvidia.com/gpu: 1, gpus: 8}"}) {
    auto ws = Workloads("workloads:\n  - name: a\n    request: " + req + "\n");
    ASSERT_FALSE(ws.ok()) << req;
    EXPECT_EQ(ws.status().Message(),
              "w.yaml:3: workloads[0].request.nvidia.com/gpu: 1 differs from gpus (8): they name the same GPUs; give "
              "one of them");
  }
  auto spec = Cluster(
      "levels: [leaf]\nnodes:\n  - {name: a, labels: {topology.tidal.dev/leaf: l0}, capacity: {nvidia.com/gpu: 2, gpus: 8}}\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().Message(), HasSubstr("c.yaml:3: nodes[0].capacity.nvidia.com/gpu: 2 differs from gpus (8)"));
}

TEST(GpuAliasTest, EqualValuesOrOneOfThemAreAccepted) {
  auto both = Workloads("workloads:\n  - name: a\n    request: {gpus: 4, nvidia.com/gpu: 4}\n");
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ((*both)[0].per_member.gpus, 4);
  auto alias = Workloads("workloads:\n  - name: a\n    request: {nvidia.com/gpu: 2}\n");
  ASSERT_TRUE(alias.ok()) << alias.status().ToString();
  EXPECT_EQ((*alias)[0].per_member.gpus, 2);
}

// ---------------------------------------------------------------------------------------------
// Large integers (was: 'unknown suffix "e+20"')
// ---------------------------------------------------------------------------------------------

TEST(LargeQuantityTest, BeyondRangeIsTooLarge) {
  for (const std::string v : {"99999999999999999999", "9223372036854775807", "1e30"}) {
    auto ws = Workloads("workloads:\n  - name: a\n    request: {cpu: " + v + "}\n");
    ASSERT_FALSE(ws.ok()) << v;
    EXPECT_THAT(ws.status().Message(), HasSubstr("too large")) << v;
    EXPECT_THAT(ws.status().Message(), ::testing::Not(HasSubstr("suffix"))) << v;
  }
}

TEST(LargeQuantityTest, UnquotedExponentIsTheNumberYamlReads) {
  auto ws = Workloads("workloads:\n  - name: a\n    request: {cpu: 1e3, gpus: 1e1}\n");
  ASSERT_TRUE(ws.ok()) << ws.status().ToString();
  EXPECT_EQ((*ws)[0].per_member.cpu_milli, 1000000);
  EXPECT_EQ((*ws)[0].per_member.gpus, 10);
}

TEST(LargeQuantityTest, NineteenDigitIntegersStayIntegers) {
  auto d = ParseDocument("a: 9223372036854775807\nb: -9223372036854775808\nc: 1000000000000000000\n");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->root["a"].is_number_integer());
  EXPECT_EQ(d->root["a"].get<int64_t>(), INT64_MAX);
  EXPECT_EQ(d->root["b"].get<int64_t>(), INT64_MIN);
  EXPECT_EQ(d->root["c"].get<int64_t>(), int64_t{1000000000000000000});
}

// ---------------------------------------------------------------------------------------------
// One YAML document per file (was: a second one after --- silently ignored)
// ---------------------------------------------------------------------------------------------

TEST(OneDocumentTest, SecondDocumentIsAnErrorAtItsSeparator) {
  auto d = ParseDocument("queues:\n  - name: a\n---\nqueues:\n  - name: b\n", "multi.yaml");
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().Message(), ::testing::StartsWith("multi.yaml:3: more than one YAML document"));
  auto third = ParseDocument("a: 1\n---\nb: 2\n--- \nc: 3\n", "m.yaml");
  ASSERT_FALSE(third.ok());
  EXPECT_THAT(third.status().Message(), ::testing::StartsWith("m.yaml:2: more than one YAML document"));
}

TEST(OneDocumentTest, LeadingOrTrailingSeparatorIsOneDocument) {
  for (const std::string text : {"---\na: 1\n", "a: 1\n---\n", "# c\n---\na: 1\n...\n"}) {
    auto d = ParseDocument(text);
    ASSERT_TRUE(d.ok()) << text << ": " << d.status().ToString();
    EXPECT_EQ(d->root["a"], 1) << text;
  }
}

// ---------------------------------------------------------------------------------------------
// A directory (was: "document: must be a mapping")
// ---------------------------------------------------------------------------------------------

TEST(DirectoryTest, ReadFileSaysItIsADirectory) {
  const std::string dir = ::testing::TempDir();
  auto t = ReadFile(dir);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().Message(), dir + ": is a directory, not a file");
  EXPECT_FALSE(LoadDocument(dir).ok());
}

// ---------------------------------------------------------------------------------------------
// YAML merge keys (was: "queues[0].<<: unknown field")
// ---------------------------------------------------------------------------------------------

TEST(MergeKeyTest, MergesTheAnchoredMappingAndExplicitKeysWin) {
  const std::string yaml =
      "defaults: &d\n  weight: 2\n  nominal: {gpus: 8}\nqueues:\n  - name: a\n    <<: *d\n  - <<: *d\n    name: b\n"
      "    weight: 3\n";
  auto d = ParseDocument(yaml, "m.yaml");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const auto& q = d->root["queues"];
  EXPECT_EQ(q[0], nlohmann::json::parse(R"({"name": "a", "weight": 2, "nominal": {"gpus": 8}})"));
  EXPECT_EQ(q[1], nlohmann::json::parse(R"({"name": "b", "weight": 3, "nominal": {"gpus": 8}})"));
  EXPECT_FALSE(q[0].contains("<<"));
  // A merged field's line is where its value is written (in the anchor).
  EXPECT_EQ(d->LineOf("queues[0].weight"), 2);
}

TEST(MergeKeyTest, ListOfMappingsFirstWins) {
  auto d = ParseDocument("a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc:\n  <<: [*a, *b]\n");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->root["c"], nlohmann::json::parse(R"({"x": 1, "y": 1, "z": 2})"));
}

TEST(MergeKeyTest, MergingAScalarIsAClearError) {
  auto d = ParseDocument("a: 1\nc:\n  <<: 5\n", "m.yaml");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().Message(), "m.yaml:3: c.<<: a merge key takes a mapping or a list of mappings (e.g. <<: *defaults)");
}

TEST(MergeKeyTest, QuotedKeyIsAnOrdinaryKey) {
  auto d = ParseDocument("c:\n  \"<<\": 5\n");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->root["c"]["<<"], 5);
}

// ---------------------------------------------------------------------------------------------
// Every problem of a mapping (was: the first only)
// ---------------------------------------------------------------------------------------------

TEST(EveryProblemTest, WorkloadReportsEachBadField) {
  auto ws = Workloads("workloads:\n  - name: a\n    members: 0\n    request: {gpus: 1}\n    priority: x\n    colour: red\n");
  ASSERT_FALSE(ws.ok());
  EXPECT_THAT(ws.status().reasons(),
              ElementsAre("w.yaml:3: workloads[0].members: must be 1..10000, got 0",
                          "w.yaml:5: workloads[0].priority: must be an integer", "w.yaml:6: workloads[0].colour: unknown field"));
}

// ---------------------------------------------------------------------------------------------
// Cluster files: overrides, duplicate names, missing labels (was: last override won silently;
// errors without line or path)
// ---------------------------------------------------------------------------------------------

TEST(ClusterNodesTest, NodeOverriddenTwiceNamesBothEntries) {
  const std::string yaml =
      "levels: [leaf]\nfabric: {leaf: 1, node: 1, capacity: {gpus: 8}}\noverrides:\n"
      "  - {node: node-0, allocated: {gpus: 2}}\n  - {node: node-0, allocated: {gpus: 6}}\n";
  auto spec = Cluster(yaml);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().Message(),
            "c.yaml:5: overrides[1].node: node node-0 is overridden already by overrides[0] (give one override per node)");
}

TEST(ClusterNodesTest, DuplicateNodeNameHasLineAndPath) {
  const std::string yaml =
      "levels: [leaf]\nnodes:\n  - {name: a1, labels: {topology.tidal.dev/leaf: l0}, capacity: {gpus: 8}}\n"
      "  - {name: a1, labels: {topology.tidal.dev/leaf: l1}, capacity: {gpus: 8}}\n";
  auto spec = Cluster(yaml);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().Message(), "c.yaml:4: nodes[1].name: duplicate node \"a1\" (first at nodes[0])");
}

TEST(ClusterNodesTest, NodeNamedLikeAGeneratedOne) {
  auto spec = Cluster(
      "levels: [leaf]\nfabric: {leaf: 1, node: 1}\nnodes:\n  - {name: node-0, labels: {topology.tidal.dev/leaf: x}, "
      "capacity: {gpus: 8}}\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().Message(), "c.yaml:4: nodes[0].name: duplicate node \"node-0\" (first generated by fabric)");
}

TEST(ClusterNodesTest, MissingAndInvalidLabelsHaveLineAndPath) {
  const std::string missing = "levels: [leaf]\nnodes:\n  - {name: a, capacity: {gpus: 8}}\n";
  auto spec = Cluster(missing);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().Message(),
            "c.yaml:3: nodes[0].labels: node a has no label topology.tidal.dev/leaf (topology level leaf; give labels or "
            "switch)");
  const std::string bad = "levels: [leaf]\nnodes:\n  - name: a\n    capacity: {gpus: 8}\n    labels:\n      topology.tidal.dev/leaf: \"-x\"\n";
  auto b = Cluster(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().Message(),
              HasSubstr("c.yaml:" + std::to_string(LineOfText(bad, "-x")) + ": nodes[0].labels.topology.tidal.dev/leaf: node a, topology level leaf: invalid value"));
}

// Found by fuzz_engine_config (2 GB and minutes in one input): aliases are expanded where they are
// used, so 30 lines of nested aliases named a billion values. The expansion is bounded.
TEST(OneDocumentTest, NestedAliasesCannotExpandWithoutBound) {
  std::string text = "a0: &a0 [x, x]\n";
  for (int i = 1; i < 30; ++i) text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + "]\n";
  auto d = ParseDocument(text, "laughs.yaml");
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().ToString(), HasSubstr("values (aliases or merge keys used over and over)")) << d.status().ToString();
  // Merge keys of merge keys: the merged mappings share paths, so the work, not the paths, is bounded.
  std::string merges = "m0: &m0 {x: 1}\n";
  for (int i = 1; i < 30; ++i) merges += "m" + std::to_string(i) + ": &m" + std::to_string(i) + " {<<: [*m" + std::to_string(i - 1) + ", *m" + std::to_string(i - 1) + "]}\n";
  auto m = ParseDocument(merges, "merges.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().ToString(), HasSubstr("aliases or merge keys used over and over")) << m.status().ToString();
}

}  // namespace
}  // namespace tidal
