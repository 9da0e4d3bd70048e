// Engine: the Slurm door's decision call (Admit) and the activations one door's call leaves for
// another (TakeActivations).
//
// Kubernetes asks pod by pod (PlanPod, in kube-scheduler's queue order); Slurm's adapter asks once
// per poll for everything that may start now. Admit runs two passes, both under mu_:
//   1. Fair share across both doors: while some queue's head gang fits, plan the head of the
//      queue furthest below its share (ranks recomputed after every plan, QuotaLedger::
//      FairShareRanks), whichever door it came through. A Kubernetes gang planned here is queued
//      for TakeActivations (the shim moves its pods to kube-scheduler's active queue).
//   2. Backfill of this door's gangs in queue order (queues by rank, then priority and submit
//      time): each is tried once, honouring the reservation book, so a gang behind a blocked head
//      starts only where it delays no reservation. Gangs of a shape (request, size, topology,
//      model, constraints, queue) that failed are not tried again in the same call, so a deep queue
//      of few shapes costs a few placements; kAdmitVisit bounds the walk, kAdmitTries the tries.
//      Once the tries are spent, only gangs whose reason is returned (the first max_waiting
//      waiting ones) are still visited for their shape's reason.
// Then every gang of the door holding a plan is returned with one node per member (its slots
// claimed by the members, in member order), and the waiting ones with the reason of their last
// attempt, after the door's pods whose spec the engine refused (RefusedWaiting). The plans stay in the state (capacity and quota held) until the door reports the
// members bound (the adapter released the job pinned to those nodes) or plan_ttl_s passes.
//
// Threading: Admit and TakeActivations take mu_; the helpers run under it.
#include <algorithm>
#include <functional>
#include <set>
#include <tuple>

#include "engine/engine.h"

