// Node health beyond Ready: how the verdicts GPU health tooling publishes (node conditions such as
// a GPUUnhealthy condition, labels such as an XID error count or a per-node degraded flag) become
// the engine's health of a node:
//   healthy    takes any work;
//   degraded   finishes what runs and takes only single-member work (no new gangs);
//   unhealthy  takes no new work, and the gangs running there are disrupted whole, with notice,
//              once it has been unhealthy for unhealthyAfterSeconds (engine/engine_health.cc).
// A node that is not Ready (Kubernetes), or DOWN / NOT_RESPONDING (Slurm), is unhealthy too.
// Config (engine config `nodeHealth`):
//   nodeHealth:
//     unhealthyAfterSeconds: 60        # a flapping node must stay unhealthy this long
//     rules:                           # replaces the defaults below; the worst match wins
//       - {condition: GPUUnhealthy, status: "True", health: unhealthy}
//       - {label: tidal.dev/health, value: degraded, health: degraded}
//       - {label: nvidia.com/gpu.xid-errors, above: 0, health: degraded}
// Threading: pure functions and plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/api/node.h"
#include "core/api/status.h"

namespace tidal {

struct NodeConditionInfo;

struct HealthRule {
  std::string condition;          // a node condition type; "" = a label rule
  std::string status = "True";    // condition rules: the status that matches
  std::string label;              // label rules: the node label key
  std::string value;              // label rules: this value ("" with `above`: a number)
  std::optional<int64_t> above;   // label rules: the value is an integer above this
  NodeHealth health = NodeHealth::kUnhealthy;  // kDegraded or kUnhealthy
};

// The defaults: conditions GPUUnhealthy=True and AcceleratedHardwareReady=False (EKS' node
// monitoring agent) -> unhealthy, GPUDegraded=True -> degraded; label tidal.dev/health =
// unhealthy | degraded (an admin's or a health controller's own flag).
std::vector<HealthRule> DefaultHealthRules();

struct NodeHealthConfig {
  int64_t unhealthy_after_s = 60;
  std::vector<HealthRule> rules = DefaultHealthRules();
};

struct HealthVerdict {
  NodeHealth health = NodeHealth::kReady;  // kReady, kDegraded or kUnhealthy
  std::string reason;                      // "condition GPUUnhealthy=True", "label tidal.dev/health=degraded"
};
HealthVerdict JudgeNodeHealth(const std::map<std::string, std::string>& labels,
                              const std::vector<NodeConditionInfo>& conditions, const NodeHealthConfig& cfg);

// Reads `nodeHealth` (JSON from the config document); errors name the field ("nodeHealth.rules[2].health").
Status DecodeNodeHealth(const nlohmann::json& j, NodeHealthConfig* out);

}  // namespace tidal
