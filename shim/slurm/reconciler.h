// Reconciler: one level-triggered pass of tidal-slurm. Each pass reads slurmctld's whole state
// (SlurmApi::Load; libslurm answers "no change" cheaply), tells the engine what changed since the
// last pass (Sync, door SLURM; a full resync after any broken stream), asks it what may start
// (Admit) and applies that to Slurm: pin + release admitted jobs, say why the others wait in their
// AdminComment, hold again jobs that escaped the gate (requeued, released by hand) or whose pin
// names a node that went away (or that were held again since Tidal released them: their old pin
// goes), drains the nodes the engine lends to Kubernetes (and undrains those it got back; an
// admin's drain is never touched), then carries out the engine's disruptions of Slurm jobs (disruptions.h: notice with the
// job's --signal, requeue). Everything it does follows from what it reads, so an adapter
// restart, a slurmctld restart or an engine restart converges on the next pass; a failed read
// changes nothing (unknown is never "gone").
//
// Threading: one thread calls ReconcileOnce (the adapter's loop); LastStats and totals are read by
// the metrics endpoint under stats_mu_.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/api/limits.h"
#include "shim/slurm/config.h"
#include "shim/slurm/disruptions.h"
#include "shim/slurm/engine_link.h"
#include "shim/slurm/jobcomp.h"
#include "shim/slurm/records.h"

namespace tidal::slurm {

struct ReconcileStats {
  Status status;                  // the first problem of the pass ("" = clean)
  bool read_ok = false, synced = false, admitted = false, resynced = false;
  int64_t jobs = 0, pending = 0, running = 0, skipped = 0;  // job ids (array tasks counted)
  int64_t gpus_running = 0;
  int64_t upserts = 0, deletes = 0;   // members + nodes sent
  int64_t released = 0, held = 0, comments = 0, apply_errors = 0;
  int64_t admit_tried = 0;
  int64_t notices = 0, disruption_requeues = 0;  // jobs signalled / requeued for the engine's disruptions
  int64_t disruption_shrinks = 0;                // elastic jobs shrunk for them
  int64_t lent_drains = 0, lent_undrains = 0;    // nodes drained for a loan to Kubernetes / given back
  double read_s = 0, convert_s = 0, sync_s = 0, admit_s = 0, apply_s = 0, disrupt_s = 0, total_s = 0;
};

class Reconciler {
 public:
  Reconciler(AdapterConfig cfg, SlurmApi* slurm, EngineLink* engine)
      : cfg_(std::move(cfg)), slurm_(slurm), engine_(engine), disruptions_(slurm, engine) {}
  ReconcileStats ReconcileOnce();
  // Finished jobs from slurmctld's jobcomp log go to the engine with the next Sync (not owned).
  // Without one, a job the engine held running that slurmctld lists finished goes with its state.
  void SetJobcomp(JobcompReader* r) { jobcomp_ = r; }
  ReconcileStats LastStats();
  // Totals since start (counters for /metrics).
  struct Totals {
    int64_t passes = 0, read_errors = 0, sync_errors = 0, admit_errors = 0;
    int64_t released = 0, held = 0, comments = 0, apply_errors = 0;
    int64_t notices = 0, disruption_requeues = 0, disruption_shrinks = 0;
    int64_t lent_drains = 0, lent_undrains = 0;
  };
  Totals totals();

  // Bounds per pass (slurmctld is shared: never a storm of updates).
  static constexpr int kMaxCommentsPerPass = 200;
  static constexpr int kChunk = 5000;  // members per Sync message
  // Bytes of nodes and members per Sync message (the engine receives up to 16 MiB; one object is
  // at most 1 MiB: core/api/limits.h).
  static constexpr size_t kChunkBytes = limits::kSyncBatchBytes;

 private:
  struct Desired;
  void Convert(const ClusterRecords& rec, Desired& d, ReconcileStats& st);
  Status SendSync(const Desired& d, ReconcileStats& st);
  void Apply(const ClusterRecords& rec, const Desired& d, const v1::AdmitResponse& admit, ReconcileStats& st);
  // The engine's lent nodes drained (kLentReason), the others Tidal drained for a loan undrained.
  void ApplyLoans(const ClusterRecords& rec, const v1::AdmitResponse& admit, ReconcileStats& st);
  void Comment(const JobRecord& j, const std::string& id, const std::string& why, int* budget, ReconcileStats& st);

  AdapterConfig cfg_;
  SlurmApi* slurm_;
  EngineLink* engine_;
  DisruptionHandler disruptions_;
  bool need_resync_ = true;
  JobcompReader* jobcomp_ = nullptr;
  std::vector<v1::FinishedJob> finished_;  // read, not yet acknowledged by the engine
  // Per job id (array tasks counted): its members as last converted, kept while its record reads
  // the same (MembersKey), and what the engine holds of it. Entries of jobs a pass no longer reads
  // are dropped at the start of the next pass. Dense, in read order (slurmctld lists jobs in a
  // stable order, so a pass finds most entries at the slot after the previous one, unhashed).
  struct JobEntry {
    std::string id;
    uint64_t key = 0;               // MembersKey of the record, the job id and the re-hold view
    bool built = false;
    bool active = false;            // holds nodes (running, suspended, completing)
    std::string skip;               // why it is not sent ("" = sent)
    std::vector<v1::Pod> members;   // lent to the Sync messages, never copied
    uint32_t bound = 0;             // one past the highest member index (uid "slurm/<id>#<i>")
    bool sent = false;              // the engine holds the members built from sent_key
    uint64_t sent_key = 0;
    // The engine may hold uids "slurm/<id>#0" .. "#<sent_bound - 1>" of it (a shrunk elastic job's
    // members keep their indices: to_engine.h MemberNodes).
    uint32_t sent_bound = 0;
    uint64_t seen = 0;              // the last pass that read it
    const JobRecord* rec = nullptr; // its record in that pass's read (valid during the pass only)
  };
  // The entry of job `id` read in this pass (nullptr: not read).
  const JobEntry* Read(const std::string& id) const;
  std::vector<JobEntry> entries_;
  std::unordered_map<std::string, uint32_t> index_;  // job id -> slot in entries_
  uint64_t pass_ = 0;
  std::unordered_map<std::string, std::string> sent_nodes_;  // name -> serialized v1::Node
  std::mutex stats_mu_;  // guards the two below
  ReconcileStats last_;
  Totals totals_;
};

}  // namespace tidal::slurm
