// Engine: node health, lost members and gang-aware drains, the causes of the disruption path
// that come from the fleet rather than from scheduling (engine_disruptions.cc runs them at each
// Disruptions poll):
//   unhealthy-node  a node unhealthy (not Ready, Slurm DOWN / NOT_RESPONDING, or a nodeHealth rule:
//                   engine/node_health.h) for unhealthyAfterSeconds: every gang with a member there
//                   is disrupted whole, an elastic one that keeps its gang-min elsewhere only its
//                   members there (a flapping node costs nothing before that);
//   member-lost     a rigid gang (gang-min = gang-size) of the Kubernetes door lost a bound member
//                   (it failed, or was deleted while running: the engine saw it terminating, or
//                   the door reported its delete; a pod that only vanished from a resync is not
//                   counted as lost): the rest goes too, so the gang is requeued
//                   whole instead of holding GPUs half-running; an elastic gang only when fewer than
//                   its minimum are left;
//   drain           tidalctl drain NODE... --by T (Drain): the nodes take no new work (kDraining in
//                   ToNode); a workload whose declared runtime limit ends by T finishes; any other is
//                   disrupted at T - its notice - kDrainSlackS (as late as its notice allows; at once
//                   when that is past), its gang whole (an elastic gang keeping its gang-min off the
//                   drained nodes: only its members there); at T whatever is left goes. The drains are
//                   kept in the state file ("drains") until cancelled.
// Threading and ownership: as engine.cc: Drain takes mu_, the *Locked functions run under it.
// drains_, unhealthy_since_ and lost_members_ are the Engine's (engine.h).
#include <algorithm>
#include <set>

#include "core/api/duration.h"
#include "engine/engine.h"

