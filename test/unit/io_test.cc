// core/io: documents (YAML/JSON, types, line numbers, located errors), durations and cluster files
// (fabric generator, levels, switches, nodes, overrides); workload files: workload_file_test.cc.
#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/io/cluster_file.h"
#include "core/io/document.h"
#include "core/io/workload_file.h"
#include "test/support/builders.h"
#include "test/support/text.h"

namespace tidal {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::CaseName;
using testing::LineOfText;
using json = nlohmann::json;

template <typename T>
  requires requires(const T& t) { t.name; }
void PrintTo(const T& c, std::ostream* os) {
  *os << c.name;
}

constexpr int64_t kGi = int64_t{1} << 30;

Document Parse(const std::string& text, const std::string& file = "f.yaml") {
  auto d = ParseDocument(text, file);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(d).value() : Document{};
}

// ---------------------------------------------------------------------------------------------
// ParseDocument: scalar types
// ---------------------------------------------------------------------------------------------

struct ScalarCase {
  std::string name;
  std::string yaml_value;  // as written after "v: "
  json expected;
};

class ScalarTest : public ::testing::TestWithParam<ScalarCase> {};

TEST_P(ScalarTest, KeepsYamlTypes) {
  Document d = Parse("v: " + GetParam().yaml_value + "\n");
  ASSERT_TRUE(d.root.is_object());
  const json& v = d.root.at("v");
  EXPECT_EQ(static_cast<int>(v.type()), static_cast<int>(GetParam().expected.type())) << v.dump();
  EXPECT_EQ(v, GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ScalarTest,
    ::testing::Values(ScalarCase{"PlainInteger", "8", json(8)},
                      ScalarCase{"SingleQuotedIntegerIsString", "'8'", json("8")},
                      ScalarCase{"DoubleQuotedIntegerIsString", "\"8\"", json("8")},
                      ScalarCase{"NegativeInteger", "-3", json(-3)},
                      ScalarCase{"PlusSignInteger", "+7", json(7)},
                      ScalarCase{"Float", "1.5", json(1.5)},
                      ScalarCase{"LeadingDotFloat", ".5", json(0.5)},
                      ScalarCase{"ExponentFloat", "1e3", json(1000.0)},
                      ScalarCase{"QuotedFloatIsString", "'1.5'", json("1.5")},
                      ScalarCase{"TooLongForIntegerIsFloat", "12345678901234567890", json(12345678901234567890.0)},
                      ScalarCase{"True", "true", json(true)},
                      ScalarCase{"FalseCapitalised", "False", json(false)},
                      ScalarCase{"QuotedTrueIsString", "\"true\"", json("true")},
                      ScalarCase{"YesIsString", "yes", json("yes")},
                      ScalarCase{"Tilde", "~", json(nullptr)},
                      ScalarCase{"NullWord", "null", json(nullptr)},
                      ScalarCase{"Empty", "", json(nullptr)},
                      ScalarCase{"QuotedTildeIsString", "'~'", json("~")},
                      ScalarCase{"QuotedEmptyIsString", "''", json("")},
                      ScalarCase{"Quantity", "512Gi", json("512Gi")},
                      ScalarCase{"Duration", "12h", json("12h")},
                      ScalarCase{"InfIsString", "inf", json("inf")},
                      ScalarCase{"FlowList", "[1, '2', x]", json::array({1, "2", "x"})},
                      ScalarCase{"FlowMap", "{a: 1, b: \"c\"}", json({{"a", 1}, {"b", "c"}})}),
    CaseName());

TEST(DocumentTest, JsonDocument) {
  Document d = Parse(R"({"a": 1, "b": [1, "2", {"c": null, "d": true}], "e": "512Gi"})", "f.json");
  EXPECT_EQ(d.root, json::parse(R"({"a": 1, "b": [1, "2", {"c": null, "d": true}], "e": "512Gi"})"));
  EXPECT_EQ(d.file, "f.json");
  EXPECT_EQ(d.LineOf("b[2].d"), 1);
}

TEST(DocumentTest, MultiLineJsonTracksLines) {
  const std::string text = "{\n  \"name\": \"x\",\n  \"request\": {\n    \"gpus\": 8\n  }\n}\n";
  Document d = Parse(text, "f.json");
  EXPECT_EQ(d.LineOf("name"), 2);
  EXPECT_EQ(d.LineOf("request.gpus"), 4);
  EXPECT_EQ(d.root.at("request").at("gpus"), 8);
}

TEST(DocumentTest, EmptyDocumentIsNull) {
  Document d = Parse("");
  EXPECT_TRUE(d.root.is_null());
}

TEST(DocumentTest, AnchorsAndAliasesResolve) {
  Document d = Parse("a: &x {gpus: 2}\nb: *x\n");
  EXPECT_EQ(d.root.at("b"), json({{"gpus", 2}}));
}

// ---------------------------------------------------------------------------------------------
// Lines and Locate
// ---------------------------------------------------------------------------------------------

const char* const kWorkloadsYaml =
    "# comment line\n"              // 1
    "workloads:\n"                  // 2
    "  - name: a\n"                 // 3
    "    request: {gpus: 1}\n"      // 4
    "  - name: b\n"                 // 5
    "    request:\n"                // 6
    "      gpus: 8\n"               // 7
    "      memory: 512Gi\n"         // 8
    "    topology:\n"               // 9
    "\n"                            // 10
    "      required: leaf\n"        // 11
    "    queue:\n"                  // 12
    "    members: 4\n";             // 13

struct LineCase {
  std::string name;
  std::string field;
  int line;
};

class LineOfTest : public ::testing::TestWithParam<LineCase> {};

TEST_P(LineOfTest, Finds) {
  Document d = Parse(kWorkloadsYaml);
  EXPECT_EQ(d.LineOf(GetParam().field), GetParam().line);
}

INSTANTIATE_TEST_SUITE_P(Table, LineOfTest,
                         ::testing::Values(LineCase{"TopLevelKey", "workloads", 2},
                                           LineCase{"ListItem", "workloads[1]", 5},
                                           LineCase{"ScalarField", "workloads[1].name", 5},
                                           LineCase{"FlowMapping", "workloads[0].request", 4},
                                           LineCase{"InsideFlowMapping", "workloads[0].request.gpus", 4},
                                           LineCase{"BlockMappingKey", "workloads[1].request", 6},
                                           LineCase{"NestedScalar", "workloads[1].request.memory", 8},
                                           LineCase{"AfterBlankLine", "workloads[1].topology.required", 11},
                                           LineCase{"EmptyValueIsOnItsKeysLine", "workloads[1].queue", 12},
                                           LineCase{"FieldAfterEmptyValue", "workloads[1].members", 13},
                                           LineCase{"UnknownFieldFallsBackToParent", "workloads[1].request.cpu", 6},
                                           LineCase{"UnknownIndexFallsBackToList", "workloads[9].name", 2},
                                           LineCase{"UnknownTopLevelFallsBackToRoot", "nothing", 2}),
                         CaseName());

TEST(LocateTest, PrefixesFileAndLineToEachReason) {
  Document d = Parse(kWorkloadsYaml, "w.yaml");
  Status s = Status::Error("workloads[1].request.memory: too much", "io");
  s.AddReason("workloads[0].name: taken");
  Status out = d.Locate(s);
  EXPECT_EQ(out.code(), StatusCode::kError);
  EXPECT_EQ(out.plugin(), "io");
  EXPECT_THAT(out.reasons(), ::testing::ElementsAre("w.yaml:8: workloads[1].request.memory: too much",
                                                    "w.yaml:3: workloads[0].name: taken"));
}

struct LocateCase {
  std::string name;
  std::string reason;
  std::string located;
};

class LocateTableTest : public ::testing::TestWithParam<LocateCase> {};

TEST_P(LocateTableTest, Formats) {
  Document d = Parse(kWorkloadsYaml, "w.yaml");
  EXPECT_EQ(d.Locate(Status::Unschedulable(GetParam().reason)).Message(), GetParam().located);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LocateTableTest,
    ::testing::Values(LocateCase{"FieldReason", "workloads[1].topology.required: bad", "w.yaml:11: workloads[1].topology.required: bad"},
                      LocateCase{"NodeReasonHasNoLine", "node n5: label x: missing", "w.yaml: node n5: label x: missing"},
                      LocateCase{"NoFieldUsesRootLine", "something broke", "w.yaml:2: something broke"},
                      LocateCase{"UnknownFieldUsesEnclosing", "workloads[0].bogus: unknown field",
                                 "w.yaml:3: workloads[0].bogus: unknown field"}),
    CaseName());

TEST(LocateTest, OkStaysOk) {
  Document d = Parse(kWorkloadsYaml);
  EXPECT_TRUE(d.Locate(Status::Ok()).ok());
}

// ---------------------------------------------------------------------------------------------
// ParseDocument errors
// ---------------------------------------------------------------------------------------------

struct DocErrorCase {
  std::string name;
  std::string text;
  std::string prefix;  // the message starts with this
};

class DocumentErrorTest : public ::testing::TestWithParam<DocErrorCase> {};

TEST_P(DocumentErrorTest, ReportsLine) {
  auto d = ParseDocument(GetParam().text, "f.yaml");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kError);
  EXPECT_THAT(d.status().Message(), StartsWith(GetParam().prefix));
}

INSTANTIATE_TEST_SUITE_P(
    Table, DocumentErrorTest,
    ::testing::Values(
        DocErrorCase{"DuplicateTopLevelKey", "a: 1\nb: 2\na: 3\n", "f.yaml:3: a: duplicate key"},
        DocErrorCase{"DuplicateNestedKeyReportsTheDuplicate", "a: 1\nb:\n  c: 2\n  d: 0\n  c: 3\n", "f.yaml:5: b.c: duplicate key"},
        DocErrorCase{"DuplicateInListItem", "w:\n  - name: x\n    name: y\n", "f.yaml:3: w[0].name: duplicate key"},
        DocErrorCase{"DuplicateJsonKey", "{\"a\": 1,\n \"a\": 2}", "f.yaml:2: a: duplicate key"},
        DocErrorCase{"UnclosedFlowSequence", "a: 1\nb: [1, 2\nc: 3\n", "f.yaml:3: syntax error: "},
        DocErrorCase{"BadIndentation", "a: 1\n  b: 2\n", "f.yaml:2: syntax error: "},
        DocErrorCase{"UnclosedFlowMapping", "a: 1\nb: {c: 2\n", "f.yaml:3: syntax error: end of map flow not found"},
        DocErrorCase{"NestedPlainMapping", "a: 1\nb: c: d\n", "f.yaml:2: syntax error: illegal map value"},
        DocErrorCase{"SequenceInsideMapping", "a: 1\n- b\n", "f.yaml:2: syntax error: "},
        DocErrorCase{"ExtraFlowEnd", "a: [1, 2]]\n", "f.yaml:1: syntax error: "},
        DocErrorCase{"TabIndentation", "a:\n\tb: 1\n", "f.yaml:2: syntax error: "},
        DocErrorCase{"NonScalarKey", "? [1, 2]\n: 3\n", "f.yaml:1: document: keys must be scalars"}),
    CaseName());

TEST(DocumentTest, LoadDocumentMissingFile) {
  auto d = LoadDocument("/nonexistent/tidal.yaml");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().Message(), "/nonexistent/tidal.yaml: cannot open file");
}

