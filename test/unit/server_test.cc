// The gRPC edge in-process: a real server on 127.0.0.1 and a real client stub.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/metrics/registry.h"
#include "engine/observability.h"
#include "server/service.h"

namespace tidal {
namespace {

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = std::move(Engine::Create(EngineConfig{})).value();
    service_ = std::make_unique<EngineService>(*engine_, &metrics_);
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(service_.get());
    server_ = b.BuildAndStart();
    ASSERT_NE(port_, 0);
    stub_ = v1::Engine::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port_), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { server_->Shutdown(); }
  std::unique_ptr<Engine> engine_;
  metrics::Registry registry_;
  EngineMetrics metrics_{registry_};
  std::unique_ptr<EngineService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Engine::Stub> stub_;
  int port_ = 0;
};

TEST_F(ServerTest, SyncThenPlanOverTheWire) {
  grpc::ClientContext ctx;
  auto stream = stub_->Sync(&ctx);
  v1::SyncRequest req;
  req.set_resync(true);
  auto* n = req.add_upsert_nodes();
  n->set_name("n0");
  n->set_ready(true);
  (*n->mutable_labels())["topology.tidal.dev/block"] = "b0";
  (*n->mutable_labels())["topology.tidal.dev/leaf"] = "l0";
  (*n->mutable_labels())["topology.tidal.dev/nvlink"] = "v0";
  n->mutable_capacity()->set_gpus(8);
  auto* p = req.add_upsert_pods();
  p->set_uid("u1");
  p->set_namespace_("ns");
  p->set_name("pod1");
  p->set_scheduler_name("tidal-scheduler");
  p->mutable_request()->set_gpus(2);
  ASSERT_TRUE(stream->Write(req));
  v1::SyncAck ack;
  ASSERT_TRUE(stream->Read(&ack));
  EXPECT_EQ(ack.engine_epoch(), engine_->epoch());
  EXPECT_EQ(ack.status().code(), v1::Status::SUCCESS);
  stream->WritesDone();
  ASSERT_TRUE(stream->Finish().ok());

  grpc::ClientContext c2;
  v1::PodRef ref;
  ref.set_uid("u1");
  v1::PlanResponse plan;
  ASSERT_TRUE(stub_->PlanPod(&c2, ref, &plan).ok());
  EXPECT_EQ(plan.status().code(), v1::Status::SUCCESS) << plan.status().DebugString();
  EXPECT_EQ(plan.node_name(), "n0");
}

// tidal_grpc_request_duration_seconds{method="Sync"} is one observation per batch applied: it was
// one per stream, when the stream ended, so a door's whole lifetime (past the largest bucket) was
// the only Sync latency an SRE ever saw.
TEST_F(ServerTest, SyncLatencyIsObservedPerBatchNotPerStream) {
  {
    grpc::ClientContext ctx;
    auto stream = stub_->Sync(&ctx);
    v1::SyncRequest req;
    req.set_resync(true);
    v1::SyncAck ack;
    ASSERT_TRUE(stream->Write(req));
    ASSERT_TRUE(stream->Read(&ack));
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // the door stays connected
    v1::SyncRequest delta;
    ASSERT_TRUE(stream->Write(delta));
    ASSERT_TRUE(stream->Read(&ack));
    stream->WritesDone();
    ASSERT_TRUE(stream->Finish().ok());
  }
  const std::string text = registry_.Render();  // the stream's handler returned before Finish did
  EXPECT_NE(text.find("tidal_grpc_request_duration_seconds_count{method=\"Sync\"} 2\n"), std::string::npos) << text;
  const std::string sum_key = "tidal_grpc_request_duration_seconds_sum{method=\"Sync\"} ";
  const auto at = text.find(sum_key);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_LT(std::stod(text.substr(at + sum_key.size())), 1.0) << "the stream's lifetime was observed";
  EXPECT_NE(text.find("tidal_grpc_requests_total{code=\"OK\",method=\"Sync\"} 1\n"), std::string::npos) << text;
}

TEST_F(ServerTest, FirstSyncMessageMustBeASnapshot) {
  grpc::ClientContext ctx;
  auto stream = stub_->Sync(&ctx);
  v1::SyncRequest req;  // resync = false
  ASSERT_TRUE(stream->Write(req));
  stream->WritesDone();
  grpc::Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("resync"), std::string::npos);
}

TEST_F(ServerTest, MissingUidIsInvalidArgumentNamingTheField) {
  grpc::ClientContext ctx;
  v1::PodRef ref;
  v1::PlanResponse resp;
  grpc::Status s = stub_->PlanPod(&ctx, ref, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "pod.uid: must be set");
}

TEST_F(ServerTest, UnknownPodIsUnschedulableNotACrash) {
  grpc::ClientContext ctx;
  v1::PodRef ref;
  ref.set_uid("nope");
  v1::PermitResponse resp;
  ASSERT_TRUE(stub_->Permit(&ctx, ref, &resp).ok());
  EXPECT_EQ(resp.status().code(), v1::Status::ERROR);
}

// FinishedJob.end reaches the engine as its class (engine/engine_runtime.cc); a record without
// one (an older door) is unknown, never completed.
TEST(SyncFromProto, AFinishedJobsEndIsCarried) {
  v1::SyncRequest req;
  auto* f = req.add_finished();
  f->set_gang("slurm/7");
  f->set_end(v1::FinishedJob::TIMEOUT);
  req.add_finished()->set_gang("slurm/8");
  req.add_finished()->set_end(v1::FinishedJob::PREEMPTED);
  const SyncBatch b = FromProto(req, FrontDoor::kSlurm);
  ASSERT_EQ(b.finished.size(), 3u);
  EXPECT_EQ(b.finished[0].end, WorkloadEnd::kTimeout);
  EXPECT_EQ(b.finished[1].end, WorkloadEnd::kUnknown);
  EXPECT_EQ(b.finished[2].end, WorkloadEnd::kDisrupted);
}

}  // namespace
}  // namespace tidal
