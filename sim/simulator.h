// Simulator: replays jobs on a virtual clock through a scheduling Policy over a ClusterState: the
// same core and plugins as tidal-engine (no gRPC) for the `tidal` policy, sim-only baselines for
// the others (sim/policy.h). One event loop for all policies.
//
// Event loop: at each event time t (submissions, completions, and the lending driver's wake-ups;
// all events of one timestamp are batched), the loop integrates the time-weighted metrics up to
// t, applies the completions (the allocation leaves the ClusterState, the policy's OnComplete
// runs), adds the arrivals to the pending queue, then calls the policy's Schedule once. With pools
// (a fabric whose nodes belong to the two doors, sim/lending.h) the lending driver then steps the
// engine's lending rules; when nodes changed hands or borrowers were evicted the policy runs again. A started job runs for its actual duration
// (its declared runtime limit is only what schedulers see); a job whose duration exceeds its
// declared limit is killed at the limit, as Slurm does. An evicted job loses the work since its
// last checkpoint (Workload::checkpoint_interval_s; none if it checkpoints on notice, all if it
// never checkpoints) and its next run does only what is left. The replay ends when no event is left:
// jobs still pending then (e.g. a deadlock of partly placed gangs) are reported as unfinished.
// A replay may start from a live state (a snapshot's dry-run, sim/dryrun.h): work already running
// (SubmitRunning) is placed at Start and ends by its own clock; the clock starts at the snapshot's
// time (SetStartTime) and what was submitted before arrives then.
//
// Deterministic: same input, same output. Jobs are indexed in submission order, the pending queue
// is kept in (submit time, index) order, and no decision depends on hash-map iteration order.
//
// Threading: single-threaded; the simulator owns all its state.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/framework/scheduler.h"
#include "core/state/cluster_state.h"
#include "core/state/queues.h"
#include "sim/policy.h"

namespace tidal::sim {

class LendingDriver;

struct SimJob {
  Workload w;              // w.submit_time_s is the submit time; w.runtime_limit_s the declared limit
  int64_t duration_s = 0;  // actual run time
  int64_t line = 0;        // where the job came from in its trace (0 = built in code)
};

enum class JobState { kFuture, kPending, kRunning, kDone, kRejected };

struct JobRecord {
  std::string id, queue;
  int32_t members = 0;
  int64_t gpus = 0;          // total GPUs (while running: as placed)
  int64_t submit_s = 0, start_s = -1, end_s = -1;  // start/end of the last (completed) run
  std::string domain;        // smallest topology vertex holding all its nodes ("" = never ran)
  int domain_level = -2;     // level of `domain`: -1 cluster, else TopologyLevels index; -2 never ran
  int32_t nodes = 0;         // nodes it ran on
  JobState state = JobState::kFuture;
  bool rejected = false;
  bool killed_at_limit = false;
  int32_t preemptions = 0;   // times it was evicted (and requeued)
  double lost_gpu_seconds = 0;
  int64_t saved_s = 0;       // work kept by checkpoints over its evictions (the next run resumes)
  int64_t first_reservation_s = -1;  // EASY: the first reservation made for it as the head job
  int64_t first_start_s = -1;        // its first start (a snapshot's running job: when it started)
  std::string last_reason;
};

struct SimStats {
  int64_t events = 0;        // distinct event timestamps processed
  int64_t cycles = 0;        // scheduling passes that ran (policy-counted)
  int64_t skipped = 0;       // scheduling points skipped because nothing could start
  int64_t retries = 0;       // tidal: pruned cycles rolled back and rerun on a longer prefix
  int64_t decisions = 0;
  double wall_seconds = 0;
};

// Time-weighted integrals over the replay (GPU-seconds, seconds).
struct Integrals {
  double allocated_gpu_s = 0;   // GPUs of running jobs
  double held_gpu_s = 0;        // GPUs held by partly placed gangs (kube-default)
  double stranded_gpu_s = 0;    // idle GPUs a waiting job could have used (see docs/simulator.md)
  double contended_s = 0;       // time with at least one job waiting
  double jain_dt = 0;           // integral of Jain's index over contended time
  double capacity_gpu_s = 0;    // schedulable GPUs x time
};

// A point of the time series (values hold from `t` until the next sample).
struct Sample {
  int64_t t = 0;
  int64_t allocated = 0, held = 0, pending = 0, running = 0;
  std::vector<int64_t> per_queue;  // allocated GPUs per queue (Simulator::queues() order)
  int64_t per_door[2] = {0, 0};    // allocated GPUs by front door (FrontDoor's value)
  int64_t lent = 0;                // GPUs of lent nodes (sim/lending.h)
};

class Simulator {
 public:
  Simulator(ClusterState state, std::unique_ptr<Policy> policy);
  // The `tidal` policy over a prebuilt Scheduler (sim/policies/tidal.h). `ledger` may be null
  // (no queues); the scheduler's profile must have been built with the same ledger.
  Simulator(ClusterState state, std::unique_ptr<Scheduler> scheduler, QuotaLedger* ledger);
  ~Simulator();

