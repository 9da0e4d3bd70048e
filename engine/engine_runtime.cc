// Engine: how work ended, and the learned runtime correction (engine/workload_ends.h has the
// classification, core/state/runtime_history.h the correction).
//   - NoteMemberEndLocked: a bound member ends (its final phase, a delete, a relist without it);
//     a Kubernetes gang is classified when its last member holding capacity ends, a Slurm job by
//     its FinishedJob (FinishedJobLocked). tidal_finished_workloads_total{door, end} counts
//     them; completed work and timeouts that declared a runtime are samples of their queue.
//   - CorrectedRuntimeLocked / CorrectedFillByLocked (ReservationViewLocked's fill_by): a PREEMPTIBLE workload that declared a runtime
//     also fills a perishable window (engine_perishable.cc) when its declared runtime x its queue's
//     ratio ends before the close, even when it does not checkpoint on notice (fill: checkpointing
//     refuses it otherwise). Still there near the close, it gets its notice like any filler, so a
//     wrong estimate costs only preemptible work; non-preemptible work needs its declared runtime.
//   - RuntimeNoteLocked (explain) and RuntimeGaugesLocked (tidal_runtime_correction_ratio{queue}).
// Threading and ownership: as engine.cc: the *Locked functions run under mu_; ends_ is the Engine's.
#include <algorithm>
#include <cmath>

#include "core/api/duration.h"
#include "engine/engine.h"

