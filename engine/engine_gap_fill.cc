// Engine: fillers in the gaps before reserved starts. A backfill reservation's nodes before its
// start are a perishable window with a known end (the start): besides work that ends in time (the
// backfill rule), by perishable.fill they take preemptible work whose notice (FillNoticeLocked),
// kDrainSlackS and perishable.minSeconds fit before the start: ReservationViewLocked leaves the
// reservation off for such a workload (GapOpenLocked), as it leaves a close off. One rule for both.
// Giving the nodes back (OpenGapNoticesLocked, at each Disruptions poll): the fillers a
// reservation needs gone (GapBlockersLocked: on each of its nodes, as few as leave room for its
// members, counting the work that ends by the start) get their notice through the one disruption
// path (cause reservation) at start - notice - kDrainSlackS, as late as it allows, so the gang
// starts at its start; when the gang could start now but for them, at once. A notice not yet
// carried out is withdrawn once its filler blocks nothing (the reservation moved later or onto
// other nodes, or went). Once a reservation's noticed fillers are gone its nodes take no new
// filler, and its pending Kubernetes pods go to TakeActivations once (a retry that sees the room).
// Measured with the closes: tidal_gpus{state="perishable"} (GapGpusLocked, engine_views.cc) and
// tidal_perishable_gpu_seconds_total (CountGapsLocked, from CountPerishableLocked).
// Threading and ownership: as engine.cc: the *Locked functions run under mu_; gap_ is the
// Engine's (engine.h, engine/gap_fill.h).
#include <algorithm>

#include "core/api/duration.h"
#include "engine/engine.h"
#include "engine/maintenance.h"

