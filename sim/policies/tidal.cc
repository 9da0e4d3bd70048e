#include "sim/policies/tidal.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <map>

#include "plugins/registry.h"
#include "sim/fabric.h"
#include "sim/lending.h"
#include "sim/policies/baseline_placement.h"
#include "sim/simulator.h"

namespace tidal::sim {

StatusOr<std::unique_ptr<TidalPolicy>> TidalPolicy::Create(const ProfileSpec& spec, const TopologyLevels& levels,
                                                           QuotaLedger* ledger) {
  std::unique_ptr<TidalPolicy> p(new TidalPolicy(ledger));
  const Registry registry = plugins::DefaultRegistry();
  auto profile = Profile::Build(spec, registry, PluginContext{levels, ledger});
  if (!profile.ok()) return profile.status();
  SchedulerOptions opts;
  opts.apply_preemptions = true;
  opts.explain = false;  // only rejections' reasons are reported (FindDoomed's are described too)
  auto book = std::make_shared<std::map<std::string, Reservation>>();  // shared by both schedulers
  p->book_ = book;
  opts.reservations = book;
  TidalPolicy* self = p.get();
  opts.on_evict = [self](const std::string& id, int32_t members) { self->OnEvict(id, members); };
  p->scheduler_ = std::make_unique<Scheduler>(std::move(profile).value(), std::move(opts));
  // The same profile again, for cycles where PostFilter is inert (it can propose no victim): with
  // no PostFilter attempts it gives the same decisions without the futile victim searches.
  auto quiet = Profile::Build(spec, registry, PluginContext{levels, ledger});
  if (!quiet.ok()) return quiet.status();
  SchedulerOptions qopts;
  qopts.apply_preemptions = true;
  qopts.reservations = book;
  qopts.max_postfilter_attempts = 0;
  qopts.explain = false;
  qopts.on_evict = [self](const std::string& id, int32_t members) { self->OnEvict(id, members); };
  p->inert_scheduler_ = std::make_unique<Scheduler>(std::move(quiet).value(), std::move(qopts));
  return p;
}

Status TidalPolicy::Prepare(Simulator& sim) {
  sim_ = &sim;
  // Plugins known to implement no PostFilter; `preemption` is the one whose rules PostFilterInert reads.
  postfilter_known_ = true;
  for (const auto& n : scheduler_->profile().PluginNames()) {
    if (n != "fairshare" && n != "quota" && n != "gang" && n != "topology" && n != "priority" && n != "preemption") {
      postfilter_known_ = false;
    }
  }
  pooled_ = HasPools(sim.state());
  RankIds(sim);
  if (ledger_ == nullptr) {
    FindDoomed(sim, false);  // without queue ids the core is not asked
    return Status::Ok();
  }
  const QueueTree& tree = ledger_->tree();
  ResVec cap(static_cast<size_t>(tree.resources()), 0);
  for (const auto& n : sim.state().nodes()) {
    if (!n.Schedulable()) continue;
    const ResVec c = tree.Request(n.capacity, n.gpu_model);
    for (size_t i = 0; i < c.size(); ++i) cap[i] += c[i];
  }
  ledger_->SetCapacity(cap);
  for (JobId j = 0; j < sim.jobs().size(); ++j) {
    Workload& w = sim.mutable_job(j).w;
    if (w.queue_id < 0) w.queue_id = tree.Find(w.queue);
  }
  FindDoomed(sim, true);
  return Status::Ok();
}

void TidalPolicy::RankIds(const Simulator& sim) {
  // Ties of the queue order go by workload id: ranked once here, compared as integers per event.
  std::vector<JobId> by_id(sim.jobs().size());
  for (JobId j = 0; j < by_id.size(); ++j) by_id[j] = j;
  std::sort(by_id.begin(), by_id.end(), [&](JobId a, JobId b) { return sim.job(a).w.id < sim.job(b).w.id; });
  id_rank_.assign(by_id.size(), 0);
  for (size_t i = 1; i < by_id.size(); ++i) {
    const bool same = sim.job(by_id[i]).w.id == sim.job(by_id[i - 1]).w.id;
    id_rank_[by_id[i]] = id_rank_[by_id[i - 1]] + (same ? 0 : 1);
  }
}

void TidalPolicy::FindDoomed(Simulator& sim, bool ask_core) {
  // Rejected (unresolvable: cannot fit even on the empty, healthy cluster; unknown queue; bad
  // topology level) does not depend on the cluster's state. Ask the core once per distinct request
  // on an empty copy of the fabric (undoing any placement and quota charge it makes).
  doomed_.assign(sim.jobs().size(), std::string());
  any_doomed_ = false;
  if (pooled_) {
    std::map<std::string, std::string> pool_memo;  // by shape and door
    for (JobId j = 0; j < sim.jobs().size(); ++j) {
      const Workload& w = sim.job(j).w;
      const std::string key = w.per_member.ToString() + "/" + std::to_string(w.min_members) + "/" + w.gpu_model + "/" +
                              std::to_string(static_cast<int>(w.front_door)) + (w.preemptible ? "/p" : "");
      auto it = pool_memo.find(key);
      if (it == pool_memo.end()) it = pool_memo.emplace(key, PoolNeverFits(sim, w)).first;
      doomed_[j] = it->second;
      any_doomed_ = any_doomed_ || !it->second.empty();
    }
  }
  if (!shortcuts_ || !ask_core) return;
  const Scheduler& sched = inert_scheduler_ ? *inert_scheduler_ : *scheduler_;
  ClusterState empty = sim.state();
  std::map<std::string, std::string> memo;
  for (JobId j = 0; j < sim.jobs().size(); ++j) {
    if (!doomed_[j].empty()) continue;  // PoolNeverFits said why
    const Workload& w = sim.job(j).w;
    const std::string key = std::to_string(w.per_member.gpus) + "/" + std::to_string(w.per_member.cpu_milli) + "/" +
                            std::to_string(w.per_member.memory_bytes) + "/" + std::to_string(w.members) + "/" +
                            std::to_string(w.min_members) + "/" + w.required_level + "/" + w.preferred_level + "/" +
                            w.gpu_model + "/" + std::to_string(static_cast<int>(w.front_door)) + "/" + w.queue;
    auto it = memo.find(key);
    if (it == memo.end()) {
      Decision d = sched.ScheduleOne(empty, w, 0);
      std::string why;
      if (d.outcome == Outcome::kPlaced || d.outcome == Outcome::kWaiting) {
        (void)empty.RemoveRunning(w.id);
        if (ledger_ != nullptr) ledger_->Uncharge(w.id);
      } else if (d.outcome == Outcome::kRejected) {
        why = d.explanation.empty() ? std::string("rejected") : d.explanation;
      }
      it = memo.emplace(key, why).first;
    }
    doomed_[j] = it->second;
    any_doomed_ = any_doomed_ || !it->second.empty();
  }
}

std::string TidalPolicy::PoolNeverFits(const Simulator& sim, const Workload& w) const {
  const LendingDriver* lending = sim.lending();
  const bool lends = lending != nullptr && lending->lends();
  auto admits = [&](const Node& n) {
    if (NodeAdmits(n, w)) return true;
    return lends && n.Schedulable() && (w.gpu_model.empty() || n.gpu_model == w.gpu_model) && lending->MayLendTo(n.pool, w);
  };
  const std::string own = DoorPlaces(sim.state(), w);
  return NeverFitsOn(sim.state(), w, admits, lends ? own + " and the nodes lent to it" : own);
}

void TidalPolicy::AdvanceTo(Simulator&, int64_t t) {
  if (ledger_ != nullptr) ledger_->Advance(t);
}

void TidalPolicy::OnEvict(const std::string& id, int32_t members) {
  if (sim_ == nullptr) return;
  const JobId j = sim_->Find(id);
  if (j == SIZE_MAX) return;
  // Placed earlier in this very cycle (its decision is not processed yet): it never starts.
  if (sim_->record(j).state != JobState::kRunning) evicted_unstarted_.push_back(j);
  if (ledger_ != nullptr) {
    if (members < 0) {
      ledger_->Uncharge(id);
    } else {
      const Workload& w = sim_->job(j).w;
      ledger_->Reduce(id, ledger_->tree().Request(w.per_member * members, w.gpu_model));
    }
  }
  sim_->Evicted(j, members);
}

bool TidalPolicy::PostFilterInert(const Simulator& sim) const {
  if (!scheduler_->profile().has_postfilters()) return true;
  if (!postfilter_known_) return false;
  // plugins/preemption: a victim is preemptible (and of lower priority) or runs on borrowed quota.
  if (sim.running_preemptible() > 0) return false;
  if (ledger_ != nullptr) {
    for (int q = 1; q < ledger_->tree().size(); ++q) {
      for (int64_t b : ledger_->Borrowed(q)) {
        if (b > 0) return false;
      }
    }
  }
  return true;
}

TidalPolicy::Check TidalPolicy::Verify(Simulator& sim, const CycleResult& r) {
  const ClusterState& state = sim.mutable_state();
  const BackfillSpec& bf = scheduler_->profile().backfill();
  active_.clear();
  free_after_prefix_ = state.FreeGpus(state.root());
  reserve_room_ = 0;
  // Holders after the prefix were in the batch. If one started, lost its reservation or moved it
  // (start or nodes), the reservations in force changed after some excluded jobs' turn: the
  // prefix must reach it.
  auto unchanged = [&](const Decision& d) {
    auto was = book_before_.find(d.workload_id);
    auto is = std::find_if(r.reservations.begin(), r.reservations.end(),
                           [&](const Reservation& x) { return x.workload == d.workload_id; });
    if (d.outcome != Outcome::kPending || was == book_before_.end() || is == r.reservations.end()) return false;
    const auto& a = was->second.assignments;
    const auto& b = is->assignments;
    return was->second.start_s == is->start_s &&
           std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const MemberAssignment& x, const MemberAssignment& y) {
             return x.node == y.node && x.members == y.members;
           });
  };
  for (size_t i = prefix_; i < r.decisions.size(); ++i) {
    if (unchanged(r.decisions[i])) continue;
    for (size_t k = prefix_; k < items_.size(); ++k) {
      if (is_holder_[items_[k].job]) active_.push_back(items_[k]);
    }
    return Check::kAddActive;
  }
  // The reservations in force after the cycle are those every excluded job would have seen at its
  // turn in the whole-queue cycle (only the batch changed them). Below the depth, an excluded job
  // big enough to reserve would take one: such jobs must be in the prefix.
  const bool can_reserve = bf.depth < 0 || r.reservations.size() < static_cast<size_t>(bf.depth);
  const int64_t reserve_from = bf.min_gpus > 0 ? bf.min_gpus : state.max_gpus_per_node();
  reserve_room_ = can_reserve && bf.depth > 0 ? bf.depth - static_cast<int64_t>(r.reservations.size()) : 0;
  // Reserved nodes: earliest reservation start and GPUs reserved (all reservations) per node.
  reserved_nodes_.clear();
  for (const auto& res : r.reservations) {
    for (const auto& a : res.assignments) reserved_nodes_.push_back({a.node, res.start_s, res.per_member.gpus * a.members});
  }
  std::sort(reserved_nodes_.begin(), reserved_nodes_.end(),
            [](const ReservedNode& a, const ReservedNode& b) { return a.node < b.node; });
  size_t u = 0;
  for (size_t i = 0; i < reserved_nodes_.size();) {
    ReservedNode m = reserved_nodes_[i];
    for (++i; i < reserved_nodes_.size() && reserved_nodes_[i].node == m.node; ++i) {
      m.start = std::min(m.start, reserved_nodes_[i].start);
      m.gpus += reserved_nodes_[i].gpus;
    }
    reserved_nodes_[u++] = m;
  }
  reserved_nodes_.resize(u);
  // Per member size g: members of g GPUs that fit after the prefix (GPU-only upper bound, as the
  // search's own pruning). A job that would still run when a node's earliest reservation starts
  // (now + expected run time, the core's backfill rule) may use only the node's GPUs beyond those
  // reserved; one that ends before may use them all. `base` counts the members usable by any job,
  // `by_start` the extra members on reserved nodes by reservation start (descending, running sums).
  caps_.clear();
  auto admits = [&](const Node& n, FrontDoor door, bool preemptible) {
    return !pooled_ || (PoolAdmits(n.pool, door) && (preemptible || !n.lent_preemptible_only));
  };
  auto cap_for = [&](int64_t g, FrontDoor door, bool preemptible) -> const GpuCaps& {
    for (const auto& c : caps_) {
      if (c.g == g && (!pooled_ || (c.door == door && c.preemptible == preemptible))) return c;
    }
    GpuCaps c;
    c.g = g;
    c.door = door;
    c.preemptible = preemptible;
    if (!pooled_) {
      c.base = state.MemberCapacity(state.root(), g);
    } else {
      for (const auto& n : state.nodes()) c.base += admits(n, door, preemptible) ? std::max<int64_t>(0, n.FreeGpus()) / g : 0;
    }
    for (const auto& rn : reserved_nodes_) {
      if (!admits(state.node(rn.node), door, preemptible)) continue;
      const int64_t free = std::max<int64_t>(0, state.node(rn.node).FreeGpus());
      const int64_t m = free / g - std::max<int64_t>(0, free - rn.gpus) / g;
      if (m <= 0) continue;
      c.base -= m;
      c.by_start.emplace_back(rn.start, m);
    }
    // Members that fit on the empty fabric: the most a reservation search (which releases all
    // running work and every reservation by its expected end) can find.
    // With pools not cached: loans change pools and health between cycles.
    auto e = std::find_if(empty_caps_.begin(), empty_caps_.end(), [g](const auto& x) { return x.first == g; });
    if (pooled_ || e == empty_caps_.end()) {
      c.reservable = 0;
      for (const auto& n : state.nodes()) {
        c.reservable += n.Schedulable() && admits(n, door, preemptible) ? n.capacity.gpus / g : 0;
      }
      if (!pooled_) empty_caps_.emplace_back(g, c.reservable);
    } else {
      c.reservable = e->second;
    }
    std::sort(c.by_start.begin(), c.by_start.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t i = 1; i < c.by_start.size(); ++i) c.by_start[i].second += c.by_start[i - 1].second;
    caps_.push_back(std::move(c));
    return caps_.back();
  };
  for (size_t i = prefix_; i < items_.size(); ++i) {
    if (is_holder_[items_[i].job]) continue;  // in the batch
    const Workload& w = *items_[i].w;
    const int64_t g = w.per_member.gpus;
    if (g <= 0) {
      active_.push_back(items_[i]);
      continue;
    }
    const GpuCaps& c = cap_for(g, w.front_door, w.preemptible);
    if (can_reserve && w.TotalGpus() >= reserve_from && c.reservable >= std::max(1, w.min_members)) {
      active_.push_back(items_[i]);
      continue;
    }
    const int64_t ends_at = sim.now() + bf.RuntimeOf(w);
    auto it = std::partition_point(c.by_start.begin(), c.by_start.end(), [&](const auto& x) { return x.first >= ends_at; });
    const int64_t usable = c.base + (it == c.by_start.begin() ? 0 : std::prev(it)->second);
    if (usable >= std::max(1, w.min_members)) active_.push_back(items_[i]);
  }
  return active_.empty() ? Check::kInert : Check::kAddActive;
}