  void Submit(SimJob job);
  // A job already running when the replay starts (a snapshot's running work, sim/dryrun.h): placed
  // at Start, after the policy's Prepare, on `at` since `start_s` (before the replay's start); it
  // ends at start_s + job.duration_s (at once if that is past). Before Start.
  void SubmitRunning(SimJob job, std::vector<MemberAssignment> at, int64_t start_s);
  // The clock starts at `t` instead of the first submit (a snapshot's time); jobs submitted
  // earlier arrive at `t`, in submit order. Before Start.
  void SetStartTime(int64_t t) { start_time_ = t; }
  // Integrates the time-weighted metrics up to `t` without scheduling (after Run(until) stopped
  // short of an event, so that a fixed horizon is measured whole).
  void Integrate(int64_t t) { Account(t); }
  // Per queue (queues() order): the integral over contended time of its allocated GPUs minus its
  // weighted max-min fair share of the capacity given every active queue's demand (GPU-seconds;
  // negative = below its share). The per-queue form of Jain's index (docs/simulator.md).
  const std::vector<double>& fair_gap_gpu_s() const { return fair_gap_gpu_s_; }
  // Fair-share weights for Jain's index (default 1 per queue).
  void SetQueueWeights(std::map<std::string, double> w) { weights_ = std::move(w); }
  // Pools lending to each other by the engine's rules (sim/lending.h); null = none. Before Start.
  void SetLending(std::unique_ptr<LendingDriver> d);
  const LendingDriver* lending() const { return lending_.get(); }
  // The most samples a series keeps: when a replay runs so long that it would take more, the
  // period doubles and every other sample is dropped, so memory stays bounded whatever the period.
  static constexpr size_t kMaxSamples = 200000;
  // Time-series sampling period in virtual seconds (0 = no series).
  void SetSampleInterval(int64_t s) { sample_interval_ = s; }
  int64_t sample_interval() const { return sample_interval_; }  // after any doubling
  // Freezes the job list and prepares the policy (called by Run if not called before; idempotent).
  Status Start();
  // Runs until every job has finished or been rejected, or until `until_s` (virtual seconds).
  // If Start fails, nothing runs and status() says why.
  void Run(int64_t until_s = INT64_MAX);
  const Status& status() const { return status_; }

  const std::vector<SimJob>& jobs() const { return jobs_; }
  const std::vector<JobRecord>& records() const { return records_; }
  const ClusterState& state() const { return state_; }
  const SimStats& stats() const { return stats_; }
  const Integrals& integrals() const { return integrals_; }
  const std::vector<Sample>& series() const { return series_; }
  const std::vector<std::string>& queues() const { return queue_names_; }
  const Policy& policy() const { return *policy_; }
  // GPU-seconds consumed per queue so far.
  const std::map<std::string, double>& gpu_seconds_by_queue() const { return gpu_seconds_by_queue_; }
  // Called after every scheduling point with the current time (for time series).
  void OnCycle(std::function<void(int64_t now, const Simulator&)> f) { on_cycle_ = std::move(f); }
  int64_t now() const { return now_; }
  int64_t first_submit() const { return first_submit_; }
  int64_t allocated_gpus() const { return allocated_gpus_; }
  int64_t held_gpus() const { return held_gpus_; }
  int64_t capacity_gpus() const { return capacity_gpus_; }
  // Running jobs marked preemptible.
  int64_t running_preemptible() const { return running_preemptible_; }

