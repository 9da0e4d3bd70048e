#include "sim/policies/baseline_placement.h"

#include <algorithm>

#include "core/state/lending.h"
#include "sim/fabric.h"

namespace tidal::sim {

bool NodeAdmits(const Node& n, const Workload& w) {
  return n.Schedulable() && PoolAdmits(n.pool, w.front_door) && (w.gpu_model.empty() || n.gpu_model == w.gpu_model);
}

namespace {

struct Fill {
  const ClusterState& st;
  const Workload& w;
  const std::vector<int64_t>* cap;
  int64_t g;
  int32_t need;
  std::vector<MemberAssignment>* out;

  int64_t NodeFit(NodeId n) const {
    const Node& node = st.node(n);
    if (!NodeAdmits(node, w)) return 0;
    int64_t fit = std::max<int64_t>(0, node.Free().CopiesOf(w.per_member));
    if (cap != nullptr && g > 0) fit = std::min(fit, std::max<int64_t>(0, (*cap)[static_cast<size_t>(n)]) / g);
    return fit;
  }
  void Walk(VertexId v) {
    if (need <= 0) return;
    if (g > 0 && st.MemberCapacity(v, g) <= 0) return;
    const Vertex& vx = st.vertex(v);
    if (vx.child_begin < vx.child_end) {
      for (VertexId c = vx.child_begin; c < vx.child_end && need > 0; ++c) Walk(c);
      return;
    }
    for (NodeId n = vx.node_begin; n < vx.node_end && need > 0; ++n) {
      const int64_t fit = std::min<int64_t>(NodeFit(n), need);
      if (fit <= 0) continue;
      out->push_back(MemberAssignment{n, static_cast<int32_t>(fit)});
      need -= static_cast<int32_t>(fit);
    }
  }
};

}  // namespace

bool FirstFit(const ClusterState& st, const Workload& w, int32_t members, const std::vector<int64_t>* gpu_cap,
              std::vector<MemberAssignment>* out) {
  out->clear();
  if (members <= 0 || st.node_count() == 0) return false;
  if (w.per_member.gpus > 0 && st.MemberCapacity(st.root(), w.per_member.gpus) < members) return false;
  Fill f{st, w, gpu_cap, w.per_member.gpus, members, out};
  f.Walk(st.root());
  if (f.need > 0) {
    out->clear();
    return false;
  }
  return true;
}

bool FirstFitOnFree(const ClusterState& st, const Workload& w, int32_t members, const std::vector<int64_t>& free,
                    std::vector<MemberAssignment>* out) {
  out->clear();
  const int64_t g = w.per_member.gpus;
  int32_t need = members;
  for (NodeId n = 0; n < st.node_count() && need > 0; ++n) {
    if (!NodeAdmits(st.node(n), w)) continue;
    const int64_t f = free[static_cast<size_t>(n)];
    const int64_t fit = std::min<int64_t>(g > 0 ? std::max<int64_t>(0, f) / g : need, need);
    if (fit <= 0) continue;
    out->push_back(MemberAssignment{n, static_cast<int32_t>(fit)});
    need -= static_cast<int32_t>(fit);
  }
  if (need > 0) {
    out->clear();
    return false;
  }
  return true;
}

int64_t MaxNodeFreeGpus(const ClusterState& st) {
  for (int64_t k = st.max_gpus_per_node(); k > 0; --k) {
    if (st.MemberCapacity(st.root(), k) > 0) return k;
  }
  return 0;
}

NodeId LeastAllocatedNode(const ClusterState& st, const Workload& w, bool uniform_capacity) {
  const int64_t g = w.per_member.gpus;
  auto fits = [&](NodeId n) {
    const Node& node = st.node(n);
    return NodeAdmits(node, w) && node.Free().Covers(w.per_member);
  };
  if (uniform_capacity && g > 0) {
    // Fast path: the most free GPUs any node has, then the first node (in id order) with that many.
    const int64_t k = MaxNodeFreeGpus(st);
    if (k < g) return kNoNode;
    VertexId v = st.root();
    while (st.vertex(v).child_begin < st.vertex(v).child_end) {
      VertexId next = -1;
      for (VertexId c = st.vertex(v).child_begin; c < st.vertex(v).child_end; ++c) {
        if (st.MemberCapacity(c, k) > 0) {
          next = c;
          break;
        }
      }
      if (next < 0) break;
      v = next;
    }
    for (NodeId n = st.vertex(v).node_begin; n < st.vertex(v).node_end; ++n) {
      if (st.node(n).FreeGpus() == k && fits(n)) return n;
    }
    // CPU, memory, pool or model refused the emptiest node: fall through to the full scan.
  }
  NodeId best = kNoNode;
  double best_score = -1;
  for (NodeId n = 0; n < st.node_count(); ++n) {
    if (!fits(n)) continue;
    const Node& node = st.node(n);
    const double score = node.capacity.gpus > 0 ? static_cast<double>(node.FreeGpus() - g) / static_cast<double>(node.capacity.gpus) : 0;
    if (score > best_score) {
      best_score = score;
      best = n;
    }
  }
  return best;
}

std::string NeverFitsOn(const ClusterState& st, const Workload& w, const std::function<bool(const Node&)>& admits,
                        const std::string& where) {
  int64_t cap = 0;
  for (const auto& n : st.nodes()) {
    if (!admits(n)) continue;
    cap += std::max<int64_t>(0, n.capacity.CopiesOf(w.per_member));
    if (cap >= w.min_members) return "";
  }
  const Resources& r = w.per_member;
  const std::string shape = r.cpu_milli == 0 && r.memory_bytes == 0 ? std::to_string(r.gpus) + " GPU" : r.ToString();
  return "can never fit: needs " + std::to_string(w.min_members) + " member(s) of " + shape + "; " + where +
         " holds at most " + std::to_string(cap) + " such member(s)";
}

std::string DoorPlaces(const ClusterState& st, const Workload& w) {
  return HasPools(st) ? "the " + std::string(PoolName(PoolOwnedBy(w.front_door))) + " pool" : std::string("the cluster");
}

std::string NeverFits::Check(const ClusterState& st, const Workload& w) {
  for (const auto& e : memo_) {
    if (e.per_member == w.per_member && e.members == w.min_members && e.gpu_model == w.gpu_model && e.door == w.front_door) {
      return e.why;
    }
  }
  std::string why = NeverFitsOn(st, w, [&w](const Node& n) { return NodeAdmits(n, w); }, DoorPlaces(st, w));
  memo_.push_back(Entry{w.per_member, w.min_members, w.gpu_model, w.front_door, why});
  return why;
}

bool ShapeMemo::Failed(const Workload& w, int tag) const {
  for (const auto& k : failed_) {
    if (k.tag == tag && k.members == w.members && k.per_member == w.per_member && k.gpu_model == w.gpu_model &&
        k.door == w.front_door) {
      return true;
    }
  }
  return false;
}

void ShapeMemo::Fail(const Workload& w, int tag) {
  failed_.push_back(Key{w.per_member, w.members, w.gpu_model, w.front_door, tag});
}

}  // namespace tidal::sim
