// Rolling-upgrade waves (waves.h). Threading: pure functions.
#include "engine/waves.h"

#include <algorithm>
#include <numeric>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace tidal {

namespace {

// Union-find over node indices: union by size, path halving.
class DisjointSets {
 public:
  explicit DisjointSets(size_t n) : parent_(n), size_(n, 1) { std::iota(parent_.begin(), parent_.end(), 0); }
  size_t Find(size_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  void Union(size_t a, size_t b) {
    a = Find(a);
    b = Find(b);
    if (a == b) return;
    if (size_[a] < size_[b]) std::swap(a, b);
    parent_[b] = a;
    size_[a] += size_[b];
  }

 private:
  std::vector<size_t> parent_;
  std::vector<size_t> size_;
};

// "rigid gang a", "rigid gangs a, b, c and 4 more".
std::string Listed(const std::vector<std::string>& names, std::string_view one, std::string_view many,
                   size_t cap = 3) {
  std::string s(names.size() == 1 ? one : many);
  s += " ";
  for (size_t i = 0; i < names.size() && i < cap; ++i) {
    if (i > 0) s += ", ";
    s += names[i];
  }
  if (names.size() > cap) s += " and " + std::to_string(names.size() - cap) + " more";
  return s;
}

std::string JoinPath(const std::vector<std::string>& domains, size_t levels) {
  std::string s;
  for (size_t i = 0; i < levels && i < domains.size(); ++i) {
    if (i > 0) s += "/";
    s += domains[i];
  }
  return s;
}

struct Group {
  std::vector<size_t> nodes;         // by (domain path, name)
  std::vector<size_t> gangs;         // rigid gangs with in-set nodes here
  std::vector<size_t> linking;       // those that link nodes (or domains) together
  std::vector<size_t> domains;       // domain_level mode: the domains merged here, in path order
};

}  // namespace

StatusOr<WavePlan> PlanWaves(const std::vector<WaveNode>& nodes, const std::vector<WaveGang>& gangs,
                             const WaveOptions& opt) {
  if (opt.max_nodes < 0) return Status::Error("waves.max_nodes: must be >= 0 (0 = unset), got " + std::to_string(opt.max_nodes));
  if (opt.domain_level < -1)
    return Status::Error("waves.domain_level: must be >= 0 (-1 = unset), got " + std::to_string(opt.domain_level));
  const bool by_count = opt.max_nodes > 0;
  const bool by_domain = opt.domain_level >= 0;
  if (by_count == by_domain) return Status::Error("waves: give max_nodes or domain_level, not both");

  const size_t n = nodes.size();
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    const std::string field = "waves.nodes[" + std::to_string(i) + "]";
    if (nodes[i].name.empty()) return Status::Error(field + ".name: empty node name");
    if (!index.emplace(nodes[i].name, i).second)
      return Status::Error(field + ".name: duplicate node \"" + nodes[i].name + "\" (also waves.nodes[" +
                           std::to_string(index[nodes[i].name]) + "])");
    if (by_domain && nodes[i].domains.size() <= static_cast<size_t>(opt.domain_level))
      return Status::Error(field + ".domains: node \"" + nodes[i].name + "\" has " +
                           std::to_string(nodes[i].domains.size()) +
                           (nodes[i].domains.size() == 1 ? " domain level" : " domain levels") + "; domain_level " +
                           std::to_string(opt.domain_level) + " needs " + std::to_string(opt.domain_level + 1));
  }
  std::unordered_map<std::string_view, size_t> gang_index;
  gang_index.reserve(gangs.size() * 2);
  for (size_t g = 0; g < gangs.size(); ++g) {
    const std::string field = "waves.gangs[" + std::to_string(g) + "]";
    if (gangs[g].id.empty()) return Status::Error(field + ".id: empty gang id");
    if (!gang_index.emplace(gangs[g].id, g).second)
      return Status::Error(field + ".id: duplicate gang \"" + gangs[g].id + "\" (also waves.gangs[" +
                           std::to_string(gang_index[gangs[g].id]) + "])");
  }

