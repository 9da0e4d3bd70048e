// PendingMerge: walks the Engine's pending index (queue -> its pending gangs in queue order) in
// the order the cycle's QueueSort puts them: the queues' fair-share ranks first (FairShare::RankOf;
// every queue ranks 0 under "priority"), then the index order (priority, submit time, key). A
// k-way merge over the queues' sets, no sort and no copy of the index. Used by the book refresh's
// prefix (engine_refresh.cc) and explain's bounded dry run (engine_views.cc).
// Threading: a value on the caller's stack; it holds iterators into the index, so the caller
// keeps the Engine's mu_ for its whole life and changes nothing in the index meanwhile.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/state/queues.h"
#include "engine/engine_gang_types.h"

namespace tidal {

// A queue's fair-share rank as FairShare::RankOf reads it: an unknown queue ranks with rank[0];
// no ranks (a QueueSort other than fairshare): 0 for every queue.
class QueueRanks {
 public:
  QueueRanks(const QuotaLedger& ledger, bool fairshare)
      : tree_(&ledger.tree()), ranks_(fairshare ? ledger.FairShareRanks() : std::vector<int32_t>{}) {}
  int32_t Of(const std::string& queue) const {
    if (ranks_.empty()) return 0;
    const int q = tree_->Find(queue);
    return q > 0 && static_cast<size_t>(q) < ranks_.size() ? ranks_[static_cast<size_t>(q)] : ranks_[0];
  }

 private:
  const QueueTree* tree_;
  std::vector<int32_t> ranks_;
};

class PendingMerge {
 public:
  void Add(int32_t rank, const std::set<GangHeadKey>& gangs) {
    if (!gangs.empty()) cursors_.push_back(Cursor{rank, gangs.begin(), gangs.end()});
  }
  // The next gang in queue order without taking it (nullptr: every queue is walked).
  const GangHeadKey* Peek() {
    Cursor* c = Least();
    return c == nullptr ? nullptr : &*c->it;
  }
  // The next gang in queue order, taken (nullptr: every queue is walked).
  const GangHeadKey* Next() {
    Cursor* c = Least();
    if (c == nullptr) return nullptr;
    const GangHeadKey* k = &*c->it;
    ++c->it;
    return k;
  }

 private:
  struct Cursor {
    int32_t rank;
    std::set<GangHeadKey>::const_iterator it, end;
  };
  Cursor* Least() {
    Cursor* next = nullptr;
    for (auto& c : cursors_) {
      if (c.it == c.end) continue;
      if (next == nullptr || c.rank < next->rank || (c.rank == next->rank && *c.it < *next->it)) next = &c;
    }
    return next;
  }
  std::vector<Cursor> cursors_;
};

}  // namespace tidal
