// Engine observability: the Prometheus families tidal-engine exports (docs/operations.md lists
// them all) and the rate-limited decision log (one JSON line per decision, for audit).
//
// Threading: metric updates are thread-safe (prometheus-cpp); callback gauges call back into Engine,
// which takes its own mutex, so Render must not be called with Engine::mu_ held. DecisionLog has
// its own mutex.
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/api/size_bucket.h"  // SizeBucket: the size_bucket label
#include "core/metrics/registry.h"

namespace tidal {

// Label values are bounded: a queue label is a configured queue or kUnconfiguredQueue (a pod may
// name any queue; free text would grow the series without bound), a preemption reason one of
// kPreemptionReasons ("other" for anything else).
inline constexpr const char* kUnconfiguredQueue = "unconfigured";
inline constexpr const char* kPreemptionReasons[] = {"priority", "reclaim", "priority+reclaim", "unknown", "other"};
std::string PreemptionReasonLabel(const std::string& reason);

struct EngineMetrics {
  // Registers the families, with the series of known label values at 0 (every preemption reason,
  // every decision outcome), so alerts and rate() work from the first scrape.
  explicit EngineMetrics(metrics::Registry& r);
  // The per-queue series of configured queues at 0 (Engine calls it on SetObservability and on
  // every reload; a queue removed by a reload keeps its counter, as counters never go back).
  void InitQueues(const std::vector<std::string>& queues);
  metrics::Registry& registry;
  metrics::Family<metrics::Histogram>& admission_wait;   // queue, class, size_bucket
  metrics::Family<metrics::Histogram>& time_to_start;    // queue, class, size_bucket
  metrics::Family<metrics::Histogram>& cycle_duration;   // (one planning pass)
  metrics::Family<metrics::Counter>& preemptions;        // reason
  metrics::Family<metrics::Counter>& preempted_gpu_seconds;  // reason
  metrics::Family<metrics::Counter>& decisions;          // outcome
  metrics::Family<metrics::Counter>& runtime_limit_exceeded;  // queue
  // The disruption path (engine_disruptions.cc), by cause (kDisruptionCauses): disruptions done
  // (evicted, counted when their last pod is gone), GPU-seconds lost, the time from the engine's
  // choice to the eviction (the notice), and gangs taken off whole (every member, then requeued).
  metrics::Family<metrics::Counter>& disruptions;            // cause
  metrics::Family<metrics::Counter>& disruption_lost_gpu_seconds;  // cause
  metrics::Family<metrics::Histogram>& disruption_notice;    // cause
  metrics::Family<metrics::Counter>& gangs_requeued_whole;   // cause
  // Perishable windows (engine_perishable.cc): GPU-seconds of nodes before their close, and of
  // those used by work.
  metrics::Family<metrics::Counter>& perishable_gpu_seconds;  // use: offered, filled
  // Workloads that ended, by front door and how (kWorkloadEnds; engine_runtime.cc).
  metrics::Family<metrics::Counter>& finished_workloads;      // door, end
  // Pools lending nodes (engine_lending.cc), from (owner pool) to (borrower door): loans, reclaims
  // begun, and the time from a reclaim's start to the node's return.
  metrics::Family<metrics::Counter>& pool_lends;              // from, to
  metrics::Family<metrics::Counter>& pool_reclaims;           // from, to
  metrics::Family<metrics::Histogram>& pool_reclaim_seconds;  // from, to
  metrics::Family<metrics::Counter>& grpc_requests;      // method, code
  metrics::Family<metrics::Histogram>& grpc_duration;    // method
};

// Writes at most `per_second` lines per second (token bucket, burst = per_second); lines beyond
// that are counted and reported in the next written line as "dropped".
class DecisionLog {
 public:
  DecisionLog(FILE* out, double per_second) : out_(out), rate_(per_second), tokens_(per_second) {}
  void Write(nlohmann::json line);
  uint64_t dropped() const;

 private:
  FILE* out_;
  double rate_;
  mutable std::mutex mu_;
  double tokens_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  uint64_t dropped_ = 0, dropped_reported_ = 0;
};

}  // namespace tidal
