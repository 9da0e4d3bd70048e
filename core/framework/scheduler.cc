#include "core/framework/scheduler.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <unordered_set>

#include "core/framework/placement.h"
#include "core/state/transaction.h"

namespace tidal {

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPlaced: return "Placed";
    case Outcome::kWaiting: return "Waiting";
    case Outcome::kPending: return "Pending";
    case Outcome::kRejected: return "Rejected";
    case Outcome::kError: return "Error";
  }
  return "Unknown";
}

void Scheduler::SortQueue(std::vector<Workload>& pending) const {
  QueueSortPlugin& qs = profile_->queue_sort();
  qs.PrepareSort();
  std::stable_sort(pending.begin(), pending.end(), [&](const Workload& a, const Workload& b) {
    if (qs.Less(a, b)) return true;
    if (qs.Less(b, a)) return false;
    return a.id < b.id;
  });
}

const Status* ShapeCache::Find(const Key& k) const {
  auto it = map_.find(k);
  if (it == map_.end()) return nullptr;
  ++hits_;
  return &it->second;
}

void ShapeCache::Insert(const Key& k, Status s) { map_.emplace(k, std::move(s)); }

bool ShapeCache::NoVictims(const Key& k, int32_t queue, int32_t priority) const {
  auto it = no_victims_.find(k);
  if (it == no_victims_.end()) return false;
  auto q = it->second.find(queue);
  return q != it->second.end() && priority <= q->second;
}

void ShapeCache::SetNoVictims(const Key& k, int32_t queue, int32_t priority) {
  auto& m = no_victims_[k];
  auto [it, inserted] = m.emplace(queue, priority);
  if (!inserted) it->second = std::max(it->second, priority);
}

size_t ShapeCache::Hash::operator()(const Key& k) const {
  size_t h = std::hash<int64_t>()(k.per_member.gpus);
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(std::hash<int64_t>()(k.per_member.cpu_milli));
  mix(std::hash<int64_t>()(k.per_member.memory_bytes));
  mix(std::hash<int32_t>()(k.members));
  mix(std::hash<int32_t>()(k.min_members));
  mix(std::hash<int>()(k.required * 31 + k.preferred));
  mix(std::hash<std::string>()(k.gpu_model));
  mix(static_cast<size_t>(k.door));
  mix(std::hash<int64_t>()(k.ends_bucket));
  if (!k.constraints.empty()) mix(std::hash<std::string>()(k.constraints));
  return h;
}

void Scheduler::SortQueue(std::vector<const Workload*>& pending) const {
  QueueSortPlugin& qs = profile_->queue_sort();
  qs.PrepareSort();
  // Fast path: sort contiguous keys (cache-friendly) when the plugin provides them for all.
  struct Keyed {
    std::array<int64_t, 3> key;
    const Workload* w;
  };
  std::vector<Keyed> keyed;
  keyed.reserve(pending.size());
  bool all = true;
  for (const Workload* w : pending) {
    Keyed k{{}, w};
    if (!qs.SortKey(*w, &k.key)) {
      all = false;
      break;
    }
    keyed.push_back(k);
  }
  if (all) {
    std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
      if (a.key != b.key) return a.key < b.key;
      return a.w->id < b.w->id;
    });
    for (size_t i = 0; i < keyed.size(); ++i) pending[i] = keyed[i].w;
    return;
  }
  std::stable_sort(pending.begin(), pending.end(), [&](const Workload* a, const Workload* b) {
    if (qs.Less(*a, *b)) return true;
    if (qs.Less(*b, *a)) return false;
    return a->id < b->id;
  });
}

CycleResult Scheduler::RunCycle(ClusterState& state, std::vector<Workload> pending, int64_t now_s) const {
  std::vector<const Workload*> refs;
  refs.reserve(pending.size());
  for (const auto& w : pending) refs.push_back(&w);
  return RunCycle(state, std::move(refs), now_s);
}

// The future view of one cycle: a copy of the cluster on which running work is released in order
// of expected end until a blocked workload fits; reservations found are held in it from then on.
// Built on first use (most cycles reserve nothing); placements made later in the cycle are mirrored
// into it. Time only moves forward, so later reservations never start before earlier ones.
class Scheduler::Backfill {
 public:
  Backfill(const Profile& profile, int64_t now, const std::map<std::string, Reservation>& kept)
      : profile_(profile), now_(now), kept_(kept) {}

