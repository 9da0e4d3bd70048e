// Engine: backfill reservations on the Kubernetes path (the book's view for a plan, its upkeep when
// state_ is rebuilt; its refresh is engine_refresh.cc), and enforcing declared runtimes
// (Overdue). See book_ in engine.h and docs/scheduling.md. Threading: every function here runs
// under mu_ (the *Locked convention; Overdue takes it itself).
#include "engine/engine.h"

#include <algorithm>
#include <ctime>
#include <string_view>
#include <utility>

#include "core/api/duration.h"
#include "engine/explain_text.h"

namespace tidal {

std::vector<Workload> Engine::PendingGangWorkloadsLocked() const {
  std::deque<Workload> built;
  std::vector<Workload> out;
  for (const Workload* w : PendingGangWorkloadRefsLocked(&built)) out.push_back(*w);
  return out;
}

std::vector<const Workload*> Engine::PendingGangWorkloadRefsLocked(std::deque<Workload>* built, SharedWorkloads* keep) const {
  std::vector<const Workload*> out;
  out.reserve(gangs_.size());
  for (const auto& [k, g] : gangs_) {
    // A gang holding capacity its victims free (engine_preempt.cc) waits for exactly that: a dry
    // cycle must neither move nor drop its hold (TimelineLocked keeps the hold's nodes instead).
    if (!holds_.empty() && HeldLocked(PlanId(g))) continue;
    std::optional<Workload> b;
    const Workload* w = nullptr;
    if (!PendingWorkloadRefLocked(g, &b, &w, keep)) continue;
    if (b) {
      built->push_back(std::move(*b));
      w = &built->back();
    }
    out.push_back(w);
  }
  return out;
}

bool Engine::PendingWorkloadRefLocked(const Gang& g, std::optional<Workload>* built, const Workload** w, SharedWorkloads* keep) const {
  *w = nullptr;
  if (g.plan || g.pods.empty() || !g.summary.spec || !g.summary.spec->ok()) return false;
  if (g.summary.cached && g.excluded.empty()) {
    if (!g.summary.workload) return false;
    *w = g.summary.workload.get();
    if (keep != nullptr) keep->push_back(g.summary.workload);
    return true;
  }
  *built = GangWorkloadLocked(g, **g.summary.spec, nullptr);  // its first pod's spec (ReindexGangLocked)
  if (*built) *w = &**built;
  return *w != nullptr;
}

std::optional<Workload> Engine::PendingWorkloadLocked(const Gang& g, PodSchedulingSpec* spec_out) const {
  std::optional<Workload> built;
  const Workload* w = nullptr;
  if (!PendingWorkloadRefLocked(g, &built, &w)) return std::nullopt;
  if (spec_out != nullptr) *spec_out = **g.summary.spec;
  if (built) return built;
  return *w;
}

void Engine::PruneBookLocked() {
  for (auto it = book_->begin(); it != book_->end();) {
    auto g = it->first.rfind("plan:", 0) == 0 ? gangs_.find(it->first.substr(5)) : gangs_.end();
    it = g == gangs_.end() || g->second.plan ? book_->erase(it) : std::next(it);
  }
}

void Engine::RemapBookLocked() {
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(state_->node_count()));
  for (const auto& n : state_->nodes()) names.push_back(n.name);
  for (auto it = book_->begin(); it != book_->end();) {
    bool kept = true;
    for (auto& a : it->second.assignments) {
      const NodeId n = a.node >= 0 && static_cast<size_t>(a.node) < book_nodes_.size()
                           ? state_->FindNode(book_nodes_[static_cast<size_t>(a.node)])
                           : kNoNode;
      if (n == kNoNode || !state_->node(n).Schedulable()) {
        kept = false;
        break;
      }
      a.node = n;
    }
    if (kept) {
      ++it;
    } else {
      it = book_->erase(it);
      book_stale_ = true;
    }
  }
  book_nodes_ = std::move(names);
}

int32_t Engine::BookRankLocked(const std::string& plan_id, const std::vector<int32_t>& ranks) const {
  if (plan_id.rfind("plan:", 0) != 0) return -1;
  auto g = gangs_.find(plan_id.substr(5));
  if (g == gangs_.end() || !g->second.head) return -1;
  const int q = ledger_.tree().Find(g->second.head_queue);
  return q > 0 ? ranks[static_cast<size_t>(q)] : -1;
}

bool Engine::BehindLocked(const std::string& plan_id, const std::string& own_plan_id) const {
  if (plan_id.rfind("plan:", 0) != 0 || own_plan_id.rfind("plan:", 0) != 0) return false;
  auto g = gangs_.find(plan_id.substr(5));
  auto o = gangs_.find(own_plan_id.substr(5));
  if (g == gangs_.end() || o == gangs_.end() || !g->second.head || !o->second.head) return false;
  return *o->second.head < *g->second.head;
}

