// Test support for tidal-slurm's tests: job and node records, slurmctld's side in memory
// (MemorySlurm: what Load returns and what the adapter wrote), and ReconcileTest, a fixture with a
// real Engine behind a real gRPC server and four idle nodes gpu01..gpu04 (leaves l0, l1).
//
// Threading: single-threaded tests.
#pragma once

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/service.h"
#include "shim/slurm/config.h"
#include "shim/slurm/engine_link.h"
#include "shim/slurm/records.h"

namespace tidal::slurm {

inline JobRecord HeldJob(uint32_t id, uint32_t nodes, int64_t gpus, const std::string& account = "qa") {
  JobRecord j;
  j.id = std::to_string(id);
  j.job_id = id;
  j.user = "alice";
  j.account = account;
  j.partition = "batch";
  j.state = JobState::kPending;
  j.state_reason = "JobHeldUser";
  j.priority = 0;
  j.node_count = nodes;
  j.gpus_per_node = gpus;
  j.gpu_model = "a100";
  j.time_limit_min = 30;
  j.submit_time = 1000 + id;
  j.admin_comment = "tidal: waiting for Tidal";
  return j;
}

inline NodeRecord Node(const std::string& name, const std::string& leaf) {
  NodeRecord n;
  n.name = name;
  n.state = NodeState::kIdle;
  n.gpus = 8;
  n.gpu_model = "a100";
  n.cpus = 32;
  n.real_memory_mb = 256000;
  n.partitions = {"batch"};
  n.features = {"tidal-block-b0", "tidal-leaf-" + leaf, "tidal-nvlink-" + name};
  return n;
}

// slurmctld's side, in memory: what Load returns and what the adapter wrote.
class MemorySlurm : public SlurmApi {
 public:
  ClusterRecords state;
  bool fail_load = false;
  std::vector<std::string> calls;
  Status Load(ClusterRecords* out) override {
    if (fail_load) return Status::Error("slurm_load_jobs: Unable to contact slurm controller");
    *out = state;
    return Status::Ok();
  }
  JobRecord* Find(const std::string& id) {
    for (auto& j : state.jobs) {
      if (j.id == id) return &j;
    }
    return nullptr;
  }
  static std::string Count(const JobPin& pin) {
    return pin.min_nodes == 0 ? "" : " nodes=" + std::to_string(pin.min_nodes) + "-" + std::to_string(pin.max_nodes);
  }
  Status Release(const std::string& id, const JobPin& pin, const std::string& text) override {
    std::string n;
    for (const auto& x : pin.nodes) n += (n.empty() ? "" : ",") + x;
    calls.push_back("release " + id + " " + n + Count(pin));
    JobRecord* j = Find(id);
    if (j == nullptr) return Status::Error("no such job " + id);
    j->priority = 1000;
    j->required_nodes = pin.nodes;
    j->admin_comment = text;
    if (pin.min_nodes > 0) j->node_count = pin.min_nodes, j->max_node_count = pin.max_nodes;
    return Status::Ok();
  }
  Status Hold(const std::string& id, const std::string& text, const JobPin& pin) override {
    calls.push_back("hold " + id + Count(pin));
    if (JobRecord* j = Find(id)) j->priority = 0, j->required_nodes = pin.nodes, j->admin_comment = text;
    return Status::Ok();
  }
  Status HoldRequeued(const std::string& id, const std::string& text, const JobPin& pin) override {
    calls.push_back("hold_requeued " + id + Count(pin));
    if (JobRecord* j = Find(id)) j->priority = 0, j->required_nodes = pin.nodes, j->admin_comment = text;
    return Status::Ok();
  }
  Status Shrink(const std::string& id, const std::vector<std::string>& nodes) override {
    std::string n;
    for (const auto& x : nodes) n += (n.empty() ? "" : ",") + x;
    calls.push_back("shrink " + id + " " + n);
    if (JobRecord* j = Find(id)) j->nodes = nodes, j->node_count = static_cast<uint32_t>(nodes.size());
    return Status::Ok();
  }
  Status SetComment(const std::string& id, const std::string& text) override {
    calls.push_back("comment " + id + " " + text);
    if (JobRecord* j = Find(id)) j->admin_comment = text;
    return Status::Ok();
  }
  Status Requeue(const std::string& id) override { return calls.push_back("requeue " + id), Status::Ok(); }
  Status Signal(const std::string& id, int sig, bool) override {
    return calls.push_back("signal " + id + " " + std::to_string(sig)), Status::Ok();
  }
  NodeRecord* FindNode(const std::string& name) {
    for (auto& n : state.nodes) {
      if (n.name == name) return &n;
    }
    return nullptr;
  }
  // As slurmctld does: a drain sets the reason; an undrain clears it (tidal_slurm only undrains
  // its own drains: the real API refuses others').
  Status Drain(const std::string& n, const std::string& reason) override {
    calls.push_back("drain " + n);
    if (NodeRecord* r = FindNode(n)) r->drain = true, r->reason = reason;
    return Status::Ok();
  }
  Status Undrain(const std::string& n) override {
    calls.push_back("undrain " + n);
    if (NodeRecord* r = FindNode(n)) r->drain = false, r->reason.clear();
    return Status::Ok();
  }
};

class ReconcileTest : public ::testing::Test {
 protected:
  // The engine's config (a fixture may add to it).
  virtual std::string EngineYaml() const { return "queues:\n  - name: qa\n    nominal: {gpus: 16}\n    borrowingLimit: {gpus: 0}\n"; }
  void SetUp() override {
    auto cfg = ParseEngineConfig(EngineYaml(), "t.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto e = Engine::Create(*cfg);
    ASSERT_TRUE(e.ok());
    engine_ = std::move(e).value();
    service_ = std::make_unique<EngineService>(*engine_);
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(service_.get());
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    link_ = NewGrpcEngineLink("127.0.0.1:" + std::to_string(port_));
    acfg_.holder = "adapter-a";
    for (int i = 1; i <= 4; ++i) slurm_.state.nodes.push_back(Node("gpu0" + std::to_string(i), i <= 2 ? "l0" : "l1"));
  }
  void TearDown() override {
    link_.reset();
    if (server_) server_->Shutdown();
  }
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<EngineService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::unique_ptr<EngineLink> link_;
  AdapterConfig acfg_;
  MemorySlurm slurm_;
};

}  // namespace tidal::slurm
