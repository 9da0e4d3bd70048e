// Scheduler: the queue order, the shape memo, one workload's placement attempt (ScheduleOne:
// Admit -> PreFilter -> search -> Score -> Reserve -> Permit, or PostFilter when nothing fits) and
// how it is explained. The cycle that walks the queue over these steps is core/framework/cycle.cc.
//
// Threading: as scheduler.h: one thread at a time, mutating only the ClusterState passed in.
#include "core/framework/scheduler.h"

#include <algorithm>
#include <array>

#include "core/framework/cycle.h"
#include "core/framework/placement.h"
#include "core/framework/radix_sort.h"
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

const std::string* ShapeCache::NoVictimsWhy(const Key& k, int32_t queue, int32_t priority) const {
  auto it = no_victims_.find(k);
  if (it == no_victims_.end()) return nullptr;
  auto q = it->second.find(queue);
  return q != it->second.end() && priority <= q->second.first ? &q->second.second : nullptr;
}

void ShapeCache::SetNoVictims(const Key& k, int32_t queue, int32_t priority, std::string why) {
  auto& m = no_victims_[k];
  auto [it, inserted] = m.try_emplace(queue, priority, why);
  if (!inserted && priority > it->second.first) it->second = {priority, std::move(why)};
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
  for (const auto& m : k.model_caps) {
    mix(std::hash<std::string>()(m.model));
    mix(std::hash<int32_t>()(m.members));
  }
  return h;
}

namespace {
// A QueueSort key {k0, k1, k2} packed into two unsigned words that compare in the same order:
// k0 and k1 biased into 32 bits each, k2 with its sign bit flipped. False when k0 or k1 falls
// outside int32 (the caller then sorts the keys as they are).
bool PackKey(const std::array<int64_t, 3>& k, uint64_t* hi, uint64_t* lo) {
  constexpr int64_t kBias = int64_t{1} << 31;
  if (k[0] < -kBias || k[0] >= kBias || k[1] < -kBias || k[1] >= kBias) return false;
  *hi = static_cast<uint64_t>(k[0] + kBias) << 32 | static_cast<uint64_t>(k[1] + kBias);
  *lo = static_cast<uint64_t>(k[2]) ^ (uint64_t{1} << 63);
  return true;
}

// Each run of equal keys in v (sorted by key) by workload id: with a sort by key alone (no
// workload is read), the same total order as comparing (key, id), without a cache miss on the
// workload per comparison.
template <typename T, typename Less>
void SortTiesById(std::vector<T>& v, Less less) {
  for (size_t b = 0; b < v.size();) {
    size_t e = b + 1;
    while (e < v.size() && !less(v[b], v[e])) ++e;
    if (e - b > 1) {
      std::sort(v.begin() + static_cast<std::ptrdiff_t>(b), v.begin() + static_cast<std::ptrdiff_t>(e),
                [](const T& x, const T& y) { return x.w->id < y.w->id; });
    }
    b = e;
  }
}

template <typename T, typename Less>
void SortByKeyThenId(std::vector<T>& v, Less less) {
  std::sort(v.begin(), v.end(), less);
  SortTiesById(v, less);
}
}  // namespace