void Engine::ReservationViewLocked(const std::string& own, ReservationView& rv, int32_t own_rank,
                                   const std::vector<int32_t>* ranks, int64_t fill_notice_s, int64_t fill_by) const {
  const Reservation* mine = nullptr;
  // A workload that fills perishable windows (engine_perishable.cc) while its notice and the
  // minimum fill still fit before their end: closes, and the gaps before reserved starts.
  const int64_t fill_until = fill_notice_s < 0 ? INT64_MAX : clock_() + fill_notice_s + kDrainSlackS + cfg_.perishable_min_s;
  for (const auto& [id, res] : *book_) {
    if (id == own) {
      mine = &res;
      if (res.start_s <= clock_()) rv.at = &res.assignments;
      continue;
    }
    if (fill_notice_s >= 0 && GapOpenLocked(id, res.start_s, fill_until)) continue;  // a filler (engine_gap_fill.cc)
    // Fair share outranks an older reservation: a gang of a queue now ranked behind the planner's
    // does not hold capacity against it (the next refresh re-plans that reservation). Preemption
    // holds are promises and always count.
    if (ranks != nullptr && own_rank >= 0 && !HeldLocked(id)) {
      const int32_t r = BookRankLocked(id, *ranks);
      // The same queue: a gang behind the planner in queue order (priority, submit time) yields
      // too, so a queue's head is never blocked by its own later reservations.
      if (r > own_rank || (r == own_rank && r >= 0 && BehindLocked(id, own))) {
        ++rv.yielded;
        continue;
      }
    }
    if (rv.from.empty()) {
      rv.from.assign(static_cast<size_t>(state_->node_count()), INT64_MAX);
      rv.gpus.assign(static_cast<size_t>(state_->node_count()), 0);
    }
    for (const auto& a : res.assignments) {
      if (a.node < 0 || a.node >= state_->node_count()) continue;
      auto& from = rv.from[static_cast<size_t>(a.node)];
      from = std::min(from, res.start_s);
      rv.gpus[static_cast<size_t>(a.node)] += res.per_member.gpus * a.members;
    }
    rv.view.latest_start = std::max(rv.view.latest_start, res.start_s);
  }
  // Drains, maintenance windows and the ends of perishable windows (engine_closes.cc): a closing
  // node's GPUs are all taken from its close, like a reservation's; not for a workload that fills
  // windows while its notice and the minimum fill still fit before it (fill_until).
  if (!close_from_.empty()) {
    if (rv.from.empty()) {
      rv.from.assign(static_cast<size_t>(state_->node_count()), INT64_MAX);
      rv.gpus.assign(static_cast<size_t>(state_->node_count()), 0);
    }
    rv.closing.assign(static_cast<size_t>(state_->node_count()), 0);
    for (size_t i = 0; i < close_from_.size() && i < rv.from.size(); ++i) {
      if (close_from_[i] == INT64_MAX || close_from_[i] >= std::min(fill_until, fill_by)) continue;  // fill_by: engine_runtime.cc
      rv.from[i] = std::min(rv.from[i], close_from_[i]);
      rv.gpus[i] = close_gpus_[i];
      rv.closing[i] = 1;
      rv.view.latest_start = std::max(rv.view.latest_start, close_from_[i]);
    }
    rv.view.closing = &rv.closing;
  }
  if (!rv.from.empty()) {
    rv.view.reserved_from = &rv.from;
    rv.view.reserved_gpus = &rv.gpus;
  }
  // Work ended sooner than expected: a gang may start its reservation early on its own nodes when
  // no other reservation uses them before its own start (it then also ends sooner, so nothing
  // reserved after it is delayed). Without this, reservations made while the cluster was busy
  // would leave it idle until their start.
  if (mine != nullptr && rv.at == nullptr) {
    bool clear = true;
    for (const auto& a : mine->assignments) {
      if (a.node < 0 || a.node >= state_->node_count()) {
        clear = false;
        break;
      }
      if (!rv.from.empty() && rv.from[static_cast<size_t>(a.node)] < mine->start_s) clear = false;
    }
    if (clear) rv.at = &mine->assignments;
  }
}

std::vector<OverduePod> Engine::Overdue() {
  std::lock_guard<std::mutex> lock(mu_);
  return OverdueLocked(clock_());
}

std::vector<OverduePod> Engine::OverdueLocked(int64_t now) {
  std::vector<OverduePod> out;
  if (!cfg_.enforce_runtime_limit) return out;
  for (auto& [uid, b] : bound_since_) {
    if (b.runtime_limit_s <= 0 || now < b.since_s + b.runtime_limit_s + cfg_.runtime_limit_grace_s) continue;
    auto p = pods_.find(uid);
    if (p == pods_.end() || p->second.terminating || !p->second.UsesCapacity() ||
        p->second.scheduler_name != cfg_.scheduler_name) {
      continue;
    }
    if (!b.overdue && metrics_ != nullptr) metrics_->runtime_limit_exceeded.With({MetricQueueLocked(b.queue)}).Increment();
    b.overdue = true;
    out.push_back({{uid, p->second.ns, p->second.name},
                   "ran " + FormatDurationSeconds(now - b.since_s) + ", over its " + std::string(kLabelRuntimeLimit) + " of " +
                       FormatDurationSeconds(b.runtime_limit_s) + " (grace " + FormatDurationSeconds(cfg_.runtime_limit_grace_s) + ")"});
  }
  std::sort(out.begin(), out.end(), [](const OverduePod& a, const OverduePod& b) { return a.pod.uid < b.pod.uid; });
  return out;
}

std::string Engine::ReservedStartLocked(const std::string& id) const {
  auto own = book_->find(id);
  if (own == book_->end()) return {};
  // "in 29m59s (2026-11-29T23:12:59Z)"; a start already past (due, its nodes not free yet): "5m ago (...)".
  return "reserved to start " + ReservedStartInWords(own->second.start_s, clock_()) + " on " +
         std::to_string(own->second.assignments.size()) + " node(s)";
}

}  // namespace tidal
