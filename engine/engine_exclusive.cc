// Engine: exclusive topology (JobSet's alpha.jobset.sigs.k8s.io/exclusive-topology,
// LeaderWorkerSet's leaderworkerset.sigs.k8s.io/exclusive-topology): which domain a group's pods
// are pinned to.
//
// JobSet creates a child Job's leader pod first and its followers only once the leader is bound
// (its webhook refuses them before), so such a group must not be an all-or-nothing gang: a gang
// would wait forever for followers that are never created. Instead every pod is planned as it
// comes (JobSet's and LeaderWorkerSet's labels make no gang there: each pod is its own, unless another gang key names one), and
//   - the group's domain (a value of the node label `key`) is where a member of the group is
//     bound or planned; every later member is pinned there (node selector key=domain);
//   - the group's first member (JobSet's leader) chooses it: among the domains that no other
//     exclusive group with the same key uses (in any namespace), where its workload's members fit
//     on nodes they may use, the one with the most free GPUs (ties: the lowest value), so that the
//     followers find room beside the leader. From then on the domain is the group's: other
//     exclusive groups stay out while one of its members is bound or planned there (pods without
//     exclusive topology are not kept out);
//   - when no domain qualifies, the workload is pinned to kNoFreeDomain, a value no node has: the
//     plan fails and its reason names the key and that value.
// Threading: under mu_ (the *Locked convention).
#include <algorithm>
#include <unordered_map>

#include "engine/engine.h"

namespace tidal {
namespace {
constexpr const char* kNoFreeDomain = "no-free-exclusive-domain";
}  // namespace

void Engine::PinExclusiveDomainLocked(const Gang& g, Workload& w) const {
  const ExclusiveTopology& mine = g.summary.exclusive;  // of its first pod not using capacity
  if (mine.key.empty()) return;
  const std::string& key = mine.key;

  // Domains in use: the group's own (home), and those of other exclusive groups with this key.
  std::string home;
  std::map<std::string, std::string> taken;  // domain -> a group using it
  auto note = [&](const std::string& node, const std::string& group) {
    auto n = nodes_.find(node);
    if (n == nodes_.end()) return;
    auto d = n->second.labels.find(key);
    if (d == n->second.labels.end()) return;
    if (group == mine.group) {
      if (home.empty()) home = d->second;
    } else {
      taken.emplace(d->second, group);
    }
  };
  for (const auto& [uid, p] : pods_) {
    if (!p.UsesCapacity()) continue;
    const ExclusiveTopology ex = ExclusiveTopologyOf(p.ns, p.labels, p.annotations);
    if (ex.key == key) note(p.node_name, ex.group);
  }
  for (const auto& [k, og] : gangs_) {
    if (!og.plan || og.pods.empty()) continue;
    const PodInfo& p = pods_.at(*og.pods.begin());
    const ExclusiveTopology ex = ExclusiveTopologyOf(p.ns, p.labels, p.annotations);
    if (ex.key != key) continue;
    for (const auto& s : og.plan->slots) note(s.node, ex.group);
  }

  std::string pin = home;
  if (pin.empty()) {
    std::unordered_map<std::string, int64_t> used;  // node -> GPUs of bound pods and plans
    for (const auto& [uid, c] : charged_) used[c.first] += c.second.gpus;
    for (const auto& [k, og] : gangs_) {
      if (!og.plan) continue;
      for (const auto& s : og.plan->slots) used[s.node] += og.plan->per_member.gpus;
    }
    struct Room {
      int64_t free_gpus = 0, members = 0;
    };
    std::map<std::string, Room> rooms;  // free domains
    for (const auto& [name, n] : nodes_) {
      if (!n.ready || n.unschedulable) continue;
      auto d = n.labels.find(key);
      if (d == n.labels.end() || taken.count(d->second) > 0) continue;
      const Node node = ToNode(n);
      if (!PoolAdmits(node.pool, w.front_door) || !NamedPoolAdmits(node, w)) continue;
      if (w.constraints != nullptr && !w.constraints->Refusal(node).empty()) continue;
      auto u = used.find(name);
      const int64_t free = std::max<int64_t>(0, n.capacity.gpus - (u == used.end() ? 0 : u->second));
      Room& r = rooms[d->second];
      r.free_gpus += free;
      r.members += w.per_member.gpus > 0 ? free / w.per_member.gpus : w.members;
    }
    const Room* best = nullptr;
    for (const auto& [domain, r] : rooms) {
      if (r.members < w.members) continue;
      if (best == nullptr || r.free_gpus > best->free_gpus) {
        best = &r;
        pin = domain;
      }
    }
    if (best == nullptr) pin = kNoFreeDomain;
  }
  auto c = w.constraints ? std::make_shared<NodeConstraints>(*w.constraints) : std::make_shared<NodeConstraints>();
  c->node_selector[key] = pin;
  w.constraints = std::move(c);
  w.constraints_sig = w.constraints->Signature();
}

}  // namespace tidal
