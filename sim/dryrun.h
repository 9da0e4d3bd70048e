// Policy dry-run: a snapshot of the live engine (sim/snapshot.h) replayed forward under a config,
// through the `tidal` policy (the engine's own Scheduler and plugins: sim/policies/tidal.h), for
// `tidalctl sim --snapshot FILE --config NEW.yaml [--against CURRENT.yaml]` (docs/simulator.md,
// "Policy dry-run").
//
// Starting state (RunDryRun): the snapshot's nodes (topology, health, pools); its running work
// placed where it runs (Simulator::SubmitRunning), charged to its queue in the ledger in start order
// (marked borrowed when the config's quota no longer admits it: what reclaim may take back); the
// ledger's decayed usage loaded; its pending gangs queued with their submit times; the clock at
// the snapshot's time. Running work ends at start + declared runtime, or default_runtime_s after
// the snapshot when it declares none; pending work runs its declared runtime (or the default).
// Optional arrivals (a trace, submit times after the snapshot; or RecordedArrivals: the rate the
// snapshot itself shows) join on the way. A zero horizon
// runs no scheduling pass: the starting state only (its placements are checked against the
// snapshot's). The topology levels are the snapshot's (a config changing topology.levels is
// replayed on the fabric as the engine saw it).
//
// One run's result (JSON; times in seconds after the snapshot): per queue time to start (avg,
// p99; jobs not started by the horizon count with their wait so far, a lower bound), large-job
// (>= large_gpus GPUs) time to start, preemptions, GPU-seconds lost, preemptions of non-preemptible
// work, GPU-seconds used and the average GPUs held, the fair-share gap (Simulator::fair_gap_gpu_s
// over the horizon), Jain's index; per pending gang its start (or its reservation at the horizon);
// the allocation time series. CompareDryRuns (sim/dryrun_report.cc) turns two into the report.
// Threading: plain functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/framework/profile.h"
#include "core/state/lending.h"
#include "core/state/queues.h"
#include "sim/simulator.h"
#include "sim/snapshot.h"

namespace tidal::sim {

struct DryRunConfig {
  std::string name;     // "current", "new"
  std::string source;   // a file, or "the snapshot's config"
  std::string version;  // its version (core/io/document_diff.h), for the report
  QueueConfig queues;   // no queues: one per queue the snapshot names, weight 1, no limits
  ProfileSpec profile = ProfileSpec::Default();
  std::vector<LendingPolicy> pools;
};

struct DryRunOptions {
  int64_t horizon_s = 86400;
  int64_t default_runtime_s = 86400;  // work that declares no runtime (see above)
  int64_t large_gpus = 64;            // "large job": this many GPUs or more
  std::vector<SimJob> arrivals;       // submit times in seconds after the snapshot
  std::string arrivals_from;          // where they came from, for the report ("trace.csv", "recorded:24h")
  bool shortcuts = true;              // the tidal policy's exact shortcuts
  int64_t sample_interval_s = 0;      // 0: horizon / 200 (at least 60 s)
};

StatusOr<nlohmann::json> RunDryRun(const Snapshot& snap, const DryRunConfig& cfg, const DryRunOptions& opts);

// Arrivals at the rate the snapshot records: per queue, the work it holds that was submitted
// (pending) or started (running) within `window_s` before the snapshot, n of it, gives a Poisson
// rate of n / window_s; over the horizon each arrival copies the shape, flags and declared runtime
// (else default_runtime_s) of one of those, drawn uniformly. A lower bound of the real rate: work
// that already ended is not in a snapshot. Deterministic for a seed (its own generator, no
// std::distribution). Submit times in seconds after the snapshot; ids "recorded/<queue>/<i>".
std::vector<SimJob> RecordedArrivals(const Snapshot& snap, int64_t window_s, int64_t horizon_s, int64_t default_runtime_s,
                                     uint64_t seed);

// --- the report (sim/dryrun_report.cc)
// {snapshot, horizon_s, current, new (both RunDryRun results), queues: per queue both sides and
// the change, reservations: pending gangs whose start moved, flags: [{kind, message, ...}]}.
// Flags: "preempts-nonpreemptible" (the new config preempts more non-preemptible work than the
// current one), "reserved-later" (a gang holding a reservation in the snapshot starts later) and
// "rejects-work" (the core refuses work under the new config that the current one takes).
nlohmann::json CompareDryRuns(const Snapshot& snap, const nlohmann::json& current, const nlohmann::json& next,
                              const DryRunOptions& opts);
std::string DryRunText(const nlohmann::json& report);

// --fail-on: comma-separated checks, each NAME or NAME=LIMIT (docs/simulator.md):
//   preempt-nonpreemptible           the flag preempts-nonpreemptible
//   rejects-work                     the flag of that name
//   reserved-later[=DURATION]        a reserved gang starts later by more than DURATION (default 0)
//   ttst-avg-increase=X%|DURATION    some queue's average time to start grows by more than that
//   ttst-p99-increase=X%|DURATION    the same for p99
//   large-ttst-increase=X%|DURATION  large jobs' average time to start (all queues)
//   preemptions=N                    more than N preemptions beyond the current config's
//   lost-gpu-hours=H                 more than H GPU-hours lost beyond the current config's
//   fairshare-gap-increase=G         some queue's fair-share gap grows by more than G GPUs
struct FailOnCheck {
  std::string name, text;  // text: the item as given
  enum class Unit { kNone, kPercent, kSeconds, kNumber } unit = Unit::kNone;
  double limit = 0;
};
// Errors name the bad item: --fail-on: "ttst-p99-increase=x": expected a percentage (20%) or a duration (30m).
StatusOr<std::vector<FailOnCheck>> ParseFailOn(const std::string& text);
// One line per breached check ("ttst-p99-increase=20%: queue team-b p99 37 min -> 1.2 h (+95%)").
std::vector<std::string> FailOnBreaches(const std::vector<FailOnCheck>& checks, const nlohmann::json& report);

}  // namespace tidal::sim
