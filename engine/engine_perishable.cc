// Engine: perishable windows, the capacity of a node before it closes. Every close is a window
// with a known end: a drain with --by, a maintenance window's start, a Kubernetes node's
// tidal.dev/available-until (capacity an owner lends until then; cause window-end). Before the
// close (engine/maintenance.h has the rule) the node takes work that ends in time, and by
// perishable.fill also work that is preemptible and checkpoints on notice (the default), or any
// preemptible work: ReservationViewLocked leaves the close off for such a workload while its notice,
// kDrainSlackS and perishable.minSeconds still fit before the close, and OpenDrainsLocked gives it
// its notice as late as that allows, so the node is empty at the close and its owner gets it then.
// Measured: tidal_gpus{state="perishable"} (idle GPUs in windows, engine_views.cc), and
// tidal_perishable_gpu_seconds_total{use="offered"|"filled"} (the windows' GPU-seconds and those
// used by work, counted at each Disruptions poll).
// Threading and ownership: as engine.cc: the *Locked functions run under mu_;
// perishable_counted_s_ is the Engine's (engine.h).
#include <algorithm>

#include "core/api/duration.h"
#include "engine/engine.h"

namespace tidal {

namespace {
// The most time one count covers: a longer gap between polls (no door polled) counts no window.
constexpr int64_t kMaxCountGapS = 60;
}  // namespace

int64_t Engine::FillNoticeLocked(const Workload& w) const {
  if (cfg_.perishable_fill == EngineConfig::PerishableFill::kNone || !w.preemptible) return -1;
  const std::string key = w.id.rfind("plan:", 0) == 0 ? w.id.substr(5) : w.id;
  auto g = gangs_.find(key);
  if (g == gangs_.end() || g->second.summary.spec == nullptr || !g->second.summary.spec->ok()) return -1;
  const int64_t asked = (*g->second.summary.spec)->checkpoint_on_notice_s;
  const int64_t notice = std::max<int64_t>(0, std::min(asked, cfg_.max_notice_s));
  if (cfg_.perishable_fill == EngineConfig::PerishableFill::kCheckpointing && notice <= 0) return -1;
  return notice;
}

void Engine::CountPerishableLocked(int64_t now) {
  EnsureStateLocked();  // closes_ and state_
  const int64_t last = perishable_counted_s_;
  perishable_counted_s_ = now;
  if (last <= 0 || now <= last || now - last > kMaxCountGapS || (closes_.empty() && book_->empty()) || metrics_ == nullptr) return;
  const double dt = static_cast<double>(now - last);
  double offered = 0, filled = 0;
  for (const auto& [name, c] : closes_) {
    if (c.by <= now) continue;  // closed: no longer a window
    const NodeId n = state_->FindNode(name);
    if (n == kNoNode) continue;
    const Node& node = state_->node(n);
    if (!node.Schedulable()) continue;
    offered += static_cast<double>(node.capacity.gpus) * dt;
    filled += static_cast<double>(std::min(node.capacity.gpus, node.allocated.gpus)) * dt;
  }
  CountGapsLocked(dt, &offered, &filled);  // the gaps before reserved starts (engine_gap_fill.cc)
  if (offered <= 0) return;
  metrics_->perishable_gpu_seconds.With({"offered"}).Increment(offered);
  metrics_->perishable_gpu_seconds.With({"filled"}).Increment(filled);
}

std::string Engine::BorrowedTimeLocked(const Gang& g, int64_t* until) const {
  const int64_t now = clock_();
  for (const auto& uid : g.pods) {  // on a node lent by its owner pool (engine_lending.cc)
    auto p = pods_.find(uid);
    if (p == pods_.end() || !p->second.UsesCapacity()) continue;
    if (const auto* l = lending_.Find(p->second.node_name); l != nullptr && PodBorrowsLocked(p->second, l->pool)) {
      return "runs on borrowed time: " + LoanNoteLocked(p->second.node_name);
    }
  }
  const NodeClose* first = nullptr;
  std::string node;
  for (const auto& uid : g.pods) {
    auto p = pods_.find(uid);
    if (p == pods_.end() || !p->second.UsesCapacity()) continue;
    auto c = closes_.find(p->second.node_name);
    if (c == closes_.end() || c->second.by <= now) continue;
    const int64_t end = ExpectedEndLocked(p->second);
    if (end > 0 && end <= c->second.by) continue;  // it ends in time
    if (first == nullptr || c->second.by < first->by) {
      first = &c->second;
      node = p->second.node_name;
    }
  }
  if (first == nullptr) return GapBorrowedLocked(g, until);  // before a reserved start (engine_gap_fill.cc)
  if (until != nullptr) *until = first->by;
  std::string what = first->cause == DisruptionCause::kWindowEnd ? "its owner takes node " + node + " back"
                     : first->cause == DisruptionCause::kMaintenance ? "node " + node + " goes into " + first->what
                                                                      : "node " + node + " is drained";
  return "runs on borrowed time: " + what + " at " + FormatUnixTime(first->by) +
         "; it gets its notice before then, as late as its notice allows";
}

}  // namespace tidal
