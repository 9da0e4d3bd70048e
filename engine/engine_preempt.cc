// Engine: preemption on the Kubernetes path (Preempt, the shim's PostFilter; what the front doors
// report back, Evicted, is in engine_victims.cc).
//
// Steps of one Preempt call, each a function below:
//   1. the view (EnsurePreemptViewLocked + the overlays): an INCREMENTALLY MAINTAINED second
//      ClusterState, pview_, over the same nodes as state_, in which every bound pod sits in a
//      running allocation of its workload (a Tidal gang: its gang key; any other pod:
//      "pod:<ns>/<name>", never a victim). ApplyBoundLocked / ReleaseBoundLocked / UpsertPodLocked
//      only mark the pod (MarkPreemptViewLocked); a call regroups the workloads of marked pods and
//      nothing else. It is rebuilt from scratch only when state_ is (nodes changed). Per call, plans
//      in flight and the reservation book are laid over it as allocations that are never victims,
//      and taken off again when the call returns (Overlay);
//   2. choose (ChooseVictimsLocked): the live profile's search + PostFilter on that view. A
//      reservation counts where the preemptor would still run when it starts (the rule PlanPod's
//      ReservationView applies), so no victim is chosen for capacity the preemptor may not use;
//   3. hold (HoldLocked): where the gang lands once the victims are gone (the same search on the
//      view without them) becomes its reservation in the book, starting now: every other plan
//      honours it while the victims terminate; the gang's own PlanPod starts there. The hold goes
//      when the gang is planned or gone, when plan_ttl_s passes, or when the front door reports
//      a victim it could not evict whole (Evicted: PDBs).
// Victims are never: pods of other schedulers, plans in flight, reserved capacity, workloads with a
// terminating pod (already going: Allocation::terminating, and never-victim priority here too),
// workloads the front door reported PDB-protected (for plan_ttl_s). Run time (minRuntime, work
// lost) counts from the pod's start (PodInfo::start_unix), else from when the engine saw it bound.
// tidal_preemptions_total counts victims the front door reports evicted (Evicted), not proposals.
// Victims on the Slurm door (disruption.preemptSlurmJobs, never a job Slurm will not requeue) are
// returned by workload but not among the pods the shim evicts: tidal-slurm requeues them from its
// Disruptions poll, and the hold waits for them (PreemptHold::handed_off).
//
// Threading and ownership: as engine.cc: every public method takes mu_, the *Locked ones run
// under it. pview_, pgroups_, pgroup_of_, pview_dirty_, holds_ and pdb_protected_ are the
// Engine's (engine.h, block "preemption"); the hold's reservation lives in book_.
#include <algorithm>
#include <map>
#include <set>

#include "core/api/duration.h"
#include "engine/engine.h"
#include "core/state/transaction.h"

namespace tidal {

namespace {

constexpr int32_t kNeverVictim = INT32_MAX;
// tidal-slurm's annotation on the members of a job Slurm will not requeue (shim/slurm/to_engine.cc).
constexpr const char* kSlurmRequeueKey = "slurm.tidal.dev/requeue";

// tidal.dev/gang-leader "true": the member an elastic gang gives back last (tidal-slurm marks a
// job's batch host, which Slurm never takes from a running job; a user may mark a rendezvous host).
// A label or an annotation, the annotation winning, as every key of pod_spec.h.
bool IsGangLeader(const PodInfo& p) {
  const std::string* v = podkeys::Lookup(p.labels, p.annotations, kLabelGangLeader);
  return v != nullptr && *v == "true";
}

// Allocations laid over the view for one call; taken off again (in reverse) when it goes.
class Overlay {
 public:
  explicit Overlay(ClusterState& view) : view_(view) {}
  Overlay(const Overlay&) = delete;
  Overlay& operator=(const Overlay&) = delete;
  ~Overlay() {
    for (auto it = ids_.rbegin(); it != ids_.rend(); ++it) (void)view_.RemoveRunning(*it);
  }
  void Add(Allocation a) {
    std::string id = a.workload.id;
    if (view_.AddRunning(std::move(a)).ok()) ids_.push_back(std::move(id));
  }