namespace tidal {

namespace {
constexpr int32_t kAdmitPlans = 256;    // fair-share head plans per call
constexpr int32_t kAdmitTries = 512;    // placements tried per call (both passes)
constexpr int32_t kAdmitVisit = 50000;  // pending gangs walked by the backfill pass per call

// The door's pending pods held in no gang because their spec was refused when they were stored
// (UpsertPodLocked: a tidal.dev/ value ParsePodSchedulingSpec does not accept, or a gang of the
// other door), as waiting entries: one per gang they name ("slurm/123" for a Slurm job's
// members; "<ns>/pod/<name>" for a pod of no gang), the reason "cannot schedule: " + the refusal
// (it names the key and the accepted values). Kubernetes hears of such a pod through CheckPod and
// PlanPod; the Slurm door asks only Admit, so without this its job waited, held, with no reason
// shown. Checked here rather than in tidal-slurm: the engine alone knows its topology levels and
// reads the keys, so the adapter stays a translator and the two doors cannot disagree.
// One walk over the pods, reading two fields of each (a stored spec that failed is kept parsed).
std::vector<WaitingInfo> RefusedWaiting(const std::unordered_map<std::string, PodInfo>& pods, FrontDoor door,
                                        const std::function<bool(const PodInfo&)>& ours, size_t cap) {
  std::vector<WaitingInfo> out;
  std::set<std::string> seen;
  for (const auto& [uid, p] : pods) {
    if (out.size() >= cap) break;
    if (p.door != door || !p.node_name.empty() || p.phase != PodPhase::kPending || p.terminating) continue;
    const Status* why = !p.spec_error.ok() ? &p.spec_error : p.spec && !p.spec->ok() ? &p.spec->status() : nullptr;
    if (why == nullptr || !ours(p)) continue;
    const std::string* gang = podkeys::Lookup(p.labels, p.annotations, kLabelGang);
    std::string key = podkeys::GangKeyOf(p.ns, p.name, gang != nullptr ? *gang : std::string());
    if (seen.insert(key).second) out.push_back({std::move(key), "cannot schedule: " + why->Message()});
  }
  std::sort(out.begin(), out.end(), [](const WaitingInfo& a, const WaitingInfo& b) { return a.gang < b.gang; });
  return out;
}
}  // namespace

std::string Engine::ShapeKey(const Workload& w) {
  return w.queue + "|" + std::to_string(w.per_member.gpus) + "|" + std::to_string(w.per_member.cpu_milli) + "|" +
         std::to_string(w.per_member.memory_bytes) + "|" + std::to_string(w.members) + "|" +
         std::to_string(w.min_members) + "|" + w.required_level + "|" + w.preferred_level + "|" + w.gpu_model + "|" +
         w.constraints_sig + (w.preemptible ? "|p" : "") + "|" + std::to_string(w.runtime_limit_s) + "|" +
         std::to_string(static_cast<int>(w.workload_class));  // the run time decides what backfills
}

AdmitResult Engine::Admit(FrontDoor door, int32_t max_waiting) {
  std::lock_guard<std::mutex> lock(mu_);
  AdmitResult r;
  ExpirePlansLocked();
  ledger_.Advance(clock_());
  EnsureStateLocked();
  if (book_stale_) RefreshReservationsLocked();
  const QueueTree& t = ledger_.tree();

  // Pass 1: fair-share heads, both doors.
  std::set<int> done;
  for (int32_t planned = 0; planned < kAdmitPlans && r.tried < kAdmitTries;) {
    const std::vector<int32_t> rank = ledger_.FairShareRanks();
    int best = -1;
    for (const auto& [name, gangs] : pending_by_queue_) {
      const int q = t.Find(name);
      if (q <= 0 || !t.IsLeaf(q) || done.count(q)) continue;
      if (best < 0 || std::pair(rank[static_cast<size_t>(q)], q) < std::pair(rank[static_cast<size_t>(best)], best)) best = q;
    }
    if (best < 0) break;
    std::vector<PodRefInfo> activate;
    ++r.tried;
    if (PlanQueueHeadLocked(t.Name(best), &activate).empty()) {
      done.insert(best);
      continue;
    }
    ++planned;
    if (door != FrontDoor::kKubernetes) {
      auto& out = activations_[static_cast<int>(FrontDoor::kKubernetes)];
      out.insert(out.end(), activate.begin(), activate.end());
    }
  }

  // Pass 2: backfill this door's gangs in queue order.
  std::vector<int32_t> rank = ledger_.FairShareRanks();
  std::vector<std::pair<int32_t, std::string>> queues;
  for (const auto& [name, gangs] : pending_by_queue_) {
    const int q = t.Find(name);
    queues.push_back({q > 0 ? rank[static_cast<size_t>(q)] : INT32_MAX, name});
  }
  std::sort(queues.begin(), queues.end());
  std::map<std::string, std::pair<std::string, bool>> failed;  // shape -> why it did not fit, wants_room
  std::vector<Gang*> order;                   // this door's pending gangs, in queue order
  const int32_t cap = max_waiting > 0 ? max_waiting : 10000;
  int32_t visited = 0, unplanned = 0;         // unplanned: gangs in `order` without a plan
  for (const auto& [qrank, name] : queues) {
    auto idx = pending_by_queue_.find(name);
    if (idx == pending_by_queue_.end()) continue;
    // Copy the gangs: a plan changes the index (no gang is erased here: the pointers stay valid).
    std::vector<Gang*> gangs;
    gangs.reserve(idx->second.size());
    for (const auto& h : idx->second) {
      if (h.ptr->door == door) gangs.push_back(h.ptr);
    }
    for (Gang* gp : gangs) {
      Gang& g = *gp;
      order.push_back(&g);
      if (g.plan) continue;
      // Once the tries are spent a visit only gives the gang its shape's reason: worth it only for
      // the gangs whose reason is returned (the first `cap` waiting ones).
      if (visited < kAdmitVisit && (r.tried < kAdmitTries || unplanned < cap)) {
        ++visited;
        std::optional<Workload> built;
        const Workload* w = nullptr;
        if (PendingWorkloadRefLocked(g, &built, &w) && static_cast<int32_t>(g.pods.size()) >= (*g.summary.spec)->gang_min) {
          // What may fill perishable windows and reservation gaps differs by the notice too.
          const std::string shape = (built ? ShapeKey(*w) : g.summary.shape) + "|" + std::to_string(FillNoticeLocked(*w));
          if (auto f = failed.find(shape); f != failed.end()) {
            g.last_reason = f->second.first;
            g.wants_room = f->second.second;
          } else if (r.tried < kAdmitTries) {
            ++r.tried;
            Workload mine = built ? std::move(*built) : *w;
            if (ScheduleGangLocked(g, **g.summary.spec, std::move(mine)).outcome != Outcome::kPlaced) {
              failed[shape] = {g.last_reason, g.wants_room};
            }
          }
        }
      }
      if (!g.plan) ++unplanned;
    }
  }

  // The door's gangs holding a plan, slots claimed by their members; the others' reasons.
  r.waiting = RefusedWaiting(pods_, door, [this](const PodInfo& p) { return OursLocked(p); }, static_cast<size_t>(cap));
  for (Gang* gp : order) {
    Gang& g = *gp;
    const std::string& key = g.key;
    if (!g.plan) {
      if (static_cast<int32_t>(r.waiting.size()) < cap) {
        r.waiting.push_back({key, g.last_reason.empty() ? std::string("waiting in queue order") : g.last_reason});
      }
      continue;
    }
    AdmissionInfo a;
    a.gang = key;
    a.domain = g.plan->domain;
    a.explanation = g.plan->explanation;
    std::vector<std::string> members;
    for (const auto& u : g.pods) {
      const PodInfo& p = pods_.at(u);
      if (p.node_name.empty() && !p.terminating && p.phase == PodPhase::kPending) members.push_back(u);
    }
    for (const auto& u : members) {
      auto own = std::find_if(g.plan->slots.begin(), g.plan->slots.end(), [&](const Slot& s) { return s.pod_uid == u; });
      if (own == g.plan->slots.end()) {
        own = std::find_if(g.plan->slots.begin(), g.plan->slots.end(), [](const Slot& s) { return s.pod_uid.empty(); });
      }
      if (own == g.plan->slots.end()) break;
      own->pod_uid = u;
      own->reserved = true;
      a.nodes.push_back(own->node);
    }
    if (a.nodes.size() == g.plan->slots.size()) r.admitted.push_back(std::move(a));
  }
  r.lent_nodes = LentNodesLocked(door);
  return r;
}

std::vector<PodRefInfo> Engine::TakeActivations(FrontDoor door) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PodRefInfo> out;
  if (door == FrontDoor::kKubernetes) {
    DueGrowthsLocked(clock_());  // elastic gangs whose wait ended
    ActivateHeldLocked();        // preemptors whose victims have all gone
  }
  out.swap(activations_[static_cast<int>(door)]);
  // Only pods still pending and known (a pod may have bound or gone since it was queued).
  std::set<std::string> seen;
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const PodRefInfo& p) {
                             auto it = pods_.find(p.uid);
                             return !seen.insert(p.uid).second || it == pods_.end() || !it->second.node_name.empty();
                           }),
            out.end());
  return out;
}

}  // namespace tidal
