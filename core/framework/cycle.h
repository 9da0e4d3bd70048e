// Cycle: one run of Scheduler::RunCycle, written as named steps over the cycle's state (the
// numbered outline in scheduler.h; each step below names the part of it that it does).
//
// The per-cycle state, each piece a named member of Cycle:
//   - the shape memo and the victim-search budget (ShapeCache);
//   - the reservations kept from earlier cycles (KeptReservations, chosen by KeepReservations);
//   - the reservations in force as the placement search sees them (ReservationIndex);
//   - the future view on which reservations are searched (FutureView, built on first use);
//   - how many reservations are in force (bounded by `backfill.depth`).
// Internal to core/framework: the Scheduler's API is scheduler.h; this header exists so the steps
// can be tested on their own (test/unit/cycle_test.cc).
//
// Threading: everything here lives inside one RunCycle call, on the thread that owns the
// ClusterState passed in and the scheduler's reservation book; nothing is shared or locked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include "core/framework/scheduler.h"

namespace tidal {

// Step 2 (kept reservations): the book's entries this cycle holds to: those whose workload is in
// the batch and whose nodes all still exist and take its work (cordoned nodes only for a workload
// that tolerates node.kubernetes.io/unschedulable). `in_batch` names every book entry
// whose workload is in the batch, kept or not (the book forgets them at the end of the cycle, and
// remembers those of workloads the batch does not contain).
struct KeptReservations {
  std::map<std::string, Reservation> kept;
  absl::flat_hash_set<std::string> in_batch;  // hashed: std::unordered_set scans small sets key by key
  std::unordered_set<const Workload*> holders;  // the batch's workloads named in in_batch (KeptFor)
};
KeptReservations KeepReservations(const std::map<std::string, Reservation>& book,
                                  const std::vector<const Workload*>& pending, const ClusterState& state);

// Step 1 (aging, `backfill.agedAfter`): moves the workloads big enough to reserve that have waited
// that long to the front of the sorted queue, oldest first (ties by id); the rest keep their order.
void AgedFirst(const BackfillSpec& bf, const ClusterState& state, int64_t now, std::vector<const Workload*>& pending);

// The reservations in force, per node, as the placement search sees them (BackfillView): each
// node's earliest reservation start and the GPUs its reservations need. A workload's own
// reservation is hidden while that workload is considered, then restored or lifted for good.
// Not copyable: the view points into the index.
class ReservationIndex {
 public:
  explicit ReservationIndex(int32_t node_count) : node_count_(node_count) {}
  ReservationIndex(const ReservationIndex&) = delete;
  ReservationIndex& operator=(const ReservationIndex&) = delete;

  void Add(const Reservation& r);
  // While r's workload is considered: its own reservation does not restrict it.
  void Hide(const Reservation& r) { Recompute(r, r.workload); }
  // Considered and still waiting for room: r holds its nodes again.
  void Restore(const Reservation& r) { Recompute(r, ""); }
  // For good (its workload started, moved its reservation, or no longer waits for room).
  void Lift(const Reservation& r);
  // What the search respects; nullptr until the first reservation is added (no restrictions).
  const BackfillView* view() const { return view_.reserved_from != nullptr ? &view_ : nullptr; }

 private:
  struct Entry {
    int64_t start;
    std::string id;
    int64_t gpus;
  };
  void Recompute(const Reservation& r, const std::string& except);
  void RecomputeNode(NodeId n, const std::string& except);
  int32_t node_count_;
  std::vector<int64_t> reserved_from_, reserved_gpus_;  // per node; allocated by the first Add
  std::unordered_map<NodeId, std::vector<Entry>> by_node_;
  BackfillView view_;
};

// The future view of one cycle: a copy of the cluster on which running work is released in order
// of expected end until a blocked workload fits; reservations found are held in it from then on.
// Built on first use (most cycles reserve nothing); placements made later in the cycle are mirrored
// into it. Time only moves forward, so later reservations never start before earlier ones.
class FutureView {
 public:
  FutureView(const Profile& profile, int64_t now, const std::map<std::string, Reservation>& kept)
      : profile_(profile), now_(now), kept_(kept) {}
  ~FutureView();
  FutureView(const FutureView&) = delete;
  FutureView& operator=(const FutureView&) = delete;

  // Whether another reservation may be made with `in_force` already in force (`backfill.depth`).
  bool Enabled(size_t in_force) const;
  // Whether `w` is big enough to get a reservation (`backfill.min_gpus`, else a whole node).
  bool ReservesFor(const ClusterState& state, const Workload& w) const;
  // A placement made this cycle, mirrored (replacing the workload's kept reservation, if any).
  void MirrorPlacement(const Allocation& a);
  // A kept reservation lifted without a placement (its workload no longer waits for room).
  void Drop(const std::string& id);
  // Capacity was freed in the cycle (evictions): rebuilt on next use.
  void Invalidate() { future_ = nullptr; }

  // Earliest start of `w` under constraints `c` (with no backfill restrictions), or nullopt.
  std::optional<Reservation> Reserve(const ClusterState& state, const CycleState& cs, const Workload& w,
                                     PlacementConstraints c);
  // A kept reservation moved earlier if the future view now has room for it before its start
  // (work ended sooner than expected); nullopt keeps it as it is. A reservation never moves later
  // unless it is overdue (due, but its nodes are still busy): then it is re-planned from now.
  std::optional<Reservation> Replan(const ClusterState& state, const CycleState& cs, const Workload& w,
                                    PlacementConstraints c, const Reservation& old);

