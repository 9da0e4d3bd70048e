// DisruptionHandler: Slurm's side of the engine's one disruption path ("scancel --signal, then
// requeue"). After each pass's Apply the reconciler asks the engine what to do with the Slurm jobs
// it takes off GPUs, whatever the cause (a drain, an unhealthy node, ...: Disruptions, door SLURM),
// and carries it out, at most kMaxActionsPerPass Slurm writes (signals, requeues) and as many
// Evicted reports per pass; what is left is done at the next pass (an action repeats at every poll
// until the engine sees its job off GPUs):
//
//   NOTICE  each running job of the action is signalled once per (job, deadline) with its
//           --signal (SIGUSR1 when it declared none, e.g. checkpoint-on-notice from its --comment):
//           the batch shell only for --signal=B:..., else its steps (as Slurm's own --signal
//           warning); then its AdminComment says "tidal: notice (<cause>): <reason>; requeued at
//           <deadline> at the latest" (Reconciler::Comment's rules: an admin's own AdminComment is
//           never overwritten). The job checkpoints and says so in its Comment
//           (tidal.dev/last-checkpoint=...): the next Sync carries it and the engine asks EVICT at
//           once, else at the deadline.
//   SHRINK  an EVICT that names only some members of an elastic job (--nodes=MIN-MAX, to_engine.h
//           NodeRange) and leaves it at least MIN nodes, its batch host among them, shrinks it to
//           the rest instead (SlurmApi::Shrink; its steps on the nodes given back are killed, the
//           job goes on); once its nodes are gone it is not shrunk again. Then Evicted{pods: those
//           members} is reported like a requeue's. Its notice says which nodes it gives back. An
//           EVICT that would take its batch host or leave it under MIN requeues it whole.
//   EVICT   each job of the action still RUNNING is requeued (SlurmApi::Requeue: requeue-hold; a
//           job Slurm will not requeue is cancelled) once per run (job, start time); a job no
//           longer running (completing, pending, finished, gone from the read) is skipped. Then
//           Evicted{pods: the action's members of that job, disruption: id, reason: cause} is
//           reported, retried at the next passes until the engine takes it. The requeued job is
//           held, keeps its submit time (its place in queue order), loses Tidal's old pin
//           (Reconciler::Convert) and waits for the engine's Admit like any held job.
//
// What a requeue must not change, kept by KeepAcrossRequeues while the adapter runs (a restart
// forgets it: docs/slurm.md):
//   - the submit time: Slurm 22.05 sets a requeued job's SubmitTime to the requeue, which would
//     send it to the back of the engine's queue order; the engine is told the one it was first
//     read with (any requeue: Tidal's, a node failure's, an admin's);
//   - its notice signal (records.h warn_signal: its comment's tidal.dev/signal): a job reporting a
//     checkpoint with `scontrol update jobid=$SLURM_JOB_ID comment=tidal.dev/last-checkpoint=...`
//     replaces its whole comment, and keeps its notice while its comment names no other signal.
//
// A failed signal or requeue is retried at the next pass and counted in apply_errors; a failed
// Disruptions call changes nothing here (the next pass asks again). An engine without the
// Disruptions RPC answers nothing (EngineLink).
//
// Threading: owned by the Reconciler and called on its loop thread only (ReconcileOnce); nothing
// in it is shared.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "shim/slurm/engine_link.h"
#include "shim/slurm/records.h"

namespace tidal::slurm {

struct ReconcileStats;  // reconciler.h

class DisruptionHandler {
 public:
  DisruptionHandler(SlurmApi* slurm, EngineLink* engine) : slurm_(slurm), engine_(engine) {}

  // This pass's record of job id "123" / "123_7" (nullptr: not read in this pass).
  using ReadFn = std::function<const JobRecord*(const std::string& id)>;
  // Sets the job's AdminComment to "tidal: <why>" under the reconciler's rules and budget.
  using CommentFn = std::function<void(const JobRecord& j, const std::string& id, const std::string& why)>;
  // One round: Disruptions, then the actions (see above). Counts st.notices,
  // st.disruption_requeues, st.apply_errors; problems go to st.status.
  void Run(const ReadFn& read, const CommentFn& comment, ReconcileStats& st);
  // Before the pass converts `jobs` (as read): gives requeued jobs back their first submit time
  // and notice signal (see above), and remembers both of running jobs and of jobs that declare a
  // signal.
  void KeepAcrossRequeues(std::vector<JobRecord>& jobs);

  static constexpr int kMaxActionsPerPass = 100;

  // The nodes an elastic job keeps when the action's `victims` (members of it) go, with the nodes
  // they free in `leaving` (empty: those members are gone already); empty when a shrink cannot do
  // it (not elastic, under its minimum, or its batch host would go): it is requeued whole.
  static std::vector<std::string> ShrinkTo(const JobRecord& j, const std::vector<const v1::PodRef*>& victims,
                                           std::vector<std::string>* leaving);

  // The job id of a member uid "slurm/123#0" -> "123" ("" when it is not a Slurm member).
  static std::string JobOfMember(const std::string& uid);
  // "2026-12-01T13:26:00Z".
  static std::string Rfc3339(int64_t unix_s);

 private:
  SlurmApi* slurm_;
  EngineLink* engine_;
  // Job id -> the deadline of the notice it was signalled for.
  std::unordered_map<std::string, int64_t> signalled_;
  // Job id -> the run requeued (its start time) and its Evicted report, until the engine has the
  // report and no longer asks to evict the job.
  struct Requeued {
    int64_t start_time = 0;
    bool reported = false;
    v1::EvictedRequest report;
  };
  std::unordered_map<std::string, Requeued> requeued_;
  // (job id, disruption id) -> a shrink of the job for that disruption and its Evicted report,
  // until the engine has the report and no longer names the pair.
  std::map<std::pair<std::string, std::string>, Requeued> shrunk_;
  // Job id -> what KeepAcrossRequeues keeps of it (jobs read in the last pass only).
  struct Known {
    int64_t submit_time = 0;   // as first read
    uint32_t restart_cnt = 0;  // as last read
    int32_t signal = 0;        // its notice signal as last declared (0 = none)
    int64_t time_s = 0;
    bool batch_only = false;
  };
  std::unordered_map<std::string, Known> known_;
};

}  // namespace tidal::slurm