  // ---- For policies (called from Policy::Schedule) ----
  ClusterState& mutable_state() { return state_; }
  const SimJob& job(JobId j) const { return jobs_[j]; }
  SimJob& mutable_job(JobId j) { return jobs_[j]; }  // Prepare only (e.g. resolving queue ids)
  JobRecord& record(JobId j) { return records_[j]; }
  // Pending jobs in arrival order (submit time, then submission index). Stable during Schedule:
  // started and rejected jobs leave it when Schedule returns.
  const std::vector<JobId>& pending() const { return pending_; }
  JobId Find(const std::string& id) const;  // SIZE_MAX if unknown
  // Smallest GPU request (per job: per-member GPUs x min members) among pending jobs; INT64_MAX if none.
  int64_t MinPendingGpus() const { return pending_gpus_.empty() ? INT64_MAX : pending_gpus_.begin()->first; }
  // Smallest per-member GPU request among pending jobs; INT64_MAX if none.
  int64_t MinPendingMemberGpus() const {
    return pending_member_gpus_.empty() ? INT64_MAX : pending_member_gpus_.begin()->first;
  }
  // Pending jobs' GPUs by front door: total GPUs of a job -> jobs (all, or the preemptible ones).
  const std::map<int64_t, int64_t>& PendingByDoor(FrontDoor d, bool preemptible_only) const {
    return pending_door_[static_cast<size_t>(d)][preemptible_only ? 1 : 0];
  }
  int64_t AllocatedByDoor(FrontDoor d) const { return door_running_[static_cast<size_t>(d)]; }
  // Evicts a running job from outside the policy (the lending driver's reclaim): its allocation
  // leaves the ClusterState, the policy's OnEvicted runs, it goes back to the pending queue.
  Status Evict(JobId j);
  // The job is already running in the ClusterState under its id (e.g. placed by Scheduler::RunCycle).
  void Started(JobId j, const std::vector<MemberAssignment>& assignments);
  // Adds the allocation to the ClusterState, then Started.
  Status Place(JobId j, const std::vector<MemberAssignment>& assignments);
  void Reject(JobId j, std::string reason);
  // The running job lost `members` members (-1 = all: it was evicted and goes back to the pending
  // queue, restarting from scratch). Its allocation is already gone from the ClusterState.
  void Evicted(JobId j, int32_t members);
  // GPUs held by partly placed gangs (kube-default); they are allocated in the ClusterState.
  void SetHeldGpus(int64_t gpus) { held_gpus_ = gpus; }
  // Running jobs by declared end (start + declared limit), earliest first.
  const std::set<std::pair<int64_t, JobId>>& running_by_declared_end() const { return declared_ends_; }
  const std::vector<MemberAssignment>& assignments(JobId j) const { return assignments_[j]; }
  void CountCycle(int64_t decisions) {
    ++stats_.cycles;
    stats_.decisions += decisions;
  }
  void CountSkip() { ++stats_.skipped; }
  void CountRetry() { ++stats_.retries; }

 private:
  void Account(int64_t t);
  void Complete(int64_t t, Changes* ch);
  void AddPending(JobId j);
  void RemovePendingCounters(JobId j);
  void CountDoor(JobId j, int64_t gpus);
  int64_t DeclaredEnd(JobId j) const;  // start + what is left of its declared limit
  // The policy's passes at the current time (evictions requeue jobs and get another pass).
  void Passes(Changes ch);
  void Requeue();
  double JainNow(std::vector<double>* fair) const;  // *fair: per queue, its fair share now (GPUs)
  void Locality(JobId j, const std::vector<MemberAssignment>& a);

  ClusterState state_;
  std::unique_ptr<Policy> policy_;
  std::vector<SimJob> jobs_;            // by index
  std::vector<JobRecord> records_;      // same index
  std::vector<std::vector<MemberAssignment>> assignments_;
  std::vector<int> queue_of_;           // queue index per job
  std::unordered_map<std::string, JobId> index_;
  std::vector<JobId> pending_;          // arrival order
  std::vector<JobId> arrivals_;         // jobs by (submit, index)
  std::vector<JobId> requeue_;          // evicted during the current pass
  struct Initial {
    JobId job;
    std::vector<MemberAssignment> at;
    int64_t start_s;
  };
  std::vector<Initial> initial_;        // SubmitRunning's jobs, placed at Start
  int64_t start_time_ = INT64_MIN;      // SetStartTime (INT64_MIN: the first submit)
  std::vector<double> fair_gap_gpu_s_, fair_now_;
  size_t next_arrival_ = 0;
  std::set<std::pair<int64_t, JobId>> ends_, declared_ends_;
  std::map<int64_t, int64_t> pending_gpus_, pending_member_gpus_;  // request -> count
  std::vector<std::string> queue_names_;
  std::map<std::string, double> weights_;
  std::vector<double> queue_weight_;
  std::vector<int64_t> queue_running_, queue_pending_;  // GPUs
  std::map<int64_t, int64_t> pending_door_[2][2];  // [door][preemptible only] total GPUs -> jobs
  int64_t door_running_[2] = {0, 0};               // allocated GPUs by door
  std::unique_ptr<LendingDriver> lending_;
  std::map<std::string, double> gpu_seconds_by_queue_;
  std::vector<double*> queue_gpu_s_;    // into gpu_seconds_by_queue_, by queue index
  int64_t allocated_gpus_ = 0, held_gpus_ = 0, capacity_gpus_ = 0, running_preemptible_ = 0;
  int64_t now_ = 0, first_submit_ = 0;
  bool started_ = false;
  Status status_;
  void ThinSeries();  // at kMaxSamples: twice the period, every other sample kept
  int64_t sample_interval_ = 0, next_sample_ = 0;
  std::vector<Sample> series_;
  Integrals integrals_;
  SimStats stats_;
  std::function<void(int64_t, const Simulator&)> on_cycle_;
};

}  // namespace tidal::sim
