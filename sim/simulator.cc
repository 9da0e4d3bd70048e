#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

#include "sim/lending.h"
#include "sim/policies/tidal.h"

namespace tidal::sim {

Simulator::Simulator(ClusterState state, std::unique_ptr<Policy> policy)
    : state_(std::move(state)), policy_(std::move(policy)) {}

Simulator::Simulator(ClusterState state, std::unique_ptr<Scheduler> scheduler, QuotaLedger* ledger)
    : state_(std::move(state)), policy_(std::make_unique<TidalPolicy>(std::move(scheduler), ledger)) {}

Simulator::~Simulator() = default;

void Simulator::SetLending(std::unique_ptr<LendingDriver> d) { lending_ = std::move(d); }

void Simulator::Submit(SimJob job) {
  const JobId i = jobs_.size();
  JobRecord r;
  r.id = job.w.id;
  r.queue = job.w.queue;
  r.members = job.w.members;
  r.gpus = job.w.TotalGpus();
  r.submit_s = job.w.submit_time_s;
  index_[job.w.id] = i;
  jobs_.push_back(std::move(job));
  records_.push_back(std::move(r));
  assignments_.emplace_back();
}

void Simulator::SubmitRunning(SimJob job, std::vector<MemberAssignment> at, int64_t start_s) {
  initial_.push_back({jobs_.size(), std::move(at), start_s});
  Submit(std::move(job));
}

JobId Simulator::Find(const std::string& id) const {
  auto it = index_.find(id);
  return it == index_.end() ? SIZE_MAX : it->second;
}

namespace {
int64_t MinRequest(const Workload& w) { return w.per_member.gpus * std::max(1, w.min_members); }
}  // namespace

void Simulator::AddPending(JobId j) {
  records_[j].state = JobState::kPending;
  const Workload& w = jobs_[j].w;
  ++pending_gpus_[MinRequest(w)];
  ++pending_member_gpus_[w.per_member.gpus];
  queue_pending_[static_cast<size_t>(queue_of_[j])] += w.TotalGpus();
  auto& door = pending_door_[static_cast<size_t>(w.front_door)];
  ++door[0][w.TotalGpus()];
  if (w.preemptible) ++door[1][w.TotalGpus()];
}

void Simulator::RemovePendingCounters(JobId j) {
  const Workload& w = jobs_[j].w;
  auto dec = [](std::map<int64_t, int64_t>& m, int64_t k) {
    auto it = m.find(k);
    if (it != m.end() && --it->second == 0) m.erase(it);
  };
  dec(pending_gpus_, MinRequest(w));
  dec(pending_member_gpus_, w.per_member.gpus);
  queue_pending_[static_cast<size_t>(queue_of_[j])] -= w.TotalGpus();
  auto& door = pending_door_[static_cast<size_t>(w.front_door)];
  dec(door[0], w.TotalGpus());
  if (w.preemptible) dec(door[1], w.TotalGpus());
}

int64_t Simulator::DeclaredEnd(JobId j) const {
  const JobRecord& r = records_[j];
  const int64_t limit = jobs_[j].w.runtime_limit_s;
  return r.start_s + (limit > 0 ? std::max<int64_t>(1, limit - r.saved_s) : r.end_s - r.start_s);
}

void Simulator::CountDoor(JobId j, int64_t gpus) { door_running_[static_cast<size_t>(jobs_[j].w.front_door)] += gpus; }

void Simulator::Locality(JobId j, const std::vector<MemberAssignment>& a) {
  JobRecord& r = records_[j];
  r.nodes = static_cast<int32_t>(a.size());
  if (a.empty()) return;
  const auto& levels = state_.levels();
  if (a.size() == 1) {
    r.domain_level = levels.node_level();
    r.domain = state_.NodePath(a.front().node);
    return;
  }
  for (int l = levels.node_level() - 1; l >= 0; --l) {
    const VertexId v = state_.AncestorAt(a.front().node, l);
    bool same = true;
    for (const auto& m : a) {
      if (state_.AncestorAt(m.node, l) != v) {
        same = false;
        break;
      }
    }
    if (same) {
      r.domain_level = l;
      r.domain = state_.vertex(v).path;
      return;
    }
  }
  r.domain_level = -1;
  r.domain = "cluster";
}

void Simulator::Started(JobId j, const std::vector<MemberAssignment>& assignments) {
  JobRecord& r = records_[j];
  const SimJob& job = jobs_[j];
  int32_t placed = 0;
  for (const auto& a : assignments) placed += a.members;
  RemovePendingCounters(j);
  r.members = placed;
  r.gpus = job.w.per_member.gpus * placed;
  r.start_s = now_;
  if (r.first_start_s < 0) r.first_start_s = now_;
  // What is left of its work and of its limit after what earlier runs checkpointed.
  int64_t run = std::max<int64_t>(1, job.duration_s - r.saved_s);
  const int64_t limit = job.w.runtime_limit_s > 0 ? std::max<int64_t>(1, job.w.runtime_limit_s - r.saved_s) : 0;
  r.killed_at_limit = limit > 0 && run > limit;
  if (r.killed_at_limit) run = limit;
  r.end_s = now_ + run;
  r.state = JobState::kRunning;
  ends_.emplace(r.end_s, j);
  declared_ends_.emplace(now_ + (limit > 0 ? limit : run), j);
  assignments_[j] = assignments;
  allocated_gpus_ += r.gpus;
  queue_running_[static_cast<size_t>(queue_of_[j])] += r.gpus;
  CountDoor(j, r.gpus);
  running_preemptible_ += job.w.preemptible ? 1 : 0;
  Locality(j, assignments);
}

Status Simulator::Place(JobId j, const std::vector<MemberAssignment>& assignments) {
  Allocation a;
  a.workload = jobs_[j].w;
  a.workload.members = 0;
  for (const auto& m : assignments) a.workload.members += m.members;
  a.assignments = assignments;
  a.start_time_s = now_;
  if (Status s = state_.AddRunning(std::move(a)); !s.ok()) return s;
  Started(j, assignments);
  return Status::Ok();
}

void Simulator::Reject(JobId j, std::string reason) {
  JobRecord& r = records_[j];
  if (r.state == JobState::kPending) RemovePendingCounters(j);
  r.state = JobState::kRejected;
  r.rejected = true;
  r.last_reason = std::move(reason);
}

void Simulator::Evicted(JobId j, int32_t members) {
  JobRecord& r = records_[j];
  if (r.state != JobState::kRunning) return;
  const SimJob& job = jobs_[j];
  const size_t q = static_cast<size_t>(queue_of_[j]);
  if (members >= 0) {  // an elastic shrink: it keeps running with fewer members
    const int64_t g = job.w.per_member.gpus * members;
    r.members -= members;
    r.gpus -= g;
    allocated_gpus_ -= g;
    queue_running_[q] -= g;
    CountDoor(j, -g);
    return;
  }
  ++r.preemptions;
  running_preemptible_ -= job.w.preemptible ? 1 : 0;
  ends_.erase({r.end_s, j});
  declared_ends_.erase({DeclaredEnd(j), j});
  // The work since its last checkpoint is lost (all of it without checkpoints; none when it
  // checkpoints on notice: evictions come with notice); the next run resumes from there.
  const int64_t ran = now_ - r.start_s;
  int64_t kept = 0;
  if (job.w.checkpoints_on_notice) {
    kept = ran;
  } else if (job.w.checkpoint_interval_s > 0) {
    kept = ran / job.w.checkpoint_interval_s * job.w.checkpoint_interval_s;
  }
  r.lost_gpu_seconds += static_cast<double>(r.gpus) * static_cast<double>(ran - kept);
  r.saved_s += kept;
  allocated_gpus_ -= r.gpus;
  queue_running_[q] -= r.gpus;
  CountDoor(j, -r.gpus);
  r.start_s = r.end_s = -1;
  r.domain.clear();
  r.domain_level = -2;
  r.gpus = job.w.TotalGpus();
  r.members = job.w.members;
  assignments_[j].clear();
  r.state = JobState::kFuture;  // back to pending when the policy's pass ends (see Run)
  requeue_.push_back(j);
}

Status Simulator::Evict(JobId j) {
  if (j >= records_.size() || records_[j].state != JobState::kRunning) return Status::Error("evict: job is not running");
  if (Status s = state_.RemoveRunning(records_[j].id); !s.ok()) return s;
  Evicted(j, -1);
  policy_->OnEvicted(*this, j);
  return Status::Ok();
}

double Simulator::JainNow(std::vector<double>* fair_out) const {
  // Normalised share x_q = allocation / weighted max-min fair share of the capacity given each
  // active queue's demand (running + pending GPUs); Jain = (sum x)^2 / (n sum x^2).
  struct Q {
    double demand, weight, alloc;
    size_t index;
  };
  std::vector<Q> qs;
  fair_out->assign(queue_names_.size(), 0.0);
  for (size_t q = 0; q < queue_names_.size(); ++q) {
    const int64_t d = queue_running_[q] + queue_pending_[q];
    if (d <= 0) continue;
    qs.push_back({static_cast<double>(d), queue_weight_[q], static_cast<double>(queue_running_[q]), q});
  }
  if (qs.size() == 1) (*fair_out)[qs[0].index] = std::min(qs[0].demand, static_cast<double>(capacity_gpus_));
  if (qs.size() <= 1) return 1.0;
  std::sort(qs.begin(), qs.end(), [](const Q& a, const Q& b) { return a.demand / a.weight < b.demand / b.weight; });
  double cap = static_cast<double>(capacity_gpus_), wsum = 0;
  for (const auto& q : qs) wsum += q.weight;
  double sx = 0, sx2 = 0;
  int n = 0;
  for (const auto& q : qs) {
    const double fair_rate = wsum > 0 ? cap / wsum : 0;
    const double fair = std::min(q.demand, fair_rate * q.weight);
    (*fair_out)[q.index] = fair;
    cap -= fair;
    wsum -= q.weight;
    if (fair <= 0) continue;
    const double x = std::min(1.0, q.alloc / fair);
    sx += x;
    sx2 += x * x;
    ++n;
  }
  if (n == 0 || sx2 <= 0) return 1.0;
  return sx * sx / (n * sx2);
}

void Simulator::Account(int64_t t) {
  if (t <= now_) return;
  const double dt = static_cast<double>(t - now_);
  integrals_.allocated_gpu_s += dt * static_cast<double>(allocated_gpus_);
  integrals_.held_gpu_s += dt * static_cast<double>(held_gpus_);
  integrals_.capacity_gpu_s += dt * static_cast<double>(capacity_gpus_);
  for (size_t q = 0; q < queue_names_.size(); ++q) {
    if (queue_running_[q] != 0) *queue_gpu_s_[q] += dt * static_cast<double>(queue_running_[q]);
  }
  if (!pending_.empty()) {
    const int64_t free = state_.FreeGpus(state_.root());
    int64_t demand = 0;
    for (const auto& [gpus, n] : pending_gpus_) {
      if (gpus > free) break;
      demand += gpus * n;
      if (demand >= free) break;
    }
    integrals_.stranded_gpu_s += dt * static_cast<double>(std::min(free, demand));
    integrals_.contended_s += dt;
    integrals_.jain_dt += dt * JainNow(&fair_now_);
    for (size_t q = 0; q < queue_names_.size(); ++q) {
      fair_gap_gpu_s_[q] += dt * (static_cast<double>(queue_running_[q]) - fair_now_[q]);
    }
  }
  if (lending_) lending_->Account(*this, now_, t);
  while (sample_interval_ > 0 && next_sample_ < t) {
    Sample s;
    s.t = next_sample_;
    s.allocated = allocated_gpus_;
    s.held = held_gpus_;
    s.pending = static_cast<int64_t>(pending_.size());
    s.running = static_cast<int64_t>(ends_.size());
    s.per_queue = queue_running_;
    s.per_door[0] = door_running_[0];
    s.per_door[1] = door_running_[1];
    s.lent = lending_ ? lending_->lent_gpus() : 0;
    series_.push_back(std::move(s));
    next_sample_ += sample_interval_;
    if (series_.size() >= kMaxSamples) ThinSeries();
  }
  now_ = t;
}

void Simulator::ThinSeries() {
  // Samples at t0 + k x interval for k < kMaxSamples (even): the even ones are the series at twice
  // the period, and next_sample_ = t0 + kMaxSamples x interval continues it.
  for (size_t k = 0; 2 * k < series_.size(); ++k) series_[k] = std::move(series_[2 * k]);
  series_.resize((series_.size() + 1) / 2);
  sample_interval_ *= 2;
}

void Simulator::Complete(int64_t t, Changes* ch) {
  while (!ends_.empty() && ends_.begin()->first <= t) {
    const JobId j = ends_.begin()->second;
    ends_.erase(ends_.begin());
    JobRecord& r = records_[j];
    declared_ends_.erase({DeclaredEnd(j), j});
    (void)state_.RemoveRunning(r.id);
    r.state = JobState::kDone;
    running_preemptible_ -= jobs_[j].w.preemptible ? 1 : 0;
    allocated_gpus_ -= r.gpus;
    queue_running_[static_cast<size_t>(queue_of_[j])] -= r.gpus;
    CountDoor(j, -r.gpus);
    policy_->OnComplete(*this, j);
    ch->freed = true;
  }
}

Status Simulator::Start() {
  if (started_) return status_;
  started_ = true;
  std::map<std::string, int> qidx;
  for (const auto& j : jobs_) qidx.emplace(j.w.queue, 0);
  for (auto& [name, i] : qidx) {
    i = static_cast<int>(queue_names_.size());
    queue_names_.push_back(name);
    auto w = weights_.find(name);
    queue_weight_.push_back(w == weights_.end() || w->second <= 0 ? 1.0 : w->second);
    gpu_seconds_by_queue_[name] = 0;
  }
  for (const auto& name : queue_names_) queue_gpu_s_.push_back(&gpu_seconds_by_queue_[name]);
  queue_running_.assign(queue_names_.size(), 0);
  queue_pending_.assign(queue_names_.size(), 0);
  fair_gap_gpu_s_.assign(queue_names_.size(), 0.0);
  queue_of_.reserve(jobs_.size());
  for (const auto& j : jobs_) queue_of_.push_back(qidx.at(j.w.queue));
  std::vector<bool> initial(jobs_.size(), false);
  for (const auto& in : initial_) initial[in.job] = true;
  arrivals_.clear();
  for (JobId i = 0; i < jobs_.size(); ++i) {
    if (!initial[i]) arrivals_.push_back(i);
  }
  std::stable_sort(arrivals_.begin(), arrivals_.end(),
                   [&](JobId a, JobId b) { return jobs_[a].w.submit_time_s < jobs_[b].w.submit_time_s; });
  for (const auto& n : state_.nodes()) {
    if (n.Schedulable()) capacity_gpus_ += n.capacity.gpus;
  }
  first_submit_ = arrivals_.empty() ? 0 : jobs_[arrivals_.front()].w.submit_time_s;
  if (start_time_ != INT64_MIN) first_submit_ = start_time_;
  now_ = first_submit_;
  next_sample_ = first_submit_;
  status_ = policy_->Prepare(*this);
  // Work already running (SubmitRunning): on its nodes since its start, as Place would put it.
  for (const auto& in : initial_) {
    if (!status_.ok()) break;
    Allocation a;
    a.workload = jobs_[in.job].w;
    a.workload.members = 0;
    for (const auto& m : in.at) a.workload.members += m.members;
    a.assignments = in.at;
    a.start_time_s = in.start_s;
    if (Status s = state_.AddRunning(std::move(a)); !s.ok()) {
      status_ = Status::Error("running job " + jobs_[in.job].w.id + ": " + s.Message());
      break;
    }
    AddPending(in.job);  // Started takes it off the pending counters
    const int64_t now = now_;
    now_ = in.start_s;
    Started(in.job, in.at);
    now_ = now;
  }
  if (status_.ok() && lending_) lending_->Prepare(*this);
  return status_;
}

void Simulator::Run(int64_t until_s) {
  if (!Start().ok()) return;
  const auto wall0 = std::chrono::steady_clock::now();
  for (;;) {
    // The lending driver's next wake-up; alone it keeps the replay going only while work waits.
    int64_t t = lending_ ? lending_->NextWakeup(now_) : INT64_MAX;
    if (next_arrival_ >= arrivals_.size() && ends_.empty() && (pending_.empty() || t == INT64_MAX)) break;
    // (a job submitted before the clock's start arrives at the start: SetStartTime)
    if (next_arrival_ < arrivals_.size()) t = std::min(t, std::max(now_, jobs_[arrivals_[next_arrival_]].w.submit_time_s));
    if (!ends_.empty()) t = std::min(t, ends_.begin()->first);
    t = std::max(t, now_);  // running work that was due before the clock's start ends at it
    if (t > until_s) break;
    Account(t);
    policy_->AdvanceTo(*this, t);
    Changes ch;
    Complete(t, &ch);
    while (next_arrival_ < arrivals_.size() && jobs_[arrivals_[next_arrival_]].w.submit_time_s <= t) {
      const JobId j = arrivals_[next_arrival_++];
      if (records_[j].state != JobState::kFuture) continue;  // refused up front by the policy
      AddPending(j);
      pending_.push_back(j);
      ch.arrived = true;
    }
    ++stats_.events;
    Passes(ch);
    // Lending: nodes lent, reclaimed or returned, borrowers evicted; then the policy again
    // (bounded: each round either changes hands or stops).
    for (int round = 0; lending_ && round < 4 && lending_->Step(*this); ++round) {
      Requeue();
      Passes(Changes{true, true});
    }
    if (on_cycle_) on_cycle_(t, *this);
  }
  if (lending_) lending_->Finish(now_);
  stats_.wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
}

void Simulator::Requeue() {
  auto arrival_key = [&](JobId j) { return std::make_pair(jobs_[j].w.submit_time_s, j); };
  for (JobId j : requeue_) {
    AddPending(j);
    pending_.insert(std::lower_bound(pending_.begin(), pending_.end(), j,
                                     [&](JobId a, JobId b) { return arrival_key(a) < arrival_key(b); }),
                    j);
  }
  requeue_.clear();
}

void Simulator::Passes(Changes ch) {
  // Evictions requeue jobs at once; the policy then gets another pass at the same time
  // (bounded: a pass that evicts again is possible only while victims keep being chosen).
  for (int pass = 0; pass < 8 && !pending_.empty(); ++pass) {
    policy_->Schedule(*this, ch);
    std::erase_if(pending_, [&](JobId j) { return records_[j].state != JobState::kPending; });
    if (requeue_.empty()) break;
    Requeue();
    ch = Changes{true, true};
  }
}

}  // namespace tidal::sim