  DisjointSets ds(n);
  // domain_level mode: the nodes of one domain (the path down to that level) are one group.
  std::vector<size_t> node_domain(n, 0);
  std::vector<size_t> domain_first;  // domain id -> its first node (the display path)
  if (by_domain) {
    std::unordered_map<std::string, size_t> domain_of;
    domain_of.reserve(n);
    const size_t levels = static_cast<size_t>(opt.domain_level) + 1;
    for (size_t i = 0; i < n; ++i) {
      std::string key;
      for (size_t l = 0; l < levels; ++l) {
        key += nodes[i].domains[l];
        key.push_back('\0');
      }
      auto [it, fresh] = domain_of.emplace(std::move(key), domain_first.size());
      if (fresh) domain_first.push_back(i);
      node_domain[i] = it->second;
      ds.Union(i, domain_first[it->second]);
    }
  }

  // Rigid gangs link their in-set nodes; remember which gangs link (and which run outside the set).
  std::vector<std::vector<size_t>> in_set(gangs.size());
  std::vector<size_t> outside(gangs.size(), 0);
  std::vector<bool> links(gangs.size(), false);
  for (size_t g = 0; g < gangs.size(); ++g) {
    if (gangs[g].elastic) continue;
    std::unordered_set<std::string_view> seen_outside;
    for (const auto& name : gangs[g].nodes) {
      auto it = index.find(name);
      if (it == index.end()) {
        if (seen_outside.insert(name).second) ++outside[g];
        continue;
      }
      in_set[g].push_back(it->second);
    }
    auto& v = in_set[g];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    for (size_t k = 1; k < v.size(); ++k) {
      ds.Union(v[0], v[k]);
      links[g] = links[g] || (by_domain ? node_domain[v[k]] != node_domain[v[0]] : true);
    }
  }

