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

CycleResult Scheduler::RunCycle(ClusterState& state, std::vector<Workload> pending, int64_t now_s) const {
  SortQueue(pending);
  CycleResult r;
  r.decisions.reserve(pending.size());
  for (const auto& w : pending) r.decisions.push_back(ScheduleOne(state, w, now_s));
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

Decision Scheduler::ScheduleOne(ClusterState& state, const Workload& w, int64_t now_s) const {
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
