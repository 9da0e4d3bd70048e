// Slurm's own reasons not to start a job now, which a release by Tidal does not lift: its begin
// time (--begin, `scontrol update StartTime=`, the 120 s Slurm makes a requeued job wait) and its
// array's task limit (--array=0-99%4: at most 4 tasks run at once). Tidal counts a released job's
// members as bound on its pinned nodes until Slurm starts it; released early, such a job would
// keep those GPUs idle (for Kubernetes and every other Slurm job) for as long as Slurm holds it
// back. So a job Slurm would hold back is not sent to the engine (it waits with the reason in its
// AdminComment), and a released job Slurm holds back is held again (reconciler.h).
//
// The same goes for a job its owner or an admin holds: the comment key tidal.dev/hold=true (the
// submit gate, deploy/slurm/job_submit.lua, writes it for `sbatch --hold` and turns the owner's
// `scontrol hold` into it, and `scontrol release` removes it). The gate holds every job itself, so
// the key is the only way Tidal can tell such a hold from its own. A pending job with the key is
// not sent (it holds no capacity, reservation or quota), and one Tidal released that gets the key
// before Slurm starts it is held again; a running job with the key is left alone.
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "shim/slurm/records.h"

namespace tidal::slurm {

// The comment key of a user's or admin's hold; held when its value is "true" (any case).
inline constexpr const char* kHoldKey = "tidal.dev/hold";
// Why a pending job waits for its hold key ("" = not held, or not pending).
std::string UserHoldReason(const JobRecord& j);

// Why a pending job must wait for its begin time ("" = it may start now, or holds nodes).
std::string BeginTimeReason(const JobRecord& j, int64_t now_unix);

// Why Slurm would not start pending job `j` in its partition, released or not ("" = it would, or
// the table is empty: not read). As slurmctld checks before it starts a job (Slurm 22.05
// job_limits_check): the partition is DOWN or INACTIVE (Reason PartitionDown / PartitionInactive),
// its MaxTime is below the job's --time (PartitionTimeLimit; --time=UNLIMITED is over any
// MaxTime, and --time-min does not lift it), or the job's node count is outside its MinNodes..
// MaxNodes (PartitionNodeLimit). Released, such a job kept its pinned GPUs idle and charged to its
// queue for as long as the partition stayed so (for ever, for a --time over MaxTime), and its
// owner read "tidal: released to ..." while squeue said PartitionTimeLimit. A job submitted to
// several partitions (-p a,b) waits only when none of them would start it.
std::string PartitionReason(const JobRecord& j, const std::vector<PartitionRecord>& partitions);
// BeginTimeReason, else PartitionReason: why Slurm would not start a held job if Tidal released it.
std::string SlurmWaitReason(const JobRecord& j, const ClusterRecords& rec);

// The held tasks of arrays with a task limit that may not start now: job id ("123_7") -> why. Of
// each array, K minus its tasks running or released (pending, pinned by Tidal) may start, the
// lowest task ids first; its other held tasks wait.
std::unordered_map<std::string, std::string> ThrottledArrayTasks(const std::vector<JobRecord>& jobs);

// Why Slurm holds back a job Tidal released ("" = it does not): its reason says BeginTime,
// JobArrayTaskLimit or a partition's (PartitionDown, PartitionInactive, PartitionTimeLimit,
// PartitionNodeLimit: PartitionReason says why once it is held); or why its hold key
// (UserHoldReason) keeps it now. The caller holds it again (a requeued job with HoldRequeued, which also
// clears the begin time a requeue sets).
std::string HeldBackReason(const JobRecord& j);

}  // namespace tidal::slurm
