// ParsePodSchedulingSpec: Tidal's own keys, and (through the tables of pod_keys.cc) the upstream
// PodGroup's and the peers' keys for gang, queue and topology.
// Threading: pure functions.
#include "engine/pod_spec.h"

#include <algorithm>
#include <cstdio>
#include <string>

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
        return Bad(key, *v, "a positive duration of at most " + limits::DurationCapText() + ", such as 90s, 30m, 12h, 1h30m, 2d");
      }
      *out = *d;
    }
    return Status::Ok();
  };
  if (Status st = duration(kLabelRuntimeLimit, &s.runtime_limit_s); !st.ok()) return st;
  if (Status st = duration(kLabelCheckpointInterval, &s.checkpoint_interval_s); !st.ok()) return st;
  if (Status st = duration(kLabelCheckpointOnNotice, &s.checkpoint_on_notice_s); !st.ok()) return st;
  if (const auto* v = Lookup(labels, annotations, kLabelGpuModel)) {
    if (!IsValidLabelValue(*v)) return Bad(kLabelGpuModel, *v, "a GPU model name such as a100 (a label value)");
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
  const std::string accepted = "an RFC 3339 time such as 2026-12-02T10:00:00Z, or unix seconds";
  auto bad = [&] { return Status::Error(std::string(kLabelLastCheckpoint) + ": invalid value \"" + value.substr(0, 100) + "\" (accepted: " + accepted + ")", "podspec"); };
  if (value.empty() || value.size() > 64) return bad();
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (value.size() > 12) return bad();  // past year 33658
    return static_cast<int64_t>(std::stoll(value));
  }
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, n = 0;
  if (std::sscanf(value.c_str(), "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19) return bad();
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return bad();
  size_t i = 19;
  if (i < value.size() && value[i] == '.') {
    ++i;
    const size_t digits = i;
    while (i < value.size() && value[i] >= '0' && value[i] <= '9') ++i;
    if (i == digits) return bad();
  }
  int64_t offset = 0;
  if (i < value.size() && (value[i] == 'Z' || value[i] == 'z')) {
    ++i;
  } else if (i + 6 == value.size() && (value[i] == '+' || value[i] == '-') && value[i + 3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(value.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2 || oh > 23 || om > 59) return bad();
    offset = (value[i] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    i += 6;
  } else {
    return bad();
  }
  if (i != value.size()) return bad();
  // Days since 1970-01-01 (civil calendar, H. Hinnant's days_from_civil).
  const int yy = y - (mo <= 2 ? 1 : 0);
  const int era = yy / 400;
  const int yoe = yy - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = static_cast<int64_t>(era) * 146097 + doe - 719468;
  return days * 86400 + h * 3600 + mi * 60 + sec - offset;
}

}  // namespace tidal
