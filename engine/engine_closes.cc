// Engine: node closes, the gang-aware lifecycle causes of the disruption path (engine/maintenance.h
// has the rule):
//   drain         tidalctl drain NODE... --by T (Drain), kept in the state file ("drains") until
//                 cancelled; with --decommission (cause decommission) also until the node leaves
//                 for good (its last door deletes it); or the Kubernetes node's annotation
//                 tidal.dev/drain-by: T (AnnotatedDrainLocked; tidal.dev/decommission: "true"),
//                 which every replica's engine reads from its own shim, so a failover keeps it:
//                 it lasts as long as the annotation, and the RPC neither cancels nor changes it;
//   maintenance   the config's maintenance.windows: its nodes close at start and take work again
//                 at end.
// Before T a closing node takes only work expected to end by T (ReservationViewLocked lays the
// close over the node like a reservation of all its GPUs from T; the placement counts it as
// refused_closing); from T it takes none (kDraining in ToNode). A workload there whose declared
// runtime limit ends by T finishes; any other is disrupted at T - its notice - kDrainSlackS (as late
// as its notice allows; at once when that is past), its gang whole (an elastic gang keeping its
// gang-min off the closing nodes: only its members there); at T whatever is left goes.
// closes_ (and the per-NodeId close_* vectors) are computed with state_ (EnsureStateLocked), which
// is valid until the next close starts or ends (state_valid_until_).
// Threading and ownership: as engine.cc: Drain takes mu_, the *Locked functions run under it.
// drains_, closes_, close_* and state_valid_until_ are the Engine's (engine.h).
#include <algorithm>
#include <optional>
#include <set>

#include "core/api/duration.h"
#include "engine/engine.h"