namespace tidal {

namespace {
// Time a drained workload's eviction needs beyond its notice (termination grace, the shim's poll).
constexpr int64_t kDrainSlackS = 30;
}  // namespace

void Engine::TrackHealthLocked(const std::string& node) {
  auto n = nodes_.find(node);
  const bool unhealthy =
      n != nodes_.end() &&
      (!n->second.ready || JudgeNodeHealth(n->second.labels, n->second.conditions, cfg_.node_health).health == NodeHealth::kUnhealthy);
  if (!unhealthy) {
    unhealthy_since_.erase(node);
  } else {
    unhealthy_since_.emplace(node, clock_());
  }
}

std::map<std::string, std::vector<const PodInfo*>> Engine::OurPodsOnLocked(const std::set<std::string>& nodes) const {
  std::map<std::string, std::vector<const PodInfo*>> out;
  if (nodes.empty()) return out;
  for (const auto& [uid, where] : charged_) {
    if (!nodes.count(where.first)) continue;
    auto p = pods_.find(uid);
    if (p == pods_.end() || (!pod_gang_.count(uid) && p->second.door != FrontDoor::kSlurm)) continue;
    out[where.first].push_back(&p->second);
  }
  return out;
}

int64_t Engine::ExpectedEndLocked(const PodInfo& p) const {
  auto b = bound_since_.find(p.uid);
  if (b == bound_since_.end() || b->second.runtime_limit_s <= 0) return 0;
  return b->second.since_s + b->second.runtime_limit_s;
}

std::vector<std::string> Engine::VictimPodsLocked(const std::string& id, const std::set<std::string>& nodes) const {
  auto g = gangs_.find(id);  // every pod of ours is in a gang (a lone pod in one of its own)
  if (g == gangs_.end()) return {};
  std::vector<std::string> all, there;
  int32_t min = 0, size = 0;
  for (const auto& uid : g->second.pods) {
    auto p = pods_.find(uid);
    if (p == pods_.end() || !p->second.UsesCapacity() || p->second.terminating) continue;
    all.push_back(uid);
    if (nodes.count(p->second.node_name)) there.push_back(uid);
    if (const auto& spec = SpecLocked(p->second); spec.ok()) {
      min = spec->gang_min;
      size = spec->gang_size;
    }
  }
  // An elastic gang that keeps at least its minimum elsewhere gives back only those members.
  const bool elastic = min < size;
  if (elastic && static_cast<int32_t>(all.size() - there.size()) >= min) return there;
  return all;
}

// --- unhealthy nodes ---------------------------------------------------------------------------------

void Engine::OpenUnhealthyLocked(int64_t now) {
  std::set<std::string> due;
  // The clock counts whole seconds and a node may have turned unhealthy late in its second:
  // strictly more than the grace, so the grace is never cut short (it may run up to 1 s long).
  for (const auto& [node, since] : unhealthy_since_) {
    if (now - since > cfg_.node_health.unhealthy_after_s) due.insert(node);
  }
  for (const auto& [node, pods] : OurPodsOnLocked(due)) {
    auto n = nodes_.find(node);
    std::string why = n == nodes_.end() || !n->second.ready ? "not ready"
                                                            : JudgeNodeHealth(n->second.labels, n->second.conditions, cfg_.node_health).reason;
    for (const PodInfo* p : pods) {
      const std::string id = WorkloadIdLocked(*p);
      if (p->terminating || disruptions_.Find(id) != nullptr) continue;
      OpenDisruptionLocked(id, DisruptionCause::kUnhealthyNode, VictimPodsLocked(id, due),
                           "node " + node + " is unhealthy (" + why + ") since " + FormatUnixTime(unhealthy_since_[node]));
    }
  }
}

// --- lost members ------------------------------------------------------------------------------------

void Engine::NoteMemberLostLocked(const PodInfo& p) {
  if (p.door != FrontDoor::kKubernetes || !charged_.count(p.uid) || disruptions_.ForPod(p.uid) != nullptr) return;
  auto g = pod_gang_.find(p.uid);
  if (g == pod_gang_.end()) return;
  const auto& spec = SpecLocked(p);
  if (!spec.ok() || spec->gang.empty() || spec->gang_size <= 1) return;
  lost_members_[g->second] = p.name;
}

void Engine::OpenMemberLostLocked() {
  for (const auto& [key, lost] : lost_members_) {
    auto g = gangs_.find(key);
    if (g == gangs_.end() || disruptions_.Find(key) != nullptr) continue;
    std::vector<std::string> running;
    int32_t min = 0, size = 0;
    for (const auto& uid : g->second.pods) {
      auto p = pods_.find(uid);
      if (p == pods_.end()) continue;
      if (const auto& spec = SpecLocked(p->second); spec.ok()) {
        min = spec->gang_min;
        size = spec->gang_size;
      }
      if (p->second.UsesCapacity() && !p->second.terminating) running.push_back(uid);
    }
    if (running.empty()) continue;
    const bool elastic = min < size;
    if (elastic && static_cast<int32_t>(running.size()) >= min) continue;  // it shrinks, and grows back later
    OpenDisruptionLocked(key, DisruptionCause::kMemberLost, running,
                         "member " + lost + " was lost while the gang ran" +
                             (elastic ? " and fewer than its gang-min " + std::to_string(min) + " are left"
                                      : "; a rigid gang is requeued whole, never left half-running"));
  }
  lost_members_.clear();
}

// --- drains ------------------------------------------------------------------------------------------

void Engine::OpenDrainsLocked(int64_t now) {
  if (drains_.empty()) return;
  std::set<std::string> names;
  for (const auto& [node, by] : drains_) names.insert(node);
  for (const auto& [node, pods] : OurPodsOnLocked(names)) {
    const int64_t by = drains_.at(node);
    for (const PodInfo* p : pods) {
      const std::string id = WorkloadIdLocked(*p);
      if (p->terminating || disruptions_.Find(id) != nullptr) continue;
      const int64_t end = ExpectedEndLocked(*p);
      if (end > 0 && end <= by && now < by) continue;  // it ends in time: let it finish
      int64_t notice = 0;
      if (const auto& spec = SpecLocked(*p); spec.ok()) notice = std::min(spec->checkpoint_on_notice_s, cfg_.max_notice_s);
      if (now < by - notice - kDrainSlackS) continue;  // not yet: it runs as long as its notice allows
      OpenDisruptionLocked(id, DisruptionCause::kDrain, VictimPodsLocked(id, names),
                           "node " + node + " is drained by " + FormatUnixTime(by) +
                               (end > 0 ? " and the job ends after that" : "; the job declares no runtime limit ending before"),
                           std::max<int64_t>(0, by - now - kDrainSlackS));
    }
  }
}

std::vector<NodeDrainInfo> Engine::Drain(const std::vector<std::string>& nodes, int64_t by_s, bool cancel) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = clock_();
  bool changed = false;
  std::vector<NodeDrainInfo> unknown;
  for (const auto& n : nodes) {
    if (cancel) {
      changed = drains_.erase(n) > 0 || changed;
    } else if (!nodes_.count(n)) {
      unknown.push_back({n, by_s, "unknown-node", 0, 0, "no front door reports this node"});
    } else {
      drains_[n] = std::max(by_s, now);
      changed = true;
    }
  }
  if (changed) {
    state_.reset();  // the nodes' health (kDraining) changes
    // kube-scheduler sees no event when a drain ends: hand its pending pods back for another try.
    if (cancel) ActivateKubernetesPendingLocked();
    door_memory_version_.fetch_add(1, std::memory_order_relaxed);  // save the state file soon
    if (decision_log_ != nullptr) {
      decision_log_->Write({{"ts", now}, {"outcome", cancel ? "drain-cancelled" : "drain"}, {"nodes", nodes}, {"by", by_s}});
    }
  }
  if (!cancel) OpenDrainsLocked(now);
  std::vector<NodeDrainInfo> out = DrainReportLocked(now);
  out.insert(out.end(), unknown.begin(), unknown.end());
  return out;
}

