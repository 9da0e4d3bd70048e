// Scheduler: runs scheduling cycles of one Profile over a ClusterState.
//
// One cycle (RunCycle; its steps are the named members of Cycle, core/framework/cycle.h):
//   1. order the pending workloads with the profile's QueueSort (Cycle::Run);
//   2. for each, in order, through the WHOLE queue (Cycle::Consider): Admit -> PreFilter ->
//      PlacementSearch (all members, or for an elastic gang the largest size down to min_members)
//      -> Score -> apply the best candidate in a Transaction -> Reserve -> Permit -> Commit, or
//      Discard on any refusal (ScheduleOne, called by Cycle::TryNow). Reservations kept from
//      earlier cycles (KeepReservations) hold their nodes; a workload's own is lifted while it is
//      considered, then held again while it still waits for room, else dropped (Cycle::SettleOwn);
//   3. when nothing fits: PostFilter (preemption) may propose victims (Cycle::EvictAndRetry applies
//      them when `apply_preemptions`); otherwise, while fewer than `backfill.depth` reservations
//      are in force, a reservation at the earliest start (Cycle::FindReservation, computed by
//      releasing running work and reservations in order of expected end on a future view of the
//      cluster, FutureView). Reservations are kept across cycles and move only earlier (or,
//      overdue and unable to start, to their next earliest start); one whose earliest start is now
//      starts at once (Cycle::StartNow). Later workloads start now only where they would not delay
//      a reservation (they end before it starts, or use GPUs it does not need: ReservationIndex);
//   4. return one Decision per workload: where it landed and why, or why it waits and when it is
//      expected to start (Cycle::WaitOn); the reservation book keeps the cycle's reservations for
//      the next one (Cycle::UpdateBook).
// A gang is never half-placed: every member's allocation goes through one Transaction.
// Within a cycle a request shape that failed fails again (ShapeCache): deep queues stay cheap.
//
// Threading: a Scheduler is used by one thread at a time (the engine's cycle thread, tidalctl, the
// simulator). RunCycle mutates only the ClusterState passed in, which that thread owns, and the
// reservation book (SchedulerOptions::reservations), which that thread also owns.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/api/plugin.h"
#include "core/framework/profile.h"
#include "core/state/cluster_state.h"

