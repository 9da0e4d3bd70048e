#include "core/state/cluster_state.h"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace tidal {
namespace {

// Natural order: "leaf-2" < "leaf-10".
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      std::string_view na(a.data() + i, i2 - i), nb(b.data() + j, j2 - j);
      while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  // Numerically equal but different ("l01" vs "l1"): still distinct values, so order them
  // plainly; treating them as equivalent breaks the sort's strict weak order.
  return a < b;
}

}  // namespace

StatusOr<ClusterState> ClusterState::Build(TopologyLevels levels, std::vector<Node> nodes) {
  ClusterState s;
  s.levels_ = std::move(levels);
  const size_t nlevels = s.levels_.levels.size();
  for (size_t i = 0; i < nlevels; ++i) {
    const auto& l = s.levels_.levels[i];
    if (l.name.empty() || l.label_key.empty()) {
      return Status::Error("topology.levels[" + std::to_string(i) + "]: name and label key must be set");
    }
    if (l.name == "node") return Status::Error("topology.levels[" + std::to_string(i) + "]: \"node\" is implicit");
    for (size_t j = 0; j < i; ++j) {
      if (s.levels_.levels[j].name == l.name) {
        return Status::Error("topology.levels[" + std::to_string(i) + "]: duplicate level \"" + l.name + "\"");
      }
    }
  }
  // Validate nodes and extract the per-level keys.
  std::vector<std::vector<std::string>> keys(nodes.size());
  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.name.empty()) return Status::Error("nodes[" + std::to_string(i) + "].name: must not be empty");
    if (!seen.emplace(n.name, i).second) {
      return Status::Error("node " + n.name + ": name: duplicate node name");
    }
    if (n.capacity.AnyNegative()) return Status::Error("node " + n.name + ": capacity: must not be negative");
    if (n.allocated.AnyNegative()) return Status::Error("node " + n.name + ": allocated: must not be negative");
    for (const auto& l : s.levels_.levels) {
      auto it = n.labels.find(l.label_key);
      if (it == n.labels.end()) {
        return Status::Error("node " + n.name + ": label " + l.label_key + " (topology level " + l.name +
                             "): missing");
      }
      if (!IsValidLabelValue(it->second)) {
        return Status::Error("node " + n.name + ": label " + l.label_key + " (topology level " + l.name +
                             "): invalid value \"" + it->second +
                             "\" (1-63 characters [A-Za-z0-9._-], starting and ending alphanumeric)");
      }
      keys[i].push_back(it->second);
    }
  }
  std::vector<size_t> order(nodes.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    for (size_t l = 0; l < nlevels; ++l) {
      if (keys[a][l] != keys[b][l]) return NaturalLess(keys[a][l], keys[b][l]);
    }
    return NaturalLess(nodes[a].name, nodes[b].name);
  });
  s.nodes_.reserve(nodes.size());
  std::vector<std::vector<std::string>> sorted_keys;
  sorted_keys.reserve(nodes.size());
  for (size_t i : order) {
    s.nodes_.push_back(std::move(nodes[i]));
    sorted_keys.push_back(std::move(keys[i]));
  }
  const NodeId total = static_cast<NodeId>(s.nodes_.size());
  for (NodeId i = 0; i < total; ++i) s.node_index_.emplace(s.nodes_[static_cast<size_t>(i)].name, i);

  // Vertices, level by level: split each parent's node range by the next level's label value.
  s.vertices_.push_back(Vertex{-1, -1, "", "", 1, 1, 0, total});
  VertexId prev_begin = 0, prev_end = 1;
  for (size_t l = 0; l < nlevels; ++l) {
    const VertexId begin = static_cast<VertexId>(s.vertices_.size());
    for (VertexId p = prev_begin; p < prev_end; ++p) {
      const VertexId first_child = static_cast<VertexId>(s.vertices_.size());
      NodeId i = s.vertices_[static_cast<size_t>(p)].node_begin;
      const NodeId end = s.vertices_[static_cast<size_t>(p)].node_end;
      while (i < end) {
        NodeId j = i;
        while (j < end && sorted_keys[static_cast<size_t>(j)][l] == sorted_keys[static_cast<size_t>(i)][l]) ++j;
        Vertex v;
        v.level = static_cast<int>(l);
        v.parent = p;
        v.name = sorted_keys[static_cast<size_t>(i)][l];
        const auto& pp = s.vertices_[static_cast<size_t>(p)].path;
        v.path = pp.empty() ? v.name : pp + "/" + v.name;
        v.node_begin = i;
        v.node_end = j;
        s.vertices_.push_back(std::move(v));
        i = j;
      }
      s.vertices_[static_cast<size_t>(p)].child_begin = first_child;
      s.vertices_[static_cast<size_t>(p)].child_end = static_cast<VertexId>(s.vertices_.size());
    }
    s.level_ranges_.emplace_back(begin, static_cast<VertexId>(s.vertices_.size()));
    prev_begin = begin;
    prev_end = static_cast<VertexId>(s.vertices_.size());
  }
  // Deepest vertices have no child vertices.
  for (VertexId v = prev_begin; v < prev_end; ++v) {
    s.vertices_[static_cast<size_t>(v)].child_begin = s.vertices_[static_cast<size_t>(v)].child_end = 0;
  }
  if (nlevels == 0) s.vertices_[0].child_begin = s.vertices_[0].child_end = 0;
  s.node_parent_.assign(static_cast<size_t>(total), 0);
  for (VertexId v = prev_begin; v < prev_end; ++v) {
    const auto& vx = s.vertices_[static_cast<size_t>(v)];
    for (NodeId n = vx.node_begin; n < vx.node_end; ++n) s.node_parent_[static_cast<size_t>(n)] = v;
  }

  // Aggregates.
  for (const auto& n : s.nodes_) s.max_gpus_ = std::max(s.max_gpus_, n.capacity.gpus);
  const size_t width = static_cast<size_t>(s.max_gpus_ + 1);
  s.hist_.assign(s.vertices_.size() * width, 0);
  s.cap_hist_.assign(s.vertices_.size() * width, 0);
  s.cordoned_hist_.assign(s.vertices_.size() * width, 0);
  s.free_gpus_.assign(s.vertices_.size(), 0);
  s.cordoned_free_.assign(s.vertices_.size(), 0);
  s.whole_free_.assign(s.vertices_.size(), 0);
  for (NodeId n = 0; n < total; ++n) {
    const Node& node = s.nodes_[static_cast<size_t>(n)];
    const NodeShare sh = s.ShareOf(node);
    for (VertexId v = s.node_parent_[static_cast<size_t>(n)]; v >= 0; v = s.vertices_[static_cast<size_t>(v)].parent) {
      const size_t row = static_cast<size_t>(v) * width;
      s.hist_[row + static_cast<size_t>(sh.free)]++;
      s.cap_hist_[row + static_cast<size_t>(node.capacity.gpus)]++;
      s.free_gpus_[static_cast<size_t>(v)] += sh.free;
      s.whole_free_[static_cast<size_t>(v)] += sh.whole ? 1 : 0;
      if (sh.cordoned >= 0) {
        s.cordoned_hist_[row + static_cast<size_t>(sh.cordoned)]++;
        s.cordoned_free_[static_cast<size_t>(v)] += sh.cordoned;
      }
    }
  }
  return s;
}

