// tidal-slurm beside two replicas of a Tidal deployment (deploy/base: each replica a
// tidal-scheduler and its own engine, one scheduler lease): only the engine whose scheduler leads
// serves the Slurm door, the adapter finds it among the addresses it is given, and follows it
// when the lease moves (engine/door_lease.h "Replicas", shim/slurm/engine_failover.h). Each
// replica here is a real Engine behind a real gRPC server; its scheduler is a Sync stream of
// door KUBERNETES that says whether it leads, as tidal-scheduler's engine client does.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "shim/slurm/adapter_testing.h"
#include "shim/slurm/engine_failover.h"
#include "shim/slurm/reconciler.h"
#include "tidal/v1/engine.grpc.pb.h"

namespace tidal::slurm {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One replica: an engine, its gRPC server, and its scheduler's Sync stream (door KUBERNETES).
struct Replica {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<EngineService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::unique_ptr<v1::Engine::Stub> stub;
  std::unique_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SyncRequest, v1::SyncAck>> stream;

  std::string address() const { return "127.0.0.1:" + std::to_string(port); }

  void Start(const std::string& yaml) {
    auto cfg = ParseEngineConfig(yaml, "t.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto e = Engine::Create(*cfg);
    ASSERT_TRUE(e.ok());
    engine = std::move(e).value();
    service = std::make_unique<EngineService>(*engine);
    service->ExpectKubernetesDoor(true);  // frontDoors: [kubernetes, slurm]
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(service.get());
    server = b.BuildAndStart();
    ASSERT_NE(server, nullptr);
    stub = v1::Engine::NewStub(grpc::CreateChannel(address(), grpc::InsecureChannelCredentials()));
  }
  // The scheduler says whether it leads: the first call opens its stream with a (empty) snapshot.
  void Say(bool leading) { SayUntil(leading ? NowMs() + 3600 * 1000 : 0); }
  // ... until this Unix time (ms), the bound kube-scheduler gives up at (0: standing by).
  void SayUntil(int64_t until_unix_ms) {
    v1::SyncRequest req;
    req.set_door(v1::KUBERNETES);
    if (!stream) {
      ctx = std::make_unique<grpc::ClientContext>();
      stream = stub->Sync(ctx.get());
      req.set_resync(true);
      req.set_holder("tidal-scheduler@" + address());
    }
    req.mutable_leadership()->set_election(true);
    req.mutable_leadership()->set_leading_until_unix_ms(until_unix_ms);
    ASSERT_TRUE(stream->Write(req));
    v1::SyncAck ack;
    ASSERT_TRUE(stream->Read(&ack));
  }
  void Stop() {
    if (stream) {
      stream->WritesDone();
      (void)stream->Finish();
    }
    if (server) server->Shutdown();
  }
  // The Slurm job's members this engine holds (bound or pending).
  int32_t Pods() { return engine->Stats().pods; }
};

class ReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string yaml = "queues:\n  - name: qa\n    nominal: {gpus: 32}\n";
    a_.Start(yaml);
    b_.Start(yaml);
    acfg_.holder = "tidal-slurm@ctl";
    for (int i = 1; i <= 4; ++i) slurm_.state.nodes.push_back(Node("gpu0" + std::to_string(i), i <= 2 ? "l0" : "l1"));
    std::vector<std::unique_ptr<EngineLink>> links;
    links.push_back(NewGrpcEngineLink(a_.address()));
    links.push_back(NewGrpcEngineLink(b_.address()));
    link_ = std::make_unique<FailoverEngineLink>(std::vector<std::string>{a_.address(), b_.address()}, std::move(links));
  }
  void TearDown() override {
    link_.reset();
    a_.Stop();
    b_.Stop();
  }
  Replica a_, b_;
  AdapterConfig acfg_;
  MemorySlurm slurm_;
  std::unique_ptr<FailoverEngineLink> link_;
};

TEST_F(ReplicasTest, OnlyTheLeadingReplicasEngineAdmitsSlurmJobs) {
  a_.Say(false);  // A stands by, B leads; the adapter tries A first
  b_.Say(true);
  slurm_.state.jobs = {HeldJob(1, 1, 8)};
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(st.released, 1);
  EXPECT_EQ(link_->current(), b_.address());
  EXPECT_EQ(b_.Pods(), 1);  // the leader's engine holds the job it admitted
  EXPECT_EQ(a_.Pods(), 0);  // the standby's never saw the Slurm door
  // The standby's engine refuses the door outright, naming why.
  v1::AdmitRequest req;
  req.set_door(v1::SLURM);
  req.set_holder(acfg_.holder);
  v1::AdmitResponse resp;
  grpc::ClientContext ctx;
  const grpc::Status s = a_.stub->Admit(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("stands by"), std::string::npos) << s.error_message();
}