namespace tidal {

enum class Outcome { kPlaced, kWaiting, kPending, kRejected, kError };
std::string_view OutcomeName(Outcome o);

struct Decision {
  std::string workload_id;
  Outcome outcome = Outcome::kPending;
  Status status;               // Success when placed; otherwise why not
  Candidate placement;         // when placed or waiting
  PostFilterResult preemption; // victims proposed (and, with apply_preemptions, evicted) by PostFilter
  std::string explanation;     // one human-readable line: where and why, or why not
  int64_t eta_s = -1;          // pending: reserved (or estimated) start time; -1 = unknown
  bool reserved = false;       // pending with a backfill reservation
  bool placement_failed = false;     // pending because no placement was found (not admission)
};

struct Reservation {
  std::string workload;
  int64_t start_s = 0;
  std::vector<MemberAssignment> assignments;
  Resources per_member;
  int64_t end_s = 0;  // expected end: start + the workload's expected run time
};

struct CycleResult {
  uint64_t generation = 0;
  std::vector<Decision> decisions;  // in queue order
  std::vector<Reservation> reservations;  // in force at the end of the cycle (kept and new)
  int64_t shape_cache_hits = 0;
};

struct SchedulerOptions {
  // Evict PostFilter's victims inside the cycle and retry the preemptor at once (the simulator).
  // The engine leaves eviction to the front door (grace periods) and retries later.
  bool apply_preemptions = false;
  // Called for every eviction applied in a cycle: (workload id, members released; -1 = whole).
  std::function<void(const std::string&, int32_t)> on_evict;
  // PostFilter (preemption) runs for at most this many blocked workloads per cycle, in queue order;
  // a shape that found no victims is not retried for a workload of the same queue and no higher
  // priority. Keeps deep queues cheap; the rest wait for the next cycle.
  int max_postfilter_attempts = 64;
  // Where kept reservations live (see Scheduler::sticky_); schedulers that take turns over the
  // same queue (the simulator's) share one. nullptr = the scheduler's own.
  std::shared_ptr<std::map<std::string, Reservation>> reservations;
  // false: a dry cycle run for its reservations only (the engine's book refresh over 100,000
  // pending gangs): CycleResult.decisions stays empty, and the walk stops once nothing later in
  // the queue can change the book (backfill depth reached, every kept reservation's workload seen).
  bool keep_decisions = true;
  // false: decisions carry no explanation text, except a rejection's (why a workload can never
  // fit): the simulator, which reports only rejections' reasons, and millions of decisions. The
  // outcomes, statuses' codes, placements and reservations are the same either way.
  bool explain = true;
};

// Within one cycle capacity only shrinks (placements) and restrictions only grow (reservations),
// so a request shape that found no placement fails again for every later workload of the same
// shape: the cycle remembers failed shapes and answers them without searching ("equal shapes fail
// once"). Anything that frees capacity during the cycle must Clear() it.
class ShapeCache {
 public:
  struct Key {
    Resources per_member;
    int32_t members = 0, min_members = 0;
    int required = -1, preferred = -1;
    std::string gpu_model;
    FrontDoor door = FrontDoor::kKubernetes;
    int64_t ends_bucket = 0;  // reservations it would have to respect (see ScheduleOne)
    std::string constraints;  // Workload::constraints_sig: which nodes it may use
    std::vector<PlacementConstraints::ModelCap> model_caps;  // per-model quota (PreFilter)
    bool preemptible = false;  // lent nodes may take only preemptible work (core/state/lending.h)
    bool operator==(const Key&) const = default;
  };
  const Status* Find(const Key& k) const;
  void Insert(const Key& k, Status s);
  void Clear() {
    map_.clear();
    no_victims_.clear();
  }
  // Preemption memo: (shape, queue) -> highest priority for which no victims were found, and why
  // (the PostFilter's reason, repeated in the decisions it answers; nullptr: not known to fail).
  bool NoVictims(const Key& k, int32_t queue, int32_t priority) const { return NoVictimsWhy(k, queue, priority) != nullptr; }
  const std::string* NoVictimsWhy(const Key& k, int32_t queue, int32_t priority) const;
  void SetNoVictims(const Key& k, int32_t queue, int32_t priority, std::string why = {});
  int postfilter_attempts = 0;  // the cycle's victim searches, bounded by max_postfilter_attempts
  // Off while a workload with its own reservation is considered: it sees the cluster differently,
  // so shapes are neither answered from nor added to the memo, nor to the victim-search memo
  // (victim searches respect the reservations too); the victim-search budget still applies.
  bool memo_shapes = true;
  int64_t hits() const { return hits_; }

 private:
  struct Hash {
    size_t operator()(const Key& k) const;
  };
  std::unordered_map<Key, Status, Hash> map_;
  std::unordered_map<Key, std::unordered_map<int32_t, std::pair<int32_t, std::string>>, Hash> no_victims_;
  mutable int64_t hits_ = 0;
};

// Reservations made so far in a cycle, as the search sees them.
struct BackfillView {
  const std::vector<int64_t>* reserved_from = nullptr;  // per node; INT64_MAX = free
  const std::vector<int64_t>* reserved_gpus = nullptr;  // per node: GPUs the reservations need
  // per node (optional): 1 = its reserved_from is a close (a drain or maintenance window), not a
  // reservation: only the explanation differs (refused_closing).
  const std::vector<uint8_t>* closing = nullptr;
  int64_t latest_start = INT64_MIN;                       // latest reservation start so far
};

class PlacementSearch;  // core/framework/placement.h

class Scheduler {
 public:
  explicit Scheduler(std::unique_ptr<Profile> profile, SchedulerOptions options = {})
      : profile_(std::move(profile)), options_(std::move(options)) {
    sticky_ = options_.reservations ? options_.reservations : std::make_shared<std::map<std::string, Reservation>>();
  }

