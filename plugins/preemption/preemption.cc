// preemption (PostFilter): victim selection, as named steps of one VictimSearch: judge the
// preemptor, collect terminating work, choose candidates, plan domains, try a domain (on a Trial,
// the scratch view, sparing the victims it did not need: trial.h), commit victims. The rules are in preemption.h.
//
// Threading: the cycle thread (PostFilter runs inside ScheduleOne); a VictimSearch lives for one
// call. Trial evictions change the cycle's cluster only under a Transaction that is always
// discarded, so the call leaves it as it found it.
#include "plugins/preemption/preemption.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/api/duration.h"
#include "core/api/limits.h"
#include "core/state/cluster_state.h"
#include "core/state/headroom.h"
#include "core/state/transaction.h"
#include "plugins/args.h"
#include "plugins/preemption/queue_budget.h"
#include "plugins/preemption/trial.h"
#include "plugins/preemption/victim.h"

namespace tidal::plugins {
namespace {

using preemption_internal::Evicted;
using preemption_internal::MayTake;
using preemption_internal::MembersOf;
using preemption_internal::Reprieve;
using preemption_internal::Take;
using preemption_internal::Trial;
using preemption_internal::Victim;

// A domain worth a trial: the victims touching it (indices into the victims, in victim order) and
// the work a GPU-only estimate says taking them loses.
struct Plan {
  VertexId domain;
  std::vector<size_t> touching;
  double est_loss = 0;
  size_t first = 0, last = 0;  // its entries in PlanDomains' touches (touching is filled from them once kept)
};

// One PostFilter call: the preemptor's standing, the terminating work, the candidates and their
// queues' budgets, as named members; Run() takes the steps in order.
class VictimSearch {
 public:
  VictimSearch(QuotaLedger* ledger, const Preemption::Args& args, const Workload& w, const PlacementConstraints& c,
               PostFilterContext& ctx)
      : ledger_(ledger), args_(args), w_(w), c_(c), ctx_(ctx), cluster_(ctx.cluster) {
    JudgePreemptor();
  }

  Status Run(PostFilterResult& result) {
    CollectLeaving();
    if (FitsOnceLeaversGo()) {
      return Status::Unschedulable("waiting for " + std::to_string(leaving_.size()) +
                                   " terminating workload(s) to release their capacity");
    }
    ChooseCandidates();
    if (victims_.empty()) return Status::Unschedulable("no eligible victims" + WhyNone());
    // When no domain of that level makes room (a broken node or another GPU model in each), the
    // next level out, as the placement search widens; a required level above the nodes is kept.
    const int node_level = cluster_.levels().node_level();
    for (int level = TargetLevel();; --level) {
      Status st = CommitVictims(PlanDomains(level), result);
      if (st.ok() || level < 0 || (c_.required_level >= 0 && c_.required_level != node_level)) return st;
      for (Victim& v : victims_) v.alloc = &cluster_.running().at(v.id);  // the trials re-added them
    }
  }

 private:
  int QueueOf(const Workload& x) const { return x.queue_id > 0 ? x.queue_id : tree_->Find(x.queue); }
  // Why no running workload may be a victim, for the pod's event and explain.
  std::string WhyNone() const {
    if (too_young_ == 0) return ": no running workload is both of lower priority and preemptible, or borrowing above its queue's nominal quota";
    return ": " + std::to_string(too_young_) + " running workload(s) started less than minRuntime (" +
           FormatDurationSeconds(args_.min_runtime_s) + ") ago and may not be preempted yet";
  }
  ResVec Request(const Workload& x, int32_t members) const {
    return tree_ != nullptr ? tree_->Request(x.per_member * members, x.gpu_model) : ResVec{};
  }

  // The preemptor's queue (with quota), what it asks for, and whether it would borrow.
  void JudgePreemptor() {
    if (ledger_ == nullptr || ledger_->tree().size() <= 1) return;
    tree_ = &ledger_->tree();
    leaf_ = QueueOf(w_);
    wanted_ = tree_->Request(w_.per_member * c_.members, w_.gpu_model);
    if (leaf_ > 0) {
      const AdmissionResult a = ledger_->CheckAdmission(leaf_, wanted_);
      preemptor_borrowing_ = a.borrowing || !a.status.ok();
      within_headroom_ = WithinHeadroom(*ledger_, leaf_, w_.per_member.gpus * c_.members);
    }
  }

