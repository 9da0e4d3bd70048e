// What researchers write on their pods, parsed into plain scheduling fields.
//
// Labels or annotations (either works; an annotation wins when both are set):
//   tidal.dev/queue               queue name                      (default "default")
//   tidal.dev/gang                gang name within the namespace  (default: the pod is its own gang)
//   tidal.dev/gang-size           members of the gang, 1..10000   (required with tidal.dev/gang)
//   tidal.dev/gang-min            elastic minimum, 1..gang-size   (default gang-size)
//   tidal.dev/topology-required   a topology level name, e.g. leaf
//   tidal.dev/topology-preferred  a topology level name, e.g. nvlink
//   tidal.dev/preemptible         true | false
//   tidal.dev/runtime-limit       duration: 90s, 30m, 12h, 1h30m, 2d
//   tidal.dev/checkpoint-interval duration
//   tidal.dev/class               training | inference | batch | interactive
// The scheduler-plugins PodGroup label `scheduling.x-k8s.io/pod-group` is accepted as the gang
// name (its size then still comes from tidal.dev/gang-size).
// Every error names the key, the value and what is accepted.
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>

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
inline constexpr const char* kLabelClass = "tidal.dev/class";
inline constexpr const char* kLabelPodGroup = "scheduling.x-k8s.io/pod-group";

struct PodSchedulingSpec {
  std::string queue = "default";
  std::string gang;               // "" = the pod alone
  int32_t gang_size = 1;
  int32_t gang_min = 1;
  std::string required_level, preferred_level;
  bool preemptible = false;
  int64_t runtime_limit_s = 0;
  int64_t checkpoint_interval_s = 0;
  WorkloadClass workload_class = WorkloadClass::kBatch;
};

StatusOr<PodSchedulingSpec> ParsePodSchedulingSpec(const std::map<std::string, std::string>& labels,
                                                   const std::map<std::string, std::string>& annotations,
                                                   const TopologyLevels& levels);

}  // namespace tidal
