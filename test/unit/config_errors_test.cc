// The engine config (ParseEngineConfig, what tidal-engine, its hot reload and tidalctl config
// validate load), regressions from the admin exploration: whole GPUs in quotas, one YAML document,
// large quantities, every problem reported across and within sections, plugin weight 0, merge keys.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/engine.h"

namespace tidal {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

std::vector<std::string> Problems(const std::string& yaml) {
  auto cfg = ParseEngineConfig(yaml, "t.yaml");
  EXPECT_FALSE(cfg.ok()) << yaml;
  return cfg.ok() ? std::vector<std::string>{} : cfg.status().reasons();
}

int64_t NominalOf(const EngineConfig& cfg, const std::string& resource) {
  return cfg.queues.queues.at(0).nominal.at(static_cast<size_t>(cfg.queues.ResourceIndex(resource)));
}

TEST(ConfigWholeGpus, FractionalQuotaIsRefusedNamingTheField) {
  for (const std::string v : {"0.5", "1.5", "100m", "\"0.5\""}) {
    EXPECT_THAT(Problems("queues:\n  - name: a\n    nominal: {gpus: " + v + "}\n"),
                ElementsAre(HasSubstr("t.yaml:3: queues[0].nominal.gpus: ")))
        << v;
    EXPECT_THAT(Problems("queues:\n  - name: a\n    nominal: {gpus: " + v + "}\n").at(0), HasSubstr("not a whole number of GPUs"));
  }
  EXPECT_THAT(Problems("resources: {gpuModels: [h100]}\nqueues:\n  - name: a\n    borrowingLimit: {gpus.h100: 2.5}\n"),
              ElementsAre(HasSubstr("t.yaml:4: queues[0].borrowingLimit.gpus.h100: 2.5 is not a whole number of GPUs")));
}

TEST(ConfigWholeGpus, CpuKeepsMilliUnitsAndWholeGpusParse) {
  auto cfg = ParseEngineConfig("queues:\n  - name: a\n    nominal: {gpus: 2000m, cpu: 0.5}\n", "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(NominalOf(*cfg, "gpus"), 2);
  EXPECT_EQ(NominalOf(*cfg, "cpu"), 500);
}

TEST(ConfigLargeQuantity, TooLargeNotUnknownSuffix) {
  EXPECT_THAT(Problems("queues:\n  - name: a\n    nominal: {gpus: 99999999999999999999}\n"),
              ElementsAre("t.yaml:3: queues[0].nominal.gpus: invalid quantity \"1e+20\": too large"));
  EXPECT_THAT(Problems("queues:\n  - name: a\n    nominal: {gpus: 9223372036854775807}\n"),
              ElementsAre("t.yaml:3: queues[0].nominal.gpus: invalid quantity \"9223372036854775807\": too large"));
  auto cfg = ParseEngineConfig("queues:\n  - name: a\n    nominal: {cpu: 1e3}\n", "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(NominalOf(*cfg, "cpu"), 1000000) << "YAML reads 1e3 as 1000 cores";
}

TEST(ConfigOneDocument, SecondDocumentIsRefused) {
  EXPECT_THAT(Problems("queues:\n  - name: a\n---\nqueues:\n  - name: b\n"),
              ElementsAre(HasSubstr("t.yaml:3: more than one YAML document")));
}

TEST(ConfigEveryProblem, TopLevelKeys) {
  EXPECT_THAT(Problems("permitTimeoutSeconds: -1\nplanTtlSeconds: 0\nbogus: 1\n"),
              UnorderedElementsAre("t.yaml:1: permitTimeoutSeconds: must be 1..3600, got -1",
                                   "t.yaml:2: planTtlSeconds: must be 1..86400, got 0", "t.yaml:3: bogus: unknown field"));
}

TEST(ConfigEveryProblem, UnknownPluginAndBadQueueWeight) {
  const auto p = Problems("profile:\n  plugins: [fairshare, quotaa]\nqueues:\n  - name: a\n    weight: -1\n");
  EXPECT_THAT(p, Contains("t.yaml:5: queues[0].weight: must be a finite number > 0"));
  EXPECT_THAT(p, Contains(HasSubstr("t.yaml:2: profile default: plugins[1] (quotaa): unknown plugin")));
}

TEST(ConfigEveryProblem, WithinProfileBackfill) {
  EXPECT_THAT(Problems("profile:\n  backfill: {depth: -2, minGpus: -1}\n"),
              UnorderedElementsAre("t.yaml:2: profile.backfill.depth: must be -1 (all), 0 (off) or 1..100000",
                                   "t.yaml:2: profile.backfill.minGpus: must be a non-negative integer (0 = one node's GPUs)"));
}

TEST(ConfigEveryProblem, WithinAPool) {
  const auto p = Problems("pools:\n  slurm: {keep: -1, idleSeconds: -5, graceCapSeconds: 99999999, to: everyone}\n");
  EXPECT_EQ(p.size(), 4u);
  EXPECT_THAT(p, Contains(HasSubstr("pools.slurm.keep: must be an integer in [0, 1000000]")));
  EXPECT_THAT(p, Contains(HasSubstr("pools.slurm.idleSeconds: ")));
  EXPECT_THAT(p, Contains(HasSubstr("pools.slurm.graceCapSeconds: ")));
  EXPECT_THAT(p, Contains(HasSubstr("pools.slurm.to: unknown value \"everyone\"")));
}

TEST(ConfigEveryProblem, SeveralProfileAndSectionErrorsAtOnce) {
  const auto p = Problems(
      "profile:\n  plugins: [fairshare, quota, gang, nope, {name: topology, weight: 0}]\n  maxCandidates: 0\n"
      "runtimeLimit: {graceSeconds: -5, enforce: maybe}\n");
  EXPECT_THAT(p, Contains(HasSubstr("profile.plugins[4].weight: must be 1..100, got 0")));
  EXPECT_THAT(p, Contains(HasSubstr("runtimeLimit.graceSeconds: must be 0..604800, got -5")));
  EXPECT_THAT(p, Contains(HasSubstr("runtimeLimit.enforce: must be true or false")));
}

TEST(ConfigPluginWeight, ZeroIsRefusedLikeOtherOutOfRangeWeights) {
  EXPECT_THAT(Problems("profile:\n  plugins: [fairshare, quota, gang, {name: topology, weight: 0}]\n"),
              ElementsAre("t.yaml:2: profile.plugins[3].weight: must be 1..100, got 0"));
  EXPECT_THAT(Problems("profile:\n  plugins: [fairshare, quota, gang, {name: topology, weight: 101}]\n"),
              ElementsAre("t.yaml:2: profile.plugins[3].weight: must be 1..100, got 101"));
}

TEST(ConfigPluginWeight, AbsentWeightIsTheDefault) {
  auto cfg = ParseEngineConfig("profile:\n  plugins: [fairshare, quota, gang, {name: topology}]\n", "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->profile.plugins.at(3).weight, 0) << "0 in the spec: no weight given, built as 1";
}

TEST(ConfigMergeKeys, QueuesTemplatedWithAnAnchor) {
  const std::string yaml =
      "queues:\n  - name: base\n    nominal: {gpus: 64}\n  - &team\n    name: a\n    parent: base\n    weight: 2\n"
      "    nominal: {gpus: 8}\n  - <<: *team\n    name: b\n";
  auto cfg = ParseEngineConfig(yaml, "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_EQ(cfg->queues.queues.size(), 3u);
  EXPECT_EQ(cfg->queues.queues[2].name, "b");
  EXPECT_EQ(cfg->queues.queues[2].parent, "base");
  EXPECT_EQ(cfg->queues.queues[2].weight, 2);
}

}  // namespace
}  // namespace tidal