  // Terminating workloads are leaving anyway: never victims; their capacity counts as freed, and
  // their queue's budget as already given back.
  void CollectLeaving() {
    for (const auto& [id, a] : cluster_.running()) {
      if (id == w_.id) continue;
      if (!a.terminating) {
        others_.emplace_back(&id, &a);  // ChooseCandidates' candidates, without a second walk
        continue;
      }
      leaving_.push_back(id);
      if (tree_ == nullptr) continue;
      const int q = QueueOf(a.workload);
      if (q <= 0) continue;
      ResVec& sum = leaving_by_queue_.try_emplace(q, ResVec(static_cast<size_t>(tree_->resources()), 0)).first->second;
      const ResVec r = Request(a.workload, MembersOf(a));
      for (size_t i = 0; i < r.size(); ++i) sum[i] += r[i];
    }
    std::sort(leaving_.begin(), leaving_.end());
  }

  // Whether the preemptor fits once the terminating workloads are gone (then no victim is needed).
  bool FitsOnceLeaversGo() {
    if (leaving_.empty()) return false;
    Trial trial(cluster_);
    trial.EvictAll(leaving_);
    return ctx_.fits(c_);
  }

  // Whether queue q borrows a resource the preemptor asks for; its budget is read on first use.
  bool Borrows(int q) {
    if (q < 0) return false;
    if (static_cast<size_t>(q) >= budget_known_.size()) budget_known_.resize(static_cast<size_t>(q) + 1, 0);
    uint8_t& known = budget_known_[static_cast<size_t>(q)];
    if (known == 0) {
      auto l = leaving_by_queue_.find(q);
      budget_.Add(q, ledger_->OverNominal(q), l == leaving_by_queue_.end() ? ResVec{} : l->second, wanted_);
      known = budget_.Borrows(q) ? 2 : 1;  // the answer, kept: it is asked once per candidate
    }
    return known == 2;
  }

  // Choose candidates: every eligible victim (see preemption.h), in the running set's order. Victim
  // order (Before) matters only among the victims of one domain: PlanDomains sorts each
  // domain's few victims, not all of them (about a thousand per search, 64 searches a cycle).
  void ChooseCandidates() {
    victims_.reserve(cluster_.running().size());  // no regrowth: a Victim is not cheap to move
    if (leaving_.empty()) {  // no trial since CollectLeaving: its pointers into running() hold
      for (const auto& [id, a] : others_) {
        Victim v;
        if (Eligible(*id, *a, v)) victims_.push_back(std::move(v));
      }
    } else {
      for (const auto& [id, a] : cluster_.running()) {
        if (id == w_.id || a.terminating) continue;
        Victim v;
        if (Eligible(id, a, v)) victims_.push_back(std::move(v));
      }
    }
  }

  // Victim order: borrowers first, then lower priority, then least work lost, then the most
  // recently started. A total order (ids are unique).
  bool Before(size_t x, size_t y) const {
    const Victim& a = victims_[x];
    const Victim& b = victims_[y];
    if (a.borrowing != b.borrowing) return a.borrowing;
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.lost != b.lost) return a.lost < b.lost;
    if (a.start_s != b.start_s) return a.start_s > b.start_s;
    return a.id < b.id;
  }

