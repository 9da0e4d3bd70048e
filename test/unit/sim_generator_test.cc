// The workload generator (sim/generator.h): known-answer statistics on a large sample with a fixed
// seed against the spec's analytic expectation, determinism, the arrival process's diurnal and
// bursty phases, team skew, the declared-runtime model, spec errors naming the field, and the
// written trace read back by the simulator's own reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/fabric.h"
#include "sim/generator.h"
#include "sim/replay.h"
#include "sim/trace.h"

namespace tidal::sim {
namespace {

GenSpec Mix(const std::string& name) {
  auto s = LoadGenSpec(name);
  EXPECT_TRUE(s.ok()) << s.status().Message();
  return *s;
}

TEST(SimGenerator, LlmGangsKnownAnswerStatisticsOverAYear) {
  GenSpec s = Mix("llm-gangs");
  s.days = 365;
  const GenExpectation e = Expected(s);
  // The spec's own figures, computed by hand: a third single-GPU, most GPU-time in 64+ gangs.
  EXPECT_NEAR(e.single_share, 0.33, 1e-12);
  EXPECT_NEAR(e.mean_gpus, (33 * 1 + 6 * 2 + 8 * 4 + 20 * 8 + 10 * 16 + 8 * 32 + 7 * 64 + 4.5 * 128 + 2.5 * 256 + 512) / 100.0, 1e-9);
  EXPECT_GT(e.gang64_gpu_share, 0.85);
  EXPECT_NEAR(e.jobs_per_day * e.mean_gpu_s, 0.8 * 3072 * 86400, 1e-3);
  auto jobs = Generate(s);
  ASSERT_TRUE(jobs.ok()) << jobs.status().Message();
  const GenStats m = Measure(s, *jobs);
  EXPECT_NEAR(static_cast<double>(m.jobs), e.jobs_per_day * s.days, 0.02 * e.jobs_per_day * s.days);
  EXPECT_NEAR(m.mean_gpus, e.mean_gpus, 0.03 * e.mean_gpus);
  EXPECT_NEAR(m.single_share, e.single_share, 0.01);
  EXPECT_NEAR(m.gang64_gpu_share, e.gang64_gpu_share, 0.02);
  EXPECT_NEAR(m.offered_load, s.load, 0.04 * s.load);  // within 4% of the target
  EXPECT_NEAR(m.declared_share, 1 - s.declared_none, 0.01);
  // Team skew: team-1's share is 1 / sum(i^-1.2, i = 1..12).
  double z = 0;
  for (int i = 1; i <= 12; ++i) z += std::pow(i, -1.2);
  EXPECT_EQ(m.teams_used, 12);
  EXPECT_NEAR(m.top_team_share, 1 / z, 0.01);
  // Durations: the median grows with size as median x gpus^growth.
  std::map<int64_t, std::vector<int64_t>> by_size;
  for (const auto& j : *jobs) by_size[j.gpus].push_back(j.duration_s);
  for (int64_t g : {1, 8, 512}) {
    auto& d = by_size[g];
    std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
    const double want = 1200 * std::pow(static_cast<double>(g), 0.35);
    EXPECT_NEAR(static_cast<double>(d[d.size() / 2]), want, 0.1 * want) << g << " GPUs";
  }
  // Declared limits: never below the actual duration (min factor 1), at most 10x.
  for (const auto& j : *jobs) {
    if (j.limit_s == 0) continue;
    ASSERT_GE(j.limit_s, j.duration_s) << j.id;
    ASSERT_LE(j.limit_s, j.duration_s * 10 + 1) << j.id;
  }
}

TEST(SimGenerator, SameSeedSameBytesDifferentSeedDifferent) {
  GenSpec s = Mix("llm-gangs");
  s.days = 2;
  auto a = Generate(s), b = Generate(s);
  ASSERT_TRUE(a.ok() && b.ok());
  auto ta = WriteGenTrace(s, *a, "csv"), tb = WriteGenTrace(s, *b, "csv");
  ASSERT_TRUE(ta.ok() && tb.ok());
  EXPECT_EQ(*ta, *tb);
  // Pinned: std::mt19937_64's sequence is fixed by the standard and the transforms are ours, so
  // these are the same bytes on every standard library.
  EXPECT_EQ(ta->substr(ta->find("gen-1,"), ta->find("gen-4,") - ta->find("gen-1,")),
            "gen-1,425,429,1,team-1,1004,training\ngen-2,521,142,1,team-1,,training\n"
            "gen-3,763,2674,1,team-1,,training\n");
  s.seed = 2;
  auto c = Generate(s);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(*WriteGenTrace(s, *c, "csv"), *ta);
}

// Arrivals per hour of day over a long horizon without bursts follow 1 + A sin(...).
TEST(SimGenerator, DiurnalAndBurstyArrivals) {
  GenSpec s;
  s.gpus = 32;
  s.sizes = {{1, 1, 0, WorkloadClass::kTraining}};
  s.median_s = 600;
  s.sigma = 0.5;
  s.load = 0.9;
  s.days = 60;
  s.diurnal = 0.5;
  s.peak_hour = 14;
  s.bursts_per_day = 0;
  auto jobs = Generate(s);
  ASSERT_TRUE(jobs.ok()) << jobs.status().Message();
  std::vector<double> hour(24);
  for (const auto& j : *jobs) hour[static_cast<size_t>(j.submit_s % 86400 / 3600)] += 1;
  // Hour 14 (peak) against hour 2 (trough): (1 + 0.5 c) / (1 - 0.5 c), c = sin(pi/24)/(pi/24).
  const double c = std::sin(M_PI / 24) / (M_PI / 24);
  EXPECT_NEAR(hour[14] / hour[2], (1 + 0.5 * c) / (1 - 0.5 * c), 0.15);
  EXPECT_NEAR(static_cast<double>(jobs->size()), Expected(s).jobs_per_day * s.days, 0.02 * static_cast<double>(jobs->size()));
  // Bursts: the busiest hour stands far above the mean hour; the mean rate is unchanged.
  auto busiest = [](const std::vector<GenJob>& js, double days) {
    std::map<int64_t, double> h;
    for (const auto& j : js) h[j.submit_s / 3600] += 1;
    double top = 0;
    for (const auto& [k, v] : h) top = std::max(top, v);
    return top / (static_cast<double>(js.size()) / (days * 24));
  };
  const double calm = busiest(*jobs, s.days);
  s.diurnal = 0;
  s.bursts_per_day = 0.5;
  s.burst_s = 7200;
  s.burst_factor = 10;
  auto bursty = Generate(s);
  ASSERT_TRUE(bursty.ok());
  EXPECT_LT(calm, 2.5);
  EXPECT_GT(busiest(*bursty, s.days), 4.0);
  EXPECT_NEAR(static_cast<double>(bursty->size()), Expected(s).jobs_per_day * s.days, 0.03 * static_cast<double>(bursty->size()));
}

TEST(SimGenerator, EveryMixIsValidAndNamed) {
  const std::vector<std::string> want = {"inference-heavy", "llm-gangs", "philly-like"};
  EXPECT_EQ(GenMixNames(), want);
  for (const auto& n : want) {
    GenSpec s = Mix(n);
    EXPECT_EQ(s.name, n);
    s.days = 1;
    auto j = Generate(s);
    ASSERT_TRUE(j.ok()) << n;
    EXPECT_FALSE(j->empty()) << n;
  }
  EXPECT_EQ(Mix("inference-heavy").sizes[0].workload_class, WorkloadClass::kInference);
  EXPECT_EQ(Mix("philly-like").declared_none, 1.0);
}

TEST(SimGenerator, SpecFileStartsFromAMixAndOverrides) {
  auto s = ParseGenSpec("base: llm-gangs\nname: mine\nload: 90%\ngpus: 4096\nteams: {count: 3}\n", "s.yaml");
  ASSERT_TRUE(s.ok()) << s.status().Message();
  EXPECT_EQ(s->name, "mine");
  EXPECT_DOUBLE_EQ(s->load, 0.9);
  EXPECT_EQ(s->gpus, 4096);
  EXPECT_EQ(s->teams, 3);
  EXPECT_EQ(s->team_skew, 1.2);  // from the mix
  EXPECT_EQ(s->sizes.size(), 10u);
}

TEST(SimGenerator, SpecErrorsNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"base: llm-gangs\ngpus: 256\n", "sizes[9].gpus: 512 is more than the cluster's gpus (256)"},
      {"base: llm-gangs\nload: -1\n", "s.yaml:2: load: must be in (0, 100]"},
      {"base: nope\n", "s.yaml:1: base: no mix \"nope\""},
      {"sizes: [{gpus: 0, weight: 1}]\n", "sizes[0].gpus: must be >= 1"},
      {"sizes: [{gpus: 8, weight: 0}]\n", "sizes[0].weight: must be > 0"},
      {"sizes: [{weight: 1}]\n", "sizes[0].gpus: required"},
      {"sizes:\n- {gpus: 1, weight: 1, class: gpu}\n", "s.yaml:2: sizes[0].class: expected training, inference"},
      {"base: llm-gangs\nduration: {median: abc}\n", "duration.median: expected seconds or a duration"},
      {"base: llm-gangs\nteams: {count: 3, prefx: x}\n", "teams.prefx: unknown field"},
      {"base: llm-gangs\nteams: {prefix: Team_A}\n", "teams.prefix: must be 1-40 of [a-z0-9-]"},
      {"base: llm-gangs\narrivals: {diurnal: 1.5}\n", "arrivals.diurnal: must be in [0, 1)"},
      {"base: llm-gangs\ndeclared: {min: 2, max: 1}\n", "declared.max: must be >= declared.min"},
      {"base: llm-gangs\nload: lots\n", "load: expected a number"},
      {"base: llm-gangs\nseed: -3\n", "seed: must be >= 0"},
      {"- 1\n- 2\n", "spec: expected a mapping"},
      {"base: llm-gangs\nsizez: []\n", "sizez: unknown field"},
  };
  for (const auto& [doc, want] : cases) {
    auto s = ParseGenSpec(doc, "s.yaml");
    ASSERT_FALSE(s.ok()) << doc;
    EXPECT_NE(s.status().Message().find(want), std::string::npos) << doc << " -> " << s.status().Message();
  }
  EXPECT_NE(LoadGenSpec("no-such-mix").status().Message().find("neither a mix (inference-heavy, llm-gangs, philly-like)"),
            std::string::npos);
}

