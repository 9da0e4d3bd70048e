// RuntimeHistory (see runtime_history.h). Threading: plain data, no locking.
#include "core/state/runtime_history.h"

#include <algorithm>
#include <cmath>

namespace tidal {

namespace {
int Rank(WorkloadEnd e) {  // higher decides
  switch (e) {
    case WorkloadEnd::kCompleted: return 0;
    case WorkloadEnd::kUnknown: return 1;
    case WorkloadEnd::kFailed: return 2;
    case WorkloadEnd::kCancelled: return 3;
    case WorkloadEnd::kTimeout: return 4;
    case WorkloadEnd::kDisrupted: return 5;
  }
  return 1;
}
}  // namespace

std::string_view WorkloadEndName(WorkloadEnd e) { return kWorkloadEnds[static_cast<int>(e)]; }

WorkloadEnd WorseEnd(WorkloadEnd a, WorkloadEnd b) { return Rank(a) >= Rank(b) ? a : b; }

Status DecodeRuntimeCorrection(const nlohmann::json& j, const std::string& path, RuntimeCorrectionConfig* out) {
  if (j.is_boolean()) {
    out->enabled = j.get<bool>();
    return Status::Ok();
  }
  if (!j.is_object()) return Status::Error(path + ": expected false, true or {quantile, minSamples, window}");
  RuntimeCorrectionConfig c;
  for (const auto& [k, v] : j.items()) {
    const std::string at = path + "." + k;
    if (k == "quantile") {
      if (!v.is_number()) return Status::Error(at + ": expected a number in (0, 1]");
      c.quantile = v.get<double>();
      if (!(c.quantile > 0 && c.quantile <= 1)) return Status::Error(at + ": must be in (0, 1]");
    } else if (k == "minSamples" || k == "window") {
      if (!v.is_number_integer()) return Status::Error(at + ": expected an integer");
      const int64_t n = v.get<int64_t>();
      if (n < 1 || n > RuntimeHistory::kMaxWindow) {
        return Status::Error(at + ": must be between 1 and " + std::to_string(RuntimeHistory::kMaxWindow));
      }
      (k == "window" ? c.window : c.min_samples) = static_cast<int32_t>(n);
    } else if (k == "enabled") {
      if (!v.is_boolean()) return Status::Error(at + ": must be true or false");
      c.enabled = v.get<bool>();
    } else {
      return Status::Error(at + ": unknown field (accepted: quantile, minSamples, window, enabled)");
    }
  }
  if (c.min_samples > c.window) {
    return Status::Error(path + ".minSamples: " + std::to_string(c.min_samples) + " is more than the window (" +
                         std::to_string(c.window) + ")");
  }
  *out = c;
  return Status::Ok();
}

bool RuntimeHistory::Add(const std::string& queue, WorkloadEnd end, int64_t actual_s, int64_t declared_s, int32_t window) {
  if (declared_s <= 0 || actual_s < 0 || window <= 0) return false;
  double ratio = 0;
  if (end == WorkloadEnd::kTimeout) {
    ratio = 1.0;
  } else if (end == WorkloadEnd::kCompleted) {
    ratio = std::clamp(static_cast<double>(actual_s) / static_cast<double>(declared_s), 0.0, kMaxRatio);
  } else {
    return false;  // disrupted, cancelled, failed, unknown: never a sample
  }
  auto it = by_queue_.find(queue);
  if (it == by_queue_.end()) {
    if (by_queue_.size() >= kMaxQueues) return false;
    it = by_queue_.emplace(queue, std::deque<double>{}).first;
  }
  it->second.push_back(ratio);
  const size_t keep = static_cast<size_t>(std::min(window, kMaxWindow));
  while (it->second.size() > keep) it->second.pop_front();
  return true;
}

std::optional<RuntimeHistory::Correction> RuntimeHistory::Estimate(const std::string& queue,
                                                                  const RuntimeCorrectionConfig& cfg) const {
  if (!cfg.enabled) return std::nullopt;
  auto it = by_queue_.find(queue);
  if (it == by_queue_.end() || it->second.empty()) return std::nullopt;
  // Only the most recent `window` count (the config may have shrunk since they were added).
  const size_t n = std::min(it->second.size(), static_cast<size_t>(std::max(1, cfg.window)));
  if (n < static_cast<size_t>(std::max(1, cfg.min_samples))) return std::nullopt;
  std::vector<double> v(it->second.end() - static_cast<std::ptrdiff_t>(n), it->second.end());
  // Nearest rank: the smallest value with at least `quantile` of the samples at or below it.
  const double q = std::clamp(cfg.quantile, 0.0, 1.0);
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n) - 1e-9));
  rank = std::clamp<size_t>(rank, 1, n);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank - 1), v.end());
  return Correction{v[rank - 1], static_cast<int32_t>(n)};
}

int32_t RuntimeHistory::Samples(const std::string& queue) const {
  auto it = by_queue_.find(queue);
  return it == by_queue_.end() ? 0 : static_cast<int32_t>(it->second.size());
}

std::vector<std::string> RuntimeHistory::Queues() const {
  std::vector<std::string> out;
  for (const auto& [q, s] : by_queue_) out.push_back(q);
  return out;
}

void RuntimeHistory::Trim(int32_t window) {
  const size_t keep = static_cast<size_t>(std::clamp(window, 1, kMaxWindow));
  for (auto& [q, s] : by_queue_) {
    while (s.size() > keep) s.pop_front();
  }
}

nlohmann::json RuntimeHistory::Save() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [q, s] : by_queue_) {
    nlohmann::json a = nlohmann::json::array();
    for (double r : s) a.push_back(std::round(r * 10000.0) / 10000.0);  // 4 decimals: a small file
    out[q] = std::move(a);
  }
  return out;
}

Status RuntimeHistory::Load(const nlohmann::json& j, int32_t window) {
  by_queue_.clear();
  if (!j.is_object()) return Status::Error("runtimeHistory: expected an object of queue: [ratio, ...]");
  Status st;
  auto fail = [&st](std::string reason) {
    if (st.ok()) {
      st = Status::Error(std::move(reason));
    } else {
      st.AddReason(std::move(reason));
    }
  };
  const size_t keep = static_cast<size_t>(std::clamp(window, 1, kMaxWindow));
  for (const auto& [q, a] : j.items()) {
    if (by_queue_.size() >= kMaxQueues) {
      fail("runtimeHistory: more than " + std::to_string(kMaxQueues) + " queues; the rest not restored");
      break;
    }
    if (!a.is_array()) {
      fail("runtimeHistory." + q.substr(0, 100) + ": expected a list of ratios");
      continue;
    }
    std::deque<double> s;
    size_t bad = 0;
    for (const auto& v : a) {
      if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= kMaxRatio)) {
        ++bad;
        continue;
      }
      s.push_back(v.get<double>());
      if (s.size() > keep) s.pop_front();
    }
    if (bad > 0) {
      fail("runtimeHistory." + q.substr(0, 100) + ": " + std::to_string(bad) + " value(s) not a ratio in [0, " +
                   std::to_string(static_cast<int>(kMaxRatio)) + "], skipped");
    }
    if (!s.empty()) by_queue_[q] = std::move(s);
  }
  return st;
}

}  // namespace tidal
