// Names of the record enums, for logs, the recorded-state format and tests.
//
// Threading: pure functions over constants.
#include "shim/slurm/records.h"

namespace tidal::slurm {

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kPending: return "pending";
    case JobState::kRunning: return "running";
    case JobState::kSuspended: return "suspended";
    case JobState::kCompleting: return "completing";
    case JobState::kCompleted: return "completed";
    case JobState::kCancelled: return "cancelled";
    case JobState::kFailed: return "failed";
    case JobState::kTimeout: return "timeout";
    case JobState::kNodeFail: return "node_fail";
    case JobState::kPreempted: return "preempted";
    case JobState::kBootFail: return "boot_fail";
    case JobState::kDeadline: return "deadline";
    case JobState::kOutOfMemory: return "out_of_memory";
    case JobState::kUnknown: return "unknown";
  }
  return "unknown";
}

const char* NodeStateName(NodeState s) {
  switch (s) {
    case NodeState::kIdle: return "idle";
    case NodeState::kAllocated: return "allocated";
    case NodeState::kMixed: return "mixed";
    case NodeState::kDown: return "down";
    case NodeState::kError: return "error";
    case NodeState::kFuture: return "future";
    case NodeState::kUnknown: return "unknown";
  }
  return "unknown";
}

}  // namespace tidal::slurm