 private:
  int64_t ExpectedEnd(const Allocation& a) const;
  void Build(const ClusterState& state);
  std::optional<Reservation> Search(const CycleState& cs, const Workload& w, PlacementConstraints c, int64_t until);

  const Profile& profile_;
  int64_t now_;
  const std::map<std::string, Reservation>& kept_;
  absl::flat_hash_set<std::string> dropped_;  // (small string sets: Swiss tables, see in_batch)
  // The view: this thread's scratch ClusterState, assigned the cluster's nodes and capacity but not
  // its running allocations (ClusterState::AssignCapacity: their capacity stays taken, and the view
  // releases it itself from entries_; the assignment reuses the storage of earlier cycles), or own_
  // while another FutureView on this thread holds the scratch (a full copy; its running map is
  // never read).
  ClusterState* future_ = nullptr;
  std::optional<ClusterState> own_;
  bool leased_ = false;  // this view holds the thread's scratch (until it is destroyed)
  // Capacity taken on the view and when it is given back: every running allocation of the cluster,
  // every placement mirrored and every reservation held. A held reservation has its key (HeldId)
  // and is released by key (whichever entry holds that key then); the rest by entry. Plain
  // arrays: the assignments of all entries in one vector, no id string per running allocation.
  struct Entry {
    int64_t at = 0;  // when it is released (entries taken again by Replan have none: not in due_)
    Resources per_member;
    uint32_t first = 0, count = 0;  // its assignments in assigned_
    std::string key;                // a held reservation's HeldId; empty for the rest
    bool released = false;
  };
  std::vector<Entry> entries_;
  std::vector<MemberAssignment> assigned_;
  absl::flat_hash_map<std::string, uint32_t> held_;  // key -> the entry holding capacity under it
  // (release time, entry) by release time, latest first, so the next one due is at the back.
  using Due = std::pair<int64_t, uint32_t>;
  std::vector<Due> due_;
  uint32_t Record(int64_t release_at, const Resources& per_member, const std::vector<MemberAssignment>& at, std::string key);
  // Takes capacity on the view; nullopt (nothing taken) when a node is unknown or `key` is held.
  std::optional<uint32_t> Take(std::string key, const Resources& per_member, const std::vector<MemberAssignment>& at);
  void Free(uint32_t entry);
  bool FreeHeld(const std::string& key);  // false when nothing is held under `key`
  void Schedule(uint32_t entry, int64_t at);  // released at `at` (kept in due_'s order)
  int64_t cursor_ = 0;                            // how far the view has been moved forward
};

// One cycle of a Scheduler over a ClusterState (see scheduler.h for the outline it follows).
class Cycle {
 public:
  Cycle(const Scheduler& scheduler, ClusterState& state, int64_t now_s);
  Cycle(const Cycle&) = delete;
  Cycle& operator=(const Cycle&) = delete;

  // Steps 1-4 over `pending`; the reservation book is updated for the next cycle.
  CycleResult Run(std::vector<const Workload*> pending);

 private:
  // Step 2, per workload in queue order: try it now, settle its kept reservation, then reserve.
  // `own`: w's kept reservation (KeptFor), or nullptr.
  void Consider(const Workload& w, const Reservation* own);
  const Reservation* KeptFor(const Workload& w) const;
  // Step 2: ScheduleOne against the reservations in force (its own hidden; placed exactly on it
  // when it is due); with apply_preemptions, PostFilter's victims are evicted and it is retried.
  // The decision is written into `d` (default-constructed: the cycle's result slot).
  void TryNow(Decision& d, const Workload& w, const Reservation* own);
  Decision EvictAndRetry(const Workload& w, Decision blocked);
  // Its kept reservation after the attempt: held again while it waits for room, else lifted.
  void SettleOwn(const Workload& w, const Reservation& own, bool placed, bool waits_for_room);
  // Step 3: a kept reservation moved earlier, or a new one while `backfill.depth` allows.
  std::optional<Reservation> FindReservation(const Workload& w, const Reservation* own);
  // Step 3: a reservation whose earliest start is now starts there at once (true when placed:
  // `d` is then that placement's decision).
  bool StartNow(Decision& d, const Workload& w, const Reservation& res);
  // Step 4: `d` waits on `res` (added to the reservations in force when `fresh`).
  void WaitOn(Decision& d, Reservation res, bool fresh);
  void MirrorPlacement(const std::string& id);
  // After the walk: the book keeps this cycle's reservations and those of workloads not seen.
  void UpdateBook();

  const Scheduler& scheduler_;
  const Profile& profile_;
  ClusterState& state_;
  const int64_t now_;
  CycleResult result_;
  ShapeCache cache_;
  KeptReservations kept_;
  ReservationIndex index_;
  FutureView future_;  // reads kept_.kept
  // The placement constraints of the workload being considered, as its last attempt resolved them
  // (TryNow; read by FindReservation): kept here, not in each of the cycle's decisions.
  PlacementConstraints resolved_;
  // Reservations in force: the kept ones not yet started or dropped, plus those made this cycle.
  size_t in_force_ = 0;
};

}  // namespace tidal
