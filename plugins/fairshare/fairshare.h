// fairshare: QueueSort by hierarchical fair share over the queue ledger.
//
// Order of the pending queue (Less), in this order:
//   1. workloads of different queues: at the lowest common ancestor of their queues, the child
//      subtree with the lower share goes first; share = dominant resource share of current
//      allocation blended with decayed usage, divided by the weight (core/state/queues.h);
//   2. then higher priority first;
//   3. then earlier submit time;
//   4. then (framework tie-break) workload id.
// Without a ledger (no queues configured) rule 1 is skipped.
// Threading: reads the ledger on the cycle thread; PrepareSort caches shares before each sort.
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
  static StatusOr<std::unique_ptr<Plugin>> New(const nlohmann::json& args, const PluginContext& ctx);

 private:
  int QueueOf(const Workload& w) const;
  QuotaLedger* ledger_;
  // Rank of every queue in hierarchical fair-share order, computed once per sort (leaves sorted
  // with QuotaLedger::CompareQueues; equal shares share a rank), so Less is O(1).
  std::vector<int32_t> rank_;
};

}  // namespace tidal::plugins