// Values that used to pass validation and then gave nothing, or overflowed, or wrote a trace the
// simulator refuses: each is now an error naming its field.
TEST(SimGenerator, SpecValuesOutOfRangeAreRefusedNotTurnedIntoBadTraces) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      // Weights summing to inf: the expected rate was NaN, 0 jobs, exit 0.
      {"sizes: [{gpus: 1, weight: 1e308}, {gpus: 2, weight: 1e308}]\n", "s.yaml:1: sizes[0].weight: must be > 0 and at most 1e12"},
      // A duration beyond int64 seconds: the cast overflowed (each job came out 1 s long).
      {"gpus: 1073741824\ndays: 3650\nload: 10000%\nsizes: [{gpus: 1}]\nduration: {median: 1e19, max: 1e19, sigma: 0}\n",
       "duration.median: must be 1 s to 1e15 s"},
      {"sizes: [{gpus: 1}]\nduration: {max: 1e19}\n", "duration.max: must be 1 s to 1e15 s"},
      {"sizes: [{gpus: 1, median: 1e300}]\n", "sizes[0].median: must be a duration from 1 s to 1e15 s"},
      // Below 1 s every job is rounded up to 1 s: 0.01 s offered 100 x the load; 0 meant "the model's".
      {"sizes: [{gpus: 1, median: 0.01}]\n", "s.yaml:1: sizes[0].median: must be a duration from 1 s to 1e15 s"},
      {"sizes:\n- {gpus: 1}\n- {gpus: 2, median: 0}\n", "s.yaml:3: sizes[1].median: must be a duration from 1 s"},
      // A line break in the name, written into the trace's comment line, broke the trace's header.
      {"base: llm-gangs\nname: \"a\\nid,submit\"\n", "s.yaml:2: name: must be one line of text"},
      // Limits of up to max x declared.max, which the reader refuses past 1e15 s.
      {"sizes: [{gpus: 1}]\nduration: {max: 1e14}\ndeclared: {none: 0, max: 1000}\n",
       "duration.max: times declared.max (1000) must be at most 1e15 s"},
      // A bare 90 is a fraction: 9000% of the GPUs, a trace 100 x too big, when 90% was meant.
      {"base: llm-gangs\nload: 90\n", "s.yaml:2: load: a bare number is a fraction of the GPUs (90 = 9000%); write \"90%\" or 0.90"},
  };
  for (const auto& [doc, want] : cases) {
    auto s = ParseGenSpec(doc, "s.yaml");
    ASSERT_FALSE(s.ok()) << doc;
    EXPECT_NE(s.status().Message().find(want), std::string::npos) << doc << " -> " << s.status().Message();
  }
  for (const char* fine : {"base: llm-gangs\nload: 1.5\n", "base: llm-gangs\nload: 300%\n"}) {
    EXPECT_TRUE(ParseGenSpec(fine, "s.yaml").ok()) << fine;
  }
  // No declared limits: a long max is fine. Durations past the config's 365-day cap are read.
  auto ok = ParseGenSpec("sizes: [{gpus: 1}]\nduration: {max: 400d}\ndeclared: {none: 1}\n", "s.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status().Message();
  EXPECT_EQ(ok->max_s, 400 * 86400.0);
}

