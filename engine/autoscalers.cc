// HPA-derived headroom (see autoscalers.h). Threading: plain values, the engine's mu_.
#include "engine/autoscalers.h"

#include <algorithm>
#include <limits>

#include "core/api/limits.h"
#include "engine/pod_spec.h"

namespace tidal {

namespace {

constexpr int kListedPerQueue = 4;  // HPAs named in a queue's source; the rest are counted

bool KnownKind(const std::string& kind) {
  return std::any_of(std::begin(kAutoscalerKinds), std::end(kAutoscalerKinds), [&](const char* k) { return kind == k; });
}

}  // namespace

Status CheckAutoscaler(const AutoscalerInfo& a) {
  const std::string at = "autoscaler " + a.ns.substr(0, limits::kMaxNameBytes) + "/" + a.name.substr(0, limits::kMaxNameBytes);
  if (a.ns.empty() || a.name.empty()) return Status::Error(at + ": namespace and name: must not be empty");
  for (const auto* s : {&a.ns, &a.name, &a.target_kind, &a.target_name, &a.target_api_version, &a.scheduler_name}) {
    if (Status st = limits::CheckSize(*s, limits::kMaxNameBytes, at + ": name of the HPA or its target"); !st.ok()) return st;
  }
  for (const auto* m : {&a.labels, &a.annotations}) {
    for (const auto& [k, v] : *m) {
      if (Status st = limits::CheckSize(k + v, limits::kMaxValueBytes, at + ": template key " + k.substr(0, 64)); !st.ok()) return st;
    }
  }
  if (a.max_replicas < 0) {
    return Status::Error(at + ": maxReplicas: " + std::to_string(a.max_replicas) + ": must not be negative; not counted");
  }
  if (a.max_replicas > std::numeric_limits<int32_t>::max()) {
    return Status::Error(at + ": maxReplicas: " + std::to_string(a.max_replicas) + ": above 2^31-1; not counted");
  }
  if (a.gpus_per_replica < 0 || a.gpus_per_replica > limits::kMaxWorkloadGpus) {
    return Status::Error(at + ": GPUs per replica: " + std::to_string(a.gpus_per_replica) + ": must be in [0, " +
                         std::to_string(limits::kMaxWorkloadGpus) + "]; not counted");
  }
  return Status::Ok();
}

bool AutoscalerBook::Upsert(AutoscalerInfo a, Status* refused) {
  if (Status s = CheckAutoscaler(a); !s.ok()) {
    *refused = s;
    return Delete(a.Key());
  }
  auto [it, added] = hpas_.try_emplace(a.Key());
  AutoscalerInfo& old = it->second;
  const bool same = !added && old.target_kind == a.target_kind && old.target_name == a.target_name &&
                    old.target_api_version == a.target_api_version && old.max_replicas == a.max_replicas &&
                    old.target_found == a.target_found && old.scheduler_name == a.scheduler_name &&
                    old.labels == a.labels && old.annotations == a.annotations && old.gpus_per_replica == a.gpus_per_replica;
  if (!same) old = std::move(a);
  return !same;
}

bool AutoscalerBook::Delete(const std::string& key) { return hpas_.erase(key) > 0; }

bool AutoscalerBook::Retain(const std::unordered_set<std::string>& keys) {
  bool changed = false;
  for (auto it = hpas_.begin(); it != hpas_.end();) {
    if (keys.count(it->first)) {
      ++it;
    } else {
      it = hpas_.erase(it);
      changed = true;
    }
  }
  return changed;
}

AutoscalerBook::Derivation AutoscalerBook::Derive(const std::string& scheduler_name) const {
  Derivation out;
  std::map<std::string, int> listed, more;
  for (const auto& [key, a] : hpas_) {
    const std::string at = "HPA " + key;
    if (!KnownKind(a.target_kind)) {
      out.notes.push_back(at + ": scaleTargetRef kind \"" + a.target_kind + "\" is not counted (accepted: Deployment, StatefulSet)");
      continue;
    }
    if (!a.target_found) {
      out.notes.push_back(at + ": its target " + a.target_kind + " " + a.ns + "/" + a.target_name + " is not known (yet): not counted");
      continue;
    }
    if (a.scheduler_name != scheduler_name || a.gpus_per_replica <= 0 || a.max_replicas <= 0) continue;  // not ours, or no GPUs
    PodSchedulingSpec spec;
    if (Status s = podkeys::ResolveQueue(a.labels, a.annotations, &spec); !s.ok()) {
      out.notes.push_back(at + ": its pod template's queue: " + s.ToString() + "; not counted");
      continue;
    }
    auto& d = out.by_queue[spec.queue];
    const int64_t gpus = std::min(kMaxDerivedGpus, a.max_replicas * a.gpus_per_replica);  // both bounded: no overflow
    d.gpus = std::min(kMaxDerivedGpus, d.gpus + gpus);
    if (listed[spec.queue]++ < kListedPerQueue) {
      d.source += (d.source.empty() ? "" : " + ") + at + ": maxReplicas " + std::to_string(a.max_replicas) + " x " +
                  std::to_string(a.gpus_per_replica) + " GPUs";
    } else {
      ++more[spec.queue];
    }
  }
  for (const auto& [q, n] : more) out.by_queue[q].source += " + " + std::to_string(n) + " more HPAs";
  return out;
}

}  // namespace tidal
