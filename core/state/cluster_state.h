// ClusterState: the engine's model of the fleet: nodes, the topology tree with per-vertex
// aggregates, and the running workloads' allocations.
//
// Tree layout. Nodes are sorted by their topology path, so every vertex covers a contiguous range of
// node ids, and the vertices of one level are contiguous too. Vertex 0 is the cluster root. Children
// of a vertex are a contiguous id range of the next level; vertices of the deepest configured level
// have nodes as children.
//
// Aggregates. Each vertex keeps, over its schedulable nodes: free GPUs, wholly free nodes and a
// histogram "how many nodes have k free GPUs" (k = 0..max GPUs per node). From the histogram,
// MemberCapacity(v, g) = sum_k hist[k] * floor(k / g) is an exact GPU-only upper bound on how many
// g-GPU members fit under v, in O(max GPUs per node) time: placements prune whole subtrees with it
// and never scan every node. A second histogram of node *capacity* (healthy or not) answers "could
// this ever fit" without scanning. Cordoned nodes (spec.unschedulable) take work only from pods
// that tolerate the node.kubernetes.io/unschedulable:NoSchedule taint: they count as zero free in
// the aggregates above and have a free-GPU histogram of their own, which the queries add when
// asked `with_cordoned` (for such a pod).
//
// Ownership and threading: a ClusterState is a value. The engine's state owner holds the live one and
// is the only writer; each cycle works on its own copy (see Snapshot). Not thread-safe: callers that
// share one must synchronise externally.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/api/node.h"
#include "core/api/plugin.h"
#include "core/api/status.h"
#include "core/api/topology_levels.h"
#include "core/api/workload.h"

namespace tidal {

using VertexId = int32_t;

struct Vertex {
  int level = -1;               // -1 = cluster root; otherwise index into TopologyLevels
  VertexId parent = -1;
  std::string name;             // label value at this level
  std::string path;             // "block-0/leaf-2"
  VertexId child_begin = 0, child_end = 0;  // child vertices (empty for the deepest level)
  NodeId node_begin = 0, node_end = 0;      // nodes under this vertex
};

// A workload that holds capacity.
struct Allocation {
  Workload workload;
  std::vector<MemberAssignment> assignments;
  int64_t start_time_s = 0;
  // Ran on quota borrowed beyond its queue's nominal share when it was admitted. Informational:
  // the preemption plugin does not read it (it judges borrowing from the ledger's current state,
  // QuotaLedger::OverNominal of the workload's queue, since a flag frozen at admission goes stale).
  bool borrowed = false;
  // Already being evicted (e.g. a pod with a deletion timestamp): its capacity is about to be
  // released, so preemption never proposes it as a victim and counts its capacity as freed.
  bool terminating = false;
};

class ClusterState {
 public:
  // Builds the tree from the nodes' labels. Errors name the node and the field: a missing or
  // invalid level label, a duplicate node name, negative capacity.
  static StatusOr<ClusterState> Build(TopologyLevels levels, std::vector<Node> nodes);

