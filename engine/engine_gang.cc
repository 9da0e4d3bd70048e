// Engine: the gang protocol behind the shim's extension points - CheckPod (PreEnqueue), Reserve,
// Unreserve, Permit, Bound (PostBind), NodeRefused (PostFilter) - and what a gang's pods make of
// it: its workload, its node constraints, its plan's expiry. Threading: every public method takes
// mu_; the *Locked functions run under it.
#include <algorithm>

#include "core/api/node.h"
#include "engine/engine.h"

namespace tidal {
namespace {

// A node's domain at `level` as text: its labels of every configured level down to `level`, or
// its name once one is missing or invalid (such a node is its own domain there and below; ToNode).
std::string DomainPath(const TopologyLevels& levels, int level, const NodeInfo& n) {
  if (level >= levels.node_level()) return "node/" + n.name;
  std::string path;
  for (int i = 0; i <= level; ++i) {
    auto v = n.labels.find(levels.levels[static_cast<size_t>(i)].label_key);
    if (v == n.labels.end() || !IsValidLabelValue(v->second)) return "node/" + n.name;
    path += v->second + "/";
  }
  return path;
}

// Narrows w's members (of `gang`) to `node`'s domain at `level`: the labels of every configured
// level down to it (ToNode's, an unlabeled node's own value included), marked as the engine's pin,
// not the pod's node selector (NodeConstraints::pinned), and at the node level the node by name.
void PinToDomain(const TopologyLevels& levels, int level, const Node& node, const std::string& gang, Workload& w) {
  auto c = w.constraints ? std::make_shared<NodeConstraints>(*w.constraints) : std::make_shared<NodeConstraints>();
  const std::string level_name = level < levels.node_level() ? levels.levels[static_cast<size_t>(level)].name : "node";
  for (int i = 0; i <= level && i < levels.node_level(); ++i) {
    const std::string& key = levels.levels[static_cast<size_t>(i)].label_key;
    if (auto v = node.labels.find(key); v != node.labels.end()) {
      c->node_selector[key] = v->second;
      c->pinned[key] = "gang " + gang + "'s " + level_name + " domain, where its running members are";
    }
  }
  if (level >= levels.node_level()) {
    const SelectorRequirement name{"metadata.name", SelectorOp::kIn, {node.name}};
    if (c->required.empty()) {
      c->required.push_back(SelectorTerm{{}, {name}});
    } else {
      for (auto& t : c->required) {
        if (!t.expressions.empty() || !t.fields.empty()) t.fields.push_back(name);  // an empty term matches nothing
      }
    }
  }
  w.constraints_sig = c->Signature();
  w.constraints = std::move(c);
}

}  // namespace

void Engine::DropPlanLocked(Gang& g) {
  if (!g.plan) return;
  ledger_.Uncharge(PlanId(g));
  if (state_) (void)state_->RemoveRunning(PlanId(g));
  g.plan.reset();
}

void Engine::ExpirePlansLocked() {
  // From the deadline index: only plans whose TTL ran out are looked at (an entry whose gang was
  // re-planned, bound or erased since is stale and skipped).
  const int64_t now = clock_();
  while (!plan_deadlines_.empty() && plan_deadlines_.begin()->first < now - cfg_.plan_ttl_s) {
    const std::string key = plan_deadlines_.begin()->second;
    const int64_t created = plan_deadlines_.begin()->first;
    plan_deadlines_.erase(plan_deadlines_.begin());
    auto it = gangs_.find(key);
    if (it == gangs_.end()) continue;
    Gang& g = it->second;
    if (!g.plan || g.plan->created_s != created) continue;
    const bool all_reserved = std::all_of(g.plan->slots.begin(), g.plan->slots.end(), [](const Slot& s) { return s.reserved; });
    if (all_reserved) continue;
    DropPlanLocked(g);
    g.last_reason = "plan expired after " + std::to_string(cfg_.plan_ttl_s) + "s before every member was reserved";
  }
  ExpireHoldsLocked();  // preemption holds (engine_preempt.cc)
}

std::string Engine::GangKeyLocked(const PodInfo& p, PodSchedulingSpec* spec, Status* st) const {
  if (!p.spec_error.ok()) {
    *st = p.spec_error;
    return {};
  }
  const auto& parsed = SpecLocked(p);
  if (!parsed.ok()) {
    *st = parsed.status();
    return {};
  }
  *spec = *parsed;
  *st = Status::Ok();
  return podkeys::GangKeyOf(p.ns, p.name, spec->gang);
}

Status Engine::CheckPod(const std::string& uid, std::string* gang) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return Status::Unschedulable("pod is not synced to the engine yet", "engine");
  PodSchedulingSpec spec;
  Status st;
  const std::string key = GangKeyLocked(it->second, &spec, &st);
  if (!st.ok()) return st;
  *gang = key;
  auto g = gangs_.find(key);
  // Members that disagree on a key that shapes the gang (engine_plan.cc kGangFields): refused until they agree (a spec error).
  if (g != gangs_.end() && !g->second.summary.conflict.empty()) return Status::Unresolvable(g->second.summary.conflict, "podspec");
  std::string why = GangIncompleteWhy(key, g == gangs_.end() ? nullptr : &g->second, spec.gang_min);
  return why.empty() ? Status::Ok() : Status::Wait(why, "gang");
}

