#include "core/api/node.h"

#include <algorithm>
#include <cctype>

namespace tidal {

bool IsValidLabelValue(const std::string& v) {
  if (v.empty() || v.size() > 63) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(v.front()) || !alnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

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
