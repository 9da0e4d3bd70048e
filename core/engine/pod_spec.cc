#include "core/engine/pod_spec.h"

#include <cctype>

#include "core/io/document.h"

namespace tidal {
namespace {

const std::string* Lookup(const std::map<std::string, std::string>& labels,
                          const std::map<std::string, std::string>& annotations, const char* key) {
  if (auto it = annotations.find(key); it != annotations.end()) return &it->second;
  if (auto it = labels.find(key); it != labels.end()) return &it->second;
  return nullptr;
}

Status Bad(const char* key, const std::string& value, const std::string& accepted) {
  return Status::Unresolvable(std::string(key) + ": invalid value \"" + value + "\" (accepted: " + accepted + ")",
                              "podspec");
}

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  *out = std::stoll(s);
  return true;
}

}  // namespace

StatusOr<PodSchedulingSpec> ParsePodSchedulingSpec(const std::map<std::string, std::string>& labels,
                                                   const std::map<std::string, std::string>& annotations,
                                                   const TopologyLevels& levels) {
  PodSchedulingSpec s;
  if (const auto* v = Lookup(labels, annotations, kLabelQueue)) {
    if (v->empty() || v->size() > 63) return Bad(kLabelQueue, *v, "a queue name of 1-63 characters");
    s.queue = *v;
  }
  if (const auto* v = Lookup(labels, annotations, kLabelGang)) {
    s.gang = *v;
  } else if (const auto* pg = Lookup(labels, annotations, kLabelPodGroup)) {
    s.gang = *pg;
  }
  if (const auto* v = Lookup(labels, annotations, kLabelGangSize)) {
    int64_t n = 0;
    if (!ParseInt(*v, &n) || n < 1 || n > 10000) return Bad(kLabelGangSize, *v, "an integer 1..10000");
    s.gang_size = static_cast<int32_t>(n);
    if (s.gang.empty()) {
      return Status::Unresolvable(std::string(kLabelGangSize) + ": set without " + kLabelGang +
                                      " (accepted: add tidal.dev/gang naming the gang)",
                                  "podspec");
    }
  } else if (!s.gang.empty()) {
    return Status::Unresolvable(std::string(kLabelGangSize) + ": missing; required with " + kLabelGang +
                                    " (accepted: an integer 1..10000)",
                                "podspec");
  }
  s.gang_min = s.gang_size;
  if (const auto* v = Lookup(labels, annotations, kLabelGangMin)) {
    int64_t n = 0;
    if (!ParseInt(*v, &n) || n < 1 || n > s.gang_size) {
      return Bad(kLabelGangMin, *v, "an integer 1.." + std::to_string(s.gang_size));
    }
    s.gang_min = static_cast<int32_t>(n);
  }
  auto level = [&](const char* key, std::string* out) -> Status {
    if (const auto* v = Lookup(labels, annotations, key)) {
      if (levels.Find(*v) < 0) return Bad(key, *v, levels.Accepted());
      *out = *v;
    }
    return Status::Ok();
  };
  if (Status st = level(kLabelTopologyRequired, &s.required_level); !st.ok()) return st;
  if (Status st = level(kLabelTopologyPreferred, &s.preferred_level); !st.ok()) return st;
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
      if (!d.ok() || *d <= 0) return Bad(key, *v, "a positive duration such as 90s, 30m, 12h, 1h30m, 2d");
      *out = *d;
    }
    return Status::Ok();
  };
  if (Status st = duration(kLabelRuntimeLimit, &s.runtime_limit_s); !st.ok()) return st;
  if (Status st = duration(kLabelCheckpointInterval, &s.checkpoint_interval_s); !st.ok()) return st;
  if (const auto* v = Lookup(labels, annotations, kLabelClass)) {
    auto c = ParseWorkloadClass(*v, kLabelClass);
    if (!c.ok()) return Bad(kLabelClass, *v, "training, inference, batch, interactive");
    s.workload_class = *c;
  }
  return s;
}

}  // namespace tidal