NodeId ClusterState::FindNode(std::string_view name) const {
  auto it = node_index_.find(std::string(name));
  return it == node_index_.end() ? kNoNode : it->second;
}

VertexId ClusterState::AncestorAt(NodeId n, int level) const {
  VertexId v = node_parent_[static_cast<size_t>(n)];
  while (v >= 0 && vertices_[static_cast<size_t>(v)].level > level) v = vertices_[static_cast<size_t>(v)].parent;
  return (v >= 0 && vertices_[static_cast<size_t>(v)].level == level) ? v : -1;
}

std::string ClusterState::NodePath(NodeId n) const {
  const auto& p = vertices_[static_cast<size_t>(node_parent_[static_cast<size_t>(n)])].path;
  return p.empty() ? node(n).name : p + "/" + node(n).name;
}

int64_t ClusterState::NodeMemberCapacity(int64_t free_gpus, int64_t gpus_per_member) {
  if (gpus_per_member <= 0) return 1 << 30;
  return free_gpus / gpus_per_member;
}

namespace {
// Members of g GPUs that nodes counted by free GPUs in h[0..max] hold: sum of h[k] * (k / g),
// without a division per bucket (this runs for every vertex a placement search visits).
int64_t CountMembers(const int32_t* h, int64_t g, int64_t max) {
  int64_t c = 0;
  for (int64_t m = 1, k = g; k <= max; ++m) {
    for (const int64_t end = std::min(k + g, max + 1); k < end; ++k) c += static_cast<int64_t>(h[k]) * m;
  }
  return c;
}
}  // namespace

