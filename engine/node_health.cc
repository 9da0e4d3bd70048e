// Node health rules (node_health.h). Threading: pure functions.
#include "engine/node_health.h"

#include <charconv>

#include "engine/engine_types.h"

namespace tidal {

std::vector<HealthRule> DefaultHealthRules() {
  std::vector<HealthRule> r(5);
  r[0].condition = "GPUUnhealthy";
  r[1].condition = "AcceleratedHardwareReady";
  r[1].status = "False";
  r[2].condition = "GPUDegraded";
  r[2].health = NodeHealth::kDegraded;
  r[3].label = "tidal.dev/health";
  r[3].value = "unhealthy";
  r[4].label = "tidal.dev/health";
  r[4].value = "degraded";
  r[4].health = NodeHealth::kDegraded;
  return r;
}

namespace {

bool Matches(const HealthRule& r, const std::map<std::string, std::string>& labels,
             const std::vector<NodeConditionInfo>& conditions, std::string* why) {
  if (!r.condition.empty()) {
    for (const auto& c : conditions) {
      if (c.type == r.condition && c.status == r.status) {
        *why = "condition " + c.type + "=" + c.status + (c.reason.empty() ? "" : " (" + c.reason + ")");
        return true;
      }
    }
    return false;
  }
  auto l = labels.find(r.label);
  if (l == labels.end()) return false;
  if (r.above) {
    int64_t v = 0;
    const char* end = l->second.data() + l->second.size();
    auto [p, ec] = std::from_chars(l->second.data(), end, v);
    if (ec != std::errc() || p != end || v <= *r.above) return false;
  } else if (l->second != r.value) {
    return false;
  }
  *why = "label " + r.label + "=" + l->second;
  return true;
}

}  // namespace

HealthVerdict JudgeNodeHealth(const std::map<std::string, std::string>& labels,
                              const std::vector<NodeConditionInfo>& conditions, const NodeHealthConfig& cfg) {
  HealthVerdict v;
  for (const auto& r : cfg.rules) {
    std::string why;
    if (!Matches(r, labels, conditions, &why)) continue;
    if (r.health == NodeHealth::kUnhealthy) return {NodeHealth::kUnhealthy, why};
    if (v.health == NodeHealth::kReady) v = {NodeHealth::kDegraded, why};
  }
  return v;
}

Status DecodeNodeHealth(const nlohmann::json& j, NodeHealthConfig* out) {
  if (!j.is_object()) return Status::Error("nodeHealth: must be a mapping");
  for (const auto& [k, v] : j.items()) {
    if (k != "unhealthyAfterSeconds" && k != "rules") return Status::Error("nodeHealth." + k + ": unknown field (accepted: unhealthyAfterSeconds, rules)");
  }
  if (j.contains("unhealthyAfterSeconds")) {
    const auto& v = j.at("unhealthyAfterSeconds");
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 86400) {
      return Status::Error("nodeHealth.unhealthyAfterSeconds: must be an integer 0..86400");
    }
    out->unhealthy_after_s = v.get<int64_t>();
  }
  if (!j.contains("rules")) return Status::Ok();
  const auto& rules = j.at("rules");
  if (!rules.is_array()) return Status::Error("nodeHealth.rules: must be a list");
  std::vector<HealthRule> decoded;
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string f = "nodeHealth.rules[" + std::to_string(i) + "]";
    const auto& r = rules[i];
    if (!r.is_object()) return Status::Error(f + ": must be a mapping");
    HealthRule h;
    for (const auto& [k, v] : r.items()) {
      if (k == "condition" || k == "status" || k == "label" || k == "value" || k == "health") {
        if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 317) {
          return Status::Error(f + "." + k + ": must be a non-empty string of at most 317 bytes");
        }
      } else if (k == "above") {
        if (!v.is_number_integer()) return Status::Error(f + ".above: must be an integer");
        h.above = v.get<int64_t>();
      } else {
        return Status::Error(f + "." + k + ": unknown field (accepted: condition, status, label, value, above, health)");
      }
    }
    if (r.contains("condition") == r.contains("label")) return Status::Error(f + ": name exactly one of condition, label");
    if (r.contains("condition")) {
      h.condition = r.at("condition").get<std::string>();
      if (r.contains("value") || r.contains("above")) return Status::Error(f + ": value/above go with label rules");
      if (r.contains("status")) h.status = r.at("status").get<std::string>();
      if (h.status != "True" && h.status != "False" && h.status != "Unknown") {
        return Status::Error(f + ".status: \"" + h.status + "\" (accepted: True, False, Unknown)");
      }
    } else {
      h.label = r.at("label").get<std::string>();
      if (r.contains("status")) return Status::Error(f + ": status goes with condition rules");
      if (r.contains("value") == r.contains("above")) return Status::Error(f + ": a label rule names exactly one of value, above");
      if (r.contains("value")) h.value = r.at("value").get<std::string>();
    }
    if (!r.contains("health")) return Status::Error(f + ".health: required (degraded or unhealthy)");
    const std::string health = r.at("health").get<std::string>();
    if (health == "unhealthy") {
      h.health = NodeHealth::kUnhealthy;
    } else if (health == "degraded") {
      h.health = NodeHealth::kDegraded;
    } else {
      return Status::Error(f + ".health: \"" + health + "\" (accepted: degraded, unhealthy)");
    }
    decoded.push_back(std::move(h));
  }
  out->rules = std::move(decoded);
  return Status::Ok();
}

}  // namespace tidal
