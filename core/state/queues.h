// Queues and the one fair-share / quota ledger that every front door charges.
//
// QueueTree: the configured hierarchy (org > team > queue, any depth), each queue with a weight and,
// per resource, a nominal quota, a borrowing limit and a lending limit (kUnlimited when unset).
// Resources are indexed: 0 = gpus, 1 = cpu (millicores), 2 = memory (bytes), then one entry per
// configured GPU model ("gpus.h100").
//
// QuotaLedger: for every queue (subtree totals), the current allocation, the part of it that is
// borrowed, and usage in resource-seconds decayed with the queue's half-life:
//   usage(t + dt) = usage(t) * e^(-k dt) + alloc * (1 - e^(-k dt)) / k,  k = ln 2 / half-life,
// the exact integral of a constant allocation over dt with exponential decay. One half-life after a
// queue stops running, its usage has halved.
//
// Admission of a request R into leaf queue q (numbered, as in docs/fair-share.md): with U' = U + R
// on every queue a on the path from q up to (not including) the root:
//   1. U'_a <= nominal_a + borrowingLimit_a;
//   2. if a would borrow (U'_a > nominal_a), at a's parent p: the children's total borrowing sum_c max(0, U'_c - nominal_c) must not exceed
//      what they can lend, sum_c min(lendingLimit_c, max(0, nominal_c - U'_c)), plus p's unassigned
//      nominal max(0, nominal_p - sum_c nominal_c), plus what p itself borrows, max(0, U'_p - nominal_p)
//      (which rule 1 and 2 then bound one level up).
// A workload admitted while U'_q > nominal_q is borrowing; preemption reclaims borrowed work first.
// A queue within its nominal quota is always admitted (rule 2 does not apply): when others borrowed
// that quota meanwhile, its workload finds no room and preemption reclaims the borrowed work.
//
// Fair share: share(q) = max_r (0.5 * alloc_r(q) + 0.5 * k * usage_r(q)) / capacity_r / weight(q),
// over subtree totals: the dominant resource share of current allocation blended with decayed
// history (k * usage is the decayed average rate). Lower share goes first, compared at the lowest
// common ancestor of two queues (FairShareRanks).
//
// Threading: not thread-safe; owned by one state owner (the engine's, the simulator's, tidalctl's).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <absl/container/inlined_vector.h>

#include "core/api/resources.h"
#include "core/api/status.h"
#include "core/api/workload.h"

namespace tidal {

// One amount per configured resource (QueueConfig::resources: gpus, cpu, memory, then gpus.<model>
// ...). Built for every workload a cycle judges (quota, fair share, preemption budgets): inline
// storage for the usual few resources, so judging a workload allocates nothing (abseil's
// InlinedVector; more resources than that spill to the heap like a std::vector).
using ResVec = absl::InlinedVector<int64_t, 6>;
inline constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max() / 4;

struct QueueSpec {
  std::string name;
  std::string parent;          // "" = child of the root
  double weight = 1.0;
  ResVec nominal;              // per resource; 0 when unset
  ResVec borrowing_limit;      // kUnlimited when unset
  ResVec lending_limit;        // kUnlimited when unset
  int64_t half_life_s = 0;     // 0 = the config's default
  // Headroom (core/state/headroom.h): the cluster keeps room for this queue to grow to
  // headroom_gpus GPUs at any time; other queues' preemptible work may fill that room, and this
  // queue's pending work takes it back (notice at most headroom_grace_s). 0 = none.
  int64_t headroom_gpus = 0;
  int64_t headroom_grace_s = 30;
  // headroom.fromHPA: the headroom is also derived from the HPAs whose pods are in this queue
  // (QuotaLedger::SetDerivedHeadroom); the larger of the two counts (HeadroomGpus, headroom.h).
  bool headroom_from_hpa = false;
  // formerNames: names this queue had before (a rename in config). Work that still names one is
  // this queue's (QueueTree::Find), and a reload carries the old name's usage history and charges
  // over, where a plain rename dropped both and left running work uncharged ("unconfigured").
  std::vector<std::string> former_names;
};

struct QueueConfig {
  std::vector<std::string> resources = {"gpus", "cpu", "memory"};
  int64_t default_half_life_s = 7 * 86400;
  std::vector<QueueSpec> queues;
  // The resource index of a name ("gpus", "cpu", "memory", "gpus.<model>"); -1 if unknown.
  int ResourceIndex(const std::string& name) const;
  // Every queue's former names: former name -> the queue's name (QueueSpec::former_names).
  std::map<std::string, std::string> FormerNames() const;
};

class QueueTree {
 public:
  // Assumes a validated config (see core/io/queue_config.h); refuses unknown parents and cycles.
  static StatusOr<std::shared_ptr<const QueueTree>> Build(const QueueConfig& cfg);

