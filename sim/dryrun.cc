#include "sim/dryrun.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "sim/fabric.h"
#include "sim/lending.h"
#include "sim/metrics.h"
#include "sim/policies/tidal.h"
#include "sim/replay.h"

namespace tidal::sim {
namespace {

constexpr const char* kNoQueue = "(no queue)";  // other schedulers' pods that name none

struct Side {
  std::unique_ptr<QuotaLedger> ledger;
  std::unique_ptr<Simulator> sim;
  std::vector<JobId> running, pending, arrivals;  // by where they came from
  std::set<std::string> reserved;                 // pending gangs holding a reservation in the snapshot
};

// Per queue: a job's time to start; large jobs' apart.
struct QueueAgg {
  std::vector<double> ttst, large_ttst;
  int64_t jobs = 0, started = 0, rejected = 0, preemptions = 0, preempted_nonpreemptible = 0;
  double lost_gpu_s = 0;
};

nlohmann::json Summary(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  return {{"n", static_cast<int64_t>(v.size())},
          {"avg_s", v.empty() ? 0.0 : std::round(sum / static_cast<double>(v.size()))},
          {"p99_s", std::round(Percentile(v, 99))}};
}

// The starting state against the snapshot: every running workload placed where it runs, and each
// node's allocated GPUs equal to the snapshot's running work there.
nlohmann::json CheckPlacements(const Snapshot& snap, const Simulator& sim) {
  nlohmann::json problems = nlohmann::json::array();
  const ClusterState& st = sim.state();
  std::map<std::string, int64_t> gpus;
  for (const auto& r : snap.running) {
    for (const auto& [node, m] : r.placement) gpus[node] += r.w.per_member.gpus * m;
    auto it = st.running().find(r.w.id);
    if (it == st.running().end()) {
      problems.push_back(r.w.id + ": not running at the start");
      continue;
    }
    std::map<std::string, int32_t> at;
    for (const auto& a : it->second.assignments) at[st.node(a.node).name] += a.members;
    std::map<std::string, int32_t> want(r.placement.begin(), r.placement.end());
    if (at != want) problems.push_back(r.w.id + ": placed elsewhere than in the snapshot");
  }
  for (const auto& n : st.nodes()) {
    const int64_t want = gpus.count(n.name) ? gpus[n.name] : 0;
    if (n.allocated.gpus != want) {
      problems.push_back("node " + n.name + ": " + std::to_string(n.allocated.gpus) + " GPUs allocated, the snapshot's work holds " +
                         std::to_string(want));
    }
  }
  return {{"running", static_cast<int64_t>(snap.running.size())}, {"match", problems.empty()}, {"problems", problems}};
}

StatusOr<Side> Build(const Snapshot& snap, const DryRunConfig& cfg, const DryRunOptions& o) {
  const int64_t t0 = snap.taken_at;
  auto fabric = ClusterState::Build(snap.levels, snap.nodes);
  if (!fabric.ok()) return Status::Error("snapshot nodes: " + fabric.status().Message());
  std::vector<SimJob> jobs;
  std::vector<std::vector<MemberAssignment>> at;
  std::vector<int64_t> start;
  std::set<std::string> running_ids;
  for (const auto& r : snap.running) {
    SimJob j;
    j.w = r.w;
    if (j.w.queue.empty()) j.w.queue = kNoQueue;
    const int64_t end = r.w.runtime_limit_s > 0 ? r.start_s + r.w.runtime_limit_s : t0 + o.default_runtime_s;
    j.duration_s = std::max<int64_t>(1, std::max(end, t0) - r.start_s);
    std::vector<MemberAssignment> a;
    for (const auto& [node, m] : r.placement) a.push_back({fabric->FindNode(node), m});
    running_ids.insert(r.w.id);
    jobs.push_back(std::move(j));
    at.push_back(std::move(a));
    start.push_back(r.start_s);
  }
  const size_t first_pending = jobs.size();
  for (const auto& p : snap.pending) {
    SimJob j;
    j.w = p.w;
    if (running_ids.count(j.w.id)) j.w.id += "#pending";  // an elastic gang's members still to place
    j.duration_s = p.w.runtime_limit_s > 0 ? p.w.runtime_limit_s : o.default_runtime_s;
    jobs.push_back(std::move(j));
  }
  const size_t first_arrival = jobs.size();
  for (const auto& a : o.arrivals) {
    if (a.w.submit_time_s > o.horizon_s) continue;
    SimJob j = a;
    j.w.id = "arrival/" + j.w.id;
    j.w.submit_time_s += t0;
    jobs.push_back(std::move(j));
  }
  UseQueueNames(cfg.queues, &jobs);  // a rename in the candidate config: one row per queue
  ReplaySpec rs;
  rs.fabric = &*fabric;
  rs.jobs = &jobs;
  rs.queues = cfg.queues;
  const QueueConfig queues = EffectiveQueues(rs);
  auto tree = QueueTree::Build(queues);
  if (!tree.ok()) return Status::Error(cfg.name + " config: queues: " + tree.status().Message());
  Side side;
  side.ledger = std::make_unique<QuotaLedger>(*tree);
  if (!snap.usage.is_null()) {
    if (Status s = side.ledger->LoadState(snap.usage.dump()); !s.ok()) return Status::Error("snapshot.usage: " + s.Message());
  }
  auto policy = TidalPolicy::Create(cfg.profile, fabric->levels(), side.ledger.get());
  if (!policy.ok()) return Status::Error(cfg.name + " config: profile: " + policy.status().Message());
  (*policy)->set_shortcuts(o.shortcuts);
  const bool pools = HasPools(*fabric);
  side.sim = std::make_unique<Simulator>(std::move(fabric).value(), std::move(policy).value());
  if (pools) side.sim->SetLending(std::make_unique<LendingDriver>(cfg.pools));
  std::map<std::string, double> weights;
  for (const auto& q : queues.queues) weights[q.name] = q.weight;
  side.sim->SetQueueWeights(std::move(weights));
  side.sim->SetSampleInterval(o.sample_interval_s > 0 ? o.sample_interval_s : std::max<int64_t>(60, o.horizon_s / 200));
  side.sim->SetStartTime(t0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (i < first_pending) {
      side.sim->SubmitRunning(jobs[i], at[i], start[i]);
      side.running.push_back(i);
    } else {
      side.sim->Submit(jobs[i]);
      (i < first_arrival ? side.pending : side.arrivals).push_back(i);
    }
  }
  for (const auto& r : snap.reservations) {
    if (!r.hold) side.reserved.insert(r.id);
  }
  return side;
}

// The running work's quota charges, oldest first, as the engine charged them when it started;
// what the config's quota no longer admits is marked borrowed (reclaim may take it back).
void ChargeRunning(Side& side) {
  Simulator& sim = *side.sim;
  const QueueTree& tree = side.ledger->tree();
  std::vector<JobId> order = side.running;
  std::stable_sort(order.begin(), order.end(),
                   [&](JobId a, JobId b) { return sim.record(a).start_s < sim.record(b).start_s; });
  for (JobId j : order) {
    if (sim.record(j).state != JobState::kRunning) continue;
    const Workload& w = sim.job(j).w;
    const int leaf = tree.Find(w.queue);
    if (leaf <= 0 || !tree.IsLeaf(leaf)) continue;
    ResVec req(static_cast<size_t>(tree.resources()), 0);
    for (const auto& a : sim.assignments(j)) {
      const ResVec r = tree.Request(w.per_member * a.members, sim.state().node(a.node).gpu_model);
      for (size_t i = 0; i < req.size(); ++i) req[i] += r[i];
    }
    const AdmissionResult adm = side.ledger->CheckAdmission(leaf, req);
    (void)side.ledger->Charge(w.id, leaf, req, !adm.status.ok() || adm.borrowing);
  }
}

}  // namespace

std::vector<SimJob> RecordedArrivals(const Snapshot& snap, int64_t window_s, int64_t horizon_s, int64_t default_runtime_s,
                                     uint64_t seed) {
  std::map<std::string, std::vector<const Workload*>> recent;  // by queue, in snapshot order
  const int64_t from = snap.taken_at - window_s;
  for (const auto& r : snap.running) {
    if (r.tidal && r.start_s >= from) recent[r.w.queue].push_back(&r.w);
  }
  for (const auto& p : snap.pending) {
    if (p.w.submit_time_s >= from) recent[p.w.queue].push_back(&p.w);
  }
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&x] {  // splitmix64: the same stream on every platform
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  auto uniform = [&] { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); };  // [0, 1)
  std::vector<SimJob> out;
  for (const auto& [queue, ws] : recent) {
    if (window_s <= 0 || ws.empty()) continue;
    const double rate = static_cast<double>(ws.size()) / static_cast<double>(window_s);
    double t = 0;
    for (int64_t i = 0;; ++i) {
      t += -std::log(1.0 - uniform()) / rate;
      if (t > static_cast<double>(horizon_s)) break;
      const Workload& like = *ws[static_cast<size_t>(uniform() * static_cast<double>(ws.size()))];
      SimJob j;
      j.w = like;
      j.w.id = "recorded/" + queue + "/" + std::to_string(i);
      j.w.queue_id = -1;
      j.w.submit_time_s = static_cast<int64_t>(t);
      j.w.runtime_limit_s = like.runtime_limit_s;
      j.duration_s = like.runtime_limit_s > 0 ? like.runtime_limit_s : default_runtime_s;
      out.push_back(std::move(j));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const SimJob& a, const SimJob& b) { return a.w.submit_time_s < b.w.submit_time_s; });
  return out;
}

