// Engine: the one disruption path (Disruptions, the front doors' poll; the book's steps are in
// disruption_book.h). Every cause opens a disruption here and goes the same way:
//   preemption / reclaim  Preempt (engine_preempt.cc) opens one per victim workload; a victim
//                         that checkpoints on notice is not evicted by PostFilter but given notice;
//   runtime-limit         OpenOverdueLocked, at each poll: a pod of this scheduler past its
//                         tidal.dev/runtime-limit plus the grace takes its whole gang with it (the
//                         members share the limit; a gang is never left half-running);
//   member-lost, unhealthy-node, drain   engine_health.cc, at each poll;
//   reservation           OpenGapNoticesLocked (engine_gap_fill.cc), at each poll: fillers in the
//                         gap before a reserved start give its nodes back;
//   reclaim of a lent node  LendLocked (engine_lending.cc), at each poll.
// The notice is what the workload asks for (tidal.dev/checkpoint-on-notice), at most
// max_notice_s; a member reporting a checkpoint since (tidal.dev/last-checkpoint) ends it early.
// A disruption is counted when its last pod is gone, if it was evicted (tidal_disruptions_total,
// GPU-seconds lost since the last checkpoint before the eviction, the notice-to-eviction time,
// gangs requeued whole) and written to the decision log when opened and when done.
//
// Threading and ownership: as engine.cc: Disruptions takes mu_, the *Locked functions run under
// it. disruptions_ is the Engine's (engine.h, block "disruption path").
#include <algorithm>
#include <map>

#include "core/api/duration.h"
#include "core/state/headroom.h"
#include "engine/engine.h"

