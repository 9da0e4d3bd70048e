// Engine: the mirror of the front doors - nodes and pods from each door's Sync stream, and the
// charges bound pods make on the queue ledger (the merged nodes and the ClusterState built from
// them: engine_nodes.cc).
//
// Two doors, one fabric. Each door reports its own record of a node (node_doors_); the engine
// plans on their merge (nodes_, MergeNodeLocked): a node both doors report is one node, shared
// (pool "shared") unless its tidal.dev/pool label says otherwise, usable by a door only while that
// door reports it ready and schedulable (a Slurm drain keeps Slurm jobs off, not pods). Every pod
// and every Slurm job member uses the node's capacity whoever placed it, so capacity moves to the
// other side only once the first side's objects are gone (a Terminating pod and a COMPLETING job
// still hold theirs). A door's resync replaces only that door's records.
//
// Threading: Sync takes mu_; the *Locked functions run under it.
#include <algorithm>

#include "core/api/duration.h"
#include "core/api/limits.h"
#include "engine/engine.h"

namespace tidal {

namespace {

// A node record within limits.h: name, capacity, label sizes; the error names the node and field.
Status CheckNodeBounds(const NodeInfo& n) {
  const std::string at = "node " + n.name.substr(0, limits::kMaxNameBytes);
  if (Status s = limits::CheckSize(n.name, limits::kMaxNameBytes, at + ": name"); !s.ok()) return s;
  if (Status s = limits::CheckResources(n.capacity, at + ": capacity"); !s.ok()) return s;
  for (const auto& [k, v] : n.labels) {
    if (Status s = limits::CheckSize(k, limits::kMaxLabelKeyBytes, at + ": label key " + k.substr(0, 64)); !s.ok()) return s;
    if (Status s = limits::CheckSize(v, limits::kMaxValueBytes, at + ": label " + k); !s.ok()) return s;
  }
  for (const auto& [k, v] : n.annotations) {
    if (Status s = limits::CheckSize(k + v, limits::kMaxValueBytes, at + ": annotation " + k.substr(0, 64)); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

void Engine::ChargePodLocked(const PodInfo& p, std::optional<bool> borrowed) {
  // Bound pods are charged to their queue whoever scheduled them, if they name one (Tidal pods
  // always have one: "default" unless labelled). A pod bound on no plan of this engine's (bound by
  // another scheduler, or first seen running after a restart) is judged as at admission: the part
  // of the queue's work above its nominal is on borrowed quota, after a restart as before it.
  const bool ours = OursLocked(p);
  if (!ours && !p.labels.count(kLabelQueue) && !p.annotations.count(kLabelQueue)) return;
  const auto& spec = SpecLocked(p);
  if (!spec.ok()) return;
  const int q = ledger_.tree().Find(spec->queue);
  if (q <= 0 || !ledger_.tree().IsLeaf(q)) return;
  const ResVec req = ledger_.tree().Request(p.request, NodeModelLocked(p.node_name));
  (void)ledger_.Charge(p.uid, q, req, borrowed.has_value() ? *borrowed : ledger_.CheckAdmission(q, req).borrowing);
}

void Engine::ApplyBoundLocked(const PodInfo& p) {
  bound_by_queue_door_.reset();
  std::optional<bool> borrowed;  // the plan's, when it bound on one
  if (auto g = pod_gang_.find(p.uid); g != pod_gang_.end()) {
    auto gi = gangs_.find(g->second);
    if (gi != gangs_.end() && gi->second.plan) {
      auto& slots = gi->second.plan->slots;
      auto s = std::find_if(slots.begin(), slots.end(), [&](const Slot& x) { return x.pod_uid == p.uid; });
      if (s != slots.end()) {
        // The slot's capacity and quota charge become the pod's own charges below.
        const std::string plan_id = PlanId(gi->second);
        if (state_) (void)state_->ReleaseMembers(plan_id, state_->FindNode(s->node), 1);
        auto ch = ledger_.charges().find(plan_id);
        if (ch != ledger_.charges().end()) {
          borrowed = ch->second.borrowed;
          ledger_.Reduce(plan_id, ledger_.tree().Request(gi->second.plan->per_member, NodeModelLocked(s->node)));
        }
        slots.erase(s);
        if (slots.empty()) {
          ledger_.Uncharge(plan_id);
          gi->second.plan.reset();
        }
      }
    }
  }
  ChargePodLocked(p, borrowed);
  charged_[p.uid] = {p.node_name, p.request};
  if (!bound_since_.count(p.uid)) {
    EngineBoundSince b;
    b.since_s = clock_();
    if (const auto& sp = SpecLocked(p); sp.ok()) {
      b.runtime_limit_s = sp->runtime_limit_s;
      b.workload_class = sp->workload_class;
      b.queue = sp->queue;
    }
    bound_since_[p.uid] = b;
  }
  if (state_) {
    const NodeId n = state_->FindNode(p.node_name);
    if (n != kNoNode) state_->Allocate(n, p.request);
  }
  MarkPreemptViewLocked(p.uid);  // regrouped in the preemption view (engine_preempt.cc)
}

void Engine::RememberGangLocked(const PodInfo& p, bool bound, bool released) {
  if (p.door != FrontDoor::kSlurm) return;
  auto gk = pod_gang_.find(p.uid);
  if (gk == pod_gang_.end()) return;
  const int64_t now = clock_();
  if (gang_memory_.size() > 200000) {  // bounded: forget gangs untouched for a day
    for (auto it = gang_memory_.begin(); it != gang_memory_.end();) it = it->second.touched < now - 86400 ? gang_memory_.erase(it) : std::next(it);
  }
  GangMemory& m = gang_memory_[gk->second];
  m.touched = now;
  if (const auto& spec = SpecLocked(p); spec.ok()) {
    const int q = ledger_.tree().Find(spec->queue);
    if (q > 0 && ledger_.tree().IsLeaf(q)) m.leaf = q;
    m.members = spec->gang_size;
  }
  if (p.request.gpus > 0 || m.per_member.gpus == 0) m.per_member = p.request;
  if (bound) {
    if (m.bound_from == 0) m.bound_from = now;
    m.bound_until = 0;
  }
  if (released && m.bound_from != 0) m.bound_until = now;
}

void Engine::SettleFinishedLocked(const FinishedJobInfo& f) {
  auto it = gang_memory_.find(f.gang);
  if (it == gang_memory_.end() || it->second.settled || it->second.leaf <= 0) return;  // unknown: nothing to correct
  GangMemory& m = it->second;
  Resources per = m.per_member;
  if (f.gpus_per_member > 0) per.gpus = f.gpus_per_member;
  const int32_t members = f.members > 0 ? f.members : std::max(1, m.members);
  ResVec r = ledger_.tree().Request(per * members, "");
  if (m.bound_from == 0) {
    // It ran while the door was not reporting (released, then the adapter went away): charge it.
    ledger_.AddPastUsage(m.leaf, r, f.start_unix, f.end_unix);
  } else if (m.bound_until > f.end_unix) {
    // The engine kept charging it after it ended (until the door's resync): credit that back.
    for (auto& x : r) x = -x;
    ledger_.AddPastUsage(m.leaf, r, f.end_unix, m.bound_until);
  } else if (m.bound_until == 0) {
    return;  // still charged as bound: the door will report it gone
  }
  m.settled = true;
}

void Engine::ReleaseBoundLocked(const std::string& uid) {
  bound_by_queue_door_.reset();
  MarkPreemptViewLocked(uid);  // regrouped in the preemption view (engine_preempt.cc)
  if (auto p = pods_.find(uid); p != pods_.end() && charged_.count(uid)) RememberGangLocked(p->second, false, true);
  ledger_.Uncharge(uid);
  bound_since_.erase(uid);
  auto it = charged_.find(uid);
  if (it == charged_.end()) return;
  if (state_) {
    const NodeId n = state_->FindNode(it->second.first);
    if (n != kNoNode) state_->Release(n, it->second.second);
  }
  charged_.erase(it);
}

void Engine::BoundRequestLocked(PodInfo& p) const {
  // Over a node's worth, or members x GPUs over a workload's cap: the pod is refused where it is
  // reported (CheckPod / PlanPod: TidalInvalidSpec naming the field), and a bound one is charged
  // at most the caps, so no sum of charges can overflow.
  Status st = limits::CheckResources(p.request, "pod " + p.Key() + ": request");
  if (st.ok()) {
    if (const auto& spec = SpecLocked(p); spec.ok()) {
      st = limits::CheckWorkloadTotal(p.request, spec->gang_size, "pod " + p.Key() + ": gang " + spec->gang);
    }
  }
  if (st.ok()) return;
  if (p.spec_error.ok()) p.spec_error = Status::Unresolvable(st.Message(), "podspec");
  p.request.gpus = std::min(p.request.gpus, limits::kMaxGpusPerNode);
  p.request.cpu_milli = std::min(p.request.cpu_milli, limits::kMaxCpuMilliPerNode);
  p.request.memory_bytes = std::min(p.request.memory_bytes, limits::kMaxMemoryBytesPerNode);
}

const StatusOr<PodSchedulingSpec>& Engine::SpecLocked(const PodInfo& p) const {
  static const StatusOr<PodSchedulingSpec> kUnparsed = Status::Error("spec: not read by the engine", "podspec");
  return p.spec ? *p.spec : kUnparsed;
}

namespace {
// A queue's former name (queues[].formerNames) reads as the queue's name: every map keyed by queue
// name (bound GPUs by door, named pools, metrics labels) then counts the pod there.
void ToCurrentQueueName(const QueueTree& t, std::string& queue) {
  if (const int q = t.Find(queue); q > 0 && t.Name(q) != queue) queue = t.Name(q);
}
}  // namespace

void Engine::ParseSpecLocked(PodInfo& p) {
  if (auto prev = pods_.find(last_parsed_uid_);
      prev != pods_.end() && prev->second.spec && prev->second.labels == p.labels && prev->second.annotations == p.annotations) {
    p.spec = prev->second.spec;
  } else {
    auto parsed = ParsePodSchedulingSpec(p.labels, p.annotations, cfg_.levels);
    if (parsed.ok()) ToCurrentQueueName(ledger_.tree(), parsed->queue);
    p.spec = std::make_shared<const StatusOr<PodSchedulingSpec>>(std::move(parsed));
  }
  last_parsed_uid_ = p.uid;
}

namespace {
// The spec a running pod runs with after an edit of its keys (kubectl label/annotate, scontrol
// update Comment=): what says which work it is and what it is entitled to stays as it ran (queue,
// gang, size, minimum, class, placement keys: a changed gang would split a rigid gang, a changed
// queue move its charge); it may give more (become preemptible, shorten or set its runtime limit,
// declare checkpoints) but not take (become non-preemptible, lengthen or drop its limit). *kept
// lists the edits not applied, by key: "tidal.dev/gang: other (runs as rg)".
PodSchedulingSpec RunningSpec(const PodSchedulingSpec& runs, const PodSchedulingSpec& edit, std::string* kept) {
  PodSchedulingSpec out = edit;
  auto keep = [&](const char* key, auto& field, const auto& ran, const std::string& to, const std::string& from) {
    if (field == ran) return;
    field = ran;
    *kept += (kept->empty() ? "" : "; ") + std::string(key) + ": " + (to.empty() ? "(none)" : to) + " (runs as " +
             (from.empty() ? "(none)" : from) + ")";
  };
  auto dur = [](int64_t s) { return s > 0 ? FormatDurationSeconds(s) : std::string(); };
  keep(kLabelQueue, out.queue, runs.queue, edit.queue, runs.queue);
  keep(kLabelGang, out.gang, runs.gang, edit.gang, runs.gang);
  out.gang_from = runs.gang_from;
  keep(kLabelGangSize, out.gang_size, runs.gang_size, std::to_string(edit.gang_size), std::to_string(runs.gang_size));
  keep(kLabelGangMin, out.gang_min, runs.gang_min, std::to_string(edit.gang_min), std::to_string(runs.gang_min));
  keep(kLabelTopologyRequired, out.required_level, runs.required_level, edit.required_level, runs.required_level);
  keep(kLabelTopologyPreferred, out.preferred_level, runs.preferred_level, edit.preferred_level, runs.preferred_level);
  keep(kLabelGpuModel, out.gpu_model, runs.gpu_model, edit.gpu_model, runs.gpu_model);
  keep(kLabelClass, out.workload_class, runs.workload_class, std::string(WorkloadClassName(edit.workload_class)),
       std::string(WorkloadClassName(runs.workload_class)));
  keep("exclusive topology group", out.exclusive_group, runs.exclusive_group, edit.exclusive_group, runs.exclusive_group);
  out.exclusive_key = runs.exclusive_key;
  if (runs.preemptible) keep(kLabelPreemptible, out.preemptible, runs.preemptible, "false", "true");
  if (runs.runtime_limit_s > 0 && (edit.runtime_limit_s == 0 || edit.runtime_limit_s > runs.runtime_limit_s)) {
    keep(kLabelRuntimeLimit, out.runtime_limit_s, runs.runtime_limit_s, dur(edit.runtime_limit_s), dur(runs.runtime_limit_s));
  }
  return out;
}
}  // namespace

void Engine::KeepRunningSpecLocked(PodInfo& in) {
  // A running pod's keys edited meanwhile apply as RunningSpec allows; the rest is kept to explain.
  // A value the engine cannot read applies nothing. A pod first seen running with such a value
  // (after a restart or a resync) keeps its queue and gang from those keys alone (gang keys it
  // cannot read leave it a pod of its own), the others at their defaults: unknown is never "gone".
  if (!in.UsesCapacity() || !in.spec) return;
  auto known = pods_.find(in.uid);
  if (known != pods_.end() && known->second.UsesCapacity() && known->second.spec && known->second.spec->ok()) {
    if (in.spec == known->second.spec) return;
    if (!in.spec->ok()) {
      in.spec_not_applied = in.spec->status();
      in.spec = known->second.spec;
    } else {
      std::string kept;
      PodSchedulingSpec s = RunningSpec(**known->second.spec, **in.spec, &kept);
      if (kept.empty()) return;  // every edit applies (or none was made)
      in.spec_not_applied = Status::Error("edits while it runs: " + kept, "podspec");
      in.spec = std::make_shared<const StatusOr<PodSchedulingSpec>>(std::move(s));
    }
  } else if (!in.spec->ok()) {
    in.spec_not_applied = in.spec->status();
    PodSchedulingSpec s;
    if (!podkeys::ResolveQueue(in.labels, in.annotations, &s).ok()) return;
    // Gang keys it cannot read (a bad size, peers that disagree): a pod of its own, still charged.
    if (PodSchedulingSpec g = s; podkeys::ResolveGang(in.labels, in.annotations, &g).ok()) s = std::move(g);
    ToCurrentQueueName(ledger_.tree(), s.queue);
    in.spec = std::make_shared<const StatusOr<PodSchedulingSpec>>(std::move(s));
  } else {
    return;
  }
  last_parsed_uid_.clear();  // its spec is not its labels': ParseSpecLocked must not reuse it for others
}

Status Engine::UpsertPodLocked(PodInfo in) {
  if (in.uid.empty()) return Status::Error("pod " + in.Key() + ": uid: must not be empty");
  if (in.name.empty()) return Status::Error("pod uid " + in.uid + ": name: must not be empty");
  for (const auto& [field, v] : {std::pair<const char*, const std::string*>{"uid", &in.uid}, {"name", &in.name}, {"namespace", &in.ns}}) {
    if (Status s = limits::CheckSize(*v, limits::kMaxNameBytes, "pod " + in.Key().substr(0, 300) + ": " + field); !s.ok()) return s;
  }
  if (in.request.AnyNegative()) return Status::Error("pod " + in.Key() + ": request: must not be negative");
  bound_by_queue_door_.reset();
  ParseSpecLocked(in);
  KeepRunningSpecLocked(in);
  BoundRequestLocked(in);
  in.last_checkpoint_unix = -1;  // a bad value is ignored: it must never make a running pod invalid
  if (const std::string* v = podkeys::Lookup(in.labels, in.annotations, kLabelLastCheckpoint)) {
    if (auto t = ParseCheckpointTime(*v); t.ok()) in.last_checkpoint_unix = *t;
  }
  if (in.creation_unix <= 0) {
    // No creation time (a front door that sends none, or 0): first seen now, and kept so across
    // updates. Left at 0 it read as created in 1970: a 56-year wait in tidal_time_to_start and
    // the first place in submit order.
    auto known = pods_.find(in.uid);
    in.creation_unix = known != pods_.end() && known->second.creation_unix > 0 ? known->second.creation_unix : clock_();
  }
  auto charged = charged_.find(in.uid);
  if (charged != charged_.end() && in.node_name.empty() && in.phase == PodPhase::kPending && in.door == FrontDoor::kKubernetes) {
    // A pod is never unbound: an update without a node for a pod the engine knows bound (by Bound
    // from PostBind, or an earlier update) is stale, sent before the binding reached the
    // informer. Keep the binding and its charge.
    in.node_name = charged->second.first;
    const std::string uid = in.uid;
    pods_[uid] = std::move(in);
    if (auto gk = pod_gang_.find(uid); gk != pod_gang_.end()) QueueReindexLocked(gk->second);
    return Status::Ok();
  }
  PodInfo& p = pods_[in.uid];
  const bool was_going = p.terminating;  // false for a pod new to the engine
  p = std::move(in);
  // Someone deleted a running member (its kubelet is terminating it), or it failed: its gang may
  // be left half-running (engine_health.cc). Not a pod that merely vanished from a resync or a
  // delete the engine never saw Succeed first: unknown is never "lost".
  if (p.UsesCapacity() && p.terminating && !was_going) NoteMemberLostLocked(p, "is being deleted");
  if (p.UsesCapacity()) {
    if (charged == charged_.end() || charged->second.first != p.node_name || !(charged->second.second == p.request)) {
      ReleaseBoundLocked(p.uid);
      ApplyBoundLocked(p);
    }
    // Run time counts from the start the kubelet reports once there is one (an image pull is not
    // run time), also for pods the engine first sees after a restart; a limit it shortened or set
    // while running (KeepRunningSpecLocked lets no other edit through) is the one enforced.
    if (auto b = bound_since_.find(p.uid); b != bound_since_.end()) {
      if (p.start_unix > 0) b->second.since_s = p.start_unix;
      if (const auto& sp = SpecLocked(p); sp.ok()) b->second.runtime_limit_s = sp->runtime_limit_s;
    }
  } else if (charged != charged_.end()) {
    if (p.phase == PodPhase::kFailed) NoteMemberLostLocked(p, "failed");  // its gang may be left half-running
    NoteMemberEndLocked(p.uid, MemberEndOf(p, was_going));                // how it ended (engine_runtime.cc)
    ReleaseBoundLocked(p.uid);
  }
  MarkPreemptViewLocked(p.uid);  // start time, terminating, labels of a bound pod (engine_preempt.cc)
  DisruptionSeenLocked(p);       // a checkpoint reported, or a disrupted pod finished (engine_disruptions.cc)
  if (!OursLocked(p)) return Status::Ok();
  PodSchedulingSpec spec;
  Status st;
  std::string key = GangKeyLocked(p, &spec, &st);
  if (auto other = gangs_.find(key); st.ok() && other != gangs_.end() && other->second.door != p.door && !other->second.pods.empty()) {
    st = Status::Unresolvable("gang " + key + " belongs to the " + std::string(FrontDoorName(other->second.door)) +
                                  " front door; choose another gang name",
                              "gang");
    p.spec_error = st;  // CheckPod / PlanPod report it on the pod
  }
  auto old = pod_gang_.find(p.uid);
  if (old != pod_gang_.end() && old->second != key) {
    auto g = gangs_.find(old->second);
    if (g != gangs_.end()) {
      g->second.pods.erase(p.uid);
      DropPlanLocked(g->second);
      if (g->second.pods.empty()) {
        UnindexGangLocked(g->second);
        grow_waits_.erase(g->first);
        gangs_.erase(g);
      } else {
        QueueReindexLocked(old->second);
      }
    }
    pod_gang_.erase(old);
  }
  if (!st.ok()) return Status::Ok();  // reported to the pod through CheckPod / PlanPod
  pod_gang_[p.uid] = key;
  Gang& g = gangs_[key];
  g.key = key;
  g.door = p.door;
  g.pods.insert(p.uid);
  QueueReindexLocked(key);
  RememberGangLocked(p, p.UsesCapacity(), false);
  return Status::Ok();
}

void Engine::DeletePodLocked(const std::string& uid, bool observed) {
  bound_by_queue_door_.reset();
  // A delete the door saw of a pod the engine last knew running: a member lost (its gang may be
  // left half-running, engine_health.cc). A pod a resync no longer names only vanished: unknown.
  if (auto p = pods_.find(uid); observed && p != pods_.end()) NoteMemberLostLocked(p->second, "was deleted");
  NoteMemberEndLocked(uid, observed ? WorkloadEnd::kCancelled : WorkloadEnd::kUnknown);  // still bound: how it ended
  DisruptionGoneLocked(uid);
  ReleaseBoundLocked(uid);
  if (auto it = pod_gang_.find(uid); it != pod_gang_.end()) {
    auto g = gangs_.find(it->second);
    if (g != gangs_.end()) {
      g->second.pods.erase(uid);
      if (auto p = pods_.find(uid); p != pods_.end()) NoteFinishedMemberLocked(g->second, p->second);
      if (g->second.plan) {
        const auto& slots = g->second.plan->slots;
        if (std::any_of(slots.begin(), slots.end(), [&](const Slot& s) { return s.pod_uid == uid; })) {
          DropPlanLocked(g->second);
          g->second.last_reason = "plan dropped: a planned member was deleted";
        }
      }
      if (g->second.pods.empty()) {
        // A plan made ahead (fair share) has no claimed slot: drop it with the gang, or its
        // capacity and quota charge would outlive it.
        DropPlanLocked(g->second);
        UnindexGangLocked(g->second);
        lost_members_.erase(g->first);
        grow_waits_.erase(g->first);
        gangs_.erase(g);
      } else {
        QueueReindexLocked(it->second);
      }
    }
    pod_gang_.erase(it);
  }
  pods_.erase(uid);
}

void Engine::NoteFinishedMemberLocked(Gang& g, const PodInfo& p) {
  // Kept only while of a run still to complete: ReindexGangLocked (queued by the delete) prunes it.
  if (p.phase == PodPhase::kSucceeded && !p.node_name.empty() && p.start_unix > 0) g.finished_starts[p.uid] = p.start_unix;
}

void Engine::BeginResyncLocked(FrontDoor door) {
  // The door's plans are dropped (their members ask again); its pods still named keep their
  // charges. Everything of the door the snapshot does not name goes at its end (EndResyncLocked).
  for (auto& [key, g] : gangs_) {
    if (g.door == door && g.plan) {
      DropPlanLocked(g);
      g.last_reason = "plan dropped: the " + std::string(FrontDoorName(door)) + " front door resynced";
    }
  }
  snapshots_[static_cast<int>(door)].emplace();
}

void Engine::EndResyncLocked(FrontDoor door) {
  // Everything of the door the snapshot did not name is gone; the other door's objects stay.
  auto& snap = snapshots_[static_cast<int>(door)];
  std::vector<std::string> gone;
  for (const auto& [uid, p] : pods_) {
    if (p.door == door && !snap->pods.count(uid)) gone.push_back(uid);
  }
  for (const auto& uid : gone) DeletePodLocked(uid, /*observed=*/false);
  std::vector<std::string> names;
  for (auto& [name, recs] : node_doors_) {
    if (recs[static_cast<int>(door)] && !snap->nodes.count(name)) names.push_back(name);
  }
  for (const auto& name : names) {
    node_doors_[name][static_cast<int>(door)].reset();
    MergeNodeLocked(name);
    if (door == FrontDoor::kKubernetes) AnnotatedDrainLocked(name, nullptr, nullptr);
  }
  snap.reset();
  synced_ = true;
  DoorResyncedLocked(door);  // engine_doors.cc
}

Status Engine::Sync(const SyncBatch& batch, uint64_t* generation, std::vector<NodeWarningInfo>* warnings) {
  SyncBatch copy = batch;
  return Sync(std::move(copy), generation, warnings);
}

Status Engine::Sync(SyncBatch&& b, uint64_t* generation, std::vector<NodeWarningInfo>* warnings) {
  std::lock_guard<std::mutex> lock(mu_);
  Status result;
  ledger_.Advance(clock_());
  if (b.resync) BeginResyncLocked(b.door);
  if (auto& snap = snapshots_[static_cast<int>(b.door)]) {
    for (const auto& p : b.upsert_pods) snap->pods.insert(p.uid);
    for (const auto& n : b.upsert_nodes) snap->nodes.insert(n.name);
  }
  for (const auto& in : b.upsert_nodes) {
    NodeInfo n = in;
    n.door = b.door;
    if (n.name.empty()) {
      result = Status::Error("node: name: must not be empty");
      continue;
    }
    if (n.capacity.AnyNegative()) {
      result = Status::Error("node " + n.name + ": capacity: must not be negative");
      continue;
    }
    if (Status s = CheckNodeBounds(n); !s.ok()) {
      result = s;
      continue;
    }
    auto& rec = node_doors_[n.name][static_cast<int>(b.door)];
    if (rec && SameNode(*rec, n) && rec->ready == n.ready) continue;
    const std::vector<std::string> missing = MissingLevels(n);
    if (warnings != nullptr && !missing.empty() && (!rec || MissingLevels(*rec) != missing)) {
      std::string levels;
      for (const auto& l : missing) levels += (levels.empty() ? "" : ", ") + l;
      warnings->push_back({n.name, "TidalTopologyLabelMissing",
                           "node " + n.name + " has no valid label for topology level(s) " + levels +
                               ": it is its own domain there and never shares a required " + missing.front() +
                               " with another node"});
    }
    const std::string name = n.name;
    rec = std::move(n);
    MergeNodeLocked(name);
    if (b.door == FrontDoor::kKubernetes) AnnotatedDrainLocked(name, &rec->annotations, warnings);
    RememberDoorNodeLocked(b.door, name, true);
  }
  for (const auto& name : b.delete_nodes) {
    if (auto r = node_doors_.find(name); r != node_doors_.end()) {
      r->second[static_cast<int>(b.door)].reset();
      MergeNodeLocked(name);
      if (b.door == FrontDoor::kKubernetes) AnnotatedDrainLocked(name, nullptr, warnings);
    }
    RememberDoorNodeLocked(b.door, name, false);
  }
  for (auto& in : b.upsert_pods) {
    if (in.door != b.door) {
      result = Status::Error("pod " + in.Key() + ": door: reported by the " + std::string(FrontDoorName(b.door)) +
                             " stream as a " + std::string(FrontDoorName(in.door)) + " pod");
      continue;
    }
    if (auto old = pods_.find(in.uid); old != pods_.end() && old->second.door != b.door) {
      result = Status::Error("pod uid " + in.uid + ": belongs to the " + std::string(FrontDoorName(old->second.door)) +
                             " front door; refused from " + std::string(FrontDoorName(b.door)));
      continue;
    }
    if (Status s = UpsertPodLocked(std::move(in)); !s.ok()) result = s;
  }
  for (const auto& uid : b.delete_pods) {
    if (auto it = pods_.find(uid); it != pods_.end() && it->second.door == b.door) DeletePodLocked(uid);
  }
  for (const auto& uid : b.vanished_pods) {
    if (auto it = pods_.find(uid); it != pods_.end() && it->second.door == b.door) DeletePodLocked(uid, /*observed=*/false);
  }
  ApplyAutoscalersLocked(b, &result);  // HPAs, a snapshot's end included (engine_autoscalers.cc)
  const bool snapshot_ends = snapshots_[static_cast<int>(b.door)] && !b.snapshot_continues;
  if (snapshot_ends) EndResyncLocked(b.door);
  FlushReindexLocked();
  for (const auto& f : b.finished) FinishedJobLocked(f);  // the gap ledger, how it ended (engine_runtime.cc)
  if (snapshot_ends) {
    // Bound times survive a resync for pods still bound; the others are gone.
    for (auto it = bound_since_.begin(); it != bound_since_.end();) {
      it = charged_.count(it->first) ? std::next(it) : bound_since_.erase(it);
    }
  }
  ExpirePlansLocked();
  *generation = ++generation_;
  return result;
}

}  // namespace tidal
