// RuntimeHistory (core/state/runtime_history.h): which ends teach the correction, the quantile
// once minSamples are in, the bounded window, the config's errors and the state-file round trip.
// Threading: single-threaded.
#include "core/state/runtime_history.h"

#include <gtest/gtest.h>

namespace tidal {
namespace {

constexpr int32_t kWindow = 200;

TEST(RuntimeHistory, OnlyCompletedWorkAndTimeoutsAreSamples) {
  RuntimeHistory h;
  EXPECT_TRUE(h.Add("batch", WorkloadEnd::kCompleted, 1800, 3600, kWindow));
  EXPECT_TRUE(h.Add("batch", WorkloadEnd::kTimeout, 60, 3600, kWindow)) << "killed at its limit: ratio 1.0";
  for (WorkloadEnd e : {WorkloadEnd::kDisrupted, WorkloadEnd::kCancelled, WorkloadEnd::kFailed, WorkloadEnd::kUnknown}) {
    EXPECT_FALSE(h.Add("batch", e, 60, 3600, kWindow)) << WorkloadEndName(e) << " would teach that the queue's jobs are short";
  }
  EXPECT_FALSE(h.Add("batch", WorkloadEnd::kCompleted, 60, 0, kWindow)) << "no declared runtime: nothing to correct";
  EXPECT_FALSE(h.Add("batch", WorkloadEnd::kCompleted, -1, 60, kWindow));
  EXPECT_EQ(h.Samples("batch"), 2);
  RuntimeCorrectionConfig cfg;
  cfg.min_samples = 2;
  auto c = h.Estimate("batch", cfg);
  ASSERT_TRUE(c.has_value());
  EXPECT_DOUBLE_EQ(c->ratio, 1.0) << "p90 of {0.5, 1.0}";
}

TEST(RuntimeHistory, NoCorrectionBeforeMinSamplesThenTheConservativeQuantile) {
  RuntimeHistory h;
  RuntimeCorrectionConfig cfg;  // p90, 20 samples
  for (int i = 1; i <= 19; ++i) ASSERT_TRUE(h.Add("batch", WorkloadEnd::kCompleted, i * 60, 100 * 60, kWindow));
  EXPECT_FALSE(h.Estimate("batch", cfg).has_value()) << "19 of 20 samples";
  ASSERT_TRUE(h.Add("batch", WorkloadEnd::kCompleted, 20 * 60, 100 * 60, kWindow));
  auto c = h.Estimate("batch", cfg);
  ASSERT_TRUE(c.has_value());
  // Samples 0.01..0.20: the 18th smallest (nearest rank of 0.9 x 20).
  EXPECT_NEAR(c->ratio, 0.18, 1e-9);
  EXPECT_EQ(c->samples, 20);
  cfg.quantile = 1.0;
  EXPECT_NEAR(h.Estimate("batch", cfg)->ratio, 0.20, 1e-9) << "p100: the longest";
  cfg.quantile = 0.5;
  EXPECT_NEAR(h.Estimate("batch", cfg)->ratio, 0.10, 1e-9);
  EXPECT_FALSE(h.Estimate("other", cfg).has_value()) << "per queue";
  cfg.enabled = false;
  EXPECT_FALSE(h.Estimate("batch", cfg).has_value()) << "runtimeCorrection: false";
}

TEST(RuntimeHistory, TheWindowKeepsTheMostRecentSamples) {
  RuntimeHistory h;
  RuntimeCorrectionConfig cfg;
  cfg.window = 5;
  cfg.min_samples = 5;
  for (int i = 0; i < 5; ++i) h.Add("batch", WorkloadEnd::kCompleted, 90, 100, cfg.window);  // 0.9
  for (int i = 0; i < 5; ++i) h.Add("batch", WorkloadEnd::kCompleted, 20, 100, cfg.window);  // 0.2
  EXPECT_EQ(h.Samples("batch"), 5);
  EXPECT_NEAR(h.Estimate("batch", cfg)->ratio, 0.2, 1e-9) << "the old long runs left the window";
  // A window shrunk by a reload counts only the most recent samples at once.
  h.Add("batch", WorkloadEnd::kTimeout, 100, 100, cfg.window);
  cfg.window = 1;
  cfg.min_samples = 1;
  EXPECT_NEAR(h.Estimate("batch", cfg)->ratio, 1.0, 1e-9);
  h.Trim(1);
  EXPECT_EQ(h.Samples("batch"), 1);
}

TEST(RuntimeHistory, SavesAndLoadsItsSamplesBounded) {
  RuntimeHistory h;
  for (int i = 1; i <= 30; ++i) h.Add("batch", WorkloadEnd::kCompleted, i, 100, kWindow);
  h.Add("train", WorkloadEnd::kTimeout, 100, 50, kWindow);
  const nlohmann::json saved = h.Save();
  RuntimeHistory back;
  ASSERT_TRUE(back.Load(saved, kWindow).ok());
  RuntimeCorrectionConfig cfg;
  EXPECT_EQ(back.Samples("batch"), 30);
  EXPECT_EQ(back.Samples("train"), 1);
  EXPECT_DOUBLE_EQ(back.Estimate("batch", cfg)->ratio, h.Estimate("batch", cfg)->ratio);
  RuntimeHistory small;
  ASSERT_TRUE(small.Load(saved, 10).ok());
  EXPECT_EQ(small.Samples("batch"), 10) << "a smaller window keeps the most recent";
  RuntimeHistory bad;
  Status st = bad.Load(nlohmann::json{{"batch", {0.5, "x", -1, 0.7}}, {"q2", 3}}, kWindow);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.Message().find("runtimeHistory.batch: 2 value(s)"), std::string::npos) << st.Message();
  EXPECT_NE(st.Message().find("runtimeHistory.q2: expected a list"), std::string::npos) << st.Message();
  EXPECT_EQ(bad.Samples("batch"), 2) << "the good values load";
}

TEST(RuntimeHistory, EndsCombineToTheWorstOfAGangsMembers) {
  EXPECT_EQ(WorseEnd(WorkloadEnd::kCompleted, WorkloadEnd::kUnknown), WorkloadEnd::kUnknown) << "unknown is never completed";
  EXPECT_EQ(WorseEnd(WorkloadEnd::kDisrupted, WorkloadEnd::kCompleted), WorkloadEnd::kDisrupted);
  EXPECT_EQ(WorseEnd(WorkloadEnd::kCompleted, WorkloadEnd::kTimeout), WorkloadEnd::kTimeout);
  EXPECT_EQ(WorseEnd(WorkloadEnd::kFailed, WorkloadEnd::kCancelled), WorkloadEnd::kCancelled);
  EXPECT_EQ(WorseEnd(WorkloadEnd::kCompleted, WorkloadEnd::kCompleted), WorkloadEnd::kCompleted);
}

TEST(RuntimeHistory, ConfigErrorsNameTheField) {
  RuntimeCorrectionConfig c;
  ASSERT_TRUE(DecodeRuntimeCorrection(false, "perishable.runtimeCorrection", &c).ok());
  EXPECT_FALSE(c.enabled);
  ASSERT_TRUE(DecodeRuntimeCorrection(nlohmann::json{{"quantile", 0.8}, {"minSamples", 5}, {"window", 50}},
                                      "perishable.runtimeCorrection", &c).ok());
  EXPECT_TRUE(c.enabled);
  EXPECT_DOUBLE_EQ(c.quantile, 0.8);
  EXPECT_EQ(c.min_samples, 5);
  EXPECT_EQ(c.window, 50);
  for (const auto& [j, want] : std::vector<std::pair<nlohmann::json, std::string>>{
           {nlohmann::json{{"quantile", 0}}, "perishable.runtimeCorrection.quantile: must be in (0, 1]"},
           {nlohmann::json{{"quantile", "p90"}}, "perishable.runtimeCorrection.quantile: expected a number"},
           {nlohmann::json{{"window", 0}}, "perishable.runtimeCorrection.window: must be between 1 and 10000"},
           {nlohmann::json{{"minSamples", 300}}, "perishable.runtimeCorrection.minSamples: 300 is more than the window (200)"},
           {nlohmann::json{{"quantil", 0.9}}, "perishable.runtimeCorrection.quantil: unknown field"},
           {nlohmann::json("yes"), "perishable.runtimeCorrection: expected false, true or"},
       }) {
    Status st = DecodeRuntimeCorrection(j, "perishable.runtimeCorrection", &c);
    ASSERT_FALSE(st.ok()) << j.dump();
    EXPECT_NE(st.Message().find(want), std::string::npos) << st.Message();
  }
}

}  // namespace
}  // namespace tidal
