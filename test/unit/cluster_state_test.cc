// ClusterState: exact aggregates under mutation, running workloads, Transaction commit/discard and
// a randomized check against brute force (Build validation and the tree's shape:
// cluster_build_test.cc).
#include "core/state/cluster_state.h"

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/state/transaction.h"
#include "test/support/builders.h"

namespace tidal {
namespace {

using ::testing::HasSubstr;
using testing::FabricState;
using testing::MakeGang;
using testing::MakeNode;
using testing::NodesState;
using testing::VertexByPath;

// ---------------------------------------------------------------------------------------------
// Aggregates
// ---------------------------------------------------------------------------------------------

// Brute-force recomputation over nodes, mirroring the documented semantics: schedulable nodes
// count their free GPUs (clamped to 0..max); others count as zero free.
struct Brute {
  static int64_t Free(const ClusterState& s, NodeId n) {
    return std::clamp<int64_t>(s.node(n).FreeGpus(), 0, s.max_gpus_per_node());
  }
  static int64_t FreeGpus(const ClusterState& s, VertexId v) {
    int64_t t = 0;
    for (NodeId n = s.vertex(v).node_begin; n < s.vertex(v).node_end; ++n) t += Free(s, n);
    return t;
  }
  static int32_t WholeFree(const ClusterState& s, VertexId v) {
    int32_t t = 0;
    for (NodeId n = s.vertex(v).node_begin; n < s.vertex(v).node_end; ++n) t += s.node(n).WhollyFree() ? 1 : 0;
    return t;
  }
  static int64_t MemberCapacity(const ClusterState& s, VertexId v, int64_t g) {
    int64_t t = 0;
    for (NodeId n = s.vertex(v).node_begin; n < s.vertex(v).node_end; ++n) t += Free(s, n) / g;
    return t;
  }
  static int64_t StaticCapacity(const ClusterState& s, VertexId v, int64_t g) {
    int64_t t = 0;
    for (NodeId n = s.vertex(v).node_begin; n < s.vertex(v).node_end; ++n) t += s.node(n).capacity.gpus / g;
    return t;
  }
  static int64_t Tightest(const ClusterState& s, VertexId v, int64_t g, int32_t m) {
    int64_t best = s.max_gpus_per_node() + 1;
    for (NodeId n = s.vertex(v).node_begin; n < s.vertex(v).node_end; ++n) {
      const int64_t f = Free(s, n);
      if (f >= g * m) best = std::min(best, f);
    }
    return best;
  }
};

void ExpectAggregatesMatchBruteForce(const ClusterState& s) {
  const int64_t max = s.max_gpus_per_node();
  for (VertexId v = 0; v < s.vertex_count(); ++v) {
    SCOPED_TRACE("vertex " + std::to_string(v) + " (" + s.vertex(v).path + ")");
    ASSERT_EQ(s.FreeGpus(v), Brute::FreeGpus(s, v));
    ASSERT_EQ(s.WholeFreeNodes(v), Brute::WholeFree(s, v));
    for (int64_t g = 1; g <= max + 1; ++g) {
      ASSERT_EQ(s.MemberCapacity(v, g), Brute::MemberCapacity(s, v, g)) << "g=" << g;
      ASSERT_EQ(s.StaticMemberCapacity(v, g), Brute::StaticCapacity(s, v, g)) << "g=" << g;
      for (int32_t m = 1; m <= 3; ++m) {
        ASSERT_EQ(s.TightestNodeFree(v, g, m), Brute::Tightest(s, v, g, m)) << "g=" << g << " m=" << m;
      }
    }
  }
}

// b0/l0/nv0: n0(8) n1(8); b0/l0/nv1: n2(4) n3(8); b0/l1/nv2: n4(8); b1/l2/nv3: n5(2) n6(8)
ClusterState SmallCluster() {
  return NodesState({MakeNode("n0").At("b0", "l0", "nv0").Obj(), MakeNode("n1").At("b0", "l0", "nv0").Obj(),
                     MakeNode("n2").At("b0", "l0", "nv1").Gpus(4).Obj(), MakeNode("n3").At("b0", "l0", "nv1").Obj(),
                     MakeNode("n4").At("b0", "l1", "nv2").Obj(), MakeNode("n5").At("b1", "l2", "nv3").Gpus(2).Obj(),
                     MakeNode("n6").At("b1", "l2", "nv3").Obj()});
}

TEST(AggregatesTest, InitialValuesExact) {
  const ClusterState s = SmallCluster();
  EXPECT_EQ(s.max_gpus_per_node(), 8);
  EXPECT_EQ(s.FreeGpus(s.root()), 46);
  EXPECT_EQ(s.WholeFreeNodes(s.root()), 7);
  EXPECT_EQ(s.MemberCapacity(s.root(), 8), 5);
  EXPECT_EQ(s.MemberCapacity(s.root(), 4), 11);
  EXPECT_EQ(s.MemberCapacity(s.root(), 3), 11);
  EXPECT_EQ(s.MemberCapacity(s.root(), 1), 46);
  EXPECT_EQ(s.MemberCapacity(s.root(), 9), 0);
  EXPECT_GT(s.MemberCapacity(s.root(), 0), 1000000) << "GPU-less members are not GPU-bound";
  EXPECT_EQ(s.StaticMemberCapacity(s.root(), 4), 11);
  const VertexId nv1 = VertexByPath(s, "b0/l0/nv1");
  EXPECT_EQ(s.FreeGpus(nv1), 12);
  EXPECT_EQ(s.MemberCapacity(nv1, 4), 3);
  EXPECT_EQ(s.TightestNodeFree(nv1, 1, 1), 4);
  EXPECT_EQ(s.TightestNodeFree(nv1, 1, 5), 8);
  EXPECT_EQ(s.TightestNodeFree(nv1, 3, 3), 9) << "none fits: max+1";
  EXPECT_EQ(s.TightestNodeFree(s.root(), 1, 1), 2);
  EXPECT_EQ(s.FreeGpus(VertexByPath(s, "b1")), 10);
  ExpectAggregatesMatchBruteForce(s);
}

struct MutationCase {
  std::string name;
  std::function<void(ClusterState&)> mutate;
  // Expected values after the mutation.
  int64_t root_free;
  int32_t root_whole;
  int64_t root_cap8;
  std::string vertex;
  int64_t vertex_free;
  int32_t vertex_whole;
  int64_t root_tightest_1x1;
};

class AggregateMutationTest : public ::testing::TestWithParam<MutationCase> {};

TEST_P(AggregateMutationTest, ExactAfterMutation) {
  const auto& c = GetParam();
  ClusterState s = SmallCluster();
  c.mutate(s);
  const VertexId v = VertexByPath(s, c.vertex);
  EXPECT_EQ(s.FreeGpus(s.root()), c.root_free);
  EXPECT_EQ(s.WholeFreeNodes(s.root()), c.root_whole);
  EXPECT_EQ(s.MemberCapacity(s.root(), 8), c.root_cap8);
  EXPECT_EQ(s.FreeGpus(v), c.vertex_free);
  EXPECT_EQ(s.WholeFreeNodes(v), c.vertex_whole);
  EXPECT_EQ(s.TightestNodeFree(s.root(), 1, 1), c.root_tightest_1x1);
  // Static capacity never changes with allocation or health.
  EXPECT_EQ(s.StaticMemberCapacity(s.root(), 8), 5);
  EXPECT_EQ(s.StaticMemberCapacity(s.root(), 2), 23);
  ExpectAggregatesMatchBruteForce(s);
}

auto Id(ClusterState& s, const char* n) { return s.FindNode(n); }

INSTANTIATE_TEST_SUITE_P(
    Table, AggregateMutationTest,
    ::testing::Values(
        MutationCase{"AllocatePartial", [](ClusterState& s) { s.Allocate(Id(s, "n0"), {3, 0, 0}); }, 43, 6, 4,
                     "b0/l0/nv0", 13, 1, 2},
        MutationCase{"AllocateCpuOnlyBreaksWholeness",
                     [](ClusterState& s) { s.Allocate(Id(s, "n4"), {0, 1000, 0}); }, 46, 6, 5, "b0/l1", 8, 0, 2},
        MutationCase{"AllocateWholeNode", [](ClusterState& s) { s.Allocate(Id(s, "n6"), {8, 0, 0}); }, 38, 6, 4,
                     "b1", 2, 1, 2},
        MutationCase{"OvercommitCountsAsZero", [](ClusterState& s) { s.Allocate(Id(s, "n5"), {5, 0, 0}); }, 44, 6,
                     5, "b1/l2/nv3", 8, 1, 4},
        MutationCase{"AllocateThenReleaseRestores",
                     [](ClusterState& s) {
                       s.Allocate(Id(s, "n2"), {4, 100, 0});
                       s.Release(Id(s, "n2"), {4, 100, 0});
                     },
                     46, 7, 5, "b0/l0/nv1", 12, 2, 2},
        MutationCase{"ReleaseOvercommitPartly",
                     [](ClusterState& s) {
                       s.Allocate(Id(s, "n5"), {5, 0, 0});
                       s.Release(Id(s, "n5"), {4, 0, 0});
                     },
                     45, 6, 5, "b1", 9, 1, 1},
        MutationCase{"UnhealthyIsZeroFree", [](ClusterState& s) { s.SetHealth(Id(s, "n3"), NodeHealth::kUnhealthy); },
                     38, 6, 4, "b0/l0/nv1", 4, 1, 2},
        MutationCase{"CordonedIsZeroFree", [](ClusterState& s) { s.SetHealth(Id(s, "n5"), NodeHealth::kCordoned); },
                     44, 6, 5, "b1", 8, 1, 4},
        MutationCase{"DrainingIsZeroFree", [](ClusterState& s) { s.SetHealth(Id(s, "n0"), NodeHealth::kDraining); },
                     38, 6, 4, "b0/l0/nv0", 8, 1, 2},
        MutationCase{"DegradedStillCounts", [](ClusterState& s) { s.SetHealth(Id(s, "n0"), NodeHealth::kDegraded); },
                     46, 7, 5, "b0/l0/nv0", 16, 2, 2},
        MutationCase{"UnhealthyThenAllocateThenReady",
                     [](ClusterState& s) {
                       s.SetHealth(Id(s, "n1"), NodeHealth::kUnhealthy);
                       s.Allocate(Id(s, "n1"), {6, 0, 0});
                       s.SetHealth(Id(s, "n1"), NodeHealth::kReady);
                     },
                     40, 6, 4, "b0/l0/nv0", 10, 1, 2},
        MutationCase{"AllocateOnUnhealthyChangesNothingVisible",
                     [](ClusterState& s) {
                       s.SetHealth(Id(s, "n1"), NodeHealth::kUnhealthy);
                       s.Allocate(Id(s, "n1"), {6, 0, 0});
                     },
                     38, 6, 4, "b0/l0/nv0", 8, 1, 2}),
    tidal::testing::CaseName());

// ---------------------------------------------------------------------------------------------
// Running workloads
// ---------------------------------------------------------------------------------------------

TEST(RunningTest, AddAndRemoveAdjustCapacity) {
  ClusterState s = SmallCluster();
  Workload w = MakeGang("job").Members(3).Gpus(2).Cpu(1000).Obj();
  const NodeId n0 = s.FindNode("n0"), n6 = s.FindNode("n6");
  ASSERT_TRUE(s.AddRunning(Allocation{w, {{n0, 2}, {n6, 1}}, 10}).ok());
  EXPECT_EQ(s.node(n0).allocated, (Resources{4, 2000, 0}));
  EXPECT_EQ(s.node(n6).allocated, (Resources{2, 1000, 0}));
  EXPECT_EQ(s.FreeGpus(s.root()), 40);
  EXPECT_EQ(s.WholeFreeNodes(s.root()), 5);
  ASSERT_EQ(s.running().count("job"), 1u);
  EXPECT_EQ(s.running().at("job").start_time_s, 10);
  ExpectAggregatesMatchBruteForce(s);
  ASSERT_TRUE(s.RemoveRunning("job").ok());
  EXPECT_TRUE(s.running().empty());
  EXPECT_TRUE(s.node(n0).allocated.IsZero());
  EXPECT_EQ(s.FreeGpus(s.root()), 46);
  EXPECT_EQ(s.WholeFreeNodes(s.root()), 7);
}

struct RunningErrorCase {
  std::string name;
  std::vector<MemberAssignment> assignments;
  bool pre_existing;  // "job" already running
  std::string message;
};

class AddRunningErrorTest : public ::testing::TestWithParam<RunningErrorCase> {};

TEST_P(AddRunningErrorTest, RefusesWithoutSideEffects) {
  ClusterState s = SmallCluster();
  const Workload w = MakeGang("job").Gpus(1).Obj();
  if (GetParam().pre_existing) {
    ASSERT_TRUE(s.AddRunning(Allocation{w, {{0, 1}}, 0}).ok());
  }
  const ClusterState before = s;
  Status st = s.AddRunning(Allocation{w, GetParam().assignments, 0});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kError);
  EXPECT_THAT(st.Message(), HasSubstr(GetParam().message));
  for (NodeId n = 0; n < s.node_count(); ++n) EXPECT_EQ(s.node(n).allocated, before.node(n).allocated);
  EXPECT_EQ(s.FreeGpus(s.root()), before.FreeGpus(s.root()));
  EXPECT_EQ(s.running().size(), before.running().size());
}

INSTANTIATE_TEST_SUITE_P(
    Table, AddRunningErrorTest,
    ::testing::Values(RunningErrorCase{"AlreadyRunning", {{1, 1}}, true, "workload job: already running"},
                      RunningErrorCase{"NegativeNodeId", {{0, 1}, {-1, 1}}, false, "unknown node id -1"},
                      RunningErrorCase{"NodeIdPastEnd", {{0, 1}, {7, 1}}, false, "unknown node id 7"}),
    tidal::testing::CaseName());

TEST(RunningTest, RemoveUnknownIsError) {
  ClusterState s = SmallCluster();
  Status st = s.RemoveRunning("ghost");
  EXPECT_EQ(st.code(), StatusCode::kError);
  EXPECT_THAT(st.Message(), HasSubstr("workload ghost: not running"));
}

TEST(RunningTest, ReleaseMembersPartlyThenWholly) {
  ClusterState s = SmallCluster();
  const NodeId n0 = s.FindNode("n0"), n6 = s.FindNode("n6");
  ASSERT_TRUE(s.AddRunning(Allocation{MakeGang("job").Members(3).Gpus(2).Obj(), {{n0, 2}, {n6, 1}}, 0}).ok());
  ASSERT_TRUE(s.ReleaseMembers("job", n0, 1).ok());
  EXPECT_EQ(s.node(n0).allocated.gpus, 2);
  ASSERT_EQ(s.running().at("job").assignments.size(), 2u);
  EXPECT_EQ(s.running().at("job").assignments[0].members, 1);
  ExpectAggregatesMatchBruteForce(s);
  ASSERT_TRUE(s.ReleaseMembers("job", n0, 1).ok());
  EXPECT_TRUE(s.node(n0).allocated.IsZero());
  ASSERT_EQ(s.running().at("job").assignments.size(), 1u) << "an emptied assignment is dropped";
  EXPECT_EQ(s.running().at("job").assignments[0].node, n6);
  ASSERT_TRUE(s.ReleaseMembers("job", n6, 1).ok());
  EXPECT_EQ(s.running().count("job"), 0u) << "the workload goes when no member remains";
  EXPECT_EQ(s.FreeGpus(s.root()), 46);
  EXPECT_EQ(s.WholeFreeNodes(s.root()), 7);
}

struct ReleaseMembersErrorCase {
  std::string name;
  std::string id;
  std::string node;
  int32_t members;
  std::string message;
};

class ReleaseMembersErrorTest : public ::testing::TestWithParam<ReleaseMembersErrorCase> {};

TEST_P(ReleaseMembersErrorTest, RefusesWithoutSideEffects) {
  ClusterState s = SmallCluster();
  ASSERT_TRUE(s.AddRunning(Allocation{MakeGang("job").Members(3).Gpus(2).Obj(),
                                      {{s.FindNode("n0"), 2}, {s.FindNode("n6"), 1}}, 0})
                  .ok());
  const ClusterState before = s;
  Status st = s.ReleaseMembers(GetParam().id, s.FindNode(GetParam().node), GetParam().members);
  EXPECT_EQ(st.code(), StatusCode::kError);
  EXPECT_THAT(st.Message(), HasSubstr(GetParam().message));
  for (NodeId n = 0; n < s.node_count(); ++n) EXPECT_EQ(s.node(n).allocated, before.node(n).allocated);
  ASSERT_EQ(s.running().count("job"), 1u);
  EXPECT_EQ(s.running().at("job").assignments.size(), 2u);
  EXPECT_EQ(s.running().at("job").assignments[0].members, 2);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ReleaseMembersErrorTest,
    ::testing::Values(ReleaseMembersErrorCase{"UnknownWorkload", "ghost", "n0", 1, "workload ghost: not running"},
                      ReleaseMembersErrorCase{"NodeNotUsed", "job", "n3", 1, "workload job: fewer than 1 members on node n3"},
                      ReleaseMembersErrorCase{"MoreThanOnNode", "job", "n0", 3, "workload job: fewer than 3 members on node n0"},
                      ReleaseMembersErrorCase{"Negative", "job", "n0", -1, "members on node n0"}),
    tidal::testing::CaseName());

// ---------------------------------------------------------------------------------------------
// Transaction
// ---------------------------------------------------------------------------------------------

struct Fingerprint {
  std::vector<int64_t> free;
  std::vector<int32_t> whole;
  std::vector<int64_t> cap;
  std::vector<Resources> allocated;
  std::set<std::string> running;
  bool operator==(const Fingerprint&) const = default;
};

Fingerprint Take(const ClusterState& s) {
  Fingerprint f;
  for (VertexId v = 0; v < s.vertex_count(); ++v) {
    f.free.push_back(s.FreeGpus(v));
    f.whole.push_back(s.WholeFreeNodes(v));
    for (int64_t g = 1; g <= s.max_gpus_per_node(); ++g) f.cap.push_back(s.MemberCapacity(v, g));
  }
  for (const auto& n : s.nodes()) f.allocated.push_back(n.allocated);
  for (const auto& [id, _] : s.running()) f.running.insert(id);
  return f;
}

void ExpectSameVertices(const ClusterState& a, const ClusterState& b) {
  ASSERT_EQ(a.vertex_count(), b.vertex_count());
  for (VertexId v = 0; v < a.vertex_count(); ++v) {
    EXPECT_EQ(a.FreeGpus(v), b.FreeGpus(v)) << a.vertex(v).path;
    EXPECT_EQ(a.WholeFreeNodes(v), b.WholeFreeNodes(v)) << a.vertex(v).path;
  }
}

class TransactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    s_ = FabricState(2, 2, 2, 2);
    s_.Allocate(3, {2, 0, 0});
    // "old" runs on nodes 8 and 9 (block-1) before the transaction.
    ASSERT_TRUE(s_.AddRunning(Allocation{MakeGang("old").Members(2).Gpus(8).Obj(), {{8, 1}, {9, 1}}, 0}).ok());
  }
  // Places two gangs and evicts "old".
  void Mutate(Transaction& t) {
    ASSERT_TRUE(t.Place(MakeGang("a").Members(3).Gpus(4).Obj(), {{0, 2}, {1, 1}}, 5).ok());
    ASSERT_TRUE(t.Evict("old").ok());
    ASSERT_TRUE(t.Place(MakeGang("b").Members(2).Gpus(8).Obj(), {{8, 1}, {12, 1}}, 5).ok());
  }
  ClusterState s_ = FabricState(1, 1, 1, 1);
};

