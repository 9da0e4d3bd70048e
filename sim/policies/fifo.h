// Baselines `fifo` and `easy-backfill` (Slurm-like; sim-only policies).
//
// fifo: jobs start in strict arrival order (submit time, then trace order); the pass stops at the
// first job that does not fit (gang-aware: all its members or none, node-order first fit, see
// baseline_placement.h). Nothing behind a blocked head may start.
//
// easy-backfill: fifo, then EASY backfill on DECLARED runtime limits, like Slurm's sched/backfill
// defaults reduced to the classic algorithm (Lifka's EASY): the blocked head job gets a
// reservation at its earliest start (the "shadow time"), computed by releasing running jobs in
// order of declared end (start + declared limit) on a per-node view of free GPUs until the head
// fits there (node-order first fit); its reserved GPUs are those nodes. Later jobs, in arrival
// order, start now only if they fit now and do not delay the reservation: either they end
// (now + declared limit) no later than the shadow time, or they fit on GPUs the head does not
// need at the shadow time (per node: min(free now, free at shadow - reserved)). Since actual run
// times never exceed declared limits (longer jobs are killed at the limit), the head starts no
// later than its first reservation: JobRecord::first_reservation_s records it for checks.
// The reservation counts GPUs only (CPU and memory are not reserved).
//
// Jobs that can never fit, even on the empty cluster, are rejected up front.
// Threading: single-threaded, owned by one Simulator.
#pragma once

#include <vector>

#include "sim/policies/baseline_placement.h"
#include "sim/policy.h"

namespace tidal::sim {

class FifoPolicy final : public Policy {
 public:
  enum class Mode { kFifo, kEasyBackfill };
  explicit FifoPolicy(Mode mode) : mode_(mode) {}

  std::string_view Name() const override { return mode_ == Mode::kFifo ? "fifo" : "easy-backfill"; }
  Status Prepare(Simulator& sim) override;
  void Schedule(Simulator& sim, const Changes& changes) override;

 private:
  void Backfill(Simulator& sim, size_t head_index);

  Mode mode_;
  bool head_blocked_ = false;
  std::vector<MemberAssignment> scratch_;
  std::vector<int64_t> free_at_shadow_, allowed_;
  ShapeMemo memo_;
};

}  // namespace tidal::sim
