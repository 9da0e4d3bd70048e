// Engine: the single owner of the scheduling state behind tidal-engine's RPCs (plain C++; the gRPC
// layer in server converts messages and calls in here).
//
// What it holds: every node and every pod the front door reported (pods of ALL schedulers: bound
// pods use capacity whoever placed them), the gangs of pending Tidal pods, each gang's plan (slots
// on nodes, held in the ClusterState as a running allocation "plan:<gang>" so later plans see the
// capacity as taken), and the ClusterState built from nodes + bound pods + plans.
//
// Gang protocol (the shim's extension points):
//   CheckPod (PreEnqueue) -> PlanPod (PreFilter: the first member plans the whole gang, every member
//   gets its slot's node) -> Reserve -> Permit (allow when every member is reserved) -> Bound.
//   Unreserve of any member drops the whole plan, so nothing is ever bound half-way by the engine's
//   choice; plans not completed within plan_ttl are dropped.
// Reservations: a gang that does not fit gets a backfill reservation (book_, refreshed by a dry
//   cycle over the pending gangs: engine_refresh.cc, in the call or on the refresher thread);
//   every later plan honours the book (docs/scheduling.md).
// Restart: each door's first Sync message is a full snapshot, from which nodes, bound pods and
// gangs are rebuilt. Plans in flight are lost; their members time out in Permit and are retried.
// Until a door's snapshot is in, the nodes it reported before the restart (kept with the ledger
// in the state file) take no new work: its work there is unknown (engine_doors.cc).
//
// Fair share: PlanPod plans the heads of queues further below their share first (engine_plan.cc).
// Feasibility: node selectors, affinity, taints/tolerations are evaluated before planning; nodes
//   kube-scheduler's own filters refused are excluded for the gang (NodeRefused).
//
// One class, one file per responsibility: engine.cc (lifecycle, reload, ledger file), engine_sync.cc
// (the front door's mirror and bound pods' charges), engine_nodes.cc (merged nodes, ClusterState), engine_gang.cc (the gang protocol),
// engine_plan.cc (planning, fair-share order), engine_reservations.cc (the backfill book's view,
// runtime limits), engine_refresh.cc (the book's refresh, the timeline, the refresher thread), engine_preempt.cc (preemption view and holds), engine_views.cc (explain,
// gauges), engine_exclusive.cc (JobSet/LWS exclusive topology), engine_config.cc (config file),
// engine_doors.cc (the doors' nodes across restarts); the calls' result types are in engine_results.h.
//
// Threading: every public method takes mu_; callers may be any gRPC thread. Nothing is returned by
// reference into the guarded state. With refresh_in_background one more thread, the refresher,
// takes mu_ to capture a refresh job and to install its book, and runs the dry cycle without it
// (engine_refresh.cc has its lock order).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine_results.h"
#include "engine/engine_types.h"
#include "engine/engine_gang_types.h"
#include "engine/gap_fill.h"
#include "engine/disruption_book.h"
#include "core/state/lending.h"
#include "engine/observability.h"
#include "engine/pod_spec.h"
#include "engine/preempt_hold.h"
#include "engine/engine_records.h"
#include "engine/refresh_job.h"
#include "engine/refresh_worker.h"
#include "engine/waves.h"
#include "engine/workload_ends.h"
#include "core/framework/scheduler.h"
#include "core/state/cluster_state.h"
#include "core/state/queues.h"

namespace tidal {

class Engine {
 public:
  using Clock = std::function<int64_t()>;  // seconds
  static StatusOr<std::unique_ptr<Engine>> Create(EngineConfig cfg, Clock clock = nullptr);
  ~Engine();  // stops the refresher thread (refresh_in_background)
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const std::string& epoch() const { return epoch_; }