namespace tidal {

namespace {
std::string CloseWords(const NodeClose& c) {
  if (c.cause == DisruptionCause::kMaintenance) {
    return c.what + " from " + FormatUnixTime(c.by) + " to " + FormatUnixTime(c.until);
  }
  if (c.cause == DisruptionCause::kWindowEnd) return "available until " + FormatUnixTime(c.by) + " (its owner takes it back)";
  if (c.cause == DisruptionCause::kReclaim) return c.what + " at " + FormatUnixTime(c.by);
  return std::string(c.cause == DisruptionCause::kDecommission ? "decommissioned" : "drained") + " by " + FormatUnixTime(c.by);
}
}  // namespace

bool Engine::CloseOfLocked(const std::string& node, int64_t now, NodeClose* out) const {
  std::vector<NodeClose> all;
  if (auto d = drains_.find(node); d != drains_.end()) all.push_back(d->second);
  if (!cfg_.maintenance.empty()) {
    static const std::map<std::string, std::string> kNoLabels;
    auto n = nodes_.find(node);
    const auto& labels = n != nodes_.end() ? n->second.labels : kNoLabels;
    for (const auto& w : cfg_.maintenance) {
      if (w.end_s > now && w.Covers(node, labels)) {
        all.push_back({w.start_s, w.end_s, DisruptionCause::kMaintenance, "maintenance window " + w.name});
      }
    }
  }
  // A loan with a term (pools.*.loanSeconds) is a window with a known end: its owner takes the
  // node back then (engine_lending.cc reclaims it; the close lasts while the loan does).
  if (const PoolLending::Loan* l = lending_.Find(node); l != nullptr && l->until_s > 0 && l->reclaim_since_s == 0) {
    all.push_back({l->until_s, INT64_MAX, DisruptionCause::kReclaim, "lent by pool " + l->pool + " until its term ends"});
  }
  return EarliestClose(all, now, out);
}

void Engine::ComputeClosesLocked(int64_t now) {
  closes_.clear();
  close_from_.clear();
  close_gpus_.clear();
  state_valid_until_ = INT64_MAX;
  const bool terms = std::any_of(lending_.loans().begin(), lending_.loans().end(), [](const auto& l) { return l.second.until_s > 0; });
  if (drains_.empty() && cfg_.maintenance.empty() && !terms) return;
  for (NodeId n = 0; n < state_->node_count(); ++n) {
    const Node& node = state_->node(n);
    NodeClose c;
    if (!CloseOfLocked(node.name, now, &c)) continue;
    state_valid_until_ = std::min(state_valid_until_, c.Closed(now) ? c.until : c.by);
    if (!c.Closed(now)) {
      if (close_from_.empty()) {
        close_from_.assign(static_cast<size_t>(state_->node_count()), INT64_MAX);
        close_gpus_.assign(static_cast<size_t>(state_->node_count()), 0);
      }
      close_from_[static_cast<size_t>(n)] = c.by;
      close_gpus_[static_cast<size_t>(n)] = node.capacity.gpus;
    }
    closes_.emplace(node.name, std::move(c));
  }
  // A window's start or end not yet reached by any node (a node that joins later) is caught when
  // that node's record changes state_.
}

std::vector<NodeId> Engine::ClosingNodesLocked() const {
  // A dry cycle plans no reservation onto a node that closes: it would start into the close.
  std::vector<NodeId> out;
  for (const auto& [name, c] : closes_) {
    if (c.Closed(clock_())) continue;  // kDraining already
    const NodeId n = state_->FindNode(name);
    if (n != kNoNode) out.push_back(n);
  }
  return out;
}

void Engine::OpenDrainsLocked(int64_t now) {
  EnsureStateLocked();
  if (closes_called_off_) {  // an annotated drain went since the last poll
    closes_called_off_ = false;
    CancelCalledOffClosesLocked();
  }
  if (closes_.empty()) return;
  std::set<std::string> names;
  for (const auto& [node, c] : closes_) names.insert(node);
  for (const auto& [node, pods] : OurPodsOnLocked(names)) {
    const NodeClose& c = closes_.at(node);
    const int64_t by = c.by;
    for (const PodInfo* p : pods) {
      const std::string id = WorkloadIdLocked(*p);
      if (p->terminating || disruptions_.Find(id) != nullptr) continue;
      const int64_t end = ExpectedEndLocked(*p);
      if (end > 0 && end <= by && now < by) continue;  // it ends in time: let it finish
      int64_t notice = 0;
      if (const auto& spec = SpecLocked(*p); spec.ok()) notice = std::min(spec->checkpoint_on_notice_s, cfg_.max_notice_s);
      if (now < by - notice - kDrainSlackS) continue;  // not yet: it runs as long as its notice allows
      OpenDisruptionLocked(id, c.cause, VictimPodsLocked(id, names),
                           "node " + node + " is " + CloseWords(c) +
                               (end > 0 ? " and the job ends after that" : "; the job declares no runtime limit ending before"),
                           std::max<int64_t>(0, by - now - kDrainSlackS));
    }
  }
}

std::vector<NodeDrainInfo> Engine::Drain(const std::vector<std::string>& nodes, int64_t by_s, bool cancel, bool decommission) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = clock_();
  bool changed = false;
  std::vector<NodeDrainInfo> unknown;
  for (const auto& n : nodes) {
    if (auto d = drains_.find(n); d != drains_.end() && d->second.from_node) {
      const std::string key = d->second.cause == DisruptionCause::kWindowEnd ? kAnnotationAvailableUntil : kAnnotationDrainBy;
      unknown.push_back({n, d->second.by, "annotated", 0, 0,
                         "closed by its " + key + " annotation: change or remove that instead (kubectl annotate node " + n +
                             " " + key + "-)"});
    } else if (cancel) {
      changed = drains_.erase(n) > 0 || changed;
    } else if (!nodes_.count(n)) {
      unknown.push_back({n, by_s, "unknown-node", 0, 0, "no front door reports this node"});
    } else {
      drains_[n] = NodeClose{std::max(by_s, now), INT64_MAX, decommission ? DisruptionCause::kDecommission : DisruptionCause::kDrain,
                             decommission ? "decommission" : "drain"};
      changed = true;
    }
  }
  if (changed) {
    state_.reset();  // the nodes' health (kDraining) and closes change
    // kube-scheduler sees no event when a drain ends: hand its pending pods back for another try.
    if (cancel) ActivateKubernetesPendingLocked();
    door_memory_version_.fetch_add(1, std::memory_order_relaxed);  // save the state file soon
    if (decision_log_ != nullptr) {
      decision_log_->Write({{"ts", now},
                            {"outcome", cancel ? "drain-cancelled" : decommission ? "decommission" : "drain"},
                            {"nodes", nodes},
                            {"by", by_s}});
    }
  }
  EnsureStateLocked();
  if (cancel) {
    CancelCalledOffClosesLocked();
  } else {
    OpenDrainsLocked(now);
  }
  std::vector<NodeDrainInfo> out = DrainReportLocked(now);
  out.insert(out.end(), unknown.begin(), unknown.end());
  return out;
}

