// preemption (PostFilter): victim selection (see preemption.h for the rules and threading).
#include "plugins/preemption/preemption.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "core/api/duration.h"
#include "core/state/cluster_state.h"
#include "core/state/transaction.h"
#include "plugins/args.h"

namespace tidal::plugins {
namespace {

// What may still be taken from each other queue in one trial: per resource, how far the queue is
// above its nominal quota now, less what its terminating workloads will give back and what the
// trial already took. Only the resources in which the queue borrows and the preemptor asks for
// something are judged; in those, a queue is never taken below its nominal quota.
class QueueBudget {
 public:
  void Add(int q, const ResVec& over, const ResVec& leaving, const ResVec& wanted) {
    Entry e{over, std::vector<bool>(over.size(), false)};
    for (size_t r = 0; r < over.size(); ++r) {
      e.judged[r] = over[r] > 0 && r < wanted.size() && wanted[r] > 0;
      if (r < leaving.size()) e.left[r] -= leaving[r];
    }
    entries_[q] = std::move(e);
  }
  // Whether queue q borrows any resource the preemptor asks for (before anything is taken).
  bool Borrows(int q) const {
    auto it = entries_.find(q);
    return it != entries_.end() && std::find(it->second.judged.begin(), it->second.judged.end(), true) != it->second.judged.end();
  }
  // How many copies of `per` (one member, or a whole gang) queue q may still give back: the fewest
  // over the judged resources that `per` holds; 0 when it holds none of them.
  int64_t Copies(int q, const ResVec& per) const {
    auto it = entries_.find(q);
    if (it == entries_.end()) return 0;
    int64_t n = std::numeric_limits<int64_t>::max();
    bool any = false;
    for (size_t r = 0; r < per.size() && r < it->second.left.size(); ++r) {
      if (!it->second.judged[r] || per[r] <= 0) continue;
      any = true;
      n = std::min(n, std::max<int64_t>(0, it->second.left[r]) / per[r]);
    }
    return any ? n : 0;
  }
  // Takes `times` copies of `per` from queue q (a negative count gives them back).
  void Take(int q, const ResVec& per, int64_t times) {
    auto it = entries_.find(q);
    if (it == entries_.end()) return;
    for (size_t r = 0; r < per.size() && r < it->second.left.size(); ++r) it->second.left[r] -= per[r] * times;
  }