TEST(DocumentTest, LoadDocumentUsesPathInErrors) {
  const std::string path = std::string(TIDAL_SOURCE_DIR) + "/deploy/examples/sample-fabric.yaml";
  auto d = LoadDocument(path);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->file, path);
  EXPECT_THAT(d->Locate(Status::Error("fabric.block: bad")).Message(), StartsWith(path + ":"));
}

// ---------------------------------------------------------------------------------------------
// ParseDurationSeconds
// ---------------------------------------------------------------------------------------------

struct DurationCase {
  std::string name;
  std::string text;
  bool ok;
  int64_t seconds;
  std::string error;
};

class DurationTest : public ::testing::TestWithParam<DurationCase> {};

TEST_P(DurationTest, Parses) {
  const auto& c = GetParam();
  auto d = ParseDurationSeconds(c.text, "workloads[0].runtimeLimit");
  ASSERT_EQ(d.ok(), c.ok) << (d.ok() ? std::to_string(*d) : d.status().ToString());
  if (c.ok) {
    EXPECT_EQ(*d, c.seconds);
  } else {
    EXPECT_THAT(d.status().Message(), StartsWith("workloads[0].runtimeLimit: invalid duration \"" + c.text + "\": "));
    EXPECT_THAT(d.status().Message(), HasSubstr(c.error));
    EXPECT_THAT(d.status().Message(), HasSubstr("(examples: 90s, 30m, 12h, 1h30m, 2d, or seconds as a number)"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, DurationTest,
    ::testing::Values(DurationCase{"Seconds", "90s", true, 90, ""}, DurationCase{"Minutes", "30m", true, 1800, ""},
                      DurationCase{"Hours", "12h", true, 43200, ""}, DurationCase{"Days", "2d", true, 172800, ""},
                      DurationCase{"HoursAndMinutes", "1h30m", true, 5400, ""},
                      DurationCase{"AllUnits", "1d2h3m4s", true, 93784, ""},
                      DurationCase{"RepeatedUnit", "10s5s", false, 0, "unit 's' repeated or out of order"},
                      DurationCase{"UnorderedUnits", "5s1h", false, 0, "unit 'h' repeated or out of order"},
                      DurationCase{"PlainNumber", "45", true, 45, ""}, DurationCase{"Zero", "0", true, 0, ""},
                      DurationCase{"ZeroWithUnit", "0h", true, 0, ""},
                      DurationCase{"Empty", "", false, 0, "empty"},
                      DurationCase{"UnitOnly", "h", false, 0, "expected a number at position 0"},
                      DurationCase{"DoubleUnit", "1hh", false, 0, "expected a number at position 2"},
                      DurationCase{"MissingLastUnit", "1h30", false, 0, "missing unit after the last number"},
                      DurationCase{"UnknownUnit", "5x", false, 0, "unknown unit 'x'"},
                      DurationCase{"Weeks", "1w", false, 0, "unknown unit 'w'"},
                      DurationCase{"Fraction", "1.5h", false, 0, "unknown unit '.'"},
                      DurationCase{"Negative", "-5s", false, 0, "expected a number at position 0"},
                      DurationCase{"Space", "5 s", false, 0, "unknown unit ' '"},
                      DurationCase{"TooManyDigits", "99999999999999999999", false, 0, "too large"},
                      DurationCase{"OverflowByUnit", "9999999999999999d", false, 0, "too large"},
                      DurationCase{"OverflowBySum", "9223372036854775807s1s", false, 0, "too large"}),
    CaseName());

// ---------------------------------------------------------------------------------------------
// DecodeClusterSpec
// ---------------------------------------------------------------------------------------------

StatusOr<ClusterSpec> DecodeCluster(const std::string& yaml) {
  auto d = ParseDocument(yaml, "c.yaml");
  if (!d.ok()) return d.status();
  return DecodeClusterSpec(*d);
}

struct FabricCase {
  std::string name;
  std::string yaml;
  int32_t nodes;
  int32_t vertices;  // after ClusterState::Build
};

class FabricTest : public ::testing::TestWithParam<FabricCase> {};

TEST_P(FabricTest, GeneratesNodes) {
  auto spec = DecodeCluster(GetParam().yaml);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(static_cast<int32_t>(spec->nodes.size()), GetParam().nodes);
  for (size_t i = 0; i < spec->nodes.size(); ++i) EXPECT_EQ(spec->nodes[i].name, "node-" + std::to_string(i));
  auto st = ClusterState::Build(spec->levels, spec->nodes);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->vertex_count(), GetParam().vertices);
}

INSTANTIATE_TEST_SUITE_P(
    Table, FabricTest,
    ::testing::Values(FabricCase{"Default", "fabric: {block: 2, leaf: 4, nvlink: 4, node: 4}\n", 128, 1 + 2 + 8 + 32},
                      FabricCase{"Uneven", "fabric: {block: 2, leaf: 3, nvlink: 2, node: 4}\n", 48, 1 + 2 + 6 + 12},
                      FabricCase{"Single", "fabric: {block: 1, leaf: 1, nvlink: 1, node: 1}\n", 1, 4},
                      FabricCase{"CustomLevels", "levels: [zone, rack]\nfabric: {zone: 3, rack: 2, node: 5}\n", 30, 1 + 3 + 6},
                      FabricCase{"NoLevels", "levels: []\nfabric: {node: 7}\n", 7, 1}),
    CaseName());

TEST(ClusterFileTest, FabricLabelsCapacityAndModel) {
  auto spec = DecodeCluster(
      "fabric:\n  block: 2\n  leaf: 3\n  nvlink: 2\n  node: 4\n  capacity: {gpus: 4, cpu: 32, memory: 256Gi}\n"
      "  gpuModel: a100\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->nodes.size(), 48u);
  const Node& last = spec->nodes.back();
  EXPECT_EQ(last.name, "node-47");
  EXPECT_EQ(last.labels.at("topology.tidal.dev/block"), "block-1");
  EXPECT_EQ(last.labels.at("topology.tidal.dev/leaf"), "leaf-5");
  EXPECT_EQ(last.labels.at("topology.tidal.dev/nvlink"), "nvlink-11");
  const Node& fifth = spec->nodes[4];
  EXPECT_EQ(fifth.labels.at("topology.tidal.dev/nvlink"), "nvlink-1");
  EXPECT_EQ(fifth.labels.at("topology.tidal.dev/leaf"), "leaf-0");
  EXPECT_EQ(last.capacity, (Resources{4, 32000, 256 * kGi}));
  EXPECT_EQ(last.gpu_model, "a100");
  EXPECT_EQ(last.health, NodeHealth::kReady);
  EXPECT_EQ(last.pool, Pool::kShared);
  EXPECT_TRUE(last.allocated.IsZero());
}

TEST(ClusterFileTest, FabricDefaultCapacity) {
  auto spec = DecodeCluster("fabric: {block: 1, leaf: 1, nvlink: 1, node: 2}\n");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->nodes[0].capacity, (Resources{8, 64000, 512 * kGi}));
}

TEST(ClusterFileTest, CustomLevelsAndLabelKeys) {
  auto spec = DecodeCluster(
      "levels:\n  - zone\n  - {name: rack, label: example.com/rack}\nfabric: {zone: 2, rack: 3, node: 2}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->levels.levels.size(), 2u);
  EXPECT_EQ(spec->levels.levels[0].name, "zone");
  EXPECT_EQ(spec->levels.levels[0].label_key, "topology.tidal.dev/zone");
  EXPECT_EQ(spec->levels.levels[1].name, "rack");
  EXPECT_EQ(spec->levels.levels[1].label_key, "example.com/rack");
  ASSERT_EQ(spec->nodes.size(), 12u);
  EXPECT_EQ(spec->nodes[11].labels.at("topology.tidal.dev/zone"), "zone-1");
  EXPECT_EQ(spec->nodes[11].labels.at("example.com/rack"), "rack-5");
  EXPECT_EQ(spec->nodes[11].labels.count("topology.tidal.dev/rack"), 0u);
}

TEST(ClusterFileTest, SwitchesGiveNodesTheirChainsLabels) {
  auto spec = DecodeCluster(R"(switches:
  - {name: spine-a, level: block}
  - {name: leaf-a1, level: leaf, parent: spine-a}
  - {name: nvl-a1x, level: nvlink, parent: leaf-a1}
  - {name: nvl-a1y, level: nvlink, parent: leaf-a1}
  - {name: spine-b, level: block}
  - {name: leaf-b1, level: leaf, parent: spine-b}
  - {name: nvl-b1x, level: nvlink, parent: leaf-b1}
nodes:
  - {name: gpu-0, switch: nvl-a1x, capacity: {gpus: 8}}
  - {name: gpu-1, switch: nvl-a1y, capacity: {gpus: 8}, labels: {team: ml}}
  - {name: gpu-2, switch: nvl-b1x, capacity: {gpus: 4}}
)");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->nodes.size(), 3u);
  const Node& g1 = spec->nodes[1];
  EXPECT_EQ(g1.labels.at("topology.tidal.dev/block"), "spine-a");
  EXPECT_EQ(g1.labels.at("topology.tidal.dev/leaf"), "leaf-a1");
  EXPECT_EQ(g1.labels.at("topology.tidal.dev/nvlink"), "nvl-a1y");
  EXPECT_EQ(g1.labels.at("team"), "ml");
  auto st = ClusterState::Build(spec->levels, spec->nodes);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->NodePath(st->FindNode("gpu-0")), "spine-a/leaf-a1/nvl-a1x/gpu-0");
  EXPECT_EQ(st->NodePath(st->FindNode("gpu-2")), "spine-b/leaf-b1/nvl-b1x/gpu-2");
  EXPECT_EQ(st->vertex_count(), 1 + 2 + 2 + 3);
  EXPECT_EQ(st->FreeGpus(st->root()), 20);
}

TEST(ClusterFileTest, ExplicitNodes) {
  auto spec = DecodeCluster(R"(nodes:
  - name: n0
    labels: {topology.tidal.dev/block: b, topology.tidal.dev/leaf: l, topology.tidal.dev/nvlink: 7}
    capacity: {nvidia.com/gpu: 4, cpu: 500m, memory: 1.5Gi}
    allocated: {gpus: 1}
    health: degraded
    pool: slurm
    gpuModel: h100
)");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->nodes.size(), 1u);
  const Node& n = spec->nodes[0];
  EXPECT_EQ(n.labels.at("topology.tidal.dev/nvlink"), "7") << "integer label values become strings";
  EXPECT_EQ(n.capacity, (Resources{4, 500, 3 * kGi / 2}));
  EXPECT_EQ(n.allocated, (Resources{1, 0, 0}));
  EXPECT_EQ(n.health, NodeHealth::kDegraded);
  EXPECT_EQ(n.pool, Pool::kSlurm);
  EXPECT_EQ(n.gpu_model, "h100");
}

TEST(ClusterFileTest, OverridesApply) {
  auto spec = DecodeCluster(R"(fabric: {block: 1, leaf: 1, nvlink: 2, node: 2}
overrides:
  - {node: node-3, allocated: {gpus: 4, cpu: 8}, health: unhealthy, pool: slurm}
  - {node: node-0, health: cordoned}
)");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->nodes[3].allocated, (Resources{4, 8000, 0}));
  EXPECT_EQ(spec->nodes[3].health, NodeHealth::kUnhealthy);
  EXPECT_EQ(spec->nodes[3].pool, Pool::kSlurm);
  EXPECT_EQ(spec->nodes[0].health, NodeHealth::kCordoned);
  EXPECT_EQ(spec->nodes[0].pool, Pool::kShared);
  EXPECT_EQ(spec->nodes[1].health, NodeHealth::kReady);
}

TEST(ClusterFileTest, NestedFieldPrefix) {
  auto d = ParseDocument("cluster:\n  fabric: {block: 1, leaf: 1, node: 2}\n", "s.yaml");
  ASSERT_TRUE(d.ok());
  auto spec = DecodeClusterSpec(*d, "cluster");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().Message(), "s.yaml:2: cluster.fabric.nvlink: required");
  auto missing = DecodeClusterSpec(*d, "topology");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().Message(), "topology: required");
}

