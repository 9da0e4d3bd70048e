// A candidate victim of one victim search (preemption.cc), and what a queue budget lets a trial
// take of it. Internal to the preemption plugin.
// Threading: values owned by one VictimSearch, on the cycle's thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/state/cluster_state.h"
#include "plugins/preemption/queue_budget.h"

namespace tidal::plugins::preemption_internal {

struct Victim {
  std::string id;
  const Allocation* alloc = nullptr;  // a trial that evicts it re-adds it elsewhere: reset after trials
  int queue = -1;          // the victim's queue, when `budgeted`
  bool budgeted = false;   // another queue's work: only what that queue borrows may be taken
  bool borrowing = false;  // its queue is above nominal now (taken first)
  bool reclaim = false;    // eligible by reclaim only, not by priority
  int32_t priority = 0;
  double lost = 0;
  int64_t start_s = 0;
  int32_t surplus = 0;  // elastic members above the minimum
  ResVec per_member, whole;  // ledger requests of one member and of all its members
};

inline int32_t MembersOf(const Allocation& a) {
  int32_t n = 0;
  for (const auto& as : a.assignments) n += as.members;
  return n;
}

// How much of victim v a trial may take under budget `b`: whole (evict) and/or `members` (shrink:
// elastic members above its minimum), or nothing.
struct Take {
  bool whole = false;
  int32_t members = 0;
};
inline Take MayTake(const Victim& v, const QueueBudget& b) {
  Take t;
  if (!v.budgeted || b.Copies(v.queue, v.whole) >= 1) {
    t.whole = true;
    t.members = v.surplus;
  } else {
    t.members = static_cast<int32_t>(std::min<int64_t>(v.surplus, b.Copies(v.queue, v.per_member)));
  }
  return t;
}

}  // namespace tidal::plugins::preemption_internal