  // Applies one Sync message. Returns the generation reached; a malformed object is skipped and
  // named in the status, the rest of the batch still applies.
  // `warnings` (optional) gets caveats about nodes of the batch for their admins (a node missing
  // a topology level's label: its own domain at that level), once per node and change.
  Status Sync(const SyncBatch& batch, uint64_t* generation, std::vector<NodeWarningInfo>* warnings = nullptr);
  Status Sync(SyncBatch&& batch, uint64_t* generation, std::vector<NodeWarningInfo>* warnings = nullptr);  // moves the pods in
  Status CheckPod(const std::string& uid, std::string* gang);
  PlanResult PlanPod(const std::string& uid);
  Status Reserve(const std::string& uid, const std::string& node);
  std::vector<PodRefInfo> Unreserve(const std::string& uid);
  PermitResult Permit(const std::string& uid);
  Status Bound(const std::string& uid, const std::string& node);
  // --- preemption (engine_preempt.cc)
  // PostFilter: choose victims for this pod's gang with the profile's preemption plugin, on the
  // preemption view (bound pods grouped into their gangs; capacity the reservation book holds is
  // not the preemptor's to take), and hold the capacity they free for the gang (a reservation in
  // the book starting now) until it is planned, deleted, or plan_ttl_s passes. Nothing is evicted
  // here: the front door evicts (with grace periods), reports it (Evicted) and the gang retries.
  PreemptResult Preempt(const std::string& uid);
  // The front door's report: pods it evicted (counted in tidal_preemptions_total), and victim
  // workloads it skipped because PodDisruptionBudgets refuse evicting them whole (never victims
  // for plan_ttl_s; the preemptor's hold is dropped so it can choose again).
  Status Evicted(const EvictionReport& report);
  // --- end preemption
  // Pods of this scheduler, bound and not terminating, that have run longer than their declared
  // tidal.dev/runtime-limit plus the grace (none when enforcement is off). Run time counts from
  // the pod's start (status.startTime), or from when the engine saw it bound until there is one.
  std::vector<OverduePod> Overdue();
  // --- the disruption path (engine_disruptions.cc; disruption_book.h has the steps)
  // What `door` should do now with work the engine takes off GPUs: NOTICE (tell the pods, they
  // checkpoint) or EVICT (every pod, whole). Opens the disruptions due at this call first: pods
  // of this scheduler over their runtime limit (their whole gang). Preempt opens its victims'.
  std::vector<DisruptionAction> Disruptions(FrontDoor door);
  NodeLendingInfo TakeNodeLending();  // lends and reclaims: Kubernetes node events and taints
  // Gang-aware drain (engine_closes.cc): until `by_s` the nodes take only work expected to end by
  // then, from `by_s` none, until cancelled (decommission: or until the node leaves for good);
  // work that ends by `by_s` (its declared runtime limit) finishes, the rest is disrupted (cause
  // drain or decommission, its gang whole) so that its notice ends by then. Kept in the state
  // file. Reports every drain and maintenance window's node (nodes empty, cancel false: only
  // that); an unknown node is reported "unknown-node", not drained.
  std::vector<NodeDrainInfo> Drain(const std::vector<std::string>& nodes, int64_t by_s, bool cancel, bool decommission = false);
  // Rolling upgrades (engine_waves.cc, engine/waves.h): `nodes` (empty: all) in waves of at most
  // `max_nodes`, or one domain of level `domain` each; each running rigid gang's nodes in one wave.
  StatusOr<WavePlan> PlanWaves(const std::vector<std::string>& nodes, int32_t max_nodes, const std::string& domain);
  // --- end disruption path
  // The front door's own filters (kube-scheduler's NodePorts, InterPodAffinity, VolumeBinding,
  // ...) refused the node planned for this pod: the node is excluded for the pod's gang for
  // exclusion_ttl_s, and the gang's plan is dropped so the next plan differs.
  Status NodeRefused(const std::string& uid, const std::string& node, const std::string& why);
  // --- the Slurm door's decisions (engine_admit.cc)
  // Plans pending work in the engine's order across both doors (fair-share heads first, then
  // backfill of `door`'s gangs in queue order, honouring the book), and returns `door`'s gangs
  // holding a plan (their member slots claimed) plus why at most max_waiting others wait.
  // Kubernetes gangs it planned ahead are queued for TakeActivations.
  AdmitResult Admit(FrontDoor door, int32_t max_waiting);
  // Pods of `door` planned by another door's call, each returned once.
  std::vector<PodRefInfo> TakeActivations(FrontDoor door);
  // --- end Slurm door
  // Text for a gang key "ns/gang" or a pod "ns/name".
  Status Explain(const std::string& name, std::string* text);
  // The same as JSON plus, for a pending gang, its position in queue order and its estimated start
  // (from a dry-run cycle with reservations on copies of the state, bounded: see "explain" below).
  StatusOr<nlohmann::json> ExplainJson(const std::string& name);
  EngineStats Stats();
  RolloutSignals RolloutSignalsNow();  // what a config rollout watch reads (engine_rollout.cc, rollout.h)
  // The size of each per-object container the engine keeps (pods, gangs and their indexes, bound
  // pods' charges and start times, the ledger's charges, reservations, preemption holds and
  // groups, pending activations): every one is back to 0 once the doors report no pods (a leak
  // check: test/unit/engine_census_test.cc). Not in it: nodes and their indexes, and the Slurm gap
  // ledger (gang_memory_), bounded to 200,000 gangs by age.
  std::vector<std::pair<std::string, size_t>> Census();
  EngineGauges Gauges();
  // Optional: metrics and decision log (set before serving; not owned).
  // Also sets the configured queues' series to 0 in `m` (and again at every reload).
  void SetObservability(EngineMetrics* m, DecisionLog* log);
  // Hot reload: swaps in a new, already validated config. Usage history and charges carry over by
  // queue name; plans in flight are dropped (their members retry).
  Status Reconfigure(const EngineConfig& cfg);
  // State file (docs/fair-share.md, operations.md): the ledger's decayed usage plus the nodes each
  // door reported ("doorNodes", engine_doors.cc); an older file is fine, a bad part is skipped.
  std::string SaveLedger();
  Status LoadLedger(const std::string& json);
  // The live state for a policy dry-run (engine_snapshot.cc; format tidal.dev/snapshot v1, docs/simulator.md):
  // nodes, running and pending work, decayed usage, reservations; no pod specs; an empty config (GET /snapshot's is filled).
  nlohmann::json Snapshot();
  // Changes whenever what SaveLedger writes of the doors' nodes changes (save it soon: main.cc).
  uint64_t DoorMemoryVersion() const { return door_memory_version_.load(std::memory_order_relaxed); }
  // A replica that stands by does not serve `door` (server/DoorLeases): its nodes are gated until
  // the door resyncs here again, and it is not reported as awaited meanwhile (engine_doors.cc).
  void SetDoorServed(FrontDoor door, bool served);
  // "queue team-a uses ..." for every leaf queue.
  std::string DescribeQueues();

