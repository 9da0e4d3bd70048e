// WorkloadEnds: how the engine's workloads ended, and the runtime history that teaches (see
// engine/engine_runtime.cc for the rules, core/state/runtime_history.h for the correction).
//
// A workload's end is classified once:
//   Kubernetes  when the last member of its gang that held capacity ends: a member Succeeded ->
//               completed; Failed -> failed; deleted (or Succeeded/Failed while being deleted) by
//               someone else -> cancelled; gone from a relist (vanished) -> unknown; a member the
//               engine was disrupting (its DisruptionBook record open: preemption, reclaim, drain,
//               window-end, ...) -> disrupted, or timeout when the cause is runtime-limit. The
//               gang's end is the worst of its members' (WorseEnd), its run the longest member's.
//   Slurm       by its FinishedJob (tidal-slurm's jobcomp JobState), with the queue and declared
//               runtime the engine knew when the job's members ended (`slurm` below); a run the
//               engine itself disrupted (requeued) is disrupted whatever the record says.
//
// Threading: plain data owned by Engine and guarded by Engine::mu_ (engine.h); no locking here.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/state/runtime_history.h"
#include "engine/engine_types.h"

namespace tidal {

// A bound member's end as its final update shows it (before any disruption is considered):
// Succeeded -> completed, Failed -> failed, either while it was being deleted -> cancelled,
// anything else -> unknown.
WorkloadEnd MemberEndOf(const PodInfo& p, bool was_terminating);

struct WorkloadEnds {
  static constexpr size_t kMaxOpen = 100000;     // gangs with some members ended
  static constexpr size_t kMaxSeen = 20000;      // FinishedJob records remembered (a re-read jobcomp)
  static constexpr int64_t kForgetAfterS = 86400;

  RuntimeHistory history;  // the state file's "runtimeHistory"

  // A Kubernetes gang some of whose members ended while others still hold capacity.
  struct Open {
    WorkloadEnd end = WorkloadEnd::kCompleted;
    int64_t run_s = 0, declared_s = 0, touched_s = 0;
    std::string queue;
  };
  std::unordered_map<std::string, Open> open;  // gang key

  // A Slurm job whose members the engine saw end: what it knew of that run, for its FinishedJob.
  struct SlurmRun {
    std::string queue;
    int64_t declared_s = 0, ended_s = 0;
    bool disrupted = false;  // the engine was disrupting it (requeue)
  };
  std::unordered_map<std::string, SlurmRun> slurm;  // gang "slurm/123"

  // True the first time a FinishedJob of `gang` ending at end_unix is seen (bounded memory).
  bool FirstFinish(const std::string& gang, int64_t end_unix);
  // Forgets open gangs and Slurm runs untouched for kForgetAfterS (a sweep at most once a minute,
  // once they are large), and keeps the maps bounded.
  void Prune(int64_t now);

 private:
  int64_t swept_s_ = 0;
  std::unordered_set<std::string> seen_;
  std::deque<std::string> seen_order_;
};

}  // namespace tidal
