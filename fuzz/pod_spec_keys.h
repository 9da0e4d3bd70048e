// The label and annotation keys engine/pod_keys.cc and engine/pod_spec.cc read, for the pod_spec
// fuzz target ("@N" in its input is kPodKeys[N % kPodKeyCount]) and its dictionary.
#pragma once

#include <cstddef>

namespace tidal::fuzz {

inline constexpr const char* kPodKeys[] = {
    "tidal.dev/queue", "tidal.dev/gang", "tidal.dev/gang-size", "tidal.dev/gang-min",
    "tidal.dev/topology-required", "tidal.dev/topology-preferred", "tidal.dev/preemptible",
    "tidal.dev/runtime-limit", "tidal.dev/checkpoint-interval", "tidal.dev/class", "tidal.dev/gpu-model",
    "scheduling.x-k8s.io/pod-group", "podgroup.internal.tidal.dev/name", "podgroup.internal.tidal.dev/state",
    "podgroup.internal.tidal.dev/min-count", "podgroup.internal.tidal.dev/topology-key",
    "scheduling.k8s.io/group-name", "scheduling.volcano.sh/queue-name", "pod-group-name", "kai.scheduler/queue",
    "runai/queue", "kai.scheduler/topology-required-placement", "kai.scheduler/topology-preferred-placement",
    "kueue.x-k8s.io/pod-group-name", "kueue.x-k8s.io/pod-group-total-count", "kueue.x-k8s.io/queue-name",
    "kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology",
    "alpha.jobset.sigs.k8s.io/exclusive-topology", "jobset.sigs.k8s.io/jobset-name",
    "jobset.sigs.k8s.io/replicatedjob-name", "jobset.sigs.k8s.io/job-index",
    "leaderworkerset.sigs.k8s.io/exclusive-topology", "leaderworkerset.sigs.k8s.io/name",
    "leaderworkerset.sigs.k8s.io/group-index", "leaderworkerset.sigs.k8s.io/size", "kubernetes.io/hostname",
};
inline constexpr size_t kPodKeyCount = sizeof(kPodKeys) / sizeof(kPodKeys[0]);

}  // namespace tidal::fuzz