  bool Enabled(size_t made) const {
    const int d = profile_.backfill().depth;
    return d != 0 && (d < 0 || made < static_cast<size_t>(d));
  }
  int64_t ExpectedEnd(const Allocation& a) const {
    return std::max(now_, a.start_time_s + profile_.backfill().RuntimeOf(a.workload));
  }
  void MirrorPlacement(const Allocation& a) {
    if (!future_) return;
    (void)future_->RemoveRunning("reservation:" + a.workload.id);  // its kept reservation, if any
    if (future_->AddRunning(a).ok()) releases_.emplace(ExpectedEnd(a), a.workload.id);
  }
  // A kept reservation lifted without a placement (its workload no longer waits for room).
  void Drop(const std::string& id) {
    dropped_.insert(id);
    if (future_) (void)future_->RemoveRunning("reservation:" + id);
  }
  void Invalidate() { future_.reset(); }

  // Earliest start of `w` under constraints `c` (with no backfill restrictions), or nullopt.
  std::optional<Reservation> Reserve(const ClusterState& state, const CycleState& cs, const Workload& w,
                                     PlacementConstraints c) {
    Build(state);
    return Search(cs, w, std::move(c), INT64_MAX);
  }
  // A kept reservation moved earlier if the future view now has room for it before its start
  // (work ended sooner than expected); nullopt keeps it as it is. A reservation never moves later
  // unless it is overdue (see below).
  std::optional<Reservation> Replan(const ClusterState& state, const CycleState& cs, const Workload& w,
                                    PlacementConstraints c, const Reservation& old) {
    // Due but not startable (its nodes are still busy: work outran its declared runtime, or
    // another scheduler took them): re-planned from now, wherever and whenever it fits next.
    const bool overdue = old.start_s <= now_;
    Build(state);
    if ((!overdue && cursor_ >= old.start_s) || !future_->RemoveRunning("reservation:" + w.id).ok()) return std::nullopt;
    auto moved = Search(cs, w, std::move(c), overdue ? INT64_MAX : old.start_s - 1);
    if (!moved) (void)future_->AddRunning(Allocation{Held(old), old.assignments, old.start_s});
    return moved;
  }

 private:
  static Workload Held(const Reservation& r) {
    Workload held;
    held.id = "reservation:" + r.workload;
    held.per_member = r.per_member;
    for (const auto& a : r.assignments) held.members += a.members;
    return held;
  }
  void Build(const ClusterState& state) {
    if (future_) return;
    future_.emplace(state);
    releases_.clear();
    for (const auto& [id, a] : future_->running()) releases_.emplace(ExpectedEnd(a), id);
    cursor_ = now_;
    // Kept reservations are held from now until their expected end: a new reservation may take
    // their nodes only after that.
    for (const auto& [id, r] : kept_) {
      if (state.running().count(id) || dropped_.count(id)) continue;
      if (future_->AddRunning(Allocation{Held(r), r.assignments, r.start_s}).ok()) {
        releases_.emplace(r.end_s, "reservation:" + id);
      }
    }
  }
  // The earliest time, no later than `until`, at which `w` fits on the future view; held there.
  std::optional<Reservation> Search(const CycleState& cs, const Workload& w, PlacementConstraints c, int64_t until) {
    c.reserved_from = nullptr;
    c.within = -1;
    PlacementSearch search(*future_, profile_);
    std::vector<Candidate> out;
    while (true) {
      if (cursor_ > until) return std::nullopt;
      if (future_->MemberCapacity(future_->root(), w.per_member.gpus) >= c.members &&
          search.Find(cs, w, c, out).ok()) {
        break;
      }
      if (releases_.empty() || releases_.begin()->first > until) return std::nullopt;
      cursor_ = std::max(cursor_, releases_.begin()->first);
      while (!releases_.empty() && releases_.begin()->first <= cursor_) {
        (void)future_->RemoveRunning(releases_.begin()->second);
        releases_.erase(releases_.begin());
      }
    }
    Reservation r{w.id, cursor_, out.front().assignments, w.per_member, cursor_ + profile_.backfill().RuntimeOf(w)};
    // Held from its start until its expected end: later reservations may follow it on the same nodes.
    Workload held = w;
    held.id = "reservation:" + w.id;
    held.members = c.members;
    if (future_->AddRunning(Allocation{held, r.assignments, cursor_}).ok()) releases_.emplace(r.end_s, held.id);
    return r;
  }