namespace tidal {

namespace {
using PodsOn = std::map<std::string, std::vector<const PodInfo*>>;
// Every bound pod (anyone's: other schedulers' work ends too) on the named nodes, by node.
PodsOn BoundPodsOn(const std::set<std::string>& nodes,
                   const std::unordered_map<std::string, std::pair<std::string, Resources>>& charged,
                   const std::unordered_map<std::string, PodInfo>& pods) {
  PodsOn out;
  if (nodes.empty()) return out;
  for (const auto& [uid, where] : charged) {
    if (!nodes.count(where.first)) continue;
    if (auto p = pods.find(uid); p != pods.end()) out[where.first].push_back(&p->second);
  }
  return out;
}
}  // namespace

bool Engine::GapOpenLocked(const std::string& id, int64_t start_s, int64_t fill_until) const {
  return start_s >= fill_until && !HeldLocked(id) && !gap_.calls.count(id);
}

std::vector<GapFiller> Engine::GapBlockersLocked(const std::string& id, const Reservation& res, int64_t now,
                                                 const std::map<std::string, std::vector<const PodInfo*>>& on,
                                                 bool* early) const {
  *early = false;
  std::vector<GapFiller> out;
  if (cfg_.perishable_fill == EngineConfig::PerishableFill::kNone || HeldLocked(id) || id.rfind("plan:", 0) != 0) return out;
  const std::string own = id.substr(5);
  if (auto g = gangs_.find(own); g == gangs_.end() || g->second.plan) return out;
  // Each bound pod on its nodes: a filler (ours, it runs past the start on the timeline and may
  // fill windows), or other work, which leaves by the start when its expected end says so.
  struct Candidate {
    std::map<std::string, Resources> on_node;
    int64_t notice = 0;
    const DisruptionRecord* noticed = nullptr;  // its reservation notice, if given
  };
  std::map<std::string, Candidate> fillers;
  std::map<std::string, Resources> leaving;  // node -> what other work frees by the start
  for (const auto& a : res.assignments) {
    if (a.node < 0 || a.node >= state_->node_count()) return {};
    auto it = on.find(state_->node(a.node).name);
    if (it == on.end()) continue;
    for (const PodInfo* p : it->second) {
      if (!p->UsesCapacity()) continue;
      const std::string wid = WorkloadIdLocked(*p);
      if (wid == own) continue;
      const DisruptionRecord* r = disruptions_.Find(wid);
      int64_t end = 0;
      if (auto b = bound_since_.find(p->uid); b != bound_since_.end()) {
        Workload w;
        w.runtime_limit_s = b->second.runtime_limit_s;
        w.workload_class = b->second.workload_class;
        end = b->second.since_s + sched_->profile().backfill().RuntimeOf(w);
      }
      int64_t notice = -1;
      if (end > res.start_s && (r == nullptr || r->cause == DisruptionCause::kReservation)) {
        if (const auto& spec = SpecLocked(*p); spec.ok()) {
          Workload w;
          w.id = wid;
          w.preemptible = spec->preemptible;
          notice = FillNoticeLocked(w);
        }
      }
      if (notice >= 0) {
        Candidate& c = fillers[wid];
        c.on_node[p->node_name] += p->request;
        c.notice = notice;
        c.noticed = r;
      } else if (r != nullptr || end <= res.start_s) {
        leaving[p->node_name] += p->request;
      }
    }
  }
  if (fillers.empty()) return out;
  auto on_node = [&](const std::string& wid, const std::string& node) {
    auto n = fillers.at(wid).on_node.find(node);
    return n == fillers.at(wid).on_node.end() ? Resources{} : n->second;
  };
  // Early: every node holds its members now once the fillers are gone.
  *early = true;
  for (const auto& a : res.assignments) {
    const Node& node = state_->node(a.node);
    Resources free = node.Free();
    for (const auto& [wid, c] : fillers) free += on_node(wid, node.name);
    if (free.CopiesOf(res.per_member) < a.members) *early = false;
  }
  // As few as leave room on each node: those already given notice first, then the largest.
  std::vector<std::string> order;
  for (const auto& [wid, c] : fillers) order.push_back(wid);
  std::set<std::string> chosen;
  for (const auto& a : res.assignments) {
    const Node& node = state_->node(a.node);
    Resources room = node.Free();
    if (!*early) {
      if (auto l = leaving.find(node.name); l != leaving.end()) room += l->second;
    }
    for (const auto& wid : chosen) room += on_node(wid, node.name);
    std::sort(order.begin(), order.end(), [&](const std::string& x, const std::string& y) {
      const Candidate &cx = fillers.at(x), &cy = fillers.at(y);
      if ((cx.noticed != nullptr) != (cy.noticed != nullptr)) return cx.noticed != nullptr;
      const int64_t gx = on_node(x, node.name).gpus, gy = on_node(y, node.name).gpus;
      return gx != gy ? gx > gy : x < y;
    });
    for (const auto& wid : order) {
      if (room.CopiesOf(res.per_member) >= a.members) break;
      if (chosen.count(wid) || on_node(wid, node.name).IsZero()) continue;
      chosen.insert(wid);
      room += on_node(wid, node.name);
    }
  }
  for (const auto& wid : chosen) {
    const Candidate& c = fillers.at(wid);
    GapFiller f{wid, c.notice, *early ? now : res.start_s - c.notice - kDrainSlackS, 0};
    f.gone_s = c.noticed != nullptr ? c.noticed->deadline_s : *early ? now + c.notice : res.start_s - kDrainSlackS;
    out.push_back(std::move(f));
  }
  return out;
}

void Engine::OpenGapNoticesLocked(int64_t now) {
  EnsureStateLocked();  // the book's NodeIds are state_'s
  std::map<std::string, GapFills::Call> calls;
  std::set<std::string> due;  // fillers whose notice is due now
  if (cfg_.perishable_fill != EngineConfig::PerishableFill::kNone && !book_->empty()) {
    std::set<std::string> names;  // the nodes of reservations fillers may be in (not preemption holds)
    for (const auto& [id, res] : *book_) {
      if (HeldLocked(id)) continue;
      for (const auto& a : res.assignments) {
        if (a.node >= 0 && a.node < state_->node_count()) names.insert(state_->node(a.node).name);
      }
    }
    const auto on = BoundPodsOn(names, charged_, pods_);
    for (const auto& [id, res] : *book_) {
      bool early = false;
      const std::vector<GapFiller> blockers = GapBlockersLocked(id, res, now, on, &early);
      std::set<std::string> nodes;
      for (const auto& a : res.assignments) {
        if (a.node >= 0 && a.node < state_->node_count()) nodes.insert(state_->node(a.node).name);
      }
      const std::string gang = id.substr(5);
      for (const GapFiller& f : blockers) {
        if (now < f.due_s) continue;  // not yet: it runs as long as its notice allows
        due.insert(f.id);
        calls[id].fillers.insert(f.id);
        if (disruptions_.Find(f.id) != nullptr) continue;
        const int64_t cap = early ? INT64_MAX : std::max<int64_t>(0, res.start_s - now - kDrainSlackS);
        OpenDisruptionLocked(f.id, DisruptionCause::kReservation, VictimPodsLocked(f.id, nodes),
                             "its nodes are reserved for gang " + gang + " from " + FormatUnixTime(res.start_s) +
                                 (early ? ", which could start now but for this job" : ""),
                             cap);
      }
      if (calls.count(id) && !gap_.calls.count(id) && decision_log_ != nullptr) {
        std::vector<std::string> fillers(calls[id].fillers.begin(), calls[id].fillers.end());
        decision_log_->Write({{"ts", now}, {"workload", gang}, {"outcome", "reservation-gap-given-back"},
                              {"start", res.start_s}, {"early", early}, {"fillers", fillers}});
      }
    }
  }
  // A reservation whose noticed fillers are all gone keeps its nodes from new fillers until it
  // starts, moves or goes; its gang gets one more try at once (the capacity is its own now).
  for (auto& [id, old] : gap_.calls) {
    if (calls.count(id) || !book_->count(id)) continue;
    const bool gone = std::none_of(old.fillers.begin(), old.fillers.end(), [&](const std::string& wid) {
      auto g = gangs_.find(wid);
      return g != gangs_.end() && std::any_of(g->second.pods.begin(), g->second.pods.end(), [&](const std::string& u) {
               auto p = pods_.find(u);
               return p != pods_.end() && p->second.UsesCapacity();
             });
    });
    if (!gone) continue;  // they stay: the reservation no longer needs them gone
    GapFills::Call& c = calls[id];
    c.fillers = old.fillers;
    c.activated = old.activated;
    if (!c.activated) {
      c.activated = true;
      if (auto g = gangs_.find(id.substr(5)); g != gangs_.end() && g->second.door == FrontDoor::kKubernetes) {
        ActivatePendingLocked(g->second);
      }
    }
  }
  for (auto& [id, c] : calls) {
    if (auto old = gap_.calls.find(id); old != gap_.calls.end()) c.activated = c.activated || old->second.activated;
  }
  gap_.calls = std::move(calls);
  // Notices not yet carried out whose filler blocks nothing now: it keeps running.
  std::vector<std::string> off;
  for (const DisruptionRecord* r : disruptions_.All()) {
    if (r->cause == DisruptionCause::kReservation && r->evicted_s == 0 && !due.count(r->id)) off.push_back(r->id);
  }
  for (const auto& id : off) {
    disruptions_.Cancel(id);
    if (decision_log_ != nullptr) {
      decision_log_->Write({{"ts", now}, {"outcome", "disruption-cancelled"}, {"workload", id}, {"cause", "reservation"}});
    }
  }
}

std::vector<int64_t> Engine::GapGpusLocked(int64_t now) const {
  std::vector<int64_t> out;
  if (cfg_.perishable_fill == EngineConfig::PerishableFill::kNone || !state_) return out;
  for (const auto& [id, res] : *book_) {
    if (res.start_s <= now || HeldLocked(id)) continue;
    if (out.empty()) out.assign(static_cast<size_t>(state_->node_count()), 0);
    for (const auto& a : res.assignments) {
      if (a.node < 0 || a.node >= state_->node_count()) continue;
      int64_t& g = out[static_cast<size_t>(a.node)];
      g = std::min(state_->node(a.node).capacity.gpus, g + res.per_member.gpus * a.members);
    }
  }
  return out;
}

void Engine::CountGapsLocked(double dt, double* offered, double* filled) const {
  const std::vector<int64_t> gap = GapGpusLocked(clock_());
  for (size_t i = 0; i < gap.size(); ++i) {
    const Node& node = state_->node(static_cast<NodeId>(i));
    if (gap[i] <= 0 || !node.Schedulable() || closes_.count(node.name)) continue;  // a close counts the node whole
    // The reserved GPUs, and the work in them (what runs beyond the node's other GPUs).
    const int64_t used = std::min(gap[i], std::max<int64_t>(0, node.allocated.gpus - (node.capacity.gpus - gap[i])));
    *offered += static_cast<double>(gap[i]) * dt;
    *filled += static_cast<double>(used) * dt;
  }
}

std::string Engine::GapBorrowedLocked(const Gang& g, int64_t* until) const {
  if (book_->empty() || !state_) return "";
  const int64_t now = clock_();
  std::set<std::string> names;  // every reserved node: a reservation's fillers elsewhere count too
  for (const auto& [id, res] : *book_) {
    for (const auto& a : res.assignments) {
      if (a.node >= 0 && a.node < state_->node_count()) names.insert(state_->node(a.node).name);
    }
  }
  const auto on = BoundPodsOn(names, charged_, pods_);
  const Reservation* first = nullptr;
  int64_t by = 0;
  bool first_early = false;
  for (const auto& [id, res] : *book_) {
    bool early = false;
    for (const GapFiller& f : GapBlockersLocked(id, res, now, on, &early)) {
      const int64_t t = early ? f.gone_s : res.start_s;
      if (f.id == g.key && (first == nullptr || t < by)) {
        first = &res;
        by = t;
        first_early = early;
      }
    }
  }
  if (first == nullptr) return "";
  if (until != nullptr) *until = by;
  return "runs on borrowed time: gang " + first->workload.substr(first->workload.rfind("plan:", 0) == 0 ? 5 : 0) +
         " is reserved to start on its node(s) at " + FormatUnixTime(first->start_s) +
         (first_early ? "; it could start now, so this job has its notice and is gone by " + FormatUnixTime(by)
                      : "; it gets its notice before then, as late as its notice allows");
}

std::string Engine::GapFillersNoteLocked(const std::string& plan_id) const {
  auto r = book_->find(plan_id);
  if (r == book_->end() || !state_) return "";
  std::set<std::string> names;
  for (const auto& a : r->second.assignments) {
    if (a.node >= 0 && a.node < state_->node_count()) names.insert(state_->node(a.node).name);
  }
  bool early = false;
  const std::vector<GapFiller> blockers = GapBlockersLocked(plan_id, r->second, clock_(), BoundPodsOn(names, charged_, pods_), &early);
  if (blockers.empty()) return "";
  std::string ids;
  int64_t until = 0;
  for (const GapFiller& f : blockers) {
    ids += (ids.empty() ? "" : ", ") + f.id;
    until = std::max(until, f.gone_s);
  }
  return "fillers (" + ids + ") hold its nodes until " + FormatUnixTime(until) +
         (early ? ": it could start now, they have their notice" : "; they get their notice before its start");
}

}  // namespace tidal
