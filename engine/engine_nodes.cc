// Engine: the nodes as the engine plans on them - each door's record merged into one node
// (MergeNodeLocked: a node both doors report is one node; the smaller GPU count wins), turned into
// the scheduler's Node (ToNode: topology labels, health, pool, named pool, loans, closes), and the
// ClusterState built from them with bound pods and plans (EnsureStateLocked). Moved out of
// engine_sync.cc, which keeps the Sync stream and the pods.
// Threading: the *Locked functions run under mu_ (engine.h); ToNode and MissingLevels read
// Engine state guarded by it.
#include <algorithm>

#include "engine/engine.h"

namespace tidal {

namespace {

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
  const HealthVerdict verdict = JudgeNodeHealth(in.labels, in.conditions, cfg_.node_health);
  n.health = !in.ready || verdict.health == NodeHealth::kUnhealthy ? NodeHealth::kUnhealthy
             : in.unschedulable                                    ? NodeHealth::kCordoned
                                                                   : verdict.health;
  // A drain or a maintenance window has closed it (engine_closes.cc).
  if (NodeClose c; n.health != NodeHealth::kUnhealthy && CloseOfLocked(in.name, clock_(), &c) && c.Closed(clock_())) {
    n.health = NodeHealth::kDraining;
  }
  // The doors that may use it: those reporting it ready and schedulable, narrowed by its pool
  // label (an admin's choice); a label naming a door that cannot use it leaves it to none.
  uint8_t usable = 1u << static_cast<int>(FrontDoor::kKubernetes);
  if (auto u = node_usable_.find(in.name); u != node_usable_.end()) usable = u->second;
  const uint8_t k8s = 1u << static_cast<int>(FrontDoor::kKubernetes), slurm = 1u << static_cast<int>(FrontDoor::kSlurm);
  n.pool = (usable & k8s) && (usable & slurm) ? Pool::kShared : (usable & slurm) ? Pool::kSlurm : Pool::kKubernetes;
  const auto pool_label = in.labels.find(cfg_.pool_label);
  if (!cfg_.pools.empty()) {  // a named pool's node (its label or its selector): only its queues' work
    n.named_pool = NamedPoolOf(cfg_.pools, pool_label != in.labels.end() ? pool_label->second : "", in.labels);
  }
  if (auto it = pool_label; it != in.labels.end() && n.named_pool.empty()) {
    if (auto p = ParsePool(it->second, cfg_.pool_label); p.ok() && *p != Pool::kShared) {
      const uint8_t want = *p == Pool::kSlurm ? slurm : k8s;
      if ((usable & want) == 0 && n.health == NodeHealth::kReady) n.health = NodeHealth::kCordoned;
      n.pool = *p;
    }
  }
  ApplyLoanLocked(n);  // lent by its owner pool to the other door (engine_lending.cc)
  // A door not resynced since the engine started may run work here: none new (engine_doors.cc).
  if (n.health != NodeHealth::kUnhealthy && GatingDoorLocked(in.name) >= 0) n.health = NodeHealth::kDraining;
  return n;
}

void Engine::EnsureStateLocked() {
  const int64_t now = clock_();
  if (state_ && now < state_valid_until_) return;
  // A close started or ended since state_ was built: the nodes' health changes; kube-scheduler
  // sees no event for it, so its pending pods get another try.
  const bool close_turned = state_.has_value();
  state_.reset();
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
  ++book_epoch_;      // so were a refresh job's in flight (engine_refresh.cc)
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
  ComputeClosesLocked(now);
  if (close_turned) ActivateKubernetesPendingLocked();
}

std::string Engine::NodeModelLocked(const std::string& node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? std::string() : it->second.gpu_model;
}

std::vector<std::string> Engine::MissingLevels(const NodeInfo& n) const {
  std::vector<std::string> out;
  for (const auto& l : cfg_.levels.levels) {
    auto it = n.labels.find(l.label_key);
    if (it == n.labels.end() || !IsValidLabelValue(it->second)) out.push_back(l.name);
  }
  return out;
}

void Engine::MergeNodeLocked(const std::string& name) {
  auto recs = node_doors_.find(name);
  const auto& k8s = recs == node_doors_.end() ? std::nullopt : recs->second[static_cast<int>(FrontDoor::kKubernetes)];
  const auto& slurm = recs == node_doors_.end() ? std::nullopt : recs->second[static_cast<int>(FrontDoor::kSlurm)];
  if (!k8s && !slurm) {
    if (recs != node_doors_.end()) node_doors_.erase(recs);
    node_usable_.erase(name);
    if (nodes_.erase(name) > 0) state_.reset();
    TrackHealthLocked(name);
    ForgetDecommissionedLocked(name);
    return;
  }
  // Kubernetes' record first (labels, taints, model); Slurm adds labels Kubernetes lacks. When both
  // report GPUs, the smaller count is the node's: a GPU only one side sees is never handed out.
  NodeInfo m = k8s ? *k8s : *slurm;
  uint8_t usable = 0;
  for (const auto* r : {&k8s, &slurm}) {
    if (!*r) continue;
    if ((*r)->ready && !(*r)->unschedulable) usable |= 1u << static_cast<int>((*r)->door);
  }
  if (k8s && slurm) {
    for (const auto& [k, v] : slurm->labels) m.labels.emplace(k, v);
    m.capacity.gpus = std::min(k8s->capacity.gpus, slurm->capacity.gpus);
    if (m.gpu_model.empty()) m.gpu_model = slurm->gpu_model;
  }
  m.ready = (k8s && k8s->ready) || (slurm && slurm->ready);
  m.unschedulable = usable == 0;
  auto it = nodes_.find(name);
  auto u = node_usable_.find(name);
  const bool same_usable = u != node_usable_.end() && u->second == usable;
  node_usable_[name] = usable;
  if (it != nodes_.end() && SameNode(it->second, m) && same_usable) return;
  nodes_[name] = std::move(m);
  state_.reset();
  TrackHealthLocked(name);  // unhealthy since when (engine_health.cc)
}

}  // namespace tidal