 private:
  struct Entry {
    ResVec left;
    std::vector<bool> judged;
  };
  std::map<int, Entry> entries_;
};

struct Victim {
  std::string id;
  const Allocation* alloc = nullptr;
  int queue = -1;          // the victim's queue, when `budgeted`
  bool budgeted = false;   // another queue's work: only what that queue borrows may be taken
  bool borrowing = false;  // its queue is above nominal now (taken first)
  bool reclaim = false;    // eligible by reclaim only, not by priority
  int32_t priority = 0;
  double lost = 0;
  int64_t start_s = 0;
  int32_t surplus = 0;  // elastic members above the minimum
  ResVec per_member, whole;  // ledger requests of one member and of all its members
};

int32_t MembersOf(const Allocation& a) {
  int32_t n = 0;
  for (const auto& as : a.assignments) n += as.members;
  return n;
}

}  // namespace

double Preemption::WorkLost(const Workload& v, int64_t start_s, int64_t now_s) {
  int64_t since = start_s;
  if (v.last_checkpoint_s >= start_s) since = v.last_checkpoint_s;
  int64_t at_risk = std::max<int64_t>(0, now_s - since);
  if (v.checkpoint_interval_s > 0 && v.last_checkpoint_s < start_s) at_risk = (now_s - start_s) % v.checkpoint_interval_s;
  return static_cast<double>(v.TotalGpus()) * static_cast<double>(at_risk);
}

Status Preemption::PostFilter(CycleState&, const Workload& w, const Status& failure, PostFilterContext& ctx,
                              const PlacementConstraints& c, PostFilterResult& result) {
  ClusterState& cluster = ctx.cluster;
  const int64_t now_s = ctx.now_s;
  if (failure.code() != StatusCode::kUnschedulable) return Status::Unschedulable("nothing to preempt for");
  const bool quota = ledger_ != nullptr && ledger_->tree().size() > 1;
  const QueueTree* tree = quota ? &ledger_->tree() : nullptr;
  auto queue_of = [&](const Workload& x) { return x.queue_id > 0 ? x.queue_id : tree->Find(x.queue); };
  int leaf = -1;
  bool preemptor_borrowing = false;
  ResVec wanted;
  if (quota) {
    leaf = queue_of(w);
    wanted = tree->Request(w.per_member * c.members, w.gpu_model);
    if (leaf > 0) {
      const AdmissionResult a = ledger_->CheckAdmission(leaf, wanted);
      preemptor_borrowing = a.borrowing || !a.status.ok();
    }
  }
  auto request = [&](const Workload& x, int32_t members) {
    return quota ? tree->Request(x.per_member * members, x.gpu_model) : ResVec{};
  };

  // Terminating workloads are leaving anyway: never victims; their capacity counts as freed, and
  // their queue's budget as already given back.
  std::vector<std::string> leaving;
  std::map<int, ResVec> leaving_by_queue;
  for (const auto& [id, a] : cluster.running()) {
    if (!a.terminating || id == w.id) continue;
    leaving.push_back(id);
    if (!quota) continue;
    const int q = queue_of(a.workload);
    if (q <= 0) continue;
    ResVec& sum = leaving_by_queue.try_emplace(q, ResVec(static_cast<size_t>(tree->resources()), 0)).first->second;
    const ResVec r = request(a.workload, MembersOf(a));
    for (size_t i = 0; i < r.size(); ++i) sum[i] += r[i];
  }
  std::sort(leaving.begin(), leaving.end());
  if (!leaving.empty()) {
    Transaction txn(cluster);
    for (const auto& id : leaving) (void)txn.Evict(id);
    const bool fits = ctx.fits(c);
    txn.Discard();
    if (fits) {
      return Status::Unschedulable("waiting for " + std::to_string(leaving.size()) +
                                   " terminating workload(s) to release their capacity");
    }
  }

  QueueBudget budget;
  std::map<int, bool> budget_known;
  auto borrows = [&](int q) {
    if (!budget_known[q]) {
      budget_known[q] = true;
      auto l = leaving_by_queue.find(q);
      budget.Add(q, ledger_->OverNominal(q), l == leaving_by_queue.end() ? ResVec{} : l->second, wanted);
    }
    return budget.Borrows(q);
  };
  std::vector<Victim> victims;
  for (const auto& [id, a] : cluster.running()) {
    if (id == w.id || a.terminating) continue;
    const Workload& v = a.workload;
    if (now_s - a.start_time_s < args_.min_runtime_s) continue;
    // No thrash: never a victim that could preempt the preemptor back.
    if (v.priority > w.priority) continue;
    const bool lower = v.priority < w.priority && v.preemptible;
    Victim x;
    x.id = id;
    x.alloc = &a;
    x.priority = v.priority;
    x.start_s = a.start_time_s;
    x.surplus = std::max(0, v.members - v.min_members);
    if (quota) {
      const int qv = queue_of(v);
      const bool same_queue = qv > 0 && leaf > 0 ? qv == leaf : v.queue == w.queue;
      if (!same_queue && qv > 0) {
        // Another queue's work: only what that queue uses above its nominal quota now.
        if (!borrows(qv)) continue;
        x.queue = qv;
        x.budgeted = x.borrowing = true;
        x.per_member = request(v, 1);
        x.whole = request(v, MembersOf(a));
        if (budget.Copies(qv, x.whole) < 1 && (x.surplus == 0 || budget.Copies(qv, x.per_member) < 1)) continue;
        const bool by_reclaim = leaf > 0 && !preemptor_borrowing;
        if (!lower && !by_reclaim) continue;
        x.reclaim = !lower;
      } else {
        // The preemptor's own queue, or work of no configured queue (no quota to protect).
        if (!lower) continue;
        x.borrowing = qv > 0 && borrows(qv);
      }
    } else if (!lower) {
      continue;
    }
    x.lost = WorkLost(v, a.start_time_s, now_s);
    victims.push_back(std::move(x));
  }
  if (victims.empty()) return Status::Unschedulable("no eligible victims");
  // Borrowers first, then lower priority, then least work lost, then the most recently started.
  std::sort(victims.begin(), victims.end(), [](const Victim& a, const Victim& b) {
    if (a.borrowing != b.borrowing) return a.borrowing;
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.lost != b.lost) return a.lost < b.lost;
    if (a.start_s != b.start_s) return a.start_s > b.start_s;
    return a.id < b.id;
  });