TEST_F(TransactionTest, CommitKeepsEveryStep) {
  {
    Transaction t(s_);
    Mutate(t);
    t.Commit();
  }
  EXPECT_EQ(s_.running().count("a"), 1u);
  EXPECT_EQ(s_.running().count("b"), 1u);
  EXPECT_EQ(s_.running().count("old"), 0u);
  EXPECT_EQ(s_.node(0).allocated.gpus, 8);
  EXPECT_EQ(s_.node(9).allocated.gpus, 0);
  EXPECT_EQ(s_.FreeGpus(s_.root()), 128 - 2 - 12 - 16);
  ExpectAggregatesMatchBruteForce(s_);
}

TEST_F(TransactionTest, DiscardRestoresEverythingExactly) {
  const ClusterState before = s_;
  const Fingerprint fp = Take(s_);
  {
    Transaction t(s_);
    Mutate(t);
    EXPECT_NE(Take(s_), fp) << "the transaction applies its steps as it goes";
    t.Discard();
  }
  EXPECT_EQ(Take(s_), fp);
  ExpectSameVertices(before, s_);
  ASSERT_EQ(s_.running().count("old"), 1u);
  EXPECT_EQ(s_.running().at("old").assignments.size(), 2u);
  ExpectAggregatesMatchBruteForce(s_);
}

