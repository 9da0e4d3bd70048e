#include "core/framework/placement.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <unordered_set>

#include "core/framework/model_bound.h"

namespace tidal {

struct PlacementSearch::Ctx {
  const CycleState& cs;
  const Workload& w;
  int64_t g = 0;        // GPUs per member
  int32_t need = 0;     // members to place
  int target = 0;       // domain level being tried (-1 = whole cluster)
  size_t limit = 1;     // candidates wanted
  std::vector<Candidate>* out = nullptr;
  // Why visited nodes were refused, for the explanation when nothing fits.
  int64_t refused_pool = 0, refused_model = 0, refused_degraded = 0, refused_health = 0, refused_resources = 0, refused_filter = 0, refused_reserved = 0,
          refused_closing = 0;
  int64_t refused_constraints = 0, refused_lent = 0;
  const PlacementConstraints* c = nullptr;
  Status first_filter_refusal;
  std::string first_constraint_refusal;
  // Nodes already counted above: the search may visit a node once per domain level tried.
  std::unordered_set<NodeId> refused{};
  // The workload tolerates node.kubernetes.io/unschedulable: cordoned nodes count as capacity.
  bool cordoned = false;
  // Per c->model_caps entry: members the candidate being filled may still put on that model.
  std::vector<int32_t> model_left{};
  int64_t refused_model_quota = 0;
  std::string first_model_quota_refusal{};
  int64_t refused_named_pool = 0, refused_pool_lent_out = 0;  // a named pool's nodes: not its queue's; lent out
};

bool PlacementSearch::IsDeepest(VertexId v) const {
  const Vertex& x = state_.vertex(v);
  return x.child_begin == x.child_end;
}

int64_t PlacementSearch::NodeFit(NodeId n, Ctx& ctx) const {
  const Node& node = state_.node(n);
  // Counts each refused node once, however many domain levels visit it.
  auto refuse = [&](int64_t& counter) -> int64_t {
    if (ctx.refused.insert(n).second) ++counter;
    return 0;
  };
  if (!node.SchedulableFor(ctx.cordoned)) return refuse(ctx.refused_health);
  if (!PoolAdmits(node.pool, ctx.w.front_door)) return refuse(ctx.refused_pool);
  if (!NamedPoolAdmits(node, ctx.w)) return refuse(node.named_pool_lent ? ctx.refused_pool_lent_out : ctx.refused_named_pool);
  if (node.lent_preemptible_only && !ctx.w.preemptible) {
    return refuse(ctx.refused_lent);  // lent by its owner pool to preemptible work only
  }
  // A degraded node (GPU health tooling's verdict: engine nodeHealth) finishes what runs and takes
  // only single-member work: a gang there would be slowed, or broken, by its weakest node.
  if (node.health == NodeHealth::kDegraded && ctx.w.members > 1) return refuse(ctx.refused_degraded);
  if (!ctx.w.gpu_model.empty() && node.gpu_model != ctx.w.gpu_model) return refuse(ctx.refused_model);
  if (ctx.w.constraints != nullptr || !node.taints.empty()) {
    static const NodeConstraints kNone;  // no tolerations: every hard taint refuses
    const NodeConstraints& nc = ctx.w.constraints != nullptr ? *ctx.w.constraints : kNone;
    if (std::string why = nc.Refusal(node); !why.empty()) {
      if (ctx.refused.insert(n).second && ctx.refused_constraints++ == 0) ctx.first_constraint_refusal = node.name + ": " + why;
      return 0;
    }
  }
  Resources free = node.Free();
  if (ctx.c->reserved_from != nullptr && ctx.c->ends_at > (*ctx.c->reserved_from)[static_cast<size_t>(n)]) {
    // It would still run when a reservation on this node starts: leave the reserved GPUs free.
    free.gpus -= ctx.c->reserved_gpus != nullptr ? (*ctx.c->reserved_gpus)[static_cast<size_t>(n)] : free.gpus;
    if (free.CopiesOf(ctx.w.per_member) <= 0) {
      const bool closing = ctx.c->closing != nullptr && (*ctx.c->closing)[static_cast<size_t>(n)] != 0;
      return refuse(closing ? ctx.refused_closing : ctx.refused_reserved);
    }
  }
  int64_t fit = free.CopiesOf(ctx.w.per_member);
  if (fit <= 0) return refuse(ctx.refused_resources);
  if (ctx.w.constraints != nullptr && ctx.w.constraints->max_members_per_node > 0) {
    fit = std::min<int64_t>(fit, ctx.w.constraints->max_members_per_node);
  }
  if (profile_.has_filters()) {
    Status st = profile_.RunFilter(ctx.cs, ctx.w, node);
    if (!st.ok()) {
      if (ctx.refused.insert(n).second && ctx.refused_filter++ == 0) ctx.first_filter_refusal = st;
      return 0;
    }
  }
  return fit;
}

int64_t PlacementSearch::TakeModelRoom(NodeId n, int64_t want, int64_t least, Ctx& ctx) const {
  const auto& caps = ctx.c->model_caps;
  const Node& node = state_.node(n);
  for (size_t i = 0; i < caps.size(); ++i) {
    if (caps[i].model != node.gpu_model) continue;
    const int64_t take = std::min<int64_t>(want, ctx.model_left[i]);
    if (take < least && ctx.refused.insert(n).second && ctx.refused_model_quota++ == 0) {
      ctx.first_model_quota_refusal = node.name + " (gpus." + caps[i].model + " admits " +
                                      std::to_string(caps[i].members) + " member(s))";
    }
    ctx.model_left[i] -= static_cast<int32_t>(std::max<int64_t>(take, 0));
    return take;
  }
  return want;
}

void PlacementSearch::ResetModelRoom(Ctx& ctx) const {
  ctx.model_left.clear();
  for (const auto& m : ctx.c->model_caps) ctx.model_left.push_back(m.members);
}

int32_t PlacementSearch::FillNodes(NodeId begin, NodeId end, int32_t need, Ctx& ctx,
                                   std::vector<MemberAssignment>& out) const {
  std::vector<std::pair<int64_t, NodeId>> nodes;
  nodes.reserve(static_cast<size_t>(end - begin));
  const NodeConstraints* nc = ctx.w.constraints.get();
  const bool prefer = nc != nullptr && (!nc->preferred.empty() || !nc->tolerations.empty());
  for (NodeId n = begin; n < end; ++n) {
    const int64_t f = state_.node(n).FreeGpusFor(ctx.cordoned);
    // Preferred node affinity (and untolerated PreferNoSchedule taints) rank first, then the fit.
    if (ClusterState::NodeMemberCapacity(f, ctx.g) > 0) nodes.emplace_back(prefer ? f - (nc->Preference(state_.node(n)) << 20) : f, n);
  }
  // Tightest node first: partly used nodes fill up, wholly free nodes stay whole.
  std::sort(nodes.begin(), nodes.end());
  int32_t placed = 0;
  for (const auto& [free, n] : nodes) {
    if (need == 0) break;
    int64_t take = std::min<int64_t>(NodeFit(n, ctx), need);
    if (take > 0 && !ctx.c->model_caps.empty()) take = TakeModelRoom(n, take, 1, ctx);
    if (take <= 0) continue;
    out.push_back(MemberAssignment{n, static_cast<int32_t>(take)});
    placed += static_cast<int32_t>(take);
    need -= static_cast<int32_t>(take);
  }
  return placed;
}

int32_t PlacementSearch::FillVertex(VertexId v, int32_t need, Ctx& ctx, std::vector<MemberAssignment>& out) const {
  const Vertex& x = state_.vertex(v);
  if (IsDeepest(v)) return FillNodes(x.node_begin, x.node_end, need, ctx, out);
  const int32_t n = x.child_end - x.child_begin;
  std::vector<int64_t> caps(static_cast<size_t>(n));
  for (int32_t k = 0; k < n; ++k) caps[static_cast<size_t>(k)] = state_.MemberCapacity(x.child_begin + k, ctx.g, ctx.cordoned);
  int32_t placed = 0;
  while (need > 0) {
    int32_t best = -1;
    // The tightest child that can hold every remaining member keeps the gang in one subtree.
    for (int32_t k = 0; k < n; ++k) {
      const int64_t c = caps[static_cast<size_t>(k)];
      if (c >= need && (best < 0 || c < caps[static_cast<size_t>(best)])) best = k;
    }
    // Otherwise the roomiest child, so the gang spans as few subtrees as possible.
    if (best < 0) {
      for (int32_t k = 0; k < n; ++k) {
        const int64_t c = caps[static_cast<size_t>(k)];
        if (c > 0 && (best < 0 || c > caps[static_cast<size_t>(best)])) best = k;
      }
    }
    if (best < 0) break;
    const int64_t want = std::min<int64_t>(need, caps[static_cast<size_t>(best)]);
    caps[static_cast<size_t>(best)] = 0;  // visited
    const int32_t got = FillVertex(x.child_begin + best, static_cast<int32_t>(want), ctx, out);
    placed += got;
    need -= got;
  }
  return placed;
}

Candidate PlacementSearch::MakeCandidate(int level, VertexId domain, std::vector<MemberAssignment> a,
                                         const Ctx& ctx) const {
  Candidate c;
  const int node_level = state_.levels().node_level();
  c.domain_level = level;
  if (level == node_level) {
    c.domain = state_.NodePath(a.front().node);
    c.domain_free_gpus = state_.node(a.front().node).FreeGpusFor(ctx.cordoned);
  } else {
    c.domain = level < 0 ? "cluster" : state_.vertex(domain).path;
    c.domain_free_gpus = state_.FreeGpus(domain, ctx.cordoned);
  }
  c.spans.assign(static_cast<size_t>(state_.levels().size()), 0);
  c.spans[static_cast<size_t>(node_level)] = static_cast<int32_t>(a.size());
  if (node_level > 0) {
    std::vector<VertexId> seen;
    seen.reserve(a.size() * static_cast<size_t>(node_level));
    for (const auto& as : a) {
      for (VertexId v = state_.NodeParent(as.node); v > 0; v = state_.vertex(v).parent) seen.push_back(v);
    }
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (VertexId v : seen) c.spans[static_cast<size_t>(state_.vertex(v).level)]++;
  }
  for (const auto& as : a) {
    const Node& n = state_.node(as.node);
    if (n.WhollyFree() && n.FreeGpus() - ctx.g * as.members > 0) c.whole_nodes_broken++;
  }
  c.assignments = std::move(a);
  return c;
}

void PlacementSearch::TryDomain(VertexId v, Ctx& ctx) const {
  std::vector<MemberAssignment> a;
  ResetModelRoom(ctx);
  if (FillVertex(v, ctx.need, ctx, a) == ctx.need) {
    ctx.out->push_back(MakeCandidate(state_.vertex(v).level, v, std::move(a), ctx));
  }
}

void PlacementSearch::TryNodesAsDomains(VertexId v, Ctx& ctx) const {
  const Vertex& x = state_.vertex(v);
  std::vector<std::pair<int64_t, NodeId>> nodes;
  for (NodeId n = x.node_begin; n < x.node_end; ++n) {
    const int64_t f = state_.node(n).FreeGpusFor(ctx.cordoned);
    if (ClusterState::NodeMemberCapacity(f, ctx.g) >= ctx.need) nodes.emplace_back(f, n);
  }
  std::sort(nodes.begin(), nodes.end());
  for (const auto& [free, n] : nodes) {
    if (ctx.out->size() >= ctx.limit) return;
    if (NodeFit(n, ctx) < ctx.need) continue;
    ResetModelRoom(ctx);  // each node is a candidate of its own
    if (ctx.c->model_caps.empty() || TakeModelRoom(n, ctx.need, ctx.need, ctx) >= ctx.need) {
      ctx.out->push_back(MakeCandidate(state_.levels().node_level(), -1, {MemberAssignment{n, ctx.need}}, ctx));
    }
  }
}

void PlacementSearch::Dfs(VertexId v, Ctx& ctx) const {
  if (ctx.out->size() >= ctx.limit) return;
  const Vertex& x = state_.vertex(v);
  if (x.level == ctx.target) {
    TryDomain(v, ctx);
    return;
  }
  if (IsDeepest(v)) {
    if (ctx.target == state_.levels().node_level()) TryNodesAsDomains(v, ctx);
    return;
  }
  // Best fit first: for single-node domains, the subtree holding the tightest fitting node; for
  // larger domains, the subtree with the least room that still fits.
  const bool single_node = ctx.target == state_.levels().node_level();
  std::vector<std::tuple<int64_t, int64_t, VertexId>> kids;
  kids.reserve(static_cast<size_t>(x.child_end - x.child_begin));
  for (VertexId k = x.child_begin; k < x.child_end; ++k) {
    const int64_t cap = state_.MemberCapacity(k, ctx.g, ctx.cordoned);
    if (cap < ctx.need) continue;
    const int64_t tight = single_node && ctx.g > 0 ? state_.TightestNodeFree(k, ctx.g, ctx.need, ctx.cordoned) : 0;
    if (tight > state_.max_gpus_per_node()) continue;
    kids.emplace_back(tight, cap, k);
  }
  std::sort(kids.begin(), kids.end());
  for (const auto& [tight, cap, k] : kids) {
    if (ctx.out->size() >= ctx.limit) return;
    Dfs(k, ctx);
  }
}

Status PlacementSearch::Find(const CycleState& cs, const Workload& w, const PlacementConstraints& c,
                             std::vector<Candidate>& out) const {
  out.clear();
  Ctx ctx{cs, w, 0, 0, 0, 1, nullptr, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, &c, Status::Ok(), {}, {}, false, {}, 0, {}, 0, 0};
  ctx.cordoned = w.constraints != nullptr && w.constraints->ToleratesUnschedulable();
  ctx.g = w.per_member.gpus;
  ctx.need = c.members;
  ctx.limit = static_cast<size_t>(profile_.max_candidates());
  ctx.out = &out;
  ctx.c = &c;
  if (ctx.need <= 0) return Status::Error("placement: members to place must be positive");
  if (state_.node_count() == 0) return Status::Unschedulable("the cluster has no nodes", "placement");
  if (ctx.g > state_.max_gpus_per_node()) {
    return Status::Unresolvable("each member requests " + std::to_string(ctx.g) + " GPUs; the largest node has " +
                                    std::to_string(state_.max_gpus_per_node()),
                                "placement");
  }
  if (c.within >= 0) {
    // Restricted to one vertex (preemption asks "would it fit inside this domain?"), and to one
    // domain of its required level inside it when that level is deeper (a single node).
    if (state_.MemberCapacity(c.within, ctx.g, ctx.cordoned) >= ctx.need) {
      ctx.target = c.required_level;
      if (c.required_level > state_.vertex(c.within).level) {
        Dfs(c.within, ctx);
      } else {
        TryDomain(c.within, ctx);
      }
    }
    if (!out.empty()) return Status::Ok();
    if (!explain_) return NotDescribed();
    return Status::Unschedulable("does not fit inside " + state_.vertex(c.within).path, "placement");
  }
  std::vector<int> targets;
  if (c.required_level >= 0) {
    targets.push_back(c.required_level);
  } else {
    for (int l = state_.levels().node_level(); l >= -1; --l) targets.push_back(l);
  }
  for (int t : targets) {
    ctx.target = t;
    if (state_.MemberCapacity(state_.root(), ctx.g, ctx.cordoned) < ctx.need) break;
    if (t < 0) {
      TryDomain(state_.root(), ctx);
    } else {
      Dfs(state_.root(), ctx);
    }
    if (!out.empty()) return Status::Ok();
  }
  return Explain(w, c, ctx);
}

const Status& PlacementSearch::NotDescribed() {
  // One status shared by every failure not described (set_explain(false)): no allocation each.
  static const Status* const kNotNow = new Status(Status::Unschedulable("no placement now (not described)", "placement"));
  return *kNotNow;
}

int64_t PlacementSearch::StaticBest(const PlacementConstraints& c, int64_t g) const {
  if (c.required_level < 0) return state_.StaticMemberCapacity(state_.root(), g);
  if (c.required_level == state_.levels().node_level()) return ClusterState::NodeMemberCapacity(state_.max_gpus_per_node(), g);
  int64_t best = 0;
  auto [b, e] = state_.LevelRange(c.required_level);
  for (VertexId v = b; v < e; ++v) best = std::max(best, state_.StaticMemberCapacity(v, g));
  return best;
}

Status PlacementSearch::Explain(const Workload& w, const PlacementConstraints& c, const Ctx& ctx) const {
  // Never, however the cluster empties: too few nodes of its GPU model (they are not counted apart
  // in the aggregates StaticBest reads).
  const bool ever = StaticBest(c, ctx.g) >= c.members;
  std::optional<Status> model_never = ever ? ModelNeverFits(state_, w, c, ctx.g) : std::nullopt;
  if (!explain_ && ever && !model_never) return NotDescribed();
  const auto& levels = state_.levels();
  const std::string shape = std::to_string(c.members) + " members of " + std::to_string(ctx.g) + " GPU";
  Status st;
  if (model_never) {
    st = std::move(*model_never);
  } else if (c.required_level >= 0) {
    const std::string lvl = levels.Name(c.required_level);
    const int64_t static_best = StaticBest(c, ctx.g);
    int64_t now_best = 0;
    std::string now_path;
    if (c.required_level == levels.node_level()) {
      for (NodeId n = 0; n < state_.node_count(); ++n) {
        const int64_t cap = ClusterState::NodeMemberCapacity(state_.node(n).FreeGpusFor(ctx.cordoned), ctx.g);
        if (cap > now_best) now_best = cap, now_path = state_.NodePath(n);
      }
    } else {
      auto [b, e] = state_.LevelRange(c.required_level);
      for (VertexId v = b; v < e; ++v) {
        const int64_t cap = state_.MemberCapacity(v, ctx.g, ctx.cordoned);
        if (cap > now_best) now_best = cap, now_path = state_.vertex(v).path;
      }
    }
    if (static_best < c.members) {
      st = Status::Unresolvable("topology-required " + lvl + ": no " + lvl + " domain can ever hold " + shape +
                                    " (the largest holds " + std::to_string(static_best) + ")",
                                "placement");
    } else if (now_best < c.members) {
      st = Status::Unschedulable("topology-required " + lvl + ": no " + lvl + " domain has room for " + shape +
                                     " now (the roomiest, " + (now_path.empty() ? "none" : now_path) +
                                     ", has room for " + std::to_string(now_best) + ")",
                                 "placement");
    } else {
      st = Status::Unschedulable("topology-required " + lvl + ": " + lvl +
                                     " domains have the GPUs for " + shape + " but their nodes failed other checks",
                                 "placement");
    }
  } else {
    const int64_t static_cap = StaticBest(c, ctx.g);
    const int64_t now_cap = state_.MemberCapacity(state_.root(), ctx.g, ctx.cordoned);
    if (static_cap < c.members) {
      st = Status::Unresolvable("the whole cluster can hold at most " + std::to_string(static_cap) + " of " + shape,
                                "placement");
    } else if (now_cap < c.members) {
      st = Status::Unschedulable("the cluster has room for " + std::to_string(now_cap) + " of " + shape + " now (" +
                                     std::to_string(state_.FreeGpus(state_.root(), ctx.cordoned)) + " free GPUs)",
                                 "placement");
    } else {
      st = Status::Unschedulable("the cluster has the GPUs for " + shape + " but its nodes failed other checks",
                                 "placement");
    }
  }
  if (ctx.refused_pool) st.AddReason(std::to_string(ctx.refused_pool) + " node(s) belong to another pool");
  if (ctx.refused_lent) {
    st.AddReason(std::to_string(ctx.refused_lent) + " node(s) are lent by their owner pool to preemptible work only");
  }
  if (ctx.refused_named_pool) {
    st.AddReason(std::to_string(ctx.refused_named_pool) + " node(s) belong to a named pool of other queues" +
                 (w.home_pool.empty() ? "" : " (queue " + w.queue + " owns pool " + w.home_pool + ")"));
  }
  if (ctx.refused_pool_lent_out) {
    st.AddReason(std::to_string(ctx.refused_pool_lent_out) + " node(s) of pool " + w.home_pool +
                 " are lent to other queues (taken back while its work waits for room)");
  }
  if (ctx.refused_health) {
    st.AddReason(std::to_string(ctx.refused_health) + " node(s) take no new work (unhealthy, draining or cordoned)");
  }
  if (ctx.refused_degraded) {
    st.AddReason(std::to_string(ctx.refused_degraded) + " node(s) are degraded (they take no gang of more than one member)");
  }
  if (ctx.refused_model) st.AddReason(std::to_string(ctx.refused_model) + " node(s) have another GPU model than " + w.gpu_model);
  if (ctx.refused_constraints) {
    st.AddReason(std::to_string(ctx.refused_constraints) + " node(s) refused by the pod's node constraints, first: " +
                 ctx.first_constraint_refusal);
  }
  if (ctx.refused_model_quota) {
    st.AddReason(std::to_string(ctx.refused_model_quota) + " node(s) of a GPU model beyond the queue's quota for it, first: " +
                 ctx.first_model_quota_refusal);
  }
  if (ctx.refused_resources) st.AddReason(std::to_string(ctx.refused_resources) + " node(s) lack CPU or memory for a member");
  if (ctx.refused_reserved) {
    st.AddReason(std::to_string(ctx.refused_reserved) + " node(s) held for earlier reservations this workload would delay");
  }
  if (ctx.refused_closing) {
    st.AddReason(std::to_string(ctx.refused_closing) +
                 " node(s) close (a drain, a maintenance window or a perishable window's end) before this workload "
                 "would end (its runtime limit, else its class's default runtime)");
  }
  if (ctx.refused_filter) {
    st.AddReason(std::to_string(ctx.refused_filter) + " node(s) refused by filters, first: " +
                 ctx.first_filter_refusal.ToString());
  }
  return st;
}

}  // namespace tidal
