// ClusterState::AssignCapacity, the future view's copy (core/framework/cycle.cc): the nodes,
// topology and aggregates of another cluster, with their capacity taken, but no running map; the
// copy's storage is reused and the source is left as it was.
// Threading: single-threaded.
#include <gtest/gtest.h>

#include "core/state/cluster_state.h"
#include "test/support/builders.h"

namespace tidal {
namespace {

using testing::FabricState;
using testing::MakeGang;

TEST(AssignCapacityTest, TakesCapacityAndShapeButNoRunningAllocations) {
  ClusterState src = FabricState(2, 2, 2, 2);
  const Workload w = MakeGang("job").Members(3).Gpus(2).Obj();
  ASSERT_TRUE(src.AddRunning(Allocation{w, {{0, 2}, {5, 1}}, 10}).ok());
  src.Allocate(7, {1, 0, 0});  // capacity taken without a running allocation (another scheduler)
  src.SetHealth(3, NodeHealth::kUnhealthy);

  ClusterState view = FabricState(1, 1, 1, 1);  // another shape: replaced whole
  view.AssignCapacity(src);
  EXPECT_TRUE(view.running().empty());
  ASSERT_EQ(view.node_count(), src.node_count());
  ASSERT_EQ(view.vertex_count(), src.vertex_count());
  for (NodeId n = 0; n < src.node_count(); ++n) {
    EXPECT_EQ(view.node(n).name, src.node(n).name);
    EXPECT_EQ(view.node(n).allocated, src.node(n).allocated) << n;
    EXPECT_EQ(view.node(n).Schedulable(), src.node(n).Schedulable()) << n;
  }
  for (VertexId v = 0; v < src.vertex_count(); ++v) {
    EXPECT_EQ(view.FreeGpus(v), src.FreeGpus(v)) << v;
    EXPECT_EQ(view.WholeFreeNodes(v), src.WholeFreeNodes(v)) << v;
    EXPECT_EQ(view.MemberCapacity(v, 2), src.MemberCapacity(v, 2)) << v;
  }
  EXPECT_EQ(view.FindNode(src.node(5).name), 5);

  // The view gives capacity back itself; the source keeps its allocation.
  const int64_t before = src.FreeGpus(src.root());
  view.Release(0, w.per_member * 2);
  view.Release(5, w.per_member * 1);
  EXPECT_EQ(view.FreeGpus(view.root()), before + 6);
  EXPECT_EQ(src.FreeGpus(src.root()), before);
  EXPECT_EQ(src.running().count("job"), 1u);

  // Assigned again from a source that changed: the earlier releases are gone.
  ASSERT_TRUE(src.RemoveRunning("job").ok());
  view.AssignCapacity(src);
  EXPECT_EQ(view.FreeGpus(view.root()), src.FreeGpus(src.root()));
}

// The view keeps its node storage between assignments and copies a node's name, labels, taints,
// pools and model only where they differ: a source whose nodes changed in any of these must
// still be copied in full, and an unchanged one left equal.
TEST(AssignCapacityTest, CopiesChangedNodeFieldsIntoReusedStorage) {
  const ClusterState a = FabricState(1, 1, 2, 2);
  std::vector<Node> nodes(a.nodes().begin(), a.nodes().end());
  for (auto& n : nodes) {
    n.name += "-b";
    n.labels["extra"] = "x";
    n.gpu_model = "H100";
    n.named_pool = "team";
    n.taints.push_back(Taint{"k", "v", TaintEffect::kNoSchedule});
  }
  nodes[1].capacity.gpus = 4;
  auto built = ClusterState::Build(a.levels(), nodes);
  ASSERT_TRUE(built.ok()) << built.status().Message();
  const ClusterState& b = *built;

  ClusterState view = a;
  view.AssignCapacity(b);  // same node count: the storage is reused
  ASSERT_EQ(view.node_count(), b.node_count());
  for (NodeId n = 0; n < b.node_count(); ++n) {
    EXPECT_EQ(view.node(n).name, b.node(n).name) << n;
    EXPECT_EQ(view.node(n).labels, b.node(n).labels) << n;
    EXPECT_EQ(view.node(n).gpu_model, "H100") << n;
    EXPECT_EQ(view.node(n).named_pool, "team") << n;
    EXPECT_EQ(view.node(n).taints, b.node(n).taints) << n;
    EXPECT_EQ(view.node(n).capacity, b.node(n).capacity) << n;
  }
  EXPECT_EQ(view.FindNode(b.node(1).name), 1);
  EXPECT_EQ(view.FreeGpus(view.root()), b.FreeGpus(b.root()));

  view.AssignCapacity(a);  // and back
  for (NodeId n = 0; n < a.node_count(); ++n) {
    EXPECT_EQ(view.node(n).name, a.node(n).name) << n;
    EXPECT_EQ(view.node(n).labels, a.node(n).labels) << n;
    EXPECT_TRUE(view.node(n).taints.empty()) << n;
    EXPECT_EQ(view.node(n).gpu_model, a.node(n).gpu_model) << n;
  }
  EXPECT_EQ(view.FreeGpus(view.root()), a.FreeGpus(a.root()));
}

}  // namespace
}  // namespace tidal
