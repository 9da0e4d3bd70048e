// Engine: planning on the Kubernetes path - PlanPod (PreFilter), the one step that schedules a
// gang (ScheduleGangLocked), and fair-share order (PlanAheadLocked over the pending index).
//
// Fair-share order. kube-scheduler picks the next pod by its own QueueSort (priority, then age),
// which knows nothing of queues. So when a pod of queue Q asks for a plan, the engine first plans
// the head gang of every queue that is further below its fair share than Q (hierarchical weighted
// DRF: QuotaLedger::FairShareRanks, the same order the engine config defines and `tidalctl sim` uses), at
// again and again (ranks are recomputed after each plan) until no queue ahead of Q has a head that
// fits now, at most kMaxAhead plans; their pods are returned for the shim to Activate. Q's pod is
// planned afterwards on what is left: it runs when the queues ahead cannot use the room (work
// conserving), and waits, saying which queue went first, when they can. A queue's head is its
// first pending gang by priority, then submit time (pending_by_queue_, kept up to date on every
// pod change by ReindexGangLocked, so no scan of every gang per plan).
//
// Threading: every function here runs under mu_ (the *Locked convention; PlanPod takes it).
#include <algorithm>
#include <chrono>
#include <optional>
#include <set>

#include "core/api/duration.h"
#include "engine/engine.h"
#include "engine/engine_gang_constraints.h"

