#include "sim/policies/fifo.h"

#include <algorithm>
#include <climits>

#include "sim/simulator.h"

namespace tidal::sim {

Status FifoPolicy::Prepare(Simulator& sim) {
  NeverFits never;
  for (JobId j = 0; j < sim.jobs().size(); ++j) {
    std::string why = never.Check(sim.state(), sim.job(j).w);
    if (!why.empty()) sim.Reject(j, std::move(why));
  }
  return Status::Ok();
}

void FifoPolicy::Schedule(Simulator& sim, const Changes& changes) {
  const auto& pending = sim.pending();
  if (pending.empty()) return;
  // The head did not fit and nothing was released since: it still does not fit, and fifo starts
  // nothing behind it. (easy-backfill may still start new arrivals behind it.)
  if (mode_ == Mode::kFifo && head_blocked_ && !changes.freed) {
    sim.CountSkip();
    return;
  }
  ClusterState& st = sim.mutable_state();
  if (st.FreeGpus(st.root()) < sim.MinPendingGpus()) {
    head_blocked_ = true;
    sim.CountSkip();
    return;
  }
  size_t i = 0;
  for (; i < pending.size(); ++i) {
    const JobId j = pending[i];
    const Workload& w = sim.job(j).w;
    if (!FirstFit(st, w, w.members, nullptr, &scratch_)) break;
    (void)sim.Place(j, scratch_);
  }
  sim.CountCycle(static_cast<int64_t>(i + (i < pending.size() ? 1 : 0)));
  head_blocked_ = i < pending.size();
  if (!head_blocked_) return;
  sim.record(pending[i]).last_reason = "waiting in FIFO order: does not fit now (node-order first fit)";
  if (mode_ == Mode::kEasyBackfill) Backfill(sim, i);
}

void FifoPolicy::Backfill(Simulator& sim, size_t head_index) {
  const auto& pending = sim.pending();
  ClusterState& st = sim.mutable_state();
  const JobId head = pending[head_index];
  const Workload& hw = sim.job(head).w;
  const size_t nodes = static_cast<size_t>(st.node_count());
  const int64_t g = hw.per_member.gpus;

  // Shadow time: release running jobs by declared end until the head fits (GPU count per node).
  free_at_shadow_.assign(nodes, 0);
  int64_t cap = 0;
  auto members_on = [&](size_t n) -> int64_t {
    if (!NodeAdmits(st.node(static_cast<NodeId>(n)), hw)) return 0;
    return g > 0 ? std::max<int64_t>(0, free_at_shadow_[n]) / g : hw.members;
  };
  for (size_t n = 0; n < nodes; ++n) {
    free_at_shadow_[n] = st.node(static_cast<NodeId>(n)).FreeGpus();
    cap += members_on(n);
  }
  int64_t shadow = cap >= hw.members ? sim.now() : INT64_MAX;
  const auto& ends = sim.running_by_declared_end();
  for (auto it = ends.begin(); shadow == INT64_MAX && it != ends.end();) {
    const int64_t t = it->first;
    for (; it != ends.end() && it->first == t; ++it) {
      const JobId r = it->second;
      const int64_t rg = sim.job(r).w.per_member.gpus;
      for (const auto& a : sim.assignments(r)) {
        const size_t n = static_cast<size_t>(a.node);
        cap -= members_on(n);
        free_at_shadow_[n] += rg * a.members;
        cap += members_on(n);
      }
    }
    if (cap >= hw.members) shadow = std::max(t, sim.now());
  }
  allowed_.assign(nodes, 0);
  for (size_t n = 0; n < nodes; ++n) allowed_[n] = st.node(static_cast<NodeId>(n)).FreeGpus();
  if (shadow != INT64_MAX && FirstFitOnFree(st, hw, hw.members, free_at_shadow_, &scratch_)) {
    for (const auto& a : scratch_) {
      const size_t n = static_cast<size_t>(a.node);
      allowed_[n] = std::min(allowed_[n], free_at_shadow_[n] - g * a.members);
    }
    JobRecord& hr = sim.record(head);
    if (hr.first_reservation_s < 0) hr.first_reservation_s = shadow;
    hr.last_reason = "head of the FIFO queue: reserved to start at t=" + std::to_string(shadow);
  } else {
    shadow = INT64_MAX;  // no reservation possible: backfill whatever fits
  }
  for (auto& a : allowed_) a = std::max<int64_t>(0, a);

  memo_.Clear();
  enum { kNow = 0, kBeyondShadow = 1 };
  for (size_t k = head_index + 1; k < pending.size(); ++k) {
    if (st.FreeGpus(st.root()) < sim.MinPendingGpus()) break;
    const JobId j = pending[k];
    const SimJob& job = sim.job(j);
    const Workload& w = job.w;
    const int64_t limit = w.runtime_limit_s > 0 ? w.runtime_limit_s : job.duration_s;
    const bool ends_before = shadow == INT64_MAX || sim.now() + limit <= shadow;
    const int tag = ends_before ? kNow : kBeyondShadow;
    if (memo_.Failed(w, kNow) || memo_.Failed(w, tag)) continue;
    if (!FirstFit(st, w, w.members, ends_before ? nullptr : &allowed_, &scratch_)) {
      memo_.Fail(w, tag);
      continue;
    }
    if (!sim.Place(j, scratch_).ok()) continue;
    for (const auto& a : scratch_) {
      const size_t n = static_cast<size_t>(a.node);
      if (ends_before) {
        allowed_[n] = std::min(allowed_[n], st.node(a.node).FreeGpus());
      } else {
        allowed_[n] -= w.per_member.gpus * a.members;
      }
    }
    sim.record(j).last_reason = ends_before ? "backfilled: ends before the head's reservation"
                                            : "backfilled: on GPUs the head's reservation does not need";
  }
}

}  // namespace tidal::sim
