// What researchers write on their pods, parsed into plain scheduling fields.
//
// Tidal's own keys (labels or annotations; either works, an annotation wins when both are set):
//   tidal.dev/queue               queue name                      (default "default")
//   tidal.dev/gang                gang name within the namespace  (default: the pod is its own gang):
//                                 1-253 letters, digits, '-', '_', '.', starting and ending with a
//                                 letter or digit (so never "pod/<name>", a lone pod's gang key)
//   tidal.dev/gang-size           members of the gang, 1..10000   (required with a gang that names no size)
//   tidal.dev/gang-min            elastic minimum, 1..gang-size   (default gang-size; only with a gang)
//   tidal.dev/topology-required   a topology level name, e.g. leaf
//   tidal.dev/topology-preferred  a topology level name, e.g. nvlink; inside the required level
//                                 when both are set (leaf and nvlink, not leaf and block)
//   tidal.dev/preemptible         true | false
//   tidal.dev/runtime-limit       duration: 90s, 30m, 12h, 1h30m, 2d
//   tidal.dev/checkpoint-interval duration
//   tidal.dev/checkpoint-on-notice duration: the job checkpoints when given notice and needs this
//                                 long (the engine gives up to disruption.maxNoticeSeconds)
//   tidal.dev/last-checkpoint     RFC 3339 time or unix seconds the job writes after each checkpoint
//                                 (read by the disruption path, not part of this spec: a bad value
//                                 never makes a running pod invalid; ParseCheckpointTime; a stamp
//                                 more than kCheckpointSkewS ahead of the engine's clock is ignored)
//   tidal.dev/class               training | inference | batch | interactive
//   tidal.dev/gpu-model           the nodes' GPU model, exactly as the node reports it (default any):
//                                 on Kubernetes its nvidia.com/gpu.product label, e.g.
//                                 NVIDIA-A100-SXM4-80GB; on Slurm the gres type, e.g. a100 of --gres=gpu:a100:N
//   tidal.dev/gang-leader         "true" on one member of an elastic gang: a shrink gives it back last
//                                 (not part of this spec: read by the victim choice, engine_preempt.cc)
// Then, for gang, queue and topology only, the upstream PodGroup (scheduling.k8s.io/v1alpha2, as
// the shim hands it over in podgroup.internal.tidal.dev/* annotations of the converted pod) and
// the keys of scheduler-plugins, Volcano, KAI, Kueue, JobSet and LeaderWorkerSet, in that fixed
// order: the tables and the precedence are in pod_keys.cc (docs/user-guide.md lists them).
// JobSet's / LeaderWorkerSet's exclusive-topology makes a pod a member of an exclusive domain
// group (not a gang): see ExclusiveTopologyOf and Engine::PinExclusiveDomainLocked.
// Every error names the key, the value and what is accepted.
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/api/status.h"
#include "core/api/topology_levels.h"
#include "core/api/workload.h"

