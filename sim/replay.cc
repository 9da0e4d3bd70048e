#include "sim/replay.h"

#include <map>
#include <set>
#include <algorithm>
#include <climits>

#include "sim/fabric.h"
#include "sim/lending.h"
#include "sim/policies/fifo.h"
#include "sim/policies/kube_default.h"
#include "sim/policies/tidal.h"

namespace tidal::sim {

StatusOr<std::vector<std::string>> ParsePolicies(const std::string& text) {
  if (text == "all") return PolicyNames();
  std::vector<std::string> out;
  for (size_t pos = 0; pos <= text.size();) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string p = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (p.empty()) return Status::Error("--policy: an empty name in \"" + text + "\"");
    if (p == "all") return Status::Error("--policy: all cannot be combined with other policies");
    bool known = p == kLendingPolicyName;
    for (const auto& n : PolicyNames()) known = known || n == p;
    if (!known) {
      std::string names;
      for (const auto& n : PolicyNames()) names += n + ", ";
      return Status::Error("--policy: unknown policy \"" + p + "\" (accepted: " + names + kLendingPolicyName + ", all)");
    }
    for (const auto& o : out) {
      if (o == p) return Status::Error("--policy: \"" + p + "\" given twice");
    }
    out.push_back(p);
  }
  return out;
}

int64_t TraceSpan(const std::vector<SimJob>& jobs) {
  if (jobs.empty()) return 0;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& j : jobs) {
    lo = std::min(lo, j.w.submit_time_s);
    hi = std::max(hi, j.w.submit_time_s + j.duration_s);
  }
  return hi - lo;
}

std::vector<LendingPolicy> DefaultSimLending() {
  std::vector<LendingPolicy> out;
  for (Pool p : {Pool::kKubernetes, Pool::kSlurm}) {
    LendingPolicy l;
    l.pool = std::string(PoolName(p));
    l.preemptible_only = false;
    l.idle_s = 60;
    l.grace_cap_s = 120;
    out.push_back(l);
  }
  return out;
}

QueueConfig EffectiveQueues(const ReplaySpec& spec) {
  if (!spec.queues.queues.empty()) return spec.queues;
  QueueConfig cfg = spec.queues;
  std::set<std::string> names;
  for (const auto& j : *spec.jobs) names.insert(j.w.queue);
  const size_t nr = cfg.resources.size();
  for (const auto& n : names) {
    QueueSpec q;
    q.name = n;
    q.nominal.assign(nr, kUnlimited);
    q.borrowing_limit.assign(nr, kUnlimited);
    q.lending_limit.assign(nr, kUnlimited);
    cfg.queues.push_back(std::move(q));
  }
  return cfg;
}

int64_t UseQueueNames(const QueueConfig& queues, std::vector<SimJob>* jobs) {
  const std::map<std::string, std::string> name_of = queues.FormerNames();
  int64_t changed = 0;
  for (SimJob& j : *jobs) {
    if (auto it = name_of.find(j.w.queue); it != name_of.end()) {
      j.w.queue = it->second;
      j.w.queue_id = -1;
      ++changed;
    }
  }
  return changed;
}

StatusOr<Replay> MakeReplay(const ReplaySpec& spec, const std::string& policy) {
  Replay r;
  std::unique_ptr<Policy> p;
  const QueueConfig queues = EffectiveQueues(spec);
  if (policy == "fifo") {
    p = std::make_unique<FifoPolicy>(FifoPolicy::Mode::kFifo);
  } else if (policy == "easy-backfill") {
    p = std::make_unique<FifoPolicy>(FifoPolicy::Mode::kEasyBackfill);
  } else if (policy == "kube-default") {
    p = std::make_unique<KubeDefaultPolicy>();
  } else if (policy == "tidal" || policy == kLendingPolicyName) {
    auto tree = QueueTree::Build(queues);
    if (!tree.ok()) return Status::Error("queues: " + tree.status().Message());
    r.ledger = std::make_unique<QuotaLedger>(*tree);
    auto tp = TidalPolicy::Create(spec.profile, spec.fabric->levels(), r.ledger.get());
    if (!tp.ok()) return tp.status();
    (*tp)->set_shortcuts(spec.tidal_shortcuts);
    p = std::move(tp).value();
  } else {
    return Status::Error("unknown policy \"" + policy + "\"");
  }
  const bool lends = policy == kLendingPolicyName;
  if (lends && !HasPools(*spec.fabric)) {
    return Status::Error(std::string(kLendingPolicyName) + ": needs two pools (tidalctl sim --slurm-trace)");
  }
  r.sim = std::make_unique<Simulator>(*spec.fabric, std::move(p));
  if (HasPools(*spec.fabric)) {
    r.sim->SetLending(std::make_unique<LendingDriver>(lends ? spec.lending : std::vector<LendingPolicy>{}));
  }
  std::map<std::string, double> weights;
  for (const auto& q : queues.queues) weights[q.name] = q.weight;
  r.sim->SetQueueWeights(std::move(weights));
  int64_t interval = spec.sample_interval_s;
  if (interval <= 0) interval = std::max<int64_t>(60, TraceSpan(*spec.jobs) / 2000);
  r.sim->SetSampleInterval(spec.series ? interval : 0);
  for (const auto& j : *spec.jobs) r.sim->Submit(j);
  return r;
}

StatusOr<nlohmann::json> RunPolicy(const ReplaySpec& spec, const std::string& policy, const MetricsOptions& mopts) {
  auto r = MakeReplay(spec, policy);
  if (!r.ok()) return r.status();
  if (Status s = r->sim->Start(); !s.ok()) return s;
  r->sim->Run();
  return ComputeMetrics(*r->sim, mopts);
}

}  // namespace tidal::sim