std::string GangIncompleteWhy(const std::string& key, const EngineGang* g, int32_t gang_min) {
  // Its pods, less those being replaced (Summary::gone) and those held back by scheduling gates
  // (Summary::gated), and the members of this run that finished and left (finished_starts).
  const int32_t gated = g == nullptr ? 0 : g->summary.gated;
  const int32_t have =
      g == nullptr ? 0 : static_cast<int32_t>(g->pods.size() + g->finished_starts.size()) - g->summary.gone - gated;
  if (have >= gang_min) return {};
  std::string why = "gang " + key + ": " + std::to_string(have) + " of " + std::to_string(gang_min) + " members exist";
  if (gated > 0) {
    why += ", " + std::to_string(gated) + " more held back by spec.schedulingGates (" + g->summary.gated_example +
           ": placed once its gates are removed)";
  }
  return why;
}

Status Engine::Reserve(const std::string& uid, const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  auto gk = pod_gang_.find(uid);
  if (gk == pod_gang_.end()) return Status::Error("pod uid " + uid + " is not a known Tidal pod", "engine");
  Gang& g = gangs_.at(gk->second);
  if (!g.plan) return Status::Error("gang " + g.key + " has no plan (released, expired or engine restarted)", "engine");
  for (auto& s : g.plan->slots) {
    if (s.pod_uid != uid) continue;
    if (s.node != node) {
      return Status::Error("pod is planned on " + s.node + " but was reserved on " + node, "engine");
    }
    s.reserved = true;
    return Status::Ok();
  }
  return Status::Error("gang " + g.key + ": pod holds no slot in the plan", "engine");
}

std::vector<PodRefInfo> Engine::Unreserve(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PodRefInfo> released;
  auto gk = pod_gang_.find(uid);
  if (gk == pod_gang_.end()) return released;
  Gang& g = gangs_.at(gk->second);
  if (!g.plan) return released;
  // A pod that holds no slot of the current plan is unreserving an earlier plan (dropped and
  // planned again since, e.g. the shim's delayed Unreserve of a member rejected from Permit): the
  // current plan is not its to release.
  if (std::none_of(g.plan->slots.begin(), g.plan->slots.end(), [&](const Slot& s) { return s.pod_uid == uid; })) {
    return released;
  }
  for (const auto& s : g.plan->slots) {
    if (s.pod_uid.empty() || s.pod_uid == uid) continue;
    const auto& p = pods_.at(s.pod_uid);
    released.push_back({p.uid, p.ns, p.name});
  }
  DropPlanLocked(g);
  auto p = pods_.find(uid);
  g.last_reason = "plan released: member " + (p == pods_.end() ? uid : p->second.name) + " was unreserved";
  return released;
}

PermitResult Engine::Permit(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  PermitResult r;
  auto gk = pod_gang_.find(uid);
  if (gk == pod_gang_.end()) return r.status = Status::Error("pod uid " + uid + " is not a known Tidal pod", "engine"), r;
  Gang& g = gangs_.at(gk->second);
  if (!g.plan) return r.status = Status::Unschedulable("gang " + g.key + " has no plan (released or expired)", "gang"), r;
  const auto& slots = g.plan->slots;
  const auto reserved = std::count_if(slots.begin(), slots.end(), [](const Slot& s) { return s.reserved; });
  if (static_cast<size_t>(reserved) < slots.size()) {
    r.status = Status::Wait("gang " + g.key + ": " + std::to_string(reserved) + " of " + std::to_string(slots.size()) +
                                " members reserved",
                            "gang");
    r.wait_timeout_ms = cfg_.permit_timeout_ms;
    return r;
  }
  for (const auto& s : slots) {
    const auto& p = pods_.at(s.pod_uid);
    r.allow.push_back({p.uid, p.ns, p.name});
  }
  return r;
}

Status Engine::Bound(const std::string& uid, const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return Status::Error("pod uid " + uid + " is not known", "engine");
  if (auto gk = pod_gang_.find(uid); gk != pod_gang_.end() && metrics_ != nullptr) {
    Gang& g = gangs_.at(gk->second);
    if (!g.start_observed && g.plan) {
      g.start_observed = true;
      int64_t first = INT64_MAX;
      for (const auto& u : g.pods) first = std::min(first, pods_.at(u).creation_unix);
      const auto& spec = SpecLocked(it->second);
      if (spec.ok() && first != INT64_MAX) {
        const int64_t gpus = g.plan->per_member.gpus * static_cast<int64_t>(g.plan->slots.size());
        metrics_->time_to_start.With({MetricQueueLocked(spec->queue), std::string(WorkloadClassName(spec->workload_class)), SizeBucket(gpus)})
            .Observe(static_cast<double>(std::max<int64_t>(0, clock_() - first)));
      }
    }
  }
  it->second.node_name = node;
  if (auto gk = pod_gang_.find(uid); gk != pod_gang_.end()) ReindexGangLocked(gk->second);
  auto charged = charged_.find(uid);
  if (charged == charged_.end() || charged->second.first != node) {
    ReleaseBoundLocked(uid);
    ApplyBoundLocked(it->second);
  }
  return Status::Ok();
}

