#include "sim/generator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "core/api/duration.h"

namespace tidal::sim {
namespace {

constexpr double kDay = 86400.0;
constexpr double kPi = 3.14159265358979323846;

// Draws on std::mt19937_64, whose output sequence the standard fixes; the transforms are ours.
class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  double Uniform() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double OpenUniform() { return 1.0 - Uniform(); }                            // (0, 1]
  double Exponential(double rate) { return -std::log(OpenUniform()) / rate; }
  double Normal() {  // Box-Muller, the cosine branch only (one normal per two uniforms)
    const double u1 = OpenUniform(), u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
  }
  double Lognormal(double median, double sigma) { return median * std::exp(sigma * Normal()); }
  // An index drawn by the cumulative weights `cum` (last = total).
  size_t Pick(const std::vector<double>& cum) {
    const double x = Uniform() * cum.back();
    return std::min<size_t>(std::upper_bound(cum.begin(), cum.end(), x) - cum.begin(), cum.size() - 1);
  }

 private:
  std::mt19937_64 g_;
};

double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

double SizeMedian(const GenSpec& s, const GenSize& z) {
  return z.median_s > 0 ? z.median_s : s.median_s * std::pow(static_cast<double>(z.gpus), s.growth);
}

// E[min(X, cap)] for X lognormal with `median` and `sigma`.
double CappedLognormalMean(double median, double sigma, double cap) {
  const double mu = std::log(median);
  if (sigma <= 0) return std::min(median, cap);
  const double lc = std::log(cap);
  return std::exp(mu + sigma * sigma / 2) * Phi((lc - mu - sigma * sigma) / sigma) + cap * (1 - Phi((lc - mu) / sigma));
}

// E[max(1, ceil(min(X, cap)))], the whole seconds Generate writes: 1 + sum over k = 1 .. (the last
// integer below cap) of P(X > k), summed term by term up to kExactTerms and past it by the
// midpoint rule (sum of P(X > k) = integral of P(X > x) over [k - 1/2, k + 1/2], and the integral of
// P(X > x) over [a, b] is E[min(X, b)] - E[min(X, a)]). Without the rounding, durations of a few
// seconds offered up to 40% more than `load` (median 1 s, sigma 0.5).
double RoundedCappedLognormalMean(double median, double sigma, double cap) {
  if (sigma <= 0) return std::max(1.0, std::ceil(std::min(median, cap)));
  constexpr int64_t kExactTerms = 1000;
  const double mu = std::log(median);
  const double last = std::ceil(cap) - 1;  // the last k with min(X, cap) > k possible
  double sum = 1;
  const double exact_to = std::min(last, static_cast<double>(kExactTerms));
  for (int64_t k = 1; static_cast<double>(k) <= exact_to; ++k) {
    sum += 0.5 * std::erfc((std::log(static_cast<double>(k)) - mu) / (sigma * std::sqrt(2.0)));  // P(X > k)
  }
  if (last > exact_to) {
    sum += CappedLognormalMean(median, sigma, last + 0.5) - CappedLognormalMean(median, sigma, exact_to + 0.5);
  }
  return sum;
}

// The sine's phase: 1 + diurnal x sin(kOmega x (t - phase)) peaks at peak_hour.
constexpr double kOmega = 2.0 * kPi / kDay;
double Phase(const GenSpec& s) { return (s.peak_hour - 6.0) * 3600.0; }

double Diurnal(const GenSpec& s, double t) { return 1.0 + s.diurnal * std::sin(kOmega * (t - Phase(s))); }

// The integral of Diurnal over [a, b), exactly.
double DiurnalIntegral(const GenSpec& s, double a, double b) {
  return (b - a) + s.diurnal / kOmega * (std::cos(kOmega * (a - Phase(s))) - std::cos(kOmega * (b - Phase(s))));
}

// The arrival process's pieces in time order, covering [0, horizon): in a burst (f = Diurnal x
// burst_factor) or not (f = Diurnal). Bursts start as a Poisson process of bursts_per_day, last
// burst_s, and those that overlap merge.
struct Segment {
  double begin, end;
  bool burst;
};
std::vector<Segment> Segments(const GenSpec& s, double horizon, Rng& rng) {
  std::vector<Segment> out;
  double at = 0;  // the end of what is covered so far
  if (s.bursts_per_day > 0) {
    const double rate = s.bursts_per_day / kDay;
    for (double t = rng.Exponential(rate); t < horizon; t += rng.Exponential(rate)) {
      const double end = std::min(t + s.burst_s, horizon);
      if (!out.empty() && out.back().burst && t <= out.back().end) {
        out.back().end = std::max(out.back().end, end);
      } else {
        if (t > at) out.push_back({at, t, false});
        out.push_back({t, end, true});
      }
      at = out.back().end;
    }
  }
  if (at < horizon) out.push_back({at, horizon, false});
  return out;
}

std::vector<double> Cumulative(const std::vector<double>& w) {
  std::vector<double> c(w.size());
  double sum = 0;
  for (size_t i = 0; i < w.size(); ++i) c[i] = sum += w[i];
  return c;
}

// One accepted arrival at t: its size, duration, team and declared limit, drawn in that order.
GenJob DrawJob(const GenSpec& s, double t, size_t n, const std::vector<double>& size_cum,
               const std::vector<double>& team_cum, Rng& rng) {
  const GenSize& z = s.sizes[rng.Pick(size_cum)];
  GenJob j;
  j.id = "gen-" + std::to_string(n);
  j.submit_s = static_cast<int64_t>(std::floor(t));
  j.gpus = z.gpus;
  j.workload_class = z.workload_class;
  const double d = std::min(rng.Lognormal(SizeMedian(s, z), s.sigma), s.max_s);
  j.duration_s = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(d)));
  j.queue = s.team_prefix + "-" + std::to_string(rng.Pick(team_cum) + 1);
  if (rng.Uniform() >= s.declared_none) {
    const double factor = std::clamp(rng.Lognormal(s.declared_median, s.declared_sigma), s.declared_min, s.declared_max);
    j.limit_s = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(static_cast<double>(j.duration_s) * factor)));
  }
  return j;
}

}  // namespace