void TidalPolicy::Undo(Simulator& sim, const CycleResult& r) {
  ClusterState& state = sim.mutable_state();
  for (const Decision& d : r.decisions) {
    if (d.outcome != Outcome::kPlaced && d.outcome != Outcome::kWaiting) continue;
    (void)state.RemoveRunning(d.workload_id);
    if (ledger_ != nullptr) ledger_->Uncharge(d.workload_id);
  }
  sim.CountRetry();
}

void TidalPolicy::Apply(Simulator& sim, CycleResult& r, bool prefix_order) {
  sim.CountCycle(static_cast<int64_t>(r.decisions.size()));
  shape_cache_hits_ += r.shape_cache_hits;
  for (size_t i = 0; i < r.decisions.size(); ++i) {
    Decision& d = r.decisions[i];
    // A prefix run got its batch in queue order, so decision i is item i (checked).
    const JobId j = prefix_order && i < items_.size() && items_[i].w->id == d.workload_id ? items_[i].job
                                                                                          : sim.Find(d.workload_id);
    if (j == SIZE_MAX) continue;
    JobRecord& rec = sim.record(j);
    switch (d.outcome) {
      case Outcome::kPlaced:
      case Outcome::kWaiting:
        if (std::find(evicted_unstarted_.begin(), evicted_unstarted_.end(), j) == evicted_unstarted_.end()) {
          sim.Started(j, d.placement.assignments);
        }
        break;
      case Outcome::kRejected:
      case Outcome::kError:
        sim.Reject(j, std::move(d.explanation));
        break;
      case Outcome::kPending:
        if (d.reserved && rec.first_reservation_s < 0) rec.first_reservation_s = d.eta_s;
        rec.last_reason = std::move(d.explanation);
        break;
    }
  }
}

