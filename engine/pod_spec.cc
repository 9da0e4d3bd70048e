// ParsePodSchedulingSpec: Tidal's own keys, and (through the tables of pod_keys.cc) the upstream
// PodGroup's and the peers' keys for gang, queue and topology.
// Threading: pure functions.
#include "engine/pod_spec.h"


#include "core/api/duration.h"
#include "core/api/limits.h"

namespace tidal {

using podkeys::Bad;
using podkeys::Lookup;

StatusOr<PodSchedulingSpec> ParsePodSchedulingSpec(const std::map<std::string, std::string>& labels,
                                                   const std::map<std::string, std::string>& annotations,
                                                   const TopologyLevels& levels) {
  PodSchedulingSpec s;
  if (Status st = podkeys::CheckSizes(labels, annotations); !st.ok()) return st;
  if (Status st = podkeys::ResolveQueue(labels, annotations, &s); !st.ok()) return st;
  if (Status st = podkeys::ResolveExclusive(labels, annotations, &s); !st.ok()) return st;
  if (Status st = podkeys::ResolveGang(labels, annotations, &s); !st.ok()) return st;
  if (Status st = podkeys::ResolveTopology(labels, annotations, levels, &s); !st.ok()) return st;
  if (const auto* v = Lookup(labels, annotations, kLabelPreemptible)) {
    if (*v == "true") {
      s.preemptible = true;
    } else if (*v == "false") {
      s.preemptible = false;
    } else {
      return Bad(kLabelPreemptible, *v, "true, false");
    }
  }
  auto duration = [&](const char* key, int64_t* out) -> Status {
    if (const auto* v = Lookup(labels, annotations, key)) {
      auto d = ParseDurationSeconds(*v, key);
      if (!d.ok() || *d <= 0) {
        return Bad(key, *v,
                   "a positive duration of at most " + limits::DurationCapText() +
                       ", each unit at most once and largest first, such as 90s, 30m, 12h, 1h30m, 2d");
      }
      *out = *d;
    }
    return Status::Ok();
  };
  if (Status st = duration(kLabelRuntimeLimit, &s.runtime_limit_s); !st.ok()) return st;
  if (Status st = duration(kLabelCheckpointInterval, &s.checkpoint_interval_s); !st.ok()) return st;
  if (Status st = duration(kLabelCheckpointOnNotice, &s.checkpoint_on_notice_s); !st.ok()) return st;
  if (const auto* v = Lookup(labels, annotations, kLabelGpuModel)) {
    if (!IsValidLabelValue(*v)) return Bad(kLabelGpuModel, *v, "a GPU model as the nodes report it, such as NVIDIA-A100-SXM4-80GB (a label value)");
    s.gpu_model = *v;
  }
  if (const auto* v = Lookup(labels, annotations, kLabelClass)) {
    auto c = ParseWorkloadClass(*v, kLabelClass);
    if (!c.ok()) return Bad(kLabelClass, *v, "training, inference, batch, interactive");
    s.workload_class = *c;
  }
  return s;
}

StatusOr<int64_t> ParseCheckpointTime(const std::string& value) {
  auto t = ParseUnixTime(value, kLabelLastCheckpoint);
  if (!t.ok()) return Status::Error(t.status().Message(), "podspec");
  return t;
}

}  // namespace tidal