int64_t ClusterState::MemberCapacity(VertexId v, int64_t g, bool with_cordoned) const {
  if (g <= 0) return int64_t{1} << 40;  // GPU-less members: no GPU bound; the node scan decides.
  if (g > max_gpus_) return 0;
  if (g == 1) return FreeGpus(v, with_cordoned);  // the histograms' GPU sums, kept up to date
  int64_t c = CountMembers(Hist(v), g, max_gpus_);
  // Cordoned nodes sit in hist_ at 0 free, so adding their own histogram counts each node once.
  if (with_cordoned) c += CountMembers(CordonedHist(v), g, max_gpus_);
  return c;
}

int64_t ClusterState::TightestNodeFree(VertexId v, int64_t g, int32_t members, bool with_cordoned) const {
  const int32_t* h = Hist(v);
  const int32_t* ch = with_cordoned ? CordonedHist(v) : nullptr;
  for (int64_t k = std::max<int64_t>(g * members, 0); k <= max_gpus_; ++k) {
    if (h[k] > 0 || (ch != nullptr && ch[k] > 0)) return k;
  }
  return max_gpus_ + 1;
}

int64_t ClusterState::StaticMemberCapacity(VertexId v, int64_t g) const {
  if (g <= 0) return int64_t{1} << 40;
  if (g > max_gpus_) return 0;
  return CountMembers(&cap_hist_[static_cast<size_t>(v) * static_cast<size_t>(max_gpus_ + 1)], g, max_gpus_);
}

ClusterState::NodeShare ClusterState::ShareOf(const Node& node) const {
  NodeShare s;
  s.free = std::clamp<int64_t>(node.FreeGpus(), 0, max_gpus_);
  s.whole = node.WhollyFree();
  if (node.health == NodeHealth::kCordoned) s.cordoned = std::clamp<int64_t>(node.capacity.gpus - node.allocated.gpus, 0, max_gpus_);
  return s;
}

void ClusterState::NodeShareChanged(NodeId n, const NodeShare& before) {
  const NodeShare now = ShareOf(nodes_[static_cast<size_t>(n)]);
  const int32_t dw = (now.whole ? 1 : 0) - (before.whole ? 1 : 0);
  if (now.free == before.free && dw == 0 && now.cordoned == before.cordoned) return;
  const size_t width = static_cast<size_t>(max_gpus_ + 1);
  for (VertexId v = node_parent_[static_cast<size_t>(n)]; v >= 0; v = vertices_[static_cast<size_t>(v)].parent) {
    int32_t* h = Hist(v);
    h[before.free]--;
    h[now.free]++;
    free_gpus_[static_cast<size_t>(v)] += now.free - before.free;
    whole_free_[static_cast<size_t>(v)] += dw;
    if (before.cordoned >= 0) {
      cordoned_hist_[static_cast<size_t>(v) * width + static_cast<size_t>(before.cordoned)]--;
      cordoned_free_[static_cast<size_t>(v)] -= before.cordoned;
    }
    if (now.cordoned >= 0) {
      cordoned_hist_[static_cast<size_t>(v) * width + static_cast<size_t>(now.cordoned)]++;
      cordoned_free_[static_cast<size_t>(v)] += now.cordoned;
    }
  }
}

void ClusterState::Allocate(NodeId n, const Resources& r) {
  Node& node = nodes_[static_cast<size_t>(n)];
  const NodeShare before = ShareOf(node);
  node.allocated += r;
  NodeShareChanged(n, before);
}

void ClusterState::Release(NodeId n, const Resources& r) {
  Node& node = nodes_[static_cast<size_t>(n)];
  const NodeShare before = ShareOf(node);
  node.allocated -= r;
  NodeShareChanged(n, before);
}

void ClusterState::SetHealth(NodeId n, NodeHealth h) {
  Node& node = nodes_[static_cast<size_t>(n)];
  const NodeShare before = ShareOf(node);
  node.health = h;
  NodeShareChanged(n, before);
}

void ClusterState::SetPool(NodeId n, Pool pool, Pool lent_by, bool lent_preemptible_only) {
  Node& node = nodes_[static_cast<size_t>(n)];
  node.pool = pool;
  node.lent_by = lent_by;
  node.lent_preemptible_only = lent_preemptible_only;
}

void ClusterState::CountPreemptible(const Workload& w, int64_t members) {
  if (!w.preemptible || w.per_member.gpus <= 0) return;
  const int64_t gpus = w.per_member.gpus * members;
  preemptible_gpus_ += gpus;
  if ((preemptible_by_queue_[w.queue] += gpus) == 0) preemptible_by_queue_.erase(w.queue);
}

