// Metrics of one replay, as JSON (definitions in docs/simulator.md, "Metrics"):
//   jobs (submitted, completed, rejected, unfinished, killed at limit), why jobs were rejected
//   (rejections: reason, jobs, first job; the most frequent first), job completion time and
//   queueing delay (avg, p50, p99; overall and by job size bucket 0 (CPU-only), 1, 2-8, 9-64, 65+ GPUs),
//   makespan, GPU allocation rate, stranded GPU-time (fragmentation), Jain's index over queues'
//   normalised shares, preemptions and GPU-hours lost, topology locality of multi-node jobs,
//   partial-gang GPU-time, per-queue figures, the simulator's own speed, a queueing-delay CDF and
//   the time series for plots.
// Threading: plain functions.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/simulator.h"

namespace tidal::sim {

struct MetricsOptions {
  bool series = true;  // include the time series and the CDF (for plots)
  bool timing = true;  // include wall time and jobs/s (off for byte-identical determinism checks)
};

nlohmann::json ComputeMetrics(const Simulator& sim, const MetricsOptions& opts = {});

// Nearest-rank percentile of sorted values (p in [0, 100]); 0 for an empty list.
double Percentile(const std::vector<double>& sorted, double p);

}  // namespace tidal::sim