namespace tidal {

WorkloadEnd MemberEndOf(const PodInfo& p, bool was_terminating) {
  const bool deleting = p.terminating || was_terminating;
  if (p.phase == PodPhase::kSucceeded) return deleting ? WorkloadEnd::kCancelled : WorkloadEnd::kCompleted;
  if (p.phase == PodPhase::kFailed) return deleting ? WorkloadEnd::kCancelled : WorkloadEnd::kFailed;
  return WorkloadEnd::kUnknown;
}

bool WorkloadEnds::FirstFinish(const std::string& gang, int64_t end_unix) {
  std::string key = gang + "@" + std::to_string(end_unix);
  if (!seen_.insert(key).second) return false;
  seen_order_.push_back(std::move(key));
  while (seen_order_.size() > kMaxSeen) {
    seen_.erase(seen_order_.front());
    seen_order_.pop_front();
  }
  return true;
}

void WorkloadEnds::Prune(int64_t now) {
  if ((open.size() > kMaxOpen / 2 || slurm.size() > kMaxOpen / 2) && now - swept_s_ >= 60) {
    swept_s_ = now;
    for (auto it = open.begin(); it != open.end();) it = it->second.touched_s < now - kForgetAfterS ? open.erase(it) : std::next(it);
    for (auto it = slurm.begin(); it != slurm.end();) it = it->second.ended_s < now - kForgetAfterS ? slurm.erase(it) : std::next(it);
  }
  if (open.size() >= kMaxOpen) open.clear();  // still over: a flood of half-ended gangs; they count as never seen
  if (slurm.size() >= kMaxOpen) slurm.clear();
}

void Engine::NoteMemberEndLocked(const std::string& uid, WorkloadEnd how) {
  auto b = bound_since_.find(uid);  // bound (charged) members have one
  auto gk = pod_gang_.find(uid);
  auto pod = pods_.find(uid);
  if (b == bound_since_.end() || gk == pod_gang_.end() || pod == pods_.end()) return;  // not a bound member of Tidal's
  const PodInfo& p = pod->second;
  // The engine's own disruption decides: the member did not run to its own end.
  if (const DisruptionRecord* r = disruptions_.ForPod(p.uid)) {
    how = r->cause == DisruptionCause::kRuntimeLimit ? WorkloadEnd::kTimeout : WorkloadEnd::kDisrupted;
  } else if (b->second.overdue) {
    how = WorkloadEnd::kTimeout;  // past its limit and reported for eviction
  }
  const int64_t now = clock_();
  ends_.Prune(now);
  const std::string& key = gk->second;
  if (p.door == FrontDoor::kSlurm) {  // how it ended comes with its FinishedJob
    auto& s = ends_.slurm[key];
    s.queue = MetricQueueLocked(b->second.queue);
    s.declared_s = b->second.runtime_limit_s;
    s.ended_s = now;
    s.disrupted = s.disrupted || how == WorkloadEnd::kDisrupted;
    return;
  }
  auto [it, fresh] = ends_.open.try_emplace(key);
  WorkloadEnds::Open& o = it->second;
  o.end = fresh ? how : WorseEnd(o.end, how);
  o.run_s = std::max(o.run_s, std::max<int64_t>(0, now - b->second.since_s));
  o.declared_s = std::max(o.declared_s, b->second.runtime_limit_s);
  o.queue = MetricQueueLocked(b->second.queue);
  o.touched_s = now;
  if (auto g = gangs_.find(key); g != gangs_.end()) {
    for (const auto& other : g->second.pods) {
      if (other != uid && charged_.count(other)) return;  // others still run: the gang has not ended
    }
  }
  const WorkloadEnds::Open done = std::move(o);
  ends_.open.erase(it);
  FinishWorkloadLocked(FrontDoor::kKubernetes, done.end, done.queue, done.run_s, done.declared_s);
}

void Engine::FinishedJobLocked(const FinishedJobInfo& f) {
  SettleFinishedLocked(f);  // the gap ledger (engine_sync.cc)
  if (f.gang.empty() || !ends_.FirstFinish(f.gang, f.end_unix)) return;  // seen already (a re-read jobcomp)
  WorkloadEnd end = f.end;
  std::string queue;
  int64_t declared = 0;
  if (auto s = ends_.slurm.find(f.gang); s != ends_.slurm.end()) {
    queue = s->second.queue;
    declared = s->second.declared_s;
    // The run the engine requeued (its members ended within 10 min of this record's end).
    if (s->second.disrupted && std::llabs(s->second.ended_s - f.end_unix) <= 600) end = WorkloadEnd::kDisrupted;
    ends_.slurm.erase(s);
  } else if (auto g = gangs_.find(f.gang); g != gangs_.end()) {
    // The record came before the door reported the members gone: what the engine knows of them now.
    for (const auto& uid : g->second.pods) {
      auto b = bound_since_.find(uid);
      if (b == bound_since_.end()) continue;
      queue = MetricQueueLocked(b->second.queue);
      declared = b->second.runtime_limit_s;
      if (disruptions_.ForPod(uid) != nullptr) end = WorkloadEnd::kDisrupted;
    }
  }
  const int64_t run = f.end_unix >= f.start_unix && f.start_unix > 0 ? f.end_unix - f.start_unix : -1;
  FinishWorkloadLocked(FrontDoor::kSlurm, end, queue, run, declared);
}

void Engine::FinishWorkloadLocked(FrontDoor door, WorkloadEnd end, const std::string& queue, int64_t run_s,
                                  int64_t declared_s) {
  if (metrics_ != nullptr) {
    metrics_->finished_workloads.With({std::string(FrontDoorName(door)), std::string(WorkloadEndName(end))}).Increment();
  }
  if (queue.empty()) return;  // a job the engine never knew: counted, but nothing to learn
  ends_.history.Add(queue, end, run_s, declared_s, cfg_.runtime_correction.window);
}

int64_t Engine::CorrectedRuntimeLocked(const Workload& w, std::string* note) const {
  if (w.runtime_limit_s <= 0) return 0;
  const std::string queue = MetricQueueLocked(w.queue);
  const RuntimeCorrectionConfig& cfg = cfg_.runtime_correction;
  const auto c = ends_.history.Estimate(queue, cfg);
  if (note != nullptr) {
    *note = "declared " + FormatDurationSeconds(w.runtime_limit_s) + "; ";
    if (!cfg.enabled) {
      *note += "no runtime correction (perishable.runtimeCorrection: false)";
    } else if (!c) {
      *note += "queue " + queue + " has " + std::to_string(ends_.history.Samples(queue)) + " of the " +
               std::to_string(cfg.min_samples) + " completed jobs it needs to learn a runtime correction";
    } else {
      const int64_t expected = static_cast<int64_t>(std::ceil(static_cast<double>(w.runtime_limit_s) * c->ratio));
      *note += "queue " + queue + "'s completed jobs used at most " + std::to_string(std::lround(c->ratio * 100)) +
               "% of their limit (p" + std::to_string(std::lround(cfg.quantile * 100)) + " of " + std::to_string(c->samples) +
               ") -> expected " + FormatDurationSeconds(expected);
      if (!w.preemptible) *note += " (not preemptible: only its declared runtime counts before a close)";
    }
  }
  if (!c || !w.preemptible || cfg_.perishable_fill == EngineConfig::PerishableFill::kNone) return 0;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(static_cast<double>(w.runtime_limit_s) * c->ratio)));
}

int64_t Engine::CorrectedFillByLocked(const Workload& w) const {
  const int64_t expected = CorrectedRuntimeLocked(w, nullptr);
  return expected > 0 ? clock_() + expected + kDrainSlackS : INT64_MAX;  // expected gone by then
}

std::string Engine::RuntimeNoteLocked(const Gang& g) const {
  if (g.pods.empty()) return "";
  const auto& spec = SpecLocked(pods_.at(*g.pods.begin()));
  if (!spec.ok() || spec->runtime_limit_s <= 0) return "";
  Workload w;
  w.queue = spec->queue;
  w.preemptible = spec->preemptible;
  w.runtime_limit_s = spec->runtime_limit_s;
  std::string note;
  (void)CorrectedRuntimeLocked(w, &note);
  return note;
}

void Engine::RuntimeGaugesLocked(EngineGauges& out) const {
  for (const auto& q : ends_.history.Queues()) {
    if (auto c = ends_.history.Estimate(q, cfg_.runtime_correction)) out.runtime_correction.push_back({{q}, c->ratio});
  }
}

}  // namespace tidal