void TidalPolicy::RunWhole(Simulator& sim) {
  batch_.clear();
  for (JobId j : sim.pending()) {
    if (sim.record(j).state == JobState::kPending) batch_.push_back(&sim.job(j).w);
  }
  evicted_unstarted_.clear();
  const Scheduler& sched = inert_ && inert_scheduler_ ? *inert_scheduler_ : *scheduler_;
  CycleResult r = sched.RunCycle(sim.mutable_state(), batch_, sim.now());
  Apply(sim, r, false);
}

bool TidalPolicy::Before(const QueueSortPlugin& qs, bool keyed, const Item& a, const Item& b) {
  if (keyed || a.aged() || b.aged()) {
    for (size_t i = 0; i < a.order.size(); ++i) {  // element by element: std::array's == is a memcmp call
      if (a.order[i] != b.order[i]) return a.order[i] < b.order[i];
    }
  } else {
    if (qs.Less(*a.w, *b.w)) return true;
    if (qs.Less(*b.w, *a.w)) return false;
  }
  return a.id_rank < b.id_rank;
}

void TidalPolicy::MarkHolders(Simulator& sim) {
  // Jobs holding a kept reservation: always in the batch, so that the cycle honours the same
  // reservations from its start, and counts them against the depth, as the whole-queue cycle would.
  is_holder_.resize(sim.jobs().size(), 0);
  for (JobId j : holders_) is_holder_[j] = 0;
  holders_.clear();
  for (const auto& [id, res] : *book_) {
    const JobId j = sim.Find(id);
    if (j != SIZE_MAX && sim.record(j).state == JobState::kPending) holders_.push_back(j);
  }
  for (JobId j : holders_) is_holder_[j] = 1;
}

