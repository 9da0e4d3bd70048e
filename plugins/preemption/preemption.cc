#include "plugins/preemption/preemption.h"

#include <algorithm>
#include <unordered_map>

#include "core/api/duration.h"
#include "core/state/cluster_state.h"
#include "core/state/transaction.h"
#include "plugins/args.h"

namespace tidal::plugins {
namespace {

struct Victim {
  std::string id;
  const Allocation* alloc = nullptr;
  bool borrowed = false;
  bool reclaim = false;
  int32_t priority = 0;
  double lost = 0;
  int32_t surplus = 0;  // elastic members above the minimum
};

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
  int leaf = -1;
  bool preemptor_borrowing = false;
  if (quota) {
    leaf = w.queue_id > 0 ? w.queue_id : ledger_->tree().Find(w.queue);
    if (leaf > 0) {
      const AdmissionResult a = ledger_->CheckAdmission(leaf, ledger_->tree().Request(w.per_member * c.members, w.gpu_model));
      preemptor_borrowing = a.borrowing || !a.status.ok();
    }
  }
  std::vector<Victim> victims;
  for (const auto& [id, a] : cluster.running()) {
    if (id == w.id) continue;
    const Workload& v = a.workload;
    if (now_s - a.start_time_s < args_.min_runtime_s) continue;
    // No thrash: never a victim that could preempt the preemptor back.
    if (v.priority > w.priority) continue;
    const bool by_priority = v.priority < w.priority && v.preemptible;
    const bool may_reclaim = quota && leaf > 0 && !preemptor_borrowing && v.queue != w.queue;
    if (!by_priority && !may_reclaim) continue;  // the charge lookup below is only needed past here
    bool borrowed = a.borrowed;
    if (quota && !borrowed) {
      auto ch = ledger_->charges().find(id);
      borrowed = ch != ledger_->charges().end() && ch->second.borrowed;
    }
    const bool by_reclaim = may_reclaim && borrowed;
    if (!by_priority && !by_reclaim) continue;
    if (preemptor_borrowing && !borrowed && v.queue != w.queue) continue;
    victims.push_back(Victim{id, &a, borrowed, by_reclaim && !by_priority, v.priority, WorkLost(v, a.start_time_s, now_s),
                             std::max(0, v.members - v.min_members)});
  }
  if (victims.empty()) return Status::Unschedulable("no eligible victims");
  std::sort(victims.begin(), victims.end(), [](const Victim& a, const Victim& b) {
    if (a.borrowed != b.borrowed) return a.borrowed;
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.lost != b.lost) return a.lost < b.lost;
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
  // Victims touching each domain of that level, with their GPUs there (one pass over victims).
  struct Plan {
    VertexId domain;
    std::vector<size_t> touching;
    double est_loss = 0;
  };
  std::unordered_map<VertexId, std::vector<std::pair<size_t, int64_t>>> by_domain;
  for (size_t i = 0; i < victims.size(); ++i) {
    const Allocation& a = *victims[i].alloc;
    for (const auto& as : a.assignments) {
      const VertexId d = level < 0 ? cluster.root() : cluster.AncestorAt(as.node, level);
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
  std::vector<Plan> plans;
  for (auto& [d, list] : by_domain) {
    // Victim order inside a domain follows the global order (indices are already sorted).
    std::sort(list.begin(), list.end());
    int64_t gpus = cluster.FreeGpus(d);
    Plan p{d, {}, 0};
    for (const auto& [i, here] : list) {
      p.touching.push_back(i);
      if (gpus < g * c.members) {
        gpus += here;
        p.est_loss += victims[i].lost;
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
      if (v.surplus > 0) {
        // Elastic: give back surplus members on nodes of this domain first.
        int32_t give = v.surplus;
        std::vector<MemberAssignment> kept = a.assignments;
        std::vector<ShrinkAction> shrinks;
        for (auto& as : kept) {
          if (give == 0) break;
          if (as.node < vx.node_begin || as.node >= vx.node_end) continue;
          const int32_t take = std::min(give, as.members);
          as.members -= take;
          give -= take;
          shrinks.push_back(ShrinkAction{v.id, as.node, take});
        }
        if (!shrinks.empty()) {
          kept.erase(std::remove_if(kept.begin(), kept.end(), [](const MemberAssignment& m) { return m.members == 0; }),
                     kept.end());
          Workload smaller = a.workload;
          smaller.members -= (v.surplus - give);
          if (txn.Evict(v.id).ok() && txn.Place(smaller, kept, a.start_time_s).ok()) {
            trial.shrinks.insert(trial.shrinks.end(), shrinks.begin(), shrinks.end());
            if (fits_now()) {
              fits = true;
              break;
            }
          }
        }
      }
      if (!cluster.running().count(v.id)) continue;
      if (!txn.Evict(v.id).ok()) continue;
      // A shrink already recorded for this victim is superseded by its eviction.
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