  // Groups: the connected components, each ordered by (domain path, name).
  auto node_less = [&](size_t a, size_t b) {
    if (nodes[a].domains != nodes[b].domains) return nodes[a].domains < nodes[b].domains;
    return nodes[a].name < nodes[b].name;
  };
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), node_less);
  std::vector<Group> groups;
  std::unordered_map<size_t, size_t> group_of_root;
  group_of_root.reserve(n);
  std::vector<size_t> group_of(n, 0);
  for (size_t i : order) {  // groups come out ordered by their first node
    auto [it, fresh] = group_of_root.emplace(ds.Find(i), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].nodes.push_back(i);
    group_of[i] = it->second;
  }
  std::vector<size_t> gang_order(gangs.size());
  std::iota(gang_order.begin(), gang_order.end(), 0);
  std::sort(gang_order.begin(), gang_order.end(), [&](size_t a, size_t b) { return gangs[a].id < gangs[b].id; });
  for (size_t g : gang_order) {
    if (in_set[g].empty()) continue;
    Group& grp = groups[group_of[in_set[g][0]]];
    grp.gangs.push_back(g);
    if (links[g]) grp.linking.push_back(g);
  }
  if (by_domain) {
    for (Group& grp : groups) {
      // The nodes are ordered by domain path, so each domain's nodes are adjacent and in order.
      for (size_t i : grp.nodes)
        if (grp.domains.empty() || grp.domains.back() != node_domain[i]) grp.domains.push_back(node_domain[i]);
    }
  }

  // Waves: lists of groups, in topology order.
  std::vector<std::vector<size_t>> wave_groups;
  if (by_count) {
    const size_t cap = static_cast<size_t>(opt.max_nodes);
    size_t filled = cap;  // no open wave yet
    for (size_t k = 0; k < groups.size(); ++k) {
      const size_t size = groups[k].nodes.size();
      if (size > cap) {
        wave_groups.push_back({k});
        filled = cap;  // the next group starts a fresh wave
      } else if (filled + size > cap) {
        wave_groups.push_back({k});
        filled = size;
      } else {
        wave_groups.back().push_back(k);
        filled += size;
      }
    }
  } else {
    for (size_t k = 0; k < groups.size(); ++k) wave_groups.push_back({k});
  }

  WavePlan plan;
  plan.waves.reserve(wave_groups.size());
  std::vector<size_t> wave_of_gang(gangs.size(), 0);
  auto gang_names = [&](const std::vector<size_t>& ids) {
    std::vector<std::string> s;
    s.reserve(ids.size());
    for (size_t g : ids) s.push_back(gangs[g].id);
    std::sort(s.begin(), s.end());
    return s;
  };
  for (size_t w = 0; w < wave_groups.size(); ++w) {
    Wave wave;
    std::vector<size_t> linking;
    for (size_t k : wave_groups[w]) {
      const Group& grp = groups[k];
      for (size_t i : grp.nodes) wave.nodes.push_back(nodes[i].name);
      for (size_t g : grp.gangs) {
        wave.gangs.push_back(gangs[g].id);
        wave_of_gang[g] = w;
      }
      linking.insert(linking.end(), grp.linking.begin(), grp.linking.end());
    }
    std::sort(wave.nodes.begin(), wave.nodes.end());
    std::sort(wave.gangs.begin(), wave.gangs.end());
    const std::string num = "wave " + std::to_string(w + 1);
    if (by_count) {
      const size_t size = wave.nodes.size();
      if (size > static_cast<size_t>(opt.max_nodes)) {
        const std::string spans = Listed(gang_names(linking), "rigid gang", "rigid gangs") +
                                  (linking.size() == 1 ? " spans them" : " span them");
        wave.why = std::to_string(size) + " nodes > max " + std::to_string(opt.max_nodes) + ": " + spans;
        plan.notes.push_back(num + " has " + std::to_string(size) + " nodes > " + std::to_string(opt.max_nodes) +
                             ": " + spans);
      } else {
        // Where the wave lies: the common domain path of its nodes.
        const auto& first = nodes[groups[wave_groups[w].front()].nodes.front()].domains;
        size_t common = first.size();
        for (size_t k : wave_groups[w])
          for (size_t i : groups[k].nodes) {
            const auto& d = nodes[i].domains;
            size_t l = 0;
            while (l < common && l < d.size() && d[l] == first[l]) ++l;
            common = l;
          }
        wave.why = std::to_string(size) + " nodes (max " + std::to_string(opt.max_nodes) + ")";
        if (common > 0) wave.why += " in " + JoinPath(first, common);
      }
    } else {
      const Group& grp = groups[wave_groups[w].front()];
      const size_t levels = static_cast<size_t>(opt.domain_level) + 1;
      std::vector<std::string> paths;
      for (size_t d : grp.domains) paths.push_back(JoinPath(nodes[domain_first[d]].domains, levels));
      const std::string level = " (level " + std::to_string(opt.domain_level) + ")";
      if (paths.size() == 1) {
        wave.why = "domain " + paths[0] + level;
      } else {
        const std::string spans = Listed(gang_names(linking), "rigid gang", "rigid gangs") +
                                  (linking.size() == 1 ? " spans them" : " span them");
        wave.why = Listed(paths, "domain", "domains", 4) + level + " merged: " + spans;
        plan.notes.push_back(num + " merges " + Listed(paths, "domain", "domains", 4) + level + ": " + spans);
      }
    }
    plan.waves.push_back(std::move(wave));
  }
  for (size_t g : gang_order) {
    if (in_set[g].empty() || outside[g] == 0) continue;
    plan.notes.push_back("rigid gang " + gangs[g].id + " also runs on " + std::to_string(outside[g]) +
                         (outside[g] == 1 ? " node" : " nodes") + " outside the upgrade set (not upgraded): taken down in wave " +
                         std::to_string(wave_of_gang[g] + 1));
  }
  return plan;
}

}  // namespace tidal