  int size() const { return static_cast<int>(nodes_.size()); }  // queue 0 is the implicit root
  // The queue of a name or former name (QueueSpec::former_names); -1 if none. Name() is canonical.
  int Find(const std::string& name) const;
  const std::string& Name(int q) const { return nodes_[static_cast<size_t>(q)].spec.name; }
  int Parent(int q) const { return nodes_[static_cast<size_t>(q)].parent; }
  const std::vector<int>& Children(int q) const { return nodes_[static_cast<size_t>(q)].children; }
  bool IsLeaf(int q) const { return Children(q).empty(); }
  const QueueSpec& Spec(int q) const { return nodes_[static_cast<size_t>(q)].spec; }
  int64_t HalfLife(int q) const;
  const QueueConfig& config() const { return cfg_; }
  int resources() const { return static_cast<int>(cfg_.resources.size()); }
  std::vector<std::string> LeafNames() const;
  // Request vector of a workload's total (members x per-member) on a node of `gpu_model`.
  ResVec Request(const Resources& total, const std::string& gpu_model) const;
  // The resource index a GPU model's GPUs are also counted in (`gpus.<model>`), or -1 (no model,
  // or none configured for it): Request(total, model) depends on `total` and this index alone.
  int ModelResource(const std::string& gpu_model) const;

 private:
  struct Node {
    QueueSpec spec;
    int parent = -1;
    std::vector<int> children;
  };
  QueueConfig cfg_;
  std::vector<Node> nodes_;
  std::map<std::string, int> index_;
  std::map<std::string, int> former_;  // former name -> queue (Find only: parents name queues)
  // The per-model GPU resources "gpus.<model>" of cfg_: (model, resource index), found once here
  // instead of by name in every Request.
  std::vector<std::pair<std::string, int>> model_resources_;
};

struct AdmissionResult {
  Status status;
  bool borrowing = false;
};

class QuotaLedger {
 public:
  explicit QuotaLedger(std::shared_ptr<const QueueTree> tree);

  const QueueTree& tree() const { return *tree_; }
  // Swaps in a new tree (hot reload), keeping allocation and usage of queues that keep their name.
  void Reconfigure(std::shared_ptr<const QueueTree> tree);
  // Total cluster capacity per resource, for normalising shares.
  void SetCapacity(ResVec capacity) {
    capacity_ = std::move(capacity);
    version_ = NextVersion();
  }
  // Changes whenever an input of CheckAdmission changes (allocations, capacity, the tree), and is
  // never reused by another state: callers may memoize admission answers per version.
  uint64_t version() const { return version_; }

