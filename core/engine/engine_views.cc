// Engine's read-mostly views and the preemption query: Explain, ExplainJson, Gauges (metrics) and
// Preempt. Same class and threading as engine.cc: every method takes Engine::mu_.
#include <algorithm>
#include <map>

#include "core/engine/engine.h"
#include "plugins/registry.h"

namespace tidal {

PreemptResult Engine::Preempt(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  PreemptResult out;
  auto gk = pod_gang_.find(uid);
  if (gk == pod_gang_.end()) return out.status = Status::Error("pod uid " + uid + " is not a known Tidal pod", "engine"), out;
  Gang& g = gangs_.at(gk->second);
  if (g.plan) return out.status = Status::Unschedulable("gang " + g.key + " already has a plan", "preemption"), out;
  const PodInfo& pod = pods_.at(uid);
  auto spec = ParsePodSchedulingSpec(pod.labels, pod.annotations, cfg_.levels);
  if (!spec.ok()) return out.status = spec.status(), out;
  auto w = GangWorkloadLocked(g, *spec, nullptr);
  if (!w) return out.status = Status::Unschedulable("gang " + g.key + " has nothing left to place", "preemption"), out;
  EnsureStateLocked();
  // A view where bound pods are running workloads: Tidal pods grouped by gang, others alone;
  // other schedulers' pods are never victims (priority max, not preemptible).
  std::vector<Node> nodes;
  for (const auto& [name, n] : nodes_) nodes.push_back(ToNode(n));
  auto built = ClusterState::Build(cfg_.levels, std::move(nodes));
  if (!built.ok()) return out.status = built.status(), out;
  ClusterState view = std::move(built).value();
  std::map<std::string, Allocation> groups;
  std::map<std::string, std::vector<std::string>> members_of;
  for (const auto& [puid, charge] : charged_) {
    const NodeId n = view.FindNode(charge.first);
    if (n == kNoNode) continue;
    const PodInfo& p = pods_.at(puid);
    auto pg = pod_gang_.find(puid);
    const bool ours = pg != pod_gang_.end();
    const std::string id = ours ? pg->second : "pod:" + p.Key();
    Allocation& a = groups[id];
    if (a.workload.id.empty()) {
      a.workload.id = id;
      a.workload.members = 0;
      a.workload.min_members = 0;
      a.start_time_s = p.creation_unix;
      a.workload.priority = ours ? p.priority : INT32_MAX;
      if (ours) {
        auto ps = ParsePodSchedulingSpec(p.labels, p.annotations, cfg_.levels);
        if (ps.ok()) {
          a.workload.preemptible = ps->preemptible;
          a.workload.queue = ps->queue;
          a.workload.checkpoint_interval_s = ps->checkpoint_interval_s;
          a.workload.workload_class = ps->workload_class;
        }
      }
    }
    a.workload.per_member.gpus = std::max(a.workload.per_member.gpus, p.request.gpus);
    a.workload.per_member.cpu_milli = std::max(a.workload.per_member.cpu_milli, p.request.cpu_milli);
    a.workload.per_member.memory_bytes = std::max(a.workload.per_member.memory_bytes, p.request.memory_bytes);
    a.workload.members++;
    a.workload.min_members++;  // bound pods of a gang are evicted whole, never shrunk
    a.start_time_s = std::min(a.start_time_s, p.creation_unix);
    auto it = std::find_if(a.assignments.begin(), a.assignments.end(), [n](const MemberAssignment& m) { return m.node == n; });
    if (it == a.assignments.end()) {
      a.assignments.push_back({n, 1});
    } else {
      it->members++;
    }
    members_of[id].push_back(puid);
  }
  // Reclaim: a group whose queue now uses more than its nominal quota runs on borrowed quota (the
  // ledger holds per-pod charges, so the plugin cannot look the group up there).
  const QueueTree& tree = ledger_.tree();
  for (auto& [id, a] : groups) {
    const int q = a.workload.queue.empty() ? -1 : tree.Find(a.workload.queue);
    if (q <= 0) continue;
    const ResVec& used = ledger_.Allocated(q);
    const ResVec& nominal = tree.Spec(q).nominal;
    for (size_t r = 0; r < used.size() && !a.borrowed; ++r) a.borrowed = used[r] > (r < nominal.size() ? nominal[r] : 0);
  }
  for (auto& [id, a] : groups) (void)view.AddRunning(std::move(a));
  for (const auto& [key, other] : gangs_) {
    if (!other.plan) continue;
    Allocation a;
    a.workload.id = "plan:" + key;
    a.workload.per_member = other.plan->per_member;
    a.workload.priority = INT32_MAX;  // plans in flight are never victims
    for (const auto& sl : other.plan->slots) {
      const NodeId n = view.FindNode(sl.node);
      if (n != kNoNode) a.assignments.push_back({n, 1});
    }
    a.workload.members = static_cast<int32_t>(a.assignments.size());
    (void)view.AddRunning(std::move(a));
  }
  // Search + PostFilter with the live profile; a placement found on the view (capacity freed
  // meanwhile) is undone: the gang simply retries.
  Decision d = sched_->ScheduleOne(view, *w, clock_());
  if (d.outcome == Outcome::kPlaced) {
    ledger_.Uncharge(w->id);
    return out.status = Status::Unschedulable("the gang fits now without preemption; retry", "preemption"), out;
  }
  if (d.preemption.victims.empty()) {
    return out.status = Status::Unschedulable("no victims: " + d.explanation, "preemption"), out;
  }
  for (const auto& v : d.preemption.victims) {
    for (const auto& puid : members_of[v]) {
      const PodInfo& p = pods_.at(puid);
      out.victims.push_back({p.uid, p.ns, p.name});
    }
  }
  out.nominated_domain = d.preemption.nominated_domain;
  out.reason = d.preemption.reason;
  out.lost_gpu_seconds = d.preemption.lost_gpu_seconds;
  if (metrics_ != nullptr) {
    metrics_->preemptions.With({out.reason}).Inc(static_cast<double>(d.preemption.victims.size()));
    metrics_->preempted_gpu_seconds.With({out.reason}).Inc(out.lost_gpu_seconds);
  }
  if (decision_log_ != nullptr) {
    decision_log_->Write({{"ts", clock_()}, {"workload", g.key}, {"outcome", "preempting"}, {"victims", d.preemption.victims},
                          {"domain", out.nominated_domain}, {"reason", out.reason}, {"lost_gpu_seconds", out.lost_gpu_seconds}});
  }
  g.last_reason = "preempting " + std::to_string(d.preemption.victims.size()) + " workload(s) in " + out.nominated_domain;
  return out;
}

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
