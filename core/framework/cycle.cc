// Cycle: the steps of Scheduler::RunCycle (see cycle.h for the per-cycle state, scheduler.h for the
// outline they follow).
//
// Threading: one RunCycle call, on the thread that owns the ClusterState and the reservation book.
#include "core/framework/cycle.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <string_view>
#include <utility>

#include <absl/container/flat_hash_set.h>

#include "core/framework/placement.h"

namespace tidal {

KeptReservations KeepReservations(const std::map<std::string, Reservation>& book,
                                  const std::vector<const Workload*>& pending, const ClusterState& state) {
  KeptReservations k;
  if (book.empty()) return k;
  // Looked up per workload: the book is small, the batch may be 100k. A workload that tolerates
  // node.kubernetes.io/unschedulable keeps a reservation on cordoned nodes (it may use them).
  std::unordered_set<std::string> cordon_ok;
  // One hash per workload, not a tree walk of strings; a Swiss table: std::unordered_set compares
  // a small set's keys one by one instead of hashing (a memcmp per book entry per workload).
  absl::flat_hash_set<std::string_view> ids;
  for (const auto& [id, res] : book) ids.insert(id);
  for (const Workload* w : pending) {
    if (!ids.count(w->id)) continue;
    k.in_batch.insert(w->id);
    k.holders.insert(w);
    if (w->constraints != nullptr && w->constraints->ToleratesUnschedulable()) cordon_ok.insert(w->id);
  }
  for (const auto& [id, res] : book) {
    if (!k.in_batch.count(id)) continue;
    const bool cordoned = cordon_ok.count(id) > 0;
    bool valid = true;
    for (const auto& a : res.assignments) {
      valid = valid && a.node >= 0 && a.node < state.node_count() && state.node(a.node).SchedulableFor(cordoned);
    }
    if (valid) k.kept.emplace(id, res);
  }
  return k;
}

// --- ReservationIndex ---------------------------------------------------------------------------

void ReservationIndex::Add(const Reservation& r) {
  if (reserved_from_.empty()) {
    reserved_from_.assign(static_cast<size_t>(node_count_), INT64_MAX);
    reserved_gpus_.assign(static_cast<size_t>(node_count_), 0);
  }
  for (const auto& a : r.assignments) {
    by_node_[a.node].push_back(Entry{r.start_s, r.workload, r.per_member.gpus * a.members});
    RecomputeNode(a.node, "");
  }
  view_.reserved_from = &reserved_from_;
  view_.reserved_gpus = &reserved_gpus_;
  view_.latest_start = std::max(view_.latest_start, r.start_s);
}

void ReservationIndex::Lift(const Reservation& r) {
  for (const auto& a : r.assignments) {
    auto& v = by_node_[a.node];
    v.erase(std::remove_if(v.begin(), v.end(), [&](const Entry& e) { return e.id == r.workload; }), v.end());
    RecomputeNode(a.node, "");
  }
}

void ReservationIndex::Recompute(const Reservation& r, const std::string& except) {
  for (const auto& a : r.assignments) RecomputeNode(a.node, except);
}

void ReservationIndex::RecomputeNode(NodeId n, const std::string& except) {
  int64_t m = INT64_MAX, g = 0;
  for (const auto& e : by_node_[n]) {
    if (e.id == except) continue;
    m = std::min(m, e.start);
    g += e.gpus;
  }
  reserved_from_[static_cast<size_t>(n)] = m;
  reserved_gpus_[static_cast<size_t>(n)] = g;
}

// --- FutureView ---------------------------------------------------------------------------------

namespace {
// How a reservation is held on the future view: a running allocation under a name no workload has.
std::string HeldId(const std::string& workload) { return "reservation:" + workload; }

}  // namespace

uint32_t FutureView::Record(int64_t release_at, const Resources& per_member, const std::vector<MemberAssignment>& at,
                            std::string key) {
  Entry e;
  e.at = release_at;
  e.per_member = per_member;
  e.first = static_cast<uint32_t>(assigned_.size());
  e.count = static_cast<uint32_t>(at.size());
  e.key = std::move(key);
  assigned_.insert(assigned_.end(), at.begin(), at.end());
  entries_.push_back(std::move(e));
  return static_cast<uint32_t>(entries_.size() - 1);
}

std::optional<uint32_t> FutureView::Take(std::string key, const Resources& per_member,
                                         const std::vector<MemberAssignment>& at) {
  if (!key.empty() && held_.count(key)) return std::nullopt;
  for (const auto& a : at) {
    if (a.node < 0 || a.node >= future_->node_count()) return std::nullopt;
  }
  for (const auto& a : at) future_->Allocate(a.node, per_member * a.members);
  const uint32_t i = Record(0, per_member, at, key);
  if (!key.empty()) held_.emplace(std::move(key), i);
  return i;
}

void FutureView::Free(uint32_t i) {
  Entry& e = entries_[i];
  if (e.released) return;
  e.released = true;
  for (uint32_t k = e.first; k < e.first + e.count; ++k) future_->Release(assigned_[k].node, e.per_member * assigned_[k].members);
}

bool FutureView::FreeHeld(const std::string& key) {
  auto it = held_.find(key);
  if (it == held_.end()) return false;
  Free(it->second);
  held_.erase(it);
  return true;
}

void FutureView::Schedule(uint32_t i, int64_t at) {
  entries_[i].at = at;
  // Before the first entry ending earlier: the order stays latest end first.
  auto pos = std::partition_point(due_.begin(), due_.end(), [&](const Due& d) { return d.first >= at; });
  due_.insert(pos, Due{at, i});
}

bool FutureView::Enabled(size_t in_force) const {
  const int d = profile_.backfill().depth;
  return d != 0 && (d < 0 || in_force < static_cast<size_t>(d));
}

bool FutureView::ReservesFor(const ClusterState& state, const Workload& w) const {
  const int64_t min_gpus = profile_.backfill().min_gpus;
  return w.TotalGpus() >= (min_gpus > 0 ? min_gpus : state.max_gpus_per_node());
}

int64_t FutureView::ExpectedEnd(const Allocation& a) const {
  return std::max(now_, a.start_time_s + profile_.backfill().RuntimeOf(a.workload));
}

void FutureView::MirrorPlacement(const Allocation& a) {
  if (!future_) return;
  (void)FreeHeld(HeldId(a.workload.id));  // its kept reservation, if any
  if (auto i = Take({}, a.workload.per_member, a.assignments)) Schedule(*i, ExpectedEnd(a));
}

void FutureView::Drop(const std::string& id) {
  dropped_.insert(id);
  if (future_) (void)FreeHeld(HeldId(id));
}

std::optional<Reservation> FutureView::Reserve(const ClusterState& state, const CycleState& cs, const Workload& w,
                                               PlacementConstraints c) {
  Build(state);
  return Search(cs, w, std::move(c), INT64_MAX);
}

std::optional<Reservation> FutureView::Replan(const ClusterState& state, const CycleState& cs, const Workload& w,
                                              PlacementConstraints c, const Reservation& old) {
  // Due but not startable (its nodes are still busy: work outran its declared runtime, or
  // another scheduler took them): re-planned from now, wherever and whenever it fits next.
  const bool overdue = old.start_s <= now_;
  Build(state);
  if ((!overdue && cursor_ >= old.start_s) || !FreeHeld(HeldId(w.id))) return std::nullopt;
  auto moved = Search(cs, w, std::move(c), overdue ? INT64_MAX : old.start_s - 1);
  // Held again until its old entry's release (by key, as that entry's release finds it).
  if (!moved) (void)Take(HeldId(w.id), old.per_member, old.assignments);
  return moved;
}

namespace {
// One scratch ClusterState per thread for the future views of its cycles (FutureView::Build).
struct FutureScratch {
  std::optional<ClusterState> state;
  bool in_use = false;
};
FutureScratch& ThreadFutureScratch() {
  thread_local FutureScratch scratch;
  return scratch;
}
}  // namespace

FutureView::~FutureView() {
  if (leased_) ThreadFutureScratch().in_use = false;
}

void FutureView::Build(const ClusterState& state) {
  if (future_) return;
  FutureScratch& scratch = ThreadFutureScratch();
  if (leased_ || !scratch.in_use) {
    leased_ = scratch.in_use = true;
    if (scratch.state) {
      scratch.state->AssignCapacity(state);
    } else {
      scratch.state.emplace(state);  // the first view on this thread: a copy, running map included
    }
    future_ = &*scratch.state;
  } else {  // a view of an enclosing cycle on this thread holds the scratch
    own_.emplace(state);
    future_ = &*own_;
  }
  entries_.clear();
  assigned_.clear();
  held_.clear();
  due_.clear();
  entries_.reserve(state.running().size() + kept_.size());
  // The cluster's running allocations: their capacity is taken on the view already.
  for (const auto& [id, a] : state.running()) (void)Record(ExpectedEnd(a), a.workload.per_member, a.assignments, {});
  cursor_ = now_;
  // Kept reservations are held from now until their expected end: a new reservation may take
  // their nodes only after that.
  for (const auto& [id, r] : kept_) {
    if (state.running().count(id) || dropped_.count(id)) continue;
    if (auto i = Take(HeldId(id), r.per_member, r.assignments)) entries_[*i].at = r.end_s;
  }
  // Latest end first; ties in any order (a view releases everything due by its cursor at once).
  // (Sorted as (time, entry) pairs: no lookup of entries_ per comparison.)
  due_.resize(entries_.size());
  for (size_t i = 0; i < due_.size(); ++i) due_[i] = Due{entries_[i].at, static_cast<uint32_t>(i)};
  std::sort(due_.begin(), due_.end(), [](const Due& a, const Due& b) { return a.first > b.first; });
}

// The earliest time, no later than `until`, at which `w` fits on the future view; held there.
std::optional<Reservation> FutureView::Search(const CycleState& cs, const Workload& w, PlacementConstraints c,
                                              int64_t until) {
  c.reserved_from = nullptr;
  c.within = -1;
  PlacementSearch search(*future_, profile_);
  search.set_explain(false);  // only whether it fits is read
  std::vector<Candidate> out;
  const bool cordoned = w.constraints != nullptr && w.constraints->ToleratesUnschedulable();
  while (true) {
    if (cursor_ > until) return std::nullopt;
    if (future_->MemberCapacity(future_->root(), w.per_member.gpus, cordoned) >= c.members &&
        search.Find(cs, w, c, out).ok()) {
      break;
    }
    if (due_.empty() || due_.back().first > until) return std::nullopt;
    cursor_ = std::max(cursor_, due_.back().first);
    while (!due_.empty() && due_.back().first <= cursor_) {
      const Entry& e = entries_[due_.back().second];
      if (e.key.empty()) {
        Free(due_.back().second);
      } else {
        (void)FreeHeld(e.key);
      }
      due_.pop_back();
    }
  }
  Reservation r{w.id, cursor_, out.front().assignments, w.per_member, cursor_ + profile_.backfill().RuntimeOf(w)};
  // Held from its start until its expected end: later reservations may follow it on the same nodes.
  if (auto i = Take(HeldId(w.id), w.per_member, r.assignments)) Schedule(*i, r.end_s);
  return r;
}

void AgedFirst(const BackfillSpec& bf, const ClusterState& state, int64_t now, std::vector<const Workload*>& pending) {
  if (bf.aged_after_s <= 0) return;
  const int64_t reserve_from = bf.min_gpus > 0 ? bf.min_gpus : state.max_gpus_per_node();
  auto aged = [&](const Workload* w) { return w->TotalGpus() >= reserve_from && bf.Aged(*w, now); };
  auto mid = std::stable_partition(pending.begin(), pending.end(), aged);
  std::sort(pending.begin(), mid, [](const Workload* a, const Workload* b) {
    return a->submit_time_s != b->submit_time_s ? a->submit_time_s < b->submit_time_s : a->id < b->id;
  });
}

// --- Cycle --------------------------------------------------------------------------------------

Cycle::Cycle(const Scheduler& scheduler, ClusterState& state, int64_t now_s)
    : scheduler_(scheduler),
      profile_(*scheduler.profile_),
      state_(state),
      now_(now_s),
      index_(state.node_count()),
      future_(profile_, now_s, kept_.kept) {}

CycleResult Cycle::Run(std::vector<const Workload*> pending) {
  // 1. The queue in the profile's QueueSort order; it is walked whole, in that order.
  scheduler_.SortQueue(pending);
  // Aging (`backfill.agedAfter`): workloads big enough to reserve that have waited that long go
  // first, oldest first, so a large gang of a busy queue is not passed for ever by the others.
  AgedFirst(profile_.backfill(), state_, now_, pending);
  if (scheduler_.options_.keep_decisions) result_.decisions.reserve(pending.size());
  // Reservations kept from earlier cycles hold their nodes from the start; each counts once
  // against `backfill.depth`.
  kept_ = KeepReservations(*scheduler_.sticky_, pending, state_);
  result_.reservations.reserve(kept_.kept.size() + static_cast<size_t>(std::max(0, profile_.backfill().depth)));
  for (const auto& [id, res] : kept_.kept) index_.Add(res);
  in_force_ = kept_.kept.size();
  const bool keep = scheduler_.options_.keep_decisions;
  // Run for its reservations only (no decisions kept): once no reservation can be added (depth
  // reached) and every workload holding a kept one was considered, nothing later in the queue can
  // change the book (in_force_ falls only at a workload's own reservation), so the walk stops.
  size_t kept_ahead = kept_.kept.size();  // kept: only reservations of workloads in this batch
  for (size_t i = 0; i < pending.size(); ++i) {
    const Workload* w = pending[i];
    if (!keep && kept_ahead == 0 && !future_.Enabled(in_force_)) break;
    // The queue order is not memory order: fetch a workload a few turns before its turn comes.
    if (i + 8 < pending.size()) {
      const char* next = reinterpret_cast<const char*>(pending[i + 8]);
      for (size_t b = 0; b < sizeof(Workload); b += 64) __builtin_prefetch(next + b);
    }
    const Reservation* own = KeptFor(*w);
    if (own != nullptr && kept_ahead > 0) --kept_ahead;
    Consider(*w, own);
  }
  UpdateBook();
  result_.shape_cache_hits = cache_.hits();
  return std::move(result_);
}

const Reservation* Cycle::KeptFor(const Workload& w) const {
  // holders has every workload of a kept id (and a few more): most have none, found by one
  // pointer hash (no string hashed per workload).
  if (!kept_.holders.count(&w)) return nullptr;
  auto it = kept_.kept.find(w.id);
  return it != kept_.kept.end() ? &it->second : nullptr;
}

void Cycle::Consider(const Workload& w, const Reservation* own) {
  // Decided in place: in the result's slot (reserved for every workload), or a local one when
  // no decisions are kept.
  Decision local;
  Decision& d = scheduler_.options_.keep_decisions ? result_.decisions.emplace_back() : local;
  TryNow(d, w, own);
  const bool placed = d.outcome == Outcome::kPlaced || d.outcome == Outcome::kWaiting;
  // A reservation holds while its workload waits for room only: not when it waits for admission
  // or for a victim to leave, nor when it is rejected.
  const bool waits_for_room = d.outcome == Outcome::kPending && d.placement_failed && d.preemption.victims.empty();
  if (own != nullptr) SettleOwn(w, *own, placed, waits_for_room);
  if (placed) {
    MirrorPlacement(w.id);
  } else if (waits_for_room) {
    std::optional<Reservation> res = FindReservation(w, own);
    if (res && res->start_s <= now_ && StartNow(d, w, *res)) return;
    if (res) {
      WaitOn(d, std::move(*res), true);
    } else if (own != nullptr) {
      WaitOn(d, *own, false);
    }
  }
}

void Cycle::TryNow(Decision& d, const Workload& w, const Reservation* own) {
  if (own != nullptr) index_.Hide(*own);
  // A workload with its own reservation sees the cluster differently: no shape memo for it.
  cache_.memo_shapes = own == nullptr;
  const std::vector<MemberAssignment>* at = own != nullptr && own->start_s <= now_ ? &own->assignments : nullptr;
  scheduler_.ScheduleInto(d, state_, w, now_, &cache_, index_.view(), at, &resolved_);
  const bool proposed = !d.preemption.victims.empty() || !d.preemption.shrinks.empty();
  if (proposed && scheduler_.options_.apply_preemptions && d.outcome == Outcome::kPending) {
    d = EvictAndRetry(w, std::move(d));
  }
}

Decision Cycle::EvictAndRetry(const Workload& w, Decision blocked) {
  scheduler_.ApplyPreemption(state_, blocked.preemption);
  // Evictions freed capacity: failed shapes may fit now, and the future view is stale.
  cache_.Clear();
  future_.Invalidate();
  Decision d = scheduler_.ScheduleOne(state_, w, now_, &cache_, index_.view(), nullptr, &resolved_);
  d.preemption = std::move(blocked.preemption);
  if (d.outcome == Outcome::kPlaced) {
    d.explanation += "; after preempting " + std::to_string(d.preemption.victims.size()) + " workload(s)";
  }
  return d;
}

void Cycle::SettleOwn(const Workload& w, const Reservation& own, bool placed, bool waits_for_room) {
  if (waits_for_room) {
    index_.Restore(own);
    return;
  }
  --in_force_;
  if (!placed) future_.Drop(w.id);
  index_.Lift(own);
}

std::optional<Reservation> Cycle::FindReservation(const Workload& w, const Reservation* own) {
  CycleState cs;
  if (own != nullptr) {
    // Work ended sooner than expected: it may move earlier (or, overdue, to its next start).
    std::optional<Reservation> moved = future_.Replan(state_, cs, w, resolved_, *own);
    if (moved) {
      index_.Lift(*own);
      --in_force_;
    }
    return moved;
  }
  if (future_.Enabled(in_force_) && future_.ReservesFor(state_, w)) return future_.Reserve(state_, cs, w, resolved_);
  return std::nullopt;
}

bool Cycle::StartNow(Decision& d, const Workload& w, const Reservation& res) {
  // The future view found room on these nodes now, alongside every reservation: start there.
  // Only a placement counts here, so no victim search runs when it does not fit (its proposal
  // would be dropped with this decision: one full search per such reservation, 7.5% of a 10k-node
  // cycle), and no shape is memoized.
  ShapeCache fit_only;
  fit_only.memo_shapes = false;
  fit_only.postfilter_attempts = std::numeric_limits<int>::max();
  Decision now_d = scheduler_.ScheduleOne(state_, w, now_, &fit_only, nullptr, &res.assignments);
  if (now_d.outcome != Outcome::kPlaced) return false;
  MirrorPlacement(w.id);
  d = std::move(now_d);
  return true;
}

void Cycle::WaitOn(Decision& d, Reservation res, bool fresh) {
  if (fresh) {
    index_.Add(res);
    ++in_force_;
  }
  d.reserved = true;
  d.eta_s = res.start_s;
  if (!scheduler_.options_.explain) {
    result_.reservations.push_back(std::move(res));
    return;
  }
  // Appended piece by piece (numbers fit in a short string): no temporaries per waiting workload.
  std::string& e = d.explanation;
  e.reserve(e.size() + 80);
  e += "; reserved to start at t=";
  e += std::to_string(res.start_s);
  e += " (in ";
  e += std::to_string(res.start_s - now_);
  e += "s) on ";
  e += std::to_string(res.assignments.size());
  e += " node(s)";
  result_.reservations.push_back(std::move(res));
}

void Cycle::MirrorPlacement(const std::string& id) {
  auto it = state_.running().find(id);
  if (it != state_.running().end()) future_.MirrorPlacement(it->second);
}

void Cycle::UpdateBook() {
  // Entries of workloads this cycle did not see (a caller may pass part of the queue) stay unless
  // long past; the others are replaced by this cycle's reservations.
  std::map<std::string, Reservation>& book = *scheduler_.sticky_;
  for (auto it = book.begin(); it != book.end();) {
    const bool seen = kept_.in_batch.count(it->first) > 0;
    it = seen || it->second.start_s < now_ - 86400 ? book.erase(it) : std::next(it);
  }
  for (const auto& res : result_.reservations) book[res.workload] = res;
}

}  // namespace tidal