namespace tidal {

namespace {
constexpr int kMaxAhead = 16;      // gangs planned ahead per PlanPod
constexpr int kHeadLookahead = 4;  // unplanned gangs of a queue looked at to find its head
constexpr size_t kMaxDistinctConstraints = 8;  // different node constraints among a gang's members

// The keys whose value shapes how a whole gang is planned, held, given notice or ended: every
// member of a gang must carry the same (a gang is planned with one member's spec: PlanPod's, or the
// first by uid for Admit and reservations). Node constraints and requests may differ per member
// (ReindexGangLocked plans with all of them); tidal.dev/gang-leader and last-checkpoint are per pod.
struct GangField {
  const char* key;
  bool (*same)(const PodSchedulingSpec&, const PodSchedulingSpec&);
  std::string (*show)(const PodSchedulingSpec&);
};
std::string Quoted(const std::string& v) { return v.empty() ? "(not set)" : "\"" + v + "\""; }
std::string Span(int64_t s) { return s <= 0 ? "(not set)" : FormatDurationSeconds(s); }
using Spec = PodSchedulingSpec;
const GangField kGangFields[] = {
    {kLabelGangSize, [](const Spec& x, const Spec& y) { return x.gang_size == y.gang_size; },
     [](const Spec& x) { return std::to_string(x.gang_size); }},
    {kLabelGangMin, [](const Spec& x, const Spec& y) { return x.gang_min == y.gang_min; },
     [](const Spec& x) { return std::to_string(x.gang_min); }},
    {kLabelQueue, [](const Spec& x, const Spec& y) { return x.queue == y.queue; }, [](const Spec& x) { return Quoted(x.queue); }},
    {kLabelTopologyRequired, [](const Spec& x, const Spec& y) { return x.required_level == y.required_level; },
     [](const Spec& x) { return Quoted(x.required_level); }},
    {kLabelTopologyPreferred, [](const Spec& x, const Spec& y) { return x.preferred_level == y.preferred_level; },
     [](const Spec& x) { return Quoted(x.preferred_level); }},
    {kLabelPreemptible, [](const Spec& x, const Spec& y) { return x.preemptible == y.preemptible; },
     [](const Spec& x) { return std::string(x.preemptible ? "true" : "false"); }},
    {kLabelClass, [](const Spec& x, const Spec& y) { return x.workload_class == y.workload_class; },
     [](const Spec& x) { return Quoted(std::string(WorkloadClassName(x.workload_class))); }},
    {kLabelGpuModel, [](const Spec& x, const Spec& y) { return x.gpu_model == y.gpu_model; },
     [](const Spec& x) { return Quoted(x.gpu_model); }},
    {kLabelRuntimeLimit, [](const Spec& x, const Spec& y) { return x.runtime_limit_s == y.runtime_limit_s; },
     [](const Spec& x) { return Span(x.runtime_limit_s); }},
    {kLabelCheckpointInterval, [](const Spec& x, const Spec& y) { return x.checkpoint_interval_s == y.checkpoint_interval_s; },
     [](const Spec& x) { return Span(x.checkpoint_interval_s); }},
    {kLabelCheckpointOnNotice, [](const Spec& x, const Spec& y) { return x.checkpoint_on_notice_s == y.checkpoint_on_notice_s; },
     [](const Spec& x) { return Span(x.checkpoint_on_notice_s); }},
};

// Whether two members of gang `key` (both with valid specs) disagree on a key of kGangFields: the
// key and both values, or "" when they agree.
std::string GangConflict(const std::string& key, const PodInfo& a, const PodInfo& b) {
  const PodSchedulingSpec& x = **a.spec;
  const PodSchedulingSpec& y = **b.spec;
  for (const GangField& f : kGangFields) {
    if (f.same(x, y)) continue;
    return "gang " + key + ": its members disagree on " + f.key + ": " + f.show(x) + " (pod " + a.name + ") and " + f.show(y) +
           " (pod " + b.name + "); every member of a gang must carry the same value";
  }
  return {};
}

// Preferred node affinity, first pass: w with its heaviest preferred term made required (ANDed
// into every required term), so a placement on the preferred nodes wins when one exists;
// nullopt when w prefers nothing.
std::optional<Workload> WithPreferredRequired(const Workload& w) {
  const NodeConstraints* c = w.constraints.get();
  if (c == nullptr || c->preferred.empty()) return std::nullopt;
  const PreferredTerm* top = &c->preferred.front();
  for (const auto& p : c->preferred) top = p.weight > top->weight ? &p : top;
  auto strict = std::make_shared<NodeConstraints>(*c);
  if (strict->required.empty()) strict->required.push_back(SelectorTerm{});
  for (auto& t : strict->required) {
    t.expressions.insert(t.expressions.end(), top->term.expressions.begin(), top->term.expressions.end());
    t.fields.insert(t.fields.end(), top->term.fields.begin(), top->term.fields.end());
  }
  Workload out = w;
  out.constraints_sig = strict->Signature();
  out.constraints = std::move(strict);
  return out;
}

}  // namespace

void Engine::UnindexGangLocked(Gang& g) {
  if (!g.head) return;
  auto q = pending_by_queue_.find(g.head_queue);
  if (q != pending_by_queue_.end()) {
    q->second.erase(*g.head);
    if (q->second.empty()) pending_by_queue_.erase(q);
  }
  g.head.reset();
}

void Engine::ReindexGangLocked(const std::string& key) {
  auto it = gangs_.find(key);
  if (it == gangs_.end()) return;
  Gang& g = it->second;
  UnindexGangLocked(g);
  Gang::Summary s;
  const PodInfo* first = nullptr;  // its first pending pod
  bool seen_free = false;          // its first pod not using capacity was seen
  std::vector<int64_t> succeeded;  // start times of bound members that ended Succeeded (Summary::finished)
  const PodInfo* ref = nullptr;    // its first running or pending member with a valid spec (Summary::conflict)
  std::vector<std::shared_ptr<const NodeConstraints>> distinct;  // its pending members' node constraints
  for (const auto& u : g.pods) {
    const PodInfo& p = pods_.at(u);
    if (!s.spec) s.spec = p.spec;
    // A member being deleted (terminating) before it succeeded, or Failed, is no member of the
    // gang's run: it is being replaced (a rigid gang that lost a member is evicted whole, and its
    // controller creates new pods while the old ones still terminate). It keeps its GPUs charged
    // (charged_) until it is gone, but counts neither as started nor as present, so the new run
    // is planned whole, never bound piecemeal as the old pods go one by one.
    if ((p.terminating && p.phase != PodPhase::kSucceeded) || p.phase == PodPhase::kFailed) {
      ++s.gone;
      continue;
    }
    if (s.conflict.empty() && p.spec && p.spec->ok() &&
        (p.UsesCapacity() || (p.node_name.empty() && p.phase == PodPhase::kPending))) {
      if (ref == nullptr) {
        ref = &p;
      } else if (ref->spec != p.spec) {
        s.conflict = GangConflict(key, *ref, p);
      }
    }
    if (p.UsesCapacity()) {
      ++s.bound;
      continue;
    }
    if (p.phase == PodPhase::kSucceeded && !p.node_name.empty()) succeeded.push_back(p.start_unix);
    if (!seen_free) {
      seen_free = true;
      s.exclusive = ExclusiveTopologyOf(p.ns, p.labels, p.annotations);
    }
    if (!p.node_name.empty() || p.phase != PodPhase::kPending) continue;
    if (auto gate = p.annotations.find(kSchedulingGates); gate != p.annotations.end()) {
      if (s.gated++ == 0) s.gated_example = "pod " + p.name + " waits for " + gate->second;
      // A member of this run all the same (its finished members are kept for it, below), but not
      // one to place until its gates are removed.
      s.submitted = std::min(s.submitted, p.creation_unix);
      continue;
    }
    first = first == nullptr ? &p : first;
    ++s.pending;
    // The node constraints of every pending member, each different one once (members of one
    // template share them; a launcher beside its workers does not): planned with all of them.
    if (distinct.size() < kMaxDistinctConstraints &&
        std::none_of(distinct.begin(), distinct.end(),
                     [&](const auto& c) { return SameNodeConstraints(c.get(), p.constraints.get()); })) {
      distinct.push_back(p.constraints);
    }
    s.per_member.gpus = std::max(s.per_member.gpus, p.request.gpus);
    s.per_member.cpu_milli = std::max(s.per_member.cpu_milli, p.request.cpu_milli);
    s.per_member.memory_bytes = std::max(s.per_member.memory_bytes, p.request.memory_bytes);
    s.priority = std::max(s.priority, p.priority);
    s.submitted = std::min(s.submitted, p.creation_unix);
  }
  // Finished members of this run, here or gone; with nothing pending none is of a run to complete.
  auto not_of_this_run = [&](int64_t start) { return s.pending + s.gated == 0 || start <= 0 || start < s.submitted; };
  std::erase_if(g.finished_starts, [&](const auto& f) { return not_of_this_run(f.second); });
  std::erase_if(succeeded, not_of_this_run);
  s.finished = static_cast<int32_t>(g.finished_starts.size() + succeeded.size());
  for (size_t i = 0; i < distinct.size(); ++i) s.constraints = i == 0 ? distinct[0] : AllOf(s.constraints, distinct[i]);
  if (s.constraints) s.constraints_sig = s.constraints->Signature();
  g.summary = std::move(s);
  if (!g.summary.conflict.empty()) {
    // Never planned until its members agree (CheckPod and PlanPod say why); a plan made before goes.
    if (g.plan) {
      DropPlanLocked(g);
      g.last_reason = "plan dropped: " + g.summary.conflict;
    }
    return;
  }
  if (g.summary.exclusive.key.empty() && g.excluded.empty() && g.summary.spec && g.summary.spec->ok()) {
    g.summary.cached = true;
    if (std::optional<Workload> w = GangWorkloadLocked(g, **g.summary.spec, nullptr)) {
      g.summary.workload = std::make_shared<const Workload>(std::move(*w));
    }
    if (g.summary.workload) g.summary.shape = ShapeKey(*g.summary.workload);
  }
  if (first == nullptr) return;
  const auto& spec = SpecLocked(*first);
  if (!spec.ok()) return;
  g.head_queue = spec->queue;
  g.head = HeadKey{-static_cast<int64_t>(g.summary.priority), g.summary.submitted, key, &g};
  pending_by_queue_[g.head_queue].insert(*g.head);
}

void Engine::FlushReindexLocked() {
  std::vector<std::string> keys;
  keys.swap(reindex_);
  for (const auto& k : keys) ReindexGangLocked(k);
}

Decision Engine::PlaceLocked(const Workload& w, int32_t* yielded) {
  // Honour the reservations of other gangs (start now only where none is delayed); a gang whose
  // own reservation is due starts on its reserved nodes when they hold it.
  ReservationView rv;
  std::vector<int32_t> ranks;
  int32_t own_rank = -1;
  // Ranks only matter to filter the book: none are computed for an empty book.
  if (const int q = w.queue_id > 0 ? w.queue_id : ledger_.tree().Find(w.queue);
      q > 0 && !book_->empty()) {
    ranks = ledger_.FairShareRanks();
    own_rank = ranks[static_cast<size_t>(q)];
  }
  ReservationViewLocked(w.id, rv, own_rank, ranks.empty() ? nullptr : &ranks, FillNoticeLocked(w), CorrectedFillByLocked(w));
  Decision d;
  if (auto preferred = WithPreferredRequired(w)) d = sched_->ScheduleOne(*state_, *preferred, clock_(), nullptr, rv.get(), rv.at);
  if (d.outcome != Outcome::kPlaced) d = sched_->ScheduleOne(*state_, w, clock_(), nullptr, rv.get(), rv.at);
  if (yielded != nullptr) *yielded = rv.yielded;
  return d;
}

Decision Engine::ScheduleGangLocked(Gang& g, const PodSchedulingSpec& spec, Workload w) {
  const Resources per_member = w.per_member;
  const int64_t submitted = w.submit_time_s;
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<Decision> probe;  // a growth probe that found no room is the plan's answer
  if (std::string wait = GrowWaitLocked(g, spec, w, &probe); !wait.empty()) {
    Decision d;
    d.outcome = Outcome::kPending;
    d.explanation = wait;
    d.status = Status::Unschedulable(std::move(wait), "elastic");
    g.last_reason = d.explanation;
    g.wants_room = false;
    return d;
  }
  int32_t yielded = 0;
  Decision d = probe ? std::move(*probe) : PlaceLocked(w, &yielded);
  if (d.outcome == Outcome::kPlaced) {
    book_->erase(w.id);
    if (yielded > 0) book_stale_ = true;  // a yielded reservation may have lost its nodes
  } else if (d.outcome == Outcome::kPending && d.placement_failed) {
    RefreshReservationsLocked();
    if (std::string when = ReservedStartLocked(w.id); !when.empty()) {
      d.explanation += "; " + when;
      d.status.AddReason(std::move(when));
    }
  }
  const std::string klass(WorkloadClassName(w.workload_class));
  if (metrics_ != nullptr) {
    metrics_->cycle_duration.With({}).Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    metrics_->decisions.With({std::string(OutcomeName(d.outcome))}).Increment();
  }
  auto log = [&](const char* outcome) {
    if (decision_log_ == nullptr) return;
    nlohmann::json j{{"ts", clock_()}, {"workload", g.key}, {"queue", w.queue}, {"class", klass}, {"gpus", w.TotalGpus()},
                     {"outcome", outcome}, {"reasons", d.status.reasons()}, {"explanation", d.explanation}};
    if (d.outcome == Outcome::kPlaced) j["domain"] = d.placement.domain;
    decision_log_->Write(std::move(j));
  };
  if (d.outcome != Outcome::kPlaced) {
    // Nodes that take no work until a door resyncs since the engine started (engine_doors.cc).
    if (std::string gate = DoorGateNoteLocked(); !gate.empty()) {
      d.explanation += "; " + gate;
      d.status.AddReason(std::move(gate));
    }
  }
  if (d.outcome != Outcome::kPlaced && (d.status.plugin() == "quota" || d.explanation.find("nominal") != std::string::npos)) {
    // One ledger, two doors: say where the queue's GPUs are held, so a Slurm user refused for a
    // quota their team fills from Kubernetes (or the reverse) sees why.
    const std::string doors = QueueDoorsNoteLocked(w.queue);
    d.explanation += "; " + doors;
    d.status.AddReason(doors);
  }
  if (d.outcome == Outcome::kError) ++decision_errors_;  // a rollout watch's signal (engine_rollout.cc)
  g.rejected_by = d.outcome != Outcome::kRejected ? "" : d.status.plugin().empty() ? "placement" : d.status.plugin();
  if (d.outcome != Outcome::kPlaced) {
    // Logged when the decision's words change (PlanPod may have added its notes to the last ones).
    if (g.last_reason != d.explanation && g.last_reason.rfind(d.explanation + "; ", 0) != 0) {
      log(d.outcome == Outcome::kRejected ? "rejected" : "pending");
    }
    g.last_reason = d.explanation;
    g.wants_room = d.outcome == Outcome::kPending && d.placement_failed;
    return d;
  }
  log("placed");
  if (metrics_ != nullptr) {
    metrics_->admission_wait.With({MetricQueueLocked(w.queue), klass, SizeBucket(w.TotalGpus())})
        .Observe(static_cast<double>(std::max<int64_t>(0, clock_() - submitted)));
  }
  Plan plan;
  plan.per_member = per_member;
  plan.queue = spec.queue;
  plan.domain = d.placement.domain;
  plan.explanation = d.explanation;
  plan.created_s = clock_();
  for (const auto& a : d.placement.assignments) {
    for (int32_t i = 0; i < a.members; ++i) plan.slots.push_back(Slot{state_->node(a.node).name, "", false});
  }
  plan_deadlines_.insert({plan.created_s, g.key});
  g.plan = std::move(plan);
  g.last_reason = "planned: " + d.explanation;
  return d;
}

std::string Engine::QueueDoorsNoteLocked(const std::string& queue) const {
  const auto& bound = BoundGpusByQueueDoorLocked();
  auto row = bound.find(queue);
  std::array<int64_t, 2> by_door = row == bound.end() ? std::array<int64_t, 2>{0, 0} : row->second;
  auto add_plan = [&](const Gang& g) {
    if (g.plan && g.plan->queue == queue) by_door[static_cast<int>(g.door)] += g.plan->per_member.gpus * static_cast<int64_t>(g.plan->slots.size());
  };
  if (state_) {
    // Every plan is a running allocation "plan:<gang>" of state_: walk those (a few hundred), not
    // every gang (100,000 pending ones, at every quota refusal of an Admit call).
    for (const auto& [id, a] : state_->running()) {
      if (id.rfind("plan:", 0) != 0) continue;
      if (auto g = gangs_.find(id.substr(5)); g != gangs_.end()) add_plan(g->second);
    }
  } else {
    for (const auto& [key, g] : gangs_) add_plan(g);
  }
  return "queue " + queue + " holds " + std::to_string(by_door[0] + by_door[1]) + " GPUs: kubernetes " +
         std::to_string(by_door[0]) + ", slurm " + std::to_string(by_door[1]);
}

std::string Engine::PlanAheadLocked(const Workload& w, std::vector<PodRefInfo>* activate) {
  const QueueTree& t = ledger_.tree();
  const int own = w.queue_id > 0 ? w.queue_id : t.Find(w.queue);
  if (own <= 0 || pending_by_queue_.size() < 2) return {};
  std::string note;
  std::set<int> done;  // queues whose head does not fit now (or that have none)
  for (int planned = 0; planned < kMaxAhead;) {
    // Ranks move with every plan (a plan charges its queue): recompute, take the best queue ahead.
    const std::vector<int32_t> rank = ledger_.FairShareRanks();
    int best = -1;
    for (const auto& [name, gangs] : pending_by_queue_) {
      const int q = t.Find(name);
      if (q <= 0 || q == own || !t.IsLeaf(q) || done.count(q) || rank[static_cast<size_t>(q)] >= rank[static_cast<size_t>(own)]) {
        continue;
      }
      if (best < 0 || std::pair(rank[static_cast<size_t>(q)], q) < std::pair(rank[static_cast<size_t>(best)], best)) best = q;
    }
    if (best < 0) break;
    std::string head = PlanQueueHeadLocked(t.Name(best), activate);
    if (head.empty()) {
      done.insert(best);
      continue;
    }
    ++planned;
    if (note.empty()) {
      note = "fair share: queue " + t.Name(best) + " is further below its share than " + t.Name(own) + "; its gang " +
             head + " was planned first";
    }
  }
  return note;
}

std::string Engine::PlanQueueHeadLocked(const std::string& queue, std::vector<PodRefInfo>* activate) {
  auto idx = pending_by_queue_.find(queue);
  if (idx == pending_by_queue_.end()) return {};
  // The queue's head: its first gang that can be planned (complete, valid, not planned yet).
  // Gangs planned already (their pods are on their way to bind) are passed over without counting:
  // the head is the first one still to plan.
  int looked = 0;
  for (auto it = idx->second.begin(); it != idx->second.end() && looked < kHeadLookahead; ++it) {
    Gang& h = *it->ptr;
    if (h.plan || h.pods.empty()) continue;
    ++looked;
    PodSchedulingSpec spec;
    auto hw = PendingWorkloadLocked(h, &spec);
    if (!hw || !pods_.at(*h.pods.begin()).spec_error.ok() || static_cast<int32_t>(h.pods.size()) < spec.gang_min) continue;
    const std::string key = h.key;
    if (ScheduleGangLocked(h, spec, std::move(*hw)).outcome != Outcome::kPlaced) return {};
    for (const auto& u : h.pods) {
      const PodInfo& m = pods_.at(u);
      // Only Kubernetes pods are activated; a Slurm gang's plan is collected by the next Admit.
      if (m.node_name.empty() && m.door == FrontDoor::kKubernetes) activate->push_back({m.uid, m.ns, m.name});
    }
    return key;
  }
  return {};
}

PlanResult Engine::PlanPod(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  PlanResult r;
  ExpirePlansLocked();
  auto pit = pods_.find(uid);
  if (pit == pods_.end()) return r.status = Status::Unschedulable("pod is not synced to the engine yet", "engine"), r;
  const PodInfo& pod = pit->second;
  PodSchedulingSpec spec;
  Status st;
  const std::string key = GangKeyLocked(pod, &spec, &st);
  if (!st.ok()) return r.status = st, r;
  r.gang = key;
  auto git = gangs_.find(key);
  if (git == gangs_.end()) return r.status = Status::Unschedulable("gang " + key + " is not known yet", "engine"), r;
  Gang& g = git->second;
  if (!g.summary.conflict.empty()) return r.status = Status::Unresolvable(g.summary.conflict, "podspec"), r;
  EnsureStateLocked();  // drops plans whose nodes left, before a member claims a slot on one
  auto claim = [&]() -> bool {
    for (auto& s : g.plan->slots) {
      if (s.pod_uid == uid) return r.node = s.node, true;
    }
    for (auto& s : g.plan->slots) {
      if (s.pod_uid.empty()) return s.pod_uid = uid, r.node = s.node, true;
    }
    return false;
  };
  if (g.plan) {
    r.domain = g.plan->domain;
    r.explanation = g.plan->explanation;
    if (!claim()) {
      r.status = Status::Unschedulable("gang " + key + ": every slot of its plan is taken (more pods than the plan's " +
                                           std::to_string(g.plan->slots.size()) + " members)",
                                       "gang");
    }
    return r;
  }
  // Plan the whole gang now.
  int32_t bound = 0;
  auto built = GangWorkloadLocked(g, spec, &bound);
  if (!built) {
    r.status = Status::Unresolvable("gang " + key + " already has " + std::to_string(bound) + " of " +
                                        std::to_string(spec.gang_size) + " members bound or finished; this pod is surplus",
                                    "gang");
    return r;
  }
  ledger_.Advance(clock_());
  EnsureStateLocked();
  if (book_stale_) RefreshReservationsLocked();  // a refresh skipped under a second ago is due
  const std::string ahead = PlanAheadLocked(*built, &r.activate);
  Decision d = ScheduleGangLocked(g, spec, std::move(*built));
  if (d.outcome != Outcome::kPlaced) {
    r.status = d.status;
    if (r.status.ok()) r.status = Status::Unschedulable(d.explanation, "engine");
    // The notes the event gets beyond the decision, in explain's "last" too (its words are the event's).
    std::string notes;
    if (!spec.required_level.empty() && g.summary.bound > 0) {  // pinned to them (GangWorkloadLocked)
      notes = "gang " + key + " has " + std::to_string(g.summary.bound) + " member(s) running: the rest goes only into their " +
              spec.required_level + " domain (" + kLabelTopologyRequired + ")";
      r.status.AddReason(notes);
    }
    if (!ahead.empty()) r.status.AddReason(ahead);
    if (!notes.empty()) g.last_reason += "; " + notes;
    if (!ahead.empty()) g.last_reason += "; " + ahead;
    return r;
  }
  r.domain = g.plan->domain;
  r.explanation = g.plan->explanation;
  claim();
  return r;
}

}  // namespace tidal