  // --- explain (engine_views.cc)
  // ExplainJson's dry run is bounded: under mu_ it copies the timeline, the ledger, the book and
  // the workloads of at most max_ahead pending gangs ahead of the asked one in queue order (plus
  // the asked one and the gangs holding a book reservation), releases mu_, and runs the dry cycle
  // on the copies. One dry run at a time (explain_mu_, taken before mu_, never inside it).
  struct ExplainOptions {
    int32_t max_ahead = 2000;  // pending gangs ahead of the asked one the dry run considers (>= 1)
  };
  // The last ExplainJson's account (tests, benchmarks).
  struct ExplainStats {
    int64_t considered = 0;    // workloads given to the dry cycle
    int64_t ahead = 0;         // pending gangs ahead of the asked one (pending index)
    bool cut = false;          // the queue ahead was cut at max_ahead: position and ETA estimated
    int64_t lock_held_ns = 0;  // time mu_ was held
    int64_t total_ns = 0;
  };
  void SetExplainOptions(const ExplainOptions& o);
  ExplainStats LastExplainStats();

  // Refreshes the reservation book now unless it was refreshed under a second ago (on the
  // refresher thread with refresh_in_background: asks for it). Plans, Admit and the disruption
  // poll refresh it as needed; this is for tests and benchmarks.
  void RefreshReservations();
  // With refresh_in_background: waits until the refresher has no refresh asked for or running
  // (tests and benchmarks; returns at once without the refresher).
  void WaitForRefresh();

 private:
  struct ExplainBatch;  // engine_views.cc
  // Explain's text; *key (optional) gets the gang key GangKeyForLocked resolved `name` to.
  Status ExplainTextLocked(const std::string& name, std::string* text, std::string* key = nullptr);
  // The workloads of the dry run for the pending gang `key` (the whole queue when it is no longer
  // than max_ahead). Runs under mu_ and explain_mu_.
  void ExplainBatchLocked(const std::string& key, ExplainBatch& out) const;
  std::mutex explain_mu_;           // serialises ExplainJson; guards the two below
  ExplainOptions explain_opts_;
  ExplainStats explain_stats_;
  // --- end explain
  using Slot = EngineSlot;
  using Plan = EnginePlan;
  using Gang = EngineGang;
  using HeadKey = GangHeadKey;

