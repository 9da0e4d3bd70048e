// Plain records of what slurmctld reports, as tidal-slurm reads them: from libslurm
// (slurm_api_libslurm.cc) or from a recorded `squeue --json` / `sinfo --json` state (json_state.cc).
// No Slurm header here: the reconciler and its tests see only these types.
//
// Threading: plain values; a ClusterRecords is built by one reader call and then only read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/api/status.h"

namespace tidal::slurm {

enum class JobState {
  kPending, kRunning, kSuspended, kCompleting, kCompleted, kCancelled, kFailed, kTimeout,
  kNodeFail, kPreempted, kBootFail, kDeadline, kOutOfMemory, kUnknown
};
const char* JobStateName(JobState s);

struct JobRecord {
  std::string id;                  // "123", or "123_7" for an array task split off its array
  uint32_t job_id = 0;             // slurmctld's job id (a split array task has its own)
  uint32_t array_job_id = 0;       // 0 = not an array
  std::optional<uint32_t> array_task_id;  // set for a split task
  // A pending array record not yet split: the task ids it still holds (expanded, "0-99%4" -> 0..99).
  // Its id is the array's "123": an update of "123" applies to every task it still holds.
  std::vector<uint32_t> pending_array_tasks;
  uint32_t array_max_tasks = 0;    // the "%4" of "0-99%4": at most 4 tasks run at once (0 = no limit)
  std::string name, user, account, partition, qos;
  JobState state = JobState::kUnknown;
  // COMPLETING flag: still holds its nodes. libslurm reports the base state (kCompleted,
  // kCancelled, ...) plus this flag; squeue --json reports only "COMPLETING" (state kCompleting,
  // flag set). Test the flag, not the state.
  bool completing = false;
  std::string state_reason;        // "JobHeldUser", "Resources", "Dependency", ...
  uint32_t priority = 0;           // 0 = held
  int32_t nice = 0;                // --nice (Tidal's priority is -nice)
  std::string dependency;          // remaining dependency expression ("" = none or satisfied)
  uint32_t node_count = 1;         // nodes requested (min) while pending, allocated once running
  uint32_t max_node_count = 0;     // --nodes=MIN-MAX: MAX while pending (0 = not a range)
  int64_t gpus_per_node = 0;       // from tres_per_node ("gres:gpu:a100:4") or tres_per_job / nodes
  // GPUs asked for the whole job (--gpus=N: tres_per_job; --gpus-per-task: per task x tasks);
  // 0 when the request is per node. gpus_per_node is then ceil(gpus_total / node_count).
  int64_t gpus_total = 0;
  std::string gpu_model;           // "a100", "" = any
  int64_t cpus_per_node = 0;       // 0 = not stated
  int64_t memory_mb_per_node = 0;  // 0 = not stated
  int64_t time_limit_min = 0;      // 0 = none (INFINITE / NO_VAL)
  bool time_unlimited = false;     // --time=UNLIMITED (INFINITE): over any partition's MaxTime
  // --exclusive (OverSubscribe=NO): Slurm gives it whole nodes (every CPU, all memory, every GPU)
  // and starts it only on nodes nothing else runs on.
  bool exclusive = false;
  int64_t submit_time = 0, start_time = 0, end_time = 0;  // unix seconds, 0 = unknown
  // When Slurm may start it at the earliest (--begin, `scontrol update StartTime=`, the 120 s a
  // requeued job waits): unix seconds, 0 = unknown. Tidal does not release a job before it.
  int64_t eligible_time = 0;
  uint32_t restart_cnt = 0;        // requeues
  // Slurm would requeue it: a batch job (batch_flag) whose requeue flag is set (--requeue, or
  // slurm.conf JobRequeue=1 without --no-requeue). One it would not (an salloc/srun allocation,
  // --no-requeue) is never a preemption victim: requeueing it would cancel it (slurm.tidal.dev/
  // requeue "false" on its members).
  bool requeueable = true;
  std::vector<std::string> nodes;           // allocated (expanded hostlist), running/completing
  // The GPUs Slurm allocated on each of `nodes` (same order), from its per-node GRES detail: a
  // job asking GPUs per job (--gpus=N, --gpus-per-task) over several nodes gets them unevenly
  // (3 + 1 for --gpus=4 on 2 nodes); an --exclusive job gets every GPU of its nodes even when it
  // asked for none. Empty: not known, gpus_per_node on each.
  std::vector<int64_t> node_gpus;
  // The node the batch script runs on (a running batch job; "" otherwise). Slurm never takes it
  // from a running job: an elastic job shrinks on its other nodes.
  std::string batch_host;
  std::vector<std::string> required_nodes;  // ReqNodeList (expanded)
  std::vector<std::string> excluded_nodes;  // ExcNodeList (expanded)
  std::string features;            // --constraint expression
  uint32_t req_switch = 0;         // --switches=N (0 = none)
  std::string comment, admin_comment;
  // The job's notice signal: --signal=[B:]SIG@TIME as its comment declares it (the key
  // tidal.dev/signal, job_fields.h ParseNoticeSignal; deploy/slurm/cli_filter.lua copies --signal
  // there: Slurm 22.05 shows --signal to no other program). Tidal reads it as "checkpoints on
  // notice, needs TIME seconds" and gives its notice with SIG. 0 = none.
  int32_t warn_signal = 0;
  int64_t warn_time_s = 0;
  bool warn_batch_only = false;    // B: the batch shell only (else the job's steps, not the shell)
  // Why a field could not be read ("job 5: tres_per_node: gpu count 'x' is not a number"; several
  // joined by "; "); a job with a parse error is never released, its error is shown to its owner.
  // The fields that could be read are still set.
  std::string parse_error;
};

enum class NodeState { kIdle, kAllocated, kMixed, kDown, kError, kFuture, kUnknown };
const char* NodeStateName(NodeState s);

struct NodeRecord {
  std::string name;
  NodeState state = NodeState::kUnknown;
  bool drain = false, completing = false, not_responding = false, maint = false, reserved = false;
  int64_t gpus = 0;                // configured gres/gpu count
  std::string gpu_model;           // "a100" from "gpu:a100:8", "" when untyped or mixed
  struct GpuType {
    std::string model;             // "" = untyped
    int64_t count = 0;
    bool operator==(const GpuType&) const = default;
  };
  std::vector<GpuType> gpu_types;  // one per "gpu:TYPE:N" entry of the node's Gres (mixed nodes: several)
  int64_t gpus_used = 0;
  int64_t cpus = 0;
  int64_t real_memory_mb = 0;
  std::string reason;              // drain/down reason ("tidal: ..." when Tidal set it)
  // Drained by Tidal because its pool lends it to Kubernetes (reason kLentReason): Slurm starts
  // nothing there, but for the engine it is in service (plan_view.h PlanView clears `drain`).
  bool lent_drain = false;
  std::vector<std::string> partitions;
  std::vector<std::string> features;
  std::string parse_error;
};

// The drain reason of a node Tidal lends to Kubernetes.
inline constexpr const char* kLentReason = "tidal: lent to kubernetes";

// A partition's limits that keep Slurm from starting a job released into it (job_mgr.c
// job_limits_check, Slurm 22.05): its state, MaxTime, MinNodes/MaxNodes.
struct PartitionRecord {
  std::string name;
  bool schedules = true;           // State=UP or DRAIN; DOWN and INACTIVE start no job
  std::string state = "UP";        // as scontrol prints it, for messages
  int64_t max_time_min = 0;        // 0 = UNLIMITED
  uint32_t min_nodes = 0, max_nodes = 0;  // 0 = no limit
  bool operator==(const PartitionRecord&) const = default;
};

struct ClusterRecords {
  std::vector<JobRecord> jobs;
  std::vector<NodeRecord> nodes;
  std::vector<PartitionRecord> partitions;  // empty: not read (no partition limit is checked)
  int64_t read_unix = 0;  // when slurmctld answered
};

// What Tidal sets of a pending job's placement: its ReqNodeList and, for an elastic job
// (--nodes=MIN-MAX), its node count (NumNodes=MIN-MAX; the count it is released on as MIN=MAX).
struct JobPin {
  std::vector<std::string> nodes;
  uint32_t min_nodes = 0, max_nodes = 0;  // 0 = the count is left as it is
};

// slurmctld as the adapter uses it. Every call is one or a few RPCs; a failed call returns an
// error status and changes nothing the caller holds (a failed read is "unknown", never "gone").
class SlurmApi {
 public:
  virtual ~SlurmApi() = default;
  // One full read of jobs and nodes.
  virtual Status Load(ClusterRecords* out) = 0;
  // Pins a held pending job to `pin` (ReqNodeList; no nodes = leave as is; an elastic job also its
  // node count), sets its AdminComment, and releases it (root's release: the job_submit gate
  // refuses the owner's). job id "123" or "123_7".
  virtual Status Release(const std::string& job_id, const JobPin& pin, const std::string& comment) = 0;
  // Holds a pending job again and replaces a Tidal pin with `pin` (ReqNodeList: the user's own
  // --nodelist, none clears it; an elastic job's --nodes=MIN-MAX again), with an AdminComment.
  virtual Status Hold(const std::string& job_id, const std::string& comment, const JobPin& pin) = 0;
  // Hold, for a job requeued after it ran (held again since Tidal released it), that also clears
  // its BeginTime (= now): Slurm 22.05 makes a requeued batch job wait 120 s after its requeue
  // completes, which would keep the nodes Tidal releases it to idle that long. It ran, so it has no
  // --begin of its user's still to wait for; it is held: Tidal decides when it starts.
  virtual Status HoldRequeued(const std::string& job_id, const std::string& comment, const JobPin& pin) = 0;
  // Shrinks a running job to `nodes` (a subset of its nodes, its batch host among them: `scontrol
  // update JobId=X NodeList=...`). Slurm releases the other nodes and kills the job's steps there;
  // the job goes on on the rest. Refused for a job that is not running.
  virtual Status Shrink(const std::string& job_id, const std::vector<std::string>& nodes) = 0;
  // Sets a job's AdminComment (why Tidal holds it; the caller never overwrites an admin's own).
  // job id "123", "123_7", or "123_[7-99]" for an unsplit array record (to_engine.h PendingArrayId:
  // a task id of that record would split the task off into a job record of its own).
  virtual Status SetComment(const std::string& job_id, const std::string& comment) = 0;
  // Preempts a running job: requeue-hold it (batch) or cancel it with SIGTERM first.
  virtual Status Requeue(const std::string& job_id) = 0;
  // Sends `signal` to a running job (what `scancel --signal=SIG [--batch]` sends): batch_only = the
  // batch shell only (--signal=B:...), else the job's steps (not the batch shell, as Slurm's own
  // --signal warning without B:). The job keeps running unless it acts on the signal.
  virtual Status Signal(const std::string& job_id, int signal, bool batch_only) = 0;
  // Drains a node with reason "tidal: ..." / undrains it (only drains whose reason starts "tidal:").
  virtual Status Drain(const std::string& node, const std::string& reason) = 0;
  virtual Status Undrain(const std::string& node) = 0;
};

}  // namespace tidal::slurm
