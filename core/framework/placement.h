// PlacementSearch: the topology-aware gang placement algorithm (an "action" in Volcano's terms;
// the policies it consults are the profile's plugins).
//
// For a workload of N members x request r (g GPUs each) and its PlacementConstraints:
//  1. Domain levels to try: the required level only, or, without one, from the deepest level
//     (a single node) outwards to the whole cluster; the first level that yields a candidate wins.
//  2. Depth-first search from the root, visiting only vertices whose MemberCapacity(v, g) >= N
//     (aggregates prune whole subtrees), children in ascending capacity order (best fit first).
//  3. At each domain vertex of the target level, Fill() assigns members: into one child if some
//     child can hold all remaining members (the tightest such child), else the roomiest child first;
//     on nodes, the tightest node first, so wholly free nodes stay free for whole-node work. Each
//     node visited is checked for full resource fit, pool, GPU model, node constraints and the
//     profile's Filters; a candidate puts no more members on a GPU model than its per-model quota
//     cap (PlacementConstraints::model_caps). Cordoned nodes count only for a workload whose
//     constraints tolerate node.kubernetes.io/unschedulable.
//  4. Up to maxCandidates complete placements are collected; Score plugins rank them.
// Cost: O(depth x fanout x maxGPUsPerNode) to find domains, plus the nodes inside the chosen domains.
//
// Threading: a search reads one ClusterState on the cycle's thread; it holds no state between calls.
#pragma once

#include <vector>

#include "core/api/plugin.h"
#include "core/framework/profile.h"
#include "core/state/cluster_state.h"

namespace tidal {

class PlacementSearch {
 public:
  PlacementSearch(const ClusterState& state, const Profile& profile) : state_(state), profile_(profile) {}

  // Fills `out` with up to profile.max_candidates() complete candidates, each placing exactly
  // c.members members. When none is found, returns Unschedulable (may fit later) or
  // UnschedulableAndUnresolvable (cannot fit even on an empty, healthy cluster) with reasons.
  Status Find(const CycleState& cs, const Workload& w, const PlacementConstraints& c, std::vector<Candidate>& out) const;
  // false: a search that finds nothing now returns one shared Unschedulable status without
  // describing why (SchedulerOptions::explain); UnschedulableAndUnresolvable is still described.
  void set_explain(bool on) { explain_ = on; }

 private:
  struct Ctx;
  void Dfs(VertexId v, Ctx& ctx) const;
  void TryDomain(VertexId v, Ctx& ctx) const;
  void TryNodesAsDomains(VertexId v, Ctx& ctx) const;
  int32_t FillVertex(VertexId v, int32_t need, Ctx& ctx, std::vector<MemberAssignment>& out) const;
  int32_t FillNodes(NodeId begin, NodeId end, int32_t need, Ctx& ctx, std::vector<MemberAssignment>& out) const;
  int64_t NodeFit(NodeId n, Ctx& ctx) const;
  // Per-model quota (PlacementConstraints::model_caps): takes up to `want` members' room on node
  // n's GPU model from the candidate being filled; returns how many it may place there (a node
  // that gets fewer than `least` is counted as refused for the explanation).
  int64_t TakeModelRoom(NodeId n, int64_t want, int64_t least, Ctx& ctx) const;
  void ResetModelRoom(Ctx& ctx) const;
  bool IsDeepest(VertexId v) const;
  Candidate MakeCandidate(int level, VertexId domain, std::vector<MemberAssignment> a, const Ctx& ctx) const;
  Status Explain(const Workload& w, const PlacementConstraints& c, const Ctx& ctx) const;
  // The most members of g GPUs that the empty, healthy cluster holds where c allows them (in one
  // domain of c.required_level, if set).
  int64_t StaticBest(const PlacementConstraints& c, int64_t g) const;
  static const Status& NotDescribed();

  const ClusterState& state_;
  const Profile& profile_;
  bool explain_ = true;
};

}  // namespace tidal