bool TidalPolicy::BuildOrder(Simulator& sim, const QueueSortPlugin& qs) {
  // Aged workloads first, oldest first, as the cycle's AgedFirst (core/framework/cycle.h) puts them.
  // The order stays total and the cycle's: an aged holder beyond the prefix follows only aged jobs.
  const BackfillSpec& bfs = scheduler_->profile().backfill();
  const int64_t reserve_from = bfs.min_gpus > 0 ? bfs.min_gpus : sim.state().max_gpus_per_node();
  const int64_t now = sim.now();
  items_.clear();
  items_.reserve(sim.pending().size());
  bool keyed = true;
  for (JobId j : sim.pending()) {
    if (sim.record(j).state != JobState::kPending) continue;
    Item it{{}, id_rank_[j], &sim.job(j).w, j};
    const bool aged = it.w->TotalGpus() >= reserve_from && bfs.Aged(*it.w, now);  // fixed for this event
    std::array<int64_t, 3> key{};
    if (keyed && !qs.SortKey(*it.w, &key)) keyed = false;
    it.order = aged ? std::array<int64_t, 4>{0, it.w->submit_time_s, 0, 0} : std::array<int64_t, 4>{1, key[0], key[1], key[2]};
    items_.push_back(it);
  }
  return keyed;
}

