// Records the Engine keeps per gang, pod, door and plan (engine.h names them by their old nested
// names: Engine::ReservationView and so on). Plain data; owned by the Engine under its mu_
// (engine.h has the threading model).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/api/plugin.h"
#include "core/api/resources.h"
#include "core/api/workload.h"
#include "core/framework/scheduler.h"

namespace tidal {

// What a plan for workload `own` must honour: every other reservation in the book, and its own
// reserved nodes once due (filled in place by Engine::ReservationViewLocked: the view points into
// the struct).
struct EngineReservationView {
  std::vector<int64_t> from, gpus;
  std::vector<uint8_t> closing;  // per node: 1 = a drain or maintenance window closes it at `from`
  BackfillView view;
  const std::vector<MemberAssignment>* at = nullptr;
  int32_t yielded = 0;  // reservations left out because their queue ranks behind the planner's
  const BackfillView* get() const { return view.reserved_from ? &view : nullptr; }
  EngineReservationView() = default;
  EngineReservationView(const EngineReservationView&) = delete;
  EngineReservationView& operator=(const EngineReservationView&) = delete;
};

// An elastic gang waiting for room to grow back (engine_elastic.cc).
struct EngineGrowWait {
  int64_t since_s = 0;
  bool activated = false;  // its pods were handed to TakeActivations when the wait ended
};

// A door's snapshot in progress: what its batches named so far (engine_sync.cc).
struct EngineOpenSnapshot {
  std::unordered_set<std::string> pods, nodes, autoscalers;
};

// The gap ledger's record of a Slurm gang (engine_sync.cc).
struct EngineGangMemory {
  int leaf = 0;
  Resources per_member;
  int32_t members = 0;
  int64_t bound_from = 0, bound_until = 0;  // when the engine charged its members (0 = never)
  bool settled = false;                     // a finished record was applied
  int64_t touched = 0;
};

// A bound pod on the timeline: since when it runs (the kubelet's start time once reported, until
// then when the engine first saw it bound) and its declared run time (0: the class default), so
// dry runs can release bound pods in order of expected end (ETAs, reservations).
struct EngineBoundSince {
  int64_t since_s = 0;
  int64_t runtime_limit_s = 0;
  WorkloadClass workload_class = WorkloadClass::kBatch;
  std::string queue;
  bool overdue = false;  // already reported by Overdue() (counted once)
};

// A workload of the preemption view: its bound members (engine_preempt.cc).
struct EngineVictimGroup {
  std::map<std::string, std::pair<NodeId, Resources>> members;  // uid -> node, request
};

// What the engine remembers of a door's nodes across restarts (engine_doors.cc).
struct EngineDoorMemory {
  std::set<std::string> nodes;  // the nodes it reported (before the restart too): doorNodes
  bool known = false;           // nodes is complete: from the state file, or its resync here
  bool resynced = false;        // it completed a resync since this start
  bool expected = false;        // frontDoors names it
  bool served = true;           // this replica serves it (false: standing by; SetDoorServed)
  bool stood_by = false;        // its gate is on because the replica stood by, not a restart
};

}  // namespace tidal