  const Profile& profile_;
  int64_t now_;
  const std::map<std::string, Reservation>& kept_;
  std::unordered_set<std::string> dropped_;
  std::optional<ClusterState> future_;
  std::multimap<int64_t, std::string> releases_;
  int64_t cursor_ = 0;
};

CycleResult Scheduler::RunCycle(ClusterState& state, std::vector<const Workload*> pending, int64_t now_s) const {
  SortQueue(pending);
  CycleResult r;
  r.decisions.reserve(pending.size());
  ShapeCache cache;
  // Reservations kept from earlier cycles: workloads still pending, nodes still schedulable.
  std::map<std::string, Reservation> kept;
  // Book entries whose workload is in this batch (the book is small; the batch may be 100k).
  std::unordered_set<std::string> ids;
  if (!sticky_->empty()) {
    for (const Workload* w : pending) {
      if (sticky_->count(w->id)) ids.insert(w->id);
    }
    for (auto& [id, res] : *sticky_) {
      if (!ids.count(id)) continue;
      bool valid = true;
      for (const auto& a : res.assignments) {
        valid = valid && a.node >= 0 && a.node < state.node_count() && state.node(a.node).Schedulable();
      }
      if (valid) kept.emplace(id, res);
    }
  }
  Backfill backfill(*profile_, now_s, kept);
  // reserved_from[node]: earliest reservation start on the node; by_node lists them all so one
  // workload's own reservation can be lifted while it is considered.
  std::vector<int64_t> reserved_from, reserved_gpus;
  struct Entry {
    int64_t start;
    std::string id;
    int64_t gpus;
  };
  std::unordered_map<NodeId, std::vector<Entry>> by_node;
  BackfillView view;
  auto recompute = [&](NodeId n, const std::string& except) {
    int64_t m = INT64_MAX, g = 0;
    for (const auto& e : by_node[n]) {
      if (e.id == except) continue;
      m = std::min(m, e.start);
      g += e.gpus;
    }
    reserved_from[static_cast<size_t>(n)] = m;
    reserved_gpus[static_cast<size_t>(n)] = g;
  };
  auto add_reservation = [&](const Reservation& res) {
    if (reserved_from.empty()) {
      reserved_from.assign(static_cast<size_t>(state.node_count()), INT64_MAX);
      reserved_gpus.assign(static_cast<size_t>(state.node_count()), 0);
    }
    for (const auto& a : res.assignments) {
      by_node[a.node].push_back(Entry{res.start_s, res.workload, res.per_member.gpus * a.members});
      recompute(a.node, "");
    }
    view.reserved_from = &reserved_from;
    view.reserved_gpus = &reserved_gpus;
    view.latest_start = std::max(view.latest_start, res.start_s);
  };
  for (const auto& [id, res] : kept) add_reservation(res);
  // Lifts a reservation from its nodes for good.
  auto lift = [&](const Reservation& res) {
    for (const auto& a : res.assignments) {
      auto& v = by_node[a.node];
      v.erase(std::remove_if(v.begin(), v.end(), [&](const Entry& e) { return e.id == res.workload; }), v.end());
      recompute(a.node, "");
    }
  };
  // Reservations in force: the kept ones not yet started or dropped, plus those made this cycle.
  // `backfill.depth` bounds this count.
  size_t held = kept.size();
  auto describe = [&](Decision& d, const Reservation& res) {
    d.reserved = true;
    d.eta_s = res.start_s;
    d.explanation += "; reserved to start at t=" + std::to_string(res.start_s) + " (in " +
                     std::to_string(res.start_s - now_s) + "s) on " + std::to_string(res.assignments.size()) + " node(s)";
  };
  for (const Workload* w : pending) {
    auto own = kept.find(w->id);
    if (own != kept.end()) {
      for (const auto& a : own->second.assignments) recompute(a.node, w->id);
    }
    // A workload with its own reservation sees the cluster differently: no shape memo for it.
    cache.memo_shapes = own == kept.end();
    const std::vector<MemberAssignment>* at =
        own != kept.end() && own->second.start_s <= now_s ? &own->second.assignments : nullptr;
    Decision d = ScheduleOne(state, *w, now_s, &cache, view.reserved_from ? &view : nullptr, at);
    if (!d.preemption.victims.empty() || !d.preemption.shrinks.empty()) {
      if (options_.apply_preemptions && d.outcome == Outcome::kPending) {
        ApplyPreemption(state, d.preemption);
        cache.Clear();
        backfill.Invalidate();
        PostFilterResult applied = d.preemption;
        d = ScheduleOne(state, *w, now_s, &cache, view.reserved_from ? &view : nullptr);
        d.preemption = std::move(applied);
        if (d.outcome == Outcome::kPlaced) d.explanation += "; after preempting " + std::to_string(d.preemption.victims.size()) + " workload(s)";
      }
    }
    const bool placed = d.outcome == Outcome::kPlaced || d.outcome == Outcome::kWaiting;
    // A reservation holds while its workload waits for room only: lift it for good when the
    // workload started, or waits for another reason (admission, a victim), or is rejected.
    const bool waits_for_room = d.outcome == Outcome::kPending && d.placement_failed && d.preemption.victims.empty();
    if (own != kept.end()) {
      if (waits_for_room) {
        for (const auto& a : own->second.assignments) recompute(a.node, "");  // put it back
      } else {
        --held;
        if (!placed) backfill.Drop(w->id);
        lift(own->second);
      }
    }
    if (placed) {
      auto it = state.running().find(w->id);
      if (it != state.running().end()) backfill.MirrorPlacement(it->second);
    } else if (waits_for_room) {
      // A kept reservation may move earlier (work ended sooner than expected); a workload big
      // enough to reserve gets one while the depth allows.
      std::optional<Reservation> res;
      CycleState cs;
      if (own != kept.end()) {
        res = backfill.Replan(state, cs, *w, d.constraints, own->second);
        if (res) {
          lift(own->second);
          --held;
        }
      } else if (backfill.Enabled(held) &&
                 w->TotalGpus() >= (profile_->backfill().min_gpus > 0 ? profile_->backfill().min_gpus
                                                                       : state.max_gpus_per_node())) {
        res = backfill.Reserve(state, cs, *w, d.constraints);
      }
      if (res && res->start_s <= now_s) {
        // Its earliest start is now: the future view found room on these nodes alongside every
        // reservation, so it starts there at once.
        Decision now_d = ScheduleOne(state, *w, now_s, nullptr, nullptr, &res->assignments);
        if (now_d.outcome == Outcome::kPlaced) {
          auto it = state.running().find(w->id);
          if (it != state.running().end()) backfill.MirrorPlacement(it->second);
          r.decisions.push_back(std::move(now_d));
          continue;
        }
      }
      if (res) {
        add_reservation(*res);
        ++held;
        describe(d, *res);
        r.reservations.push_back(std::move(*res));
      } else if (own != kept.end()) {
        describe(d, own->second);
        r.reservations.push_back(own->second);
      }
    }
    r.decisions.push_back(std::move(d));
  }
  // Next cycle's commitments: this cycle's reservations, plus those of workloads this cycle did not
  // see (a caller may pass part of the queue) unless long past.
  for (auto it = sticky_->begin(); it != sticky_->end();) {
    const bool seen = ids.count(it->first) > 0;
    it = seen || it->second.start_s < now_s - 86400 ? sticky_->erase(it) : std::next(it);
  }
  for (const auto& res : r.reservations) (*sticky_)[res.workload] = res;
  r.shape_cache_hits = cache.hits();
  return r;
}