// A spec with a single job size, no diurnal swing and no bursts, for the load tests below.
GenSpec Flat(int64_t gpus, double median_s, double sigma, double days) {
  GenSpec s;
  s.gpus = gpus;
  s.sizes = {{1, 1, 0, WorkloadClass::kTraining}};
  s.median_s = median_s;
  s.growth = 0;
  s.sigma = sigma;
  s.days = days;
  s.diurnal = 0;
  s.bursts_per_day = 0;
  return s;
}

// Bursts of a few seconds: f's mean was a sum over 60 s midpoints, which hit or missed each burst,
// so the rate was off by up to a fifth (jobs 68% to 120% of the expectation by seed). Integrated
// exactly, the count is Poisson around the expectation (sd 0.5% here).
TEST(SimGenerator, ShortBurstsKeepTheExpectedRate) {
  GenSpec s = Flat(32, 60, 0, 1);
  s.bursts_per_day = 1000;
  s.burst_s = 2;
  s.burst_factor = 100;
  const double want = Expected(s).jobs_per_day * s.days;
  EXPECT_NEAR(want, 0.8 * 32 * 86400 / 60, 1e-6);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    s.seed = seed;
    auto jobs = Generate(s);
    ASSERT_TRUE(jobs.ok()) << jobs.status().Message();
    EXPECT_NEAR(static_cast<double>(jobs->size()), want, 0.03 * want) << "seed " << seed;
  }
}