  Engine(EngineConfig cfg, Clock clock, std::shared_ptr<const QueueTree> tree);
  Status BuildSchedulerLocked();
  // borrowed: from the plan the pod bound on; none: judged against what its queue holds already.
  void ChargePodLocked(const PodInfo& p, std::optional<bool> borrowed);
  void RechargeBoundLocked();  // after a reload: bound work its queue's ledger does not hold yet
  void KeepRunningSpecLocked(PodInfo& in);  // a running pod's unreadable keys are not applied
  Status UpsertPodLocked(PodInfo p);
  // observed: the door reported the delete (false: a resync that no longer names the pod).
  void DeletePodLocked(const std::string& uid, bool observed = true);
  void NoteFinishedMemberLocked(Gang& g, const PodInfo& p);  // a Succeeded member leaves (Gang::finished_starts)
  std::string GangKeyLocked(const PodInfo& p, PodSchedulingSpec* spec, Status* st) const;
  void EnsureStateLocked();
  // A copy of state_ in which every bound pod is a running allocation ("pod:<uid>") from its
  // bound time, so a future view can release it at its expected end (engine_refresh.cc).
  ClusterState TimelineLocked();
  // What turns a copy of state_ into that timeline (refresh_job.h); calls EnsureStateLocked.
  TimelineInputs TimelineInputsLocked();
  // Workloads of every pending gang without a plan (dry runs).
  std::vector<Workload> PendingGangWorkloadsLocked() const;
  // The same without copies: pointers to the gangs' cached workloads, the others built in *built.
  // keep (optional): the cached workloads pointed at, held (read after mu_ is released).
  using SharedWorkloads = std::vector<std::shared_ptr<const Workload>>;
  std::vector<const Workload*> PendingGangWorkloadRefsLocked(std::deque<Workload>* built, SharedWorkloads* keep = nullptr) const;
  // A pending gang's workload: *w points at its cached one (Gang::Summary) or at *built. False
  // when it has a plan, an invalid spec or nothing left to place.
  bool PendingWorkloadRefLocked(const Gang& g, std::optional<Workload>* built, const Workload** w,
                                SharedWorkloads* keep = nullptr) const;
  // Admit's memo key: gangs of one shape (queue, request, size, topology, model, constraints)
  // fail or fit alike in one call.
  static std::string ShapeKey(const Workload& w);
  // Drops reservations of gangs that are gone or planned; refreshes the book (see book_).
  void PruneBookLocked();
  // Refreshes the book unless it was refreshed under a second ago; then it only marks it stale,
  // and the next plan of any pod refreshes it first (so a throttled refresh is never lost).
  // With the refresher thread it only wakes the refresher (engine_refresh.cc).
  void RefreshReservationsLocked();
  // The refresh's steps (refresh_job.h): the job (nullopt: throttled or no backfill), `whole_queue`
  // or the prefix; `own_workloads`: the batch is copied (read after mu_ is released). Install:
  // false when the prefix did not settle the book (the whole queue is due at once).
  // mirrors (the refresher's): state_ and ledger_ are assigned there, not copied into the job.
  // True (and the book marked stale) when a refresh ran under a second ago.
  bool RefreshThrottledLocked();
  std::optional<RefreshJob> CaptureRefreshLocked(bool whole_queue, bool own_workloads, RefreshMirrors* mirrors = nullptr);
  bool InstallRefreshLocked(const RefreshJob& job, RefreshOutcome out);
  // The refresher thread (refresh_in_background; engine_refresh.cc has its threading): one
  // background refresh per request (RefreshWorker folds requests made while one runs).
  void RefreshInBackground(RefreshMirrors& mirrors);
  RefreshWorker refresher_;
  bool refresh_whole_ = false;  // under mu_: the refresher's next job walks the whole queue
  bool refresh_retry_ = false;  // under mu_: the next refresh is not throttled (the prefix fell short)
  // Under mu_: moves when NodeIds or the profile change (EnsureStateLocked's rebuilds, the
  // scheduler's build): a refresh job captured before is not installed.
  uint64_t book_epoch_ = 0;
  int64_t book_refreshes_ = 0, refresh_locked_ns_ = 0;  // under mu_: EngineStats
  // The refresh's batch: the first k pending gangs in queue order and every one holding a
  // reservation (false: the order is not the pending index's; engine_refresh.cc).
  bool RefreshBatchLocked(size_t k, std::deque<Workload>* built, std::vector<const Workload*>* out,
                          SharedWorkloads* keep = nullptr) const;
  // After state_ is rebuilt: moves every reservation onto the new NodeIds by node name; one that
  // lost a node, or now sits on a node that takes no work, is dropped and the book marked stale.
  void RemapBookLocked();
  using ReservationView = EngineReservationView;  // engine_records.h
  // With `ranks` (QuotaLedger::FairShareRanks) and the planner's queue rank: reservations of
  // gangs whose queue ranks behind it are left out (they yield to fair share; preemption holds
  // never do). fill_notice_s >= 0 (a workload that fills perishable windows, FillNoticeLocked):
  // closes with room for its notice and perishable.minSeconds are left off for it; so are closes
  // from fill_by on (a preemptible workload expected gone by then: CorrectedFillByLocked).
  void ReservationViewLocked(const std::string& own, ReservationView& rv, int32_t own_rank = -1,
                             const std::vector<int32_t>* ranks = nullptr, int64_t fill_notice_s = -1,
                             int64_t fill_by = INT64_MAX) const;
  // The fair-share rank of the queue of the book entry's gang (-1 when unknown).
  int32_t BookRankLocked(const std::string& plan_id, const std::vector<int32_t>& ranks) const;
  // Is the book entry's gang behind the planner's gang in queue order (same queue)?
  bool BehindLocked(const std::string& plan_id, const std::string& own_plan_id) const;
  // "reserved to start in 2h (1970-01-01T02:16:40Z) on 2 node(s)", or "" without a reservation.
  std::string ReservedStartLocked(const std::string& id) const;
  void ApplyBoundLocked(const PodInfo& p);   // charge a bound pod, releasing its slot if any
  void ReleaseBoundLocked(const std::string& uid);
  void DropPlanLocked(Gang& g);
  void ExpirePlansLocked();
  std::string PlanId(const Gang& g) const { return "plan:" + g.key; }
  // The gang key for "ns/gang" or a pod "ns/name" (`name` itself when unknown); a pod that belongs
  // to no Tidal gang sets *lone_pod and returns "".
  std::string GangKeyForLocked(const std::string& name, const PodInfo** lone_pod) const;
  // The workload a gang's pending pods make (nullopt when nothing is left to place).
  std::optional<Workload> GangWorkloadLocked(const Gang& g, const PodSchedulingSpec& spec, int32_t* bound) const;
  Node ToNode(const NodeInfo& n) const;
  void AttachConstraintsLocked(const Gang& g, Workload& w) const;
  // The workload of a gang waiting to be planned (nullopt when planned, empty or its spec is
  // invalid); *spec_out (optional) gets its parsed spec.
  std::optional<Workload> PendingWorkloadLocked(const Gang& g, PodSchedulingSpec* spec_out = nullptr) const;
  Status ReconfigureLocked(const EngineConfig& cfg);  // takes mu_ (Reconfigure's body)
  // The topology levels whose label node n lacks (or holds an invalid value for), outermost first.
  std::vector<std::string> MissingLevels(const NodeInfo& n) const;
  std::string NodeModelLocked(const std::string& node) const;  // "" when unknown
  // --- exclusive topology (engine_exclusive.cc)
  // A gang whose pods name a JobSet / LeaderWorkerSet exclusive topology: pins its workload to its
  // group's domain, choosing one (unused by other such groups) for the group's first member.
  void PinExclusiveDomainLocked(const Gang& g, Workload& w) const;
  // --- end exclusive topology
  // --- planning and fair-share order (engine_plan.cc)
  // Schedules gang g now (reservations honoured); on success g.plan holds the placement.
  Decision ScheduleGangLocked(Gang& g, const PodSchedulingSpec& spec, Workload w);
  // Its search: w placed on state_ honouring the book (on kPlaced: in state_ and charged);
  // *yielded gets the reservations left out for fair share.
  Decision PlaceLocked(const Workload& w, int32_t* yielded);
  // --- elastic gangs growing back (engine_elastic.cc): a running elastic gang's waiting members
  // are placed only once room for them has stayed free for elastic_grow_after_s (probed when the
  // wait starts and again when it ends; a probe without room restarts it). gang -> wait.
  using GrowWait = EngineGrowWait;
  std::map<std::string, GrowWait> grow_waits_;
  // "" when gang g (workload w) may be planned now; else why its growth waits. A probe that found
  // no room is left in *probe (the plan's own answer: not searched twice).
  std::string GrowWaitLocked(const Gang& g, const PodSchedulingSpec& spec, const Workload& w, std::optional<Decision>* probe);
  void DueGrowthsLocked(int64_t now);  // ended waits: the gangs' pending pods to activations_
  // Plans the heads of queues further below their fair share than w's (their pods into
  // *activate); returns a note naming the first, or "".
  std::string PlanAheadLocked(const Workload& w, std::vector<PodRefInfo>* activate);
  // Plans the head gang of `queue` if it fits now; returns its key ("" when nothing was planned).
  std::string PlanQueueHeadLocked(const std::string& queue, std::vector<PodRefInfo>* activate);
  void ReindexGangLocked(const std::string& key);  // after any change to the gang's pods
  // Sync defers the reindex to the end of its batch (a gang's members arrive together):
  // UpsertPodLocked / DeletePodLocked queue the key, FlushReindexLocked reindexes each once.
  void QueueReindexLocked(const std::string& key) {
    if (reindex_.empty() || reindex_.back() != key) reindex_.push_back(key);
  }
  void FlushReindexLocked();
  std::vector<std::string> reindex_;
  // The pod's cached spec (PodInfo::spec; an error when the engine never stored it).
  const StatusOr<PodSchedulingSpec>& SpecLocked(const PodInfo& p) const;
  // Parses p's spec into p.spec, sharing the previous pod's when p's labels and annotations are
  // the same (the members of one job arrive one after another).
  void ParseSpecLocked(PodInfo& p);
  // A request over core/api/limits.h's caps: p.spec_error says so, p.request is clamped to them.
  void BoundRequestLocked(PodInfo& p) const;
  std::string last_parsed_uid_;
  void UnindexGangLocked(Gang& g);                 // before the gang is erased

