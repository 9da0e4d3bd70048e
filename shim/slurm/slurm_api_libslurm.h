// SlurmApi over libslurm (Debian's libslurm38 = Slurm 22.05): the RPCs the Slurm commands use,
// typed, one RPC per call, no fork per job.
//
// Reads are incremental: Load keeps the last job / node / partition messages and passes their
// last_update to the next slurm_load_* call, so an unchanged state costs three cheap RPCs
// (slurmctld answers SLURM_NO_CHANGE_IN_DATA and the previous records are reused). slurmctld
// compares at one-second granularity: a load in the same second as a change is sent in full.
// A failed Load leaves *out and the cache as they were; it is an error, never empty records.
//
// Writes (root's, so the job_submit gate lets them through):
//   Release    slurm_update_job2: job_id_str, req_nodes = the nodes joined by ',' (empty: left as
//              is), admin_comment, priority = INFINITE (what `scontrol release` sends)
//   Hold       slurm_update_job2: priority = 0 (an admin hold: JobHeldAdmin), req_nodes = ""
//              (clears the pin), admin_comment
//   HoldRequeued  Hold, plus begin_time = now (Slurm sets a requeued job's BeginTime 120 s ahead
//              when its requeue completes; an update while it is still COMPLETING is overwritten)
//   Release and Hold first check with one slurm_load_job that the job is pending, and fail with
//   "Job is no longer pending execution" otherwise: on a RUNNING job slurmctld takes req_nodes as a
//   new NodeList and shrinks the job to it. So each costs two RPCs.
//   SetComment admin_comment only (AdminComment: only root / SlurmUser can set it, a user cannot
//              forge or erase it; the job's own Comment is left to its owner)
//   Requeue    slurm_requeue2(JOB_REQUEUE_HOLD | JOB_RUNNING) (`scontrol requeuehold`, plus
//              "only if still running": without it a job that just completed is requeued and runs
//              again); a job Slurm will not requeue (not batch, --no-requeue) is cancelled instead:
//              slurm_kill_job2(SIGKILL), which slurmd delivers as SIGTERM, KillWait, SIGKILL; a job
//              that ended meanwhile is Ok
//   Signal     slurm_kill_job2(signal, KILL_JOB_BATCH) for the batch shell only (`scancel --batch
//              --signal=SIG`), else flags 0: the job's steps, not its batch shell (`scancel
//              --signal=SIG`; what slurmctld itself sends for --signal=SIG@TIME without B:). Never
//              KILL_FULL_JOB: a batch shell that does not trap the signal (SIGUSR1's default action
//              is to terminate) would end the job. A job that already ended is an error
//              ("Job/step already completing or completed"): the caller skips jobs not running
//   Drain      slurm_update_node(NODE_STATE_DRAIN, reason "tidal: ...", reason_uid); a node already
//              drained by someone else is left as it is (its reason kept) and Ok is returned
//   Undrain    slurm_update_node(NODE_STATE_UNDRAIN) only if the drain reason starts "tidal:";
//              another's drain is an error and stays; a node not drained is Ok (nothing sent)
// Every error reads "slurm_update_job 123: <slurm_strerror>" (the call, the target, Slurm's words);
// errors for single tasks of an array update are listed per task.
//
// Threading: one caller thread per process. libslurm keeps one process-wide configuration
// (slurm_init); its RPC calls are not documented as thread-safe, so no two threads may call into a
// LibslurmApi (or libslurm) at once. Create checks the configuration in a forked child first:
// libslurm's slurm_init calls exit() on a missing or broken slurm.conf, which must not take the
// adapter down.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/api/status.h"
#include "shim/slurm/records.h"

namespace tidal::slurm {

class LibslurmApi : public SlurmApi {
 public:
  // conf: path of slurm.conf; "" = $SLURM_CONF, else /etc/slurm/slurm.conf. libslurm has one
  // configuration per process: a second Create with another path is an error.
  static StatusOr<std::unique_ptr<LibslurmApi>> Create(const std::string& conf = "");
  ~LibslurmApi() override;
  LibslurmApi(const LibslurmApi&) = delete;
  LibslurmApi& operator=(const LibslurmApi&) = delete;

  Status Load(ClusterRecords* out) override;
  Status Release(const std::string& job_id, const JobPin& pin, const std::string& comment) override;
  Status Hold(const std::string& job_id, const std::string& comment, const JobPin& pin) override;
  Status HoldRequeued(const std::string& job_id, const std::string& comment, const JobPin& pin) override;
  Status Shrink(const std::string& job_id, const std::vector<std::string>& nodes) override;
  Status SetComment(const std::string& job_id, const std::string& comment) override;
  Status Requeue(const std::string& job_id) override;
  Status Signal(const std::string& job_id, int signal, bool batch_only) override;
  Status Drain(const std::string& node, const std::string& reason) override;
  Status Undrain(const std::string& node) override;

  // What the reads cost, for metrics and the benchmark.
  struct Stats {
    int64_t loads = 0, load_errors = 0;
    int64_t jobs_unchanged = 0, nodes_unchanged = 0;  // SLURM_NO_CHANGE_IN_DATA answers
    double last_load_ms = 0;
    int64_t last_job_count = 0, last_node_count = 0;
  };
  const Stats& stats() const { return stats_; }

  // The Drain reason as sent: `reason` with "tidal: " in front unless it starts with "tidal:".
  static std::string DrainReason(const std::string& reason);

 private:
  LibslurmApi();

  struct Cache;
  std::unique_ptr<Cache> cache_;
  Stats stats_;
};

}  // namespace tidal::slurm