void Scheduler::SortQueue(std::vector<const Workload*>& pending) const {
  QueueSortPlugin& qs = profile_->queue_sort();
  qs.PrepareSort();
  // Fast paths: sort contiguous keys (cache-friendly) when the plugin provides them for all;
  // packed into two words (two compares each) when they fit.
  struct Keyed {
    std::array<int64_t, 3> key;
    const Workload* w;
  };
  struct Packed {
    uint64_t hi, lo;
    const Workload* w;
  };
  std::vector<Packed> packed;  // while every key so far packs
  std::vector<Keyed> keyed;    // once one does not (the packed ones move here)
  packed.reserve(pending.size());
  bool all = true, packs = true;
  for (const Workload* w : pending) {
    Keyed k{{}, w};
    if (!qs.SortKey(*w, &k.key)) {
      all = false;
      break;
    }
    Packed p{0, 0, w};
    if (packs && PackKey(k.key, &p.hi, &p.lo)) {
      packed.push_back(p);
      continue;
    }
    if (packs) {
      packs = false;
      keyed.reserve(pending.size());
      for (const Packed& q : packed) {
        Keyed u{{}, q.w};
        (void)qs.SortKey(*q.w, &u.key);  // the same key again: valid until the next PrepareSort
        keyed.push_back(u);
      }
      packed = {};
    }
    keyed.push_back(k);
  }
  if (all && packs) {
    // Rebased: each part less its smallest value (the same order), so only the bytes that span
    // the parts' ranges differ and get a radix pass (a priority near 0 biased to 2^31 would differ
    // in all four bytes of its half: 0x7fffffff against 0x80000000).
    uint64_t min_k0 = UINT64_MAX, min_k1 = UINT64_MAX, min_lo = UINT64_MAX;
    for (const Packed& p : packed) {
      min_k0 = std::min(min_k0, p.hi >> 32);
      min_k1 = std::min(min_k1, p.hi & 0xffffffffu);
      min_lo = std::min(min_lo, p.lo);
    }
    if (!packed.empty()) {
      const uint64_t hi_base = min_k0 << 32 | min_k1;  // no borrow: each half is at least its own minimum
      for (Packed& p : packed) {
        p.hi -= hi_base;
        p.lo -= min_lo;
      }
    }
    RadixSortHiLo(packed);
    SortTiesById(packed, [](const Packed& a, const Packed& b) { return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo; });
    for (size_t i = 0; i < packed.size(); ++i) pending[i] = packed[i].w;
    return;
  }
  if (all) {
    SortByKeyThenId(keyed, [](const Keyed& a, const Keyed& b) { return a.key < b.key; });
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

CycleResult Scheduler::RunCycle(ClusterState& state, std::vector<const Workload*> pending, int64_t now_s) const {
  return Cycle(*this, state, now_s).Run(std::move(pending));
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

// One workload's placement attempt, as ScheduleOne's steps pass it along.
struct Scheduler::Attempt {
  ClusterState& state;
  const Workload& w;
  int64_t now_s = 0;
  ShapeCache* cache = nullptr;                       // optional
  const BackfillView* bf = nullptr;                  // optional
  const std::vector<MemberAssignment>* at = nullptr; // optional: a reservation's nodes
  PlacementConstraints* resolved = nullptr;          // optional: gets c as Resolve left it
  Decision& d;                                       // the decision, written in place
  CycleState cs{};
  PlacementConstraints c{};  // as PreFilter resolved them; members then as placed
  ShapeCache::Key key{};
  int32_t queue_key = 0;     // the victim-search memo's queue
};

Decision Scheduler::ScheduleOne(ClusterState& state, const Workload& w, int64_t now_s, ShapeCache* cache,
                                const BackfillView* bf, const std::vector<MemberAssignment>* at,
                                PlacementConstraints* resolved) const {
  Decision d;
  ScheduleInto(d, state, w, now_s, cache, bf, at, resolved);
  return d;
}

void Scheduler::ScheduleInto(Decision& d, ClusterState& state, const Workload& w, int64_t now_s, ShapeCache* cache,
                             const BackfillView* bf, const std::vector<MemberAssignment>* at,
                             PlacementConstraints* resolved) const {
  Attempt a{state, w, now_s, cache, bf, at, resolved, d};
  if (resolved != nullptr) *resolved = PlacementConstraints{};
  a.d.workload_id = w.id;
  if (Status s = Resolve(a); !s.ok()) return Fail(a, std::move(s));
  if (a.cache != nullptr && a.cache->memo_shapes) {
    if (const Status* failed = a.cache->Find(a.key)) {
      Status again = *failed;
      TryPostFilter(a, again);
      a.d.placement_failed = true;
      return Fail(a, std::move(again));
    }
  }
  std::vector<Candidate> candidates;
  Status found = FindCandidates(a, candidates);
  if (!found.ok()) {
    if (a.cache != nullptr && a.cache->memo_shapes && found.code() != StatusCode::kError) a.cache->Insert(a.key, found);
    a.d.placement_failed = true;
    TryPostFilter(a, found);
    return Fail(a, std::move(found));
  }
  Apply(a, candidates);
}

void Scheduler::Fail(Attempt& a, Status s) const {
  a.d.outcome = OutcomeFor(s);
  if (options_.explain || a.d.outcome == Outcome::kRejected || a.d.outcome == Outcome::kError) a.d.explanation = s.Message();
  a.d.status = std::move(s);
}

Status Scheduler::Resolve(Attempt& a) const {
  const Workload& w = a.w;
  if (Status s = profile_->RunAdmit(a.cs, w); !s.ok()) return s;
  a.c.members = w.members;
  if (Status s = profile_->RunPreFilter(a.cs, w, a.state.levels(), a.c); !s.ok()) return s;
  a.c.ends_at = a.now_s + profile_->backfill().RuntimeOf(w);
  int64_t ends_bucket = 0;
  if (a.bf != nullptr && a.bf->reserved_from != nullptr) {
    a.c.reserved_from = a.bf->reserved_from;
    a.c.reserved_gpus = a.bf->reserved_gpus;
    a.c.closing = a.bf->closing;
    ends_bucket = a.c.ends_at > a.bf->latest_start ? INT64_MAX : a.c.ends_at;
  }
  if (a.resolved != nullptr) *a.resolved = a.c;
  a.key = ShapeCache::Key{w.per_member, a.c.members, w.min_members, a.c.required_level, a.c.preferred_level, w.gpu_model,
                          w.front_door, ends_bucket, w.constraints_sig, a.c.model_caps, w.preemptible};
  a.queue_key = w.queue_id >= 0 ? w.queue_id : static_cast<int32_t>(std::hash<std::string>()(w.queue) & 0x3fffffff);
  return Status::Ok();
}

void Scheduler::TryPostFilter(Attempt& a, Status& failure) const {
  if (failure.code() != StatusCode::kUnschedulable || !profile_->has_postfilters()) return;
  // A workload with its own reservation hides it (Cycle::TryNow): no victim memo for it either.
  const bool memo = a.cache != nullptr && a.cache->memo_shapes;
  if (a.cache != nullptr) {
    if (a.cache->postfilter_attempts >= options_.max_postfilter_attempts) return;
    if (const std::string* why = memo ? a.cache->NoVictimsWhy(a.key, a.queue_key, a.w.priority) : nullptr) {
      if (!why->empty()) failure.AddReason(*why);
      return;
    }
    a.cache->postfilter_attempts++;
  }
  // With the reservations the placement honours (a.c): victims are chosen only where the
  // preemptor may run once they are gone, as the retry after the evictions (Cycle::EvictAndRetry)
  // and the engine's view (engine_preempt.cc) see it.
  PlacementConstraints pc = a.c;
  PostFilterContext ctx{a.state, a.now_s, [&](const PlacementConstraints& probe) {
                          PlacementSearch search(a.state, *profile_);
                          search.set_explain(false);  // only whether it fits is read
                          std::vector<Candidate> out;
                          return search.Find(a.cs, a.w, probe, out).ok();
                        }};
  Decision& d = a.d;
  Status pf = profile_->RunPostFilter(a.cs, a.w, failure, ctx, pc, d.preemption);
  if (!pf.ok() && a.w.Elastic() && pc.members > a.w.min_members) {
    // An elastic gang is judged by its minimum: when no victims make room for all its members
    // (more than the cluster holds, say), room for its minimum will do; it grows back later.
    d.preemption = PostFilterResult{};
    pc.members = a.w.min_members;
    pf = profile_->RunPostFilter(a.cs, a.w, failure, ctx, pc, d.preemption);
  }
  if (pf.ok()) {
    failure.AddReason("preemption (" + d.preemption.reason + ") proposed: " + std::to_string(d.preemption.victims.size()) +
                      " victim(s), " + std::to_string(d.preemption.shrinks.size()) + " elastic shrink(s) in " +
                      d.preemption.nominated_domain);
  } else {
    // Why no victims (none eligible, none making room in one domain): the decision says so.
    d.preemption = PostFilterResult{};
    std::string why = (pf.plugin().empty() ? std::string("preemption") : pf.plugin()) + ": " + pf.Message();
    failure.AddReason(why);
    if (memo) a.cache->SetNoVictims(a.key, a.queue_key, a.w.priority, std::move(why));
  }
}

Status Scheduler::FindCandidates(Attempt& a, std::vector<Candidate>& candidates) const {
  PlacementSearch search(a.state, *profile_);
  search.set_explain(options_.explain);
  if (a.at != nullptr && FitsReserved(a)) {
    Candidate cand;
    cand.domain = "reservation";
    cand.assignments = *a.at;
    cand.spans.assign(static_cast<size_t>(a.state.levels().size()), 0);
    candidates.push_back(std::move(cand));
    return Status::Ok();
  }
  Status found = search.Find(a.cs, a.w, a.c, candidates);
  if (!found.ok() && a.w.Elastic() && found.code() != StatusCode::kError && a.c.members > a.w.min_members) {
    found = ShrinkElastic(a, search, candidates);
  }
  return found;
}

bool Scheduler::FitsReserved(Attempt& a) const {
  // The reserved nodes, if they hold every member now (capacity was kept for exactly this), within
  // the per-model quota caps.
  const bool cordoned = a.w.constraints != nullptr && a.w.constraints->ToleratesUnschedulable();
  std::vector<int32_t> on_model(a.c.model_caps.size(), 0);
  bool fits = true;
  int32_t members = 0;
  for (const auto& as : *a.at) {
    const Node& n = a.state.node(as.node);
    fits = fits && n.SchedulableFor(cordoned) && n.Free().CopiesOf(a.w.per_member) >= as.members;
    members += as.members;
    for (size_t i = 0; i < on_model.size(); ++i) {
      if (a.c.model_caps[i].model == n.gpu_model) on_model[i] += as.members;
    }
  }
  for (size_t i = 0; i < on_model.size(); ++i) fits = fits && on_model[i] <= a.c.model_caps[i].members;
  if (!fits || members < a.w.min_members || members > a.c.members) return false;
  a.c.members = members;
  return true;
}

Status Scheduler::ShrinkElastic(Attempt& a, const PlacementSearch& search, std::vector<Candidate>& candidates) const {
  // Elastic gang: the largest size in [min_members, members) that fits, by bisection.
  PlacementConstraints trial = a.c;
  trial.members = a.w.min_members;
  Status at_min = search.Find(a.cs, a.w, trial, candidates);
  if (!at_min.ok()) return at_min;  // judged by its minimum: may still fit later
  int32_t lo = a.w.min_members, hi = a.c.members;  // lo fits, hi does not
  while (hi - lo > 1) {
    trial.members = lo + (hi - lo) / 2;
    std::vector<Candidate> more;
    if (search.Find(a.cs, a.w, trial, more).ok()) {
      lo = trial.members;
      candidates = std::move(more);
    } else {
      hi = trial.members;
    }
  }
  a.c.members = lo;
  return Status::Ok();
}

void Scheduler::Apply(Attempt& a, std::vector<Candidate>& candidates) const {
  for (auto& cand : candidates) profile_->RunScore(a.cs, a.w, cand);
  // Highest score wins; ties keep the search's best-fit order.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& x, const Candidate& y) { return x.score > y.score; });
  Candidate& chosen = candidates.front();

  Transaction txn(a.state);
  Workload placed = a.w;
  placed.members = a.c.members;
  if (Status s = txn.Place(placed, chosen.assignments, a.now_s); !s.ok()) return Fail(a, std::move(s));
  if (Status s = profile_->RunReserve(a.cs, a.state, placed, chosen); !s.ok()) {
    txn.Discard();
    return Fail(a, std::move(s));
  }
  Status permit = profile_->RunPermit(a.cs, placed, chosen);
  if (permit.code() != StatusCode::kSuccess && permit.code() != StatusCode::kWait) {
    profile_->RunUnreserve(a.cs, a.state, placed, chosen);
    txn.Discard();
    return Fail(a, std::move(permit));
  }
  txn.Commit();
  Decision& d = a.d;
  d.outcome = permit.ok() ? Outcome::kPlaced : Outcome::kWaiting;
  d.status = permit;
  if (options_.explain) {
    d.explanation = DescribePlacement(a.state, a.w, a.c, chosen, candidates.size());
    if (!permit.ok()) d.explanation += "; held: " + permit.Message();
  }
  d.placement = std::move(chosen);
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