TEST_F(TransactionTest, DestructionWithoutCommitDiscards) {
  const Fingerprint fp = Take(s_);
  {
    Transaction t(s_);
    Mutate(t);
  }
  EXPECT_EQ(Take(s_), fp);
}

TEST_F(TransactionTest, FailedStepsAreNotUndone) {
  const Fingerprint fp = Take(s_);
  {
    Transaction t(s_);
    // Placing an id that already runs fails and must not remove the running one on discard.
    Status dup = t.Place(MakeGang("old").Gpus(1).Obj(), {{0, 1}}, 5);
    EXPECT_EQ(dup.code(), StatusCode::kError);
    Status ghost = t.Evict("ghost");
    EXPECT_EQ(ghost.code(), StatusCode::kError);
    EXPECT_THAT(ghost.Message(), HasSubstr("ghost: not running"));
    t.Discard();
  }
  EXPECT_EQ(Take(s_), fp);
  EXPECT_EQ(s_.running().count("old"), 1u);
}

TEST_F(TransactionTest, DiscardAfterCommitIsNoOp) {
  Transaction t(s_);
  Mutate(t);
  t.Commit();
  const Fingerprint fp = Take(s_);
  t.Discard();
  EXPECT_EQ(Take(s_), fp);
}

// ---------------------------------------------------------------------------------------------
// Randomized: aggregates always equal a brute-force recomputation.
// ---------------------------------------------------------------------------------------------

class AggregatePropertyTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(AggregatePropertyTest, RandomMutationsKeepAggregatesExact) {
  std::mt19937 rng(GetParam());
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  // Irregular fabric with mixed node sizes.
  std::vector<Node> nodes;
  const int32_t count = static_cast<int32_t>(pick(5, 30));
  for (int32_t i = 0; i < count; ++i) {
    nodes.push_back(MakeNode("n" + std::to_string(i))
                        .At("b" + std::to_string(pick(0, 2)), "l" + std::to_string(pick(0, 3)), "v" + std::to_string(pick(0, 2)))
                        .Gpus(std::vector<int64_t>{0, 1, 2, 4, 8}[static_cast<size_t>(pick(0, 4))])
                        .Obj());
  }
  ClusterState s = NodesState(std::move(nodes));
  ExpectAggregatesMatchBruteForce(s);
  std::vector<std::pair<NodeId, Resources>> live;
  int next_id = 0;
  const NodeHealth healths[] = {NodeHealth::kReady, NodeHealth::kDegraded, NodeHealth::kUnhealthy,
                                NodeHealth::kDraining, NodeHealth::kCordoned};
  for (int step = 0; step < 300; ++step) {
    SCOPED_TRACE("seed " + std::to_string(GetParam()) + " step " + std::to_string(step));
    const NodeId n = static_cast<NodeId>(pick(0, s.node_count() - 1));
    switch (pick(0, 5)) {
      case 0:
      case 1: {  // allocate, sometimes beyond capacity
        Resources r{pick(0, s.node(n).capacity.gpus + 2), pick(0, 2) * 1000, 0};
        s.Allocate(n, r);
        live.emplace_back(n, r);
        break;
      }
      case 2:
      case 3:  // release a random earlier allocation
        if (!live.empty()) {
          const size_t k = static_cast<size_t>(pick(0, static_cast<int64_t>(live.size()) - 1));
          s.Release(live[k].first, live[k].second);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        }
        break;
      case 4:
        s.SetHealth(n, healths[pick(0, 4)]);
        break;
      case 5: {  // running workloads, or removing one
        if (!s.running().empty() && pick(0, 1) == 0) {
          const std::string id = s.running().begin()->first;
          ASSERT_TRUE(s.RemoveRunning(id).ok());
        } else {
          Workload w = MakeGang("w" + std::to_string(next_id++)).Members(2).Gpus(pick(0, 2)).Obj();
          const NodeId m = static_cast<NodeId>(pick(0, s.node_count() - 1));
          ASSERT_TRUE(s.AddRunning(Allocation{w, {{n, 1}, {m, 1}}, 0}).ok());
        }
        break;
      }
    }
    ExpectAggregatesMatchBruteForce(s);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // Releasing everything returns to a fully free cluster (for the nodes that are schedulable).
  for (const auto& [n, r] : live) s.Release(n, r);
  while (!s.running().empty()) ASSERT_TRUE(s.RemoveRunning(s.running().begin()->first).ok());
  for (NodeId n = 0; n < s.node_count(); ++n) EXPECT_TRUE(s.node(n).allocated.IsZero());
  ExpectAggregatesMatchBruteForce(s);
}

INSTANTIATE_TEST_SUITE_P(Seeds, AggregatePropertyTest, ::testing::Values(1u, 2u, 3u, 42u, 1234u, 99991u),
                         [](const ::testing::TestParamInfo<uint32_t>& i) { return "Seed" + std::to_string(i.param); });

TEST(AggregatePropertyTest, TransactionDiscardUnderRandomLoadRestoresEveryVertex) {
  std::mt19937 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  ClusterState s = FabricState(2, 2, 2, 3);
  for (int i = 0; i < 10; ++i) s.Allocate(static_cast<NodeId>(pick(0, s.node_count() - 1)), {pick(0, 8), 0, 0});
  for (int round = 0; round < 20; ++round) {
    const ClusterState before = s;
    {
      Transaction t(s);
      for (int k = 0; k < 5; ++k) {
        Workload w = MakeGang("r" + std::to_string(round) + "-" + std::to_string(k)).Members(2).Gpus(pick(1, 4)).Obj();
        ASSERT_TRUE(t.Place(w, {{static_cast<NodeId>(pick(0, s.node_count() - 1)), 1},
                               {static_cast<NodeId>(pick(0, s.node_count() - 1)), 1}},
                            0)
                        .ok());
      }
      if (!s.running().empty() && round % 2 == 0) {
        ASSERT_TRUE(t.Evict(s.running().begin()->first).ok());
      }
      if (round % 3 == 0) {
        t.Commit();
        continue;
      }
    }
    ExpectSameVertices(before, s);
    EXPECT_EQ(before.running().size(), s.running().size());
    ExpectAggregatesMatchBruteForce(s);
  }
}

}  // namespace
}  // namespace tidal