  EngineConfig cfg_;
  Clock clock_;
  EngineMetrics* metrics_ = nullptr;
  DecisionLog* decision_log_ = nullptr;
  std::unique_ptr<Scheduler> sched_;
  std::string epoch_;

  std::mutex mu_;  // guards everything below
  uint64_t generation_ = 0;
  int64_t decision_errors_ = 0, preempted_total_ = 0;  // under mu_: rollout signals (engine_rollout.cc)
  bool synced_ = false;
  std::map<std::string, NodeInfo> nodes_;  // merged over the doors (MergeNodeLocked)
  // Each door's own record of a node (index: FrontDoor); nodes_ is their merge.
  std::map<std::string, std::array<std::optional<NodeInfo>, 2>> node_doors_;
  // Which doors may use a merged node (bit 1 << door): it reports the node ready and schedulable.
  std::unordered_map<std::string, uint8_t> node_usable_;
  std::vector<PodRefInfo> activations_[2];  // per door: planned by another door's call
  void MergeNodeLocked(const std::string& name);
  // A pod the engine schedules: every Slurm job member, and pods naming this scheduler.
  bool OursLocked(const PodInfo& p) const {
    return p.door == FrontDoor::kSlurm || p.scheduler_name == cfg_.scheduler_name;
  }
  std::optional<EngineOpenSnapshot> snapshots_[2];  // a door's snapshot in progress (index: FrontDoor)
  void BeginResyncLocked(FrontDoor door);  // drops the door's plans, opens its snapshot
  void EndResyncLocked(FrontDoor door);    // removes what the snapshot did not name
  void DoorGaugesLocked(EngineGauges& out) const;  // engine_views.cc
  // GPUs of bound members by queue and door (index: FrontDoor), one walk over the bound pods,
  // kept until a pod changes (a quota refusal asks at every try of an Admit call).
  const std::map<std::string, std::array<int64_t, 2>>& BoundGpusByQueueDoorLocked() const;
  mutable std::optional<std::map<std::string, std::array<int64_t, 2>>> bound_by_queue_door_;
  // Metric label values (engine.cc): configured leaf queues, and a pod's queue bounded to those.
  std::vector<std::string> LeafQueueNamesLocked() const;
  std::string MetricQueueLocked(const std::string& queue) const;
  // "queue qa holds 16 GPUs: kubernetes 8, slurm 8" (bound members and plans; engine_plan.cc).
  std::string QueueDoorsNoteLocked(const std::string& queue) const;
  // --- the gap ledger (engine_sync.cc): what the engine last knew of each Slurm gang, so a
  // finished record from the door closes a gap exactly once.
  using GangMemory = EngineGangMemory;
  std::unordered_map<std::string, GangMemory> gang_memory_;
  void RememberGangLocked(const PodInfo& p, bool bound, bool released);
  void SettleFinishedLocked(const FinishedJobInfo& f);
  std::unordered_map<std::string, PodInfo> pods_;
  std::unordered_map<std::string, std::string> pod_gang_;   // uid -> gang key (Tidal pods only)
  std::map<std::string, Gang> gangs_;
  std::map<std::string, std::set<HeadKey>> pending_by_queue_;  // queue -> pending gangs in order
  std::set<std::pair<int64_t, std::string>> plan_deadlines_;   // (plan created_s, gang): expiry index
  std::unordered_map<std::string, std::pair<std::string, Resources>> charged_;  // uid -> node, request
  std::unordered_map<std::string, EngineBoundSince> bound_since_;  // bound pods on the timeline
  // Backfill reservations of pending gangs, keyed by plan id: kept across planning attempts,
  // refreshed by a dry cycle over every pending gang when a gang does not fit (at most once a
  // second), and honoured by every plan: nothing planned may delay them
  // (core/framework/scheduler.h). NodeIds of state_: moved by name when state_ is rebuilt
  // (book_nodes_ names the NodeIds it holds), cleared when the profile changes.
  std::shared_ptr<std::map<std::string, Reservation>> book_ = std::make_shared<std::map<std::string, Reservation>>();
  std::vector<std::string> book_nodes_;
  int64_t book_refreshed_s_ = INT64_MIN;
  bool book_stale_ = false;  // a refresh was skipped or a reservation dropped since the last one
  size_t refresh_prefix_ = 0;  // the refresh's prefix of the queue (0: cfg_.refresh_prefix)
  std::optional<ClusterState> state_;  // rebuilt lazily when nodes change

