// Engine: elastic gangs growing back (engine.h, "elastic gangs growing back").
//
// A running elastic gang (tidal.dev/gang-min below its size, at least gang-min members bound)
// has waiting members whenever it runs short of its size: it started at its minimum, or gave
// members back to a preemption, a drain or a lost node. Placing each one as soon as it fits
// would restart the job's workers (a torchrun re-rendezvous) every time a little room appears,
// and again when that room is taken back. So growth waits:
//   - it needs room for at least elastic_grow_min_members members at once (GangWorkloadLocked
//     sets the workload's min_members), fewer only when fewer complete the gang;
//   - the room must stay free for elastic_grow_after_s. The first plan that finds room (a probe:
//     PlaceLocked, the search ScheduleGangLocked runs, undone) starts the wait; a plan before its
//     end answers why the gang waits and when it grows; a probe that finds no room ends the wait
//     (the clock starts again next time). When the wait ends the gang's pending pods go to
//     TakeActivations (kube-scheduler sees no event for it), and the next plan places them if
//     the room is still there: room found at both ends of the wait, and at every plan between.
// 0 s turns the wait off. A running elastic Slurm job (--nodes=MIN-MAX) has no waiting members:
// Slurm cannot add nodes to a running job, so it never grows (it starts on as many as fit).
//
// Threading: under mu_ (the *Locked convention); grow_waits_ is the Engine's (engine.h).
#include <optional>
#include <string>

#include "core/api/duration.h"
#include "engine/engine.h"

namespace tidal {

std::string Engine::GrowWaitLocked(const Gang& g, const PodSchedulingSpec& spec, const Workload& w,
                                   std::optional<Decision>* probe_out) {
  const int64_t after = cfg_.elastic_grow_after_s;
  const int32_t bound = g.summary.bound;
  if (after <= 0 || spec.gang_min >= spec.gang_size || bound < spec.gang_min) {
    if (!grow_waits_.empty()) grow_waits_.erase(g.key);  // not growing (e.g. below its minimum: it starts)
    return {};
  }
  const int64_t now = clock_();
  auto it = grow_waits_.find(g.key);
  if (it != grow_waits_.end() && now - it->second.since_s >= after) {
    grow_waits_.erase(it);
    return {};  // waited long enough: the plan itself finds whether the room is still there
  }
  Decision probe = PlaceLocked(w, nullptr);
  const bool room = probe.outcome == Outcome::kPlaced || probe.outcome == Outcome::kWaiting;
  if (!room) {
    if (it != grow_waits_.end()) grow_waits_.erase(it);  // the room went: the wait starts again
    *probe_out = std::move(probe);  // the plan's answer: why it does not fit
    return {};
  }
  (void)state_->RemoveRunning(w.id);  // a probe only
  ledger_.Uncharge(w.id);
  if (it == grow_waits_.end()) it = grow_waits_.emplace(g.key, GrowWait{now, false}).first;
  int32_t members = 0;
  for (const auto& a : probe.placement.assignments) members += a.members;
  const int64_t left = it->second.since_s + after - now;
  return "elastic gang " + g.key + " runs " + std::to_string(bound) + " of " + std::to_string(spec.gang_size) +
         " members; it grows by " + std::to_string(members) + " once the room stays free for " +
         FormatDurationSeconds(after) + " (in " + FormatDurationSeconds(left) + ", elastic.growAfterSeconds)";
}

void Engine::DueGrowthsLocked(int64_t now) {
  for (auto it = grow_waits_.begin(); it != grow_waits_.end();) {
    auto g = gangs_.find(it->first);
    if (g == gangs_.end() || g->second.summary.pending == 0 || g->second.plan) {
      it = grow_waits_.erase(it);  // gone, or nothing left to grow: planned, bound, deleted
      continue;
    }
    if (!it->second.activated && now - it->second.since_s >= cfg_.elastic_grow_after_s) {
      it->second.activated = true;
      ActivatePendingLocked(g->second);
    }
    ++it;
  }
}

}  // namespace tidal