void Engine::AnnotatedDrainLocked(const std::string& node, const std::map<std::string, std::string>* annotations,
                                  std::vector<NodeWarningInfo>* warnings) {
  auto d = drains_.find(node);
  const bool had = d != drains_.end() && d->second.from_node;
  // A drain (tidal.dev/drain-by) and a perishable window's end (tidal.dev/available-until): the
  // earlier closes the node.
  std::optional<NodeClose> want;
  for (const char* key : {kAnnotationDrainBy, kAnnotationAvailableUntil}) {
    if (annotations == nullptr) break;
    auto it = annotations->find(key);
    if (it == annotations->end()) continue;
    auto by = ParseUnixTime(it->second, std::string("node ") + node + ": annotation " + key);
    if (!by.ok()) {
      // Unreadable: nothing changes (a close it had stays), and the node says why.
      if (warnings != nullptr) {
        warnings->push_back({node, key == kAnnotationDrainBy ? "TidalDrainAnnotationInvalid" : "TidalAvailableUntilAnnotationInvalid",
                             by.status().Message()});
      }
      return;
    }
    NodeClose c{*by, INT64_MAX, DisruptionCause::kWindowEnd, "available-until", /*from_node=*/true};
    if (key == kAnnotationDrainBy) {
      auto dec = annotations->find(kAnnotationDecommission);
      const bool decommission = dec != annotations->end() && dec->second == "true";
      c.cause = decommission ? DisruptionCause::kDecommission : DisruptionCause::kDrain;
      c.what = decommission ? "decommission" : "drain";
    }
    if (!want || c.by < want->by) want = c;
  }
  if (!want && !had) return;
  if (want && had && d->second.by == want->by && d->second.cause == want->cause) return;
  if (want) {
    drains_[node] = *want;  // replaces a drain the RPC set: the annotation owns it now
  } else {
    drains_.erase(d);
    closes_called_off_ = true;
    ActivateKubernetesPendingLocked();  // as a cancelled drain: its pods get another try
  }
  state_.reset();
  door_memory_version_.fetch_add(1, std::memory_order_relaxed);
  if (decision_log_ != nullptr) {
    decision_log_->Write({{"ts", clock_()},
                          {"outcome", !want                                          ? "drain-cancelled"
                                      : want->cause == DisruptionCause::kDecommission ? "decommission"
                                      : want->cause == DisruptionCause::kWindowEnd    ? "window"
                                                                                      : "drain"},
                          {"nodes", {node}},
                          {"by", want ? want->by : 0},
                          {"source", "annotation"}});
  }
}

void Engine::CancelCalledOffClosesLocked() {
  // A drain cancelled while its victims were in their notice: they keep running (the front door
  // withdraws the notice). Not one already being evicted, nor one with a node still closing.
  std::vector<std::string> off;
  for (const DisruptionRecord* r : disruptions_.All()) {
    const bool close = r->cause == DisruptionCause::kDrain || r->cause == DisruptionCause::kDecommission ||
                       r->cause == DisruptionCause::kMaintenance || r->cause == DisruptionCause::kWindowEnd;
    if (!close || r->evicted_s != 0) continue;
    const bool still = std::any_of(r->pods.begin(), r->pods.end(), [&](const PodRefInfo& p) {
      auto c = charged_.find(p.uid);
      return c != charged_.end() && closes_.count(c->second.first) > 0;
    });
    if (!still) off.push_back(r->id);
  }
  for (const auto& id : off) {
    disruptions_.Cancel(id);
    if (decision_log_ != nullptr) decision_log_->Write({{"ts", clock_()}, {"outcome", "disruption-cancelled"}, {"workload", id}});
  }
}