  // --- preemption (engine_preempt.cc)
  // The preemption view: state_'s nodes with every bound pod in a running allocation of its
  // workload (a Tidal gang: its gang key; any other pod: "pod:<ns>/<name>"). Maintained
  // incrementally: ApplyBoundLocked / ReleaseBoundLocked / UpsertPodLocked mark the pod, and
  // Preempt regroups only the workloads of marked pods; rebuilt only when state_ is (nodes
  // changed: EnsureStateLocked drops it). Plans in flight and the reservation book are laid over
  // it per call and taken off again.
  using VictimGroup = EngineVictimGroup;
  std::optional<ClusterState> pview_;
  std::unordered_map<std::string, VictimGroup> pgroups_;          // allocation id -> members
  std::unordered_map<std::string, std::string> pgroup_of_;        // uid -> allocation id
  std::set<std::string> pview_dirty_;                             // uids to regroup
  // Marks are applied lazily, at the next Preempt: a view no call has read for a while (no
  // preemption for days) would collect every pod bound since, so past twice the bound pods (and
  // 1024) it is dropped instead and rebuilt from charged_ when next needed.
  void MarkPreemptViewLocked(const std::string& uid) {
    if (!pview_ || (!charged_.count(uid) && !pgroup_of_.count(uid))) return;
    pview_dirty_.insert(uid);
    if (pview_dirty_.size() > 2 * charged_.size() + 1024) DropPreemptViewLocked();
  }
  void DropPreemptViewLocked() {
    pview_.reset();
    pgroups_.clear();
    pgroup_of_.clear();
    pview_dirty_.clear();
  }
  // Capacity freed for a preemptor (engine/preempt_hold.h).
  std::map<std::string, PreemptHold> holds_;          // plan id -> hold
  // Holds whose victims have all gone: their preemptor's pending pods go to TakeActivations.
  void ActivateHeldLocked();
  std::map<std::string, int64_t> pdb_protected_;      // allocation id -> protected until (s)
  void EnsurePreemptViewLocked();
  void RegroupLocked(const std::string& id);
  Allocation GroupAllocationLocked(const std::string& id, const VictimGroup& g) const;
  // Drops holds whose reservation or gang is gone or that outlived plan_ttl_s, and expired
  // PDB protections. Called from ExpirePlansLocked.
  void ExpireHoldsLocked();
  bool HeldLocked(const std::string& plan_id) const { return holds_.count(plan_id) > 0; }
  // Plans in flight and the book's reserved GPUs that `w` may not use, as never-victim allocations.
  std::vector<Allocation> OverlaysLocked(const Workload& w) const;
  void HoldLocked(const Workload& w, const PostFilterResult& pr, const std::map<std::string, std::vector<std::string>>& shrunk,
                  PreemptResult& out);
  // The pods each elastic shrink gives back (workload -> uids): the newest on each node named.
  std::map<std::string, std::vector<std::string>> ShrinkPodsLocked(const std::vector<ShrinkAction>& shrinks) const;
  // Why the gang waits instead of choosing again ("" = it may choose).
  std::string AwaitingVictimsLocked(const std::string& plan_id) const;
  void DropHoldLocked(const std::string& plan_id);
  // Dry cycles (TimelineInputsLocked): holds keep their nodes until the gang's expected end.
  std::vector<Allocation> HoldAllocationsLocked() const;
  // --- end preemption
  QuotaLedger ledger_;                 // the one ledger; plugins hold a pointer to it
  // HPA-derived headroom (engine_autoscalers.cc, autoscalers.h), fed into ledger_.
  AutoscalerBook autoscalers_;
  std::vector<std::string> autoscaler_notes_;  // HPAs kept but not counted (/queues)
  void ApplyAutoscalersLocked(const SyncBatch& b, Status* result);  // Sync's HPA part
  void RederiveHeadroomLocked();  // after an HPA change, a resync's end or a reload

