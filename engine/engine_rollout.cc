// Engine: the signals a config rollout watch reads (engine/rollout.h): decisions that ended in an
// error, workloads preempted, the pending workloads whose last decision was Rejected, with the
// plugin that refused them, and the pending pods whose scheduling spec cannot be read. Counted where the decisions are made (engine_plan.cc,
// engine_victims.cc). Threading: RolloutSignalsNow takes mu_; the counters are the Engine's.
#include "engine/engine.h"

namespace tidal {

RolloutSignals Engine::RolloutSignalsNow() {
  std::lock_guard<std::mutex> lock(mu_);
  RolloutSignals s;
  s.errors = decision_errors_;
  s.preemptions = preempted_total_;
  for (const auto& [key, g] : gangs_) {
    if (g.rejected_by.empty() || g.summary.pending <= 0 || g.summary.spec == nullptr || !g.summary.spec->ok()) continue;
    s.rejected[key] = {(*g.summary.spec)->queue, g.rejected_by};
  }
  for (const auto& [uid, p] : pods_) {
    if (p.node_name.empty() && OursLocked(p) && p.door == FrontDoor::kKubernetes && !SpecLocked(p).ok()) {
      s.invalid_specs.insert(p.Key());
    }
  }
  return s;
}

}  // namespace tidal
