#include "core/api/node.h"

namespace tidal {

std::string_view NodeHealthName(NodeHealth h) {
  switch (h) {
    case NodeHealth::kReady: return "ready";
    case NodeHealth::kDegraded: return "degraded";
    case NodeHealth::kUnhealthy: return "unhealthy";
    case NodeHealth::kDraining: return "draining";
    case NodeHealth::kCordoned: return "cordoned";
  }
  return "unknown";
}

StatusOr<NodeHealth> ParseNodeHealth(std::string_view text, std::string_view field) {
  for (auto h : {NodeHealth::kReady, NodeHealth::kDegraded, NodeHealth::kUnhealthy, NodeHealth::kDraining,
                 NodeHealth::kCordoned}) {
    if (text == NodeHealthName(h)) return h;
  }
  return Status::Error(std::string(field) + ": unknown health \"" + std::string(text) +
                       "\" (accepted: ready, degraded, unhealthy, draining, cordoned)");
}

std::string_view PoolName(Pool p) {
  switch (p) {
    case Pool::kKubernetes: return "kubernetes";
    case Pool::kSlurm: return "slurm";
    case Pool::kShared: return "shared";
  }
  return "unknown";
}

StatusOr<Pool> ParsePool(std::string_view text, std::string_view field) {
  for (auto p : {Pool::kKubernetes, Pool::kSlurm, Pool::kShared}) {
    if (text == PoolName(p)) return p;
  }
  return Status::Error(std::string(field) + ": unknown pool \"" + std::string(text) +
                       "\" (accepted: kubernetes, slurm, shared)");
}

}  // namespace tidal