  // --- the disruption path (engine_disruptions.cc)
  DisruptionBook disruptions_;
  // Opens a disruption of workload `id` for its pods `uids` (those still using capacity), with
  // the notice the workload asks for (tidal.dev/checkpoint-on-notice, at most max_notice_s);
  // returns the notice given (s), or -1 when nothing was opened (one is open already, no pods).
  int64_t OpenDisruptionLocked(const std::string& id, DisruptionCause cause, const std::vector<std::string>& uids,
                               std::string reason, int64_t notice_cap_s = INT64_MAX);
  void DisruptionSeenLocked(const PodInfo& p);        // after an upsert: checkpoints, finished pods
  void DisruptionGoneLocked(const std::string& uid);  // the pod is gone
  void CloseDisruptionLocked(const DisruptionRecord& r);
  void OpenOverdueLocked(int64_t now);                // runtime limits, by workload
  std::vector<OverduePod> OverdueLocked(int64_t now);  // Overdue's body (engine_reservations.cc)
  // A hold is dropped: its victims' preemption disruptions not yet evicted are cancelled.
  void CancelHoldDisruptionsLocked(const PreemptHold& h);
  // Preempt's victims: one disruption each (out.victim_notice: the notice each gets).
  void OpenPreemptionDisruptionsLocked(const std::string& preemptor, PreemptResult& out);
  // The workload a bound pod belongs to for disruptions: its gang key, or "pod:<ns>/<name>".
  std::string WorkloadIdLocked(const PodInfo& p) const;
  // --- node health, lost members and drains (engine_health.cc)
  std::map<std::string, NodeClose> drains_;  // node -> its drain (cause drain or decommission); state file "drains"
  // --- node closes (engine_closes.cc): computed with state_ (EnsureStateLocked) from drains_ and
  // cfg_.maintenance; valid until state_valid_until_ (the next close's start or end).
  std::map<std::string, NodeClose> closes_;     // node -> its current or upcoming close
  std::vector<int64_t> close_from_, close_gpus_;  // per NodeId of state_: an upcoming close's start, the node's GPUs (empty: none)
  int64_t state_valid_until_ = INT64_MAX;
  bool CloseOfLocked(const std::string& node, int64_t now, NodeClose* out) const;
  void ComputeClosesLocked(int64_t now);
  std::vector<NodeId> ClosingNodesLocked() const;  // dry cycles: closing nodes (of state_) take no reservation
  void ForgetDecommissionedLocked(const std::string& node);  // its last door deleted it
  void CancelCalledOffClosesLocked();  // after a drain is cancelled: its victims still in notice keep running
  // --- perishable windows (engine_perishable.cc): the time before a close
  // The notice a workload that may fill windows would get (perishable.fill), -1 when it may not.
  int64_t FillNoticeLocked(const Workload& w) const;
  // At each poll: the window GPU-seconds offered and filled since the last (metrics).
  void CountPerishableLocked(int64_t now);
  int64_t perishable_counted_s_ = 0;
  // "" or, for a gang with members on nodes before a close it outlives, when it has to go.
  std::string BorrowedTimeLocked(const Gang& g, int64_t* until) const;
  // --- how work ended, the learned runtime correction (engine_runtime.cc, engine/workload_ends.h)
  WorkloadEnds ends_;
  void NoteMemberEndLocked(const std::string& uid, WorkloadEnd how);  // a member ends (before its release)
  void FinishedJobLocked(const FinishedJobInfo& f);  // SettleFinishedLocked, then how it ended (FinishedJob.end)
  void FinishWorkloadLocked(FrontDoor door, WorkloadEnd end, const std::string& queue, int64_t run_s, int64_t declared_s);
  // Declared runtime x the queue's ratio when it may fill windows by it (preemptible), else 0; *note: explain's words.
  int64_t CorrectedRuntimeLocked(const Workload& w, std::string* note) const;
  int64_t CorrectedFillByLocked(const Workload& w) const;  // now + that + kDrainSlackS, or INT64_MAX
  std::string RuntimeNoteLocked(const Gang& g) const;      // explain's "runtime:" ("" without a declared runtime)
  void RuntimeGaugesLocked(EngineGauges& out) const;
  // --- fillers in the gaps before reserved starts (engine_gap_fill.cc, engine/gap_fill.h): the same rule
  GapFills gap_;
  // Is book entry `id` (starting at start_s) left off for a filler that must be gone by fill_until?
  bool GapOpenLocked(const std::string& id, int64_t start_s, int64_t fill_until) const;
  // The fillers on reservation `id`'s nodes that must leave for it to start (*early: it could start now but for them).
  // `on`: the bound pods on (at least) its nodes, by node.
  std::vector<GapFiller> GapBlockersLocked(const std::string& id, const Reservation& res, int64_t now,
                                           const std::map<std::string, std::vector<const PodInfo*>>& on, bool* early) const;
  void OpenGapNoticesLocked(int64_t now);  // at each poll: notices due (cause reservation), withdrawn, activations
  std::vector<int64_t> GapGpusLocked(int64_t now) const;  // per NodeId: GPUs reserved ahead in a gap (empty: none)
  void CountGapsLocked(double dt, double* offered, double* filled) const;
  std::string GapBorrowedLocked(const Gang& g, int64_t* until) const;  // explain on a filler
  std::string GapFillersNoteLocked(const std::string& plan_id) const;  // explain on the reserved gang
  // --- pools lending and reclaiming nodes (engine_lending.cc; the rules: core/state/lending.h)
  PoolLending lending_;
  std::string HomePoolLocked(const std::string& queue) const;  // the named pool the queue owns ("" none)
  static std::string OwnerPoolOf(const Node& node);            // its owner pool by name ("" shared)
  // Whether work of `door` and `queue` (a pod) borrows a node of `pool` (neither owner nor another scheduler's).
  bool BorrowsLocked(FrontDoor door, const std::string& queue, const std::string& pool) const;
  bool PodBorrowsLocked(const PodInfo& p, const std::string& pool) const;
  void LendLocked(int64_t now);              // at each poll: lend, reclaim (borrowers disrupted), return
  void ApplyLoanLocked(Node& n) const;       // ToNode: a lent node is in the borrower door's pool
  void LentGaugesLocked(EngineGauges& out) const;
  std::vector<std::string> LentNodesLocked(FrontDoor owner) const;  // the owner door's lent nodes
  std::string LoanNoteLocked(const std::string& node) const;  // explain: "node X is lent by pool ..."
  // A Kubernetes node's tidal.dev/drain-by and tidal.dev/available-until annotations (nullptr: its
  // Kubernetes record is gone): the close every replica sees; a bad value is a warning on the node
  // and changes nothing.
  void AnnotatedDrainLocked(const std::string& node, const std::map<std::string, std::string>* annotations,
                            std::vector<NodeWarningInfo>* warnings);
  bool closes_called_off_ = false;  // an annotated drain went: CancelCalledOffClosesLocked at the next poll
  std::unordered_map<std::string, int64_t> unhealthy_since_;   // node -> unhealthy since (s)
  std::map<std::string, std::string> lost_members_;            // gang -> "<member> <how>" it lost (since the last poll)
  void TrackHealthLocked(const std::string& node);             // after nodes_[node] changed or went
  void OpenUnhealthyLocked(int64_t now);
  void OpenMemberLostLocked();
  void OpenDrainsLocked(int64_t now);
  // A bound member is deleted or failed; `how` ("failed", "was deleted", "is being deleted") goes
  // into the disruption's reason.
  void NoteMemberLostLocked(const PodInfo& p, const char* how);
  // Our bound pods (Tidal's and Slurm's) by node, for the named nodes.
  std::map<std::string, std::vector<const PodInfo*>> OurPodsOnLocked(const std::set<std::string>& nodes) const;
  // The pods of workload `id` a disruption for `nodes` takes: all of a rigid gang's, or of an
  // elastic one that would fall below its gang-min; else only its members on those nodes.
  std::vector<std::string> VictimPodsLocked(const std::string& id, const std::set<std::string>& nodes) const;
  // When a bound pod is expected to end by its declared runtime limit (0 = unknown).
  int64_t ExpectedEndLocked(const PodInfo& p) const;
  std::vector<NodeDrainInfo> DrainReportLocked(int64_t now) const;
  void SaveDrainsLocked(nlohmann::json& state) const;
  Status LoadDrainsLocked(const nlohmann::json& state);
  // --- end disruption path

