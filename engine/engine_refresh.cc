// Engine: the reservation book's refresh (book_ in engine.h; the job's own steps: refresh_job.h).
// A refresh is a dry cycle over the pending gangs on the timeline (bound pods released at their
// expected end) and a copy of the ledger, starting from the book: it keeps, moves earlier and adds
// reservations. Its steps: CaptureRefreshLocked takes what the cycle needs under mu_,
// RunRefreshJob runs it on that alone, InstallRefreshLocked puts its book in place under mu_.
// In place (the default) all three run in the call that asked; with refresh_in_background the
// middle one runs on the refresher thread, and the call that asked only wakes it.
//
// Threading: the *Locked functions run under mu_. The refresher thread (a RefreshWorker running
// RefreshInBackground) owns the job and its RefreshMirrors between the capture and the install
// and takes mu_ only for those two. A caller under mu_ wakes it with RefreshWorker::Request, which
// takes only the worker's own mutex (never held while the work runs, so never while mu_ is taken).
#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "engine/pending_merge.h"

namespace tidal {

namespace {
int64_t NsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

bool Engine::RefreshThrottledLocked() {
  // At most once a second (now < last + 1, not now - last < 1: last starts at INT64_MIN, and
  // now - INT64_MIN overflows), unless the prefix fell short (refresh_retry_). A skipped refresh
  // marks the book stale: the next plan, Admit or disruption poll asks again.
  if (clock_() >= book_refreshed_s_ + 1 || refresh_retry_) return false;
  book_stale_ = true;
  return true;
}

TimelineInputs Engine::TimelineInputsLocked() {
  EnsureStateLocked();
  TimelineInputs in;
  in.charges.reserve(charged_.size());
  for (const auto& [uid, c] : charged_) {
    TimedCharge t;
    t.node = state_->FindNode(c.first);
    if (t.node == kNoNode) continue;
    t.request = c.second;
    t.uid = uid;
    auto b = bound_since_.find(uid);
    t.runtime_limit_s = b != bound_since_.end() ? b->second.runtime_limit_s : 0;
    t.workload_class = b != bound_since_.end() ? b->second.workload_class : WorkloadClass::kBatch;
    t.since_s = b != bound_since_.end() ? b->second.since_s : clock_();
    // A filler giving a reserved gang its nodes back (engine_gap_fill.cc) is gone by its notice's
    // deadline: a reservation due while it still terminates keeps its nodes.
    if (const DisruptionRecord* r = disruptions_.ForPod(uid); r != nullptr && r->cause == DisruptionCause::kReservation) {
      t.runtime_limit_s = std::max<int64_t>(1, r->deadline_s - t.since_s);
    }
    in.charges.push_back(std::move(t));
  }
  in.holds = HoldAllocationsLocked();   // preemption holds keep their nodes (engine_preempt.cc)
  in.closing = ClosingNodesLocked();    // closing nodes take no reservation (engine_closes.cc)
  return in;
}

ClusterState Engine::TimelineLocked() {
  TimelineInputs in = TimelineInputsLocked();
  ClusterState t = *state_;
  LayTimeline(t, std::move(in));
  return t;
}

void Engine::RefreshReservationsLocked() {
  if (cfg_.profile.backfill.depth == 0) return;
  if (RefreshThrottledLocked()) return;
  if (refresher_.started()) {
    refresher_.Request();
    return;
  }
  // In place: the prefix first; when it did not settle the book, the whole queue at once.
  const auto t0 = std::chrono::steady_clock::now();
  for (bool whole : {false, true}) {
    std::optional<RefreshJob> job = CaptureRefreshLocked(whole, /*own_workloads=*/false);
    if (!job) break;
    ++book_refreshes_;
    RefreshOutcome out = RunRefreshJob(*job);
    if (InstallRefreshLocked(*job, std::move(out))) break;
  }
  refresh_locked_ns_ += NsSince(t0);
}

std::optional<RefreshJob> Engine::CaptureRefreshLocked(bool whole_queue, bool own_workloads, RefreshMirrors* mirrors) {
  const int depth = cfg_.profile.backfill.depth;
  if (depth == 0) return std::nullopt;
  if (RefreshThrottledLocked()) return std::nullopt;  // checked again: the refresher's capture comes later
  refresh_retry_ = false;
  book_refreshed_s_ = clock_();
  book_stale_ = false;
  PruneBookLocked();
  RefreshJob job;
  job.timeline = TimelineInputsLocked();  // EnsureStateLocked first: the epoch below is state_'s
  if (mirrors != nullptr) {
    // Assigned onto the last capture's copies (storage reused); the first capture constructs them.
    mirrors->state = *state_;
    mirrors->ledger = ledger_;
  } else {
    job.state.emplace(*state_);
    job.ledger.emplace(ledger_);
  }
  job.book = *book_;
  job.profile = cfg_.profile;
  job.levels = cfg_.levels;
  job.now_s = clock_();
  job.depth = depth;
  job.epoch = book_epoch_;
  for (const auto& [id, h] : holds_) job.held.push_back(id);
  // Run for the book only, the cycle's walk stops once the depth is reached and every gang
  // holding a reservation was seen; nothing after that point changes the book. So it is first
  // given the first refresh_prefix_ gangs in queue order (from the pending index, no sort of
  // 100,000) and those holding reservations: when the depth was reached within them, the book is
  // the one the whole queue gives. Otherwise the job's book is dropped and the whole queue walked,
  // and the prefix doubles for the next refresh. (EngineReservationRefreshTest checks both give
  // the same book.)
  if (refresh_prefix_ == 0) refresh_prefix_ = static_cast<size_t>(std::max<int32_t>(0, cfg_.refresh_prefix));
  // own_workloads: the refresher reads the workloads after mu_ is released; the job holds the
  // gangs' cached ones (immutable, shared) and owns those built for it.
  SharedWorkloads* keep = own_workloads ? &job.shared : nullptr;
  job.prefix = !whole_queue && depth > 0 && refresh_prefix_ > 0 && RefreshBatchLocked(refresh_prefix_, &job.owned, &job.batch, keep);
  if (!job.prefix) {
    job.owned.clear();
    job.shared.clear();
    job.batch = PendingGangWorkloadRefsLocked(&job.owned, keep);
  }
  return job;
}

bool Engine::InstallRefreshLocked(const RefreshJob& job, RefreshOutcome out) {
  if (out.in_force < 0) return true;  // the profile does not build: no cycle ran, the book stays
  if (job.epoch != book_epoch_) {
    // state_ was rebuilt (NodeIds moved) or the profile changed since the capture.
    book_stale_ = true;
    return true;
  }
  if (!out.settled) {
    refresh_prefix_ = std::min<size_t>(refresh_prefix_ * 2, size_t{1} << 24);
    refresh_retry_ = true;  // the whole queue's refresh is due now, not in a second
    return false;
  }
  // Since the capture (only with the refresher thread): holds dropped go, holds made stay as they
  // are now (the dry cycle never moves a held gang: it is in no batch), and the gangs planned or
  // gone since lose theirs (PruneBookLocked).
  for (const std::string& id : job.held) {
    if (!HeldLocked(id)) out.book.erase(id);
  }
  for (const auto& [id, h] : holds_) {
    if (auto r = book_->find(id); r != book_->end()) out.book[id] = r->second;
  }
  *book_ = std::move(out.book);
  PruneBookLocked();
  return true;
}

bool Engine::RefreshBatchLocked(size_t k, std::deque<Workload>* built, std::vector<const Workload*>* out,
                                SharedWorkloads* keep) const {
  // The pending index orders a queue's gangs as both QueueSorts do (priority, submit time, key;
  // the workload id is "plan:" + key); fairshare puts the queues' fair-share ranks first. Aging
  // (backfill.agedAfter) reorders the queue: whole queue then.
  const std::string_view sort = sched_->profile().queue_sort().Name();
  if ((sort != "fairshare" && sort != "priority") || cfg_.profile.backfill.aged_after_s > 0) return false;
  int64_t total = 0;
  for (const auto& [q, gangs] : pending_by_queue_) total += static_cast<int64_t>(gangs.size());
  if (static_cast<size_t>(total) <= k) return false;  // the whole queue is no longer
  // Gangs holding a reservation are in the batch wherever they are: the walk is extended until
  // every one of them was met (the cycle walks up to each before it may stop). By address: the
  // walk may pass 100,000 gangs, and a string set costs a few compares each.
  absl::flat_hash_set<const Gang*> holders;
  for (const auto& [id, res] : *book_) {
    auto g = id.rfind("plan:", 0) == 0 ? gangs_.find(id.substr(5)) : gangs_.end();
    if (g != gangs_.end() && g->second.head) holders.insert(&g->second);  // the others are in no batch
  }
  const QueueRanks ranks(ledger_, sort == "fairshare");
  PendingMerge merge;
  for (const auto& [q, gangs] : pending_by_queue_) merge.Add(ranks.Of(q), gangs);
  const std::string* last_queue = nullptr;  // the last gang's queue name (its head_queue) and id
  int last_queue_id = 0;
  size_t walked = 0;
  while (walked < k || !holders.empty()) {
    const GangHeadKey* next = merge.Next();
    if (next == nullptr) break;
    const Gang& g = *next->ptr;
    ++walked;
    if (!holders.empty()) holders.erase(&g);
    if (!holds_.empty() && HeldLocked(PlanId(g))) continue;  // as PendingGangWorkloadRefsLocked
    std::optional<Workload> b;
    const Workload* w = nullptr;
    if (!PendingWorkloadRefLocked(g, &b, &w, keep)) continue;
    // The index's order is the cycle's only when the workload sorts as its index entry does.
    if (w->queue != g.head_queue || w->priority != g.summary.priority || w->submit_time_s != g.summary.submitted) return false;
    if (w->queue_id > 0) {  // FairShare ranks by queue_id
      if (last_queue == nullptr || *last_queue != w->queue) {
        last_queue = &g.head_queue;  // == w->queue; lives in the gang (a built workload is moved below)
        last_queue_id = ledger_.tree().Find(w->queue);
      }
      if (w->queue_id != last_queue_id) return false;
    }
    if (b) {
      built->push_back(std::move(*b));
      w = &built->back();
    }
    out->push_back(w);
  }
  return true;
}

// --- the refresher thread (refresh_in_background)

void Engine::RefreshInBackground(RefreshMirrors& mirrors) {
  std::optional<RefreshJob> job;
  {
    std::lock_guard<std::mutex> engine_lock(mu_);
    const auto t0 = std::chrono::steady_clock::now();
    job = CaptureRefreshLocked(/*whole_queue=*/refresh_whole_, /*own_workloads=*/true, &mirrors);
    refresh_whole_ = false;
    if (job) ++book_refreshes_;
    refresh_locked_ns_ += NsSince(t0);
  }
  if (!job) return;
  job->state.emplace(*mirrors.state);  // the job's copies, outside mu_
  job->ledger.emplace(*mirrors.ledger);
  RefreshOutcome out = RunRefreshJob(*job);
  {
    std::lock_guard<std::mutex> engine_lock(mu_);
    const auto t0 = std::chrono::steady_clock::now();
    if (!InstallRefreshLocked(*job, std::move(out))) {
      // The prefix did not settle the book: the whole queue next, at once.
      refresh_whole_ = true;
      refresher_.Request();
    }
    refresh_locked_ns_ += NsSince(t0);
  }
  job.reset();  // its copies are freed here, outside mu_
}

void Engine::RefreshReservations() {
  std::lock_guard<std::mutex> lock(mu_);
  RefreshReservationsLocked();
}

void Engine::WaitForRefresh() { refresher_.WaitIdle(); }

}  // namespace tidal