std::optional<Workload> Engine::GangWorkloadLocked(const Gang& g, const PodSchedulingSpec& spec, int32_t* bound_out) const {
  const Gang::Summary& s = g.summary;  // kept by ReindexGangLocked
  // Started members: those bound now and those of this run that already finished (Summary).
  const int32_t bound = s.bound + s.finished, pending = s.pending;
  if (bound_out != nullptr) *bound_out = bound;
  const int32_t need = spec.gang_size - bound;
  if (need <= 0 || pending == 0) return std::nullopt;
  Workload w;
  w.id = PlanId(g);
  w.queue = spec.queue;
  w.queue_id = ledger_.tree().Find(spec.queue);
  w.home_pool = HomePoolLocked(spec.queue);
  w.workload_class = spec.workload_class;
  w.members = need;
  // An elastic gang at or above its minimum grows by at least elastic_grow_min_members at once
  // (fewer only when fewer complete it): each growth restarts its workers.
  w.min_members = bound >= spec.gang_min ? std::min(need, std::max<int32_t>(1, cfg_.elastic_grow_min_members))
                                         : std::clamp(spec.gang_min - bound, 1, need);
  w.arrived_members = pending;
  w.per_member = s.per_member;
  w.priority = s.priority;
  w.preemptible = spec.preemptible;
  w.runtime_limit_s = spec.runtime_limit_s;
  w.checkpoint_interval_s = spec.checkpoint_interval_s;
  w.submit_time_s = s.submitted;
  w.required_level = spec.required_level;
  w.preferred_level = spec.preferred_level;
  w.gpu_model = spec.gpu_model;
  w.front_door = g.door;
  AttachConstraintsLocked(g, w);
  PinExclusiveDomainLocked(g, w);  // exclusive topology (engine_exclusive.cc)
  // The rest of a gang that runs in part (an elastic gang growing, a lost member's replacement, a
  // gang an earlier scheduler bound in part) goes into the required domain its running members
  // are in: the level is the whole gang's, not each plan's. The domain of most of them.
  if (const int level = cfg_.levels.Find(spec.required_level); level >= 0 && s.bound > 0) {
    std::map<std::string, std::pair<int32_t, const NodeInfo*>> domains;  // path -> members there, a node
    for (const auto& u : g.pods) {
      const PodInfo& p = pods_.at(u);
      if (!p.UsesCapacity() || p.terminating) continue;
      if (auto n = nodes_.find(p.node_name); n != nodes_.end()) {
        auto& d = domains[DomainPath(cfg_.levels, level, n->second)];
        d.first += 1;
        if (d.second == nullptr) d.second = &n->second;
      }
    }
    const std::pair<int32_t, const NodeInfo*>* home = nullptr;
    for (const auto& [path, d] : domains) home = home == nullptr || d.first > home->first ? &d : home;
    if (home != nullptr) PinToDomain(cfg_.levels, level, ToNode(*home->second), g.key, w);
  }
  return w;
}

void Engine::AttachConstraintsLocked(const Gang& g, Workload& w) const {
  // The members' node constraints: the nodes every pending member may use (Gang::Summary,
  // engine_gang_constraints.h), less the nodes the front door refused for the gang.
  std::shared_ptr<const NodeConstraints> base = g.summary.constraints;
  const int64_t now = clock_();
  const bool excluding = std::any_of(g.excluded.begin(), g.excluded.end(), [now](const auto& e) { return e.second > now; });
  if (!excluding) {
    w.constraints = std::move(base);
    w.constraints_sig = g.summary.constraints_sig;
    return;
  }
  auto c = base ? std::make_shared<NodeConstraints>(*base) : std::make_shared<NodeConstraints>();
  for (const auto& [node, until] : g.excluded) {
    if (until > now) c->excluded_nodes.insert(node);
  }
  w.constraints_sig = c->Signature();
  w.constraints = std::move(c);
}

Status Engine::NodeRefused(const std::string& uid, const std::string& node, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  auto gk = pod_gang_.find(uid);
  if (gk == pod_gang_.end()) return Status::Error("pod uid " + uid + " is not a known Tidal pod", "engine");
  if (node.empty()) return Status::Error("node_name: must be set", "engine");
  Gang& g = gangs_.at(gk->second);
  const int64_t now = clock_();
  for (auto it = g.excluded.begin(); it != g.excluded.end();) it = it->second <= now ? g.excluded.erase(it) : std::next(it);
  g.excluded[node] = now + cfg_.exclusion_ttl_s;
  DropPlanLocked(g);
  g.last_reason = "plan dropped: kube-scheduler refused planned node " + node + (why.empty() ? "" : " (" + why + ")") +
                  "; excluded for " + std::to_string(cfg_.exclusion_ttl_s) + "s";
  return Status::Ok();
}

}  // namespace tidal
