// quota: admission against the queue tree's nominal quotas, borrowing and lending limits.
//
// Admit: the workload's queue must be a configured leaf (error naming the queue and listing the
//   leaves otherwise) and at least min_members members must be admissible under the rules of
//   core/state/queues.h; otherwise Unschedulable with the quota state that holds it, e.g.
//   "queue team-a uses 48/48 gpus (borrowing limit 0); cohort org has 0 gpus lendable".
// PreFilter: caps the members to place at what quota admits (elastic gangs shrink to fit quota);
//   for a workload that takes any GPU model, also the members per model that the queue's
//   gpus.<model> quotas admit (PlacementConstraints::model_caps, enforced by the search).
// Reserve: refuses non-preemptible work that would eat another queue's headroom
//   (core/state/headroom.h); then charges the placed members to the queue, each with the GPU model of its node (as bound
//   pods are charged), marked borrowed when the queue goes above its nominal quota (informational:
//   preemption judges borrowing from the ledger's current state); Unreserve releases the charge.
// Without a ledger or with no queues configured, every workload is admitted. Admission answers are
// memoized while the ledger's version (core/state/queues.h) is unchanged.
// Threading: cycle thread only; the ledger is owned by the state owner.
#pragma once

#include <memory>
#include <utility>

#include <absl/container/flat_hash_map.h>
#include <nlohmann/json.hpp>

#include "core/api/plugin.h"
#include "core/framework/registry.h"
#include "core/state/queues.h"

namespace tidal::plugins {

class Quota final : public AdmitPlugin, public PreFilterPlugin, public ReservePlugin {
 public:
  static constexpr const char* kName = "quota";
  explicit Quota(QuotaLedger* ledger) : ledger_(ledger) {}
  std::string_view Name() const override { return kName; }
  Status Admit(CycleState& state, const Workload& w) override;
  Status PreFilter(CycleState& state, const Workload& w, const TopologyLevels& levels,
                   PlacementConstraints& constraints) override;
  Status Reserve(CycleState& state, const ClusterState& cluster, const Workload& w, const Candidate& c) override;
  void Unreserve(CycleState& state, const ClusterState& cluster, const Workload& w, const Candidate& c) override;
  static StatusOr<std::unique_ptr<Plugin>> New(const nlohmann::json& args, const PluginContext& ctx);

 private:
  bool Active() const { return ledger_ != nullptr && ledger_->tree().size() > 1; }
  QuotaLedger* ledger_;
  // Answers by (leaf, request, members) while the ledger's version is unchanged: in a deep queue
  // most workloads of a queue ask for the same few shapes. Admit's status (members -1, the
  // workload's total) and PreFilter's admissible members (one member's request; as a Status-free
  // count). Keyed by what QueueTree::Request maps to a request vector (the resources and the GPU
  // model's resource index), without building one per workload.
  struct MemoKey {
    int leaf = 0;
    int32_t members = -1;
    int model = -1;
    Resources request;
    bool operator==(const MemoKey&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const MemoKey& k) {
      return H::combine(std::move(h), k.leaf, k.members, k.model, k.request.gpus, k.request.cpu_milli,
                        k.request.memory_bytes);
    }
  };
  void SyncMemo();
  absl::flat_hash_map<MemoKey, Status> admitted_;
  absl::flat_hash_map<MemoKey, int32_t> admissible_;
  uint64_t memo_version_ = 0;
};

}  // namespace tidal::plugins