void Scheduler::ApplyPreemption(ClusterState& state, const PostFilterResult& pr) const {
  for (const auto& s : pr.shrinks) {
    if (state.ReleaseMembers(s.workload, s.node, s.members).ok() && options_.on_evict) options_.on_evict(s.workload, s.members);
  }
  for (const auto& v : pr.victims) {
    if (state.RemoveRunning(v).ok() && options_.on_evict) options_.on_evict(v, -1);
  }
}

namespace {
Outcome OutcomeFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kSuccess: return Outcome::kPlaced;
    case StatusCode::kWait: return Outcome::kWaiting;
    case StatusCode::kUnschedulable: return Outcome::kPending;
    case StatusCode::kUnschedulableAndUnresolvable: return Outcome::kRejected;
    case StatusCode::kError: return Outcome::kError;
  }
  return Outcome::kError;
}
}  // namespace

Decision Scheduler::ScheduleOne(ClusterState& state, const Workload& w, int64_t now_s, ShapeCache* cache,
                                const BackfillView* bf, const std::vector<MemberAssignment>* at) const {
  Decision d;
  d.workload_id = w.id;
  auto fail = [&](Status s) {
    d.outcome = OutcomeFor(s);
    d.explanation = s.Message();
    d.status = std::move(s);
    return std::move(d);  // d outlives the lambda only to be returned: move, do not copy
  };
  CycleState cs;
  if (Status s = profile_->RunAdmit(cs, w); !s.ok()) return fail(std::move(s));
  PlacementConstraints c;
  c.members = w.members;
  if (Status s = profile_->RunPreFilter(cs, w, state.levels(), c); !s.ok()) return fail(std::move(s));
  c.ends_at = now_s + profile_->backfill().RuntimeOf(w);
  int64_t ends_bucket = 0;
  if (bf != nullptr && bf->reserved_from != nullptr) {
    c.reserved_from = bf->reserved_from;
    c.reserved_gpus = bf->reserved_gpus;
    ends_bucket = c.ends_at > bf->latest_start ? INT64_MAX : c.ends_at;
  }
  d.constraints = c;
  ShapeCache::Key key{w.per_member, c.members, w.min_members, c.required_level, c.preferred_level, w.gpu_model,
                      w.front_door, ends_bucket, w.constraints_sig};
  const int32_t queue_key = w.queue_id >= 0 ? w.queue_id : static_cast<int32_t>(std::hash<std::string>()(w.queue) & 0x3fffffff);
  auto postfilter = [&](Status& failure) {
    if (failure.code() != StatusCode::kUnschedulable || !profile_->has_postfilters()) return;
    if (cache != nullptr) {
      if (cache->postfilter_attempts >= options_.max_postfilter_attempts) return;
      if (cache->NoVictims(key, queue_key, w.priority)) return;
      cache->postfilter_attempts++;
    }
    PlacementConstraints pc = c;
    pc.reserved_from = nullptr;
    PostFilterContext ctx{state, now_s, [&](const PlacementConstraints& probe) {
                            PlacementSearch search(state, *profile_);
                            std::vector<Candidate> out;
                            return search.Find(cs, w, probe, out).ok();
                          }};
    Status pf = profile_->RunPostFilter(cs, w, failure, ctx, pc, d.preemption);
    if (pf.ok()) {
      failure.AddReason("preemption (" + d.preemption.reason + ") proposed: " + std::to_string(d.preemption.victims.size()) +
                        " victim(s), " + std::to_string(d.preemption.shrinks.size()) + " elastic shrink(s) in " +
                        d.preemption.nominated_domain);
    } else {
      d.preemption = PostFilterResult{};
      if (cache != nullptr) cache->SetNoVictims(key, queue_key, w.priority);
    }
  };
  if (cache != nullptr && cache->memo_shapes) {
    if (const Status* failed = cache->Find(key)) {
      Status again = *failed;
      postfilter(again);
      d.placement_failed = true;
      return fail(std::move(again));
    }
  }
  PlacementSearch search(state, *profile_);
  std::vector<Candidate> candidates;
  Status found = Status::Unschedulable("not searched");
  if (at != nullptr) {
    // The reserved nodes, if they hold every member now (capacity was kept for exactly this).
    Candidate cand;
    cand.domain = "reservation";
    cand.assignments = *at;
    cand.spans.assign(static_cast<size_t>(state.levels().size()), 0);
    bool fits = true;
    int32_t members = 0;
    for (const auto& a : *at) {
      const Node& n = state.node(a.node);
      fits = fits && n.Schedulable() && n.Free().CopiesOf(w.per_member) >= a.members;
      members += a.members;
    }
    if (fits && members >= w.min_members && members <= c.members) {
      c.members = members;
      candidates.push_back(std::move(cand));
      found = Status::Ok();
    }
  }
  if (!found.ok()) found = search.Find(cs, w, c, candidates);
  if (!found.ok() && w.Elastic() && found.code() != StatusCode::kError && c.members > w.min_members) {
    // Elastic gang: the largest size in [min_members, members) that fits, by bisection.
    PlacementConstraints trial = c;
    trial.members = w.min_members;
    Status at_min = search.Find(cs, w, trial, candidates);
    if (!at_min.ok()) {
      found = std::move(at_min);  // judged by its minimum: may still fit later
    } else {
      int32_t lo = w.min_members, hi = c.members;  // lo fits, hi does not
      while (hi - lo > 1) {
        trial.members = lo + (hi - lo) / 2;
        std::vector<Candidate> more;
        if (search.Find(cs, w, trial, more).ok()) {
          lo = trial.members;
          candidates = std::move(more);
        } else {
          hi = trial.members;
        }
      }
      c.members = lo;
      found = Status::Ok();
    }
  }
  if (!found.ok()) {
    if (cache != nullptr && cache->memo_shapes && found.code() != StatusCode::kError) cache->Insert(key, found);
    d.placement_failed = true;
    postfilter(found);
    return fail(std::move(found));
  }
  for (auto& cand : candidates) profile_->RunScore(cs, w, cand);
  // Highest score wins; ties keep the search's best-fit order.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  Candidate& chosen = candidates.front();

  Transaction txn(state);
  Workload placed = w;
  placed.members = c.members;
  if (Status s = txn.Place(placed, chosen.assignments, now_s); !s.ok()) return fail(std::move(s));
  if (Status s = profile_->RunReserve(cs, placed, chosen); !s.ok()) {
    txn.Discard();
    return fail(std::move(s));
  }
  Status permit = profile_->RunPermit(cs, placed, chosen);
  if (permit.code() != StatusCode::kSuccess && permit.code() != StatusCode::kWait) {
    profile_->RunUnreserve(cs, placed, chosen);
    txn.Discard();
    return fail(std::move(permit));
  }
  txn.Commit();
  d.outcome = permit.ok() ? Outcome::kPlaced : Outcome::kWaiting;
  d.status = permit;
  d.explanation = DescribePlacement(state, w, c, chosen, candidates.size());
  if (!permit.ok()) d.explanation += "; held: " + permit.Message();
  d.placement = std::move(chosen);
  return d;
}

