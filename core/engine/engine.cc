#include "core/engine/engine.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "plugins/registry.h"

namespace tidal {

namespace {

std::string RandomEpoch() {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 16; ++i) s += kHex[rng() % 16];
  return s;
}

bool SameNode(const NodeInfo& a, const NodeInfo& b) {
  return a.labels == b.labels && a.capacity == b.capacity && a.ready == b.ready &&
         a.unschedulable == b.unschedulable && a.gpu_model == b.gpu_model && a.taints == b.taints;
}

// A valid label value that no labelled node has: the node's own domain at a level it lacks.
std::string OwnDomainValue(const std::string& node) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : node) h = (h ^ c) * 1099511628211ULL;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s = "unlabeled-";
  for (int i = 0; i < 12; ++i) s += kHex[(h >> (4 * i)) & 15];
  return s;
}

}  // namespace

StatusOr<std::unique_ptr<Engine>> Engine::Create(EngineConfig cfg, Clock clock) {
  auto tree = QueueTree::Build(cfg.queues);
  if (!tree.ok()) return tree.status();
  if (!clock) {
    clock = [] {
      // Wall clock: the ledger's state file must stay meaningful across restarts.
      return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
  std::unique_ptr<Engine> e(new Engine(std::move(cfg), std::move(clock), *tree));
  std::lock_guard<std::mutex> lock(e->mu_);
  if (Status s = e->BuildSchedulerLocked(); !s.ok()) return s;
  return e;
}

Engine::Engine(EngineConfig cfg, Clock clock, std::shared_ptr<const QueueTree> tree)
    : cfg_(std::move(cfg)), clock_(std::move(clock)), epoch_(RandomEpoch()), ledger_(std::move(tree)) {}

Status Engine::BuildSchedulerLocked() {
  const Registry registry = plugins::DefaultRegistry();
  auto profile = Profile::Build(cfg_.profile, registry, PluginContext{cfg_.levels, &ledger_});
  if (!profile.ok()) return profile.status();
  sched_ = std::make_unique<Scheduler>(std::move(profile).value());
  book_->clear();
  return Status::Ok();
}

Status Engine::Reconfigure(const EngineConfig& cfg) {
  std::lock_guard<std::mutex> lock(mu_);
  auto tree = QueueTree::Build(cfg.queues);
  if (!tree.ok()) return tree.status();
  for (auto& [key, g] : gangs_) DropPlanLocked(g);
  const bool levels_changed = cfg.levels.Accepted() != cfg_.levels.Accepted();
  cfg_ = cfg;
  ledger_.Reconfigure(*tree);
  if (levels_changed) state_.reset();
  return BuildSchedulerLocked();
}

std::string Engine::SaveLedger() {
  std::lock_guard<std::mutex> lock(mu_);
  ledger_.Advance(clock_());
  return ledger_.SaveState();
}

Status Engine::LoadLedger(const std::string& json) {
  std::lock_guard<std::mutex> lock(mu_);
  Status s = ledger_.LoadState(json);
  // Usage decays over the time the engine was down (nothing was integrated meanwhile).
  if (s.ok()) ledger_.Advance(clock_());
  return s;
}

std::string Engine::DescribeQueues() {
  std::lock_guard<std::mutex> lock(mu_);
  ledger_.Advance(clock_());
  std::string out;
  const QueueTree& t = ledger_.tree();
  for (int q = 1; q < t.size(); ++q) {
    if (t.IsLeaf(q)) out += ledger_.Describe(q) + "; share " + std::to_string(ledger_.Share(q)) + "\n";
  }
  return out.empty() ? "no queues configured\n" : out;
}

Node Engine::ToNode(const NodeInfo& in) const {
  Node n;
  n.name = in.name;
  n.labels = in.labels;
  // A node without a level's label (a CPU node, a new rack) is its own domain at that level (and
  // below): it never shares a domain with strangers, so it cannot help satisfy a required level
  // together with other nodes (see MissingLevelsLocked for the warning and the metric).
  bool missing = false;
  for (const auto& l : cfg_.levels.levels) {
    auto it = n.labels.find(l.label_key);
    missing = missing || it == n.labels.end() || !IsValidLabelValue(it->second);
    if (missing) n.labels[l.label_key] = OwnDomainValue(in.name);
  }
  n.capacity = in.capacity;
  n.gpu_model = in.gpu_model;
  n.taints = in.taints;
  n.health = !in.ready ? NodeHealth::kUnhealthy : in.unschedulable ? NodeHealth::kCordoned : NodeHealth::kReady;
  n.pool = Pool::kKubernetes;
  if (auto it = in.labels.find(cfg_.pool_label); it != in.labels.end()) {
    if (auto p = ParsePool(it->second, cfg_.pool_label); p.ok()) n.pool = *p;
  }
  return n;
}

void Engine::EnsureStateLocked() {
  if (state_) return;
  std::vector<Node> nodes;
  nodes.reserve(nodes_.size());
  for (const auto& [name, n] : nodes_) nodes.push_back(ToNode(n));
  auto built = ClusterState::Build(cfg_.levels, std::move(nodes));
  if (!built.ok()) {
    // Cannot happen for sanitised labels and unique names; keep an empty cluster rather than crash.
    built = ClusterState::Build(cfg_.levels, {});
  }
  state_ = std::move(built).value();
  pview_.reset();     // preemption view: same NodeIds as state_, rebuilt with it (engine_preempt.cc)
  RemapBookLocked();  // its NodeIds were those of the old state
  ResVec capacity(static_cast<size_t>(ledger_.tree().resources()), 0);
  for (const auto& n : state_->nodes()) {
    const ResVec c = ledger_.tree().Request(n.capacity, n.gpu_model);
    for (size_t i = 0; i < c.size(); ++i) capacity[i] += c[i];
  }
  ledger_.SetCapacity(std::move(capacity));
  for (const auto& [uid, charge] : charged_) {
    const NodeId n = state_->FindNode(charge.first);
    if (n != kNoNode) state_->Allocate(n, charge.second);
  }
  for (auto& [key, g] : gangs_) {
    if (!g.plan) continue;
    Allocation a;
    a.workload.id = PlanId(g);
    a.workload.per_member = g.plan->per_member;
    bool lost_node = false;
    for (const auto& s : g.plan->slots) {
      const NodeId n = state_->FindNode(s.node);
      if (n == kNoNode) {
        lost_node = true;
        break;
      }
      auto it = std::find_if(a.assignments.begin(), a.assignments.end(), [n](const MemberAssignment& m) { return m.node == n; });
      if (it == a.assignments.end()) {
        a.assignments.push_back({n, 1});
      } else {
        it->members++;
      }
    }
    if (lost_node) {
      ledger_.Uncharge(PlanId(g));  // a re-plan charges again
      g.plan.reset();
      g.last_reason = "plan dropped: a planned node left the cluster";
      continue;
    }
    if (!a.assignments.empty()) (void)state_->AddRunning(std::move(a));
  }
}

void Engine::ChargePodLocked(const PodInfo& p, bool borrowed) {
  // Bound pods are charged to their queue whoever scheduled them, if they name one (Tidal pods
  // always have one: "default" unless labelled).
  const bool ours = p.scheduler_name == cfg_.scheduler_name;
  if (!ours && !p.labels.count(kLabelQueue) && !p.annotations.count(kLabelQueue)) return;
  auto spec = ParsePodSchedulingSpec(p.labels, p.annotations, cfg_.levels);
  if (!spec.ok()) return;
  const int q = ledger_.tree().Find(spec->queue);
  if (q <= 0 || !ledger_.tree().IsLeaf(q)) return;
  (void)ledger_.Charge(p.uid, q, ledger_.tree().Request(p.request, NodeModelLocked(p.node_name)), borrowed);
}

std::string Engine::NodeModelLocked(const std::string& node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? std::string() : it->second.gpu_model;
}

void Engine::ApplyBoundLocked(const PodInfo& p) {
  bool borrowed = false;
  if (auto g = pod_gang_.find(p.uid); g != pod_gang_.end()) {
    auto gi = gangs_.find(g->second);
    if (gi != gangs_.end() && gi->second.plan) {
      auto& slots = gi->second.plan->slots;
      auto s = std::find_if(slots.begin(), slots.end(), [&](const Slot& x) { return x.pod_uid == p.uid; });
      if (s != slots.end()) {
        // The slot's capacity and quota charge become the pod's own charges below.
        const std::string plan_id = PlanId(gi->second);
        if (state_) (void)state_->ReleaseMembers(plan_id, state_->FindNode(s->node), 1);
        auto ch = ledger_.charges().find(plan_id);
        if (ch != ledger_.charges().end()) {
          borrowed = ch->second.borrowed;
          ledger_.Reduce(plan_id, ledger_.tree().Request(gi->second.plan->per_member, NodeModelLocked(s->node)));
        }
        slots.erase(s);
        if (slots.empty()) {
          ledger_.Uncharge(plan_id);
          gi->second.plan.reset();
        }
      }
    }
  }
  ChargePodLocked(p, borrowed);
  charged_[p.uid] = {p.node_name, p.request};
  if (!bound_since_.count(p.uid)) {
    BoundSince b;
    b.since_s = clock_();
    if (auto sp = ParsePodSchedulingSpec(p.labels, p.annotations, cfg_.levels); sp.ok()) {
      b.runtime_limit_s = sp->runtime_limit_s;
      b.workload_class = sp->workload_class;
      b.queue = sp->queue;
    }
    bound_since_[p.uid] = b;
  }
  if (state_) {
    const NodeId n = state_->FindNode(p.node_name);
    if (n != kNoNode) state_->Allocate(n, p.request);
  }
  MarkPreemptViewLocked(p.uid);  // regrouped in the preemption view (engine_preempt.cc)
}

void Engine::ReleaseBoundLocked(const std::string& uid) {
  MarkPreemptViewLocked(uid);  // regrouped in the preemption view (engine_preempt.cc)
  ledger_.Uncharge(uid);
  bound_since_.erase(uid);
  auto it = charged_.find(uid);
  if (it == charged_.end()) return;
  if (state_) {
    const NodeId n = state_->FindNode(it->second.first);
    if (n != kNoNode) state_->Release(n, it->second.second);
  }
  charged_.erase(it);
}

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
  auto parsed = ParsePodSchedulingSpec(p.labels, p.annotations, cfg_.levels);
  if (!parsed.ok()) {
    *st = parsed.status();
    return {};
  }
  *spec = *parsed;
  *st = Status::Ok();
  return spec->gang.empty() ? p.ns + "/pod/" + p.name : p.ns + "/" + spec->gang;
}

Status Engine::UpsertPodLocked(const PodInfo& p) {
  if (p.uid.empty()) return Status::Error("pod " + p.Key() + ": uid: must not be empty");
  if (p.name.empty()) return Status::Error("pod uid " + p.uid + ": name: must not be empty");
  if (p.request.AnyNegative()) return Status::Error("pod " + p.Key() + ": request: must not be negative");
  auto charged = charged_.find(p.uid);
  if (charged != charged_.end() && p.node_name.empty() && p.phase == PodPhase::kPending) {
    // A pod is never unbound: an update without a node for a pod the engine knows bound (by Bound
    // from PostBind, or an earlier update) is stale, sent before the binding reached the
    // informer. Keep the binding and its charge.
    PodInfo kept = p;
    kept.node_name = charged->second.first;
    pods_[p.uid] = std::move(kept);
    return Status::Ok();
  }
  pods_[p.uid] = p;
  if (p.UsesCapacity()) {
    if (charged == charged_.end() || charged->second.first != p.node_name || !(charged->second.second == p.request)) {
      ReleaseBoundLocked(p.uid);
      ApplyBoundLocked(p);
    }
    // Run time counts from the start the kubelet reports once there is one (an image pull is not
    // run time), also for pods the engine first sees after a restart.
    if (auto b = bound_since_.find(p.uid); b != bound_since_.end() && p.start_unix > 0) b->second.since_s = p.start_unix;
  } else if (charged != charged_.end()) {
    ReleaseBoundLocked(p.uid);
  }
  MarkPreemptViewLocked(p.uid);  // start time, terminating, labels of a bound pod (engine_preempt.cc)
  if (p.scheduler_name != cfg_.scheduler_name) return Status::Ok();
  PodSchedulingSpec spec;
  Status st;
  const std::string key = GangKeyLocked(p, &spec, &st);
  auto old = pod_gang_.find(p.uid);
  if (old != pod_gang_.end() && old->second != key) {
    auto g = gangs_.find(old->second);
    if (g != gangs_.end()) {
      g->second.pods.erase(p.uid);
      DropPlanLocked(g->second);
      if (g->second.pods.empty()) {
        UnindexGangLocked(g->second);
        gangs_.erase(g);
      } else {
        ReindexGangLocked(old->second);
      }
    }
    pod_gang_.erase(old);
  }
  if (!st.ok()) return Status::Ok();  // reported to the pod through CheckPod / PlanPod
  pod_gang_[p.uid] = key;
  Gang& g = gangs_[key];
  g.key = key;
  g.pods.insert(p.uid);
  ReindexGangLocked(key);
  return Status::Ok();
}

void Engine::DeletePodLocked(const std::string& uid) {
  ReleaseBoundLocked(uid);
  if (auto it = pod_gang_.find(uid); it != pod_gang_.end()) {
    auto g = gangs_.find(it->second);
    if (g != gangs_.end()) {
      g->second.pods.erase(uid);
      if (g->second.plan) {
        const auto& slots = g->second.plan->slots;
        if (std::any_of(slots.begin(), slots.end(), [&](const Slot& s) { return s.pod_uid == uid; })) {
          DropPlanLocked(g->second);
          g->second.last_reason = "plan dropped: a planned member was deleted";
        }
      }
      if (g->second.pods.empty()) {
        UnindexGangLocked(g->second);
        gangs_.erase(g);
      } else {
        ReindexGangLocked(it->second);
      }
    }
    pod_gang_.erase(it);
  }
  pods_.erase(uid);
}

Status Engine::Sync(const SyncBatch& b, uint64_t* generation) {
  std::lock_guard<std::mutex> lock(mu_);
  Status result;
  ledger_.Advance(clock_());
  if (b.resync) {
    for (const auto& [uid, c] : charged_) ledger_.Uncharge(uid);
    for (const auto& [key, g] : gangs_) ledger_.Uncharge(PlanId(g));
    nodes_.clear();
    pods_.clear();
    pod_gang_.clear();
    gangs_.clear();
    pending_by_queue_.clear();
    charged_.clear();
    state_.reset();
    synced_ = true;
  }
  for (const auto& n : b.upsert_nodes) {
    if (n.name.empty()) {
      result = Status::Error("node: name: must not be empty");
      continue;
    }
    if (n.capacity.AnyNegative()) {
      result = Status::Error("node " + n.name + ": capacity: must not be negative");
      continue;
    }
    auto it = nodes_.find(n.name);
    if (it != nodes_.end() && SameNode(it->second, n)) continue;
    nodes_[n.name] = n;
    state_.reset();
  }
  for (const auto& name : b.delete_nodes) {
    if (nodes_.erase(name) > 0) state_.reset();
  }
  for (const auto& p : b.upsert_pods) {
    if (Status s = UpsertPodLocked(p); !s.ok()) result = s;
  }
  for (const auto& uid : b.delete_pods) DeletePodLocked(uid);
  if (b.resync) {
    // Bound times survive a resync for pods still bound; the others are gone.
    for (auto it = bound_since_.begin(); it != bound_since_.end();) {
      it = charged_.count(it->first) ? std::next(it) : bound_since_.erase(it);
    }
  }
  ExpirePlansLocked();
  *generation = ++generation_;
  return result;
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
  const int32_t have = g == gangs_.end() ? 0 : static_cast<int32_t>(g->second.pods.size());
  if (have < spec.gang_min) {
    return Status::Wait("gang " + key + ": " + std::to_string(have) + " of " + std::to_string(spec.gang_min) +
                            " members exist",
                        "gang");
  }
  return Status::Ok();
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
      auto spec = ParsePodSchedulingSpec(it->second.labels, it->second.annotations, cfg_.levels);
      if (spec.ok() && first != INT64_MAX) {
        const int64_t gpus = g.plan->per_member.gpus * static_cast<int64_t>(g.plan->slots.size());
        metrics_->time_to_start.With({spec->queue, std::string(WorkloadClassName(spec->workload_class)), SizeBucket(gpus)})
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
  int32_t bound = 0, pending = 0;
  Resources per_member;
  int32_t priority = INT32_MIN;
  int64_t submitted = INT64_MAX;
  for (const auto& u : g.pods) {
    const PodInfo& p = pods_.at(u);
    if (p.UsesCapacity()) {
      ++bound;
    } else if (p.node_name.empty() && !p.terminating && p.phase == PodPhase::kPending) {
      ++pending;
      per_member.gpus = std::max(per_member.gpus, p.request.gpus);
      per_member.cpu_milli = std::max(per_member.cpu_milli, p.request.cpu_milli);
      per_member.memory_bytes = std::max(per_member.memory_bytes, p.request.memory_bytes);
      priority = std::max(priority, p.priority);
      submitted = std::min(submitted, p.creation_unix);
    }
  }
  if (bound_out != nullptr) *bound_out = bound;
  const int32_t need = spec.gang_size - bound;
  if (need <= 0 || pending == 0) return std::nullopt;
  Workload w;
  w.id = PlanId(g);
  w.queue = spec.queue;
  w.queue_id = ledger_.tree().Find(spec.queue);
  w.workload_class = spec.workload_class;
  w.members = need;
  w.min_members = std::clamp(spec.gang_min - bound, 1, need);
  w.arrived_members = pending;
  w.per_member = per_member;
  w.priority = priority;
  w.preemptible = spec.preemptible;
  w.runtime_limit_s = spec.runtime_limit_s;
  w.checkpoint_interval_s = spec.checkpoint_interval_s;
  w.submit_time_s = submitted;
  w.required_level = spec.required_level;
  w.preferred_level = spec.preferred_level;
  AttachConstraintsLocked(g, w);
  PinExclusiveDomainLocked(g, w);  // exclusive topology (engine_exclusive.cc)
  return w;
}

void Engine::AttachConstraintsLocked(const Gang& g, Workload& w) const {
  // The members' node constraints: those of its first pending pod (a gang's pods share a
  // template), plus the nodes the front door refused for the gang.
  std::shared_ptr<const NodeConstraints> base;
  for (const auto& u : g.pods) {
    const PodInfo& p = pods_.at(u);
    if (!p.UsesCapacity() && p.constraints) {
      base = p.constraints;
      break;
    }
  }
  const int64_t now = clock_();
  const bool excluding = std::any_of(g.excluded.begin(), g.excluded.end(), [now](const auto& e) { return e.second > now; });
  if (excluding) {
    auto c = base ? std::make_shared<NodeConstraints>(*base) : std::make_shared<NodeConstraints>();
    for (const auto& [node, until] : g.excluded) {
      if (until > now) c->excluded_nodes.insert(node);
    }
    base = std::move(c);
  }
  w.constraints = std::move(base);
  w.constraints_sig = w.constraints ? w.constraints->Signature() : std::string();
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

EngineStats Engine::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats s;
  s.nodes = static_cast<int32_t>(nodes_.size());
  s.pods = static_cast<int32_t>(pods_.size());
  s.gangs = static_cast<int32_t>(gangs_.size());
  for (const auto& [k, g] : gangs_) s.plans += g.plan ? 1 : 0;
  s.generation = generation_;
  s.synced = synced_;
  return s;
}

}  // namespace tidal
