// Policy: what decides, at each scheduling point of the simulator's shared event loop, which
// pending jobs start and where. The loop (sim/simulator.h) owns the clock, the ClusterState, the
// job records and the metrics; a policy only reads the pending queue and reports its decisions
// back through the Simulator's policy API (Place / Started / Reject / Evicted / SetHeldGpus).
//
// Implementations: sim/policies/tidal.h (the engine's Scheduler with a Profile: the real thing),
// sim/policies/fifo.h (strict FIFO and FIFO + EASY backfill, Slurm-like) and
// sim/policies/kube_default.h (kube-scheduler's default pod-at-a-time placement, no gangs).
//
// Threading: single-threaded, owned by one Simulator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/api/status.h"

namespace tidal::sim {

class Simulator;
using JobId = size_t;  // index into Simulator::jobs()

// What happened since the policy last ran. The loop batches every event of one timestamp
// (completions first, then arrivals) before calling Schedule once.
struct Changes {
  bool arrived = false;  // jobs joined the pending queue (new or requeued after preemption)
  bool freed = false;    // capacity was released (completions, evictions)
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view Name() const = 0;
  // Once, before the first event, after every job was submitted.
  virtual Status Prepare(Simulator& sim) {
    (void)sim;
    return Status::Ok();
  }
  // Virtual time is about to move to `t` (before completions at t are applied).
  virtual void AdvanceTo(Simulator& sim, int64_t t) {
    (void)sim;
    (void)t;
  }
  // One scheduling point at sim.now(): start what the policy decides.
  virtual void Schedule(Simulator& sim, const Changes& changes) = 0;
  // A running job ended; its allocation is already gone from the ClusterState.
  virtual void OnComplete(Simulator& sim, JobId j) {
    (void)sim;
    (void)j;
  }
  // A running job was evicted by the loop, not by the policy (a reclaimed loan: sim/lending.h);
  // its allocation is already gone and it is back in the pending queue.
  virtual void OnEvicted(Simulator& sim, JobId j) {
    (void)sim;
    (void)j;
  }
};

}  // namespace tidal::sim
