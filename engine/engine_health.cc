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
// Drains and maintenance windows (node closes) are engine_closes.cc's.
// Threading and ownership: as engine.cc: Drain takes mu_, the *Locked functions run under it.
// unhealthy_since_ and lost_members_ are the Engine's (engine.h).
#include <algorithm>
#include <set>

#include "core/api/duration.h"
#include "engine/engine.h"

namespace tidal {

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

void Engine::NoteMemberLostLocked(const PodInfo& p, const char* how) {
  if (p.door != FrontDoor::kKubernetes || !charged_.count(p.uid) || disruptions_.ForPod(p.uid) != nullptr) return;
  auto g = pod_gang_.find(p.uid);
  if (g == pod_gang_.end()) return;
  const auto& spec = SpecLocked(p);
  if (!spec.ok() || spec->gang.empty() || spec->gang_size <= 1) return;
  lost_members_[g->second] = p.name + " " + how + (p.phase == PodPhase::kRunning ? " while running" : "");
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
                         "member " + lost +
                             (elastic ? " and fewer than its gang-min " + std::to_string(min) + " are left"
                                      : "; a rigid gang is requeued whole, never left half-running"));
  }
  lost_members_.clear();
}

}  // namespace tidal