  // Whether allocation `a` may be a victim; fills `x` for it.
  bool Eligible(const std::string& id, const Allocation& a, Victim& x) {
    const Workload& v = a.workload;
    if (ctx_.now_s - a.start_time_s < args_.min_runtime_s) return ++too_young_, false;
    // No thrash: never a victim that could preempt the preemptor back.
    if (v.priority > w_.priority) return false;
    const bool lower = v.priority < w_.priority && v.preemptible;
    x.surplus = std::max(0, v.members - v.min_members);
    if (tree_ != nullptr) {
      const int qv = QueueOf(v);
      const bool same_queue = qv > 0 && leaf_ > 0 ? qv == leaf_ : v.queue == w_.queue;
      if (!same_queue && qv > 0 && !Borrows(qv)) {
        // Within quota, only its preemptible work in the room the preemptor's queue keeps
        // (core/state/headroom.h) is taken, by reclaim.
        if (!within_headroom_ || !v.preemptible) return false;
        x.queue = qv;
        x.reclaim = true;
      } else if (!same_queue && qv > 0) {
        // Another queue's work: only what that queue uses above its nominal quota now.
        x.queue = qv;
        x.budgeted = x.borrowing = true;
        x.per_member = Request(v, 1);
        x.whole = x.per_member;  // a request is linear in the members (QueueTree::Request)
        const int64_t members = MembersOf(a);
        for (int64_t& r : x.whole) r *= members;
        if (budget_.Copies(qv, x.whole) < 1 && (x.surplus == 0 || budget_.Copies(qv, x.per_member) < 1)) return false;
        const bool by_reclaim = leaf_ > 0 && !preemptor_borrowing_;
        if (!lower && !by_reclaim) return false;
        x.reclaim = !lower;
      } else {
        // The preemptor's own queue, or work of no configured queue (no quota to protect).
        if (!lower) return false;
        x.borrowing = qv > 0 && Borrows(qv);
      }
    } else if (!lower) {
      return false;
    }
    x.id = id;  // copied only for an eligible victim
    x.alloc = &a;
    x.priority = v.priority;
    x.start_s = a.start_time_s;
    x.lost = Preemption::WorkLost(v, a.start_time_s, ctx_.now_s);
    return true;
  }

  // The level whose domains the preemptor must fit inside: its required level, else the smallest
  // level one of whose domains could hold it (-1: only the whole cluster).
  int TargetLevel() const {
    const auto& levels = cluster_.levels();
    int level = c_.required_level;
    if (level >= 0 && level != levels.node_level()) return level;
    for (int l = levels.node_level() - 1; l >= 0; --l) {
      auto [b, e] = cluster_.LevelRange(l);
      for (VertexId v = b; v < e; ++v) {
        if (cluster_.StaticMemberCapacity(v, w_.per_member.gpus) >= c_.members) return l;
      }
    }
    return -1;
  }

  // Domains of `level` worth a trial (victims could make room there by a GPU-only estimate), the
  // least estimated loss first, at most maxDomains.
  std::vector<Plan> PlanDomains(int level) {
    auto domain_of = [&](NodeId n) { return level < 0 ? cluster_.root() : cluster_.AncestorAt(n, level); };
    // GPUs of each leaver and victim in each domain of that level (one pass over each).
    std::unordered_map<VertexId, int64_t> leaving_gpus;
    for (const auto& id : leaving_) {
      const Allocation& a = cluster_.running().at(id);
      for (const auto& as : a.assignments) {
        const VertexId d = domain_of(as.node);
        if (d >= 0) leaving_gpus[d] += as.members * a.workload.per_member.gpus;
      }
    }
    // (domain, victim index, GPUs there), one entry per assignment, grouped by domain (ascending)
    // and, within a domain, by victim index (a victim's entries there are adjacent): a counting
    // sort over the domains' ids, stable in the victims' index order (one allocation per search,
    // not a list per domain). Each domain's victims are then put in victim order (ByVictimOrder).
    struct Touch {
      VertexId domain;
      size_t victim;
      int64_t gpus;
    };
    std::vector<Touch> unsorted;
    size_t assignments = 0;
    for (const Victim& v : victims_) assignments += v.alloc->assignments.size();
    unsorted.reserve(assignments);  // no regrowth copies
    VertexId lo = std::numeric_limits<VertexId>::max(), hi = -1;
    for (size_t i = 0; i < victims_.size(); ++i) {
      const Allocation& a = *victims_[i].alloc;
      for (const auto& as : a.assignments) {
        const VertexId d = domain_of(as.node);
        if (d < 0) continue;
        unsorted.push_back(Touch{d, i, as.members * a.workload.per_member.gpus});
        lo = std::min(lo, d);
        hi = std::max(hi, d);
      }
    }
    std::vector<Touch> touches(unsorted.size());
    if (!unsorted.empty()) {
      std::vector<uint32_t> at(static_cast<size_t>(hi - lo) + 2, 0);  // at[d - lo + 1]: entries of domain d
      for (const Touch& t : unsorted) ++at[static_cast<size_t>(t.domain - lo) + 1];
      for (size_t k = 1; k < at.size(); ++k) at[k] += at[k - 1];
      for (const Touch& t : unsorted) touches[at[static_cast<size_t>(t.domain - lo)]++] = t;
    }
    std::vector<Plan> plans;
    std::vector<std::pair<size_t, int64_t>> list;  // one domain's victims in victim order, GPUs summed
    for (size_t b = 0; b < touches.size();) {
      const VertexId d = touches[b].domain;
      const size_t first = b;
      list.clear();
      for (; b < touches.size() && touches[b].domain == d; ++b) {
        if (!list.empty() && list.back().first == touches[b].victim) {
          list.back().second += touches[b].gpus;
        } else {
          list.emplace_back(touches[b].victim, touches[b].gpus);
        }
      }
      ByVictimOrder(list);
      auto l = leaving_gpus.find(d);
      if (std::optional<double> loss = Estimate(list, l == leaving_gpus.end() ? 0 : l->second, d)) {
        plans.push_back(Plan{d, {}, *loss, first, b});
      }
    }
    // The least loss first (ties by domain: a total order), only the maxDomains kept sorted.
    const size_t keep = std::min(plans.size(), static_cast<size_t>(args_.max_domains));
    std::partial_sort(plans.begin(), plans.begin() + static_cast<std::ptrdiff_t>(keep), plans.end(),
                      [](const Plan& a, const Plan& b) {
                        return a.est_loss != b.est_loss ? a.est_loss < b.est_loss : a.domain < b.domain;
                      });
    plans.resize(keep);
    // The kept plans' victims, in victim order, each once (most domains estimated are not kept).
    for (Plan& p : plans) {
      for (size_t k = p.first; k < p.last; ++k) {
        if (p.touching.empty() || p.touching.back() != touches[k].victim) p.touching.push_back(touches[k].victim);
      }
      std::sort(p.touching.begin(), p.touching.end(), [this](size_t x, size_t y) { return Before(x, y); });
    }
    return plans;
  }

