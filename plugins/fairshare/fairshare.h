// fairshare: QueueSort by hierarchical fair share over the queue ledger.
//
// Order of the pending queue (Less), in this order:
//   1. workloads of different queues: by the queues' fair-share ranks (QuotaLedger::FairShareRanks):
//      at the lowest common ancestor of their queues, the child subtree with the lower share goes
//      first, an equal share broken by the child's name; share = dominant resource share of current
//      allocation blended with decayed usage, divided by the weight (core/state/queues.h). Two
//      queues share a rank (and fall through to rule 2) only when they tie at every level below
//      their common ancestor. Workloads of an unknown or inner queue go after every leaf's;
//   2. then higher priority first;
//   3. then earlier submit time;
//   4. then (framework tie-break) workload id.
// The ranks are computed once per sort, in PrepareSort (which must precede Less and SortKey; without
// it, or without a ledger, rule 1 is skipped), so Less is O(1) and a strict weak order, and SortKey
// always gives a key.
// Threading: reads the ledger on the cycle thread only.
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/api/plugin.h"
#include "core/framework/registry.h"
#include "core/state/queues.h"

namespace tidal::plugins {

class FairShare final : public QueueSortPlugin {
 public:
  static constexpr const char* kName = "fairshare";
  explicit FairShare(QuotaLedger* ledger) : ledger_(ledger) {}
  std::string_view Name() const override { return kName; }
  void PrepareSort() override;
  bool Less(const Workload& a, const Workload& b) const override;
  bool SortKey(const Workload& w, std::array<int64_t, 3>* key) const override;
  bool QueueRank(int32_t queue_id, int64_t* rank) const override;
  static StatusOr<std::unique_ptr<Plugin>> New(const nlohmann::json& args, const PluginContext& ctx);

 private:
  int32_t RankOf(const Workload& w) const;  // requires a non-empty rank_
  QuotaLedger* ledger_;
  // Fair-share rank of every queue (QuotaLedger::FairShareRanks), from the last PrepareSort.
  std::vector<int32_t> rank_;
};

}  // namespace tidal::plugins
