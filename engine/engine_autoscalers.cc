// Engine: the HorizontalPodAutoscalers the Kubernetes door reports on its Sync stream, and the
// headroom derived from them for queues with `headroom: {fromHPA: true}` (engine/autoscalers.h
// computes it; QuotaLedger::SetDerivedHeadroom holds it; core/state/headroom.h applies it exactly
// as a configured number). Rederived when an HPA or its target changes, when a resync ends (HPAs it
// did not name are gone) and on a config reload (the scheduler name or the queues may change).
// A queue whose headroom shrank has its waiting Kubernetes work activated: kube-scheduler sees no
// event for room that came back this way.
//
// Threading: everything here runs under Engine::mu_.
#include <string>
#include <vector>

#include "core/state/headroom.h"
#include "engine/engine.h"

namespace tidal {

void Engine::ApplyAutoscalersLocked(const SyncBatch& b, Status* result) {
  if (b.upsert_autoscalers.empty() && b.delete_autoscalers.empty() && !snapshots_[static_cast<int>(b.door)]) return;
  if (b.door != FrontDoor::kKubernetes) {
    if (!b.upsert_autoscalers.empty() || !b.delete_autoscalers.empty()) {
      *result = Status::Error("upsert_autoscalers: only the kubernetes front door reports HPAs; ignored from " +
                              std::string(FrontDoorName(b.door)));
    }
    return;
  }
  auto& snap = snapshots_[static_cast<int>(b.door)];
  bool changed = false;
  for (const auto& a : b.upsert_autoscalers) {
    if (snap) snap->autoscalers.insert(a.Key());
    Status refused;
    changed = autoscalers_.Upsert(a, &refused) || changed;
    if (!refused.ok()) *result = refused;
  }
  for (const auto& key : b.delete_autoscalers) changed = autoscalers_.Delete(key) || changed;
  // The snapshot's last message: the HPAs it did not name are gone (as its pods and nodes).
  if (snap && !b.snapshot_continues) changed = autoscalers_.Retain(snap->autoscalers) || changed;
  if (changed) RederiveHeadroomLocked();
}

void Engine::RederiveHeadroomLocked() {
  AutoscalerBook::Derivation d = autoscalers_.Derive(cfg_.scheduler_name);
  autoscaler_notes_ = std::move(d.notes);
  const QueueTree& t = ledger_.tree();
  std::vector<int64_t> before(static_cast<size_t>(t.size()), 0);
  for (int q = 1; q < t.size(); ++q) before[static_cast<size_t>(q)] = HeadroomGpus(ledger_, q);
  ledger_.SetDerivedHeadroom(std::move(d.by_queue));
  bool shrank = false;
  for (int q = 1; q < t.size(); ++q) {
    const int64_t was = before[static_cast<size_t>(q)], now = HeadroomGpus(ledger_, q);
    if (now == was) continue;
    shrank = shrank || now < was;
    if (decision_log_ != nullptr) {
      decision_log_->Write({{"ts", clock_()}, {"outcome", "headroom-changed"}, {"queue", t.Name(q)}, {"gpus", now},
                            {"was", was}, {"source", HeadroomSource(ledger_, q)}});
    }
  }
  if (shrank) ActivateKubernetesPendingLocked();
}

}  // namespace tidal