  // One domain's (victim, GPUs there) entries, each victim once, into victim order.
  void ByVictimOrder(std::vector<std::pair<size_t, int64_t>>& list) const {
    if (list.size() < 2) return;
    std::sort(list.begin(), list.end(), [this](const auto& x, const auto& y) { return Before(x.first, y.first); });
  }

  // The estimated loss of domain d's plan, when taking its victims in order (as the budget allows)
  // frees enough GPUs; nullopt when it does not.
  std::optional<double> Estimate(const std::vector<std::pair<size_t, int64_t>>& list, int64_t leaving_gpus, VertexId d) {
    const int64_t need = w_.per_member.gpus * c_.members;
    // `list` is in victim order (ByVictimOrder).
    int64_t gpus = cluster_.FreeGpus(d, cordoned_) + leaving_gpus;
    // The budget as this estimate takes from it: taken from budget_ itself and given back before
    // returning (integer amounts: budget_ is exactly as it was), not copied per domain.
    undo_.clear();
    auto take = [&](int q, const ResVec& per, int64_t times) {
      budget_.Take(q, per, times);
      undo_.push_back(Undo{q, &per, times});
    };
    double loss = 0;
    for (const auto& [i, here] : list) {
      if (gpus >= need) break;
      const Victim& v = victims_[i];
      const Take t = MayTake(v, budget_);
      if (t.whole) {
        gpus += here;
        loss += v.lost;
        if (v.budgeted) take(v.queue, v.whole, 1);
      } else if (t.members > 0) {
        gpus += std::min<int64_t>(here, t.members * v.alloc->workload.per_member.gpus);
        take(v.queue, v.per_member, t.members);
      }
    }
    for (const Undo& u : undo_) budget_.Take(u.queue, *u.per, -u.times);
    if (gpus < need) return std::nullopt;
    return loss;
  }