TEST(ClusterFileTest, SampleFabricLoads) {
  auto st = LoadCluster(std::string(TIDAL_SOURCE_DIR) + "/deploy/examples/sample-fabric.yaml");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->node_count(), 128);
  EXPECT_EQ(st->node(st->FindNode("node-17")).health, NodeHealth::kUnhealthy);
}

TEST(ClusterFileTest, LoadClusterReportsBuildErrorsWithPath) {
  auto st = LoadCluster("/nonexistent/cluster.yaml");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.status().Message(), HasSubstr("/nonexistent/cluster.yaml: cannot open file"));
}

struct ClusterErrorCase {
  std::string name;
  std::string yaml;
  std::string line_of;  // the error's line is the first line containing this text ("" = no line)
  std::string message;  // after "c.yaml:LINE: "
};

class ClusterErrorTest : public ::testing::TestWithParam<ClusterErrorCase> {};

TEST_P(ClusterErrorTest, NamesFieldAndLine) {
  const auto& c = GetParam();
  auto spec = DecodeCluster(c.yaml);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kError);
  const std::string where = c.line_of.empty() ? "c.yaml: " : "c.yaml:" + std::to_string(LineOfText(c.yaml, c.line_of)) + ": ";
  EXPECT_EQ(spec.status().Message(), where + c.message);
}

