// Engine: the rolling-upgrade waves of the nodes the doors report, from the running gangs (the
// planning itself is engine/waves.h, pure). Threading: PlanWaves takes mu_.
#include "engine/engine.h"

namespace tidal {

StatusOr<WavePlan> Engine::PlanWaves(const std::vector<std::string>& nodes, int32_t max_nodes, const std::string& domain) {
  std::lock_guard<std::mutex> lock(mu_);
  WaveOptions opt;
  opt.max_nodes = max_nodes;
  if (!domain.empty()) {
    opt.domain_level = cfg_.levels.Find(domain);
    if (opt.domain_level < 0 || opt.domain_level >= cfg_.levels.node_level()) {
      std::string accepted;
      for (const auto& l : cfg_.levels.levels) accepted += (accepted.empty() ? "" : ", ") + l.name;
      return Status::Error("domain: unknown topology level \"" + domain.substr(0, 64) + "\" (accepted: " + accepted +
                           "; one node per wave is --max-nodes 1)");
    }
  }
  std::vector<WaveNode> in;
  auto add = [&](const std::string& name, const NodeInfo& n) {
    WaveNode w{name, {}};
    for (const auto& l : cfg_.levels.levels) {
      auto it = n.labels.find(l.label_key);
      w.domains.push_back(it != n.labels.end() ? it->second : "(none: " + name + ")");
    }
    in.push_back(std::move(w));
  };
  if (nodes.empty()) {
    for (const auto& [name, n] : nodes_) add(name, n);
  } else {
    for (size_t i = 0; i < nodes.size(); ++i) {
      auto n = nodes_.find(nodes[i]);
      if (n == nodes_.end()) return Status::Error("nodes[" + std::to_string(i) + "]: no front door reports node " + nodes[i].substr(0, 253));
      add(nodes[i], n->second);
    }
  }
  // Running gangs: the nodes their bound members are on.
  std::map<std::string, WaveGang> gangs;
  for (const auto& [uid, where] : charged_) {
    auto p = pods_.find(uid);
    auto g = pod_gang_.find(uid);
    if (p == pods_.end() || g == pod_gang_.end()) continue;
    const auto& spec = SpecLocked(p->second);
    if (!spec.ok() || spec->gang_size <= 1) continue;
    WaveGang& w = gangs[g->second];
    w.id = g->second;
    w.elastic = spec->gang_min < spec->gang_size;
    w.nodes.push_back(where.first);
  }
  std::vector<WaveGang> list;
  list.reserve(gangs.size());
  for (auto& [id, g] : gangs) list.push_back(std::move(g));
  return tidal::PlanWaves(in, list, opt);
}

}  // namespace tidal
