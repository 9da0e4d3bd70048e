// Engine: what becomes of the victims Preempt chose (engine_preempt.cc) once a front door acts.
//   Evicted              a front door's report: the Kubernetes shim's PostFilter (evictions, or
//                        victims PodDisruptionBudgets protect), its disruption poller, or
//                        tidal-slurm having requeued a Slurm victim (by the disruption's id);
//   ActivateHeldLocked   a hold whose victims have all gone: the preemptor's pending pods go to
//                        TakeActivations. A Slurm job's requeue gives kube-scheduler no event
//                        to retry them on; a Kubernetes victim's deletion does, but a preemptor
//                        retried while its victims had notice sits out kube-scheduler's backoff
//                        (1 s doubling per attempt, up to 10 s) after they are gone, and an
//                        activation moves it past that.
// tidal_preemptions_total counts each victim workload once, when its first eviction is reported.
//
// Threading and ownership: as engine.cc: every public method takes mu_, the *Locked ones run
// under it. holds_ and pdb_protected_ are the Engine's (engine.h, block "preemption").
#include <algorithm>
#include <map>
#include <set>

#include "engine/engine.h"

namespace tidal {

void Engine::ActivateHeldLocked() {
  for (auto& [plan_id, h] : holds_) {
    if (h.activated) continue;
    const bool gone = std::all_of(h.victims.begin(), h.victims.end(), [&](const PreemptHold::Victim& v) {
      return std::none_of(v.uids.begin(), v.uids.end(), [&](const std::string& u) {
        auto p = pods_.find(u);
        return p != pods_.end() && p->second.UsesCapacity();
      });
    });
    if (!gone) continue;
    h.activated = true;
    if (auto g = gangs_.find(plan_id.substr(5)); g != gangs_.end()) ActivatePendingLocked(g->second);  // "plan:<gang>"
  }
}

// --- the front door's report -------------------------------------------------------------------------

Status Engine::Evicted(const EvictionReport& report) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = clock_();
  std::string plan_id;
  if (auto gk = pod_gang_.find(report.preemptor_uid); gk != pod_gang_.end()) plan_id = "plan:" + gk->second;
  auto h = plan_id.empty() ? holds_.end() : holds_.find(plan_id);
  // A disruption the front door polled for (no preemptor: the Kubernetes shim's notice expired,
  // tidal-slurm requeued a Slurm job): the hold whose victim it is.
  if (h == holds_.end() && !report.disruption.empty()) {
    for (auto it = holds_.begin(); it != holds_.end(); ++it) {
      const auto& vs = it->second.victims;
      if (std::any_of(vs.begin(), vs.end(), [&](const PreemptHold::Victim& v) { return v.id == report.disruption; })) {
        plan_id = it->first;
        h = it;
        break;
      }
    }
  }
  // PDB-protected victims: never chosen again for a while; a hold that needed them goes (and
  // with it their preemption disruptions: they keep running).
  for (const auto& id : report.protected_gangs) {
    if (id.empty()) continue;
    if (const DisruptionRecord* r = disruptions_.Find(id);
        r != nullptr && (r->cause == DisruptionCause::kPreemption || r->cause == DisruptionCause::kReclaim)) {
      disruptions_.Cancel(id);
    }
    pdb_protected_[id] = now + cfg_.plan_ttl_s;
    if (auto grp = pgroups_.find(id); grp != pgroups_.end()) {
      for (const auto& [u, where] : grp->second.members) MarkPreemptViewLocked(u);
    }
  }
  if (!report.protected_gangs.empty() && h != holds_.end()) {
    DropHoldLocked(plan_id);
    h = holds_.end();
    if (auto g = gangs_.find(plan_id.substr(5)); g != gangs_.end()) {
      g->second.last_reason = "preemption skipped " + std::to_string(report.protected_gangs.size()) +
                              " victim workload(s) that PodDisruptionBudgets protect; choosing again";
    }
  }
  std::set<std::string> evicted;
  for (const auto& p : report.evicted) {
    evicted.insert(p.uid);
    disruptions_.Evicted(p.uid, now);
  }
  // Count each victim workload once, when the first of its pods is reported evicted.
  std::map<std::string, std::pair<double, double>> by_reason;  // reason -> workloads, GPU-seconds lost
  if (h != holds_.end()) {
    for (auto& v : h->second.victims) {
      if (v.counted) continue;
      if (std::none_of(v.uids.begin(), v.uids.end(), [&](const std::string& u) { return evicted.count(u) > 0; })) continue;
      v.counted = true;
      auto& [n, lost] = by_reason[h->second.reason];
      n += 1;
      lost += v.lost_gpu_seconds;
    }
    h->second.evicted = h->second.evicted || !evicted.empty();
  } else if (!evicted.empty()) {
    // No hold (expired, or another front door's eviction): count the workloads the pods belong to.
    std::set<std::string> ids;
    for (const auto& u : evicted) {
      auto pg = pod_gang_.find(u);
      auto p = pods_.find(u);
      ids.insert(pg != pod_gang_.end() ? pg->second : p != pods_.end() ? "pod:" + p->second.Key() : "uid:" + u);
    }
    by_reason[report.reason.empty() ? "unknown" : report.reason].first += static_cast<double>(ids.size());
  }
  for (const auto& [reason, v] : by_reason) {
    preempted_total_ += static_cast<int64_t>(v.first);  // a rollout watch's signal (engine_rollout.cc)
    if (metrics_ != nullptr) {
      const std::string label = PreemptionReasonLabel(reason);
      metrics_->preemptions.With({label}).Increment(v.first);
      if (v.second > 0) metrics_->preempted_gpu_seconds.With({label}).Increment(v.second);
    }
    if (decision_log_ != nullptr) {
      decision_log_->Write({{"ts", now}, {"workload", plan_id.empty() ? report.disruption : plan_id.substr(5)}, {"outcome", "evicted"},
                            {"victims", v.first}, {"pods", evicted.size()}, {"reason", reason}, {"lost_gpu_seconds", v.second}});
    }
  }
  return Status::Ok();
}

}  // namespace tidal
