// What the engine keeps between calls stays true to what the doors report: a snapshot sent over
// several Sync batches removes the door's unnamed objects only at its last batch (so objects of
// later batches keep their charges meanwhile), and a gang's cached workload and spec (Gang::
// Summary, PodInfo::spec) follow every change of its pods and of the config.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "test/support/engine_objects.h"

namespace tidal {
namespace {

using testing::GpuNode;
using testing::SlurmMember;

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(kTwoQueues); }
  void Start(const std::string& yaml) {
    auto cfg = ParseEngineConfig(yaml, "t.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto e = Engine::Create(*cfg, [this] { return now_; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
  }
  Status Sync(SyncBatch b) {
    b.door = FrontDoor::kSlurm;
    for (auto& p : b.upsert_pods) p.door = FrontDoor::kSlurm;
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  double Usage(const std::string& queue) {
    for (const auto& row : engine_->Gauges().queue_usage) {
      if (row.labels == std::vector<std::string>{queue, "gpus"}) return row.value;
    }
    return -1;
  }
  static bool Admitted(const AdmitResult& r, const std::string& gang) {
    for (const auto& a : r.admitted) {
      if (a.gang == gang) return true;
    }
    return false;
  }
  static constexpr const char* kTwoQueues = "queues:\n  - name: qa\n    weight: 1\n  - name: qb\n    weight: 1\n";
  int64_t now_ = 1000;
  std::unique_ptr<Engine> engine_;
};

TEST_F(CacheTest, ASnapshotOverSeveralBatchesRemovesOnlyAtItsLastBatch) {
  SyncBatch first;
  first.resync = true;
  first.upsert_nodes = {GpuNode("n1", "l0", "v0"), GpuNode("n2", "l0", "v1"), GpuNode("n3", "l0", "v1")};
  first.upsert_pods = {SlurmMember("7", 0, 1, "qa", 8, "n1"), SlurmMember("8", 0, 1, "qa", 8, "n2"), SlurmMember("9", 0, 1, "qa")};
  ASSERT_TRUE(Sync(first).ok());
  ASSERT_EQ(engine_->Stats().pods, 3);
  ASSERT_EQ(Usage("qa"), 16);

  // The adapter restarts: its snapshot comes in two batches; job 9 has ended meanwhile.
  SyncBatch a;
  a.resync = true;
  a.snapshot_continues = true;
  a.upsert_nodes = first.upsert_nodes;
  a.upsert_pods = {SlurmMember("7", 0, 1, "qa", 8, "n1")};
  ASSERT_TRUE(Sync(a).ok());
  EXPECT_EQ(engine_->Stats().pods, 3) << "nothing is removed before the snapshot's last batch";
  EXPECT_EQ(Usage("qa"), 16) << "job 8, in a later batch, keeps its charge meanwhile";
  SyncBatch b;
  b.upsert_pods = {SlurmMember("8", 0, 1, "qa", 8, "n2")};
  ASSERT_TRUE(Sync(b).ok());
  EXPECT_EQ(engine_->Stats().pods, 2) << "job 9, named by no batch of the snapshot, is gone";
  EXPECT_EQ(Usage("qa"), 16);
  // An incremental batch after the snapshot removes nothing it does not name.
  SyncBatch c;
  c.upsert_pods = {SlurmMember("10", 0, 1, "qb")};
  ASSERT_TRUE(Sync(c).ok());
  EXPECT_EQ(engine_->Stats().pods, 3);
}

TEST_F(CacheTest, AGangsWorkloadFollowsAChangeOfItsMembers) {
  SyncBatch s;
  s.resync = true;
  s.upsert_nodes = {GpuNode("n1", "l0", "v0")};
  s.upsert_pods = {SlurmMember("5", 0, 1, "qa", 16)};  // more than a node has
  ASSERT_TRUE(Sync(s).ok());
  EXPECT_FALSE(Admitted(engine_->Admit(FrontDoor::kSlurm, 0), "slurm/5"));
  SyncBatch fix;  // scontrol update: the job now asks for what a node has
  fix.upsert_pods = {SlurmMember("5", 0, 1, "qa", 8)};
  ASSERT_TRUE(Sync(fix).ok());
  now_ += 10;
  EXPECT_TRUE(Admitted(engine_->Admit(FrontDoor::kSlurm, 0), "slurm/5"));
}

TEST_F(CacheTest, AGangsSizeFollowsItsSpecAndANewQueueFollowsAReload) {
  SyncBatch s;
  s.resync = true;
  s.upsert_nodes = {GpuNode("n1", "l0", "v0"), GpuNode("n2", "l0", "v1"), GpuNode("n3", "l0", "v1")};
  // Job 6 of 2 members, only one reported so far: incomplete, never planned alone.
  s.upsert_pods = {SlurmMember("6", 0, 2, "qa"), SlurmMember("4", 0, 1, "qc")};
  ASSERT_TRUE(Sync(s).ok());
  AdmitResult r = engine_->Admit(FrontDoor::kSlurm, 0);
  EXPECT_FALSE(Admitted(r, "slurm/6"));
  EXPECT_FALSE(Admitted(r, "slurm/4")) << "queue qc is not configured";
  SyncBatch more;
  more.upsert_pods = {SlurmMember("6", 1, 2, "qa")};
  ASSERT_TRUE(Sync(more).ok());
  now_ += 10;
  EXPECT_TRUE(Admitted(engine_->Admit(FrontDoor::kSlurm, 0), "slurm/6"));
  auto cfg = ParseEngineConfig(std::string(kTwoQueues) + "  - name: qc\n    weight: 1\n", "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_TRUE(engine_->Reconfigure(*cfg).ok());
  now_ += 10;
  // The reload kept job 6's plan (admitted: its slots are claimed); job 4 fits on the third node.
  AdmitResult after = engine_->Admit(FrontDoor::kSlurm, 0);
  EXPECT_TRUE(Admitted(after, "slurm/4")) << "queue qc exists now";
}

}  // namespace
}  // namespace tidal