  // What one trial has taken so far: what is left of the budgets, the proposal (its shrinks and
  // loss), the victims evicted whole, and whether each workload touched was taken by reclaim.
  struct Taken {
    Taken(const QueueBudget& budget, PostFilterResult& proposal) : left(budget), result(proposal) {}
    QueueBudget left;
    PostFilterResult& result;
    std::vector<Evicted> evicted;
    std::map<std::string, bool> reclaim_of;
    void Mark(const Victim& v) { reclaim_of[v.id] = v.reclaim; }
    // The proposal's reason, over the victims and shrinks it keeps.
    std::string Reason() const {
      bool reclaim = false, priority = false;
      auto mark = [&](const std::string& id) { (reclaim_of.at(id) ? reclaim : priority) = true; };
      for (const auto& id : result.victims) mark(id);
      for (const auto& s : result.shrinks) mark(s.workload);
      return priority ? (reclaim ? "priority+reclaim" : "priority") : "reclaim";
    }
  };

  // Try a domain: trial evictions (after the leavers) in victim order until the preemptor fits
  // inside it, confirmed by the profile's search. True (with `proposal` filled) when it fits.
  bool TryDomain(const Plan& p, PostFilterResult& proposal) {
    Trial trial(cluster_);
    trial.EvictAll(leaving_);
    Taken taken(budget_, proposal);
    taken.result.nominated_domain = p.domain == cluster_.root() ? "cluster" : cluster_.vertex(p.domain).path;
    bool fits = false;
    for (size_t idx : p.touching) {
      if (TakeVictim(trial, p.domain, victims_[idx], taken)) {
        fits = true;
        break;
      }
    }
    if (!fits) return false;
    // Victims taken early that later ones made needless are put back (trial.h).
    taken.result.lost_gpu_seconds -= Reprieve(trial, taken.evicted, [&] { return Fits(p.domain); });
    // Nothing to take: it fits for a reason the search's probe does not see (reserved nodes).
    if (taken.evicted.empty() && taken.result.shrinks.empty()) return false;
    for (const Evicted& e : taken.evicted) taken.result.victims.push_back(e.id);
    taken.result.reason = taken.Reason();
    return true;
  }

  // Takes what the budget allows of victim v in the trial: first its surplus members on nodes of
  // the domain, then (when allowed) the whole of it, which supersedes the shrink. True once the
  // preemptor fits inside the domain.
  bool TakeVictim(Trial& trial, VertexId domain, const Victim& v, Taken& taken) {
    auto live = cluster_.running().find(v.id);
    if (live == cluster_.running().end()) return false;
    const Allocation a = live->second;
    const double lost_before = taken.result.lost_gpu_seconds;
    const Take t = MayTake(v, taken.left);
    int32_t given = 0;  // members given back by a shrink in this trial
    if (t.members > 0) {
      if (std::optional<int32_t> shrunk = Shrink(trial, domain, v, a, FewestToGive(domain, v, a, t.members), taken)) {
        given = *shrunk;
        if (Fits(domain)) return true;
      }
    }
    // A budgeted victim is evicted whole only if its queue stays at or above nominal.
    if (!t.whole || !cluster_.running().count(v.id)) return false;
    if (!trial.Evict(v.id)) return false;
    if (v.budgeted) {
      taken.left.Take(v.queue, v.per_member, -given);
      taken.left.Take(v.queue, v.whole, 1);
    }
    auto& shrinks = taken.result.shrinks;
    shrinks.erase(std::remove_if(shrinks.begin(), shrinks.end(), [&](const ShrinkAction& s) { return s.workload == v.id; }),
                  shrinks.end());
    taken.result.lost_gpu_seconds = lost_before + v.lost;  // all its work, once (a shrink first counted a share)
    taken.evicted.push_back(Evicted{v.id, a, taken.result.lost_gpu_seconds - lost_before});
    taken.Mark(v);
    return Fits(domain);
  }

  // An elastic victim gives back up to `members` members on nodes of the domain (re-placed with
  // the rest); how many it gave, or nullopt when it could not shrink there.
  std::optional<int32_t> Shrink(Trial& trial, VertexId domain, const Victim& v, const Allocation& a, int32_t members, Taken& taken) {
    std::vector<MemberAssignment> kept;
    std::vector<ShrinkAction> shrinks;
    const int32_t given = GiveBack(domain, v, a, members, &kept, &shrinks);
    if (given == 0) return std::nullopt;
    Workload smaller = a.workload;
    smaller.members -= given;
    if (!trial.Evict(v.id) || !trial.Place(smaller, kept, a.start_time_s)) return std::nullopt;
    // The members given back lose their share of the gang's work at risk.
    if (a.workload.members > 0) taken.result.lost_gpu_seconds += v.lost * given / a.workload.members;
    if (v.budgeted) taken.left.Take(v.queue, v.per_member, given);
    taken.result.shrinks.insert(taken.result.shrinks.end(), shrinks.begin(), shrinks.end());
    taken.Mark(v);
    return given;
  }