GenExpectation Expected(const GenSpec& s) {
  GenExpectation e;
  double w = 0, gw = 0, single = 0, gpu_s = 0, gpu_s64 = 0;
  for (const auto& z : s.sizes) {
    const double g = static_cast<double>(z.gpus);
    const double d = RoundedCappedLognormalMean(SizeMedian(s, z), s.sigma, s.max_s);
    w += z.weight;
    gw += z.weight * g;
    if (z.gpus == 1) single += z.weight;
    gpu_s += z.weight * g * d;
    if (z.gpus >= 64) gpu_s64 += z.weight * g * d;
  }
  if (w <= 0 || gpu_s <= 0) return e;
  e.mean_gpus = gw / w;
  e.single_share = single / w;
  e.gang64_gpu_share = gpu_s64 / gpu_s;
  e.mean_gpu_s = gpu_s / w;
  e.jobs_per_day = s.load * static_cast<double>(s.gpus) * kDay / e.mean_gpu_s;
  return e;
}

StatusOr<std::vector<GenJob>> Generate(const GenSpec& s) {
  if (Status v = ValidateGenSpec(s); !v.ok()) return v;
  const GenExpectation e = Expected(s);
  const double horizon = s.days * kDay;
  const double lambda = e.jobs_per_day / kDay;
  Rng rng(s.seed);

  // Bursts first, then the mean of f over the horizon, exactly, so that the average rate is lambda
  // whatever the bursts and a partial last day do (a 60 s midpoint sum mis-weighed bursts of a few
  // seconds: the offered load came out anywhere from 68% to 120% for a target of 80%).
  const std::vector<Segment> segments = Segments(s, horizon, rng);
  double integral = 0;
  for (const auto& g : segments) integral += DiurnalIntegral(s, g.begin, g.end) * (g.burst ? s.burst_factor : 1.0);
  const double mean_f = integral / horizon;

  std::vector<double> size_w, team_w;
  for (const auto& z : s.sizes) size_w.push_back(z.weight);
  for (int64_t i = 1; i <= s.teams; ++i) team_w.push_back(1.0 / std::pow(static_cast<double>(i), s.team_skew));
  const auto size_cum = Cumulative(size_w), team_cum = Cumulative(team_w);

  // Thinning segment by segment, each under its own bound of f (the exponential gaps are memoryless,
  // so a gap that runs past a segment's end starts again at the next). One bound for the whole
  // horizon, burst_factor x (1 + diurnal), drew up to 200 candidates per job outside bursts: minutes
  // for a few million jobs.
  std::vector<GenJob> jobs;
  for (const auto& g : segments) {
    const double fmax = (1.0 + s.diurnal) * (g.burst ? s.burst_factor : 1.0);
    const double lmax = lambda * fmax / mean_f;
    for (double t = g.begin + rng.Exponential(lmax); t < g.end; t += rng.Exponential(lmax)) {
      const double ft = Diurnal(s, t) * (g.burst ? s.burst_factor : 1.0);
      if (rng.Uniform() * fmax >= ft) continue;  // accepted with f(t) / fmax
      jobs.push_back(DrawJob(s, t, jobs.size() + 1, size_cum, team_cum, rng));
    }
  }
  return jobs;
}

