// tidal-slurm against core/api/limits.h: jobs over the bounds are not sent and say why, node
// capacity and time limits stay within the caps, and Sync messages are cut by bytes, nodes
// included (before, every node went into the first message: 100,000 nodes made one message of
// tens of MiB, over the engine's receive limit).
#include <gtest/gtest.h>

#include "core/api/limits.h"
#include "shim/slurm/reconciler.h"
#include "shim/slurm/to_engine.h"

namespace tidal::slurm {
namespace {

JobRecord Held(uint32_t nodes, int64_t gpus) {
  JobRecord j;
  j.id = "42";
  j.job_id = 42;
  j.user = "alice";
  j.account = "qa";
  j.partition = "batch";
  j.state = JobState::kPending;
  j.state_reason = "JobHeldUser";
  j.priority = 0;
  j.node_count = nodes;
  j.gpus_per_node = gpus;
  j.time_limit_min = 30;
  return j;
}

TEST(SlurmBounds, JobsOverTheBoundsAreNotSentAndSayWhy) {
  AdapterConfig cfg;
  // 100,000 nodes: before, MembersOf built 100,000 members (the engine then refused them all).
  JobRecord wide = Held(100000, 8);
  EXPECT_EQ(SkipReason(wide), "cannot schedule: node_count: 100000 is over Tidal's limit of 10000 nodes");
  EXPECT_TRUE(MembersOf(wide, "42", cfg).empty());
  EXPECT_NE(SkipReason(Held(1, 4096)).find("GPUs per node: 4096 is over Tidal's limit of 1024"), std::string::npos);
  EXPECT_NE(SkipReason(Held(2000, 1024)).find("GPUs: 2000 members x 1024 GPUs"), std::string::npos) << SkipReason(Held(2000, 1024));
  JobRecord mem = Held(1, 8);
  mem.memory_mb_per_node = int64_t{1} << 40;
  EXPECT_NE(SkipReason(mem).find("memory per node (MiB)"), std::string::npos);
  JobRecord comment = Held(1, 8);
  comment.comment = "tidal.dev/class=" + std::string(5000, 'x');
  EXPECT_EQ(SkipReason(comment), "cannot schedule: --comment tidal.dev/class: a value of 5000 bytes, over the limit of 1024");
  JobRecord excl = Held(1, 8);
  for (int i = 0; i < 40000; ++i) excl.excluded_nodes.push_back("node-with-a-long-name-" + std::to_string(i));
  EXPECT_NE(SkipReason(excl).find("--exclude / --nodelist"), std::string::npos);
  // Within the bounds: sent.
  EXPECT_EQ(SkipReason(Held(10000, 8)), "");
  EXPECT_EQ(MembersOf(Held(4, 8), "42", cfg).size(), 4u);
}

TEST(SlurmBounds, TimeLimitAndNodeCapacityStayWithinTheCaps) {
  AdapterConfig cfg;
  JobRecord j = Held(1, 8);
  j.time_limit_min = int64_t{1} << 40;  // the engine would refuse the runtime-limit: Slurm enforces its own
  auto m = MembersOf(j, "42", cfg);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].annotations().at("tidal.dev/runtime-limit"), std::to_string(limits::kMaxDurationS / 60) + "m");
  NodeRecord n;
  n.name = "fat";
  n.state = NodeState::kIdle;
  n.gpus = 5000;
  n.cpus = 1000000;
  n.real_memory_mb = int64_t{1} << 40;
  v1::Node out = NodeOf(n, cfg);
  EXPECT_EQ(out.capacity().gpus(), limits::kMaxGpusPerNode);
  EXPECT_EQ(out.capacity().cpu_milli(), limits::kMaxCpuMilliPerNode);
  EXPECT_EQ(out.capacity().memory_bytes(), limits::kMaxMemoryBytesPerNode);
}

class RecordingLink : public EngineLink {
 public:
  std::vector<size_t> sizes;
  std::vector<int> nodes;
  Status Send(const v1::SyncRequest& req, v1::SyncAck* ack) override {
    sizes.push_back(req.ByteSizeLong());
    nodes.push_back(req.upsert_nodes_size());
    open_ = true;
    ack->mutable_status()->set_code(v1::Status::SUCCESS);
    return Status::Ok();
  }
  Status Admit(const v1::AdmitRequest&, v1::AdmitResponse*) override { return Status::Ok(); }
  Status Explain(const std::string&, std::string*) override { return Status::Ok(); }
  Status Disruptions(const v1::DisruptionsRequest&, v1::DisruptionsResponse*) override { return Status::Ok(); }
  Status Evicted(const v1::EvictedRequest&) override { return Status::Ok(); }
  void Close() override { open_ = false; }
  bool open() const override { return open_; }

 private:
  bool open_ = false;
};

class StaticSlurm : public SlurmApi {
 public:
  ClusterRecords state;
  Status Load(ClusterRecords* out) override {
    *out = state;
    return Status::Ok();
  }
  Status Release(const std::string&, const JobPin&, const std::string&) override { return Status::Ok(); }
  Status Hold(const std::string&, const std::string&, const JobPin&) override { return Status::Ok(); }
  Status HoldRequeued(const std::string&, const std::string&, const JobPin&) override { return Status::Ok(); }
  Status Shrink(const std::string&, const std::vector<std::string>&) override { return Status::Ok(); }
  Status SetComment(const std::string&, const std::string&) override { return Status::Ok(); }
  Status Requeue(const std::string&) override { return Status::Ok(); }
  Status Signal(const std::string&, int, bool) override { return Status::Ok(); }
  Status Drain(const std::string&, const std::string&) override { return Status::Ok(); }
  Status Undrain(const std::string&) override { return Status::Ok(); }
};

TEST(SlurmBounds, SyncMessagesAreCutByBytesNodesIncluded) {
  StaticSlurm slurm;
  for (int i = 0; i < 30000; ++i) {
    NodeRecord n;
    n.name = "gpu-node-" + std::to_string(i);
    n.state = NodeState::kIdle;
    n.gpus = 8;
    n.partitions = {"batch", "debug", "long"};
    n.features = {"tidal-block-b" + std::to_string(i / 1000), "tidal-leaf-l" + std::to_string(i / 32), "ib", "nvme", "a100"};
    slurm.state.nodes.push_back(n);
  }
  RecordingLink link;
  AdapterConfig cfg;
  cfg.holder = "a";
  Reconciler r(cfg, &slurm, &link);
  r.ReconcileOnce();
  ASSERT_GE(link.sizes.size(), 2u) << "30,000 nodes in one message of " << (link.sizes.empty() ? 0 : link.sizes[0]) << " bytes";
  int total = 0;
  for (size_t i = 0; i < link.sizes.size(); ++i) {
    EXPECT_LE(link.sizes[i], Reconciler::kChunkBytes + limits::kMaxObjectBytes) << "message " << i;
    total += link.nodes[i];
  }
  EXPECT_EQ(total, 30000);
}

}  // namespace
}  // namespace tidal::slurm
