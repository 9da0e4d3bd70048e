// The `tidal` policy: the engine's own Scheduler (a Profile of registered plugins, by default
// ProfileSpec::Default(): fairshare, quota, gang, topology, preemption, with the core's backfill)
// run with Scheduler::RunCycle at each scheduling point, as tidal-engine runs it. The QuotaLedger
// is advanced to every event time, charged by the quota plugin and uncharged at completions.
//
// Preemption: built with Create(), the Scheduler applies PostFilter's victims inside the cycle
// (SchedulerOptions::apply_preemptions) and reports each eviction here; the victim's quota charge
// is released at once (so the preemptor's admission sees it) and the simulator requeues the
// victim, which restarts from scratch (the traces carry no checkpoints).
//
// Speed without changing any outcome. A cycle walks the whole pending queue in QueueSort order;
// with thousands pending at every event that is the replay's whole cost. Exact shortcuts, used
// only while PostFilter is INERT (the profile has no PostFilter plugin, or its only one is
// `preemption` and no running job is preemptible and no queue borrows: by that plugin's rules it
// can then propose no victim):
//   0. doomed jobs: whether the core rejects a job (unresolvable) does not depend on the state, so
//      Prepare asks it once per distinct request on an empty copy of the fabric; such jobs are
//      rejected at their first cycle, as the core would, and the shortcuts never need them.
//   1. skip: when no job arrived, the free GPUs are fewer than the smallest pending request, and
//      no kept reservation can move earlier (nothing was freed, or no pending job holds one that
//      starts later), nothing can change: the cycle is not run.
//   2. verified prefix: the cycle runs on the first K jobs of the queue, in the order
//      Scheduler::SortQueue uses (the QueueSort plugin's sort keys, or Less; then id; kept sorted
//      across events when the plugin splits its key by queue, QueueRank, and nothing ages: only
//      the jobs that joined are merged in, and the whole queue is re-sorted only when the queues'
//      ranks change; otherwise listed and partially sorted at each event), plus every
//      pending job holding a kept reservation (book_, shared by both schedulers). A cycle is a
//      sequential walk of that order and honours the kept reservations from its start, so the
//      prefix gets exactly the decisions the whole-queue cycle gives it. It is accepted if no
//      holder after the prefix started, lost or moved its reservation, and every other job after
//      it is provably inert: it cannot reserve (the reservations in force fill the depth, or it
//      is under backfill.minGpus, or its members do not fit on the empty fabric) and cannot be
//      placed: its members do not fit (GPU histogram bound) in the free GPUs it may use after the
//      prefix: on nodes without a reservation, plus on reserved nodes the GPUs beyond those
//      reserved, or all of them if it would end (now + expected run time) by the node's earliest
//      reservation start (the core's backfill rule). Otherwise the prefix's placements are undone
//      (ClusterState::RemoveRunning, QuotaLedger::Uncharge), the book restored, and the prefix
//      grows up to the first (free GPUs + reservations left + 8) jobs that were not inert; up to
//      the whole queue.
//      With pools (sim/lending.h) the bounds count only the nodes the job's door may use.
//   3. no futile victim searches: such cycles run on a second Scheduler over the same profile
//      spec and ledger with SchedulerOptions::max_postfilter_attempts = 0; PostFilter could only
//      have failed, so the decisions are the same.
// With PostFilter not inert every cycle runs on the whole queue, with PostFilter. Tests compare
// every job's start, end and nodes with and without the shortcuts (sim_policy_test.cc).
//
// Threading: single-threaded, owned by one Simulator.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/framework/scheduler.h"
#include "core/state/queues.h"
#include "sim/policy.h"

namespace tidal::sim {

class TidalPolicy final : public Policy {
 public:
  // Builds the profile against `ledger` (may be null: no queues) with preemptions applied in-cycle.
  static StatusOr<std::unique_ptr<TidalPolicy>> Create(const ProfileSpec& spec, const TopologyLevels& levels,
                                                       QuotaLedger* ledger);
  // Over a prebuilt Scheduler: evictions happen only if it was built to apply them and report to
  // this policy (use Create for that).
  TidalPolicy(std::unique_ptr<Scheduler> scheduler, QuotaLedger* ledger)
      : scheduler_(std::move(scheduler)), ledger_(ledger), book_(scheduler_->reservation_book()) {}

  std::string_view Name() const override { return "tidal"; }
  Status Prepare(Simulator& sim) override;
  void AdvanceTo(Simulator& sim, int64_t t) override;
  void Schedule(Simulator& sim, const Changes& changes) override;
  void OnComplete(Simulator& sim, JobId j) override;
  void OnEvicted(Simulator& sim, JobId j) override { OnComplete(sim, j); }  // the charge goes

  // Turns the exact shortcuts off (every cycle over the whole queue, with PostFilter), e.g. to
  // check them.
  void set_shortcuts(bool on) { shortcuts_ = on; }
  const Scheduler& scheduler() const { return *scheduler_; }
  int64_t shape_cache_hits() const { return shape_cache_hits_; }

