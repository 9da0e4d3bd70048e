#include "core/io/cluster_file.h"

#include <map>
#include <set>

#include "core/api/limits.h"
#include "core/io/fields.h"

namespace tidal {

std::vector<Node> GenerateFabric(const TopologyLevels& levels, const FabricSpec& f) {
  std::vector<Node> nodes;
  const size_t nl = levels.levels.size();
  // Count of vertices per level, and each node's index at every level.
  int64_t domains = 1;
  for (size_t l = 0; l < nl; ++l) domains *= f.per_level[l];
  const int64_t total = domains * f.nodes_per_domain;
  nodes.reserve(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) {
    Node n;
    n.name = "node-" + std::to_string(i);
    n.capacity = f.node_capacity;
    n.gpu_model = f.gpu_model;
    int64_t idx = i / f.nodes_per_domain;  // global index at the deepest level
    std::vector<int64_t> at(nl);
    for (size_t l = nl; l-- > 0;) {
      at[l] = idx;
      idx /= f.per_level[l];
    }
    for (size_t l = 0; l < nl; ++l) {
      n.labels[levels.levels[l].label_key] = levels.levels[l].name + "-" + std::to_string(at[l]);
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

Status DecodeLevels(const nlohmann::json& j, const std::string& path, TopologyLevels* out) {
  if (!j.is_array()) return Status::Error(path + ": must be a list of levels, outermost first");
  out->levels.clear();
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    TopologyLevel l;
    bool label_given = false;  // `label: ""` is an error, not the default
    if (j[i].is_string()) {
      l.name = j[i].get<std::string>();
    } else {
      Fields f(j[i], p);
      f.Str("name", &l.name, true);
      label_given = f.Get("label") != nullptr;
      f.Str("label", &l.label_key);
      if (Status s = f.Done(); !s.ok()) return s;
    }
    const std::string name_at = j[i].is_string() ? p : p + ".name";
    if (l.name.empty()) return Status::Error(p + ": level name must not be empty");
    if (l.name == "node" || l.name == "cluster") return Status::Error(p + ": \"" + l.name + "\" is a reserved level name");
    if (!IsValidLabelValue(l.name)) {
      return Status::Error(name_at + ": invalid level name \"" + l.name.substr(0, 100) +
                           "\" (accepted: 1-63 characters of [A-Za-z0-9._-], starting and ending alphanumeric)");
    }
    if (label_given && l.label_key.empty()) {
      return Status::Error(p + ".label: must not be empty (omit it for the default topology.tidal.dev/" + l.name + ")");
    }
    if (l.label_key.empty()) l.label_key = "topology.tidal.dev/" + l.name;
    if (!limits::IsLabelKey(l.label_key)) {
      return Status::Error(p + ".label: invalid node label key \"" + l.label_key.substr(0, 100) +
                           "\" (accepted: [prefix/]name, name 1-63 of [A-Za-z0-9._-], prefix a lowercase DNS subdomain)");
    }
    for (size_t k = 0; k < out->levels.size(); ++k) {
      const auto& prev = out->levels[k];
      if (prev.name == l.name) return Status::Error(p + ": duplicate level \"" + l.name + "\"");
      if (prev.label_key == l.label_key) {
        return Status::Error(p + ".label: \"" + l.label_key + "\" is already the label of " + path + "[" +
                             std::to_string(k) + "] (" + prev.name + ")");
      }
    }
    out->levels.push_back(std::move(l));
  }
  return Status::Ok();
}

namespace {

Status DecodeFabric(const nlohmann::json& j, const std::string& path, const TopologyLevels& levels,
                    std::vector<Node>* nodes) {
  Fields f(j, path);
  FabricSpec spec;
  for (const auto& l : levels.levels) {
    int32_t n = 0;
    f.Int(l.name, &n, 1, 100000, true);
    spec.per_level.push_back(n);
  }
  f.Int("node", &spec.nodes_per_domain, 1, 100000, true);
  f.ResourcesField("capacity", &spec.node_capacity);
  f.Str("gpuModel", &spec.gpu_model);
  if (Status s = f.Done(); !s.ok()) return s;
  if (Status s = limits::CheckResources(spec.node_capacity, f.Sub("capacity")); !s.ok()) return s;
  int64_t total = spec.nodes_per_domain;
  for (auto n : spec.per_level) total *= n;
  if (total > 1000000) return Status::Error(path + ": more than 1,000,000 nodes (" + std::to_string(total) + ")");
  auto gen = GenerateFabric(levels, spec);
  nodes->insert(nodes->end(), std::make_move_iterator(gen.begin()), std::make_move_iterator(gen.end()));
  return Status::Ok();
}

struct Switch {
  std::string name, level, parent;
  size_t index;
};

// Resolves each switch's labels by walking parents; detects unknown parents, level mismatches and cycles.
Status ResolveSwitches(const std::vector<Switch>& sw, const TopologyLevels& levels, const std::string& prefix,
                       std::map<std::string, std::map<std::string, std::string>>* labels) {
  auto at = [&](size_t i) { return prefix + "[" + std::to_string(i) + "]"; };
  std::map<std::string, const Switch*> by_name;
  for (const auto& s : sw) {
    if (!by_name.emplace(s.name, &s).second) {
      return Status::Error(at(s.index) + ".name: duplicate switch \"" + s.name + "\"");
    }
  }
  // Pass 1: the parent links alone must form a forest (no unknown parent, no cycle).
  for (const auto& s : sw) {
    std::vector<std::string> chain{s.name};
    std::set<std::string> seen{s.name};
    for (const Switch* cur = &s; !cur->parent.empty();) {
      auto it = by_name.find(cur->parent);
      if (it == by_name.end()) {
        return Status::Error(at(cur->index) + ".parent: switch " + cur->name + " names unknown parent \"" +
                             cur->parent + "\"");
      }
      if (!seen.insert(cur->parent).second) {
        std::string c;
        for (const auto& n : chain) c += n + " -> ";
        return Status::Error(at(cur->index) + ".parent: cycle: " + c + cur->parent);
      }
      chain.push_back(cur->parent);
      cur = it->second;
    }
  }
  // Pass 2: levels go exactly one step outwards per parent; collect each switch's labels.
  for (const auto& s : sw) {
    const std::string p = at(s.index);
    const int lvl = levels.Find(s.level);
    if (lvl < 0 || lvl == levels.node_level()) {
      return Status::Error(p + ".level: unknown level \"" + s.level + "\" for switch " + s.name + " (accepted: " +
                           [&] {
                             std::string a;
                             for (const auto& l : levels.levels) a += (a.empty() ? "" : ", ") + l.name;
                             return a;
                           }() +
                           ")");
    }
    std::map<std::string, std::string> out;
    const Switch* cur = &s;
    while (true) {
      const int cl = levels.Find(cur->level);
      if (cl < 0) break;  // reported when that switch itself is checked
      out[levels.levels[static_cast<size_t>(cl)].label_key] = cur->name;
      if (cur->parent.empty()) {
        if (cl != 0) {
          return Status::Error(at(cur->index) + ".parent: switch " + cur->name +
                               " at level " + cur->level + " needs a parent at level " +
                               levels.levels[static_cast<size_t>(cl - 1)].name);
        }
        break;
      }
      const Switch* parent = by_name.at(cur->parent);
      const int pl = levels.Find(parent->level);
      if (pl != cl - 1) {
        return Status::Error(at(cur->index) + ".parent: switch " + cur->name + " (level " +
                             cur->level + ") has parent " + parent->name + " at level " + parent->level +
                             "; expected level " + (cl > 0 ? levels.levels[static_cast<size_t>(cl - 1)].name : "none"));
      }
      cur = parent;
    }
    (*labels)[s.name] = std::move(out);
  }
  return Status::Ok();
}

// A node's allocated resources fit its capacity: more would read as a full node (or negative free
// room) and hide the typo. field: the node's entry (nodes[3], overrides[0]).
Status CheckAllocated(const Node& n, const std::string& field) {
  auto over = [&](const char* r, int64_t used, int64_t cap, std::string (*fmt)(int64_t)) {
    return Status::Error(field + ".allocated." + r + ": " + fmt(used) + " is above node " + n.name + "'s capacity (" +
                         fmt(cap) + ")");
  };
  auto plain = [](int64_t v) { return std::to_string(v); };
  if (n.allocated.gpus > n.capacity.gpus) return over("gpus", n.allocated.gpus, n.capacity.gpus, plain);
  if (n.allocated.cpu_milli > n.capacity.cpu_milli) return over("cpu", n.allocated.cpu_milli, n.capacity.cpu_milli, FormatMilli);
  if (n.allocated.memory_bytes > n.capacity.memory_bytes) {
    return over("memory", n.allocated.memory_bytes, n.capacity.memory_bytes, FormatBytes);
  }
  return Status::Ok();
}

// A node given in the file carries a valid label for every topology level (switch-derived ones
// included). field: the node's entry (nodes[3]).
Status CheckNodeLabels(const Node& n, const TopologyLevels& levels, const std::string& field) {
  for (const auto& l : levels.levels) {
    auto it = n.labels.find(l.label_key);
    if (it == n.labels.end()) {
      return Status::Error(field + ".labels: node " + n.name + " has no label " + l.label_key + " (topology level " +
                           l.name + "; give labels or switch)");
    }
    if (!IsValidLabelValue(it->second)) {
      return Status::Error(field + ".labels." + l.label_key + ": node " + n.name + ", topology level " + l.name +
                           ": invalid value \"" + it->second.substr(0, 100) +
                           "\" (1-63 characters [A-Za-z0-9._-], starting and ending alphanumeric)");
    }
  }
  return Status::Ok();
}

// Where each node name came from: "nodes[3]", or "fabric" for a generated one.
using NodeOrigins = std::map<std::string, std::string>;

// A name given twice is an error naming both entries.
Status CheckNodeName(const std::string& name, const std::string& field, NodeOrigins* origins) {
  auto [it, fresh] = origins->emplace(name, field);
  if (fresh) return Status::Ok();
  return Status::Error(field + ".name: duplicate node \"" + name + "\" (first " +
                       (it->second == "fabric" ? "generated by fabric" : "at " + it->second) + ")");
}

}  // namespace

StatusOr<ClusterSpec> DecodeClusterSpec(const Document& doc, const std::string& field) {
  const nlohmann::json* root = &doc.root;
  if (!field.empty()) {
    if (!doc.root.is_object() || !doc.root.contains(field)) return Status::Error(field + ": required");
    root = &doc.root.at(field);
  }
  ClusterSpec spec;
  Fields f(*root, field);
  if (const auto* l = f.Get("levels")) {
    if (Status s = DecodeLevels(*l, f.Sub("levels"), &spec.levels); !s.ok()) return doc.Locate(s);
  }
  if (const auto* fab = f.Get("fabric")) {
    if (Status s = DecodeFabric(*fab, f.Sub("fabric"), spec.levels, &spec.nodes); !s.ok()) return doc.Locate(s);
  }
  std::map<std::string, std::map<std::string, std::string>> switch_labels;
  bool have_switches = false;
  if (const auto* sw = f.Get("switches")) {
    if (!sw->is_array()) return doc.Locate(Status::Error(f.Sub("switches") + ": must be a list"));
    std::vector<Switch> list;
    for (size_t i = 0; i < sw->size(); ++i) {
      Fields s((*sw)[i], f.Sub("switches") + "[" + std::to_string(i) + "]");
      Switch x;
      x.index = i;
      s.Str("name", &x.name, true);
      s.Str("level", &x.level, true);
      s.Str("parent", &x.parent);
      if (Status st = s.Done(); !st.ok()) return doc.Locate(st);
      list.push_back(std::move(x));
    }
    if (Status s = ResolveSwitches(list, spec.levels, f.Sub("switches"), &switch_labels); !s.ok()) return doc.Locate(s);
    have_switches = true;
  }
  NodeOrigins origins;
  for (const auto& n : spec.nodes) origins.emplace(n.name, "fabric");
  if (const auto* nodes = f.Get("nodes")) {
    if (!nodes->is_array()) return doc.Locate(Status::Error(f.Sub("nodes") + ": must be a list"));
    for (size_t i = 0; i < nodes->size(); ++i) {
      Fields nf((*nodes)[i], f.Sub("nodes") + "[" + std::to_string(i) + "]");
      Node n;
      nf.Str("name", &n.name, true);
      nf.StringMap("labels", &n.labels);
      std::string sw;
      nf.Str("switch", &sw);
      nf.ResourcesField("capacity", &n.capacity, true);
      nf.ResourcesField("allocated", &n.allocated);
      std::string health = "ready", pool = "shared";
      nf.Str("health", &health);
      nf.Str("pool", &pool);
      nf.Str("gpuModel", &n.gpu_model);
      if (Status s = nf.Done(); !s.ok()) return doc.Locate(s);
      if (Status s = limits::CheckSize(n.name, limits::kMaxNameBytes, nf.Sub("name")); !s.ok()) return doc.Locate(s);
      if (Status s = limits::CheckResources(n.capacity, nf.Sub("capacity")); !s.ok()) return doc.Locate(s);
      if (Status s = CheckAllocated(n, f.Sub("nodes") + "[" + std::to_string(i) + "]"); !s.ok()) return doc.Locate(s);
      auto h = ParseNodeHealth(health, nf.Sub("health"));
      if (!h.ok()) return doc.Locate(h.status());
      n.health = *h;
      auto p = ParsePool(pool, nf.Sub("pool"));
      if (!p.ok()) return doc.Locate(p.status());
      n.pool = *p;
      if (!sw.empty()) {
        if (!have_switches) return doc.Locate(Status::Error(nf.Sub("switch") + ": node " + n.name + " names a switch but the file has no switches"));
        auto it = switch_labels.find(sw);
        if (it == switch_labels.end()) {
          return doc.Locate(Status::Error(nf.Sub("switch") + ": node " + n.name + " names unknown switch \"" + sw + "\""));
        }
        const auto& deepest = spec.levels.levels.back().label_key;
        if (!it->second.count(deepest)) {
          return doc.Locate(Status::Error(nf.Sub("switch") + ": node " + n.name + ": switch " + sw +
                                          " is not at the deepest level (" + spec.levels.levels.back().name + ")"));
        }
        for (const auto& [k, v] : it->second) {
          // A topology label given beside the switch must agree with it: neither silently wins.
          if (auto given = n.labels.find(k); given != n.labels.end() && given->second != v) {
            return doc.Locate(Status::Error(nf.Sub("labels") + "." + k + ": node " + n.name + " has \"" +
                                            given->second.substr(0, 100) + "\" but its switch " + sw + " says \"" + v +
                                            "\" (give one of labels or switch for the topology)"));
          }
          n.labels[k] = v;
        }
      }
      if (Status s = CheckNodeName(n.name, nf.path(), &origins); !s.ok()) return doc.Locate(s);
      if (Status s = CheckNodeLabels(n, spec.levels, nf.path()); !s.ok()) return doc.Locate(s);
      spec.nodes.push_back(std::move(n));
    }
  }
  if (const auto* ov = f.Get("overrides")) {
    if (!ov->is_array()) return doc.Locate(Status::Error(f.Sub("overrides") + ": must be a list"));
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < spec.nodes.size(); ++i) index.emplace(spec.nodes[i].name, i);
    std::map<std::string, std::string> overridden;  // node -> its override (overrides[2])
    for (size_t i = 0; i < ov->size(); ++i) {
      Fields of((*ov)[i], f.Sub("overrides") + "[" + std::to_string(i) + "]");
      std::string name, health, pool;
      of.Str("node", &name, true);
      auto it = index.find(name);
      if (of.status().ok() && it == index.end()) of.FailField("node", "unknown node \"" + name + "\"");
      if (auto [at, fresh] = overridden.emplace(name, of.path()); it != index.end() && !fresh) {
        of.FailField("node", "node " + name + " is overridden already by " + at->second + " (give one override per node)");
      }
      Node dummy;
      Node& n = it == index.end() ? dummy : spec.nodes[it->second];
      of.ResourcesField("allocated", &n.allocated);
      of.Str("health", &health);
      of.Str("pool", &pool);
      if (Status s = of.Done(); !s.ok()) return doc.Locate(s);
      if (Status s = CheckAllocated(n, f.Sub("overrides") + "[" + std::to_string(i) + "]"); !s.ok()) return doc.Locate(s);
      if (!health.empty()) {
        auto h = ParseNodeHealth(health, of.Sub("health"));
        if (!h.ok()) return doc.Locate(h.status());
        n.health = *h;
      }
      if (!pool.empty()) {
        auto p = ParsePool(pool, of.Sub("pool"));
        if (!p.ok()) return doc.Locate(p.status());
        n.pool = *p;
      }
    }
  }
  if (Status s = f.Done(); !s.ok()) return doc.Locate(s);
  if (spec.nodes.empty()) return doc.Locate(Status::Error((field.empty() ? "nodes" : field + ".nodes") + ": the cluster has no nodes (give fabric or nodes)"));
  return spec;
}

StatusOr<ClusterSpec> LoadClusterFile(const std::string& path) {
  auto doc = LoadDocument(path);
  if (!doc.ok()) return doc.status();
  return DecodeClusterSpec(*doc);
}

StatusOr<ClusterState> LoadCluster(const std::string& path) {
  auto spec = LoadClusterFile(path);
  if (!spec.ok()) return spec.status();
  auto st = ClusterState::Build(spec->levels, std::move(spec->nodes));
  if (!st.ok()) return Status::Error(path + ": " + st.status().Message());
  return st;
}

}  // namespace tidal