  // Up to `members` of a's members on the domain's nodes, in a's order (the engine lists the
  // newest first, the gang's leader last): the assignments left in `kept`, the shrinks made (when
  // asked), and how many were given.
  int32_t GiveBack(VertexId domain, const Victim& v, const Allocation& a, int32_t members,
                   std::vector<MemberAssignment>* kept, std::vector<ShrinkAction>* shrinks) const {
    const Vertex& vx = cluster_.vertex(domain);
    int32_t give = members;
    *kept = a.assignments;
    for (auto& as : *kept) {
      if (give == 0) break;
      if (as.node < vx.node_begin || as.node >= vx.node_end) continue;
      const int32_t n = std::min(give, as.members);
      as.members -= n;
      give -= n;
      if (shrinks != nullptr) shrinks->push_back(ShrinkAction{v.id, as.node, n});
    }
    kept->erase(std::remove_if(kept->begin(), kept->end(), [](const MemberAssignment& m) { return m.members == 0; }),
                kept->end());
    return members - give;
  }

  // The fewest of up to `most` members victim v gives back on the domain's nodes with which the
  // preemptor fits there (by bisection, each size probed on a scratch transaction), so an elastic
  // gang shrinks by what the preemptor needs, not by its whole surplus; `most` when none does.
  int32_t FewestToGive(VertexId domain, const Victim& v, const Allocation& a, int32_t most) {
    auto fits_giving = [&](int32_t k) {
      Transaction probe(cluster_);  // undone when it goes
      std::vector<MemberAssignment> kept;
      const int32_t given = GiveBack(domain, v, a, k, &kept, nullptr);
      if (given == 0) return false;
      Workload smaller = a.workload;
      smaller.members -= given;
      return probe.Evict(v.id).ok() && probe.Place(smaller, kept, a.start_time_s).ok() && FitsInside(domain);
    };
    if (most <= 1 || !fits_giving(most)) return most;
    int32_t lo = 0, hi = most;  // giving hi fits, giving lo does not
    while (hi - lo > 1) {
      const int32_t mid = lo + (hi - lo) / 2;
      (fits_giving(mid) ? hi : lo) = mid;
    }
    return hi;
  }

  // Whether the preemptor's members fit on the domain's nodes now (GPU aggregate first, then the
  // nodes' free resources, pools and GPU model; cordoned nodes for a pod that tolerates them).
  bool FitsInside(VertexId domain) const {
    if (cluster_.MemberCapacity(domain, w_.per_member.gpus, cordoned_) < c_.members) return false;
    const Vertex& vx = cluster_.vertex(domain);
    int64_t members = 0;
    for (NodeId n = vx.node_begin; n < vx.node_end && members < c_.members; ++n) {
      const Node& node = cluster_.node(n);
      if (!node.SchedulableFor(cordoned_) || !PoolAdmits(node.pool, w_.front_door) || !NamedPoolAdmits(node, w_)) continue;
      if (node.lent_preemptible_only && !w_.preemptible) continue;
      if (!w_.gpu_model.empty() && node.gpu_model != w_.gpu_model) continue;
      members += node.Free().CopiesOf(w_.per_member);
    }
    return members >= c_.members;
  }

  // Whether the preemptor fits inside the domain now: FitsInside (resource-exact per node, cheap),
  // confirmed by the profile's search (filters, its required level inside the domain, and the
  // reservations c_ names: room the preemptor may not use once the victims are gone is no room).
  bool Fits(VertexId domain) const {
    if (!FitsInside(domain)) return false;
    PlacementConstraints inside = c_;  // with the reservations it must respect (its caller's)
    inside.within = domain;
    return ctx_.fits(inside);
  }

