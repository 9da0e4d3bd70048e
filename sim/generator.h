// Workload generator for the simulator: synthetic job traces with a chosen job-size mix, durations
// that grow with size, a diurnal and bursty arrival process, skewed teams and a declared-runtime
// error model, at a target offered load on a cluster of a given size (`tidalctl gen`,
// docs/simulator.md "Generating workloads").
//
// Model (every draw from one std::mt19937_64 seeded by `seed`, whose sequence the C++ standard
// fixes; the transforms below are written here, not taken from <random>'s distributions, whose
// values are implementation-defined, so a seed gives the same bytes on every standard library):
//   size      G drawn from `sizes` by weight.
//   duration  lognormal: median m(G) = median_s x G^growth (or the size's own median), sigma;
//             capped at max_s, rounded up to whole seconds (at least 1).
//   arrivals  Poisson in [0, days) with rate lambda x f(t) / mean(f), by thinning:
//             f(t) = (1 + diurnal x sin(2 pi (t - (peak_hour - 6) h) / 1 day)) x (burst_factor while
//             a burst runs, else 1); bursts start as a Poisson process of bursts_per_day and last
//             burst_s. mean(f) is integrated exactly, and each stretch in or out of bursts is
//             thinned under its own bound. lambda = load x gpus / E[G x duration] (duration in
//             whole seconds, as written), so the offered load, the GPU-time submitted /
//             (gpus x days), is `load` in expectation (Expected()).
//   team      queue "<team_prefix>-<i>", i in 1..teams drawn with weight 1 / i^team_skew.
//   declared  a share `declared_none` declares no limit (the simulator's --limit-factor applies);
//             the others declare ceil(actual x F), F lognormal(declared_median, declared_sigma)
//             clamped to [declared_min, declared_max] (declared_min < 1: some jobs under-declare and
//             are killed at their limit, as Slurm does).
// Threading: plain functions and values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/api/status.h"
#include "core/api/workload.h"

namespace tidal::sim {

struct GenSize {
  int64_t gpus = 1;
  double weight = 1;
  double median_s = 0;  // 0: the duration model's median_s x gpus^growth
  WorkloadClass workload_class = WorkloadClass::kTraining;
};

struct GenSpec {
  std::string name = "custom";
  int64_t gpus = 3072;  // the cluster the load is offered to
  double load = 0.8;    // offered GPU-time / (gpus x horizon)
  double days = 7;      // arrivals in [0, days x 86400)
  uint64_t seed = 1;
  std::vector<GenSize> sizes;
  double median_s = 1800, growth = 0.3, sigma = 1.2, max_s = 7 * 86400.0;
  double diurnal = 0.3, peak_hour = 14;
  double bursts_per_day = 0, burst_s = 3600, burst_factor = 3;
  int64_t teams = 8;
  double team_skew = 1.0;
  std::string team_prefix = "team";
  double declared_none = 0.2, declared_median = 2.0, declared_sigma = 0.5, declared_min = 1.0, declared_max = 10.0;
};

struct GenJob {
  std::string id;
  int64_t submit_s = 0, duration_s = 0, gpus = 0;
  int64_t limit_s = 0;  // 0: declares none
  std::string queue;
  WorkloadClass workload_class = WorkloadClass::kTraining;
};

// The named mixes, each a spec document (docs/simulator.md lists them): philly-like, llm-gangs,
// inference-heavy.
std::vector<std::string> GenMixNames();
// The mix's spec text (YAML); NotFound-style error naming the accepted names.
StatusOr<std::string> GenMixText(const std::string& name);
// A spec document (YAML or JSON; `base: MIX` starts from a named mix). Errors read
// "file:line: field: reason".
StatusOr<GenSpec> ParseGenSpec(const std::string& text, const std::string& file);
// A mix name or a spec file.
StatusOr<GenSpec> LoadGenSpec(const std::string& mix_or_path);
// The most jobs a spec may give in expectation (load x gpus x days / mean job GPU-time): 20 million,
// several times the largest public traces, and still a few GB in memory.
inline constexpr int64_t kMaxGenJobs = 20000000;
// A load written as a bare number above this (spec `load: 90`, `--load 90`) is refused: as a fraction
// it would be 9000%, which nobody means; percentages ("90%", "300%") are taken as written.
inline constexpr double kMaxBareLoad = 2.0;
// "field: reason" for the first field out of range (sizes larger than gpus, weights <= 0, ...), or
// "jobs: ..." when the expected job count passes kMaxGenJobs (naming load, days and gpus).
// ParseGenSpec checks the fields only, so that the command line's overrides may lower the count.
Status ValidateGenSpec(const GenSpec& spec);

// What the spec gives in expectation (analytic; durations' cap and rounding up to whole seconds
// included).
struct GenExpectation {
  double mean_gpus = 0;         // per job
  double single_share = 0;      // of jobs with 1 GPU
  double gang64_gpu_share = 0;  // of GPU-time in jobs of >= 64 GPUs
  double mean_gpu_s = 0;        // E[G x duration]
  double jobs_per_day = 0;      // lambda
};
GenExpectation Expected(const GenSpec& spec);

// The jobs in submit order, ids gen-1, gen-2, ... Validates the spec first.
StatusOr<std::vector<GenJob>> Generate(const GenSpec& spec);

// Measured on a generated trace, with the same definitions as GenExpectation.
struct GenStats {
  int64_t jobs = 0;
  double mean_gpus = 0, single_share = 0, gang64_gpu_share = 0;
  double offered_load = 0;     // sum G x duration / (gpus x days)
  double declared_share = 0;   // of jobs declaring a limit
  int64_t teams_used = 0;
  double top_team_share = 0;   // of jobs in the busiest team
};
GenStats Measure(const GenSpec& spec, const std::vector<GenJob>& jobs);

// The trace in a format `tidalctl sim` reads: "csv" (id,submit,duration,gpus,queue,limit,class;
// a comment line first) or "philly" (timestamp from 2026-01-05 00:00:00 UTC, duration, num_gpus,
// gpu_time, cluster; declared limits and classes are not in that format).
StatusOr<std::string> WriteGenTrace(const GenSpec& spec, const std::vector<GenJob>& jobs, const std::string& format);

}  // namespace tidal::sim
