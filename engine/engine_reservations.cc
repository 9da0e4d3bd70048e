// Engine: backfill reservations on the Kubernetes path, the timeline they are computed on (bound
// pods released at their start time + declared runtime), and enforcing those declared runtimes
// (Overdue). See book_ in engine.h and docs/scheduling.md. Threading: every function here runs
// under mu_ (the *Locked convention; Overdue takes it itself).
#include "engine/engine.h"

#include <algorithm>
#include <ctime>
#include <set>
#include <string_view>
#include <utility>

#include "core/api/duration.h"
#include "engine/pending_merge.h"
#include "plugins/registry.h"

namespace tidal {

namespace {
// "in 29m59s (2026-11-29T23:12:59Z)": a reserved start for people reading events (unix clock).
std::string InWords(int64_t start_s, int64_t now_s) {
  return "in " + FormatDurationSeconds(start_s - now_s) + " (" + FormatUnixTime(start_s) + ")";
}
}  // namespace

std::vector<Workload> Engine::PendingGangWorkloadsLocked() const {
  std::deque<Workload> built;
  std::vector<Workload> out;
  for (const Workload* w : PendingGangWorkloadRefsLocked(&built)) out.push_back(*w);
  return out;
}

std::vector<const Workload*> Engine::PendingGangWorkloadRefsLocked(std::deque<Workload>* built) const {
  std::vector<const Workload*> out;
  out.reserve(gangs_.size());
  for (const auto& [k, g] : gangs_) {
    // A gang holding capacity its victims free (engine_preempt.cc) waits for exactly that: a dry
    // cycle must neither move nor drop its hold (TimelineLocked keeps the hold's nodes instead).
    if (!holds_.empty() && HeldLocked(PlanId(g))) continue;
    std::optional<Workload> b;
    const Workload* w = nullptr;
    if (!PendingWorkloadRefLocked(g, &b, &w)) continue;
    if (b) {
      built->push_back(std::move(*b));
      w = &built->back();
    }
    out.push_back(w);
  }
  return out;
}

bool Engine::PendingWorkloadRefLocked(const Gang& g, std::optional<Workload>* built, const Workload** w) const {
  *w = nullptr;
  if (g.plan || g.pods.empty() || !g.summary.spec || !g.summary.spec->ok()) return false;
  if (g.summary.cached && g.excluded.empty()) {
    if (g.summary.workload) *w = &*g.summary.workload;
    return *w != nullptr;
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

void Engine::RefreshReservationsLocked() {
  if (cfg_.profile.backfill.depth == 0) return;
  // At most once a second (now < last + 1, not now - last < 1: last starts at INT64_MIN, and
  // now - INT64_MIN overflows).
  if (clock_() < book_refreshed_s_ + 1) {
    book_stale_ = true;
    return;
  }
  book_refreshed_s_ = clock_();
  book_stale_ = false;
  PruneBookLocked();
  // A dry cycle over the pending gangs on copies of the cluster (bound pods on their timeline)
  // and the ledger, sharing the live book: it keeps, moves earlier and adds reservations there.
  // Run for the book only, the cycle's walk stops once the depth is reached and every gang
  // holding a reservation was seen; nothing after that point changes the book. So it is first
  // given the first refresh_prefix_ gangs in queue order (from the pending index, no sort of
  // 100,000) and those holding reservations: when the depth was reached within them, the book is
  // the one the whole queue gives. Otherwise the book is put back and the whole queue walked,
  // and the prefix doubles for the next refresh. (EngineReservationRefreshTest checks both give
  // the same book.)
  // The reservations in force after a dry cycle over `batch` (-1: the profile does not build).
  auto run = [&](const std::vector<const Workload*>& batch) -> int64_t {
    ClusterState dry = TimelineLocked();
    QuotaLedger dry_ledger = ledger_;
    auto p = Profile::Build(cfg_.profile, plugins::DefaultRegistry(), PluginContext{cfg_.levels, &dry_ledger});
    if (!p.ok()) return -1;
    SchedulerOptions opts;
    opts.reservations = book_;
    opts.keep_decisions = false;  // only the book is wanted
    opts.explain = false;         // no decision is read: no explanation text built for any
    Scheduler dry_sched(std::move(p).value(), std::move(opts));
    return static_cast<int64_t>(dry_sched.RunCycle(dry, batch, clock_()).reservations.size());
  };
  const int depth = cfg_.profile.backfill.depth;
  if (refresh_prefix_ == 0) refresh_prefix_ = static_cast<size_t>(std::max<int32_t>(0, cfg_.refresh_prefix));
  std::deque<Workload> built;  // workloads of gangs without a cached one
  std::vector<const Workload*> batch;
  if (depth > 0 && refresh_prefix_ > 0 && RefreshBatchLocked(refresh_prefix_, &built, &batch)) {
    const std::map<std::string, Reservation> before = *book_;
    const int64_t in_force = run(batch);
    if (in_force < 0 || in_force >= depth) return;
    *book_ = before;
    refresh_prefix_ = std::min<size_t>(refresh_prefix_ * 2, size_t{1} << 24);
  }
  built.clear();
  (void)run(PendingGangWorkloadRefsLocked(&built));
}

bool Engine::RefreshBatchLocked(size_t k, std::deque<Workload>* built, std::vector<const Workload*>* out) const {
  // The pending index orders a queue's gangs as both QueueSorts do (priority, submit time, key;
  // the workload id is "plan:" + key); fairshare puts the queues' fair-share ranks first. Aging
  // (backfill.agedAfter) reorders the queue: whole queue then.
  const std::string_view sort = sched_->profile().queue_sort().Name();
  if ((sort != "fairshare" && sort != "priority") || cfg_.profile.backfill.aged_after_s > 0) return false;
  int64_t total = 0;
  for (const auto& [q, gangs] : pending_by_queue_) total += static_cast<int64_t>(gangs.size());
  if (static_cast<size_t>(total) <= k) return false;  // the whole queue is no longer
  // Gangs holding a reservation are in the batch wherever they are: the walk is extended until
  // every one of them was met (the cycle walks up to each before it may stop).
  std::set<std::string> holders;
  for (const auto& [id, res] : *book_) {
    auto g = id.rfind("plan:", 0) == 0 ? gangs_.find(id.substr(5)) : gangs_.end();
    if (g != gangs_.end() && g->second.head) holders.insert(g->first);  // the others are in no batch
  }
  const QueueRanks ranks(ledger_, sort == "fairshare");
  PendingMerge merge;
  for (const auto& [q, gangs] : pending_by_queue_) merge.Add(ranks.Of(q), gangs);
  size_t walked = 0;
  while (walked < k || !holders.empty()) {
    const GangHeadKey* next = merge.Next();
    if (next == nullptr) break;
    const Gang& g = *next->ptr;
    ++walked;
    holders.erase(g.key);
    if (!holds_.empty() && HeldLocked(PlanId(g))) continue;  // as PendingGangWorkloadRefsLocked
    std::optional<Workload> b;
    const Workload* w = nullptr;
    if (!PendingWorkloadRefLocked(g, &b, &w)) continue;
    // The index's order is the cycle's only when the workload sorts as its index entry does.
    if (w->queue != g.head_queue || w->priority != g.summary.priority || w->submit_time_s != g.summary.submitted ||
        (w->queue_id > 0 && w->queue_id != ledger_.tree().Find(w->queue))) {  // FairShare ranks by queue_id
      return false;
    }
    if (b) {
      built->push_back(std::move(*b));
      w = &built->back();
    }
    out->push_back(w);
  }
  return true;
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

ClusterState Engine::TimelineLocked() {
  EnsureStateLocked();
  ClusterState t = *state_;
  for (const auto& [uid, c] : charged_) {
    const NodeId n = t.FindNode(c.first);
    if (n == kNoNode) continue;
    auto b = bound_since_.find(uid);
    Allocation a;
    a.workload.id = "pod:" + uid;
    a.workload.per_member = c.second;
    a.workload.members = 1;
    a.workload.min_members = 1;
    a.workload.runtime_limit_s = b != bound_since_.end() ? b->second.runtime_limit_s : 0;
    a.workload.workload_class = b != bound_since_.end() ? b->second.workload_class : WorkloadClass::kBatch;
    a.assignments = {{n, 1}};
    a.start_time_s = b != bound_since_.end() ? b->second.since_s : clock_();
    // A filler giving a reserved gang its nodes back (engine_gap_fill.cc) is gone by its notice's
    // deadline: a reservation due while it still terminates keeps its nodes.
    if (const DisruptionRecord* r = disruptions_.ForPod(uid); r != nullptr && r->cause == DisruptionCause::kReservation) {
      a.workload.runtime_limit_s = std::max<int64_t>(1, r->deadline_s - a.start_time_s);
    }
    t.Release(n, c.second);
    if (!t.AddRunning(std::move(a)).ok()) t.Allocate(n, c.second);
  }
  LayHoldsLocked(t);   // preemption holds keep their nodes (engine_preempt.cc)
  LayClosesLocked(t);  // closing nodes take no reservation (engine_closes.cc)
  return t;
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
  return "reserved to start " + InWords(own->second.start_s, clock_()) + " on " +
         std::to_string(own->second.assignments.size()) + " node(s)";
}

}  // namespace tidal