TEST_F(ReplicasTest, TheAdapterFollowsTheLeaseAndEachNewLeaderResyncsBeforeItAdmits) {
  a_.Say(true);
  b_.Say(false);
  slurm_.state.jobs = {HeldJob(1, 1, 8)};
  Reconciler r(acfg_, &slurm_, link_.get());
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  ASSERT_EQ(link_->current(), a_.address());
  JobRecord* one = slurm_.Find("1");
  ASSERT_EQ(one->priority, 1000u);
  one->state = JobState::kRunning;
  one->nodes = one->required_nodes;
  const std::vector<std::string> one_nodes = one->nodes;  // (`one` moves when jobs are added)

  // The lease moves to B. A's open Slurm stream is refused at its next message; the adapter moves
  // on and resyncs on B, which then knows job 1 runs before it admits job 2.
  a_.Say(false);
  b_.Say(true);
  slurm_.state.jobs.push_back(HeldJob(2, 1, 8));
  ReconcileStats st = r.ReconcileOnce();
  if (!st.admitted) st = r.ReconcileOnce();  // the pass that found A standing by
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(link_->current(), b_.address());
  EXPECT_EQ(b_.Pods(), 2);
  ASSERT_EQ(slurm_.Find("2")->priority, 1000u);
  EXPECT_NE(slurm_.Find("2")->required_nodes, one_nodes);  // not onto job 1's GPUs
  EXPECT_TRUE(a_.engine->Stats().awaiting_doors.empty());  // A stands by: it awaits no door

  // Back to A, which stood by meanwhile: what it knew of Slurm is stale (job 2 started since), so
  // it admits nothing before the adapter's resync there, and then knows job 2 too.
  slurm_.Find("2")->state = JobState::kRunning;
  slurm_.Find("2")->nodes = slurm_.Find("2")->required_nodes;
  b_.Say(false);
  a_.Say(true);
  slurm_.state.jobs.push_back(HeldJob(3, 2, 8));  // needs both free nodes
  st = r.ReconcileOnce();
  if (!st.admitted) st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(link_->current(), a_.address());
  EXPECT_EQ(a_.Pods(), 4);
  ASSERT_EQ(slurm_.Find("3")->priority, 1000u);
  for (const auto& n : slurm_.Find("3")->required_nodes) {
    EXPECT_NE(n, one_nodes.front());
    EXPECT_NE(n, slurm_.Find("2")->nodes.front());
  }
}

// A term is a Unix time from the scheduler's clock: once it passes without a renewal (a scheduler
// that hangs instead of exiting) the replica no longer serves the door. Before, the engine compared
// it with its steady clock (time since boot), so any term read as far in the future.
TEST_F(ReplicasTest, ATermThatLapsesWithoutARenewalEndsTheSlurmDoor) {
  a_.SayUntil(NowMs() + 300);
  b_.Say(false);
  slurm_.state.jobs = {HeldJob(1, 1, 8)};
  Reconciler r(acfg_, &slurm_, link_.get());
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  EXPECT_EQ(link_->current(), a_.address());
  EXPECT_TRUE(a_.service->Leading());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_FALSE(a_.service->Leading());
  slurm_.state.jobs.push_back(HeldJob(2, 1, 8));
  ReconcileStats st = r.ReconcileOnce();
  EXPECT_FALSE(st.admitted) << "A's term lapsed: neither engine serves the door";
  st = r.ReconcileOnce();
  EXPECT_FALSE(st.admitted);
  EXPECT_EQ(slurm_.Find("2")->priority, 0u);
}

TEST_F(ReplicasTest, BeforeItsSchedulerSaysTheEngineServesNoSlurmDoorAndAStandbyReportsNoWait) {
  slurm_.state.jobs = {HeldJob(1, 1, 8)};
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();  // neither scheduler has said: unknown is never "leading"
  EXPECT_FALSE(st.admitted);
  EXPECT_NE(st.status.ToString().find("has not said yet"), std::string::npos) << st.status.ToString();
  EXPECT_EQ(slurm_.Find("1")->priority, 0u);
  a_.Say(false);
  b_.Say(true);
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  // The standby waits for no door: its awaited doors (readyz, tidal_door_awaiting_resync) are none.
  EXPECT_TRUE(a_.engine->Stats().awaiting_doors.empty());
  EXPECT_TRUE(b_.engine->Stats().awaiting_doors.empty());
}

}  // namespace
}  // namespace tidal::slurm