// Outside bursts f does not depend on burstFactor, and neither may the trace: the thinning bound
// was burstFactor x (1 + diurnal) everywhere, up to 200 candidates drawn per job (minutes for a few
// million jobs), and the same seed gave another trace when only the unused factor changed.
TEST(SimGenerator, BurstFactorWithoutBurstsChangesNothing) {
  GenSpec s = Flat(64, 600, 0.5, 2);
  s.diurnal = 0.5;
  s.burst_factor = 1;
  auto a = Generate(s);
  s.burst_factor = 100;
  auto b = Generate(s);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_GT(a->size(), 10000u);
  EXPECT_EQ(a->size(), b->size());
  EXPECT_TRUE(*WriteGenTrace(s, *a, "csv") == *WriteGenTrace(s, *b, "csv"));  // not printed: 13k rows
}

// Durations of a few seconds: each is rounded up to whole seconds, which the rate now counts. It
// used E[min(X, max)] alone, and a median of 2 s (sigma 0.5) offered about 22% more than the load.
TEST(SimGenerator, ShortDurationsKeepTheOfferedLoad) {
  for (double median : {1.0, 2.0, 30.0}) {
    GenSpec s = Flat(8, median, 0.5, 1);
    auto jobs = Generate(s);
    ASSERT_TRUE(jobs.ok()) << jobs.status().Message();
    const GenStats m = Measure(s, *jobs);
    EXPECT_NEAR(m.offered_load, s.load, 0.02 * s.load) << "median " << median;
    double sum = 0;
    for (const auto& j : *jobs) sum += static_cast<double>(j.duration_s);
    EXPECT_NEAR(sum / static_cast<double>(jobs->size()), Expected(s).mean_gpu_s, 0.01 * Expected(s).mean_gpu_s)
        << "median " << median;
  }
  // sigma 0: every job is ceil(median) seconds.
  GenSpec s = Flat(8, 2.5, 0, 1);
  EXPECT_DOUBLE_EQ(Expected(s).mean_gpu_s, 3.0);
}

