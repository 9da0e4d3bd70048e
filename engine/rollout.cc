// Safe rollout: the watch's rule (see rollout.h). Threading: pure functions.
#include "engine/rollout.h"

#include "core/io/fields.h"

namespace tidal {

Status DecodeRollout(const nlohmann::json& j, const std::string& field, RolloutPolicy* out) {
  if (!j.is_object()) {
    return Status::Error(field + ": must be a mapping (watchSeconds, maxNewlyRejected, maxErrors, maxPreemptions, "
                                 "maxNewlyInvalidSpecs, dryRunGate)");
  }
  Fields f(j, field);
  f.Int("watchSeconds", &out->watch_s, 0, 86400);
  f.Int("maxNewlyRejected", &out->max_newly_rejected, 0, 1000000);
  f.Int("maxErrors", &out->max_errors, 0, 1000000);
  f.Int("maxPreemptions", &out->max_preemptions, 0, 1000000);
  f.Int("maxNewlyInvalidSpecs", &out->max_newly_invalid_specs, 0, 1000000);
  if (const auto* g = f.Get("dryRunGate")) {
    if (!g->is_object()) {
      f.Fail(Status::Error(f.Sub("dryRunGate") + ": must be a mapping (horizonSeconds, failOn)"));
    } else {
      Fields gf(*g, f.Sub("dryRunGate"));
      gf.Int("horizonSeconds", &out->gate_horizon_s, 1, 30 * 86400, /*required=*/true);
      gf.Str("failOn", &out->gate_fail_on);  // its checks are read where the gate runs (sim::ParseFailOn)
      if (Status s = gf.Done(); !s.ok()) f.Fail(s);
    }
  }
  return f.Done();
}

std::set<std::string> RolloutWatch::NewlyRejected(const RolloutSignals& now) const {
  std::set<std::string> out;
  for (const auto& [key, r] : now.rejected) {
    if (auto was = at_start.rejected.find(key); was != at_start.rejected.end() && was->second == r) continue;
    const bool by_queue = r.plugin == "quota";
    if (by_queue ? previous_leaves.count(r.queue) > 0 : placement_changed) out.insert(key);
  }
  return out;
}

std::string RolloutWatch::Breach(const RolloutSignals& now) const {
  if (const auto newly = NewlyRejected(now); static_cast<int64_t>(newly.size()) > policy.max_newly_rejected) {
    std::string names;
    int shown = 0;
    for (const auto& k : newly) {
      if (shown++ == 3) {
        names += ", ...";
        break;
      }
      names += (names.empty() ? "" : ", ") + k;
    }
    return std::to_string(newly.size()) + " workload(s) the previous config would run are rejected now (at most " +
           std::to_string(policy.max_newly_rejected) + "): " + names + " (" + now.rejected.at(*newly.begin()).plugin +
           ": queue " + now.rejected.at(*newly.begin()).queue + ")";
  }
  if (placement_changed) {
    int64_t invalid = 0;
    std::string first;
    for (const auto& pod : now.invalid_specs) {
      if (at_start.invalid_specs.count(pod)) continue;
      if (invalid++ == 0) first = pod;
    }
    if (invalid > policy.max_newly_invalid_specs) {
      return std::to_string(invalid) + " pending pod(s) whose Tidal labels the new config cannot read (at most " +
             std::to_string(policy.max_newly_invalid_specs) + "): " + first;
    }
  }
  if (const int64_t e = now.errors - at_start.errors; e > policy.max_errors) {
    return std::to_string(e) + " scheduling decision(s) ended in an error (at most " + std::to_string(policy.max_errors) + ")";
  }
  if (const int64_t p = now.preemptions - at_start.preemptions; policy.max_preemptions >= 0 && p > policy.max_preemptions) {
    return std::to_string(p) + " workload(s) preempted (at most " + std::to_string(policy.max_preemptions) + ")";
  }
  return "";
}

}  // namespace tidal
