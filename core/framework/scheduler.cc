#include "core/framework/scheduler.h"

#include <algorithm>

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
  return h;
}

void Scheduler::SortQueue(std::vector<const Workload*>& pending) const {
  QueueSortPlugin& qs = profile_->queue_sort();
  qs.PrepareSort();
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
  SortQueue(pending);
  CycleResult r;
  r.decisions.reserve(pending.size());
  ShapeCache cache;
  for (const Workload* w : pending) r.decisions.push_back(ScheduleOne(state, *w, now_s, &cache));
  return r;
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

Decision Scheduler::ScheduleOne(ClusterState& state, const Workload& w, int64_t now_s, ShapeCache* cache) const {
  Decision d;
  d.workload_id = w.id;
  auto fail = [&](Status s) {
    d.outcome = OutcomeFor(s);
    d.explanation = s.Message();
    d.status = std::move(s);
    return d;
  };
  CycleState cs;
  if (Status s = profile_->RunAdmit(cs, w); !s.ok()) return fail(std::move(s));
  PlacementConstraints c;
  c.members = w.members;
  if (Status s = profile_->RunPreFilter(cs, w, state.levels(), c); !s.ok()) return fail(std::move(s));

  ShapeCache::Key key{w.per_member, c.members, w.min_members, c.required_level, c.preferred_level, w.gpu_model,
                      w.front_door};
  if (cache != nullptr) {
    if (const Status* failed = cache->Find(key)) {
      Status again = *failed;
      if (again.code() == StatusCode::kUnschedulable) {
        Status pf = profile_->RunPostFilter(cs, w, again, d.preemption);
        if (pf.ok()) again.AddReason("preemption proposed: " + std::to_string(d.preemption.victims.size()) + " victim(s)");
      }
      return fail(std::move(again));
    }
  }
  PlacementSearch search(state, *profile_);
  std::vector<Candidate> candidates;
  Status found = search.Find(cs, w, c, candidates);
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
    if (cache != nullptr && found.code() != StatusCode::kError) cache->Insert(key, found);
    if (found.code() == StatusCode::kUnschedulable) {
      Status pf = profile_->RunPostFilter(cs, w, found, d.preemption);
      if (pf.ok()) found.AddReason("preemption proposed: " + std::to_string(d.preemption.victims.size()) + " victim(s)");
    }
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