void Engine::ForgetDecommissionedLocked(const std::string& node) {
  // Gone for good: a node of that name joining later is a new node, not a drained one.
  if (auto d = drains_.find(node); d != drains_.end() && d->second.cause == DisruptionCause::kDecommission) {
    drains_.erase(d);
    door_memory_version_.fetch_add(1, std::memory_order_relaxed);
  }
}

std::vector<NodeDrainInfo> Engine::DrainReportLocked(int64_t now) const {
  std::set<std::string> names;
  for (const auto& [node, c] : closes_) names.insert(node);
  const auto on = OurPodsOnLocked(names);
  std::vector<NodeDrainInfo> out;
  for (const auto& [node, c] : closes_) {
    const int64_t by = c.by;
    NodeDrainInfo d{node, by, "drained", 0, 0, c.cause == DisruptionCause::kDrain ? "" : CloseWords(c)};
    std::set<std::string> seen;
    if (auto it = on.find(node); it != on.end()) {
      for (const PodInfo* p : it->second) {
        const std::string id = WorkloadIdLocked(*p);
        if (!seen.insert(id).second) continue;
        const int64_t end = ExpectedEndLocked(*p);
        const DisruptionRecord* r = disruptions_.Find(id);
        int64_t free_at = by;
        std::string what;
        if (r != nullptr) {
          free_at = std::max(now, r->deadline_s);
          what = id + " is being evicted (" + std::string(DisruptionCauseName(r->cause)) + ")";
        } else if (end > 0 && end <= by) {
          free_at = end;
          what = id + " ends at " + FormatUnixTime(end);
        } else {
          what = id + " is evicted before " + FormatUnixTime(by);
        }
        d.free_at_unix = std::max(d.free_at_unix, free_at);
        d.note += (d.note.empty() ? "" : "; ") + what;
      }
    }
    d.workloads_left = static_cast<int32_t>(seen.size());
    if (d.workloads_left > 0) d.state = "draining";
    out.push_back(std::move(d));
  }
  return out;
}

void Engine::SaveDrainsLocked(nlohmann::json& state) const {
  if (drains_.empty()) return;
  nlohmann::json d = nlohmann::json::object();
  for (const auto& [node, c] : drains_) {
    if (c.from_node) continue;  // the node's annotation brings it back
    if (c.cause == DisruptionCause::kDecommission) {
      d[node] = {{"by", c.by}, {"decommission", true}};
    } else {
      d[node] = c.by;  // the format of earlier versions
    }
  }
  if (!d.empty()) state["drains"] = std::move(d);
}

Status Engine::LoadDrainsLocked(const nlohmann::json& state) {
  if (!state.contains("drains")) return Status::Ok();
  const auto& d = state.at("drains");
  if (!d.is_object()) return Status::Error("drains: must be a mapping of node to deadline (unix s)");
  Status s;
  for (const auto& [node, v] : d.items()) {
    NodeClose c;
    bool ok = !node.empty() && node.size() <= 253;
    if (ok && v.is_number_integer()) {
      c = {v.get<int64_t>(), INT64_MAX, DisruptionCause::kDrain, "drain"};
    } else if (ok && v.is_object() && v.contains("by") && v.at("by").is_number_integer()) {
      const bool decom = v.contains("decommission") && v.at("decommission").is_boolean() && v.at("decommission").get<bool>();
      c = {v.at("by").get<int64_t>(), INT64_MAX, decom ? DisruptionCause::kDecommission : DisruptionCause::kDrain,
           decom ? "decommission" : "drain"};
    } else {
      ok = false;
    }
    if (!ok) {
      const std::string why = "drains." + node.substr(0, 100) + ": must be a unix time in seconds, or {by, decommission}";
      if (s.ok()) {
        s = Status::Error(why);
      } else {
        s.AddReason(why);
      }
      continue;
    }
    drains_[node] = std::move(c);
  }
  state_.reset();
  return s;
}

}  // namespace tidal
