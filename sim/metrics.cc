#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "core/api/size_bucket.h"
#include "sim/lending.h"

namespace tidal::sim {

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  const size_t i = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(sorted.size()))) - 1;
  return sorted[i];
}

namespace {

double Round(double x, double unit = 1e-3) { return std::round(x / unit) * unit; }

nlohmann::json Summary(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const double avg = v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  return {{"avg", Round(avg)}, {"p50", Percentile(v, 50)}, {"p99", Percentile(v, 99)}};
}

// Why jobs were rejected: the most frequent reasons first (ties by text), each with its count and
// first job; past kMaxReasons, one entry "other reasons" with the rest.
nlohmann::json Rejections(const std::map<std::string, std::pair<int64_t, std::string>>& reasons) {
  constexpr size_t kMaxReasons = 10;
  std::vector<const std::pair<const std::string, std::pair<int64_t, std::string>>*> order;
  for (const auto& r : reasons) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->second.first > b->second.first; });
  nlohmann::json out = nlohmann::json::array();
  int64_t rest = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i < kMaxReasons) {
      out.push_back({{"reason", order[i]->first}, {"jobs", order[i]->second.first}, {"first", order[i]->second.second}});
    } else {
      rest += order[i]->second.first;
    }
  }
  if (rest > 0) out.push_back({{"reason", "other reasons"}, {"jobs", rest}, {"first", ""}});
  return out;
}

// With pools: each door's jobs and queueing delay, and the lending driver's figures.
nlohmann::json PoolMetrics(const Simulator& sim) {
  nlohmann::json out = sim.lending()->Metrics();
  std::vector<double> delay[2];
  int64_t jobs[2] = {0, 0}, unfinished[2] = {0, 0};
  for (size_t i = 0; i < sim.records().size(); ++i) {
    const JobRecord& r = sim.records()[i];
    const size_t d = static_cast<size_t>(sim.jobs()[i].w.front_door);
    ++jobs[d];
    if (r.rejected) continue;
    if (r.state != JobState::kDone) {
      ++unfinished[d];
      continue;
    }
    delay[d].push_back(static_cast<double>(r.start_s - r.submit_s));
  }
  nlohmann::json doors = nlohmann::json::object();
  for (size_t d = 0; d < 2; ++d) {
    doors[std::string(FrontDoorName(static_cast<FrontDoor>(d)))] = {
        {"jobs", jobs[d]}, {"completed", static_cast<int64_t>(delay[d].size())}, {"unfinished", unfinished[d]},
        {"queueing_delay_s", Summary(delay[d])}};
  }
  out["by_door"] = doors;
  return out;
}

}  // namespace

