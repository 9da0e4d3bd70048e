#include "core/framework/model_bound.h"

#include <algorithm>
#include <set>
#include <string>

namespace tidal {

namespace {

// Members of g GPUs that the nodes [begin, end) of `model` hold, empty; stops counting at `enough`.
int64_t HoldsOfModel(const ClusterState& st, NodeId begin, NodeId end, const std::string& model, int64_t g, int64_t enough) {
  int64_t sum = 0;
  for (NodeId n = begin; n < end && sum < enough; ++n) {
    const Node& node = st.node(n);
    if (node.gpu_model == model) sum += ClusterState::NodeMemberCapacity(node.capacity.gpus, g);
  }
  return sum;
}

// The most members the nodes of `model` hold where c allows them: all of them, one node (required
// node level) or one domain of the required level; stops at c.members.
int64_t BestOfModel(const ClusterState& st, const PlacementConstraints& c, const std::string& model, int64_t g) {
  const int64_t need = c.members;
  if (c.required_level < 0) return HoldsOfModel(st, 0, st.node_count(), model, g, need);
  int64_t best = 0;
  if (c.required_level == st.levels().node_level()) {
    for (NodeId n = 0; n < st.node_count() && best < need; ++n) best = std::max(best, HoldsOfModel(st, n, n + 1, model, g, need));
    return best;
  }
  auto [b, e] = st.LevelRange(c.required_level);
  for (VertexId v = b; v < e && best < need; ++v) {
    best = std::max(best, HoldsOfModel(st, st.vertex(v).node_begin, st.vertex(v).node_end, model, g, need));
  }
  return best;
}

// "a100, h100": the models the cluster has (the first few), for a model no node has.
std::string ModelsHere(const ClusterState& st) {
  std::set<std::string> models;
  for (const auto& n : st.nodes()) {
    if (!n.gpu_model.empty()) models.insert(n.gpu_model);
  }
  if (models.empty()) return "no node names a GPU model";
  std::string out = "models: ";
  int shown = 0;
  for (const auto& m : models) {
    if (shown == 8) return out + ", ... (" + std::to_string(models.size()) + " in all)";
    out += (shown++ ? ", " : "") + m;
  }
  return out;
}

}  // namespace

std::optional<Status> ModelNeverFits(const ClusterState& state, const Workload& w, const PlacementConstraints& c, int64_t g) {
  if (w.gpu_model.empty() || g <= 0) return std::nullopt;
  const int64_t best = BestOfModel(state, c, w.gpu_model, g);
  if (best >= c.members) return std::nullopt;
  const std::string field = std::string("tidal.dev/gpu-model ") + w.gpu_model + ": ";
  const std::string shape = std::to_string(c.members) + " members of " + std::to_string(g) + " GPU";
  const auto& nodes = state.nodes();
  if (std::none_of(nodes.begin(), nodes.end(), [&](const Node& n) { return n.gpu_model == w.gpu_model; })) {
    return Status::Unresolvable(field + "no node has GPU model " + w.gpu_model + " (" + ModelsHere(state) + ")", "placement");
  }
  if (c.required_level >= 0) {
    const std::string lvl = state.levels().Name(c.required_level);
    return Status::Unresolvable("topology-required " + lvl + ": no " + lvl + " domain can ever hold " + shape + " of GPU model " +
                                    w.gpu_model + " (tidal.dev/gpu-model; the largest holds " + std::to_string(best) + ")",
                                "placement");
  }
  return Status::Unresolvable(field + "the nodes of GPU model " + w.gpu_model + " can ever hold at most " + std::to_string(best) +
                                  " of " + shape,
                              "placement");
}

}  // namespace tidal
