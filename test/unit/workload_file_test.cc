// core/io workload files (DecodeWorkloads): defaults, every field, list forms, the samples, and
// errors that name the field and its line.
#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/io/document.h"
#include "core/io/workload_file.h"
#include "test/support/builders.h"
#include "test/support/text.h"

namespace tidal {
namespace {
using testing::CaseName;
using testing::LineOfText;

template <typename T>
  requires requires(const T& t) { t.name; }
void PrintTo(const T& c, std::ostream* os) {
  *os << c.name;
}

constexpr int64_t kGi = int64_t{1} << 30;

// ---------------------------------------------------------------------------------------------
// DecodeWorkloads
// ---------------------------------------------------------------------------------------------

StatusOr<std::vector<Workload>> DecodeW(const std::string& yaml) {
  auto d = ParseDocument(yaml, "w.yaml");
  if (!d.ok()) return d.status();
  return DecodeWorkloads(*d);
}

TEST(WorkloadFileTest, Defaults) {
  auto ws = DecodeW("workloads:\n  - name: a\n    request: {gpus: 1}\n");
  ASSERT_TRUE(ws.ok()) << ws.status().ToString();
  ASSERT_EQ(ws->size(), 1u);
  const Workload& w = ws->at(0);
  EXPECT_EQ(w.id, "a");
  EXPECT_EQ(w.queue, "default");
  EXPECT_EQ(w.workload_class, WorkloadClass::kBatch);
  EXPECT_EQ(w.front_door, FrontDoor::kKubernetes);
  EXPECT_EQ(w.members, 1);
  EXPECT_EQ(w.min_members, 1);
  EXPECT_EQ(w.arrived_members, -1);
  EXPECT_EQ(w.per_member, (Resources{1, 0, 0}));
  EXPECT_EQ(w.priority, 0);
  EXPECT_FALSE(w.preemptible);
  EXPECT_EQ(w.runtime_limit_s, 0);
  EXPECT_EQ(w.submit_time_s, 0);
  EXPECT_EQ(w.required_level, "");
  EXPECT_EQ(w.preferred_level, "");
  EXPECT_EQ(w.gpu_model, "");
  EXPECT_FALSE(w.Elastic());
}

TEST(WorkloadFileTest, MinMembersDefaultsToMembers) {
  auto ws = DecodeW("workloads:\n  - {name: a, members: 16, request: {gpus: 8}}\n");
  ASSERT_TRUE(ws.ok()) << ws.status().ToString();
  EXPECT_EQ(ws->at(0).members, 16);
  EXPECT_EQ(ws->at(0).min_members, 16);
  EXPECT_EQ(ws->at(0).TotalGpus(), 128);
}

TEST(WorkloadFileTest, EveryField) {
  auto ws = DecodeW(R"(workloads:
  - name: llm
    queue: research
    class: training
    members: 16
    minMembers: 8
    request: {gpus: 8, cpu: 500m, memory: 512Gi}
    priority: -5
    preemptible: true
    runtimeLimit: 1h30m
    submitTime: 2m
    topology: {required: leaf, preferred: nvlink}
    gpuModel: h100
    frontDoor: slurm
  - name: pod
    request: {nvidia.com/gpu: 2}
    runtimeLimit: 90
    submitTime: 45
    class: inference
)");
  ASSERT_TRUE(ws.ok()) << ws.status().ToString();
  ASSERT_EQ(ws->size(), 2u);
  const Workload& w = ws->at(0);
  EXPECT_EQ(w.queue, "research");
  EXPECT_EQ(w.workload_class, WorkloadClass::kTraining);
  EXPECT_EQ(w.members, 16);
  EXPECT_EQ(w.min_members, 8);
  EXPECT_TRUE(w.Elastic());
  EXPECT_EQ(w.per_member, (Resources{8, 500, 512 * kGi}));
  EXPECT_EQ(w.priority, -5);
  EXPECT_TRUE(w.preemptible);
  EXPECT_EQ(w.runtime_limit_s, 5400);
  EXPECT_EQ(w.submit_time_s, 120);
  EXPECT_EQ(w.required_level, "leaf");
  EXPECT_EQ(w.preferred_level, "nvlink");
  EXPECT_EQ(w.gpu_model, "h100");
  EXPECT_EQ(w.front_door, FrontDoor::kSlurm);
  EXPECT_EQ(w.ShapeString(), "8..16x8GPU");
  const Workload& p = ws->at(1);
  EXPECT_EQ(p.per_member.gpus, 2);
  EXPECT_EQ(p.runtime_limit_s, 90);
  EXPECT_EQ(p.submit_time_s, 45);
  EXPECT_EQ(p.workload_class, WorkloadClass::kInference);
}

TEST(WorkloadFileTest, TopLevelListAccepted) {
  auto ws = DecodeW("- {name: a, request: {cpu: 2}}\n- {name: b, request: {memory: 1Gi}}\n");
  ASSERT_TRUE(ws.ok()) << ws.status().ToString();
  ASSERT_EQ(ws->size(), 2u);
  EXPECT_EQ(ws->at(0).per_member, (Resources{0, 2000, 0}));
  EXPECT_EQ(ws->at(1).per_member, (Resources{0, 0, kGi}));
}

TEST(WorkloadFileTest, EmptyListIsFine) {
  auto ws = DecodeW("workloads: []\n");
  ASSERT_TRUE(ws.ok());
  EXPECT_TRUE(ws->empty());
}

TEST(WorkloadFileTest, SampleWorkloadsLoad) {
  auto ws = LoadWorkloadsFile(std::string(TIDAL_SOURCE_DIR) + "/deploy/examples/sample-workloads.yaml");
  ASSERT_TRUE(ws.ok()) << ws.status().ToString();
  EXPECT_FALSE(ws->empty());
}

struct WorkloadErrorCase {
  std::string name;
  std::string yaml;
  std::string line_of;  // "" = no line in the message
  std::string message;
};

class WorkloadErrorTest : public ::testing::TestWithParam<WorkloadErrorCase> {};

TEST_P(WorkloadErrorTest, NamesFieldAndLine) {
  const auto& c = GetParam();
  auto ws = DecodeW(c.yaml);
  ASSERT_FALSE(ws.ok());
  EXPECT_EQ(ws.status().code(), StatusCode::kError);
  const std::string where = c.line_of.empty() ? "w.yaml: " : "w.yaml:" + std::to_string(LineOfText(c.yaml, c.line_of)) + ": ";
  EXPECT_EQ(ws.status().Message(), where + c.message);
}

std::string One(const std::string& body) { return "workloads:\n  - name: a\n    request: {gpus: 1}\n" + body; }

INSTANTIATE_TEST_SUITE_P(
    Table, WorkloadErrorTest,
    ::testing::Values(
        WorkloadErrorCase{"MinMembersAboveMembers", One("    members: 2\n    minMembers: 3\n"), "minMembers",
                          "workloads[0].minMembers: must be at most members (2), got 3"},
        WorkloadErrorCase{"MinMembersAboveDefaultMembers", One("    minMembers: 2\n"), "minMembers",
                          "workloads[0].minMembers: must be at most members (1), got 2"},
        WorkloadErrorCase{"UnknownClass", One("    class: huge\n"), "class",
                          "workloads[0].class: unknown class \"huge\" (accepted: training, inference, batch, interactive)"},
        WorkloadErrorCase{"DuplicateName", One("  - name: b\n    request: {gpus: 1}\n  - {name: a, request: {gpus: 2}}\n"),
                          "request: {gpus: 2}", "workloads[2].name: duplicate workload \"a\""},
        WorkloadErrorCase{"UnknownField", One("    colour: red\n"), "colour", "workloads[0].colour: unknown field"},
        WorkloadErrorCase{"UnknownTopologyField", One("    topology:\n      requird: leaf\n"), "requird",
                          "workloads[0].topology.requird: unknown field"},
        WorkloadErrorCase{"UnknownRequestField", One("  - name: b\n    request:\n      gpu: 1\n"), "gpu: 1",
                          "workloads[1].request.gpu: unknown field"},
        WorkloadErrorCase{"MissingRequest", "workloads:\n  - name: a\n    members: 2\n", "name: a",
                          "workloads[0].request: required"},
        WorkloadErrorCase{"EmptyRequestValue", "workloads:\n  - name: a\n    request:\n    members: 2\n", "request:",
                          "workloads[0].request: required"},
        WorkloadErrorCase{"ZeroRequest", "workloads:\n  - name: a\n    request: {gpus: 0}\n", "request",
                          "workloads[0].request: must ask for at least one resource"},
        WorkloadErrorCase{"MissingName", "workloads:\n  - request: {gpus: 1}\n", "request", "workloads[0].name: required"},
        WorkloadErrorCase{"EmptyName", "workloads:\n  - name: ''\n    request: {gpus: 1}\n", "name",
                          "workloads[0].name: must not be empty"},
        WorkloadErrorCase{"ZeroMembers", One("    members: 0\n"), "members", "workloads[0].members: must be 1..10000, got 0"},
        WorkloadErrorCase{"MembersNotInteger", One("    members: many\n"), "members", "workloads[0].members: must be an integer"},
        WorkloadErrorCase{"QuotedMembersIsNotInteger", One("    members: '4'\n"), "members",
                          "workloads[0].members: must be an integer"},
        WorkloadErrorCase{"BadQuantity", "workloads:\n  - name: a\n    request:\n      gpus: 8x\n", "gpus: 8x",
                          "workloads[0].request.gpus: invalid quantity \"8x\": unknown suffix \"x\" (accepted: m, k, M, "
                          "G, T, P, Ki, Mi, Gi, Ti, Pi)"},
        WorkloadErrorCase{"NegativeQuantity", "workloads:\n  - name: a\n    request:\n      cpu: -1\n", "cpu: -1",
                          "workloads[0].request.cpu: must not be negative"},
        WorkloadErrorCase{"NegativeQuantityString", "workloads:\n  - name: a\n    request:\n      cpu: '-1'\n", "cpu:",
                          "workloads[0].request.cpu: invalid quantity \"-1\": expected a non-negative number"},
        WorkloadErrorCase{"PreemptibleNotBool", One("    preemptible: yes\n"), "preemptible",
                          "workloads[0].preemptible: must be true or false"},
        WorkloadErrorCase{"BadDuration", One("    runtimeLimit: soon\n"), "runtimeLimit",
                          "workloads[0].runtimeLimit: invalid duration \"soon\": expected a number at position 0 "
                          "(examples: 90s, 30m, 12h, 1h30m, 2d, or seconds as a number)"},
        WorkloadErrorCase{"NegativeDuration", One("    submitTime: -5\n"), "submitTime",
                          "workloads[0].submitTime: must not be negative"},
        WorkloadErrorCase{"BadFrontDoor", One("    frontDoor: pbs\n"), "frontDoor",
                          "workloads[0].frontDoor: unknown front door \"pbs\" (accepted: kubernetes, slurm)"},
        WorkloadErrorCase{"PriorityOutOfRange", One("    priority: 2000000000\n"), "priority",
                          "workloads[0].priority: must be -1000000000..1000000000, got 2000000000"},
        WorkloadErrorCase{"WorkloadsNotAList", "workloads: {name: a}\n", "workloads", "workloads: must be a list of workloads"},
        WorkloadErrorCase{"WorkloadsMissing", "jobs: []\n", "jobs", "workloads: required"},
        WorkloadErrorCase{"EntryNotAMapping", "workloads:\n  - 5\n", "- 5", "workloads[0]: must be a mapping"},
        WorkloadErrorCase{"TopLevelListEntryError", "- name: a\n  request: {gpus: 1}\n- name: b\n", "name: b",
                          "[1].request: required"},
        WorkloadErrorCase{"ScalarDocument", "42\n", "42", "document: must be a list of workloads"}),
    CaseName());

}  // namespace
}  // namespace tidal