nlohmann::json ComputeMetrics(const Simulator& sim, const MetricsOptions& opts) {
  const auto& recs = sim.records();
  const auto& jobs = sim.jobs();
  const Integrals& in = sim.integrals();
  nlohmann::json m;
  const bool lends = sim.lending() != nullptr && sim.lending()->lends();
  m["policy"] = std::string(sim.policy().Name()) + (lends ? "+lending" : "");

  int64_t completed = 0, rejected = 0, unfinished = 0, killed = 0, preemptions = 0;
  double lost = 0;
  std::vector<double> jct, delay;
  std::vector<double> gang64_delay;  // jobs of >= 64 GPUs (the large-gang figure; 64 is in by_size 9-64)
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_size;
  struct QueueAgg {
    int64_t jobs = 0, completed = 0;
    double jct = 0, delay = 0;
  };
  std::map<std::string, QueueAgg> per_queue;
  std::map<std::string, std::pair<int64_t, std::string>> reasons;  // rejection reason -> jobs, the first one
  int64_t first = INT64_MAX, last = INT64_MIN;
  int64_t multi = 0;
  const int nl = sim.state().levels().node_level();
  std::vector<int64_t> within(static_cast<size_t>(nl), 0);
  for (size_t i = 0; i < recs.size(); ++i) {
    const JobRecord& r = recs[i];
    preemptions += r.preemptions;
    lost += r.lost_gpu_seconds;
    QueueAgg& q = per_queue[r.queue];
    ++q.jobs;
    if (r.rejected) {
      ++rejected;
      auto& g = reasons[r.last_reason.empty() ? std::string("(no reason given)") : r.last_reason];
      if (g.first++ == 0) g.second = r.id;
      continue;
    }
    first = std::min(first, r.submit_s);
    if (r.state != JobState::kDone) {
      ++unfinished;
      continue;
    }
    ++completed;
    killed += r.killed_at_limit ? 1 : 0;
    const double c = static_cast<double>(r.end_s - r.submit_s), d = static_cast<double>(r.start_s - r.submit_s);
    jct.push_back(c);
    delay.push_back(d);
    auto& b = by_size[SizeBucket(jobs[i].w.TotalGpus())];
    b.first.push_back(c);
    b.second.push_back(d);
    if (jobs[i].w.TotalGpus() >= 64) gang64_delay.push_back(d);
    ++q.completed;
    q.jct += c;
    q.delay += d;
    last = std::max(last, r.end_s);
    if (r.nodes > 1) {
      ++multi;
      for (int l = 0; l < nl; ++l) {
        if (r.domain_level >= l) ++within[static_cast<size_t>(l)];
      }
    }
  }
  m["jobs"] = {{"submitted", static_cast<int64_t>(recs.size())}, {"completed", completed}, {"rejected", rejected},
               {"unfinished", unfinished}, {"killed_at_limit", killed}};
  m["rejections"] = Rejections(reasons);
  std::vector<double> sorted_delay = delay;
  std::sort(sorted_delay.begin(), sorted_delay.end());
  m["jct_s"] = Summary(jct);
  m["queueing_delay_s"] = Summary(delay);
  nlohmann::json bs = nlohmann::json::object();
  for (const char* b : kSizeBuckets) {
    auto it = by_size.find(b);
    if (it == by_size.end()) {
      bs[b] = {{"jobs", 0}};
      continue;
    }
    bs[b] = {{"jobs", static_cast<int64_t>(it->second.first.size())},
             {"jct_s", Summary(it->second.first)},
             {"queueing_delay_s", Summary(it->second.second)}};
  }
  m["by_size"] = bs;
  m["gangs_64_plus"] = {{"jobs", static_cast<int64_t>(gang64_delay.size())}, {"queueing_delay_s", Summary(gang64_delay)}};
  const int64_t makespan = completed > 0 ? last - first : 0;
  m["makespan_s"] = makespan;
  const double cap = in.capacity_gpu_s;
  m["capacity_gpus"] = sim.capacity_gpus();
  m["gpu_allocation_rate"] = cap > 0 ? Round((in.allocated_gpu_s + in.held_gpu_s) / cap, 1e-6) : 0.0;
  m["gpu_running_rate"] = cap > 0 ? Round(in.allocated_gpu_s / cap, 1e-6) : 0.0;
  m["stranded_gpu_hours"] = Round(in.stranded_gpu_s / 3600.0);
  m["fragmentation"] = cap > 0 ? Round(in.stranded_gpu_s / cap, 1e-6) : 0.0;
  m["contended_hours"] = Round(in.contended_s / 3600.0);
  m["jain_index"] = in.contended_s > 0 ? Round(in.jain_dt / in.contended_s, 1e-6) : 1.0;
  m["preemptions"] = preemptions;
  m["gpu_hours_lost"] = Round(lost / 3600.0);
  m["partial_gang_gpu_hours"] = Round(in.held_gpu_s / 3600.0);
  nlohmann::json loc = {{"multi_node_jobs", multi}};
  for (int l = 0; l < nl; ++l) {
    loc["within_one_" + sim.state().levels().Name(l)] =
        multi > 0 ? Round(static_cast<double>(within[static_cast<size_t>(l)]) / static_cast<double>(multi), 1e-6) : 0.0;
  }
  m["locality"] = loc;
  nlohmann::json pq = nlohmann::json::object();
  const auto& gs = sim.gpu_seconds_by_queue();
  for (const auto& [name, q] : per_queue) {
    auto g = gs.find(name);
    pq[name] = {{"jobs", q.jobs},
                {"completed", q.completed},
                {"gpu_hours", Round(g == gs.end() ? 0 : g->second / 3600.0)},
                {"avg_jct_s", q.completed ? Round(q.jct / static_cast<double>(q.completed)) : 0.0},
                {"avg_queueing_delay_s", q.completed ? Round(q.delay / static_cast<double>(q.completed)) : 0.0}};
  }
  m["per_queue"] = pq;
  if (sim.lending() != nullptr) m["pools"] = PoolMetrics(sim);
  const SimStats& st = sim.stats();
  nlohmann::json s = {{"events", st.events}, {"cycles", st.cycles}, {"skipped", st.skipped},
                      {"retries", st.retries}, {"decisions", st.decisions}};
  if (opts.timing) {
    s["wall_s"] = Round(st.wall_seconds);
    s["jobs_per_s"] = st.wall_seconds > 0 ? std::round(static_cast<double>(recs.size()) / st.wall_seconds) : 0.0;
  }
  m["sim"] = s;
  if (opts.series) {
    nlohmann::json cdf = nlohmann::json::array();
    for (int i = 0; i <= 200; ++i) cdf.push_back(Percentile(sorted_delay, i * 0.5));
    m["queueing_delay_quantiles"] = cdf;  // at 0, 0.5, ..., 100 percent
    const auto& ser = sim.series();
    nlohmann::json t = nlohmann::json::array(), a = nlohmann::json::array(), h = nlohmann::json::array(),
                   p = nlohmann::json::array();
    nlohmann::json qs = nlohmann::json::array(), kube = nlohmann::json::array(), slurm = nlohmann::json::array(),
                   lent = nlohmann::json::array();
    for (size_t q = 0; q < sim.queues().size(); ++q) qs.push_back(nlohmann::json::array());
    for (const auto& x : ser) {
      t.push_back(x.t);
      kube.push_back(x.per_door[0]);
      slurm.push_back(x.per_door[1]);
      lent.push_back(x.lent);
      a.push_back(x.allocated);
      h.push_back(x.held);
      p.push_back(x.pending);
      for (size_t q = 0; q < x.per_queue.size(); ++q) qs[q].push_back(x.per_queue[q]);
    }
    m["series"] = {{"t", t}, {"allocated", a}, {"held", h}, {"pending", p}, {"queues", sim.queues()}, {"per_queue", qs}};
    if (sim.lending() != nullptr) {
      m["series"]["doors"] = {{"kubernetes", kube}, {"slurm", slurm}};
      m["series"]["lent"] = lent;
    }
  }
  return m;
}

}  // namespace tidal::sim
