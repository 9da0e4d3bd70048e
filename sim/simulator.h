// Simulator: replays jobs on a virtual clock through the same core and plugins as tidal-engine
// (no gRPC): ClusterState + Scheduler + QuotaLedger, driven by submit and completion events.
//
// Event loop: at each event time t (a submission or a completion, in time order), completed jobs
// release their capacity and quota charge, submitted jobs join the pending queue, the ledger
// integrates usage up to t, and one scheduling cycle runs over the WHOLE pending queue. A placed
// job runs for its actual duration (its declared runtime limit is only what the scheduler sees).
// Deterministic: same input, same output (ties broken by job id).
//
// Threading: single-threaded; the simulator owns all its state.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/framework/scheduler.h"
#include "core/state/cluster_state.h"
#include "core/state/queues.h"

namespace tidal::sim {

struct SimJob {
  Workload w;               // w.submit_time_s is the submit time
  int64_t duration_s = 0;   // actual run time
};

struct JobRecord {
  std::string id, queue;
  int32_t members = 0;
  int64_t gpus = 0;         // total GPUs while running
  int64_t submit_s = 0, start_s = -1, end_s = -1;
  std::string domain;       // where it ran
  int domain_level = -2;    // -1 cluster, else TopologyLevels index; -2 never ran
  bool rejected = false;
  std::string last_reason;
};

struct SimStats {
  int64_t cycles = 0;
  int64_t decisions = 0;
  double wall_seconds = 0;
};

class Simulator {
 public:
  // `ledger` may be null (no queues). The scheduler's profile must have been built with the same
  // ledger in its PluginContext.
  Simulator(ClusterState state, std::unique_ptr<Scheduler> scheduler, QuotaLedger* ledger);

  void Submit(SimJob job);
  // Runs until every job has finished or been rejected, or until `until_s` (virtual seconds).
  void Run(int64_t until_s = INT64_MAX);

  const std::vector<JobRecord>& records() const { return records_; }
  const ClusterState& state() const { return state_; }
  const SimStats& stats() const { return stats_; }
  // GPU-seconds consumed per queue so far.
  const std::map<std::string, double>& gpu_seconds_by_queue() const { return gpu_seconds_by_queue_; }
  // Called after every cycle with the current time (for time series).
  void OnCycle(std::function<void(int64_t now, const Simulator&)> f) { on_cycle_ = std::move(f); }
  int64_t now() const { return now_; }
  int64_t allocated_gpus() const { return allocated_gpus_; }

 private:
  void Complete(int64_t t);
  void Account(int64_t t);

  ClusterState state_;
  std::unique_ptr<Scheduler> scheduler_;
  QuotaLedger* ledger_;
  std::vector<SimJob> jobs_;           // by index
  std::vector<JobRecord> records_;     // same index
  std::map<std::string, size_t> index_;
  std::vector<size_t> pending_;        // job indices
  std::multimap<int64_t, size_t> submits_, ends_;
  std::map<std::string, double> gpu_seconds_by_queue_;
  std::map<std::string, int64_t> running_gpus_by_queue_;
  int64_t allocated_gpus_ = 0;
  int64_t now_ = 0;
  SimStats stats_;
  std::function<void(int64_t, const Simulator&)> on_cycle_;
};

}  // namespace tidal::sim
