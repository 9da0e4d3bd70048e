// EngineLink over gRPC (see engine_link.h). Threading: one caller thread; the stream's reads and
// writes happen on it (a read waits for the ack of the message just written).
#include "shim/slurm/engine_link.h"

#include <chrono>

#include <grpcpp/grpcpp.h>

#include "tidal/v1/engine.grpc.pb.h"

namespace tidal::slurm {

namespace {

Status FromGrpc(const grpc::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  return Status::Error(what + ": " + std::to_string(static_cast<int>(s.error_code())) + " " + s.error_message());
}

class GrpcEngineLink final : public EngineLink {
 public:
  GrpcEngineLink(std::shared_ptr<grpc::Channel> channel, int64_t timeout_ms)
      : channel_(std::move(channel)),
        stub_(v1::Engine::NewStub(channel_)),
        timeout_ms_(timeout_ms) {}
  ~GrpcEngineLink() override { Close(); }

  Status Send(const v1::SyncRequest& req, v1::SyncAck* ack) override {
    if (!stream_) {
      if (!req.resync()) return Status::Error("engine Sync: the stream is closed; the next message must be a resync");
      ctx_ = std::make_unique<grpc::ClientContext>();
      stream_ = stub_->Sync(ctx_.get());
    }
    if (!stream_->Write(req)) return Broken("engine Sync: write failed");
    if (!stream_->Read(ack)) return Broken("engine Sync: the engine closed the stream");
    return Status::Ok();
  }

  Status Admit(const v1::AdmitRequest& req, v1::AdmitResponse* out) override {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
    return FromGrpc(stub_->Admit(&ctx, req, out), "engine Admit");
  }

  Status Explain(const std::string& workload, std::string* text) override {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
    v1::ExplainRequest req;
    req.set_workload(workload);
    v1::ExplainResponse resp;
    if (Status s = FromGrpc(stub_->Explain(&ctx, req, &resp), "engine Explain"); !s.ok()) return s;
    *text = resp.text();
    return Status::Ok();
  }

  Status Disruptions(const v1::DisruptionsRequest& req, v1::DisruptionsResponse* out) override {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
    const grpc::Status s = stub_->Disruptions(&ctx, req, out);
    if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      out->Clear();  // an older engine: no disruption path, nothing to do
      return Status::Ok();
    }
    return FromGrpc(s, "engine Disruptions");
  }

  Status Evicted(const v1::EvictedRequest& req) override {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
    v1::EvictedResponse resp;
    if (Status s = FromGrpc(stub_->Evicted(&ctx, req, &resp), "engine Evicted"); !s.ok()) return s;
    if (resp.status().code() != v1::Status::SUCCESS) {
      return Status::Error("engine Evicted: " + (resp.status().reasons().empty() ? std::string("refused") : resp.status().reasons(0)));
    }
    return Status::Ok();
  }

  void Close() override {
    if (!stream_) return;
    stream_->WritesDone();
    grpc::Status s = stream_->Finish();
    (void)s;
    stream_.reset();
    ctx_.reset();
  }

  bool open() const override { return stream_ != nullptr; }

 private:
  Status Broken(const std::string& what) {
    // The server's status says why (e.g. ABORTED: another holder has the door).
    stream_->WritesDone();
    grpc::Status s = stream_->Finish();
    stream_.reset();
    ctx_.reset();
    return Status::Error(what + (s.ok() ? std::string() : ": " + std::to_string(static_cast<int>(s.error_code())) + " " + s.error_message()));
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Engine::Stub> stub_;
  int64_t timeout_ms_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SyncRequest, v1::SyncAck>> stream_;
};

}  // namespace

StatusOr<std::unique_ptr<EngineLink>> DialGrpcEngineLink(const std::string& address, const ClientTlsOptions& tls,
                                                         int64_t rpc_timeout_ms) {
  auto channel = DialEngine(address, tls, "engineTls.", "engineInsecure");
  if (!channel.ok()) return channel.status();
  return std::unique_ptr<EngineLink>(std::make_unique<GrpcEngineLink>(std::move(*channel), rpc_timeout_ms));
}

std::unique_ptr<EngineLink> NewGrpcEngineLink(const std::string& address, int64_t rpc_timeout_ms) {
  return std::make_unique<GrpcEngineLink>(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()),
                                          rpc_timeout_ms);
}

}  // namespace tidal::slurm