 private:
  ClusterState& view_;
  std::vector<std::string> ids_;
};

void AddMember(std::vector<MemberAssignment>& as, NodeId n) {
  auto it = std::find_if(as.begin(), as.end(), [n](const MemberAssignment& m) { return m.node == n; });
  if (it == as.end()) {
    as.push_back({n, 1});
  } else {
    it->members++;
  }
}

}  // namespace

// --- 1. the view -------------------------------------------------------------------------------------

void Engine::EnsurePreemptViewLocked() {
  EnsureStateLocked();  // drops pview_ when it rebuilds state_ (the NodeIds change)
  if (!pview_) {
    // Same nodes, same order as state_ (both built from nodes_ by ToNode), so NodeIds agree.
    std::vector<Node> nodes;
    nodes.reserve(nodes_.size());
    for (const auto& [name, n] : nodes_) nodes.push_back(ToNode(n));
    auto built = ClusterState::Build(cfg_.levels, std::move(nodes));
    if (!built.ok()) built = ClusterState::Build(cfg_.levels, {});
    pview_ = std::move(built).value();
    pgroups_.clear();
    pgroup_of_.clear();
    pview_dirty_.clear();
    for (const auto& [uid, charge] : charged_) pview_dirty_.insert(uid);
  }
  if (pview_dirty_.empty()) return;
  std::set<std::string> touched;
  for (const auto& uid : pview_dirty_) {
    if (auto old = pgroup_of_.find(uid); old != pgroup_of_.end()) {
      pgroups_[old->second].members.erase(uid);
      touched.insert(old->second);
      pgroup_of_.erase(old);
    }
    auto c = charged_.find(uid);
    auto p = pods_.find(uid);
    if (c == charged_.end() || p == pods_.end()) continue;
    const NodeId n = pview_->FindNode(c->second.first);
    if (n == kNoNode) continue;
    auto g = pod_gang_.find(uid);
    const std::string id = g != pod_gang_.end() ? g->second : "pod:" + p->second.Key();
    pgroups_[id].members[uid] = {n, c->second.second};
    pgroup_of_[uid] = id;
    touched.insert(id);
  }
  pview_dirty_.clear();
  for (const auto& id : touched) RegroupLocked(id);
}

void Engine::RegroupLocked(const std::string& id) {
  (void)pview_->RemoveRunning(id);
  auto g = pgroups_.find(id);
  if (g == pgroups_.end()) return;
  if (g->second.members.empty()) {
    pgroups_.erase(g);
    return;
  }
  (void)pview_->AddRunning(GroupAllocationLocked(id, g->second));
}

Allocation Engine::GroupAllocationLocked(const std::string& id, const VictimGroup& g) const {
  Allocation a;
  a.workload.id = id;
  a.workload.priority = kNeverVictim;
  a.workload.members = 0;  // counted below (Workload's default is 1: one member too many)
  a.start_time_s = INT64_MAX;
  bool ours = false, terminating = false, slurm = false, no_requeue = false;
  const PodInfo* first = nullptr;
  int32_t priority = INT32_MIN;
  std::map<NodeId, int64_t> newest;  // per node: the latest start of a member there
  std::set<NodeId> leads;            // nodes of the gang's leader (tidal.dev/gang-leader)
  for (const auto& [uid, where] : g.members) {
    const auto& [n, req] = where;
    a.workload.per_member.gpus = std::max(a.workload.per_member.gpus, req.gpus);
    a.workload.per_member.cpu_milli = std::max(a.workload.per_member.cpu_milli, req.cpu_milli);
    a.workload.per_member.memory_bytes = std::max(a.workload.per_member.memory_bytes, req.memory_bytes);
    a.workload.members++;
    AddMember(a.assignments, n);
    // Run time counts from the pod's real start, else from when the engine saw it bound (never
    // from its creation: a pod that queued for an hour has not run for an hour).
    int64_t since = clock_();
    auto p = pods_.find(uid);
    auto b = bound_since_.find(uid);
    if (p != pods_.end() && p->second.start_unix > 0) {
      since = p->second.start_unix;
    } else if (b != bound_since_.end()) {
      since = b->second.since_s;
    }
    a.start_time_s = std::min(a.start_time_s, since);
    auto& latest = newest.try_emplace(n, since).first->second;
    latest = std::max(latest, since);
    if (p == pods_.end()) continue;
    if (IsGangLeader(p->second)) leads.insert(n);
    terminating = terminating || p->second.terminating;
    if (p->second.door == FrontDoor::kSlurm) {
      slurm = true;
      auto rq = p->second.annotations.find(kSlurmRequeueKey);
      no_requeue = no_requeue || (rq != p->second.annotations.end() && rq->second == "false");
    }
    if (pod_gang_.count(uid)) {
      ours = true;
      priority = std::max(priority, p->second.priority);
      if (first == nullptr) first = &p->second;
    }
  }
  // Nodes of the newest members first, the leader's last: an elastic gang's shrink gives back
  // members in this order.
  std::stable_sort(a.assignments.begin(), a.assignments.end(), [&](const MemberAssignment& x, const MemberAssignment& y) {
    const bool lx = leads.count(x.node) > 0, ly = leads.count(y.node) > 0;
    return lx != ly ? ly : newest[x.node] > newest[y.node];
  });
  // A rigid gang's bound pods are evicted whole; an elastic gang (gang-min) may give back members
  // down to its minimum (the plugin's shrinks; ShrinkPodsLocked picks the pods).
  a.workload.min_members = a.workload.members;
  for (const auto& [uid, where] : g.members) {
    if (auto p = pods_.find(uid); p != pods_.end()) {
      a.workload.last_checkpoint_s = std::max(a.workload.last_checkpoint_s, UsableCheckpoint(p->second.last_checkpoint_unix, clock_()));
    }
  }
  if (ours && first != nullptr) {
    a.workload.priority = priority;
    if (const auto& ps = SpecLocked(*first); ps.ok()) {
      a.workload.preemptible = ps->preemptible;
      a.workload.queue = ps->queue;
      a.workload.checkpoint_interval_s = ps->checkpoint_interval_s;
      a.workload.checkpoints_on_notice = ps->checkpoint_on_notice_s > 0 && cfg_.max_notice_s > 0;
      if (!ps->gang.empty() && ps->gang_min < ps->gang_size) {
        a.workload.min_members = std::clamp(ps->gang_min, 1, a.workload.members);
      }
      a.workload.workload_class = ps->workload_class;
    }
  }
  a.terminating = terminating;
  // Already going, or the front door cannot evict it whole (PDBs): not a victim, whatever the
  // plugin would say. Its capacity still counts as used until its pods are gone.
  // A Slurm job is tidal-slurm's to requeue (its Disruptions poll); one Slurm would not requeue
  // would be lost, and with disruption.preemptSlurmJobs off none is a victim.
  if (terminating || pdb_protected_.count(id) || (slurm && (no_requeue || !cfg_.preempt_slurm_jobs))) {
    a.workload.priority = kNeverVictim;
    a.workload.preemptible = false;
  }
  return a;
}

// --- 2. choose ---------------------------------------------------------------------------------------

PreemptResult Engine::Preempt(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  PreemptResult out;
  auto gk = pod_gang_.find(uid);
  if (gk == pod_gang_.end()) return out.status = Status::Error("pod uid " + uid + " is not a known Tidal pod", "engine"), out;
  auto git = gangs_.find(gk->second);
  auto pit = pods_.find(uid);
  if (git == gangs_.end() || pit == pods_.end()) {
    return out.status = Status::Error("pod uid " + uid + " is not a known Tidal pod", "engine"), out;
  }
  Gang& g = git->second;
  if (g.plan) return out.status = Status::Unschedulable("gang " + g.key + " already has a plan", "preemption"), out;
  const auto& spec = SpecLocked(pit->second);
  if (!spec.ok()) return out.status = spec.status(), out;
  out.queue = spec->queue;
  auto w = GangWorkloadLocked(g, *spec, nullptr);
  if (!w) return out.status = Status::Unschedulable("gang " + g.key + " has nothing left to place", "preemption"), out;
  ExpireHoldsLocked();
  if (std::string waiting = AwaitingVictimsLocked(w->id); !waiting.empty()) {
    g.last_reason = waiting;
    return out.status = Status::Unschedulable(waiting, "preemption"), out;
  }
  DropHoldLocked(w->id);  // choosing afresh
  EnsurePreemptViewLocked();
  Overlay overlay(*pview_);
  for (auto& a : OverlaysLocked(*w)) overlay.Add(std::move(a));
  Decision d = sched_->ScheduleOne(*pview_, *w, clock_());
  if (d.outcome == Outcome::kPlaced || d.outcome == Outcome::kWaiting) {
    // Room was freed meanwhile: undo the placement on the view; the gang simply retries.
    (void)pview_->RemoveRunning(w->id);
    ledger_.Uncharge(w->id);
    return out.status = Status::Unschedulable("the gang fits now without preemption; retry", "preemption"), out;
  }
  if (d.preemption.victims.empty() && d.preemption.shrinks.empty()) {
    return out.status = Status::Unschedulable("no victims: " + d.explanation, "preemption"), out;
  }
  const auto shrunk = ShrinkPodsLocked(d.preemption.shrinks);
  HoldLocked(*w, d.preemption, shrunk, out);
  // Each victim workload with its pods and the door that evicts it: the caller evicts the
  // Kubernetes ones (`victims`), tidal-slurm requeues the Slurm jobs from its Disruptions poll.
  auto add_victim = [&](const std::string& id, const std::vector<std::string>& uids) {
    std::vector<PodRefInfo> pods;
    FrontDoor door = FrontDoor::kKubernetes;
    std::string queue;
    for (const auto& u : uids) {
      auto p = pods_.find(u);
      if (p == pods_.end()) continue;
      pods.push_back({p->second.uid, p->second.ns, p->second.name});
      if (p->second.door == FrontDoor::kSlurm) door = FrontDoor::kSlurm;
      if (const auto& ps = SpecLocked(p->second); queue.empty() && ps.ok()) queue = ps->queue;
    }
    out.victim_queues.push_back(queue);
    if (door == FrontDoor::kKubernetes) out.victims.insert(out.victims.end(), pods.begin(), pods.end());
    out.victim_gangs.emplace_back(id, std::move(pods));
    out.victim_doors.push_back(door);
  };
  for (const auto& v : d.preemption.victims) {
    std::vector<std::string> uids;
    if (auto grp = pgroups_.find(v); grp != pgroups_.end()) {
      for (const auto& [puid, where] : grp->second.members) uids.push_back(puid);
    }
    add_victim(v, uids);
  }
  for (const auto& [id, uids] : shrunk) add_victim(id, uids);  // elastic gangs give back their surplus only
  if (auto h = holds_.find(w->id);
      h != holds_.end() && std::find(out.victim_doors.begin(), out.victim_doors.end(), FrontDoor::kSlurm) != out.victim_doors.end()) {
    h->second.handed_off = true;
  }
  out.reason = d.preemption.reason;
  OpenPreemptionDisruptionsLocked(g.key, out);
  out.lost_gpu_seconds = d.preemption.lost_gpu_seconds;
  if (decision_log_ != nullptr) {
    std::vector<std::string> shrinking;
    for (const auto& [id, uids] : shrunk) shrinking.push_back(id + " -" + std::to_string(uids.size()));
    decision_log_->Write({{"ts", clock_()}, {"workload", g.key}, {"outcome", "preempting"}, {"victims", d.preemption.victims},
                          {"shrinks", shrinking},
                          {"domain", out.nominated_domain}, {"reason", out.reason}, {"lost_gpu_seconds", out.lost_gpu_seconds}});
  }
  g.last_reason = "preempting " + std::to_string(d.preemption.victims.size()) + " workload(s)" +
                  (shrunk.empty() ? "" : " and shrinking " + std::to_string(shrunk.size()) + " elastic gang(s)") + " in " +
                  out.nominated_domain;
  return out;
}

std::vector<Allocation> Engine::OverlaysLocked(const Workload& w) const {
  std::vector<Allocation> out;
  // Plans in flight: never victims.
  for (const auto& [key, other] : gangs_) {
    if (!other.plan) continue;
    Allocation a;
    a.workload.id = "plan:" + key;
    a.workload.per_member = other.plan->per_member;
    a.workload.priority = kNeverVictim;
    a.start_time_s = clock_();
    for (const auto& sl : other.plan->slots) {
      const NodeId n = pview_->FindNode(sl.node);
      if (n != kNoNode) AddMember(a.assignments, n);
    }
    for (const auto& as : a.assignments) a.workload.members += as.members;
    out.push_back(std::move(a));
  }
  // The book: on a node where a reservation starts before the preemptor would end, the GPUs it
  // needs are not the preemptor's (PlanPod's rule: core/framework/placement.cc).
  ReservationView rv;
  ReservationViewLocked(w.id, rv);
  if (rv.from.empty()) return out;
  const int64_t ends_at = clock_() + sched_->profile().backfill().RuntimeOf(w);
  for (NodeId n = 0; n < state_->node_count(); ++n) {
    const size_t i = static_cast<size_t>(n);
    if (rv.from[i] == INT64_MAX || ends_at <= rv.from[i] || rv.gpus[i] <= 0) continue;
    const NodeId vn = pview_->FindNode(state_->node(n).name);
    if (vn == kNoNode) continue;
    Allocation a;
    a.workload.id = "reserved:" + state_->node(n).name;
    a.workload.per_member.gpus = rv.gpus[i];
    a.workload.members = 1;
    a.workload.priority = kNeverVictim;
    a.assignments = {{vn, 1}};
    a.start_time_s = clock_();
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<Allocation> Engine::HoldAllocationsLocked() const {
  // A dry cycle's timeline: each hold keeps its nodes from now until the gang's expected end, so
  // no reservation is planned onto capacity being freed for a preemptor.
  std::vector<Allocation> out;
  for (const auto& [id, h] : holds_) {
    auto r = book_->find(id);
    if (r == book_->end()) continue;
    Allocation a;
    a.workload.id = "hold:" + id;
    a.workload.per_member = r->second.per_member;
    a.workload.priority = kNeverVictim;
    a.workload.runtime_limit_s = std::max<int64_t>(1, r->second.end_s - r->second.start_s);
    for (const auto& as : r->second.assignments) a.workload.members += as.members;
    a.assignments = r->second.assignments;
    a.start_time_s = r->second.start_s;
    out.push_back(std::move(a));
  }
  return out;
}

// --- 3. hold -----------------------------------------------------------------------------------------

std::map<std::string, std::vector<std::string>> Engine::ShrinkPodsLocked(const std::vector<ShrinkAction>& shrinks) const {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& s : shrinks) {
    auto grp = pgroups_.find(s.workload);
    if (grp == pgroups_.end() || s.members <= 0) continue;
    auto& chosen = out[s.workload];
    // The newest-started members on that node go first: they have done the least work.
    std::vector<std::pair<std::pair<bool, int64_t>, std::string>> on;
    for (const auto& [uid, where] : grp->second.members) {
      if (where.first != s.node || std::find(chosen.begin(), chosen.end(), uid) != chosen.end()) continue;
      int64_t since = 0;
      if (auto p = pods_.find(uid); p != pods_.end() && p->second.start_unix > 0) {
        since = p->second.start_unix;
      } else if (auto b = bound_since_.find(uid); b != bound_since_.end()) {
        since = b->second.since_s;
      }
      // The leader last (a Slurm job's batch host: Slurm cannot take it from the job).
      auto p = pods_.find(uid);
      on.emplace_back(std::pair(p != pods_.end() && IsGangLeader(p->second), -since), uid);
    }
    std::sort(on.begin(), on.end());
    for (size_t i = 0; i < on.size() && i < static_cast<size_t>(s.members); ++i) chosen.push_back(on[i].second);
    if (chosen.empty()) out.erase(s.workload);
  }
  return out;
}

void Engine::HoldLocked(const Workload& w, const PostFilterResult& pr,
                        const std::map<std::string, std::vector<std::string>>& shrunk, PreemptResult& out) {
  out.nominated_domain = pr.nominated_domain;
  // Where the gang lands once the victims are gone (and the elastic ones shrunk): the search on
  // the view without them, undone after.
  std::vector<MemberAssignment> at;
  {
    std::vector<Allocation> before;  // shrunk victims as they were
    for (const auto& [id, uids] : shrunk) {
      if (auto a = pview_->running().find(id); a != pview_->running().end()) before.push_back(a->second);
    }
    for (const auto& sh : pr.shrinks) (void)pview_->ReleaseMembers(sh.workload, sh.node, sh.members);
    Transaction txn(*pview_);
    for (const auto& v : pr.victims) (void)txn.Evict(v);
    Decision after = sched_->ScheduleOne(*pview_, w, clock_());
    if (after.outcome == Outcome::kPlaced || after.outcome == Outcome::kWaiting) {
      at = after.placement.assignments;
      (void)pview_->RemoveRunning(w.id);
      ledger_.Uncharge(w.id);
    }
    txn.Discard();
    for (auto& a : before) {
      const std::string id = a.workload.id;
      (void)pview_->RemoveRunning(id);
      (void)pview_->AddRunning(std::move(a));
    }
  }
  PreemptHold hold;
  hold.reason = pr.reason;
  hold.created_s = clock_();
  for (const auto& v : pr.victims) {
    PreemptHold::Victim hv;
    hv.id = v;
    if (auto grp = pgroups_.find(v); grp != pgroups_.end()) {
      for (const auto& [puid, where] : grp->second.members) hv.uids.push_back(puid);
    }
    hold.victims.push_back(std::move(hv));
  }
  for (const auto& [id, uids] : shrunk) {
    PreemptHold::Victim hv;
    hv.id = id;
    hv.uids = uids;
    hold.victims.push_back(std::move(hv));
  }
  // Work lost is reported for the whole choice; apportion it by victim GPUs for the metric.
  int64_t total_gpus = 0;
  std::vector<int64_t> gpus(hold.victims.size(), 0);
  for (size_t i = 0; i < hold.victims.size(); ++i) {
    for (const auto& u : hold.victims[i].uids) {
      if (auto c = charged_.find(u); c != charged_.end()) gpus[i] += c->second.second.gpus;
    }
    total_gpus += gpus[i];
  }
  for (size_t i = 0; i < hold.victims.size(); ++i) {
    hold.victims[i].lost_gpu_seconds =
        total_gpus > 0 ? pr.lost_gpu_seconds * static_cast<double>(gpus[i]) / static_cast<double>(total_gpus)
                       : pr.lost_gpu_seconds / static_cast<double>(hold.victims.size());
  }
  holds_[w.id] = std::move(hold);
  if (at.empty()) return;  // no placement to hold (the victims alone make room only with others' help)
  Reservation r;
  r.workload = w.id;
  r.start_s = clock_();
  r.per_member = w.per_member;
  r.end_s = r.start_s + sched_->profile().backfill().RuntimeOf(w);
  for (const auto& a : at) {
    const NodeId n = state_->FindNode(pview_->node(a.node).name);
    if (n != kNoNode) r.assignments.push_back({n, a.members});
  }
  if (r.assignments.size() == 1) out.nominated_domain = state_->node(r.assignments[0].node).name;
  (*book_)[w.id] = std::move(r);
}

std::string Engine::AwaitingVictimsLocked(const std::string& plan_id) const {
  auto h = holds_.find(plan_id);
  if (h == holds_.end() || !book_->count(plan_id)) return {};
  int32_t going = 0, left = 0;
  for (const auto& v : h->second.victims) {
    for (const auto& u : v.uids) {
      auto p = pods_.find(u);
      if (p == pods_.end() || !p->second.UsesCapacity()) {
        ++going;  // gone already
      } else if (p->second.terminating) {
        ++going;
        ++left;
      } else {
        ++left;
      }
    }
  }
  // Evicted (reported, or seen terminating / gone), given notice, or handed to tidal-slurm, and
  // not all gone yet: wait for them; choosing again now would take more victims for the same room.
  const PreemptHold& hold = h->second;
  if (left == 0 || (!hold.evicted && hold.notice_s == 0 && going == 0 && !hold.handed_off)) return {};
  if (hold.handed_off && hold.notice_s == 0) {
    return "waiting for " + std::to_string(left) + " victim pod(s) to go (Slurm jobs are requeued by tidal-slurm); " +
           "their capacity is held for the gang";
  }
  if (!hold.evicted && going == 0) {
    return "waiting for " + std::to_string(left) + " victim pod(s) given notice to checkpoint (up to " +
           FormatDurationSeconds(hold.notice_s) + "); their capacity is held for the gang";
  }
  return "waiting for " + std::to_string(left) + " evicted victim pod(s) to terminate; their capacity is held for the gang";
}

void Engine::DropHoldLocked(const std::string& plan_id) {
  auto h = holds_.find(plan_id);
  if (h == holds_.end()) return;
  CancelHoldDisruptionsLocked(h->second);
  holds_.erase(h);
  if (book_->erase(plan_id) > 0) book_stale_ = true;
}

void Engine::ExpireHoldsLocked() {
  const int64_t now = clock_();
  for (auto it = holds_.begin(); it != holds_.end();) {
    auto g = gangs_.find(it->first.substr(5));  // "plan:<gang>"
    const bool expired = now - it->second.created_s > cfg_.plan_ttl_s + it->second.notice_s;
    // Gone, planned (PlanPod erased its reservation), its reservation dropped (a node left, the
    // profile changed), or given up after the plan TTL.
    if (g != gangs_.end() && !g->second.plan && book_->count(it->first) && !expired) {
      ++it;
      continue;
    }
    if (book_->erase(it->first) > 0) book_stale_ = true;
    if (expired && g != gangs_.end() && !g->second.plan) {
      g->second.last_reason = "preemption hold released after " + std::to_string(cfg_.plan_ttl_s) + "s";
    }
    CancelHoldDisruptionsLocked(it->second);  // victims given notice keep running
    it = holds_.erase(it);
  }
  for (auto it = pdb_protected_.begin(); it != pdb_protected_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    if (auto grp = pgroups_.find(it->first); grp != pgroups_.end()) {
      for (const auto& [u, where] : grp->second.members) MarkPreemptViewLocked(u);
    }
    it = pdb_protected_.erase(it);
  }
}

}  // namespace tidal