namespace {
// dst = src, without copying what is equal already: between two cycles a node's name, labels,
// taints and pools rarely change, and copying them (a map of strings per node) was most of the
// future view's cost. Comparing costs no allocation.
template <typename T>
void AssignIfChanged(T& dst, const T& src) {
  if (!(dst == src)) dst = src;
}
void AssignNode(Node& dst, const Node& src) {
  AssignIfChanged(dst.name, src.name);
  AssignIfChanged(dst.labels, src.labels);
  dst.capacity = src.capacity;
  dst.allocated = src.allocated;
  dst.health = src.health;
  dst.pool = src.pool;
  dst.lent_by = src.lent_by;
  dst.lent_preemptible_only = src.lent_preemptible_only;
  AssignIfChanged(dst.named_pool, src.named_pool);
  dst.named_pool_lent = src.named_pool_lent;
  AssignIfChanged(dst.gpu_model, src.gpu_model);
  AssignIfChanged(dst.taints, src.taints);
  // Every member above: a member added to Node must be added here too (Node's members, in order).
  struct Members {
    std::string name;
    std::map<std::string, std::string> labels;
    Resources capacity, allocated;
    NodeHealth health;
    Pool pool, lent_by;
    bool lent_preemptible_only;
    std::string named_pool;
    bool named_pool_lent;
    std::string gpu_model;
    std::vector<Taint> taints;
  };
  static_assert(sizeof(Node) == sizeof(Members), "Node changed: update AssignNode");
}
}  // namespace

void ClusterState::AssignCapacity(const ClusterState& other) {
  levels_ = other.levels_;
  if (nodes_.size() == other.nodes_.size()) {
    for (size_t i = 0; i < nodes_.size(); ++i) AssignNode(nodes_[i], other.nodes_[i]);
  } else {
    nodes_ = other.nodes_;
  }
  node_index_ = other.node_index_;
  vertices_ = other.vertices_;
  level_ranges_ = other.level_ranges_;
  node_parent_ = other.node_parent_;
  max_gpus_ = other.max_gpus_;
  hist_ = other.hist_;
  cap_hist_ = other.cap_hist_;
  cordoned_hist_ = other.cordoned_hist_;
  free_gpus_ = other.free_gpus_;
  cordoned_free_ = other.cordoned_free_;
  whole_free_ = other.whole_free_;
  running_.clear();
  preemptible_gpus_ = other.preemptible_gpus_;
  preemptible_by_queue_ = other.preemptible_by_queue_;
  // Every member above: a member added to the class must be added here too.
  static_assert(sizeof(ClusterState) == sizeof(TopologyLevels) + 10 * sizeof(std::vector<int32_t>) + 3 * sizeof(running_) +
                                            2 * sizeof(int64_t),
                "ClusterState changed: update AssignCapacity");
}

Status ClusterState::AddRunning(Allocation a) {
  if (running_.count(a.workload.id)) return Status::Error("workload " + a.workload.id + ": already running");
  for (const auto& as : a.assignments) {
    if (as.node < 0 || as.node >= node_count()) {
      return Status::Error("workload " + a.workload.id + ": assignment to unknown node id " + std::to_string(as.node));
    }
  }
  for (const auto& as : a.assignments) {
    Allocate(as.node, a.workload.per_member * as.members);
    CountPreemptible(a.workload, as.members);
  }
  std::string id = a.workload.id;
  running_.emplace(std::move(id), std::move(a));
  return Status::Ok();
}

Status ClusterState::RemoveRunning(const std::string& id) {
  auto it = running_.find(id);
  if (it == running_.end()) return Status::Error("workload " + id + ": not running");
  for (const auto& as : it->second.assignments) {
    Release(as.node, it->second.workload.per_member * as.members);
    CountPreemptible(it->second.workload, -as.members);
  }
  running_.erase(it);
  return Status::Ok();
}

Status ClusterState::ReleaseMembers(const std::string& id, NodeId n, int32_t members) {
  auto it = running_.find(id);
  if (it == running_.end()) return Status::Error("workload " + id + ": not running");
  auto& as = it->second.assignments;
  auto a = std::find_if(as.begin(), as.end(), [n](const MemberAssignment& x) { return x.node == n; });
  if (a == as.end() || a->members < members || members < 0) {
    return Status::Error("workload " + id + ": fewer than " + std::to_string(members) + " members on node " +
                         (n >= 0 && n < node_count() ? node(n).name : std::to_string(n)));
  }
  Release(n, it->second.workload.per_member * members);
  CountPreemptible(it->second.workload, -members);
  a->members -= members;
  it->second.workload.members -= members;
  if (a->members == 0) as.erase(a);
  if (as.empty()) running_.erase(it);
  return Status::Ok();
}

}  // namespace tidal
