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