  // --- the doors' nodes across restarts (engine_doors.cc); under mu_, but door_memory_version_ (read without it):
  using DoorMemory = EngineDoorMemory;
  std::array<DoorMemory, 2> door_memory_;
  std::atomic<uint64_t> door_memory_version_{0};
  // Its remembered nodes (all nodes, when none are known and frontDoors expects it) take no new
  // work until its first resync since the start (or since it stood by). Reported: and it is served.
  bool DoorAwaitedLocked(int door) const;
  bool DoorReportedAwaitedLocked(int door) const;
  int GatingDoorLocked(const std::string& node) const;  // the door gating it, or -1
  std::string DoorGateNoteLocked() const;               // "node-40: waiting for ..." or ""
  void RememberDoorNodeLocked(FrontDoor door, const std::string& node, bool reported);
  void DoorResyncedLocked(FrontDoor door);  // its snapshot ended: remember its nodes, lift its gate
  void LiftDoorGateLocked(FrontDoor door);
  // Every pending Kubernetes pod of a Tidal gang, for TakeActivations: capacity came back that
  // kube-scheduler sees no event for (a door's gate lifted, a drain cancelled).
  void ActivateKubernetesPendingLocked();
  void ActivatePendingLocked(const Gang& g);  // its pending pods, to activations_ (Kubernetes)
  void SaveDoorMemoryLocked(nlohmann::json& state) const;
  Status LoadDoorMemoryLocked(const nlohmann::json& state);
  std::vector<std::string> AwaitedDoorNamesLocked() const;
};

}  // namespace tidal
