// Transaction: all-or-nothing changes to a ClusterState (the Statement of Volcano/KAI).
//
// A placement applies each member's allocation through the transaction as it goes; Commit() keeps
// them, Discard() (or destruction without Commit) undoes them in reverse order, so a gang is either
// wholly placed or not at all. Aggregates stay exact after either.
// Threading: used by the one thread that owns the ClusterState it wraps.
#pragma once

#include <string>
#include <vector>

#include "core/state/cluster_state.h"

namespace tidal {

class Transaction {
 public:
  explicit Transaction(ClusterState& state) : state_(state) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction() {
    if (!done_) Discard();
  }

  // Records the workload as running with these assignments (allocating their resources).
  Status Place(const Workload& w, const std::vector<MemberAssignment>& assignments, int64_t now_s);
  // Releases a running workload (e.g. a preemption victim).
  Status Evict(const std::string& workload_id);

  void Commit() {
    log_.clear();
    done_ = true;
  }
  void Discard();

 private:
  struct Step {
    bool placed;             // true: undo by removing; false: undo by re-adding `evicted`
    std::string id;
    Allocation evicted;
  };
  ClusterState& state_;
  std::vector<Step> log_;
  bool done_ = false;
};

}  // namespace tidal
