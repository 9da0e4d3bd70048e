// RuntimeHistory: a learned per-queue correction of declared runtimes. Declared limits
// (tidal.dev/runtime-limit, Slurm --time) are poor: users ask for 4 h and use one. For each queue
// it keeps a bounded window of the most recent samples of actual / declared runtime, and only from
// work that ran to its own end:
//   completed   a sample of actual / declared (clamped to [0, kMaxRatio]);
//   timeout     killed at its limit: a sample of 1.0 (it used all of it);
//   disrupted, cancelled, failed, unknown: never a sample. A preempted job's short run, a job
//               cancelled by its user, one that crashed, or one whose end nobody saw would teach
//               the queue that its jobs are short; an unknown end is never "completed".
// The correction is a conservative quantile of the window (nearest rank; config quantile, default
// p90) once minSamples are in; before that there is none. How it is used (engine/engine_runtime.cc):
// only to let PREEMPTIBLE work fill a perishable window it would fit by its corrected runtime;
// nothing non-preemptible is ever placed by an estimate.
//
// Config (engine config `perishable.runtimeCorrection`):
//   perishable: {runtimeCorrection: {quantile: 0.9, minSamples: 20, window: 200}}   # or false
//
// Threading: plain data, no locking; the engine owns one and guards it with its mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/api/status.h"

namespace tidal {

// How a workload ended, as the engine classifies it from what the doors report.
enum class WorkloadEnd { kUnknown, kCompleted, kTimeout, kDisrupted, kCancelled, kFailed };
inline constexpr const char* kWorkloadEnds[] = {"unknown", "completed", "timeout", "disrupted", "cancelled", "failed"};
std::string_view WorkloadEndName(WorkloadEnd e);
// Of two members' ends, the one that decides the workload's: disrupted, timeout, cancelled,
// failed, unknown, completed (a gang completed only when every member did).
WorkloadEnd WorseEnd(WorkloadEnd a, WorkloadEnd b);

struct RuntimeCorrectionConfig {
  bool enabled = true;
  double quantile = 0.9;    // (0, 1]
  int32_t min_samples = 20;  // [1, window]
  int32_t window = 200;      // [1, kMaxWindow]: samples kept per queue
};
// `runtimeCorrection`: false / true / {quantile, minSamples, window}; errors name the field under
// `path` ("perishable.runtimeCorrection.quantile: must be in (0, 1]").
Status DecodeRuntimeCorrection(const nlohmann::json& j, const std::string& path, RuntimeCorrectionConfig* out);

class RuntimeHistory {
 public:
  static constexpr int32_t kMaxWindow = 10000;
  static constexpr size_t kMaxQueues = 1000;  // queues beyond it are not learned (names are bounded by the caller)
  static constexpr double kMaxRatio = 10.0;

  struct Correction {
    double ratio = 1.0;   // the quantile of actual / declared
    int32_t samples = 0;  // in the window
  };

  // Adds a sample for a workload of `queue` that ended `end` after running actual_s of its declared
  // declared_s; true when it was one (completed or timeout, declared_s > 0, actual_s >= 0). The
  // queue keeps its `window` most recent samples.
  bool Add(const std::string& queue, WorkloadEnd end, int64_t actual_s, int64_t declared_s, int32_t window);
  // The queue's correction by `cfg`; nullopt while it has fewer than min_samples (or it is off).
  std::optional<Correction> Estimate(const std::string& queue, const RuntimeCorrectionConfig& cfg) const;
  int32_t Samples(const std::string& queue) const;
  std::vector<std::string> Queues() const;  // sorted
  // Keeps at most `window` samples per queue (a reload that shrank the window).
  void Trim(int32_t window);

  // The state file's "runtimeHistory": {queue: [ratio, ...]} (oldest first).
  nlohmann::json Save() const;
  // Replaces the samples; values that are not ratios are skipped and reported (field named).
  Status Load(const nlohmann::json& j, int32_t window);

 private:
  std::map<std::string, std::deque<double>> by_queue_;
};

}  // namespace tidal