  AdmissionResult CheckAdmission(int leaf, const ResVec& req) const;
  // The largest count in [0, max_count] of `per_member` that admission would accept.
  int32_t MaxAdmissibleMembers(int leaf, const ResVec& per_member, int32_t max_count) const;
  // Charges are recorded per workload id so their owner can release them by id later.
  Status Charge(const std::string& id, int leaf, const ResVec& r, bool borrowed);
  // Releases a charge (no-op for an unknown id). Reduce releases part of one.
  void Uncharge(const std::string& id);
  void Reduce(const std::string& id, const ResVec& r);
  struct ChargeInfo {
    int leaf = 0;
    ResVec amount;
    bool borrowed = false;
  };
  const std::map<std::string, ChargeInfo>& charges() const { return charges_; }
  // Integrates allocation into usage and decays it up to `now_s`.
  void Advance(int64_t now_s);
  // Adds usage `r` held over [start_s, end_s] (in the past), decayed to now(), to `leaf` and its
  // ancestors: work the ledger never saw running (a Slurm job that started and ended while the
  // adapter was down, read back from slurmctld's job completion log). Ignored for an empty or
  // future interval.
  void AddPastUsage(int leaf, const ResVec& r, int64_t start_s, int64_t end_s);

  const ResVec& Allocated(int q) const { return alloc_[static_cast<size_t>(q)]; }
  const ResVec& Borrowed(int q) const { return borrowed_[static_cast<size_t>(q)]; }
  const std::vector<double>& Usage(int q) const { return usage_[static_cast<size_t>(q)]; }
  double Share(int q) const;
  // Per resource, how far queue q's current allocation is above its nominal quota (0 where it is
  // within it or the nominal is unlimited): what reclaim may take back from it, and no more.
  ResVec OverNominal(int q) const;
  // The hierarchical fair-share rank of every queue (indexed by queue; lower goes first), from a
  // depth-first walk of the tree that visits each queue's children in increasing share, ties by
  // name: leaf a precedes leaf b exactly when, at their lowest common ancestor, a's side has the
  // lower share (or an equal share and the smaller name). This is a total order whatever order the
  // config lists the queues in. Consecutive leaves share a rank only when they tie at every level:
  // same depth, and equal shares at each level below their lowest common ancestor. Leaves get
  // ranks 0, 1, ...; the root and inner queues (which hold no workloads) rank after every leaf,
  // so callers may use rank[0] for a queue they do not know.
  std::vector<int32_t> FairShareRanks() const;
  // Headroom derived outside the config (HPAs: engine/autoscalers.h), by queue name, with where
  // the number came from. Read by core/state/headroom.h for queues with fromHPA; kept across
  // Reconfigure (keyed by name). Not an input of CheckAdmission (version() unchanged).
  struct DerivedHeadroom {
    int64_t gpus = 0;
    std::string source;  // "HPA e2e/serve: maxReplicas 10 x 8 GPUs"
  };
  void SetDerivedHeadroom(std::map<std::string, DerivedHeadroom> h) { derived_headroom_ = std::move(h); }
  const std::map<std::string, DerivedHeadroom>& derived_headroom() const { return derived_headroom_; }
  // "queue team-a uses 48/48 gpus (nominal 48, borrowing limit 0); cohort org has 0 gpus lendable"
  std::string Describe(int q) const;

  // State file: {"time": t, "usage": {"queue": {"gpus": x, ...}}} - usage survives restarts.
  // LoadState fails (nothing restored) when the document is not that shape; a value it cannot hold
  // (negative, not finite, over 1e18, not a number) or a queue not configured is skipped, and
  // named in `skipped` ("usage.qa.gpus: ..."); the rest is restored.
  std::string SaveState() const;
  Status LoadState(const std::string& json, std::vector<std::string>* skipped = nullptr);
  int64_t now() const { return now_; }

 private:
  static uint64_t NextVersion();
  int64_t Lendable(int q, int r) const;
  void Apply(int leaf, const ResVec& r, int sign, bool borrowed);
  std::shared_ptr<const QueueTree> tree_;
  std::vector<ResVec> alloc_, borrowed_;
  std::vector<std::vector<double>> usage_;
  ResVec capacity_;
  std::map<std::string, ChargeInfo> charges_;
  std::map<std::string, DerivedHeadroom> derived_headroom_;
  int64_t now_ = 0;
  bool started_ = false;
  uint64_t version_ = NextVersion();
};

}  // namespace tidal