bool TidalPolicy::KeepOrder(Simulator& sim, const QueueSortPlugin& qs) {
  // Without aging, a job's sort key is (its queue's rank, a part fixed per job): the queue stays
  // sorted across events. Jobs that left are dropped, new ones merged in, and the whole order is
  // re-sorted only when the queues' ranks changed.
  const int32_t queues = std::max(ledger_ != nullptr ? ledger_->tree().size() : 1, 1);
  ranks_now_.assign(static_cast<size_t>(queues), 0);
  bool split = order_usable_ && scheduler_->profile().backfill().aged_after_s <= 0;
  for (int32_t q = 0; split && q < queues; ++q) split = qs.QueueRank(q, &ranks_now_[static_cast<size_t>(q)]);
  if (!split) {
    order_kept_ = false;
    return false;
  }
  auto rank_of = [&](int32_t q) { return q > 0 && q < queues ? ranks_now_[static_cast<size_t>(q)] : ranks_now_[0]; };
  if (!order_kept_) {
    items_.clear();
    in_items_.assign(sim.jobs().size(), 0);
  }
  size_t u = 0;
  for (const Item& it : items_) {
    if (sim.record(it.job).state == JobState::kPending) {
      items_[u++] = it;
    } else {
      in_items_[it.job] = 0;
    }
  }
  items_.resize(u);
  fresh_.clear();
  for (JobId j : sim.pending()) {
    if (in_items_[j] || sim.record(j).state != JobState::kPending) continue;
    Item it{{}, id_rank_[j], &sim.job(j).w, j};
    std::array<int64_t, 3> key{};
    if (!qs.SortKey(*it.w, &key) || key[0] != rank_of(it.w->queue_id)) {
      order_usable_ = order_kept_ = false;  // not the split QueueRank promised: sorted per event
      return false;
    }
    it.order = {1, key[0], key[1], key[2]};
    in_items_[j] = 1;
    fresh_.push_back(it);
  }
  auto before = [&qs](const Item& a, const Item& b) { return Before(qs, true, a, b); };
  std::sort(fresh_.begin(), fresh_.end(), before);
  if (!order_kept_ || ranks_now_ != ranks_) {
    for (Item& it : items_) it.order[1] = rank_of(it.w->queue_id);
    items_.insert(items_.end(), fresh_.begin(), fresh_.end());
    std::sort(items_.begin(), items_.end(), before);
    ranks_.swap(ranks_now_);
  } else if (!fresh_.empty()) {
    merged_.clear();
    merged_.reserve(items_.size() + fresh_.size());
    std::merge(items_.begin(), items_.end(), fresh_.begin(), fresh_.end(), std::back_inserter(merged_), before);
    items_.swap(merged_);
  }
  order_kept_ = true;
  return true;
}

