// Checks against the bounds of limits.h. Threading: pure functions.
#include "core/api/limits.h"

#include <algorithm>
#include <cctype>

#include "core/api/duration.h"

namespace tidal::limits {

Status CheckResources(const Resources& r, const std::string& field) {
  auto over = [&](const char* what, int64_t v, const std::string& shown) {
    return Status::Error(field + "." + what + ": " + std::to_string(v) + " is over the limit of " + shown);
  };
  if (r.gpus > kMaxGpusPerNode) return over("gpus", r.gpus, std::to_string(kMaxGpusPerNode) + " per node");
  if (r.cpu_milli > kMaxCpuMilliPerNode) {
    return over("cpu_milli", r.cpu_milli, FormatMilli(kMaxCpuMilliPerNode) + " CPUs per node");
  }
  if (r.memory_bytes > kMaxMemoryBytesPerNode) {
    return over("memory_bytes", r.memory_bytes, FormatBytes(kMaxMemoryBytesPerNode) + " per node");
  }
  return Status::Ok();
}

Status CheckWorkloadTotal(const Resources& per_member, int64_t members, const std::string& field) {
  if (members > kMaxGangMembers) {
    return Status::Error(field + ": " + std::to_string(members) + " members is over the limit of " +
                         std::to_string(kMaxGangMembers));
  }
  // Both factors are bounded (CheckResources, kMaxGangMembers): the product cannot overflow.
  if (per_member.gpus > 0 && members > 0 && per_member.gpus <= kMaxGpusPerNode && per_member.gpus * members > kMaxWorkloadGpus) {
    return Status::Error(field + ": " + std::to_string(members) + " members x " + std::to_string(per_member.gpus) +
                         " GPUs = " + std::to_string(per_member.gpus * members) + " GPUs is over the limit of " +
                         std::to_string(kMaxWorkloadGpus) + " per workload");
  }
  return Status::Ok();
}

std::string DurationCapText() { return FormatDurationSeconds(kMaxDurationS); }

Status CheckDuration(int64_t seconds, const std::string& field) {
  if (seconds > kMaxDurationS) {
    return Status::Error(field + ": " + FormatDurationSeconds(seconds) + " is over the limit of " + DurationCapText());
  }
  return Status::Ok();
}

Status CheckSize(const std::string& s, size_t max, const std::string& field) {
  if (s.size() > max) {
    return Status::Error(field + ": " + std::to_string(s.size()) + " bytes, over the limit of " + std::to_string(max));
  }
  return Status::Ok();
}

bool IsLabelKey(const std::string& k) {
  if (k.empty() || k.size() > kMaxLabelKeyBytes) return false;
  const auto slash = k.find('/');
  const std::string name = slash == std::string::npos ? k : k.substr(slash + 1);
  if (name.empty() || name.size() > 63 || !std::isalnum(static_cast<unsigned char>(name.front())) ||
      !std::isalnum(static_cast<unsigned char>(name.back()))) {
    return false;
  }
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  if (slash == std::string::npos) return true;
  const std::string prefix = k.substr(0, slash);
  if (prefix.empty() || prefix.size() > 253) return false;
  return std::all_of(prefix.begin(), prefix.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
           c == '.';
  });
}

}  // namespace tidal::limits
