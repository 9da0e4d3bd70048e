// ClusterState::Build: validation of nodes and levels (errors name the field and the node), and
// the topology tree's shape: counts, ranges, paths, ancestors and the natural order of labels.
#include "core/state/cluster_state.h"

#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/support/builders.h"

namespace tidal {
namespace {

using ::testing::HasSubstr;
using testing::FabricState;
using testing::MakeNode;
using testing::NodesState;
using testing::VertexByPath;

constexpr const char* kBlockKey = "topology.tidal.dev/block";
constexpr const char* kLeafKey = "topology.tidal.dev/leaf";
constexpr const char* kNvlinkKey = "topology.tidal.dev/nvlink";

// ---------------------------------------------------------------------------------------------
// Build errors
// ---------------------------------------------------------------------------------------------

struct BuildErrorCase {
  std::string name;
  std::vector<Node> nodes;
  std::vector<std::string> message_parts;
};

class BuildErrorTest : public ::testing::TestWithParam<BuildErrorCase> {};

TEST_P(BuildErrorTest, RefusesWithFieldAndNode) {
  auto st = ClusterState::Build(TopologyLevels::Default(), GetParam().nodes);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), StatusCode::kError);
  for (const auto& part : GetParam().message_parts) EXPECT_THAT(st.status().Message(), HasSubstr(part));
}

Node Good(const std::string& name) { return MakeNode(name).At("b0", "l0", "nv0").Obj(); }

Node WithLabel(const std::string& name, const std::string& key, const std::string& value) {
  return MakeNode(name).At("b0", "l0", "nv0").Label(key, value).Obj();
}

Node Without(const std::string& name, const std::string& key) {
  Node n = Good(name);
  n.labels.erase(key);
  return n;
}

INSTANTIATE_TEST_SUITE_P(
    Table, BuildErrorTest,
    ::testing::Values(
        BuildErrorCase{"MissingLeafLabel",
                       {Good("n0"), Without("n1", kLeafKey)},
                       {"node n1", "label topology.tidal.dev/leaf", "topology level leaf", "missing"}},
        BuildErrorCase{"MissingBlockLabel",
                       {Without("gpu-7", kBlockKey)},
                       {"node gpu-7", "label topology.tidal.dev/block", "missing"}},
        BuildErrorCase{"NoLabelsAtAll", {MakeNode("bare").Obj()}, {"node bare", "topology.tidal.dev/block", "missing"}},
        BuildErrorCase{"LabelStartsWithDash",
                       {WithLabel("n2", kNvlinkKey, "-nv0")},
                       {"node n2", "label topology.tidal.dev/nvlink", "invalid value \"-nv0\""}},
        BuildErrorCase{"LabelEndsWithUnderscore",
                       {WithLabel("n2", kLeafKey, "leaf_")},
                       {"node n2", "topology.tidal.dev/leaf", "invalid value \"leaf_\""}},
        BuildErrorCase{"LabelWithSpace",
                       {WithLabel("n2", kLeafKey, "leaf 0")},
                       {"node n2", "invalid value \"leaf 0\""}},
        BuildErrorCase{"LabelWithSlash",
                       {WithLabel("n2", kBlockKey, "a/b")},
                       {"node n2", "invalid value \"a/b\""}},
        BuildErrorCase{"EmptyLabel", {WithLabel("n2", kBlockKey, "")}, {"node n2", "invalid value \"\""}},
        BuildErrorCase{"LabelTooLong",
                       {WithLabel("n2", kBlockKey, std::string(64, 'a'))},
                       {"node n2", "topology.tidal.dev/block", "invalid value"}},
        BuildErrorCase{"DuplicateNodeName",
                       {Good("n0"), Good("n1"), Good("n0")},
                       {"node n0", "duplicate node name"}},
        BuildErrorCase{"NegativeGpuCapacity",
                       {MakeNode("n3").At("b0", "l0", "nv0").Gpus(-1).Obj()},
                       {"node n3", "capacity", "must not be negative"}},
        BuildErrorCase{"NegativeCpuCapacity",
                       {MakeNode("n3").At("b0", "l0", "nv0").Cpu(-5).Obj()},
                       {"node n3", "capacity", "must not be negative"}},
        BuildErrorCase{"NegativeAllocated",
                       {MakeNode("n4").At("b0", "l0", "nv0").Used(-1).Obj()},
                       {"node n4", "allocated", "must not be negative"}},
        BuildErrorCase{"EmptyNodeName", {Good("")}, {"nodes[0].name", "must not be empty"}}),
    tidal::testing::CaseName());