  // The level whose domains the preemptor must fit inside.
  const auto& levels = cluster.levels();
  const int64_t g = w.per_member.gpus;
  int level = c.required_level;
  if (level < 0 || level == levels.node_level()) {
    level = -1;
    for (int l = levels.node_level() - 1; l >= 0 && level < 0; --l) {
      auto [b, e] = cluster.LevelRange(l);
      for (VertexId v = b; v < e; ++v) {
        if (cluster.StaticMemberCapacity(v, g) >= c.members) {
          level = l;
          break;
        }
      }
    }
  }
  auto domain_of = [&](NodeId n) { return level < 0 ? cluster.root() : cluster.AncestorAt(n, level); };
  // GPUs of each allocation in each domain of that level (one pass over victims and leavers).
  std::unordered_map<VertexId, int64_t> leaving_gpus;
  for (const auto& id : leaving) {
    const Allocation& a = cluster.running().at(id);
    for (const auto& as : a.assignments) {
      const VertexId d = domain_of(as.node);
      if (d >= 0) leaving_gpus[d] += as.members * a.workload.per_member.gpus;
    }
  }
  std::unordered_map<VertexId, std::vector<std::pair<size_t, int64_t>>> by_domain;
  for (size_t i = 0; i < victims.size(); ++i) {
    const Allocation& a = *victims[i].alloc;
    for (const auto& as : a.assignments) {
      const VertexId d = domain_of(as.node);
      if (d < 0) continue;
      auto& list = by_domain[d];
      const int64_t gpus = as.members * a.workload.per_member.gpus;
      if (!list.empty() && list.back().first == i) {
        list.back().second += gpus;
      } else {
        list.emplace_back(i, gpus);
      }
    }
  }
  // How much of victim v a trial may take under `b`: whole (evict), `members` (shrink), or nothing.
  struct Take {
    bool whole = false;
    int32_t members = 0;
  };
  auto may_take = [](const Victim& v, const QueueBudget& b) {
    Take t;
    if (!v.budgeted || b.Copies(v.queue, v.whole) >= 1) {
      t.whole = true;
      t.members = v.surplus;
    } else {
      t.members = static_cast<int32_t>(std::min<int64_t>(v.surplus, b.Copies(v.queue, v.per_member)));
    }
    return t;
  };
  struct Plan {
    VertexId domain;
    std::vector<size_t> touching;
    double est_loss = 0;
  };
  std::vector<Plan> plans;
  for (auto& [d, list] : by_domain) {
    // Victim order inside a domain follows the global order (indices are already sorted).
    std::sort(list.begin(), list.end());
    int64_t gpus = cluster.FreeGpus(d) + leaving_gpus[d];
    QueueBudget est = budget;
    Plan p{d, {}, 0};
    for (const auto& [i, here] : list) {
      p.touching.push_back(i);
      if (gpus >= g * c.members) continue;
      const Victim& v = victims[i];
      const Take t = may_take(v, est);
      if (t.whole) {
        gpus += here;
        p.est_loss += v.lost;
        if (v.budgeted) est.Take(v.queue, v.whole, 1);
      } else if (t.members > 0) {
        gpus += std::min<int64_t>(here, t.members * v.alloc->workload.per_member.gpus);
        est.Take(v.queue, v.per_member, t.members);
      }
    }
    if (gpus >= g * c.members) plans.push_back(std::move(p));
  }
  std::sort(plans.begin(), plans.end(), [](const Plan& a, const Plan& b) {
    return a.est_loss != b.est_loss ? a.est_loss < b.est_loss : a.domain < b.domain;
  });
  if (plans.size() > static_cast<size_t>(args_.max_domains)) plans.resize(static_cast<size_t>(args_.max_domains));