namespace tidal {

std::string Engine::WorkloadIdLocked(const PodInfo& p) const {
  if (auto g = pod_gang_.find(p.uid); g != pod_gang_.end()) return g->second;
  return "pod:" + p.Key();
}

int64_t Engine::OpenDisruptionLocked(const std::string& id, DisruptionCause cause, const std::vector<std::string>& uids,
                                     std::string reason, int64_t notice_cap_s) {
  if (const DisruptionRecord* open = disruptions_.Find(id)) return open->notice_s;
  const int64_t now = clock_();
  DisruptionRecord r;
  r.id = id;
  r.cause = cause;
  r.reason = std::move(reason);
  r.opened_s = now;
  int64_t started = INT64_MAX, checkpoint = -1, interval = 0;
  for (const auto& uid : uids) {
    auto p = pods_.find(uid);
    if (p == pods_.end() || !p->second.UsesCapacity()) continue;
    const PodInfo& pod = p->second;
    r.pods.push_back({pod.uid, pod.ns, pod.name});
    r.door = pod.door;
    r.gpus += pod.request.gpus;
    int64_t since = now;
    if (pod.start_unix > 0) {
      since = pod.start_unix;
    } else if (auto b = bound_since_.find(uid); b != bound_since_.end()) {
      since = b->second.since_s;
    }
    started = std::min(started, since);
    checkpoint = std::max(checkpoint, UsableCheckpoint(pod.last_checkpoint_unix, now));
    if (r.pods.size() == 1 && pod_gang_.count(uid)) {
      if (const auto& spec = SpecLocked(pod); spec.ok()) {
        r.notice_s = std::max<int64_t>(0, std::min({spec->checkpoint_on_notice_s, cfg_.max_notice_s, notice_cap_s}));
        interval = spec->checkpoint_interval_s;
      }
    }
  }
  if (r.pods.empty()) return -1;
  // Work at risk, as the victim choice counts it (plugins/preemption: WorkLost): since the last
  // reported checkpoint, else since the last interval boundary, else since the start.
  r.at_risk_since_s = started;
  if (checkpoint >= started) {
    r.at_risk_since_s = checkpoint;
  } else if (interval > 0 && now > started) {
    r.at_risk_since_s = now - (now - started) % interval;
  }
  if (auto g = gangs_.find(id); g != gangs_.end() && r.pods.size() > 1) {
    size_t bound = 0;
    for (const auto& u : g->second.pods) {
      if (auto p = pods_.find(u); p != pods_.end() && p->second.UsesCapacity()) ++bound;
    }
    r.whole_gang = bound == r.pods.size();
  }
  const int64_t notice = r.notice_s;
  if (decision_log_ != nullptr) {
    decision_log_->Write({{"ts", now}, {"workload", id}, {"outcome", "disruption"}, {"cause", DisruptionCauseName(cause)},
                          {"pods", r.pods.size()}, {"notice_s", notice}, {"reason", r.reason}});
  }
  disruptions_.Open(std::move(r));
  return notice;
}

void Engine::DisruptionSeenLocked(const PodInfo& p) {
  const int64_t now = clock_();
  const DisruptionRecord* open = disruptions_.ForPod(p.uid);
  if (p.last_checkpoint_unix >= 0 && !disruptions_.Checkpointed(p.uid, p.last_checkpoint_unix, now) && open != nullptr &&
      decision_log_ != nullptr) {
    decision_log_->Write({{"ts", now}, {"workload", open->id}, {"outcome", "checkpoint-ignored"},
                          {"reason", "pod " + p.Key() + ": " + kLabelLastCheckpoint + " " + FormatUnixTime(p.last_checkpoint_unix) +
                                         " is more than " + FormatDurationSeconds(kCheckpointSkewS) +
                                         " ahead of the engine's clock; ignored (it does not end the notice)"}});
  }
  if (!p.UsesCapacity()) DisruptionGoneLocked(p.uid);
}

void Engine::DisruptionGoneLocked(const std::string& uid) {
  if (auto done = disruptions_.PodGone(uid)) CloseDisruptionLocked(*done);
}

void Engine::CloseDisruptionLocked(const DisruptionRecord& r) {
  const std::string cause(DisruptionCauseName(r.cause));
  const bool evicted = r.evicted_s > 0;
  const double lost = r.LostGpuSeconds();
  if (evicted && metrics_ != nullptr) {
    metrics_->disruptions.With({cause}).Increment();
    if (lost > 0) metrics_->disruption_lost_gpu_seconds.With({cause}).Increment(lost);
    metrics_->disruption_notice.With({cause}).Observe(static_cast<double>(std::max<int64_t>(0, r.evicted_s - r.opened_s)));
    if (r.whole_gang) metrics_->gangs_requeued_whole.With({cause}).Increment();
  }
  if (decision_log_ != nullptr) {
    decision_log_->Write({{"ts", clock_()}, {"workload", r.id}, {"outcome", evicted ? "disrupted" : "disruption-averted"},
                          {"cause", cause}, {"pods", r.pods_at_open}, {"notice_s", r.notice_s},
                          {"acknowledged", r.acknowledged}, {"evicted_after_s", evicted ? r.evicted_s - r.opened_s : 0},
                          {"lost_gpu_seconds", lost}, {"whole_gang", r.whole_gang}});
  }
}

void Engine::CancelHoldDisruptionsLocked(const PreemptHold& h) {
  for (const auto& v : h.victims) {
    const DisruptionRecord* r = disruptions_.Find(v.id);
    if (r == nullptr || r->evicted_s > 0) continue;
    const DisruptionCause cause = r->cause;
    if (cause != DisruptionCause::kPreemption && cause != DisruptionCause::kReclaim) continue;
    disruptions_.Cancel(v.id);
    if (decision_log_ != nullptr) {
      decision_log_->Write({{"ts", clock_()}, {"workload", v.id}, {"outcome", "disruption-cancelled"},
                            {"cause", DisruptionCauseName(cause)}});
    }
  }
}

void Engine::OpenPreemptionDisruptionsLocked(const std::string& preemptor, PreemptResult& out) {
  const DisruptionCause cause =
      out.reason.find("reclaim") != std::string::npos && out.reason.find("priority") == std::string::npos
          ? DisruptionCause::kReclaim
          : DisruptionCause::kPreemption;
  // A queue growing into its headroom gets the room back within its grace cap (core/state/headroom.h).
  int64_t cap = INT64_MAX;
  if (auto g = gangs_.find(preemptor); g != gangs_.end() && g->second.summary.spec != nullptr && g->second.summary.spec->ok()) {
    const QueueTree& t = ledger_.tree();
    if (const int q = t.Find((*g->second.summary.spec)->queue); q > 0 && HeadroomGpus(ledger_, q) > 0) cap = t.Spec(q).headroom_grace_s;
  }
  int64_t longest = 0;
  for (const auto& [id, pods] : out.victim_gangs) {
    std::vector<std::string> uids;
    for (const auto& p : pods) uids.push_back(p.uid);
    const int64_t notice =
        OpenDisruptionLocked(id, cause, uids, "preempted for " + preemptor + " (" + out.reason + ")", cap);
    const DisruptionRecord* r = disruptions_.Find(id);
    // Given notice (and not yet told to go): PostFilter gives notice instead of evicting.
    if (notice > 0 && r != nullptr && r->evicted_s == 0 && !r->acknowledged) {
      out.victim_notice.emplace_back(notice, r->deadline_s);
      longest = std::max(longest, r->deadline_s - clock_());
    } else {
      out.victim_notice.emplace_back(0, 0);
    }
  }
  if (auto h = holds_.find("plan:" + preemptor); h != holds_.end()) h->second.notice_s = longest;
}

void Engine::OpenOverdueLocked(int64_t now) {
  // By workload: one overdue member takes its whole gang (all its members using capacity).
  // (Overdue pods are this scheduler's, so each is in a gang of its own at least.)
  std::map<std::string, std::pair<std::string, std::string>> found;  // workload -> uid, reason
  for (auto& o : OverdueLocked(now)) {
    auto p = pods_.find(o.pod.uid);
    if (p != pods_.end()) found.emplace(WorkloadIdLocked(p->second), std::make_pair(o.pod.uid, std::move(o.reason)));
  }
  for (auto& [id, what] : found) {
    if (disruptions_.Find(id) != nullptr) continue;
    std::vector<std::string> uids = {what.first};
    if (auto g = gangs_.find(id); g != gangs_.end()) uids.assign(g->second.pods.begin(), g->second.pods.end());
    OpenDisruptionLocked(id, DisruptionCause::kRuntimeLimit, uids, std::move(what.second));
  }
}

std::vector<DisruptionAction> Engine::Disruptions(FrontDoor door) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = clock_();
  ExpireHoldsLocked();
  if (door == FrontDoor::kKubernetes) {
    OpenOverdueLocked(now);
    OpenMemberLostLocked();
  }
  OpenUnhealthyLocked(now);
  OpenDrainsLocked(now);
  // A refresh skipped under a second ago (book_stale_) is due even when no PlanPod or Admit call
  // follows: a gang that failed to place just after a refresh, on a cluster that then goes quiet
  // (kube-scheduler parks it until an event), would otherwise wait without a reservation. The
  // front doors poll this every disruptionIntervalMs; the gap notices below see the fresh book.
  if (book_stale_) {
    ledger_.Advance(now);
    EnsureStateLocked();
    RefreshReservationsLocked();
  }
  OpenGapNoticesLocked(now);  // fillers before reserved starts (engine_gap_fill.cc)
  CountPerishableLocked(now);
  LendLocked(now);
  return disruptions_.Due(door, now);
}

}  // namespace tidal
