// Engine's read-mostly views: Explain, ExplainJson, Gauges (metrics). Same class and threading as
// engine.cc: every method takes Engine::mu_. (Preempt lives in engine_preempt.cc.)
#include <algorithm>
#include <map>

#include "core/engine/engine.h"
#include "plugins/registry.h"

namespace tidal {

std::string Engine::GangKeyForLocked(const std::string& name, const PodInfo** lone_pod) const {
  if (gangs_.count(name)) return name;
  for (const auto& [uid, p] : pods_) {
    if (p.Key() != name) continue;
    auto g = pod_gang_.find(uid);
    if (g != pod_gang_.end()) return g->second;
    if (lone_pod != nullptr) *lone_pod = &p;  // a pod Tidal does not schedule
    return "";
  }
  return name;
}

StatusOr<nlohmann::json> Engine::ExplainJson(const std::string& name) {
  std::string text;
  if (Status s = Explain(name, &text); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = GangKeyForLocked(name, nullptr);
  nlohmann::json j{{"workload", key}, {"text", text}};
  auto git = gangs_.find(key);
  if (git == gangs_.end()) return j;
  const Gang& gang = git->second;
  const PodInfo& any = pods_.at(*gang.pods.begin());
  auto spec = ParsePodSchedulingSpec(any.labels, any.annotations, cfg_.levels);
  if (!spec.ok()) {
    j["state"] = "invalid";
    j["reason"] = spec.status().Message();
    return j;
  }
  int32_t bound = 0, pending = 0;
  for (const auto& u : gang.pods) (pods_.at(u).UsesCapacity() ? bound : pending)++;
  j["queue"] = spec->queue;
  j["class"] = std::string(WorkloadClassName(spec->workload_class));
  j["members"] = {{"size", spec->gang_size}, {"min", spec->gang_min}, {"pending", pending}, {"bound", bound}};
  j["last"] = gang.last_reason;
  if (auto r = book_->find(PlanId(gang)); r != book_->end()) {
    j["reservation"] = {{"start_unix", r->second.start_s}, {"nodes", r->second.assignments.size()}};
  }
  const int q = ledger_.tree().Find(spec->queue);
  j["quota"] = q > 0 ? ledger_.Describe(q) : "queue " + spec->queue + " is not configured";
  if (gang.plan) {
    j["state"] = "planned";
    j["domain"] = gang.plan->domain;
    return j;
  }
  if (bound >= spec->gang_size) {
    j["state"] = "running";
    return j;
  }
  j["state"] = "pending";
  // Position and ETA: one dry-run cycle over every pending gang on copies of the cluster and the
  // ledger (nothing of the live state changes).
  EnsureStateLocked();
  PruneBookLocked();
  std::vector<Workload> pending_ws = PendingGangWorkloadsLocked();
  ClusterState dry = TimelineLocked();  // bound pods end at their expected end
  QuotaLedger dry_ledger = ledger_;
  ProfileSpec ps = cfg_.profile;
  if (ps.backfill.depth >= 0) ps.backfill.depth = -1;  // every pending gang gets an ETA
  const Registry registry = plugins::DefaultRegistry();
  auto profile = Profile::Build(ps, registry, PluginContext{cfg_.levels, &dry_ledger});
  if (!profile.ok()) return j;
  SchedulerOptions opts;
  opts.reservations = std::make_shared<std::map<std::string, Reservation>>(*book_);  // kept ones, on a copy
  Scheduler dry_sched(std::move(profile).value(), std::move(opts));
  CycleResult cr = dry_sched.RunCycle(dry, pending_ws, clock_());
  j["queue_length"] = cr.decisions.size();
  for (size_t i = 0; i < cr.decisions.size(); ++i) {
    const Decision& d = cr.decisions[i];
    if (d.workload_id != PlanId(gang)) continue;
    j["position"] = i + 1;
    j["would"] = std::string(OutcomeName(d.outcome));
    j["why"] = d.explanation;
    if (d.outcome == Outcome::kPlaced) {
      j["eta_unix"] = clock_();
    } else if (d.eta_s >= 0) {
      j["eta_unix"] = d.eta_s;
    } else {
      j["eta_unix"] = nullptr;
    }
  }
  return j;
}

Status Engine::Explain(const std::string& name, std::string* text) {
  std::lock_guard<std::mutex> lock(mu_);
  const PodInfo* lone = nullptr;
  const std::string key = GangKeyForLocked(name, &lone);
  if (lone != nullptr) {
    *text = "pod " + name + (lone->node_name.empty() ? " is pending" : " is bound to " + lone->node_name) +
            " and is not scheduled by " + cfg_.scheduler_name;
    return Status::Ok();
  }
  auto g = gangs_.find(key);
  if (g == gangs_.end()) return Status::Error("no gang or pod named " + name, "engine");
  int32_t bound = 0, pending = 0;
  for (const auto& u : g->second.pods) (pods_.at(u).UsesCapacity() ? bound : pending)++;
  std::string t = "gang " + key + ": " + std::to_string(pending) + " pending, " + std::to_string(bound) + " bound\n";
  if (g->second.plan) {
    const auto& pl = *g->second.plan;
    const auto reserved = std::count_if(pl.slots.begin(), pl.slots.end(), [](const Slot& s) { return s.reserved; });
    t += "plan: " + pl.domain + ", " + std::to_string(pl.slots.size()) + " slots, " + std::to_string(reserved) +
         " reserved: " + pl.explanation + "\n";
  }
  t += "last: " + g->second.last_reason + "\n";
  if (std::string r = ReservedStartLocked(PlanId(g->second)); !r.empty()) t += "reservation: " + r + "\n";
  if (!g->second.pods.empty()) {
    const PodInfo& any = pods_.at(*g->second.pods.begin());
    auto spec = ParsePodSchedulingSpec(any.labels, any.annotations, cfg_.levels);
    if (spec.ok()) {
      const int q = ledger_.tree().Find(spec->queue);
      t += "quota: " + (q > 0 ? ledger_.Describe(q) : "queue " + spec->queue + " is not configured") + "\n";
    }
  }
  *text = t;
  return Status::Ok();
}

EngineGauges Engine::Gauges() {
  std::lock_guard<std::mutex> lock(mu_);
  EnsureStateLocked();
  ledger_.Advance(clock_());
  EngineGauges out;
  // GPUs by state and pool: allocated to bound pods, reserved by plans, idle, unhealthy.
  std::map<std::pair<std::string, std::string>, double> gpus;
  int64_t reserved_total = 0;
  for (const auto& [key, g] : gangs_) {
    if (g.plan) reserved_total += g.plan->per_member.gpus * static_cast<int64_t>(g.plan->slots.size());
  }
  for (NodeId n = 0; n < state_->node_count(); ++n) {
    const Node& node = state_->node(n);
    const std::string pool(PoolName(node.pool));
    if (!node.Schedulable()) {
      gpus[{"unhealthy", pool}] += static_cast<double>(node.capacity.gpus);
      continue;
    }
    gpus[{"allocated", pool}] += static_cast<double>(std::min(node.capacity.gpus, node.allocated.gpus));
    gpus[{"idle", pool}] += static_cast<double>(std::max<int64_t>(0, node.FreeGpus()));
  }
  // Plans are held as allocations in the state: move their GPUs from allocated to reserved.
  if (reserved_total > 0) {
    gpus[{"allocated", "kubernetes"}] -= static_cast<double>(reserved_total);
    gpus[{"reserved", "kubernetes"}] += static_cast<double>(reserved_total);
  }
  for (const char* st : {"allocated", "idle", "reserved", "perishable", "unhealthy"}) gpus[{st, "kubernetes"}] += 0;
  for (const auto& [k, v] : gpus) out.gpus.push_back({{k.first, k.second}, v});
  // Pending gangs by queue and class; smallest pending member shape for fragmentation.
  std::map<std::pair<std::string, std::string>, double> pending;
  std::map<std::string, double> reserved_by_queue;  // pending gangs holding a backfill reservation
  PruneBookLocked();
  int64_t smallest = INT64_MAX;
  for (const auto& [key, g] : gangs_) {
    if (g.plan) continue;
    bool any_pending = false;
    const PodInfo* sample = nullptr;
    for (const auto& u : g.pods) {
      const PodInfo& p = pods_.at(u);
      if (!p.UsesCapacity() && p.node_name.empty()) {
        any_pending = true;
        sample = &p;
        if (p.request.gpus > 0) smallest = std::min(smallest, p.request.gpus);
      }
    }
    if (!any_pending) continue;
    auto spec = ParsePodSchedulingSpec(sample->labels, sample->annotations, cfg_.levels);
    if (!spec.ok()) continue;
    pending[{spec->queue, std::string(WorkloadClassName(spec->workload_class))}] += 1;
    if (book_->count(PlanId(g))) reserved_by_queue[spec->queue] += 1;
  }
  for (const auto& [k, v] : pending) out.pending.push_back({{k.first, k.second}, v});
  for (const auto& [q, v] : reserved_by_queue) out.reservations.push_back({{q}, v});
  std::map<std::string, int64_t> missing;  // level -> nodes without its label (own domains)
  for (const auto& l : cfg_.levels.levels) missing[l.name] = 0;
  for (const auto& [name, n] : nodes_) {
    for (const auto& l : MissingLevels(n)) ++missing[l];
  }
  for (const auto& [l, v] : missing) out.missing_topology.push_back({{l}, static_cast<double>(v)});
  if (smallest != INT64_MAX) {
    for (const auto& node : state_->nodes()) {
      const int64_t f = node.FreeGpus();
      if (f > 0 && f < smallest) out.unusable_free_gpus += static_cast<double>(f);
    }
  }
  // Largest whole-node gang placeable now, per level.
  const int64_t g8 = std::max<int64_t>(1, state_->max_gpus_per_node());
  for (int l = 0; l < state_->levels().node_level(); ++l) {
    auto [b, e] = state_->LevelRange(l);
    int64_t best = 0;
    for (VertexId v = b; v < e; ++v) best = std::max(best, state_->MemberCapacity(v, g8));
    out.largest_gang.push_back({{state_->levels().Name(l)}, static_cast<double>(best * g8)});
  }
  // Queues.
  const QueueTree& t = ledger_.tree();
  for (int q = 1; q < t.size(); ++q) {
    for (int r = 0; r < t.resources(); ++r) {
      const std::string& rn = t.config().resources[static_cast<size_t>(r)];
      out.queue_usage.push_back({{t.Name(q), rn}, static_cast<double>(ledger_.Allocated(q)[static_cast<size_t>(r)])});
      const int64_t nom = t.Spec(q).nominal[static_cast<size_t>(r)];
      if (nom < kUnlimited) out.queue_nominal.push_back({{t.Name(q), rn}, static_cast<double>(nom)});
      out.queue_borrowed.push_back({{t.Name(q), rn}, static_cast<double>(ledger_.Borrowed(q)[static_cast<size_t>(r)])});
    }
    out.fair_share.push_back({{t.Name(q)}, ledger_.Share(q)});
  }
  return out;
}

}  // namespace tidal
