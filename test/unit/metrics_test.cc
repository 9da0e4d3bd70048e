// core/metrics (on prometheus-cpp): registration errors, rendering (golden text, histograms,
// callbacks) and concurrent updates while rendering.
#include <algorithm>
#include <charconv>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/metrics/registry.h"

namespace tidal::metrics {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The shortest decimal that reads back as `v` (how the serializer writes bounds).
std::string Shortest(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// "series{labels}" -> "value" for every sample line of a rendering.
std::map<std::string, std::string> Samples(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.rfind(' ');
    out[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return out;
}

// ---- Registration errors -------------------------------------------------------------------------

struct RegisterCase {
  std::string name;
  MetricType type;
  std::string metric, help;
  std::vector<std::string> labels;
  std::vector<double> bounds;
  std::string error;  // "" = accepted
};
class MetricsRegisterTest : public ::testing::TestWithParam<RegisterCase> {};
TEST_P(MetricsRegisterTest, AcceptsOrRefuses) {
  const auto& c = GetParam();
  Registry reg;
  Status s;
  switch (c.type) {
    case MetricType::kCounter: s = reg.AddCounter(c.metric, c.help, c.labels).status(); break;
    case MetricType::kGauge: s = reg.AddGauge(c.metric, c.help, c.labels).status(); break;
    case MetricType::kHistogram: s = reg.AddHistogram(c.metric, c.help, c.labels, c.bounds).status(); break;
  }
  if (c.error.empty()) {
    EXPECT_TRUE(s.ok()) << s.ToString();
  } else {
    EXPECT_EQ(s.code(), StatusCode::kError);
    EXPECT_THAT(s.Message(), HasSubstr(c.error));
    EXPECT_EQ(reg.Render(), "");  // nothing half-registered
  }
}
INSTANTIATE_TEST_SUITE_P(
    Cases, MetricsRegisterTest,
    ::testing::Values(
        RegisterCase{"CounterOk", MetricType::kCounter, "a_total", "h", {"x", "y"}, {}, ""},
        RegisterCase{"GaugeOk", MetricType::kGauge, "a", "h", {}, {}, ""},
        RegisterCase{"HistogramOk", MetricType::kHistogram, "a_seconds", "h", {"q"}, {1, 2}, ""},
        RegisterCase{"HistogramNoBounds", MetricType::kHistogram, "a_seconds", "h", {}, {}, ""},
        RegisterCase{"HistogramTrailingInf", MetricType::kHistogram, "a_seconds", "h", {}, {1, kInf}, ""},
        RegisterCase{"InvalidMetricName", MetricType::kGauge, "bad-name", "h", {}, {}, "invalid name"},
        RegisterCase{"EmptyMetricName", MetricType::kGauge, "", "h", {}, {}, "invalid name"},
        RegisterCase{"ColonRefused", MetricType::kGauge, "job:rate5m", "h", {}, {}, "invalid name"},
        RegisterCase{"InvalidLabelName", MetricType::kGauge, "a", "h", {"ok", "not ok"}, {}, "invalid label name"},
        RegisterCase{"ReservedLabelPrefix", MetricType::kGauge, "a", "h", {"__name__"}, {}, "invalid label name"},
        RegisterCase{"LeOnGauge", MetricType::kGauge, "a", "h", {"le"}, {}, "\"le\" is reserved"},
        RegisterCase{"LeOnHistogram", MetricType::kHistogram, "a", "h", {"le"}, {1}, "\"le\" is reserved"},
        RegisterCase{"Quantile", MetricType::kGauge, "a", "h", {"quantile"}, {}, "reserved"},
        RegisterCase{"DuplicateLabel", MetricType::kCounter, "a_total", "h", {"x", "x"}, {}, "duplicate label"},
        RegisterCase{"CounterWithoutTotal", MetricType::kCounter, "a", "h", {}, {}, "must end in \"_total\""},
        RegisterCase{"GaugeWithTotal", MetricType::kGauge, "a_total", "h", {}, {}, "only counter"},
        RegisterCase{"GaugeBucketSuffix", MetricType::kGauge, "a_bucket", "h", {}, {}, "reserved for histograms"},
        RegisterCase{"GaugeCountSuffix", MetricType::kGauge, "a_count", "h", {}, {}, "reserved for histograms"},
        RegisterCase{"EmptyHelp", MetricType::kGauge, "a", "", {}, {}, "empty HELP"},
        RegisterCase{"UnsortedBounds", MetricType::kHistogram, "a", "h", {}, {1, 3, 2}, "strictly increasing"},
        RegisterCase{"RepeatedBound", MetricType::kHistogram, "a", "h", {}, {1, 1}, "strictly increasing"},
        RegisterCase{"NaNBound", MetricType::kHistogram, "a", "h", {}, {1, kNaN}, "finite"},
        RegisterCase{"NegInfBound", MetricType::kHistogram, "a", "h", {}, {-kInf, 1}, "finite"},
        RegisterCase{"InfInMiddle", MetricType::kHistogram, "a", "h", {}, {1, kInf, 2}, "finite"}),
    [](const auto& p) { return p.param.name; });

struct DuplicateCase {
  std::string name;
  MetricType first_type;
  std::string first;
  MetricType second_type;
  std::string second, error;
};
class MetricsDuplicateTest : public ::testing::TestWithParam<DuplicateCase> {};
TEST_P(MetricsDuplicateTest, SecondRegistrationRefused) {
  const auto& c = GetParam();
  Registry reg;
  const auto add = [&](MetricType t, const std::string& n) {
    switch (t) {
      case MetricType::kCounter: return reg.AddCounter(n, "h", {}).status();
      case MetricType::kGauge: return reg.AddGauge(n, "h", {}).status();
      case MetricType::kHistogram: return reg.AddHistogram(n, "h", {}, {1}).status();
    }
    return Status::Error("unreachable");
  };
  ASSERT_TRUE(add(c.first_type, c.first).ok());
  const Status s = add(c.second_type, c.second);
  EXPECT_EQ(s.code(), StatusCode::kError);
  EXPECT_THAT(s.Message(), HasSubstr(c.error));
  EXPECT_THAT(s.Message(), HasSubstr(c.second));
}
INSTANTIATE_TEST_SUITE_P(
    Cases, MetricsDuplicateTest,
    ::testing::Values(
        DuplicateCase{"SameCounter", MetricType::kCounter, "x_total", MetricType::kCounter, "x_total",
                      "already registered"},
        DuplicateCase{"GaugeThenHistogram", MetricType::kGauge, "x", MetricType::kHistogram, "x",
                      "already registered"},
        DuplicateCase{"HistogramThenGauge", MetricType::kHistogram, "x", MetricType::kGauge, "x",
                      "already registered"},
        DuplicateCase{"HistogramSeriesAsName", MetricType::kHistogram, "x", MetricType::kHistogram, "x_bucket",
                      "collides"},
        DuplicateCase{"NameAsHistogramSeries", MetricType::kHistogram, "x_bucket", MetricType::kHistogram, "x",
                      "collides"}),
    [](const auto& p) { return p.param.name; });

TEST(MetricsRegistryTest, ConvenienceRegistrationReturnsDetachedFamilyAndRemembersErrors) {
  Registry reg;
  auto& ok = reg.Counter("good_total", "fine", {"r"});
  auto& dup = reg.Counter("good_total", "again", {"r"});
  auto& bad = reg.Gauge("bad name", "x");
  auto& hist = reg.Histogram("h_seconds", "h", {}, {2, 1});
  reg.CallbackGauge("cb", "h", {"le"}, [] { return std::vector<Sample>{}; });
  EXPECT_NE(&ok, &dup);
  dup.With({"x"}).Increment();  // usable, never rendered
  bad.With({}).Set(5);
  hist.With({}).Observe(1);
  EXPECT_EQ(Totals(hist.With({})).count, 1u);
  ok.With({"x"}).Increment(2);
  const Status s = reg.status();
  EXPECT_EQ(s.code(), StatusCode::kError);
  EXPECT_THAT(s.reasons(), ElementsAre(HasSubstr("already registered"), HasSubstr("invalid name"),
                                       HasSubstr("strictly increasing"), HasSubstr("\"le\" is reserved")));
  EXPECT_EQ(reg.Render(), "# HELP good_total fine\n# TYPE good_total counter\ngood_total{r=\"x\"} 2\n");
}

TEST(MetricsRegistryTest, StatusOkWhenEverythingRegistered) {
  Registry reg;
  reg.Counter("a_total", "h");
  reg.Gauge("b", "h");
  EXPECT_TRUE(reg.status().ok());
}

// ---- Label values --------------------------------------------------------------------------------

struct LabelCountCase {
  std::string name;
  std::vector<std::string> label_names, values;
};
class MetricsLabelCountTest : public ::testing::TestWithParam<LabelCountCase> {};
TEST_P(MetricsLabelCountTest, MismatchIsAnErrorAndNeverRendered) {
  const auto& c = GetParam();
  Registry reg;
  auto* fam = *reg.AddCounter("c_total", "h", c.label_names);
  auto r = fam->TryWith(c.values);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().Message(), HasSubstr("c_total: got " + std::to_string(c.values.size()) +
                                              " label values, want " + std::to_string(c.label_names.size())));
  fam->With(c.values).Increment(7);  // goes to the discard child
  EXPECT_EQ(fam->usage_errors(), 1u);
  EXPECT_EQ(reg.usage_errors(), 1u);
  EXPECT_THAT(reg.Render(), Not(HasSubstr(" 7\n")));
}
INSTANTIATE_TEST_SUITE_P(Cases, MetricsLabelCountTest,
                         ::testing::Values(LabelCountCase{"TooFew", {"a", "b"}, {"x"}},
                                           LabelCountCase{"TooMany", {"a"}, {"x", "y"}},
                                           LabelCountCase{"NoneWanted", {}, {"x"}},
                                           LabelCountCase{"NoneGiven", {"a"}, {}}),
                         [](const auto& p) { return p.param.name; });

TEST(MetricsRegistryTest, WithReturnsTheSameChildForTheSameValues) {
  Registry reg;
  auto& f = reg.Gauge("g", "h", {"a", "b"});
  EXPECT_EQ(&f.With({"x", "y"}), &f.With({"x", "y"}));
  EXPECT_NE(&f.With({"x", "y"}), &f.With({"y", "x"}));
  EXPECT_EQ(*f.TryWith({"x", "y"}), &f.With({"x", "y"}));
}

TEST(MetricsRegistryTest, InvalidUtf8LabelValuesAreSanitizedIntoOneSeries) {
  Registry reg;
  auto& f = reg.Counter("c_total", "h", {"q"});
  f.With({"a\xFF"}).Increment();
  f.With({"a\xFE"}).Increment();
  EXPECT_EQ(&f.With({"a\xFF"}), &f.With({"a\xEF\xBF\xBD"}));
  reg.CallbackGauge("g", "h", {"q"}, [] {
    return std::vector<Sample>{{{"b\xC0"}, 1}, {{"b\xC1"}, 2}, {{"ok"}, 3}};
  });
  EXPECT_EQ(reg.Render(),
            "# HELP c_total h\n# TYPE c_total counter\nc_total{q=\"a\xEF\xBF\xBD\"} 2\n"
            "# HELP g h\n# TYPE g gauge\ng{q=\"b\xEF\xBF\xBD\"} 1\ng{q=\"ok\"} 3\n");
}

TEST(MetricsRegistryTest, CounterIgnoresNegativeIncrements) {
  Registry reg;
  auto& c = reg.Counter("c_total", "h").With({});
  c.Increment(2);
  c.Increment(-1);
  c.Increment(0.5);
  EXPECT_EQ(c.Value(), 2.5);
}

TEST(MetricsRegistryTest, UnlabeledFamiliesRenderZeroFromTheStart) {
  Registry reg;
  reg.Counter("a_total", "h");
  reg.Histogram("b_seconds", "h", {}, {1});
  const auto samples = Samples(reg.Render());
  EXPECT_EQ(samples.at("a_total"), "0");
  EXPECT_EQ(samples.at("b_seconds_count"), "0");
}

TEST(MetricsRegistryTest, GaugeSetIncDec) {
  Registry reg;
  auto& g = reg.Gauge("g", "h").With({});
  g.Set(10);
  g.Increment();
  g.Decrement(3.5);
  EXPECT_EQ(g.Value(), 7.5);
  g.Set(kNaN);
  EXPECT_THAT(reg.Render(), HasSubstr("\ng Nan\n"));  // prometheus-cpp's spelling; Prometheus reads it
}

// ---- Render --------------------------------------------------------------------------------------

TEST(MetricsRenderTest, GoldenTextSortedWithEscaping) {
  Registry reg;
  auto& c = reg.Counter("tidal_preemptions_total", "Gangs preempted.\nBy reason, C:\\ \"quoted\".", {"reason"});
  reg.Gauge("tidal_fragmentation_unusable_free_gpus", "Unusable free GPUs.").With({}).Set(3);
  reg.Gauge("tidal_unused", "Never given a series.", {"x"});
  auto& h = reg.Histogram("tidal_cycle_duration_seconds", "Cycle.", {}, {0.1, 1});
  c.With({"quota"}).Increment();
  c.With({"a \"b\"\\c\nd"}).Increment(1e6);
  h.With({}).Observe(0.05);
  h.With({}).Observe(0.5);
  h.With({}).Observe(7);
  EXPECT_EQ(reg.Render(),
            "# HELP tidal_cycle_duration_seconds Cycle.\n"
            "# TYPE tidal_cycle_duration_seconds histogram\n"
            "tidal_cycle_duration_seconds_count 3\n"
            "tidal_cycle_duration_seconds_sum 7.55\n"
            "tidal_cycle_duration_seconds_bucket{le=\"0.1\"} 1\n"
            "tidal_cycle_duration_seconds_bucket{le=\"1\"} 2\n"
            "tidal_cycle_duration_seconds_bucket{le=\"+Inf\"} 3\n"
            "# HELP tidal_fragmentation_unusable_free_gpus Unusable free GPUs.\n"
            "# TYPE tidal_fragmentation_unusable_free_gpus gauge\n"
            "tidal_fragmentation_unusable_free_gpus 3\n"
            "# HELP tidal_preemptions_total Gangs preempted.\\nBy reason, C:\\\\ \"quoted\".\n"
            "# TYPE tidal_preemptions_total counter\n"
            "tidal_preemptions_total{reason=\"a \\\"b\\\"\\\\c\\nd\"} 1000000\n"
            "tidal_preemptions_total{reason=\"quota\"} 1\n");
}

TEST(MetricsRenderTest, EmptyRegistryRendersNothing) { EXPECT_EQ(Registry().Render(), ""); }

TEST(MetricsRenderTest, EmptyHistogramsRenderZeroCounts) {
  Registry reg;
  reg.Histogram("a_seconds", "A.", {}, {1, 2.5});
  reg.Histogram("b_seconds", "B.", {"q"}, {}).With({"x"});
  EXPECT_EQ(reg.Render(),
            "# HELP a_seconds A.\n"
            "# TYPE a_seconds histogram\n"
            "a_seconds_count 0\n"
            "a_seconds_sum 0\n"
            "a_seconds_bucket{le=\"1\"} 0\n"
            "a_seconds_bucket{le=\"2.5\"} 0\n"
            "a_seconds_bucket{le=\"+Inf\"} 0\n"
            "# HELP b_seconds B.\n"
            "# TYPE b_seconds histogram\n"
            "b_seconds_count{q=\"x\"} 0\n"
            "b_seconds_sum{q=\"x\"} 0\n"
            "b_seconds_bucket{q=\"x\",le=\"+Inf\"} 0\n");
}

// prometheus-cpp keeps a child's labels as a map: they render sorted by name.
TEST(MetricsRenderTest, LabelsSortByNameAndChildrenByValues) {
  Registry reg;
  auto& g = reg.Gauge("g", "h", {"zeta", "alpha"});
  g.With({"b", "1"}).Set(1);
  g.With({"a", "2"}).Set(2);
  g.With({"a", "10"}).Set(3);
  EXPECT_EQ(reg.Render(),
            "# HELP g h\n# TYPE g gauge\n"
            "g{alpha=\"1\",zeta=\"b\"} 1\n"
            "g{alpha=\"10\",zeta=\"a\"} 3\n"
            "g{alpha=\"2\",zeta=\"a\"} 2\n");
}

struct BucketCase {
  std::string name;
  std::vector<double> bounds, observations;
  std::vector<std::string> want;  // cumulative, one per bound then +Inf
  std::string sum, count;
};
class MetricsBucketTest : public ::testing::TestWithParam<BucketCase> {};
TEST_P(MetricsBucketTest, CumulativeBuckets) {
  const auto& c = GetParam();
  Registry reg;
  auto& h = reg.Histogram("h_seconds", "h", {}, c.bounds).With({});
  for (double v : c.observations) h.Observe(v);
  const auto samples = Samples(reg.Render());
  std::vector<std::string> got;
  for (double b : c.bounds) got.push_back(samples.at("h_seconds_bucket{le=\"" + Shortest(b) + "\"}"));
  got.push_back(samples.at("h_seconds_bucket{le=\"+Inf\"}"));
  EXPECT_EQ(got, c.want);
  EXPECT_EQ(samples.at("h_seconds_sum"), c.sum);
  EXPECT_EQ(samples.at("h_seconds_count"), c.count);
  for (size_t i = 1; i < got.size(); ++i) EXPECT_LE(std::stod(got[i - 1]), std::stod(got[i]));
}
INSTANTIATE_TEST_SUITE_P(
    Cases, MetricsBucketTest,
    ::testing::Values(BucketCase{"Empty", {1, 2}, {}, {"0", "0", "0"}, "0", "0"},
                      BucketCase{"BoundIsInclusive", {1, 2}, {1, 2}, {"1", "2", "2"}, "3", "2"},
                      BucketCase{"JustAbove", {1, 2}, {1.0000001}, {"0", "1", "1"}, "1.0000001", "1"},
                      BucketCase{"BelowFirst", {1, 2}, {-5, 0}, {"2", "2", "2"}, "-5", "2"},
                      BucketCase{"AboveLast", {1, 2}, {3, 100}, {"0", "0", "2"}, "103", "2"},
                      BucketCase{"Infinities", {1}, {kInf, -kInf}, {"1", "2"}, "Nan", "2"},
                      BucketCase{"OnlyInfBucket", {}, {1, 2, 3}, {"3"}, "6", "3"},
                      BucketCase{"Spread", {0.1, 1, 10}, {0.05, 0.1, 0.5, 5, 50}, {"2", "3", "4", "5"}, "55.65", "5"}),
    [](const auto& p) { return p.param.name; });

TEST(MetricsBucketHelpersTest, Layouts) {
  EXPECT_THAT(LinearBuckets(1, 2, 3), ElementsAre(1, 3, 5));
  EXPECT_THAT(LinearBuckets(1, 0, 3), IsEmpty());
  EXPECT_THAT(ExponentialBuckets(1, 2, 4), ElementsAre(1, 2, 4, 8));
  EXPECT_THAT(ExponentialBuckets(0, 2, 4), IsEmpty());
  EXPECT_THAT(ExponentialBuckets(1, 1, 4), IsEmpty());
  EXPECT_EQ(DefaultBuckets().size(), 11u);
  const auto wait = WaitBuckets();
  EXPECT_TRUE(std::is_sorted(wait.begin(), wait.end()));
  EXPECT_NE(std::find(wait.begin(), wait.end(), 5.0), wait.end());  // the 1-GPU SLO threshold
  EXPECT_GT(wait.back(), 1800.0);                                    // headroom past the 65+ threshold
  Registry reg;
  EXPECT_TRUE(reg.AddHistogram("w_seconds", "h", {}, wait).ok());
}

// ---- Callback families ---------------------------------------------------------------------------

TEST(MetricsCallbackTest, SampledAtEachRenderSortedAndChecked) {
  Registry reg;
  int calls = 0;
  ASSERT_TRUE(reg.AddCallback(MetricType::kGauge, "tidal_gpus", "GPUs by state.", {"state", "pool"}, [&] {
                   ++calls;
                   return std::vector<Sample>{{{"idle", "p\"1"}, 4.0 * calls},
                                              {{"allocated", "p\"1"}, 12},
                                              {{"wrong count"}, 1},              // dropped
                                              {{"allocated", "p\"1"}, 99}};      // repeated: dropped
                 }).ok());
  const std::string want1 =
      "# HELP tidal_gpus GPUs by state.\n# TYPE tidal_gpus gauge\n"
      "tidal_gpus{state=\"allocated\",pool=\"p\\\"1\"} 12\n"
      "tidal_gpus{state=\"idle\",pool=\"p\\\"1\"} 4\n";
  EXPECT_EQ(reg.Render(), want1);
  EXPECT_THAT(reg.Render(), HasSubstr("tidal_gpus{state=\"idle\",pool=\"p\\\"1\"} 8\n"));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(reg.usage_errors(), 4u);
}

TEST(MetricsCallbackTest, CounterTypeEmptyAndThrowingCallbacks) {
  Registry reg;
  reg.CallbackCounter("cb_total", "h", {}, [] { return std::vector<Sample>{{{}, 5}}; });
  reg.CallbackGauge("empty", "h", {"x"}, [] { return std::vector<Sample>{}; });
  reg.CallbackGauge("throws", "h", {}, []() -> std::vector<Sample> { throw std::runtime_error("boom"); });
  EXPECT_TRUE(reg.status().ok());
  EXPECT_EQ(reg.Render(), "# HELP cb_total h\n# TYPE cb_total counter\ncb_total 5\n");
  EXPECT_EQ(reg.AddCallback(MetricType::kHistogram, "h_seconds", "h", {}, [] { return std::vector<Sample>{}; })
                .code(),
            StatusCode::kError);
  EXPECT_EQ(reg.AddCallback(MetricType::kGauge, "nofn", "h", {}, nullptr).code(), StatusCode::kError);
  EXPECT_EQ(reg.AddCallback(MetricType::kCounter, "cb_total", "h", {}, [] { return std::vector<Sample>{}; }).code(),
            StatusCode::kError);
}

TEST(MetricsCallbackTest, RunsWithoutRegistryLocksSoItMayUseTheRegistryAndItsOwnersLock) {
  Registry reg;
  std::mutex owner_mu;  // stands in for Engine::mu_
  auto& scrapes = reg.Counter("scrapes_total", "h").With({});
  reg.CallbackGauge("state", "h", {}, [&] {
    std::lock_guard<std::mutex> lock(owner_mu);
    scrapes.Increment();                                  // updating another metric
    reg.Gauge("late", "registered from a callback");  // registering
    return std::vector<Sample>{{{}, 1}};
  });
  std::atomic<bool> stop{false};
  std::thread writer([&] {  // the owner updates metrics while holding its own lock
    while (!stop) {
      std::lock_guard<std::mutex> lock(owner_mu);
      scrapes.Increment(0);
    }
  });
  for (int i = 0; i < 50; ++i) (void)reg.Render();
  stop = true;
  writer.join();
  EXPECT_EQ(scrapes.Value(), 50);
  EXPECT_THAT(reg.Render(), HasSubstr("\nlate 0\n"));
}

// ---- Concurrency ---------------------------------------------------------------------------------

TEST(MetricsConcurrencyTest, UpdatesAndRendersFromManyThreads) {
  Registry reg;
  auto& counter = reg.Counter("ops_total", "h", {"worker"});
  auto& shared = reg.Counter("shared_total", "h").With({});
  auto& gauge = reg.Gauge("level", "h").With({});
  auto& hist = reg.Histogram("lat_seconds", "h", {"worker"}, {0.25, 0.5, 0.75});
  constexpr int kThreads = 6, kIters = 20000;
  std::atomic<bool> done{false};
  std::atomic<int> renders{0};
  std::vector<std::string> problems;
  std::thread renderer([&] {
    while (!done) {
      const auto samples = Samples(reg.Render());
      ++renders;
      for (int w = 0; w < kThreads; ++w) {
        const std::string lbl = "worker=\"" + std::to_string(w) + "\"";
        const auto inf = samples.find("lat_seconds_bucket{" + lbl + ",le=\"+Inf\"}");
        if (inf == samples.end()) continue;
        double prev = 0;
        for (const char* le : {"0.25", "0.5", "0.75", "+Inf"}) {
          const double v = std::stod(samples.at("lat_seconds_bucket{" + lbl + ",le=\"" + le + "\"}"));
          if (v < prev) problems.push_back("not cumulative at le=" + std::string(le));
          prev = v;
        }
        if (inf->second != samples.at("lat_seconds_count{" + lbl + "}")) problems.push_back("+Inf != _count");
      }
    }
  });
  std::vector<std::thread> workers;
  for (int w = 0; w < kThreads; ++w) {
    workers.emplace_back([&, w] {
      for (int i = 0; i < kIters; ++i) {
        counter.With({std::to_string(w)}).Increment();
        shared.Increment();
        gauge.Increment();
        gauge.Decrement();
        hist.With({std::to_string(w)}).Observe((i % 4) * 0.25 + 0.125);
      }
    });
  }
  for (auto& t : workers) t.join();
  done = true;
  renderer.join();
  EXPECT_THAT(problems, IsEmpty());
  EXPECT_GT(renders.load(), 0);
  const auto samples = Samples(reg.Render());
  EXPECT_EQ(samples.at("shared_total"), std::to_string(kThreads * kIters));
  EXPECT_EQ(samples.at("level"), "0");
  for (int w = 0; w < kThreads; ++w) {
    const std::string lbl = "worker=\"" + std::to_string(w) + "\"";
    EXPECT_EQ(samples.at("ops_total{" + lbl + "}"), std::to_string(kIters));
    EXPECT_EQ(samples.at("lat_seconds_bucket{" + lbl + ",le=\"0.25\"}"), std::to_string(kIters / 4));
    EXPECT_EQ(samples.at("lat_seconds_bucket{" + lbl + ",le=\"0.75\"}"), std::to_string(kIters * 3 / 4));
    EXPECT_EQ(samples.at("lat_seconds_count{" + lbl + "}"), std::to_string(kIters));
    EXPECT_EQ(samples.at("lat_seconds_sum{" + lbl + "}"), std::to_string(kIters / 2));  // mean 0.5
  }
}

TEST(MetricsConcurrencyTest, ConcurrentRegistrationOfOneNameAcceptsExactlyOne) {
  Registry reg;
  std::atomic<int> accepted{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      if (reg.AddGauge("racy", "h", {}).ok()) ++accepted;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(accepted.load(), 1);
}

// ---- ScopedTimer ---------------------------------------------------------------------------------

TEST(MetricsScopedTimerTest, ObservesElapsedSecondsOnce) {
  Registry reg;
  auto& h = reg.Histogram("t_seconds", "h", {}, {0.001, 10}).With({});
  double stopped = 0;
  {
    ScopedTimer t(h);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stopped = t.Stop();
    EXPECT_EQ(t.Stop(), stopped);
  }
  const auto snap = h.Collect().histogram;
  EXPECT_EQ(snap.sample_count, 1u);
  EXPECT_GE(stopped, 0.005);
  EXPECT_EQ(snap.sample_sum, stopped);
  EXPECT_EQ(snap.bucket.at(0).cumulative_count, 0u);  // > 1 ms
  {
    ScopedTimer t(h);  // destructor observes
  }
  {
    ScopedTimer t(h);
    t.Cancel();
  }
  {
    ScopedTimer t(nullptr);
  }
  EXPECT_EQ(Totals(h).count, 2u);
}

}  // namespace
}  // namespace tidal::metrics
