// A gtest fixture for engine tests: an Engine on the fixture's clock (now_) with metrics, 8 nodes
// from testing::GpuNode (2 leaves x 2 NVLink domains of 2), and batch helpers.
// Threading: single-threaded.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/observability.h"
#include "test/support/engine_objects.h"

namespace tidal::testing {

class EngineFixture : public ::testing::Test {
 protected:
  void SetUp() override { Make(EngineConfig{}); }
  void Make(const EngineConfig& cfg) {
    auto e = Engine::Create(cfg, [this] { return now_; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    engine_->SetObservability(&metrics_, nullptr);
    SyncBatch b;
    b.resync = true;
    for (int i = 0; i < 8; ++i) b.upsert_nodes.push_back(Node(i));
    ASSERT_TRUE(Sync(b).ok());
  }
  static NodeInfo Node(int i) { return GpuNode("n" + std::to_string(i), "l" + std::to_string(i / 4), "v" + std::to_string(i / 2)); }
  Status Sync(const SyncBatch& b) {
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  Status Add(std::vector<PodInfo> pods) {
    SyncBatch b;
    b.upsert_pods = std::move(pods);
    return Sync(b);
  }
  Status Delete(std::vector<std::string> uids) {
    SyncBatch b;
    b.delete_pods = std::move(uids);
    return Sync(b);
  }
  std::vector<DisruptionAction> Poll() { return engine_->Disruptions(FrontDoor::kKubernetes); }
  // Plans the pod (added first) and gives the plan back at once: where it would go, or why not.
  Status Plan(const PodInfo& p, std::string* node = nullptr) {
    EXPECT_TRUE(Add({p}).ok());
    PlanResult plan = engine_->PlanPod(p.uid);
    if (node != nullptr) *node = plan.node;
    if (plan.status.ok()) (void)engine_->Unreserve(p.uid);
    return plan.status;
  }
  // tidal_gpus{state} as the engine's gauges have it.
  double Gpus(const std::string& state) {
    double v = 0;
    for (const auto& r : engine_->Gauges().gpus) {
      if (!r.labels.empty() && r.labels[0] == state) v += r.value;
    }
    return v;
  }

  int64_t now_ = 10000;
  metrics::Registry registry_;
  EngineMetrics metrics_{registry_};
  std::unique_ptr<Engine> engine_;
};

}  // namespace tidal::testing
