// A pod synced without a creation time (creation_unix 0: a front door that sends none) counts as
// created when the engine first sees it, and keeps that time across updates. At 0 it read as created
// in 1970: a 56-year observation in tidal_time_to_start_seconds and the first place in submit order.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include <gtest/gtest.h>

#include <string>

#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;

class CreationTimeTest : public testing::EngineFixture {
 protected:
  // tidal_time_to_start_seconds' sum over every series, from the scrape.
  double TimeToStartSum() {
    double sum = 0;
    const std::string text = registry_.Render();
    size_t at = 0;
    while ((at = text.find("tidal_time_to_start_seconds_sum{", at)) != std::string::npos) {
      const size_t space = text.find(' ', text.find('}', at));
      sum += std::stod(text.substr(space + 1, text.find('\n', space) - space - 1));
      at = space;
    }
    return sum;
  }
};

TEST_F(CreationTimeTest, APodWithoutACreationTimeIsCreatedWhenFirstSeen) {
  PodInfo p = GangPod("solo", "", 1);
  p.creation_unix = 0;
  ASSERT_TRUE(Add({p}).ok());
  now_ += 30;
  ASSERT_TRUE(Add({p}).ok()) << "an update keeps the first sight, it does not restart the clock";
  now_ += 30;
  PlanResult plan = engine_->PlanPod(p.uid);
  ASSERT_TRUE(plan.status.ok()) << plan.status.ToString();
  ASSERT_TRUE(engine_->Reserve(p.uid, plan.node).ok());
  ASSERT_TRUE(engine_->Bound(p.uid, plan.node).ok());
  EXPECT_DOUBLE_EQ(TimeToStartSum(), 60) << "waited 60 s since first seen, not since 1970";
}

TEST_F(CreationTimeTest, OnlyAMissingTimeIsReplaced) {
  PodInfo p = GangPod("dated", "", 1);
  p.creation_unix = now_ - 100;
  ASSERT_TRUE(Add({p}).ok());
  now_ += 20;
  PlanResult plan = engine_->PlanPod(p.uid);
  ASSERT_TRUE(plan.status.ok()) << plan.status.ToString();
  ASSERT_TRUE(engine_->Reserve(p.uid, plan.node).ok());
  ASSERT_TRUE(engine_->Bound(p.uid, plan.node).ok());
  EXPECT_DOUBLE_EQ(TimeToStartSum(), 120);
}

// A CPU-only pod's time to start is labelled size_bucket="0", not "1": it diluted the 1-GPU
// series that the single-GPU time-to-start SLO (docs/operations.md) is computed from.
TEST_F(CreationTimeTest, ACpuOnlyPodIsItsOwnSizeBucket) {
  PodInfo p = GangPod("cpu", "", 1, /*gpus=*/0);
  p.creation_unix = now_;
  ASSERT_TRUE(Add({p}).ok());
  now_ += 5;
  PlanResult plan = engine_->PlanPod(p.uid);
  ASSERT_TRUE(plan.status.ok()) << plan.status.ToString();
  ASSERT_TRUE(engine_->Reserve(p.uid, plan.node).ok());
  ASSERT_TRUE(engine_->Bound(p.uid, plan.node).ok());
  const std::string text = registry_.Render();
  EXPECT_NE(text.find("size_bucket=\"0\""), std::string::npos) << text;
  EXPECT_EQ(text.find("tidal_time_to_start_seconds_count{class=\"batch\",queue=\"default\",size_bucket=\"1\"}"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace tidal