// The declared-runtime model: F lognormal(median 1.5, sigma 0.3) clamped to [0.8, 4], limit =
// ceil(actual x F); and a size's own median (inference-heavy's 4 h services) over the model's.
TEST(SimGenerator, DeclaredRuntimeAndSizeMediansKnownAnswers) {
  GenSpec s = Flat(64, 600, 0.5, 20);
  s.sizes = {{1, 3, 4 * 3600.0, WorkloadClass::kInference}, {1, 1, 0, WorkloadClass::kTraining}};
  s.max_s = 3 * 86400.0;
  s.declared_none = 0.25;
  s.declared_median = 1.5;
  s.declared_sigma = 0.3;
  s.declared_min = 0.8;
  s.declared_max = 4;
  auto jobs = Generate(s);
  ASSERT_TRUE(jobs.ok()) << jobs.status().Message();
  std::vector<double> factor;
  std::map<WorkloadClass, std::vector<int64_t>> by_class;
  int64_t under = 0;
  for (const auto& j : *jobs) {
    by_class[j.workload_class].push_back(j.duration_s);
    if (j.limit_s == 0) continue;
    factor.push_back(static_cast<double>(j.limit_s) / static_cast<double>(j.duration_s));
    if (j.limit_s < j.duration_s) ++under;
    ASSERT_GE(j.limit_s, static_cast<int64_t>(std::ceil(0.8 * static_cast<double>(j.duration_s)))) << j.id;
    ASSERT_LE(j.limit_s, 4 * j.duration_s) << j.id;
  }
  ASSERT_GT(factor.size(), 2000u);
  const double n = static_cast<double>(jobs->size()), k = static_cast<double>(factor.size());
  EXPECT_NEAR(k / n, 0.75, 0.02);
  std::nth_element(factor.begin(), factor.begin() + static_cast<std::ptrdiff_t>(factor.size() / 2), factor.end());
  EXPECT_NEAR(factor[factor.size() / 2], 1.5, 0.03);
  // Under-declared (killed at their limit): P(F < 1) = Phi(ln(1 / 1.5) / 0.3) = 0.0885.
  EXPECT_NEAR(static_cast<double>(under) / k, 0.0885, 0.015);
  // Durations: the inference size keeps its own 4 h median, the other the model's 600 s; 3:1 by weight.
  for (auto& [cls, d] : by_class) {
    std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
    const double want = cls == WorkloadClass::kInference ? 4 * 3600.0 : 600.0;
    EXPECT_NEAR(static_cast<double>(d[d.size() / 2]), want, 0.05 * want);
  }
  EXPECT_NEAR(static_cast<double>(by_class[WorkloadClass::kInference].size()) / n, 0.75, 0.02);
}