void TidalPolicy::Schedule(Simulator& sim, const Changes& changes) {
  const auto& pending = sim.pending();
  if (pending.empty()) return;
  ClusterState& state = sim.mutable_state();
  inert_ = shortcuts_ && PostFilterInert(sim);
  // Jobs the core rejects on the empty cluster are rejected at their first cycle whatever the
  // state (Prepare found them): reject them here, so the shortcuts below need not evaluate them.
  // Jobs that can never fit their door's nodes (PoolNeverFits) are rejected here with or without
  // the shortcuts: the core would leave them pending.
  if (changes.arrived && any_doomed_) {
    for (JobId j : pending) {
      if (!doomed_[j].empty() && sim.record(j).state == JobState::kPending) sim.Reject(j, doomed_[j]);
    }
  }
  const int64_t free = state.FreeGpus(state.root());
  const int depth = scheduler_->profile().backfill().depth;
  if (!inert_ || depth < 0 || sim.MinPendingGpus() <= 0) {
    RunWhole(sim);
    return;
  }
  // A kept reservation may move (Scheduler::RunCycle): earlier when capacity was freed, or from
  // now on when it is overdue. Then the cycle must run.
  bool may_move = false;
  for (const auto& [id, res] : *book_) {
    if (may_move || (!changes.freed && res.start_s > sim.now())) continue;
    const JobId j = sim.Find(id);
    may_move = j != SIZE_MAX && sim.record(j).state == JobState::kPending;
  }
  if (!changes.arrived && !may_move && free < sim.MinPendingGpus()) {
    sim.CountSkip();
    return;
  }
  // The queue order exactly as Scheduler::SortQueue computes it: the plugin's sort keys when it
  // gives one for every workload, else Less; ties by id.
  QueueSortPlugin& qs = scheduler_->profile().queue_sort();
  qs.PrepareSort();
  MarkHolders(sim);
  const bool kept = KeepOrder(sim, qs);
  const bool keyed = kept || BuildOrder(sim, qs);
  if (items_.empty()) return;
  auto before = [&qs, keyed](const Item& a, const Item& b) { return Before(qs, keyed, a, b); };
  size_t k = static_cast<size_t>(std::min<int64_t>(free, 1 << 20)) + static_cast<size_t>(depth) + 8;
  while (true) {
    if (k >= items_.size()) {
      RunWhole(sim);
      return;
    }
    // The first k jobs of the queue, in order; the rest after them, unordered (a kept order is
    // sorted throughout).
    if (!kept) {
      std::nth_element(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(k), items_.end(), before);
      std::sort(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(k), before);
    }
    prefix_ = k;
    batch_.clear();
    for (size_t i = 0; i < k; ++i) batch_.push_back(items_[i].w);
    for (size_t i = k; i < items_.size(); ++i) {
      if (is_holder_[items_[i].job]) batch_.push_back(items_[i].w);  // sorted after the prefix by the cycle
    }
    evicted_unstarted_.clear();
    book_before_ = *book_;
    CycleResult r = (inert_scheduler_ ? *inert_scheduler_ : *scheduler_).RunCycle(state, batch_, sim.now());
    if (Verify(sim, r) == Check::kInert) {
      Apply(sim, r, true);
      return;
    }
    Undo(sim, r);
    *book_ = book_before_;
    // Some excluded jobs could still be placed or reserve. Extend the prefix up to the first few of
    // them in queue order (at most the free GPUs' worth can be placed and the depth's room
    // reserved; the next check sees the rest).
    const size_t chunk =
        std::min(active_.size(), static_cast<size_t>(std::max<int64_t>(free_after_prefix_, 0) + reserve_room_) + 8);
    // A kept order is sorted, and Verify lists active_ in its order: no selection, and the pivot's
    // place found by bisection.
    if (!kept) {
      std::nth_element(active_.begin(), active_.begin() + static_cast<std::ptrdiff_t>(chunk - 1), active_.end(), before);
    }
    const Item pivot = active_[chunk - 1];
    size_t extra = 0;
    if (kept) {
      const auto from = items_.begin() + static_cast<std::ptrdiff_t>(k);
      extra = static_cast<size_t>(std::upper_bound(from, items_.end(), pivot, before) - from);
    } else {
      for (size_t i = k; i < items_.size(); ++i) extra += before(pivot, items_[i]) ? 0 : 1;
    }
    k += std::max<size_t>(1, extra);
  }
}

void TidalPolicy::OnComplete(Simulator& sim, JobId j) {
  if (ledger_ != nullptr) ledger_->Uncharge(sim.job(j).w.id);
}

}  // namespace tidal::sim
