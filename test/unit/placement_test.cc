// PlacementSearch and Scheduler with the default profile (priority, gang, topology): a table of
// placement cases and search properties (the framework's extension points: framework_plugins_test.cc).
#include "core/framework/placement.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/framework/scheduler.h"
#include "plugins/registry.h"
#include "test/support/builders.h"

namespace tidal {
namespace {

using ::testing::HasSubstr;
using testing::CaseName;
using testing::DefaultProfile;
using testing::DefaultScheduler;
using testing::FabricState;
using testing::MakeGang;
using testing::MakeNode;
using testing::NodesState;
using testing::PrioritySpec;

template <typename T>
  requires requires(const T& t) { t.name; }
void PrintTo(const T& c, std::ostream* os) {
  *os << c.name;
}

// What one workload's decision must show; empty / negative fields are not checked.
struct Expect {
  std::string workload{};
  Outcome outcome = Outcome::kPlaced;
  std::string domain_level{};  // "cluster", "block", ..., "node"
  std::string domain{};        // exact path
  std::map<std::string, int32_t> spans{};
  std::set<std::string> nodes{};      // exact node set
  std::set<std::string> not_nodes{};  // none of these
  int32_t members = -1;               // members placed
  std::string reason{};               // substring of the status message
  std::string explanation{};          // substring of the decision's explanation
};

struct PlacementCase {
  std::string name;
  std::function<ClusterState()> cluster;
  std::vector<Workload> workloads;
  std::vector<Expect> expect;
  ProfileSpec profile = ProfileSpec::Default();
};

// 2 blocks x 2 leaves x 2 nvlink x 2 nodes x 8 GPUs: node-i is in nvlink-(i/2), leaf-(i/4), block-(i/8).
ClusterState Fabric() { return FabricState(2, 2, 2, 2); }

// Fabric() with the named nodes using `gpus` GPUs each.
std::function<ClusterState()> FabricUsing(std::vector<int> nodes, int64_t gpus = 8) {
  return [nodes, gpus] {
    ClusterState s = Fabric();
    for (int n : nodes) s.Allocate(s.FindNode("node-" + std::to_string(n)), {gpus, 0, 0});
    return s;
  };
}

std::set<std::string> NodeNames(const ClusterState& s, const Candidate& c) {
  std::set<std::string> out;
  for (const auto& a : c.assignments) out.insert(s.node(a.node).name);
  return out;
}

// Invariants of every cycle: no partial gang; a workload that is not placed holds no capacity and
// has no assignments; nodes that take no work receive none; no node goes over capacity.
void CheckInvariants(const ClusterState& before, const ClusterState& after, const std::vector<Workload>& ws,
                     const CycleResult& r) {
  std::map<std::string, Workload> by_id;
  for (const auto& w : ws) by_id[w.id] = w;
  ASSERT_EQ(r.decisions.size(), ws.size());
  for (const auto& d : r.decisions) {
    SCOPED_TRACE(d.workload_id);
    const Workload& w = by_id.at(d.workload_id);
    const bool holds = d.outcome == Outcome::kPlaced || (d.outcome == Outcome::kWaiting && !d.placement.assignments.empty());
    if (holds) {
      EXPECT_GE(d.placement.PlacedMembers(), w.min_members);
      EXPECT_LE(d.placement.PlacedMembers(), w.members);
      ASSERT_EQ(after.running().count(w.id), 1u);
      EXPECT_EQ(after.running().at(w.id).workload.members, d.placement.PlacedMembers());
    } else {
      EXPECT_TRUE(d.placement.assignments.empty());
      EXPECT_EQ(after.running().count(w.id), 0u);
    }
  }
  int64_t free_sum = 0;
  for (NodeId n = 0; n < after.node_count(); ++n) {
    const Node& a = after.node(n);
    const Node& b = before.node(n);
    const Resources added = a.allocated - b.allocated;
    if (!added.IsZero()) {
      EXPECT_TRUE(b.Schedulable()) << a.name << " (" << NodeHealthName(b.health) << ") received work";
      EXPECT_TRUE(a.capacity.Covers(a.allocated)) << a.name << " over capacity";
    }
    free_sum += std::max<int64_t>(0, a.FreeGpus());
  }
  EXPECT_EQ(after.FreeGpus(after.root()), free_sum);
}

class PlacementTableTest : public ::testing::TestWithParam<PlacementCase> {};

TEST_P(PlacementTableTest, Decides) {
  const auto& c = GetParam();
  ClusterState state = c.cluster();
  const ClusterState before = state;
  Scheduler sched = DefaultScheduler(c.profile);
  CycleResult r = sched.RunCycle(state, c.workloads, 100);
  CheckInvariants(before, state, c.workloads, r);
  std::map<std::string, const Decision*> by_id;
  for (const auto& d : r.decisions) by_id[d.workload_id] = &d;
  for (const auto& e : c.expect) {
    SCOPED_TRACE("workload " + e.workload);
    ASSERT_EQ(by_id.count(e.workload), 1u);
    const Decision& d = *by_id.at(e.workload);
    EXPECT_EQ(OutcomeName(d.outcome), OutcomeName(e.outcome)) << d.status.ToString() << " / " << d.explanation;
    const Candidate& p = d.placement;
    if (!e.domain_level.empty()) {
      EXPECT_EQ(p.domain_level < 0 ? "cluster" : state.levels().Name(p.domain_level), e.domain_level);
    }
    if (!e.domain.empty()) {
      EXPECT_EQ(p.domain, e.domain);
    }
    for (const auto& [level, n] : e.spans) {
      const int l = state.levels().Find(level);
      ASSERT_GE(l, 0) << level;
      ASSERT_LT(static_cast<size_t>(l), p.spans.size());
      EXPECT_EQ(p.spans[static_cast<size_t>(l)], n) << "spans of " << level;
    }
    const std::set<std::string> used = NodeNames(state, p);
    if (!e.nodes.empty()) {
      EXPECT_EQ(used, e.nodes);
    }
    for (const auto& n : e.not_nodes) EXPECT_EQ(used.count(n), 0u) << n;
    if (e.members >= 0) {
      EXPECT_EQ(p.PlacedMembers(), e.members);
    }
    if (!e.reason.empty()) {
      EXPECT_THAT(d.status.Message(), HasSubstr(e.reason)) << d.status.ToString();
    }
    if (!e.explanation.empty()) {
      EXPECT_THAT(d.explanation, HasSubstr(e.explanation));
    }
  }
}

// The queue order these cases rely on, spelled out: priority, then submit time, then id.
ProfileSpec WithMaxCandidates(int n) {
  ProfileSpec p = ProfileSpec::Default();
  p.max_candidates = n;
  return p;
}

// Preferred-level fabric: one block, leaf-0 has one free node in each nvlink (fragmented), leaf-1
// has a whole free nvlink. Both leaves have room for 2 members; leaf-0 comes first in search order.
ClusterState PreferredFabric() {
  ClusterState s = FabricState(1, 2, 2, 2);
  for (const char* n : {"node-1", "node-3", "node-6", "node-7"}) s.Allocate(s.FindNode(n), {8, 0, 0});
  return s;
}

std::vector<PlacementCase> Cases() {
  std::vector<PlacementCase> cases;
  cases.push_back({"GangFitsInOneNvlink",
                   Fabric,
                   {MakeGang("g").Members(2).Gpus(8).Obj()},
                   {{.workload = "g",
                     .domain_level = "nvlink",
                     .domain = "block-0/leaf-0/nvlink-0",
                     .spans = {{"block", 1}, {"leaf", 1}, {"nvlink", 1}, {"node", 2}},
                     .nodes = {"node-0", "node-1"},
                     .members = 2}}});
  cases.push_back({"SmallGangOnOneNode",
                   Fabric,
                   {MakeGang("g").Members(4).Gpus(2).Obj()},
                   {{.workload = "g",
                     .domain_level = "node",
                     .domain = "block-0/leaf-0/nvlink-0/node-0",
                     .spans = {{"node", 1}},
                     .members = 4}}});
  // leaf-0 has 2 free nodes, leaf-1 3, block-1 all 8: the tightest leaf that fits is leaf-1.
  cases.push_back({"RequiredLeafPicksSingleTightestLeaf",
                   FabricUsing({0, 1, 4}),
                   {MakeGang("g").Members(3).Gpus(8).Required("leaf").Obj()},
                   {{.workload = "g",
                     .domain_level = "leaf",
                     .domain = "block-0/leaf-1",
                     .spans = {{"leaf", 1}},
                     .nodes = {"node-5", "node-6", "node-7"},
                     .explanation = "(required leaf)"}}});
  cases.push_back({"RequiredLeafSingleMember",
                   Fabric,
                   {MakeGang("g").Members(1).Gpus(8).Required("leaf").Obj()},
                   {{.workload = "g", .domain_level = "leaf", .spans = {{"leaf", 1}, {"node", 1}}, .members = 1}}});
  cases.push_back({"GangBiggerThanLeafSpansTwoLeavesOfOneBlock",
                   Fabric,
                   {MakeGang("g").Members(6).Gpus(8).Obj()},
                   {{.workload = "g",
                     .domain_level = "block",
                     .domain = "block-0",
                     .spans = {{"block", 1}, {"leaf", 2}, {"node", 6}},
                     .members = 6,
                     .explanation = "smallest domain that fits"}}});
  cases.push_back({"GangBiggerThanBlockUsesTwoBlocks",
                   Fabric,
                   {MakeGang("g").Members(12).Gpus(8).Obj()},
                   {{.workload = "g", .domain_level = "cluster", .domain = "cluster", .spans = {{"block", 2}}, .members = 12}}});
  cases.push_back({"RequiredNvlinkTooBigIsUnresolvable",
                   Fabric,
                   {MakeGang("g").Members(3).Gpus(8).Required("nvlink").Obj()},
                   {{.workload = "g",
                     .outcome = Outcome::kRejected,
                     .members = 0,
                     .reason = "no nvlink domain can ever hold 3 members of 8 GPU (the largest holds 2)"}}});
  cases.push_back({"LargerThanClusterIsUnresolvable",
                   Fabric,
                   {MakeGang("g").Members(17).Gpus(8).Obj()},
                   {{.workload = "g", .outcome = Outcome::kRejected, .reason = "can hold at most 16"}}});
  cases.push_back({"MemberLargerThanAnyNodeIsUnresolvable",
                   Fabric,
                   {MakeGang("g").Gpus(9).Obj()},
                   {{.workload = "g", .outcome = Outcome::kRejected, .reason = "the largest node has 8"}}});
  // One GPU used in every leaf: no leaf has 4 whole nodes now, though each could.
  cases.push_back({"RequiredLeafFullNowIsUnschedulable",
                   FabricUsing({0, 4, 8, 12}, 1),
                   {MakeGang("g").Members(4).Gpus(8).Required("leaf").Obj()},
                   {{.workload = "g",
                     .outcome = Outcome::kPending,
                     .reason = "topology-required leaf: no leaf domain has room for 4 members of 8 GPU now"}}});
  cases.push_back({"WithoutRequiredSameGangSpansLeaves",
                   FabricUsing({0, 4, 8, 12}, 1),
                   {MakeGang("g").Members(4).Gpus(8).Obj()},
                   {{.workload = "g", .domain_level = "block", .spans = {{"leaf", 2}}, .not_nodes = {"node-0", "node-4"}}}});
  cases.push_back({"ClusterFullNowIsUnschedulable",
                   FabricUsing({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}),
                   {MakeGang("g").Members(6).Gpus(8).Obj()},
                   {{.workload = "g", .outcome = Outcome::kPending, .reason = "the cluster has room for 5 of 6 members"}}});
  cases.push_back({"UnknownRequiredLevelIsRejected",
                   Fabric,
                   {MakeGang("g").Required("rack").Obj()},
                   {{.workload = "g", .outcome = Outcome::kRejected, .reason = "accepted: block, leaf, nvlink, node"}}});
  cases.push_back({"GangWaitsForMembers",
                   Fabric,
                   {MakeGang("g").Members(4).Gpus(8).Arrived(2).Obj()},
                   {{.workload = "g", .outcome = Outcome::kWaiting, .members = 0, .reason = "2 of 4 required members"}}});
  // Pool: the slurm node is the tightest fit but belongs to the other front door.
  auto pools = [] {
    return NodesState({MakeNode("slurm-0").At("b0", "l0", "nv0").Pool(Pool::kSlurm).Used(6).Obj(),
                       MakeNode("k8s-0").At("b0", "l0", "nv1").Pool(Pool::kKubernetes).Obj(),
                       MakeNode("shared-0").At("b1", "l1", "nv2").Pool(Pool::kShared).Used(4).Obj()});
  };
  cases.push_back({"KubernetesWorkloadSkipsSlurmNode",
                   pools,
                   {MakeGang("pod").Gpus(1).Obj()},
                   {{.workload = "pod", .nodes = {"shared-0"}}}});
  cases.push_back({"SlurmJobUsesSlurmNode",
                   pools,
                   {MakeGang("job").Gpus(1).Door(FrontDoor::kSlurm).Obj()},
                   {{.workload = "job", .nodes = {"slurm-0"}}}});
  cases.push_back({"SlurmJobNeverUsesKubernetesNode",
                   pools,
                   {MakeGang("job").Members(3).Gpus(4).Door(FrontDoor::kSlurm).Obj()},
                   {{.workload = "job", .outcome = Outcome::kPending, .reason = "node(s) belong to another pool"}}});
  cases.push_back({"KubernetesGangWithOnlySlurmNodes",
                   [] {
                     return NodesState({MakeNode("s0").At("b", "l", "n").Pool(Pool::kSlurm).Obj(),
                                        MakeNode("s1").At("b", "l", "n").Pool(Pool::kSlurm).Obj()});
                   },
                   {MakeGang("g").Members(2).Gpus(8).Obj()},
                   {{.workload = "g", .outcome = Outcome::kPending, .reason = "2 node(s) belong to another pool"}}});
  // GPU model: the a100 node is the tightest fit but the wrong model.
  auto models = [] {
    return NodesState({MakeNode("a100-0").At("b0", "l0", "nv0").Model("a100").Used(6).Obj(),
                       MakeNode("h100-0").At("b0", "l0", "nv1").Model("h100").Obj()});
  };
  cases.push_back({"GpuModelMatches", models, {MakeGang("g").Gpus(1).Model("h100").Obj()}, {{.workload = "g", .nodes = {"h100-0"}}}});
  cases.push_back({"AnyGpuModelTakesTightest", models, {MakeGang("g").Gpus(1).Obj()}, {{.workload = "g", .nodes = {"a100-0"}}}});
  cases.push_back({"GpuModelMismatch",
                   models,
                   {MakeGang("g").Gpus(1).Model("b200").Obj()},
                   {{.workload = "g", .outcome = Outcome::kRejected,
                     .reason = "tidal.dev/gpu-model b200: no node has GPU model b200 (models: a100, h100)"}}});
  // CPU: the tightest GPU fit has too little CPU left for the member.
  auto cpu = [] {
    return NodesState({MakeNode("cpu-poor").At("b0", "l0", "nv0").Cpu(4000).Used(4).Obj(),
                       MakeNode("cpu-rich").At("b0", "l0", "nv1").Obj()});
  };
  cases.push_back({"CpuLimitedNodeSkipped", cpu, {MakeGang("g").Gpus(1).Cpu(8000).Obj()}, {{.workload = "g", .nodes = {"cpu-rich"}}}});
  cases.push_back({"CpuLimitsMembersPerNode",
                   cpu,
                   {MakeGang("g").Members(4).Gpus(1).Cpu(1500).Obj()},
                   {{.workload = "g", .nodes = {"cpu-rich"}, .members = 4}}});
  cases.push_back({"CpuLimitedEverywhere",
                   cpu,
                   {MakeGang("g").Gpus(1).Cpu(100000).Obj()},
                   {{.workload = "g", .outcome = Outcome::kPending, .reason = "node(s) lack CPU or memory for a member"}}});
  cases.push_back({"MemoryLimitedEverywhere",
                   cpu,
                   {MakeGang("g").Gpus(1).Memory(int64_t{600} << 30).Obj()},
                   {{.workload = "g", .outcome = Outcome::kPending, .reason = "lack CPU or memory"}}});
  // Elastic: the largest size in [min_members, members] that fits now.
  cases.push_back({"ElasticGangShrinksToWhatFits",
                   FabricUsing({0, 1, 2, 3, 8, 9, 10, 11, 12, 13}),
                   {MakeGang("g").Members(8).MinMembers(4).Gpus(8).Obj()},
                   {{.workload = "g", .members = 6, .explanation = "elastic: 6/8 members"}}});
  cases.push_back({"ElasticGangShrinksToMinMembers",
                   FabricUsing({0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15}),
                   {MakeGang("g").Members(8).MinMembers(4).Gpus(8).Obj()},
                   {{.workload = "g",
                     .domain = "block-0/leaf-1",
                     .nodes = {"node-4", "node-5", "node-6", "node-7"},
                     .members = 4,
                     .explanation = "elastic: 4/8 members"}}});
  cases.push_back({"ElasticGangFullSizeWhenItFits",
                   Fabric,
                   {MakeGang("g").Members(8).MinMembers(4).Gpus(8).Obj()},
                   {{.workload = "g", .domain_level = "block", .members = 8}}});
  cases.push_back({"ElasticGangLargerThanClusterShrinks",
                   Fabric,
                   {MakeGang("g").Members(20).MinMembers(4).Gpus(8).Obj()},
                   {{.workload = "g", .members = 16, .explanation = "elastic: 16/20"}}});
  cases.push_back({"ElasticMinMembersDoNotFitNow",
                   FabricUsing({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}),
                   {MakeGang("g").Members(8).MinMembers(4).Gpus(8).Obj()},
                   {{.workload = "g", .outcome = Outcome::kPending, .members = 0, .reason = "room for 2 of 4 members"}}});
  cases.push_back({"ElasticMinMembersCanNeverFit",
                   Fabric,
                   {MakeGang("g").Members(20).MinMembers(17).Gpus(8).Obj()},
                   {{.workload = "g", .outcome = Outcome::kRejected, .members = 0, .reason = "at most 16 of 17 members"}}});
  cases.push_back({"ElasticRequiredLevelShrinksInsideOneDomain",
                   Fabric,
                   {MakeGang("g").Members(6).MinMembers(2).Gpus(8).Required("leaf").Obj()},
                   {{.workload = "g", .domain_level = "leaf", .spans = {{"leaf", 1}}, .members = 4}}});
  // Best fit: free GPUs a=8, b=5 (block-0), c=2, d=3 (block-1).
  auto bestfit = [] {
    return NodesState({MakeNode("a").At("b0", "l0", "nv0").Obj(), MakeNode("b").At("b0", "l1", "nv1").Used(3).Obj(),
                       MakeNode("c").At("b1", "l2", "nv2").Used(6).Obj(), MakeNode("d").At("b1", "l3", "nv3").Used(5).Obj()});
  };
  cases.push_back({"BestFitSingleGpuToFewestFree",
                   bestfit,
                   {MakeGang("pod").Gpus(1).Obj()},
                   {{.workload = "pod", .domain_level = "node", .nodes = {"c"}}}});
  cases.push_back({"BestFitExactFit", bestfit, {MakeGang("pod").Gpus(3).Obj()}, {{.workload = "pod", .nodes = {"d"}}}});
  cases.push_back({"BestFitFourGpus", bestfit, {MakeGang("pod").Gpus(4).Obj()}, {{.workload = "pod", .nodes = {"b"}}}});
  cases.push_back({"BestFitTwoMembersOnOneNode",
                   bestfit,
                   {MakeGang("pod").Members(2).Gpus(2).Obj()},
                   {{.workload = "pod", .domain_level = "node", .nodes = {"b"}}}});
  // Whole nodes: a wholly free 4-GPU node is a tighter fit than a partly used 8-GPU node with 6
  // free, yet the 1-GPU pod goes to the partly used one.
  auto whole = [] {
    return NodesState({MakeNode("whole").At("b0", "l0", "nv0").Gpus(4).Obj(),
                       MakeNode("partly").At("b1", "l1", "nv1").Used(2).Obj()});
  };
  cases.push_back({"WholeFreeNodePreserved", whole, {MakeGang("pod").Gpus(1).Obj()}, {{.workload = "pod", .nodes = {"partly"}}}});
  cases.push_back({"WholeFreeNodePreservedSameSize",
                   [] {
                     return NodesState({MakeNode("whole").At("b0", "l0", "nv0").Obj(),
                                        MakeNode("partly").At("b0", "l0", "nv0").Used(4).Obj()});
                   },
                   {MakeGang("pod").Gpus(1).Obj()},
                   {{.workload = "pod", .nodes = {"partly"}}}});
  // Preferred: both leaves fit; leaf-1 keeps the gang in one nvlink and wins on Score.
  cases.push_back({"PreferredLevelMetWhenPossible",
                   PreferredFabric,
                   {MakeGang("g").Members(2).Gpus(8).Required("leaf").Preferred("nvlink").Obj()},
                   {{.workload = "g",
                     .domain = "block-0/leaf-1",
                     .spans = {{"nvlink", 1}},
                     .nodes = {"node-4", "node-5"},
                     .explanation = "preferred nvlink met"}}});
  // Control: with a single candidate there is nothing to score, and the first leaf is taken.
  cases.push_back({"PreferredLevelNotMetWithOneCandidate",
                   PreferredFabric,
                   {MakeGang("g").Members(2).Gpus(8).Required("leaf").Preferred("nvlink").Obj()},
                   {{.workload = "g",
                     .domain = "block-0/leaf-0",
                     .spans = {{"nvlink", 2}},
                     .nodes = {"node-0", "node-2"},
                     .explanation = "preferred nvlink not met (spans 2)"}},
                   WithMaxCandidates(1)});
  // Two gangs that cannot both fit: the higher priority one is placed, the other holds nothing.
  cases.push_back({"TwoGangsOnlyOneFits",
                   Fabric,
                   {MakeGang("low").Members(12).Gpus(8).Priority(0).Obj(),
                    MakeGang("high").Members(12).Gpus(8).Priority(10).Obj()},
                   {{.workload = "high", .members = 12},
                    {.workload = "low", .outcome = Outcome::kPending, .members = 0, .reason = "room for 4 of 12"}},
                   PrioritySpec()});
  cases.push_back({"SecondGangUsesWhatIsLeft",
                   Fabric,
                   {MakeGang("a").Members(4).Gpus(8).Required("leaf").Submitted(1).Obj(),
                    MakeGang("b").Members(4).Gpus(8).Required("leaf").Submitted(2).Obj(),
                    MakeGang("c").Members(8).Gpus(8).Required("block").Submitted(3).Obj()},
                   {{.workload = "a", .domain = "block-0/leaf-0"},
                    {.workload = "b", .domain = "block-0/leaf-1"},
                    {.workload = "c", .domain = "block-1"}},
                   PrioritySpec()});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Table, PlacementTableTest, ::testing::ValuesIn(Cases()), CaseName());

// ---------------------------------------------------------------------------------------------
// Nodes that take no work are never chosen.
// ---------------------------------------------------------------------------------------------

struct HealthCase {
  std::string name;
  NodeHealth health;
  bool takes_work;
};

class HealthTest : public ::testing::TestWithParam<HealthCase> {};

TEST_P(HealthTest, OnlyReadyAndDegradedNodesReceiveWork) {
  // node-0 is the tightest fit for 1-GPU pods (7 free); node-5 and node-9 are wholly free.
  ClusterState s = Fabric();
  const NodeId n0 = s.FindNode("node-0"), n5 = s.FindNode("node-5"), n9 = s.FindNode("node-9");
  s.Allocate(n0, {1, 0, 0});
  for (NodeId n : {n0, n5, n9}) s.SetHealth(n, GetParam().health);
  const ClusterState before = s;
  std::vector<Workload> ws;
  ws.push_back(MakeGang("pod").Gpus(1).Obj());
  for (int i = 0; i < 16; ++i) ws.push_back(MakeGang("full-" + std::to_string(i)).Gpus(8).Submitted(1).Obj());
  Scheduler sched = DefaultScheduler();
  CycleResult r = sched.RunCycle(s, ws, 0);
  CheckInvariants(before, s, ws, r);
  int placed = 0;
  std::set<NodeId> used;
  for (const auto& d : r.decisions) {
    if (d.outcome != Outcome::kPlaced) continue;
    ++placed;
    for (const auto& a : d.placement.assignments) used.insert(a.node);
  }
  if (GetParam().takes_work) {
    EXPECT_EQ(r.decisions.front().placement.assignments.at(0).node, n0) << "the pod best-fits on node-0";
    EXPECT_EQ(placed, 16);
    EXPECT_TRUE(used.count(n5) && used.count(n9));
  } else {
    EXPECT_EQ(placed, 13) << "the pod and 12 full-node gangs on the 13 nodes left";
    EXPECT_EQ(used.count(n0) + used.count(n5) + used.count(n9), 0u);
    EXPECT_EQ(s.node(n0).allocated.gpus, 1);
    EXPECT_TRUE(s.node(n5).allocated.IsZero());
  }
}

INSTANTIATE_TEST_SUITE_P(Table, HealthTest,
                         ::testing::Values(HealthCase{"Unhealthy", NodeHealth::kUnhealthy, false},
                                           HealthCase{"Cordoned", NodeHealth::kCordoned, false},
                                           HealthCase{"Draining", NodeHealth::kDraining, false},
                                           HealthCase{"DegradedStillTakesWork", NodeHealth::kDegraded, true},
                                           HealthCase{"ReadyControl", NodeHealth::kReady, true}),
                         CaseName());

TEST(HealthExplainTest, RequiredDomainWithBadNodeExplainsNow) {
  ClusterState s = FabricState(1, 1, 1, 2);
  s.SetHealth(s.FindNode("node-1"), NodeHealth::kUnhealthy);
  Scheduler sched = DefaultScheduler();
  Decision d = sched.ScheduleOne(s, MakeGang("g").Members(2).Gpus(8).Required("nvlink").Obj(), 0);
  EXPECT_EQ(d.outcome, Outcome::kPending) << d.status.ToString();
  EXPECT_THAT(d.status.Message(), HasSubstr("has room for 1"));
  EXPECT_TRUE(s.running().empty());
}

// ---------------------------------------------------------------------------------------------
// PlacementSearch properties
// ---------------------------------------------------------------------------------------------

TEST(PlacementSearchTest, RefusesNonPositiveMembers) {
  ClusterState s = Fabric();
  auto profile = DefaultProfile();
  CycleState cs;
  std::vector<Candidate> out;
  PlacementConstraints c;
  c.members = 0;
  Status st = PlacementSearch(s, *profile).Find(cs, MakeGang("g").Obj(), c, out);
  EXPECT_EQ(st.code(), StatusCode::kError);
  EXPECT_TRUE(out.empty());
}

TEST(PlacementSearchTest, CollectsUpToMaxCandidatesAndClearsOutput) {
  ClusterState s = Fabric();
  for (int n : {1, 4}) {
    auto profile = DefaultProfile(WithMaxCandidates(n));
    CycleState cs;
    std::vector<Candidate> out(7);  // stale entries must be cleared
    PlacementConstraints c;
    c.members = 1;
    ASSERT_TRUE(PlacementSearch(s, *profile).Find(cs, MakeGang("g").Gpus(8).Obj(), c, out).ok());
    EXPECT_EQ(out.size(), static_cast<size_t>(n));
    std::set<NodeId> distinct;
    for (const auto& cand : out) distinct.insert(cand.assignments.at(0).node);
    EXPECT_EQ(distinct.size(), out.size()) << "candidates are different placements";
  }
}

TEST(PlacementSearchTest, ClusterWithoutNodesIsUnschedulable) {
  auto st = ClusterState::Build(TopologyLevels::Default(), {});
  ASSERT_TRUE(st.ok());
  auto profile = DefaultProfile();
  CycleState cs;
  std::vector<Candidate> out;
  PlacementConstraints c;
  c.members = 1;
  Status s = PlacementSearch(*st, *profile).Find(cs, MakeGang("g").Obj(), c, out);
  EXPECT_EQ(s.code(), StatusCode::kUnschedulable);
  EXPECT_THAT(s.Message(), HasSubstr("no nodes"));
}

// Random states and gangs: every candidate places exactly the members asked for, on distinct,
// schedulable, admitting nodes with room, inside its domain.
class SearchPropertyTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(SearchPropertyTest, CandidatesPlaceExactlyWhatWasAsked) {
  std::mt19937 rng(GetParam());
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  ClusterState s = FabricState(2, 3, 2, 3);
  const NodeHealth healths[] = {NodeHealth::kReady, NodeHealth::kDegraded, NodeHealth::kUnhealthy,
                                NodeHealth::kDraining, NodeHealth::kCordoned};
  for (NodeId n = 0; n < s.node_count(); ++n) {
    if (pick(0, 2) == 0) s.Allocate(n, {pick(0, 8), pick(0, 64) * 1000, 0});
    if (pick(0, 5) == 0) s.SetHealth(n, healths[pick(0, 4)]);
  }
  auto profile = DefaultProfile(WithMaxCandidates(static_cast<int>(pick(1, 8))));
  const std::vector<std::string> level_names = {"", "block", "leaf", "nvlink", "node"};
  int found_any = 0;
  for (int trial = 0; trial < 60; ++trial) {
    Workload w = MakeGang("g").Members(static_cast<int32_t>(pick(1, 20))).Gpus(pick(0, 8)).Cpu(pick(0, 16) * 1000).Obj();
    if (w.per_member.IsZero()) w.per_member.cpu_milli = 1000;
    PlacementConstraints c;
    c.members = w.members;
    c.required_level = static_cast<int>(pick(-1, 3));
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(w.members) + "x" +
                 std::to_string(w.per_member.gpus) + " GPU, required " + std::to_string(c.required_level));
    CycleState cs;
    std::vector<Candidate> out;
    Status st = PlacementSearch(s, *profile).Find(cs, w, c, out);
    if (!st.ok()) {
      EXPECT_TRUE(out.empty());
      EXPECT_TRUE(st.code() == StatusCode::kUnschedulable || st.code() == StatusCode::kUnschedulableAndUnresolvable)
          << st.ToString();
      continue;
    }
    ++found_any;
    ASSERT_FALSE(out.empty());
    EXPECT_LE(out.size(), static_cast<size_t>(profile->max_candidates()));
    for (const auto& cand : out) {
      EXPECT_EQ(cand.PlacedMembers(), c.members);
      if (c.required_level >= 0) {
        EXPECT_EQ(cand.domain_level, c.required_level);
      }
      std::set<NodeId> nodes;
      for (const auto& a : cand.assignments) {
        EXPECT_GT(a.members, 0);
        EXPECT_TRUE(nodes.insert(a.node).second) << "node listed twice";
        const Node& n = s.node(a.node);
        EXPECT_TRUE(n.Schedulable());
        EXPECT_TRUE(n.Free().Covers(w.per_member * a.members)) << n.name;
        if (cand.domain_level >= 0 && cand.domain_level < s.levels().node_level()) {
          EXPECT_EQ(s.vertex(s.AncestorAt(a.node, cand.domain_level)).path, cand.domain);
        }
      }
      if (cand.domain_level == s.levels().node_level()) {
        EXPECT_EQ(cand.assignments.size(), 1u);
      }
      ASSERT_EQ(cand.spans.size(), static_cast<size_t>(s.levels().size()));
      EXPECT_EQ(cand.spans[static_cast<size_t>(s.levels().node_level())], static_cast<int32_t>(cand.assignments.size()));
    }
  }
  EXPECT_GT(found_any, 0) << "the random trials should place something";
}

INSTANTIATE_TEST_SUITE_P(Seeds, SearchPropertyTest, ::testing::Values(1u, 2u, 3u, 5u, 8u, 13u, 21u, 34u),
                         [](const ::testing::TestParamInfo<uint32_t>& i) { return "Seed" + std::to_string(i.param); });

}  // namespace
}  // namespace tidal