  const TopologyLevels& levels() const { return levels_; }
  int32_t node_count() const { return static_cast<int32_t>(nodes_.size()); }
  const Node& node(NodeId id) const { return nodes_[static_cast<size_t>(id)]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  NodeId FindNode(std::string_view name) const;
  int64_t max_gpus_per_node() const { return max_gpus_; }

  VertexId root() const { return 0; }
  int32_t vertex_count() const { return static_cast<int32_t>(vertices_.size()); }
  const Vertex& vertex(VertexId v) const { return vertices_[static_cast<size_t>(v)]; }
  // Vertices of one configured level (contiguous ids).
  std::pair<VertexId, VertexId> LevelRange(int level) const { return level_ranges_[static_cast<size_t>(level)]; }
  // The deepest configured vertex holding `n` (the root when no levels are configured).
  VertexId NodeParent(NodeId n) const { return node_parent_[static_cast<size_t>(n)]; }
  // The ancestor of node `n` at `level` (node level returns -1: nodes are not vertices).
  VertexId AncestorAt(NodeId n, int level) const;
  // "block-0/leaf-2/nvl-1/node-17"
  std::string NodePath(NodeId n) const;

  // Aggregates over schedulable nodes; `with_cordoned` adds the cordoned ones (see the header).
  int64_t FreeGpus(VertexId v, bool with_cordoned = false) const {
    return free_gpus_[static_cast<size_t>(v)] + (with_cordoned ? cordoned_free_[static_cast<size_t>(v)] : 0);
  }
  int32_t WholeFreeNodes(VertexId v) const { return whole_free_[static_cast<size_t>(v)]; }
  // GPU-only upper bound of `gpus_per_member` members that fit under v now (see header comment).
  int64_t MemberCapacity(VertexId v, int64_t gpus_per_member, bool with_cordoned = false) const;
  // Same bound if every node under v were healthy and empty.
  int64_t StaticMemberCapacity(VertexId v, int64_t gpus_per_member) const;
  static int64_t NodeMemberCapacity(int64_t free_gpus, int64_t gpus_per_member);
  // The fewest free GPUs of a node under v that still holds `members` members of g GPUs (best fit
  // for single-node placements); max_gpus_per_node()+1 when no node does.
  int64_t TightestNodeFree(VertexId v, int64_t gpus_per_member, int32_t members, bool with_cordoned = false) const;

  // Mutations keep the aggregates exact. Allocation beyond capacity is allowed (other schedulers
  // may have overcommitted) and counts as zero free.
  void Allocate(NodeId n, const Resources& r);
  void Release(NodeId n, const Resources& r);
  void SetHealth(NodeId n, NodeHealth h);
  // Which door's work the node takes (a loan changes it: core/state/lending.h). The aggregates do
  // not depend on pools (placement checks each node's pool).
  void SetPool(NodeId n, Pool pool, Pool lent_by, bool lent_preemptible_only);

  // This object becomes `other` without its running allocations: the same nodes, topology and
  // aggregates (their capacity stays taken), an empty running map. For a view that releases that
  // capacity itself (the future view, core/framework/cycle.cc): no copy of every allocation.
  // Reuses this object's storage.
  void AssignCapacity(const ClusterState& other);

  // Running workloads.
  const std::unordered_map<std::string, Allocation>& running() const { return running_; }
  // Applies the assignments and records the workload as running. Error if the id already runs.
  Status AddRunning(Allocation a);
  // Releases a running workload's capacity. Error if it is not running.
  Status RemoveRunning(const std::string& id);
  // Releases `members` members of running workload `id` on node `n` (e.g. a planned member that
  // is now accounted as a bound pod); the workload disappears when no member remains.
  Status ReleaseMembers(const std::string& id, NodeId n, int32_t members);
  // GPUs running preemptible workloads hold, in all and of one queue (core/state/headroom.h).
  int64_t preemptible_gpus() const { return preemptible_gpus_; }
  int64_t PreemptibleGpusOf(const std::string& queue) const {
    auto it = preemptible_by_queue_.find(queue);
    return it == preemptible_by_queue_.end() ? 0 : it->second;
  }

 private:
  void CountPreemptible(const Workload& w, int64_t members);  // members < 0: released
  // What one node adds to the aggregates of its vertices.
  struct NodeShare {
    int64_t free = 0;       // free GPUs if it takes work (else 0), clamped to 0..max
    bool whole = false;
    int64_t cordoned = -1;  // a cordoned node's free GPUs, clamped; -1 when not cordoned
  };
  NodeShare ShareOf(const Node& node) const;
  void NodeShareChanged(NodeId n, const NodeShare& before);
  int32_t* Hist(VertexId v) { return &hist_[static_cast<size_t>(v) * static_cast<size_t>(max_gpus_ + 1)]; }
  const int32_t* Hist(VertexId v) const {
    return &hist_[static_cast<size_t>(v) * static_cast<size_t>(max_gpus_ + 1)];
  }
  const int32_t* CordonedHist(VertexId v) const {
    return &cordoned_hist_[static_cast<size_t>(v) * static_cast<size_t>(max_gpus_ + 1)];
  }

  TopologyLevels levels_;
  std::vector<Node> nodes_;
  std::unordered_map<std::string, NodeId> node_index_;
  std::vector<Vertex> vertices_;
  std::vector<std::pair<VertexId, VertexId>> level_ranges_;
  std::vector<VertexId> node_parent_;
  int64_t max_gpus_ = 0;
  std::vector<int32_t> hist_;      // free-GPU histogram, (max_gpus_+1) entries per vertex
  std::vector<int32_t> cap_hist_;  // capacity histogram, same shape
  std::vector<int32_t> cordoned_hist_;  // free-GPU histogram of cordoned nodes only, same shape
  std::vector<int64_t> free_gpus_;
  std::vector<int64_t> cordoned_free_;  // free GPUs of cordoned nodes
  std::vector<int32_t> whole_free_;
  std::unordered_map<std::string, Allocation> running_;
  int64_t preemptible_gpus_ = 0;
  std::unordered_map<std::string, int64_t> preemptible_by_queue_;
};

// An immutable view of the cluster for one cycle, with a generation number that increases with
// every change the state owner applies. Readers on other threads (explain, metrics) may hold it.
struct Snapshot {
  std::shared_ptr<const ClusterState> state;
  uint64_t generation = 0;
};

}  // namespace tidal