GenStats Measure(const GenSpec& s, const std::vector<GenJob>& jobs) {
  GenStats m;
  m.jobs = static_cast<int64_t>(jobs.size());
  if (jobs.empty()) return m;
  double gpus = 0, single = 0, gpu_s = 0, gpu_s64 = 0, declared = 0;
  std::map<std::string, int64_t> teams;
  for (const auto& j : jobs) {
    const double x = static_cast<double>(j.gpus) * static_cast<double>(j.duration_s);
    gpus += static_cast<double>(j.gpus);
    if (j.gpus == 1) ++single;
    gpu_s += x;
    if (j.gpus >= 64) gpu_s64 += x;
    if (j.limit_s > 0) ++declared;
    ++teams[j.queue];
  }
  const double n = static_cast<double>(jobs.size());
  m.mean_gpus = gpus / n;
  m.single_share = single / n;
  m.gang64_gpu_share = gpu_s > 0 ? gpu_s64 / gpu_s : 0;
  m.offered_load = gpu_s / (static_cast<double>(s.gpus) * s.days * kDay);
  m.declared_share = declared / n;
  m.teams_used = static_cast<int64_t>(teams.size());
  int64_t top = 0;
  for (const auto& [q, c] : teams) top = std::max(top, c);
  m.top_team_share = static_cast<double>(top) / n;
  return m;
}

StatusOr<std::string> WriteGenTrace(const GenSpec& s, const std::vector<GenJob>& jobs, const std::string& format) {
  std::string out;
  char buf[256];
  if (format == "csv") {
    std::snprintf(buf, sizeof buf, "# tidalctl gen %s: seed %llu, %lld GPUs, load %.3g, %.4g days, %zu jobs\n",
                  s.name.c_str(), static_cast<unsigned long long>(s.seed), static_cast<long long>(s.gpus), s.load,
                  s.days, jobs.size());
    out += buf;
    out += "id,submit,duration,gpus,queue,limit,class\n";
    for (const auto& j : jobs) {
      out += j.id + "," + std::to_string(j.submit_s) + "," + std::to_string(j.duration_s) + "," +
             std::to_string(j.gpus) + "," + j.queue + "," + (j.limit_s > 0 ? std::to_string(j.limit_s) : "") + "," +
             std::string(WorkloadClassName(j.workload_class)) + "\n";
    }
    return out;
  }
  if (format == "philly") {
    constexpr int64_t kOrigin = 1767571200;  // 2026-01-05 00:00:00 UTC, a Monday
    out += "timestamp,duration,num_gpus,gpu_time,cluster\n";
    for (const auto& j : jobs) {
      std::string ts = FormatUnixTime(kOrigin + j.submit_s);  // 2026-01-05T00:00:00Z
      ts[10] = ' ';
      ts.pop_back();
      out += ts + "," + std::to_string(j.duration_s) + ".0," + std::to_string(j.gpus) + "," +
             std::to_string(j.duration_s * j.gpus) + ".0," + j.queue + "\n";
    }
    return out;
  }
  return Status::Error("format: expected csv or philly, got \"" + format + "\"");
}

}  // namespace tidal::sim