StatusOr<nlohmann::json> RunDryRun(const Snapshot& snap, const DryRunConfig& cfg, const DryRunOptions& o) {
  auto built = Build(snap, cfg, o);
  if (!built.ok()) return built.status();
  Side& side = *built;
  Simulator& sim = *side.sim;
  if (Status s = sim.Start(); !s.ok()) return Status::Error(cfg.name + " config: " + s.Message());
  ChargeRunning(side);
  const int64_t t0 = snap.taken_at, end = t0 + o.horizon_s;
  nlohmann::json out{{"config", cfg.name}, {"source", cfg.source}, {"version", cfg.version}};
  out["placements"] = CheckPlacements(snap, sim);
  if (o.horizon_s > 0) {
    sim.Run(end);
    sim.Integrate(end);
  }

  // Per queue.
  std::map<std::string, QueueAgg> agg;
  for (const auto& q : sim.queues()) agg[q];
  auto waited = [&](JobId j) {
    const JobRecord& r = sim.records()[j];
    return static_cast<double>((r.first_start_s >= 0 ? r.first_start_s : end) - r.submit_s);
  };
  nlohmann::json preempted = nlohmann::json::array();
  for (JobId j = 0; j < sim.records().size(); ++j) {
    const JobRecord& r = sim.records()[j];
    const Workload& w = sim.job(j).w;
    QueueAgg& a = agg[r.queue];
    a.preemptions += r.preemptions;
    a.lost_gpu_s += r.lost_gpu_seconds;
    if (r.preemptions > 0) {
      if (!w.preemptible) a.preempted_nonpreemptible += r.preemptions;
      preempted.push_back({{"id", r.id}, {"queue", r.queue}, {"preemptible", w.preemptible}, {"times", r.preemptions},
                           {"lost_gpu_s", std::round(r.lost_gpu_seconds)}});
    }
  }
  nlohmann::json rejected = nlohmann::json::array();
  for (const auto* list : {&side.pending, &side.arrivals}) {
    for (JobId j : *list) {
      const JobRecord& r = sim.records()[j];
      if (r.submit_s > end) continue;
      QueueAgg& a = agg[r.queue];
      ++a.jobs;
      if (r.rejected) {
        ++a.rejected;
        rejected.push_back({{"id", r.id}, {"queue", r.queue}, {"reason", r.last_reason}});
        continue;
      }
      a.started += r.first_start_s >= 0 ? 1 : 0;
      a.ttst.push_back(waited(j));
      if (sim.job(j).w.TotalGpus() >= o.large_gpus) a.large_ttst.push_back(waited(j));
    }
  }
  const double horizon = static_cast<double>(std::max<int64_t>(1, o.horizon_s));
  nlohmann::json queues = nlohmann::json::object();
  QueueAgg total;
  for (size_t qi = 0; qi < sim.queues().size(); ++qi) {
    const std::string& q = sim.queues()[qi];
    const QueueAgg& a = agg[q];
    const double gpu_s = sim.gpu_seconds_by_queue().at(q);
    queues[q] = {{"jobs", a.jobs},
                 {"started", a.started},
                 {"rejected", a.rejected},
                 {"ttst", Summary(a.ttst)},
                 {"large_ttst", Summary(a.large_ttst)},
                 {"preemptions", a.preemptions},
                 {"preempted_nonpreemptible", a.preempted_nonpreemptible},
                 {"lost_gpu_s", std::round(a.lost_gpu_s)},
                 {"gpu_s", std::round(gpu_s)},
                 {"avg_gpus", std::round(100 * gpu_s / horizon) / 100},
                 {"fair_share_gap_gpus", std::round(100 * sim.fair_gap_gpu_s()[qi] / horizon) / 100}};
    total.jobs += a.jobs;
    total.started += a.started;
    total.rejected += a.rejected;
    total.preemptions += a.preemptions;
    total.preempted_nonpreemptible += a.preempted_nonpreemptible;
    total.lost_gpu_s += a.lost_gpu_s;
    total.ttst.insert(total.ttst.end(), a.ttst.begin(), a.ttst.end());
    total.large_ttst.insert(total.large_ttst.end(), a.large_ttst.begin(), a.large_ttst.end());
  }
  out["queues"] = queues;
  const Integrals& in = sim.integrals();
  out["total"] = {{"jobs", total.jobs},
                  {"started", total.started},
                  {"rejected", total.rejected},
                  {"ttst", Summary(total.ttst)},
                  {"large_ttst", Summary(total.large_ttst)},
                  {"preemptions", total.preemptions},
                  {"preempted_nonpreemptible", total.preempted_nonpreemptible},
                  {"lost_gpu_s", std::round(total.lost_gpu_s)},
                  {"gpu_s", std::round(in.allocated_gpu_s)},
                  {"avg_gpus", std::round(100 * in.allocated_gpu_s / horizon) / 100},
                  {"jain_index", in.contended_s > 0 ? std::round(1e4 * in.jain_dt / in.contended_s) / 1e4 : 1.0}};
  out["preempted"] = preempted;
  out["rejected"] = rejected;  // the core refuses them under this config (an unknown queue, a shape that never fits)
  // Queues this config renamed (queues[].formerNames): former name -> name, for the report's rows.
  nlohmann::json former = nlohmann::json::object();
  for (const auto& [was, is] : cfg.queues.FormerNames()) former[was] = is;
  out["former_names"] = former;

  // Pending gangs: when each starts, or where its reservation stands at the horizon.
  const auto& book = static_cast<const TidalPolicy&>(sim.policy()).scheduler().reservation_book();
  nlohmann::json gangs = nlohmann::json::object();
  for (JobId j : side.pending) {
    const JobRecord& r = sim.records()[j];
    nlohmann::json g{{"queue", r.queue}, {"gpus", sim.job(j).w.TotalGpus()}, {"reserved_in_snapshot", side.reserved.count(r.id) > 0}};
    if (r.first_start_s >= 0) {
      g["start_s"] = r.first_start_s - t0;
      g["started"] = true;
    } else {
      const Reservation* res = nullptr;
      if (book) {
        auto b = book->find(r.id);
        if (b != book->end()) res = &b->second;
      }
      g["start_s"] = res != nullptr ? nlohmann::json(res->start_s - t0) : nlohmann::json(nullptr);
      g["started"] = false;
    }
    if (r.rejected) g["rejected"] = r.last_reason;
    gangs[r.id] = g;
  }
  out["gangs"] = gangs;

  nlohmann::json t = nlohmann::json::array(), per = nlohmann::json::array();
  for (size_t q = 0; q < sim.queues().size(); ++q) per.push_back(nlohmann::json::array());
  for (const auto& s : sim.series()) {
    if (s.t > end) break;
    t.push_back(s.t - t0);
    for (size_t q = 0; q < s.per_queue.size() && q < per.size(); ++q) per[q].push_back(s.per_queue[q]);
  }
  out["series"] = {{"t", t}, {"queues", sim.queues()}, {"per_queue", per}};
  return out;
}

}  // namespace tidal::sim