std::string Scheduler::DescribePlacement(const ClusterState& state, const Workload& w, const PlacementConstraints& c,
                                         const Candidate& cand, size_t alternatives) const {
  const auto& levels = state.levels();
  std::string out;
  const std::string lvl = cand.domain_level < 0 ? "cluster" : levels.Name(cand.domain_level);
  out = "in " + lvl + " " + cand.domain;
  if (c.required_level >= 0) {
    out += " (required " + levels.Name(c.required_level) + ")";
  } else {
    out += " (smallest domain that fits)";
  }
  out += "; " + std::to_string(cand.assignments.size()) + " node(s)";
  for (int l = cand.domain_level + 1; l < levels.node_level(); ++l) {
    out += ", " + std::to_string(cand.spans[static_cast<size_t>(l)]) + " " + levels.Name(l);
  }
  if (c.preferred_level >= 0) {
    const int32_t n = c.preferred_level == levels.node_level() ? static_cast<int32_t>(cand.assignments.size())
                                                               : cand.spans[static_cast<size_t>(c.preferred_level)];
    out += n <= 1 ? "; preferred " + levels.Name(c.preferred_level) + " met"
                  : "; preferred " + levels.Name(c.preferred_level) + " not met (spans " + std::to_string(n) + ")";
  }
  const int64_t used = w.per_member.gpus * c.members;
  out += "; best fit of " + std::to_string(alternatives) + ": " + std::to_string(cand.domain_free_gpus) + " -> " +
         std::to_string(cand.domain_free_gpus - used) + " free GPUs in domain";
  if (c.members < w.members) out += "; elastic: " + std::to_string(c.members) + "/" + std::to_string(w.members) + " members";
  return out;
}

}  // namespace tidal