std::vector<NodeDrainInfo> Engine::DrainReportLocked(int64_t now) const {
  std::set<std::string> names;
  for (const auto& [node, by] : drains_) names.insert(node);
  const auto on = OurPodsOnLocked(names);
  std::vector<NodeDrainInfo> out;
  for (const auto& [node, by] : drains_) {
    NodeDrainInfo d{node, by, "drained", 0, 0, ""};
    std::set<std::string> seen;
    if (auto it = on.find(node); it != on.end()) {
      for (const PodInfo* p : it->second) {
        const std::string id = WorkloadIdLocked(*p);
        if (!seen.insert(id).second) continue;
        const int64_t end = ExpectedEndLocked(*p);
        const DisruptionRecord* r = disruptions_.Find(id);
        int64_t free_at = by;
        std::string what;
        if (r != nullptr) {
          free_at = std::max(now, r->deadline_s);
          what = id + " is being evicted (" + std::string(DisruptionCauseName(r->cause)) + ")";
        } else if (end > 0 && end <= by) {
          free_at = end;
          what = id + " ends at " + FormatUnixTime(end);
        } else {
          what = id + " is evicted before " + FormatUnixTime(by);
        }
        d.free_at_unix = std::max(d.free_at_unix, free_at);
        d.note += (d.note.empty() ? "" : "; ") + what;
      }
    }
    d.workloads_left = static_cast<int32_t>(seen.size());
    if (d.workloads_left > 0) d.state = "draining";
    out.push_back(std::move(d));
  }
  return out;
}

void Engine::SaveDrainsLocked(nlohmann::json& state) const {
  if (drains_.empty()) return;
  nlohmann::json d = nlohmann::json::object();
  for (const auto& [node, by] : drains_) d[node] = by;
  state["drains"] = std::move(d);
}

Status Engine::LoadDrainsLocked(const nlohmann::json& state) {
  if (!state.contains("drains")) return Status::Ok();
  const auto& d = state.at("drains");
  if (!d.is_object()) return Status::Error("drains: must be a mapping of node to deadline (unix s)");
  Status s;
  for (const auto& [node, by] : d.items()) {
    if (!by.is_number_integer() || node.empty() || node.size() > 253) {
      const std::string why = "drains." + node.substr(0, 100) + ": must be a unix time in seconds";
      if (s.ok()) {
        s = Status::Error(why);
      } else {
        s.AddReason(why);
      }
      continue;
    }
    drains_[node] = by.get<int64_t>();
  }
  state_.reset();
  return s;
}

}  // namespace tidal
