// QueueBudget: what a preemption trial may still take from each other queue (the victim search
// of preemption.cc). Internal to the preemption plugin.
// Threading: a value owned by one VictimSearch, on the cycle's thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/state/queues.h"

namespace tidal::plugins {

// What may still be taken from each other queue in one trial: per resource, how far the queue is
// above its nominal quota now, less what its terminating workloads will give back and what the
// trial already took. Only the resources in which the queue borrows and the preemptor asks for
// something are judged; in those, a queue is never taken below its nominal quota.
class QueueBudget {
 public:
  void Add(int q, const ResVec& over, const ResVec& leaving, const ResVec& wanted) {
    if (q < 0) return;
    if (static_cast<size_t>(q) >= slots_.size()) slots_.resize(static_cast<size_t>(q) + 1);
    Slot& s = slots_[static_cast<size_t>(q)];
    s.present = true;
    s.begin = left_.size();
    s.n = over.size();
    for (size_t r = 0; r < over.size(); ++r) {
      left_.push_back(over[r] - (r < leaving.size() ? leaving[r] : 0));
      judged_.push_back(over[r] > 0 && r < wanted.size() && wanted[r] > 0);
    }
  }
  // Whether queue q borrows any resource the preemptor asks for (before anything is taken).
  bool Borrows(int q) const {
    const Slot* s = Find(q);
    return s != nullptr && std::find(judged_.begin() + static_cast<std::ptrdiff_t>(s->begin),
                                     judged_.begin() + static_cast<std::ptrdiff_t>(s->begin + s->n), 1) !=
                               judged_.begin() + static_cast<std::ptrdiff_t>(s->begin + s->n);
  }
  // How many copies of `per` (one member, or a whole gang) queue q may still give back: the fewest
  // over the judged resources that `per` holds; 0 when it holds none of them.
  int64_t Copies(int q, const ResVec& per) const {
    const Slot* s = Find(q);
    if (s == nullptr) return 0;
    int64_t n = std::numeric_limits<int64_t>::max();
    bool any = false;
    for (size_t r = 0; r < per.size() && r < s->n; ++r) {
      if (!judged_[s->begin + r] || per[r] <= 0) continue;
      any = true;
      n = std::min(n, std::max<int64_t>(0, left_[s->begin + r]) / per[r]);
    }
    return any ? n : 0;
  }
  // Takes `times` copies of `per` from queue q (a negative count gives them back).
  void Take(int q, const ResVec& per, int64_t times) {
    const Slot* s = Find(q);
    if (s == nullptr) return;
    for (size_t r = 0; r < per.size() && r < s->n; ++r) left_[s->begin + r] -= per[r] * times;
  }

 private:
  // Flat: what is left and what is judged of every queue's resources in two arrays, so that a copy
  // (one per trial) is two array copies.
  struct Slot {
    bool present = false;
    size_t begin = 0, n = 0;  // the queue's resources in left_ / judged_
  };
  const Slot* Find(int q) const {
    if (q < 0 || static_cast<size_t>(q) >= slots_.size() || !slots_[static_cast<size_t>(q)].present) return nullptr;
    return &slots_[static_cast<size_t>(q)];
  }
  std::vector<Slot> slots_;  // by queue index
  ResVec left_;
  std::vector<uint8_t> judged_;
};

}  // namespace tidal::plugins