TEST(BuildTest, LabelValueLimits) {
  // 63 characters and the inner punctuation [._-] are fine.
  auto ok = ClusterState::Build(TopologyLevels::Default(),
                                {WithLabel("n0", kBlockKey, std::string(63, 'b')), WithLabel("n1", kLeafKey, "a.b_c-d")});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
}

struct LevelErrorCase {
  std::string name;
  std::vector<TopologyLevel> levels;
  std::string message;
};

class LevelErrorTest : public ::testing::TestWithParam<LevelErrorCase> {};

TEST_P(LevelErrorTest, Refuses) {
  TopologyLevels levels;
  levels.levels = GetParam().levels;
  auto st = ClusterState::Build(levels, {MakeNode("n").Label("k", "v").Obj()});
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.status().Message(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Table, LevelErrorTest,
    ::testing::Values(LevelErrorCase{"NodeIsImplicit", {{"node", "k"}}, "topology.levels[0]: \"node\" is implicit"},
                      LevelErrorCase{"Duplicate", {{"rack", "k"}, {"rack", "k2"}},
                                     "topology.levels[1]: duplicate level \"rack\""},
                      LevelErrorCase{"EmptyLabelKey", {{"rack", ""}}, "topology.levels[0]: name and label key"},
                      LevelErrorCase{"EmptyName", {{"", "k"}}, "topology.levels[0]: name and label key"}),
    tidal::testing::CaseName());

// ---------------------------------------------------------------------------------------------
// Tree shape
// ---------------------------------------------------------------------------------------------

struct ShapeCase {
  std::string name;
  int32_t blocks, leaves, nvlinks, nodes;
};

class TreeShapeTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(TreeShapeTest, CountsRangesPathsAncestors) {
  const auto& c = GetParam();
  const ClusterState s = FabricState(c.blocks, c.leaves, c.nvlinks, c.nodes);
  const int32_t per_level[3] = {c.blocks, c.blocks * c.leaves, c.blocks * c.leaves * c.nvlinks};
  const int32_t total_nodes = per_level[2] * c.nodes;
  ASSERT_EQ(s.node_count(), total_nodes);
  EXPECT_EQ(s.vertex_count(), 1 + per_level[0] + per_level[1] + per_level[2]);
  EXPECT_EQ(s.levels().node_level(), 3);

  // Root covers everything; its children are the blocks.
  EXPECT_EQ(s.vertex(s.root()).level, -1);
  EXPECT_EQ(s.vertex(s.root()).node_begin, 0);
  EXPECT_EQ(s.vertex(s.root()).node_end, total_nodes);
  EXPECT_EQ(s.vertex(s.root()).child_begin, s.LevelRange(0).first);
  EXPECT_EQ(s.vertex(s.root()).child_end, s.LevelRange(0).second);

  VertexId expected_begin = 1;
  for (int l = 0; l < 3; ++l) {
    SCOPED_TRACE("level " + std::to_string(l));
    auto [b, e] = s.LevelRange(l);
    EXPECT_EQ(b, expected_begin);
    EXPECT_EQ(e - b, per_level[l]);
    expected_begin = e;
    // The level's vertices tile [0, N) in order, each with an equal share.
    NodeId next = 0;
    for (VertexId v = b; v < e; ++v) {
      const Vertex& x = s.vertex(v);
      EXPECT_EQ(x.level, l);
      EXPECT_EQ(x.node_begin, next);
      EXPECT_EQ(x.node_end - x.node_begin, total_nodes / per_level[l]);
      next = x.node_end;
      // Parent covers the child; children tile the parent.
      const Vertex& p = s.vertex(x.parent);
      EXPECT_LE(p.node_begin, x.node_begin);
      EXPECT_GE(p.node_end, x.node_end);
      EXPECT_GE(v, p.child_begin);
      EXPECT_LT(v, p.child_end);
      if (l < 2) {
        ASSERT_LT(x.child_begin, x.child_end);
        EXPECT_EQ(s.vertex(x.child_begin).node_begin, x.node_begin);
        EXPECT_EQ(s.vertex(x.child_end - 1).node_end, x.node_end);
        for (VertexId k = x.child_begin; k < x.child_end; ++k) EXPECT_EQ(s.vertex(k).parent, v);
      } else {
        EXPECT_EQ(x.child_begin, x.child_end) << "deepest vertices have no child vertices";
      }
      EXPECT_EQ(x.path, x.parent == 0 ? x.name : s.vertex(x.parent).path + "/" + x.name);
    }
    EXPECT_EQ(next, total_nodes);
  }

  for (NodeId n = 0; n < total_nodes; ++n) {
    // GenerateFabric numbers nodes and domains globally and in order; natural sort keeps it.
    const std::string name = "node-" + std::to_string(n);
    EXPECT_EQ(s.node(n).name, name);
    EXPECT_EQ(s.FindNode(name), n);
    const int32_t nv = n / c.nodes, lf = nv / c.nvlinks, bl = lf / c.leaves;
    const std::string path = "block-" + std::to_string(bl) + "/leaf-" + std::to_string(lf) + "/nvlink-" +
                             std::to_string(nv) + "/" + name;
    EXPECT_EQ(s.NodePath(n), path);
    EXPECT_EQ(s.NodeParent(n), s.AncestorAt(n, 2));
    for (int l = 0; l < 3; ++l) {
      const VertexId a = s.AncestorAt(n, l);
      ASSERT_GE(a, s.LevelRange(l).first);
      ASSERT_LT(a, s.LevelRange(l).second);
      EXPECT_GE(n, s.vertex(a).node_begin);
      EXPECT_LT(n, s.vertex(a).node_end);
    }
    EXPECT_EQ(s.vertex(s.AncestorAt(n, 0)).name, "block-" + std::to_string(bl));
    EXPECT_EQ(s.vertex(s.AncestorAt(n, 1)).name, "leaf-" + std::to_string(lf));
    EXPECT_EQ(s.AncestorAt(n, 3), -1) << "nodes are not vertices";
  }
  EXPECT_EQ(s.FindNode("node-" + std::to_string(total_nodes)), kNoNode);
}

INSTANTIATE_TEST_SUITE_P(Table, TreeShapeTest,
                         ::testing::Values(ShapeCase{"Single", 1, 1, 1, 1}, ShapeCase{"Small", 2, 2, 2, 2},
                                           ShapeCase{"Uneven", 2, 3, 2, 4}, ShapeCase{"TwelveLeaves", 1, 12, 1, 3},
                                           ShapeCase{"Wide", 3, 4, 4, 4}),
                         tidal::testing::CaseName());

TEST(TreeShapeTest, NaturalOrderOfLabelsAndNames) {
  // Input order is scrambled; "leaf-10" sorts after "leaf-2", "n10" after "n9".
  ClusterState s = NodesState({MakeNode("n10").At("b", "leaf-10", "nv-a").Obj(),
                               MakeNode("n9").At("b", "leaf-2", "nv-a").Obj(),
                               MakeNode("n1").At("b", "leaf-10", "nv-a").Obj(),
                               MakeNode("n2").At("b", "leaf-2", "nv-a").Obj()});
  std::vector<std::string> names;
  for (const auto& n : s.nodes()) names.push_back(n.name);
  EXPECT_THAT(names, ::testing::ElementsAre("n2", "n9", "n1", "n10"));
  auto [b, e] = s.LevelRange(1);
  ASSERT_EQ(e - b, 2);
  EXPECT_EQ(s.vertex(b).path, "b/leaf-2");
  EXPECT_EQ(s.vertex(b + 1).path, "b/leaf-10");
}

TEST(TreeShapeTest, LabelsThatDifferOnlyInLeadingZerosAreDistinctContiguousVertices) {
  // "l01" and "l1" compare equal numerically; they are still different labels, so whatever the
  // input order, each must be exactly one vertex covering a contiguous range of its nodes.
  const std::vector<Node> nodes = {MakeNode("a").At("b", "l01", "nv-b").Obj(), MakeNode("b").At("b", "l1", "nv-a").Obj(),
                                   MakeNode("c").At("b", "l01", "nv-a").Obj(), MakeNode("d").At("b", "l1", "nv-b").Obj(),
                                   MakeNode("e").At("b", "l001", "nv-a").Obj()};
  std::vector<size_t> order = {0, 1, 2, 3, 4};
  do {
    std::vector<Node> input;
    std::string trace;
    for (size_t i : order) input.push_back(nodes[i]), trace += nodes[i].name;
    SCOPED_TRACE("input order " + trace);
    ClusterState s = NodesState(input);
    auto [b, e] = s.LevelRange(1);
    ASSERT_EQ(e - b, 3) << "each distinct leaf label is one vertex";
    std::set<std::string> names;
    for (VertexId v = b; v < e; ++v) names.insert(s.vertex(v).name);
    EXPECT_EQ(names, (std::set<std::string>{"l001", "l01", "l1"}));
    for (NodeId n = 0; n < s.node_count(); ++n) {
      EXPECT_EQ(s.vertex(s.AncestorAt(n, 1)).name, s.node(n).labels.at(kLeafKey));
    }
    ASSERT_EQ(s.LevelRange(2).second - s.LevelRange(2).first, 5);
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST(TreeShapeTest, SameLabelUnderDifferentParentsIsTwoVertices) {
  ClusterState s = NodesState({MakeNode("a").At("b0", "leaf-0", "nv").Obj(), MakeNode("b").At("b1", "leaf-0", "nv").Obj()});
  auto [b, e] = s.LevelRange(1);
  ASSERT_EQ(e - b, 2);
  EXPECT_EQ(s.vertex(b).path, "b0/leaf-0");
  EXPECT_EQ(s.vertex(b + 1).path, "b1/leaf-0");
  EXPECT_EQ(s.NodePath(s.FindNode("b")), "b1/leaf-0/nv/b");
}

TEST(TreeShapeTest, NoConfiguredLevels) {
  auto st = ClusterState::Build(TopologyLevels{}, {MakeNode("y").Obj(), MakeNode("x").Gpus(4).Obj()});
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  const ClusterState& s = *st;
  EXPECT_EQ(s.vertex_count(), 1);
  EXPECT_EQ(s.levels().node_level(), 0);
  EXPECT_EQ(s.vertex(0).child_begin, s.vertex(0).child_end);
  EXPECT_EQ(s.NodeParent(0), 0);
  EXPECT_EQ(s.NodePath(s.FindNode("x")), "x");
  EXPECT_EQ(s.FreeGpus(0), 12);
  EXPECT_EQ(s.MemberCapacity(0, 4), 3);
}

TEST(TreeShapeTest, CustomLevels) {
  TopologyLevels levels;
  levels.levels = {{"zone", "example.com/zone"}, {"rack", "example.com/rack"}};
  auto st = ClusterState::Build(levels, {MakeNode("n0").Label("example.com/zone", "z1").Label("example.com/rack", "r1").Obj(),
                                         MakeNode("n1").Label("example.com/zone", "z1").Label("example.com/rack", "r2").Obj(),
                                         MakeNode("n2").Label("example.com/zone", "z2").Label("example.com/rack", "r1").Obj()});
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->vertex_count(), 1 + 2 + 3);
  EXPECT_EQ(st->NodePath(st->FindNode("n2")), "z2/r1/n2");
  EXPECT_EQ(st->vertex(st->AncestorAt(st->FindNode("n1"), 0)).path, "z1");
}

}  // namespace
}  // namespace tidal
