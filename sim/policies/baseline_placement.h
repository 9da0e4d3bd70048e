// Placement for the sim-only baselines (fifo, easy-backfill, kube-default): deliberately NOT the
// core's topology-aware PlacementSearch, but what the baselines' real counterparts do.
//
//   FirstFit            Slurm's select/cons_tres with no topology plugin and equal node weights:
//                       members go to nodes in node order (the fabric's label order), as many per
//                       node as fit. All members or none (gang-aware). Subtrees without room are
//                       skipped with the ClusterState's per-vertex histograms, so a fit costs
//                       O(depth x fanout) plus the nodes it fills.
//   LeastAllocatedNode  kube-scheduler's default NodeResourcesFit scoring (LeastAllocated): one
//                       pod goes to the feasible node with the largest free fraction of GPUs
//                       (ties: lowest node id; kube-scheduler breaks ties at random).
// Every node is checked for health, pool, GPU model and full resource fit.
// Threading: pure functions over a ClusterState the caller owns.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/state/cluster_state.h"

namespace tidal::sim {

// May `n` ever host a member of `w` (health, pool, GPU model)?
bool NodeAdmits(const Node& n, const Workload& w);

// Node-order first fit of `members` members. `gpu_cap` (optional, per node) caps the GPUs a node
// may give (EASY's view of what is not reserved). Fills `out` and returns true, or false.
bool FirstFit(const ClusterState& st, const Workload& w, int32_t members, const std::vector<int64_t>* gpu_cap,
              std::vector<MemberAssignment>* out);
// The same over explicit per-node free GPUs (GPU-only; for a future view of the cluster).
bool FirstFitOnFree(const ClusterState& st, const Workload& w, int32_t members, const std::vector<int64_t>& free,
                    std::vector<MemberAssignment>* out);
// The node for one member of `w` with the most free GPUs (as a fraction of its capacity) that fits
// it now; kNoNode if none.
NodeId LeastAllocatedNode(const ClusterState& st, const Workload& w, bool uniform_capacity);
// The most free GPUs on any schedulable node.
int64_t MaxNodeFreeGpus(const ClusterState& st);

// Why `w` can never start on the nodes `admits` lets it use, even empty and healthy ("" if it can):
// "can never fit: needs 2 member(s) of 8 GPU; the slurm pool holds at most 1 such member". `where`
// names those nodes ("the cluster", "the slurm pool").
std::string NeverFitsOn(const ClusterState& st, const Workload& w, const std::function<bool(const Node&)>& admits,
                        const std::string& where);
// Where a job of `w`'s door may run on `st` without loans: "the cluster", or its door's pool.
std::string DoorPlaces(const ClusterState& st, const Workload& w);

// Why `w` can never start, even on the empty, healthy cluster ("" if it can): NeverFitsOn the nodes
// NodeAdmits (its door's pool when the fabric has pools). Memoized by shape.
class NeverFits {
 public:
  std::string Check(const ClusterState& st, const Workload& w);

 private:
  struct Entry {
    Resources per_member;
    int32_t members;
    std::string gpu_model;
    FrontDoor door;
    std::string why;
  };
  std::vector<Entry> memo_;
};

// Failed request shapes within one pass (capacity only shrinks during a pass).
class ShapeMemo {
 public:
  bool Failed(const Workload& w, int tag) const;
  void Fail(const Workload& w, int tag);
  void Clear() { failed_.clear(); }

 private:
  struct Key {
    Resources per_member;
    int32_t members;
    std::string gpu_model;
    FrontDoor door;
    int tag;
  };
  std::vector<Key> failed_;
};

}  // namespace tidal::sim