  const Profile& profile() const { return *profile_; }
  // The reservation book (kept reservations), shared with SchedulerOptions::reservations.
  const std::shared_ptr<std::map<std::string, Reservation>>& reservation_book() const { return sticky_; }

  // Places what it can of `pending` on `state` (placed workloads become running allocations).
  CycleResult RunCycle(ClusterState& state, std::vector<Workload> pending, int64_t now_s) const;
  // The same over workloads the caller keeps (no copies); they must outlive the call.
  CycleResult RunCycle(ClusterState& state, std::vector<const Workload*> pending, int64_t now_s) const;
  // One workload's placement attempt (step 2, with step 3's PostFilter). `cache` memoizes failed
  // shapes and bounds victim searches; `bf` the cycle's reservations (both optional).
  // `at` (optional): place exactly there if it fits now (a reservation whose time has come).
  // `resolved` (optional): the placement constraints as Admit and PreFilter resolved them (the
  // cycle's reservation search uses them; default ones when the workload was refused before).
  Decision ScheduleOne(ClusterState& state, const Workload& w, int64_t now_s, ShapeCache* cache = nullptr,
                       const BackfillView* bf = nullptr, const std::vector<MemberAssignment>* at = nullptr,
                       PlacementConstraints* resolved = nullptr) const;
  // The same, written into `d` (a default-constructed Decision): the cycle decides straight into
  // its result, no Decision moved per workload.
  void ScheduleInto(Decision& d, ClusterState& state, const Workload& w, int64_t now_s, ShapeCache* cache = nullptr,
                    const BackfillView* bf = nullptr, const std::vector<MemberAssignment>* at = nullptr,
                    PlacementConstraints* resolved = nullptr) const;
  // Sorts with the profile's QueueSort (stable, ties by id).
  void SortQueue(std::vector<Workload>& pending) const;
  void SortQueue(std::vector<const Workload*>& pending) const;

 private:
  friend class Cycle;  // the cycle's steps (cycle.h) read the options and the book, apply evictions
  // ScheduleOne's steps, in order, over one attempt (defined in scheduler.cc):
  struct Attempt;
  // Admit, PreFilter, the backfill view and the shape-memo key.
  Status Resolve(Attempt& a) const;
  // The reserved nodes (`at`) if they hold the workload now, else the search; elastic gangs shrink.
  Status FindCandidates(Attempt& a, std::vector<Candidate>& candidates) const;
  bool FitsReserved(Attempt& a) const;
  Status ShrinkElastic(Attempt& a, const PlacementSearch& search, std::vector<Candidate>& candidates) const;
  // Score, apply the best in a Transaction, Reserve, Permit: commit, or discard on a refusal.
  void Apply(Attempt& a, std::vector<Candidate>& candidates) const;
  // Nothing fits: PostFilter (preemption) may propose victims, noted in `failure`.
  void TryPostFilter(Attempt& a, Status& failure) const;
  void Fail(Attempt& a, Status s) const;
  void ApplyPreemption(ClusterState& state, const PostFilterResult& r) const;
  std::string DescribePlacement(const ClusterState& state, const Workload& w, const PlacementConstraints& c,
                                const Candidate& cand, size_t alternatives) const;
  std::unique_ptr<Profile> profile_;
  SchedulerOptions options_;
  // Reservations are commitments: once made they are kept, on the same nodes and start, in later
  // cycles while the workload waits for room (pending because no placement fits, not for
  // admission or a victim) and its nodes stay schedulable, so nothing placed later (backfill, or a
  // newcomer's reservation) can delay them. At most `backfill.depth` are in force at once. Owned by the scheduler's one user
  // thread; RunCycle replaces it each cycle.
  std::shared_ptr<std::map<std::string, Reservation>> sticky_;
};

}  // namespace tidal