const char* const kSwitchHead =
    "switches:\n"
    "  - {name: b0, level: block}\n"
    "  - {name: l0, level: leaf, parent: b0}\n"
    "  - {name: v0, level: nvlink, parent: l0}\n";

INSTANTIATE_TEST_SUITE_P(
    Table, ClusterErrorTest,
    ::testing::Values(
        // Switches
        ClusterErrorCase{"SwitchCycle",
                         "switches:\n  - {name: a, level: leaf, parent: b}\n  - {name: b, level: block, parent: a}\n",
                         "name: b,", "switches[1].parent: cycle: a -> b -> a"},
        ClusterErrorCase{"SwitchSelfParent", "switches:\n  - {name: a, level: block, parent: a}\n", "name: a",
                         "switches[0].parent: cycle: a -> a"},
        ClusterErrorCase{"SwitchUnknownParent", std::string(kSwitchHead) + "  - {name: v1, level: nvlink, parent: l9}\n",
                         "name: v1", "switches[3].parent: switch v1 names unknown parent \"l9\""},
        ClusterErrorCase{"SwitchWrongLevelParent", std::string(kSwitchHead) + "  - {name: v1, level: nvlink, parent: b0}\n",
                         "name: v1",
                         "switches[3].parent: switch v1 (level nvlink) has parent b0 at level block; expected level leaf"},
        ClusterErrorCase{"SwitchSameLevelParent", std::string(kSwitchHead) + "  - {name: l1, level: leaf, parent: l0}\n",
                         "name: l1",
                         "switches[3].parent: switch l1 (level leaf) has parent l0 at level leaf; expected level block"},
        ClusterErrorCase{"SwitchMissingParent", "switches:\n  - {name: l0, level: leaf}\n", "name: l0",
                         "switches[0].parent: switch l0 at level leaf needs a parent at level block"},
        ClusterErrorCase{"SwitchUnknownLevel", "switches:\n  - {name: r0, level: rack}\n", "name: r0",
                         "switches[0].level: unknown level \"rack\" for switch r0 (accepted: block, leaf, nvlink)"},
        ClusterErrorCase{"SwitchNodeLevel", "switches:\n  - {name: r0, level: node}\n", "name: r0",
                         "switches[0].level: unknown level \"node\" for switch r0 (accepted: block, leaf, nvlink)"},
        ClusterErrorCase{"SwitchDuplicateName", std::string(kSwitchHead) + "  - {name: l0, level: nvlink, parent: b0}\n",
                         "level: nvlink, parent: b0", "switches[3].name: duplicate switch \"l0\""},
        ClusterErrorCase{"SwitchUnknownField", "switches:\n  - name: b0\n    level: block\n    parnt: x\n", "parnt",
                         "switches[0].parnt: unknown field"},
        ClusterErrorCase{"SwitchMissingName", "switches:\n  - {level: block}\n", "level: block",
                         "switches[0].name: required"},
        ClusterErrorCase{"SwitchesNotAList", "switches: {name: b0}\n", "switches", "switches: must be a list"},
        ClusterErrorCase{"NodeNamesUnknownSwitch",
                         std::string(kSwitchHead) + "nodes:\n  - {name: gpu-0, switch: v9, capacity: {gpus: 8}}\n",
                         "switch: v9", "nodes[0].switch: node gpu-0 names unknown switch \"v9\""},
        ClusterErrorCase{"NodeNamesNonDeepestSwitch",
                         std::string(kSwitchHead) + "nodes:\n  - {name: gpu-0, switch: l0, capacity: {gpus: 8}}\n",
                         "switch: l0,", "nodes[0].switch: node gpu-0: switch l0 is not at the deepest level (nvlink)"},
        ClusterErrorCase{"NodeNamesSwitchWithoutSwitches", "nodes:\n  - {name: gpu-0, switch: v0, capacity: {gpus: 8}}\n",
                         "switch: v0", "nodes[0].switch: node gpu-0 names a switch but the file has no switches"},
        // Overrides
        ClusterErrorCase{"OverrideUnknownNode",
                         "fabric: {block: 1, leaf: 1, nvlink: 1, node: 2}\noverrides:\n  - {node: node-9, health: unhealthy}\n",
                         "node: node-9", "overrides[0].node: unknown node \"node-9\""},
        ClusterErrorCase{"OverrideMissingNode",
                         "fabric: {block: 1, leaf: 1, nvlink: 1, node: 2}\noverrides:\n  - {health: unhealthy}\n",
                         "health: unhealthy", "overrides[0].node: required"},
        ClusterErrorCase{"OverrideBadHealth",
                         "fabric: {block: 1, leaf: 1, nvlink: 1, node: 2}\noverrides:\n  - node: node-1\n    health: sick\n",
                         "health: sick",
                         "overrides[0].health: unknown health \"sick\" (accepted: ready, degraded, unhealthy, draining, cordoned)"},
        ClusterErrorCase{"OverrideBadPool",
                         "fabric: {block: 1, leaf: 1, nvlink: 1, node: 2}\noverrides:\n  - node: node-1\n    pool: pbs\n",
                         "pool: pbs", "overrides[0].pool: unknown pool \"pbs\" (accepted: kubernetes, slurm, shared)"},
        // Regression: allocated above capacity was accepted (the node read as full, the typo hidden).
        ClusterErrorCase{"OverrideAllocatedAboveCapacity",
                         "fabric: {block: 1, leaf: 1, nvlink: 1, node: 2, capacity: {gpus: 8}}\noverrides:\n  - node: node-1\n    allocated: {gpus: 20}\n",
                         "allocated: {gpus: 20}", "overrides[0].allocated.gpus: 20 is above node node-1's capacity (8)"},
        ClusterErrorCase{"NodeAllocatedAboveCapacity",
                         "nodes:\n  - name: gpu-0\n    capacity: {gpus: 8, cpu: 4}\n    allocated: {cpu: 6}\n",
                         "allocated: {cpu: 6}", "nodes[0].allocated.cpu: 6 is above node gpu-0's capacity (4)"},
        ClusterErrorCase{"OverrideUnknownField",
                         "fabric: {block: 1, leaf: 1, nvlink: 1, node: 2}\noverrides:\n  - node: node-1\n    gpus: 4\n",
                         "gpus: 4", "overrides[0].gpus: unknown field"},
        // Fabric and levels
        ClusterErrorCase{"FabricMissingLevelCount", "fabric:\n  block: 1\n  leaf: 2\n  node: 4\n", "fabric",
                         "fabric.nvlink: required"},
        ClusterErrorCase{"FabricUnknownField", "fabric:\n  block: 1\n  leaf: 2\n  nvlink: 1\n  node: 4\n  rack: 2\n",
                         "rack", "fabric.rack: unknown field"},
        ClusterErrorCase{"FabricZeroNodes", "fabric:\n  block: 1\n  leaf: 2\n  nvlink: 1\n  node: 0\n", "node: 0",
                         "fabric.node: must be 1..100000, got 0"},
        ClusterErrorCase{"FabricTooLarge", "fabric: {block: 100, leaf: 100, nvlink: 100, node: 2}\n", "fabric",
                         "fabric: more than 1,000,000 nodes (2000000)"},
        ClusterErrorCase{"FabricBadCapacity",
                         "fabric:\n  block: 1\n  leaf: 1\n  nvlink: 1\n  node: 1\n  capacity:\n    gpus: 8\n    memory: 1GB\n",
                         "memory: 1GB",
                         "fabric.capacity.memory: invalid quantity \"1GB\": unknown suffix \"GB\" (accepted: m, k, M, G, T, "
                         "P, Ki, Mi, Gi, Ti, Pi)"},
        ClusterErrorCase{"LevelsReservedName", "levels: [rack, node]\nfabric: {rack: 1, node: 1}\n", "levels",
                         "levels[1]: \"node\" is a reserved level name"},
        ClusterErrorCase{"LevelsDuplicate", "levels:\n  - rack\n  - {name: rack}\n", "{name: rack}",
                         "levels[1]: duplicate level \"rack\""},
        ClusterErrorCase{"LevelsNotAList", "levels: rack\n", "levels", "levels: must be a list of levels, outermost first"},
        ClusterErrorCase{"LevelUnknownField", "levels:\n  - {name: rack, key: x}\n", "name: rack",
                         "levels[0].key: unknown field"},
        // Nodes and top level
        ClusterErrorCase{"NodeUnknownField", "nodes:\n  - name: n0\n    capacity: {gpus: 8}\n    colour: red\n", "colour",
                         "nodes[0].colour: unknown field"},
        ClusterErrorCase{"NodeCapacityUnknownResource", "nodes:\n  - name: n0\n    capacity:\n      gpu: 8\n", "gpu: 8",
                         "nodes[0].capacity.gpu: unknown field"},
        ClusterErrorCase{"NodeMissingCapacity", "nodes:\n  - name: n0\n", "name: n0", "nodes[0].capacity: required"},
        ClusterErrorCase{"NodeMissingName", "nodes:\n  - capacity: {gpus: 8}\n", "capacity", "nodes[0].name: required"},
        ClusterErrorCase{"NodeLabelNotString", "nodes:\n  - name: n0\n    capacity: {gpus: 8}\n    labels:\n      a: [1]\n",
                         "a: [1]", "nodes[0].labels.a: must be a string"},
        ClusterErrorCase{"NodeNegativeCapacity", "nodes:\n  - name: n0\n    capacity:\n      gpus: -8\n", "gpus: -8",
                         "nodes[0].capacity.gpus: must not be negative"},
        ClusterErrorCase{"NodeBadHealth", "nodes:\n  - name: n0\n    capacity: {gpus: 8}\n    health: broken\n",
                         "health: broken",
                         "nodes[0].health: unknown health \"broken\" (accepted: ready, degraded, unhealthy, draining, "
                         "cordoned)"},
        ClusterErrorCase{"NodesNotAList", "nodes: {name: n0}\n", "nodes", "nodes: must be a list"},
        ClusterErrorCase{"UnknownTopLevelField", "fabric: {block: 1, leaf: 1, nvlink: 1, node: 1}\nfabrik: {}\n", "fabrik",
                         "fabrik: unknown field"},
        ClusterErrorCase{"NoNodes", "levels: [rack]\n", "levels", "nodes: the cluster has no nodes (give fabric or nodes)"},
        ClusterErrorCase{"DocumentNotAMapping", "- a\n- b\n", "- a", "document: must be a mapping"}),
    CaseName());

}  // namespace
}  // namespace tidal