namespace tidal {

inline constexpr const char* kLabelQueue = "tidal.dev/queue";
inline constexpr const char* kLabelGang = "tidal.dev/gang";
inline constexpr const char* kLabelGangSize = "tidal.dev/gang-size";
inline constexpr const char* kLabelGangMin = "tidal.dev/gang-min";
inline constexpr const char* kLabelTopologyRequired = "tidal.dev/topology-required";
inline constexpr const char* kLabelTopologyPreferred = "tidal.dev/topology-preferred";
inline constexpr const char* kLabelPreemptible = "tidal.dev/preemptible";
inline constexpr const char* kLabelRuntimeLimit = "tidal.dev/runtime-limit";
inline constexpr const char* kLabelCheckpointInterval = "tidal.dev/checkpoint-interval";
inline constexpr const char* kLabelCheckpointOnNotice = "tidal.dev/checkpoint-on-notice";
inline constexpr const char* kLabelLastCheckpoint = "tidal.dev/last-checkpoint";
// Written by the Kubernetes shim on a pod given notice: the eviction deadline (RFC 3339) and cause.
inline constexpr const char* kAnnotationDisruptionNotice = "tidal.dev/disruption-notice";
inline constexpr const char* kAnnotationDisruptionCause = "tidal.dev/disruption-cause";
inline constexpr const char* kLabelClass = "tidal.dev/class";
inline constexpr const char* kLabelGpuModel = "tidal.dev/gpu-model";
inline constexpr const char* kLabelGangLeader = "tidal.dev/gang-leader";
inline constexpr const char* kLabelPodGroup = "scheduling.x-k8s.io/pod-group";

// The upstream PodGroup of a pod (spec.schedulingGroup.podGroupName), as the shim writes it into
// the converted pod's annotations (never the API object's; user-set values are dropped).
inline constexpr const char* kPodGroupName = "podgroup.internal.tidal.dev/name";
// "gang" (schedulingPolicy.gang), "basic" (schedulingPolicy.basic) or "missing" (the PodGroup
// does not exist yet: the pod waits).
inline constexpr const char* kPodGroupState = "podgroup.internal.tidal.dev/state";
inline constexpr const char* kPodGroupMinCount = "podgroup.internal.tidal.dev/min-count";
inline constexpr const char* kPodGroupTopologyKey = "podgroup.internal.tidal.dev/topology-key";
// An unbound pod that carries spec.schedulingGates, as the shim writes it into the converted pod's
// annotations: its first gate's name (and how many more). No scheduler places it until its gates
// are removed, so it is not yet a gang member that can be placed: the gang waits for it as for a
// member not created yet, and says so (Engine::CheckPod).
inline constexpr const char* kSchedulingGates = "sync.internal.tidal.dev/scheduling-gates";

inline constexpr const char* kJobSetExclusiveTopology = "alpha.jobset.sigs.k8s.io/exclusive-topology";
inline constexpr const char* kLwsExclusiveTopology = "leaderworkerset.sigs.k8s.io/exclusive-topology";

struct PodSchedulingSpec {
  std::string queue = "default";
  std::string gang;               // "" = the pod alone
  std::string gang_from;          // the key that named the gang (for messages), "" when alone
  int32_t gang_size = 1;
  int32_t gang_min = 1;
  std::string required_level, preferred_level;
  bool preemptible = false;
  int64_t runtime_limit_s = 0;
  int64_t checkpoint_interval_s = 0;
  int64_t checkpoint_on_notice_s = 0;  // 0 = does not checkpoint on notice (evicted at once)
  WorkloadClass workload_class = WorkloadClass::kBatch;
  std::string gpu_model;          // "" = any
  // Exclusive topology (JobSet, LeaderWorkerSet): every pod of `exclusive_group` ("jobset/<name>/
  // <replicated job>/<job index>", "lws/<name>/<group index>"; in the pod's namespace) lands in one
  // domain of the node label `exclusive_key`, which no other such group uses.
  std::string exclusive_key, exclusive_group;
};

// Errors are Unresolvable with plugin "podspec" (the shim reports them as TidalInvalidSpec); a
// pod whose upstream PodGroup does not exist yet gets Wait (plugin "gang"): held, never alone.
StatusOr<PodSchedulingSpec> ParsePodSchedulingSpec(const std::map<std::string, std::string>& labels,
                                                   const std::map<std::string, std::string>& annotations,
                                                   const TopologyLevels& levels);

// tidal.dev/last-checkpoint's value: RFC 3339 ("2026-12-02T10:00:00Z", offsets and fractions
// accepted) or decimal unix seconds; an error naming the key and value otherwise.
StatusOr<int64_t> ParseCheckpointTime(const std::string& value);

// The exclusive-topology group of a pod, read cheaply (a few lookups, no validation): {node label
// key, "<ns>/<group>"}; both "" when the pod names none or its group labels are incomplete.
struct ExclusiveTopology {
  std::string key, group;
};
ExclusiveTopology ExclusiveTopologyOf(const std::string& ns, const std::map<std::string, std::string>& labels,
                                      const std::map<std::string, std::string>& annotations);

// --- pod_keys.cc: the key tables (internal to ParsePodSchedulingSpec, exposed for tests) ---------
namespace podkeys {

// The annotation, else the label; nullptr when neither is set.
const std::string* Lookup(const std::map<std::string, std::string>& labels,
                          const std::map<std::string, std::string>& annotations, const std::string& key);
// "KEY: invalid value "V" (accepted: ACCEPTED)", Unresolvable, plugin "podspec".
Status Bad(const std::string& key, const std::string& value, const std::string& accepted);
// A decimal integer 1..max; false otherwise.
bool ParseCount(const std::string& s, int64_t max, int64_t* out);
// Gang name, size and elastic minimum (tidal.dev/gang, the PodGroup, the peers' keys).
Status ResolveGang(const std::map<std::string, std::string>& labels, const std::map<std::string, std::string>& annotations,
                   PodSchedulingSpec* s);
Status ResolveQueue(const std::map<std::string, std::string>& labels,
                    const std::map<std::string, std::string>& annotations, PodSchedulingSpec* s);
Status ResolveTopology(const std::map<std::string, std::string>& labels,
                       const std::map<std::string, std::string>& annotations, const TopologyLevels& levels,
                       PodSchedulingSpec* s);
// exclusive-topology: the node label key and the group (JobSet child Job, LeaderWorkerSet group).
Status ResolveExclusive(const std::map<std::string, std::string>& labels,
                        const std::map<std::string, std::string>& annotations, PodSchedulingSpec* s);
// Every label/annotation key the engine reads on a pod (sorted). The Kubernetes shim forwards only
// these (shim/kube/pkg/convert/engine_keys.txt lists them; a unit test keeps the two equal).
const std::vector<std::string>& KeysRead();
// The engine's key of a pod's gang: "<ns>/<gang>", or "<ns>/pod/<name>" for a pod of no gang.
inline std::string GangKeyOf(const std::string& ns, const std::string& name, const std::string& gang) {
  return gang.empty() ? ns + "/pod/" + name : ns + "/" + gang;
}
// Each value of a key in KeysRead() at most limits::kMaxValueBytes, and no oversize marker
// (limits::kOversizeAnnotation); Unresolvable naming the key otherwise.
Status CheckSizes(const std::map<std::string, std::string>& labels, const std::map<std::string, std::string>& annotations);
// The level whose node label key is `key` ("node" for kubernetes.io/hostname); "" when none.
std::string LevelOfLabelKey(const TopologyLevels& levels, const std::string& key);

}  // namespace podkeys
}  // namespace tidal
