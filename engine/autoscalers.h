// Headroom derived from HorizontalPodAutoscalers: the HPAs the Kubernetes door reports (each with
// one replica of the workload it scales), and the GPUs they derive per queue for the queues whose
// config says `headroom: {fromHPA: true}` (core/state/headroom.h reads the number from the ledger).
//
//   derived(queue) = sum over counted HPAs of the queue of maxReplicas x GPUs per replica
//
// An HPA counts when its target is a Deployment or a StatefulSet the door knows, whose pod
// template names this engine's scheduler (schedulerName) and resolves to the queue as a pod would
// (tidal.dev/queue and the peers' keys: podkeys::ResolveQueue; none = "default"). The door
// forwards facts; what counts is decided here:
//   - refused (CheckAutoscaler; the Sync ack names it; any earlier version is dropped): empty or
//     oversize names, maxReplicas < 0, GPUs per replica < 0;
//   - kept but not counted, with a note (/queues): another kind (scaleTargetRef to a custom
//     resource), a target the door does not know (yet), a template of another scheduler (quietly:
//     not ours), a template whose queue key is invalid.
// Sums saturate at kMaxDerivedGpus.
//
// Threading: plain values, owned by Engine under its mu_ (engine/engine_autoscalers.cc).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/api/status.h"
#include "core/state/queues.h"

namespace tidal {

struct AutoscalerInfo {
  std::string ns, name;
  std::string target_kind, target_name, target_api_version;  // scaleTargetRef
  int64_t max_replicas = 0;
  // The door knows the target; the fields below are one replica of its pod template.
  bool target_found = false;
  std::string scheduler_name;
  std::map<std::string, std::string> labels, annotations;
  int64_t gpus_per_replica = 0;

  std::string Key() const { return ns + "/" + name; }
};

// The kinds whose pods an HPA's maxReplicas bounds.
inline constexpr const char* kAutoscalerKinds[] = {"Deployment", "StatefulSet"};
// The largest derived number (the config's headroom.gpus bound).
inline constexpr int64_t kMaxDerivedGpus = int64_t{1024} * 100000;

// Ok, or an Error naming the HPA and the field ("autoscaler e2e/serve: maxReplicas: -1: must not
// be negative; not counted").
Status CheckAutoscaler(const AutoscalerInfo& a);

class AutoscalerBook {
 public:
  // Stores a (replacing the HPA's earlier version), or refuses it (CheckAutoscaler) and drops the
  // earlier version. Returns whether anything changed.
  bool Upsert(AutoscalerInfo a, Status* refused);
  bool Delete(const std::string& key);
  // A resync ended: drops every HPA the snapshot did not name. Returns whether any went.
  bool Retain(const std::unordered_set<std::string>& keys);

  // The derived headroom of every queue some counted HPA names (queue -> GPUs, source), and the
  // notes on HPAs kept but not counted (sorted by HPA).
  struct Derivation {
    std::map<std::string, QuotaLedger::DerivedHeadroom> by_queue;
    std::vector<std::string> notes;
  };
  Derivation Derive(const std::string& scheduler_name) const;

  size_t size() const { return hpas_.size(); }
  const std::map<std::string, AutoscalerInfo>& hpas() const { return hpas_; }

 private:
  std::map<std::string, AutoscalerInfo> hpas_;  // by "namespace/name"
};

}  // namespace tidal