// What the generator writes, the simulator's reader takes: every job, with its size, queue and limit.
TEST(SimGenerator, WrittenTracesReadBack) {
  GenSpec s = Mix("llm-gangs");
  s.days = 1;
  auto jobs = Generate(s);
  ASSERT_TRUE(jobs.ok());
  for (const char* fmt : {"csv", "philly"}) {
    auto text = WriteGenTrace(s, *jobs, fmt);
    ASSERT_TRUE(text.ok());
    TraceOptions o;
    o.on_bad_row = TraceOptions::OnBadRow::kFail;
    auto t = ParseTrace(*text, std::string("g.") + (std::string(fmt) == "csv" ? "csv" : "philly.csv"), o);
    ASSERT_TRUE(t.ok()) << fmt << ": " << t.status().Message();
    ASSERT_EQ(t->jobs.size(), jobs->size()) << fmt;
    EXPECT_EQ(t->format, fmt);
    EXPECT_EQ(t->gpu_time_corrected, 0);
    int64_t gpus_in = 0, gpus_out = 0;
    for (const auto& j : *jobs) gpus_in += j.gpus * j.duration_s;
    for (const auto& j : t->jobs) gpus_out += j.w.TotalGpus() * j.duration_s;
    EXPECT_EQ(gpus_in, gpus_out) << fmt;
    EXPECT_EQ(t->jobs[0].duration_s, (*jobs)[0].duration_s);
    EXPECT_EQ(t->jobs[0].w.queue, (*jobs)[0].queue);
    if (std::string(fmt) == "csv") {  // a job declaring none gets the reader's actual x 2
      for (size_t i = 0; i < 5; ++i) {
        const auto& j = (*jobs)[i];
        EXPECT_EQ(t->jobs[i].w.runtime_limit_s, j.limit_s > 0 ? j.limit_s : 2 * j.duration_s) << j.id;
      }
    }
  }
  EXPECT_FALSE(WriteGenTrace(s, *jobs, "json").ok());
}

// The metric the llm-gangs benchmark reports: the wait of the jobs of 64 GPUs or more (by_size puts
// 64 in 9-64). fifo on 64 GPUs: a runs 0-100, b (64) waits 90 s, c (8) waits behind b until 150.
TEST(SimGenerator, MetricsGiveTheWaitOf64PlusGangs) {
  auto t = ParseTrace("id,submit,duration,gpus\na,0,100,64\nb,10,50,64\nc,20,30,8\n", "m.csv", TraceOptions{});
  ASSERT_TRUE(t.ok()) << t.status().Message();
  SyntheticFabric f;
  f.gpus = 64;
  f.nodes_per_domain = 1;
  f.fanout = {1, 1};
  const ClusterState fabric = std::move(BuildSyntheticFabric(TopologyLevels::Default(), f)).value();
  ReplaySpec spec;
  spec.fabric = &fabric;
  spec.jobs = &t->jobs;
  auto m = RunPolicy(spec, "fifo");
  ASSERT_TRUE(m.ok()) << m.status().Message();
  EXPECT_EQ((*m)["gangs_64_plus"]["jobs"], 2);
  EXPECT_DOUBLE_EQ((*m)["gangs_64_plus"]["queueing_delay_s"]["avg"].get<double>(), 45.0);
  EXPECT_NEAR((*m)["queueing_delay_s"]["avg"].get<double>(), (0 + 90 + 130) / 3.0, 1e-3);  // c's 130 s counted here
}

}  // namespace
}  // namespace tidal::sim
