#include "sim/simulator.h"

#include <algorithm>
#include <chrono>

namespace tidal::sim {

Simulator::Simulator(ClusterState state, std::unique_ptr<Scheduler> scheduler, QuotaLedger* ledger)
    : state_(std::move(state)), scheduler_(std::move(scheduler)), ledger_(ledger) {}

void Simulator::Submit(SimJob job) {
  const size_t i = jobs_.size();
  JobRecord r;
  r.id = job.w.id;
  r.queue = job.w.queue;
  r.members = job.w.members;
  r.gpus = job.w.TotalGpus();
  r.submit_s = job.w.submit_time_s;
  if (ledger_ != nullptr && job.w.queue_id < 0) job.w.queue_id = ledger_->tree().Find(job.w.queue);
  index_[job.w.id] = i;
  submits_.emplace(job.w.submit_time_s, i);
  jobs_.push_back(std::move(job));
  records_.push_back(std::move(r));
}

void Simulator::Account(int64_t t) {
  if (t <= now_) return;
  const double dt = static_cast<double>(t - now_);
  for (const auto& [q, g] : running_gpus_by_queue_) gpu_seconds_by_queue_[q] += dt * static_cast<double>(g);
  now_ = t;
}

void Simulator::Complete(int64_t t) {
  while (!ends_.empty() && ends_.begin()->first <= t) {
    const size_t i = ends_.begin()->second;
    ends_.erase(ends_.begin());
    const Workload& w = jobs_[i].w;
    (void)state_.RemoveRunning(w.id);
    if (ledger_ != nullptr) ledger_->Uncharge(w.id);
    running_gpus_by_queue_[w.queue] -= records_[i].gpus;
    allocated_gpus_ -= records_[i].gpus;
  }
}

void Simulator::Run(int64_t until_s) {
  const auto wall0 = std::chrono::steady_clock::now();
  if (ledger_ != nullptr) {
    ResVec cap(static_cast<size_t>(ledger_->tree().resources()), 0);
    for (const auto& n : state_.nodes()) {
      const ResVec c = ledger_->tree().Request(n.capacity, n.gpu_model);
      for (size_t i = 0; i < c.size(); ++i) cap[i] += c[i];
    }
    ledger_->SetCapacity(cap);
  }
  while (!submits_.empty() || !ends_.empty()) {
    int64_t t = INT64_MAX;
    if (!submits_.empty()) t = submits_.begin()->first;
    if (!ends_.empty()) t = std::min(t, ends_.begin()->first);
    if (t > until_s) break;
    Account(t);
    Complete(t);
    while (!submits_.empty() && submits_.begin()->first <= t) {
      pending_.push_back(submits_.begin()->second);
      submits_.erase(submits_.begin());
    }
    if (ledger_ != nullptr) ledger_->Advance(t);
    if (pending_.empty()) continue;
    std::vector<const Workload*> batch;
    batch.reserve(pending_.size());
    for (size_t i : pending_) batch.push_back(&jobs_[i].w);
    CycleResult r = scheduler_->RunCycle(state_, std::move(batch), t);
    ++stats_.cycles;
    stats_.decisions += static_cast<int64_t>(r.decisions.size());
    std::vector<size_t> still;
    still.reserve(pending_.size());
    for (const auto& d : r.decisions) {
      const size_t i = index_.at(d.workload_id);
      JobRecord& rec = records_[i];
      if (d.outcome == Outcome::kPlaced) {
        rec.start_s = t;
        rec.end_s = t + jobs_[i].duration_s;
        rec.domain = d.placement.domain;
        rec.domain_level = d.placement.domain_level;
        const int32_t placed = d.placement.PlacedMembers();
        rec.members = placed;
        rec.gpus = jobs_[i].w.per_member.gpus * placed;
        ends_.emplace(rec.end_s, i);
        running_gpus_by_queue_[rec.queue] += rec.gpus;
        allocated_gpus_ += rec.gpus;
      } else if (d.outcome == Outcome::kRejected || d.outcome == Outcome::kError) {
        rec.rejected = true;
        rec.last_reason = d.explanation;
      } else {
        rec.last_reason = d.explanation;
        still.push_back(i);
      }
    }
    // Keep submission order for the next cycle's input (the QueueSort decides the real order).
    std::sort(still.begin(), still.end());
    pending_ = std::move(still);
    if (on_cycle_) on_cycle_(t, *this);
  }
  stats_.wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
}

}  // namespace tidal::sim
