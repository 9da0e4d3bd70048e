#include "core/state/transaction.h"

namespace tidal {

Status Transaction::Place(const Workload& w, const std::vector<MemberAssignment>& assignments, int64_t now_s) {
  Status s = state_.AddRunning(Allocation{w, assignments, now_s});
  if (s.ok()) log_.push_back(Step{true, w.id, {}});
  return s;
}

Status Transaction::Evict(const std::string& workload_id) {
  // Copy the id first: the caller may pass a reference into running() (e.g. a map key), which
  // RemoveRunning destroys.
  const std::string id = workload_id;
  auto it = state_.running().find(id);
  if (it == state_.running().end()) return Status::Error("workload " + id + ": not running");
  Allocation copy = it->second;
  Status s = state_.RemoveRunning(id);
  if (s.ok()) log_.push_back(Step{false, id, std::move(copy)});
  return s;
}

void Transaction::Discard() {
  for (auto it = log_.rbegin(); it != log_.rend(); ++it) {
    // Undo cannot fail: it reverses a step that succeeded on this same state.
    if (it->placed) {
      (void)state_.RemoveRunning(it->id);
    } else {
      (void)state_.AddRunning(std::move(it->evicted));
    }
  }
  log_.clear();
  done_ = true;
}

}  // namespace tidal