 private:
  explicit TidalPolicy(QuotaLedger* ledger) : ledger_(ledger) {}
  enum class Check { kInert, kAddActive };
  struct Item {
    // The queue order as one key, compared without reading the workload: aged work first
    // (backfill.agedAfter, as the cycle's AgedFirst; set per event), oldest first {0, submit, 0,
    // 0}; then the others {1, QueueSort key}; ties by id_rank. Without a plugin key (keyed false),
    // order[0] and id_rank only, and the plugin's Less between them.
    std::array<int64_t, 4> order;
    uint32_t id_rank;  // the job's place in id order (equal ids, equal ranks)
    const Workload* w;
    JobId job;
    bool aged() const { return order[0] == 0; }
  };
  struct ReservedNode {
    NodeId node;
    int64_t start;  // earliest reservation start on the node
    int64_t gpus;   // GPUs all its reservations need
  };
  struct GpuCaps {
    int64_t g = 0, base = 0;
    FrontDoor door = FrontDoor::kKubernetes;  // with pools: the nodes this door's work may use
    bool preemptible = false;                 // (and, on nodes lent to preemptible work only, its own)
    int64_t reservable = 0;  // members that fit on the empty fabric
    std::vector<std::pair<int64_t, int64_t>> by_start;  // (reservation start, running sum of members)
  };
  void OnEvict(const std::string& id, int32_t members);
  bool PostFilterInert(const Simulator& sim) const;
  // doomed_: PoolNeverFits with pools; then, with the shortcuts and `ask_core`, the core's rejection.
  void FindDoomed(Simulator& sim, bool ask_core);
  // Pools: why a job can never fit the nodes its door may ever use ("" = it can): its own pool,
  // and the other pool's nodes when that pool lends to such work (tidal+lending). The core counts
  // every node (a loan may bring any), so it would leave such a job pending to the end; the
  // baselines reject it (NeverFits), and so does this policy, with their reason.
  std::string PoolNeverFits(const Simulator& sim, const Workload& w) const;
  void RankIds(const Simulator& sim);
  // After a cycle over the first prefix_ items (and the holders): are the other items inert?
  // kAddActive: active_ may still be placed or reserve, or a holder after the prefix changed.
  Check Verify(Simulator& sim, const CycleResult& r);
  void Undo(Simulator& sim, const CycleResult& r);
  void Apply(Simulator& sim, CycleResult& r, bool prefix_order);
  void RunWhole(Simulator& sim);
  // The queue order of this event in items_ (Scheduler::SortQueue's): KeepOrder keeps it sorted
  // across events when the QueueSort plugin splits its key by queue (QueueRank) and nothing ages;
  // otherwise BuildOrder lists the jobs for a partial sort (returns false when the plugin has no
  // sort keys: Less orders them).
  bool KeepOrder(Simulator& sim, const QueueSortPlugin& qs);
  bool BuildOrder(Simulator& sim, const QueueSortPlugin& qs);
  static bool Before(const QueueSortPlugin& qs, bool keyed, const Item& a, const Item& b);
  void MarkHolders(Simulator& sim);

  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Scheduler> inert_scheduler_;  // same profile, max_postfilter_attempts = 0
  bool inert_ = false;                           // PostFilter inert for the current cycle
  QuotaLedger* ledger_;
  Simulator* sim_ = nullptr;
  bool shortcuts_ = true;
  bool postfilter_known_ = false;  // the only PostFilter plugin (if any) is `preemption`
  // Per job: why it is rejected on any state ("" = it is not): PoolNeverFits, else (with the
  // shortcuts) the core's own rejection on the empty fabric.
  std::vector<std::string> doomed_;
  std::vector<uint32_t> id_rank_;    // per job: its place in the order of workload ids (Item::id_rank)
  bool any_doomed_ = false;
  std::vector<Item> items_, active_;
  // KeepOrder: whether items_ is the last event's sorted queue, the queues' ranks it was sorted by,
  // which jobs it holds, and scratch for jobs joining it.
  bool order_kept_ = false;
  bool order_usable_ = true;  // false once a SortKey broke the QueueRank split: BuildOrder from then on
  std::vector<int64_t> ranks_, ranks_now_;
  std::vector<char> in_items_;
  std::vector<Item> fresh_, merged_;
  std::vector<char> is_holder_;  // per job: holds a kept reservation (holders_), always in the batch
  size_t prefix_ = 0;
  int64_t free_after_prefix_ = 0;
  std::vector<const Workload*> batch_;
  std::vector<JobId> evicted_unstarted_;
  std::vector<ReservedNode> reserved_nodes_;
  int64_t reserve_room_ = 0;  // reservations the depth still allows after the prefix's cycle
  // The reservation book both schedulers share (kept reservations), and a copy to restore when a
  // prefix's cycle is undone.
  std::shared_ptr<std::map<std::string, Reservation>> book_;
  std::map<std::string, Reservation> book_before_;
  std::vector<JobId> holders_;
  std::vector<GpuCaps> caps_;
  std::vector<std::pair<int64_t, int64_t>> empty_caps_;  // (member GPUs, members on the empty fabric)
  // The fabric has pools (sim/lending.h): the bounds count only the nodes a job's door may use,
  // and nodes change hands between cycles (nothing about them is cached across cycles).
  bool pooled_ = false;
  int64_t shape_cache_hits_ = 0;
};

}  // namespace tidal::sim