  // Trial evictions per domain, in victim order, until the preemptor fits inside it.
  bool found = false;
  PostFilterResult best;
  for (const Plan& p : plans) {
    Transaction txn(cluster);
    for (const auto& id : leaving) (void)txn.Evict(id);
    QueueBudget left = budget;
    PostFilterResult trial;
    trial.nominated_domain = p.domain == cluster.root() ? "cluster" : cluster.vertex(p.domain).path;
    PlacementConstraints inside = c;
    inside.within = p.domain;
    inside.reserved_from = nullptr;
    const Vertex& vx = cluster.vertex(p.domain);
    bool fits = false;
    bool any_reclaim = false, any_priority = false;
    auto fits_now = [&]() {
      if (cluster.MemberCapacity(p.domain, g) < c.members) return false;
      // A GPU-only check of the domain is exact for whole-GPU requests up to node fit; verify nodes.
      int64_t members = 0;
      for (NodeId n = vx.node_begin; n < vx.node_end && members < c.members; ++n) {
        const Node& node = cluster.node(n);
        if (!node.Schedulable() || !PoolAdmits(node.pool, w.front_door)) continue;
        if (!w.gpu_model.empty() && node.gpu_model != w.gpu_model) continue;
        members += node.Free().CopiesOf(w.per_member);
      }
      return members >= c.members;
    };
    for (size_t idx : p.touching) {
      const Victim& v = victims[idx];
      auto live = cluster.running().find(v.id);
      if (live == cluster.running().end()) continue;
      const Allocation a = live->second;
      const Take t = may_take(v, left);
      int32_t given = 0;  // members given back by a shrink in this trial
      if (t.members > 0) {
        // Elastic: give back surplus members on nodes of this domain first.
        int32_t give = t.members;
        std::vector<MemberAssignment> kept = a.assignments;
        std::vector<ShrinkAction> shrinks;
        for (auto& as : kept) {
          if (give == 0) break;
          if (as.node < vx.node_begin || as.node >= vx.node_end) continue;
          const int32_t n = std::min(give, as.members);
          as.members -= n;
          give -= n;
          shrinks.push_back(ShrinkAction{v.id, as.node, n});
        }
        if (!shrinks.empty()) {
          kept.erase(std::remove_if(kept.begin(), kept.end(), [](const MemberAssignment& m) { return m.members == 0; }),
                     kept.end());
          Workload smaller = a.workload;
          smaller.members -= t.members - give;
          if (txn.Evict(v.id).ok() && txn.Place(smaller, kept, a.start_time_s).ok()) {
            given = t.members - give;
            if (v.budgeted) left.Take(v.queue, v.per_member, given);
            trial.shrinks.insert(trial.shrinks.end(), shrinks.begin(), shrinks.end());
            (v.reclaim ? any_reclaim : any_priority) = true;
            if (fits_now()) {
              fits = true;
              break;
            }
          }
        }
      }
      // Evicting it whole supersedes its shrink; a budgeted victim only if its queue stays at or
      // above nominal.
      if (!t.whole || !cluster.running().count(v.id)) continue;
      if (!txn.Evict(v.id).ok()) continue;
      if (v.budgeted) {
        left.Take(v.queue, v.per_member, -given);
        left.Take(v.queue, v.whole, 1);
      }
      trial.shrinks.erase(std::remove_if(trial.shrinks.begin(), trial.shrinks.end(),
                                         [&](const ShrinkAction& s) { return s.workload == v.id; }),
                          trial.shrinks.end());
      trial.victims.push_back(v.id);
      trial.lost_gpu_seconds += v.lost;
      (v.reclaim ? any_reclaim : any_priority) = true;
      if (fits_now()) {
        fits = true;
        break;
      }
    }
    // The node-level check above is resource-exact; confirm with the real search (filters, topology).
    if (fits) fits = ctx.fits(inside);
    txn.Discard();
    if (!fits) continue;
    trial.reason = any_priority ? (any_reclaim ? "priority+reclaim" : "priority") : "reclaim";
    if (!found || trial.lost_gpu_seconds < best.lost_gpu_seconds) {
      best = std::move(trial);
      found = true;
    }
  }
  if (!found) return Status::Unschedulable("evicting every eligible victim would not make room in one domain");
  result = std::move(best);
  return Status::Ok();
}

StatusOr<std::unique_ptr<Plugin>> Preemption::New(const nlohmann::json& args, const PluginContext& ctx) {
  if (Status s = plugin_args::OnlyKeys(args, {"minRuntime", "maxDomains"}); !s.ok()) return s;
  Args a;
  if (args.is_object() && args.contains("minRuntime")) {
    const auto& v = args.at("minRuntime");
    if (v.is_number_integer() && v.get<int64_t>() >= 0) {
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
