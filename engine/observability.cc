#include "engine/observability.h"

#include "core/framework/scheduler.h"
#include "core/state/runtime_history.h"
#include "engine/disruption_book.h"

namespace tidal {

std::string PreemptionReasonLabel(const std::string& reason) {
  for (const char* r : kPreemptionReasons) {
    if (reason == r) return reason;
  }
  return "other";
}

EngineMetrics::EngineMetrics(metrics::Registry& r)
    : registry(r),
      admission_wait(r.Histogram("tidal_admission_wait_seconds",
                                 "Time from a gang's first pod creation to its plan (admission and placement).",
                                 {"queue", "class", "size_bucket"}, metrics::WaitBuckets())),
      time_to_start(r.Histogram("tidal_time_to_start_seconds",
                                "Time from a gang's first pod creation to its first member bound.",
                                {"queue", "class", "size_bucket"}, metrics::WaitBuckets())),
      cycle_duration(r.Histogram("tidal_cycle_duration_seconds",
                                 "Duration of one scheduling pass (planning one gang on the live cluster).", {},
                                 metrics::DefaultBuckets())),
      preemptions(r.Counter("tidal_preemptions_total", "Workloads preempted, by reason.", {"reason"})),
      preempted_gpu_seconds(r.Counter("tidal_preempted_gpu_seconds_total",
                                      "GPU-seconds of work lost to preemption since the victims' last checkpoints.",
                                      {"reason"})),
      decisions(r.Counter("tidal_decisions_total", "Scheduling decisions, by outcome.", {"outcome"})),
      runtime_limit_exceeded(r.Counter("tidal_runtime_limit_exceeded_total",
                                       "Pods found running past their declared tidal.dev/runtime-limit plus the grace "
                                       "(each counted once; tidal-scheduler evicts them), by queue.",
                                       {"queue"})),
      disruptions(r.Counter("tidal_disruptions_total",
                            "Workloads (gangs whole, or elastic gangs' surplus members) taken off GPUs, by cause.",
                            {"cause"})),
      disruption_lost_gpu_seconds(r.Counter("tidal_disruption_lost_gpu_seconds_total",
                                            "GPU-seconds of work lost to disruptions (since the last checkpoint "
                                            "before the eviction), by cause.",
                                            {"cause"})),
      disruption_notice(r.Histogram("tidal_disruption_notice_seconds",
                                    "Time from the engine choosing a disruption to its eviction (the notice a "
                                    "workload that checkpoints on notice got), by cause.",
                                    {"cause"}, {0, 1, 5, 15, 30, 60, 120, 300, 600, 1800})),
      gangs_requeued_whole(r.Counter("tidal_gangs_requeued_whole_total",
                                     "Gangs of more than one member taken off GPUs whole (none left half-running), "
                                     "by cause.",
                                     {"cause"})),
      perishable_gpu_seconds(r.Counter("tidal_perishable_gpu_seconds_total",
                                       "GPU-seconds of perishable windows (nodes before a drain, a maintenance "
                                       "window or their tidal.dev/available-until): offered (all their GPUs) and "
                                       "filled (used by work).",
                                       {"use"})),
      finished_workloads(r.Counter("tidal_finished_workloads_total",
                                   "Workloads that ended, by front door and how: completed (ran to its own end), "
                                   "timeout (killed at its runtime limit), disrupted (preempted, reclaimed, drained, "
                                   "requeued), cancelled, failed, unknown (its end was not seen).",
                                   {"door", "end"})),
      pool_lends(r.Counter("tidal_pool_lends_total", "Nodes an owner pool lent to the other front door.", {"from", "to"})),
      pool_reclaims(r.Counter("tidal_pool_reclaims_total",
                              "Lent nodes their owner pool began to reclaim (its work pending, or the node out of "
                              "service).",
                              {"from", "to"})),
      pool_reclaim_seconds(r.Histogram("tidal_pool_reclaim_seconds",
                                       "Time from a reclaim's start to the node being its owner's again (the "
                                       "borrowers gone).",
                                       {"from", "to"}, {1, 2, 5, 10, 15, 30, 60, 120, 300, 600})),
      grpc_requests(r.Counter("tidal_grpc_requests_total", "gRPC requests served, by method and status code.",
                              {"method", "code"})),
      grpc_duration(r.Histogram("tidal_grpc_request_duration_seconds", "gRPC request latency, by method.",
                                {"method"}, metrics::ExponentialBuckets(0.0001, 2, 16))) {
  for (const char* reason : kPreemptionReasons) {
    preemptions.With({reason});
    preempted_gpu_seconds.With({reason});
  }
  for (const char* cause : kDisruptionCauses) {
    disruptions.With({cause});
    disruption_lost_gpu_seconds.With({cause});
    disruption_notice.With({cause});
    gangs_requeued_whole.With({cause});
  }
  for (const char* use : {"offered", "filled"}) perishable_gpu_seconds.With({use});
  for (const char* door : {"kubernetes", "slurm"}) {
    for (const char* end : kWorkloadEnds) finished_workloads.With({door, end});
  }
  for (const auto& [from, to] : {std::pair{"slurm", "kubernetes"}, std::pair{"kubernetes", "slurm"}}) {
    pool_lends.With({from, to});
    pool_reclaims.With({from, to});
    pool_reclaim_seconds.With({from, to});
  }
  for (auto o : {Outcome::kPlaced, Outcome::kWaiting, Outcome::kPending, Outcome::kRejected, Outcome::kError}) {
    decisions.With({std::string(OutcomeName(o))});
  }
}

void EngineMetrics::InitQueues(const std::vector<std::string>& queues) {
  for (const auto& q : queues) runtime_limit_exceeded.With({q});
  runtime_limit_exceeded.With({kUnconfiguredQueue});
}

void DecisionLog::Write(nlohmann::json line) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  tokens_ = std::min(rate_, tokens_ + rate_ * std::chrono::duration<double>(now - last_).count());
  last_ = now;
  if (tokens_ < 1.0) {
    ++dropped_;
    return;
  }
  tokens_ -= 1.0;
  if (dropped_ > dropped_reported_) {
    line["dropped_since_last"] = dropped_ - dropped_reported_;
    dropped_reported_ = dropped_;
  }
  const std::string s = line.dump() + "\n";
  std::fwrite(s.data(), 1, s.size(), out_);
  std::fflush(out_);
}

uint64_t DecisionLog::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

}  // namespace tidal