  // Commit victims: of the domains whose trial made room, the one losing the least work.
  Status CommitVictims(const std::vector<Plan>& plans, PostFilterResult& result) {
    bool found = false;
    PostFilterResult best;
    for (const Plan& p : plans) {
      PostFilterResult trial;
      if (!TryDomain(p, trial)) continue;
      if (!found || trial.lost_gpu_seconds < best.lost_gpu_seconds) {
        best = std::move(trial);
        found = true;
      }
    }
    if (!found) return Status::Unschedulable("evicting every eligible victim would not make room in one domain");
    result = std::move(best);
    return Status::Ok();
  }

  QuotaLedger* ledger_;
  const Preemption::Args& args_;
  const Workload& w_;
  const bool cordoned_ = w_.constraints != nullptr && w_.constraints->ToleratesUnschedulable();  // may use cordoned nodes
  const PlacementConstraints& c_;
  PostFilterContext& ctx_;
  ClusterState& cluster_;
  // The preemptor's standing (with quota: a ledger with configured queues).
  const QueueTree* tree_ = nullptr;
  int leaf_ = -1;
  bool preemptor_borrowing_ = false;
  bool within_headroom_ = false;  // the preemptor's queue grows within its headroom
  ResVec wanted_;
  // Terminating workloads (sorted ids) and what they give back per queue.
  std::vector<std::string> leaving_;
  std::vector<std::pair<const std::string*, const Allocation*>> others_;  // the rest of running(), in its order
  std::map<int, ResVec> leaving_by_queue_;
  // Other queues' budgets, read on first use; the candidates, in the running set's order.
  QueueBudget budget_;
  struct Undo {
    int queue;
    const ResVec* per;
    int64_t times;
  };
  std::vector<Undo> undo_;  // what one domain's Estimate took from budget_, given back after it
  std::vector<uint8_t> budget_known_;  // by queue index: 0 not read yet, 1 read and not borrowing, 2 borrowing
  std::vector<Victim> victims_;
  int64_t too_young_ = 0;  // candidates refused for minRuntime (WhyNone)
};

}  // namespace

double Preemption::WorkLost(const Workload& v, int64_t start_s, int64_t now_s) {
  if (v.checkpoints_on_notice) return 0;  // it is given notice and checkpoints before it goes
  int64_t since = start_s;
  if (v.last_checkpoint_s >= start_s) since = v.last_checkpoint_s;
  int64_t at_risk = std::max<int64_t>(0, now_s - since);
  if (v.checkpoint_interval_s > 0 && v.last_checkpoint_s < start_s) at_risk = (now_s - start_s) % v.checkpoint_interval_s;
  return static_cast<double>(v.TotalGpus()) * static_cast<double>(at_risk);
}

Status Preemption::PostFilter(CycleState&, const Workload& w, const Status& failure, PostFilterContext& ctx,
                              const PlacementConstraints& c, PostFilterResult& result) {
  if (failure.code() != StatusCode::kUnschedulable) return Status::Unschedulable("nothing to preempt for");
  return VictimSearch(ledger_, args_, w, c, ctx).Run(result);
}

StatusOr<std::unique_ptr<Plugin>> Preemption::New(const nlohmann::json& args, const PluginContext& ctx) {
  if (Status s = plugin_args::OnlyKeys(args, {"minRuntime", "maxDomains"}); !s.ok()) return s;
  Args a;
  if (args.is_object() && args.contains("minRuntime")) {
    const auto& v = args.at("minRuntime");
    if (v.is_number_integer() && v.get<int64_t>() >= 0) {
      if (Status s = limits::CheckDuration(v.get<int64_t>(), "minRuntime"); !s.ok()) return s;
      a.min_runtime_s = v.get<int64_t>();
    } else if (v.is_string()) {
      auto d = ParseDurationSeconds(v.get<std::string>(), "minRuntime");
      if (!d.ok()) return d.status();
      a.min_runtime_s = *d;
    } else {
      return Status::Error("minRuntime: must be a duration such as 5m");
    }
  }
  if (Status s = plugin_args::Int(args, "maxDomains", 1, 64, &a.max_domains); !s.ok()) return s;
  return std::unique_ptr<Plugin>(std::make_unique<Preemption>(ctx.ledger, a));
}

}  // namespace tidal::plugins
