// preemption (PostFilter): when a workload finds no placement, choose victims whose eviction makes
// room for it in the topology shape it needs.
//
// Who may be a victim of preemptor P (all must hold):
//   - it is not already terminating (Allocation::terminating): a terminating workload is leaving
//     anyway, so its capacity counts as freed; when P fits once the terminating ones are gone, no
//     victim is proposed ("waiting for N terminating workload(s)");
//   - it has run at least minRuntime (no thrash on fresh work);
//   - its priority is not above P's (it could not preempt P back);
//   - by priority: lower priority than P and marked preemptible, and either of P's own queue (or of
//     no configured queue), or of another queue that borrows; never another queue's in-quota work;
//   - by reclaim (any priority up to P's, preemptible or not): of another queue that borrows, while
//     P's own queue is within its guarantee (P would not borrow);
//   - by headroom (reclaim too): preemptible work of another queue, borrowing or not, while P's
//     queue grows within its headroom (core/state/headroom.h: room lent to preemptible work).
// Borrowing is judged from the ledger's CURRENT state (QuotaLedger::OverNominal), not from a flag
// frozen at admission: another queue V borrows when it uses more than its nominal quota now, in a
// resource P asks for. Only that much may be taken from V: in each trial, victims of V are taken
// (in victim order) only while V stays at or above its nominal in each such resource, after
// counting what V's terminating workloads give back; an elastic victim may give back just the
// members that fit. So reclaim never takes a queue below its nominal quota.
// Victim order: borrowers first, then lower priority, then least work lost = GPUs x seconds since
// its last checkpoint (tidal.dev/checkpoint-interval, or a reported checkpoint time; without either,
// all the time since it started; none for a workload that checkpoints on notice: it is given
// notice first, engine/engine_disruptions.cc), then the most recently started, then id.
// Shape: victims are chosen per domain of the level P needs (its required level, else the smallest
// level whose domains could hold it), taking victims touching that domain in order (elastic
// victims first give back members above their minimum) until P fits INSIDE the domain (the search
// there, with P's required level; without one above the nodes, when no domain of that level makes
// room, the next level out is tried); victims
// evicted whole that P then fits without are put back, the most valuable first (trial.h); among up
// to maxDomains such domains the one losing the least work wins. A non-elastic gang is evicted whole,
// never in part.
// Threading: cycle thread; trial evictions run in a Transaction that is always discarded.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "core/api/plugin.h"
#include "core/framework/registry.h"
#include "core/state/queues.h"

namespace tidal::plugins {

class Preemption final : public PostFilterPlugin {
 public:
  static constexpr const char* kName = "preemption";
  struct Args {
    int64_t min_runtime_s = 300;
    int64_t max_domains = 4;
  };
  Preemption(QuotaLedger* ledger, Args a) : ledger_(ledger), args_(a) {}
  std::string_view Name() const override { return kName; }
  Status PostFilter(CycleState& state, const Workload& w, const Status& failure, PostFilterContext& ctx,
                    const PlacementConstraints& c, PostFilterResult& result) override;
  static StatusOr<std::unique_ptr<Plugin>> New(const nlohmann::json& args, const PluginContext& ctx);
  // GPU-seconds a running allocation would lose if evicted now.
  static double WorkLost(const Workload& v, int64_t start_s, int64_t now_s);

 private:
  QuotaLedger* ledger_;
  Args args_;
};

}  // namespace tidal::plugins
