// The reservation book's refresh as a job (engine_refresh.cc takes its steps): what the refresh's
// dry cycle needs is captured under the engine's mutex into a RefreshJob, the dry cycle runs on
// the job alone (RunRefreshJob: no engine state is read), and the book it leaves is installed
// under the mutex again. With EngineConfig::refresh_in_background the middle step runs on the
// engine's refresher thread, so a PlanPod call never waits for a dry cycle (docs/scheduling.md).
//
// The timeline (bound pods as running allocations released at their expected end, preemption
// holds keeping their nodes, closing nodes taking no reservation) is laid on the job's copy of
// the engine's ClusterState by the job itself (LayTimeline), from plain records the capture took.
//
// Threading: a RefreshJob is a value owned by one thread at a time: built by the thread holding
// the engine's mutex, then handed to the refresher thread (or run in place).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/framework/profile.h"
#include "core/framework/scheduler.h"
#include "core/state/cluster_state.h"
#include "core/state/queues.h"

namespace tidal {

// A bound pod on the timeline: runs on `node` from since_s for runtime_limit_s (0: its class's
// default), as the running allocation "pod:<uid>".
struct TimedCharge {
  NodeId node = kNoNode;
  Resources request;
  std::string uid;
  int64_t since_s = 0;
  int64_t runtime_limit_s = 0;
  WorkloadClass workload_class = WorkloadClass::kBatch;
};

// What turns a copy of the engine's ClusterState into the dry cycle's timeline.
struct TimelineInputs {
  std::vector<TimedCharge> charges;  // bound pods, in the engine's charge order
  std::vector<Allocation> holds;     // preemption holds: their nodes from now until the gang's expected end
  std::vector<NodeId> closing;       // nodes with an upcoming drain or maintenance close
};

// Lays `in` on `t` (a copy of the engine's ClusterState, whose bound pods hold capacity as plain
// charges): each bound pod becomes its timed allocation, holds are added, closing nodes drain.
void LayTimeline(ClusterState& t, TimelineInputs in);

struct RefreshJob {
  // Inputs of the dry cycle.
  std::optional<ClusterState> state;  // a copy of the engine's ClusterState
  TimelineInputs timeline;
  std::optional<QuotaLedger> ledger;  // a copy of the engine's ledger
  std::map<std::string, Reservation> book;  // the book before the refresh
  std::deque<Workload> owned;               // workloads built for the job (batch points into it,
  std::vector<std::shared_ptr<const Workload>> shared;  // into these, the gangs' cached ones,
  std::vector<const Workload*> batch;       // or, run in place, into the engine): the pending gangs the cycle walks
  ProfileSpec profile;
  TopologyLevels levels;
  int64_t now_s = 0;
  int32_t depth = 0;     // profile.backfill.depth
  bool prefix = false;   // batch is a prefix of the queue: the book holds only once depth is reached
  // For the install: the engine's book epoch at the capture (EnsureStateLocked's rebuilds and
  // profile changes move it; a job of another epoch is dropped), and the holds then in force.
  uint64_t epoch = 0;
  std::vector<std::string> held;
};

// The refresher thread's own copies of the engine's ClusterState and ledger, assigned from the
// engine's under its mutex at each capture: an assignment onto the last capture's copy reuses its
// storage (node names, labels, the ledger's charge records), far cheaper than a fresh copy. The
// job's copies are then made from these after the mutex is released. Owned by the refresher.
struct RefreshMirrors {
  std::optional<ClusterState> state;
  std::optional<QuotaLedger> ledger;
};

struct RefreshOutcome {
  std::map<std::string, Reservation> book;  // the book after the dry cycle
  int64_t in_force = -1;                    // reservations in force after it (-1: the profile does not build)
  // false: a prefix that did not reach the depth; the book is not the whole queue's, drop it.
  bool settled = false;
};

// Runs the job's dry cycle (explanation text and decisions off: only the book is wanted).
// Consumes the job's state and ledger.
RefreshOutcome RunRefreshJob(RefreshJob& job);

}  // namespace tidal
