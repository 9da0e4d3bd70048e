// EngineService: the gRPC edge of tidal-engine, and the only place that sees protobuf types.
// Each handler validates its request (INVALID_ARGUMENT naming the field), converts it to plain
// domain types, calls the Engine and converts back. Scheduling outcomes travel as tidal.v1.Status
// values inside OK responses; gRPC errors mean a malformed request or an internal failure.
// Threading: gRPC's synchronous server calls handlers on its own thread pool; all state lives in
// Engine, which serialises access itself, and DoorLeases (internally locked). A Sync stream is
// handled by one thread for its lifetime.
#pragma once

#include <functional>
#include <mutex>

#include <grpcpp/grpcpp.h>

#include "engine/door_lease.h"
#include "engine/engine.h"
#include "tidal/v1/engine.grpc.pb.h"

namespace tidal {

class EngineService final : public v1::Engine::Service {
 public:
  // With `metrics`, every method's request counter starts at 0 for code OK.
  explicit EngineService(Engine& engine, EngineMetrics* metrics = nullptr);

  grpc::Status Sync(grpc::ServerContext* ctx, grpc::ServerReaderWriter<v1::SyncAck, v1::SyncRequest>* stream) override;
  grpc::Status CheckPod(grpc::ServerContext* ctx, const v1::PodRef* req, v1::CheckPodResponse* resp) override;
  grpc::Status PlanPod(grpc::ServerContext* ctx, const v1::PodRef* req, v1::PlanResponse* resp) override;
  grpc::Status Reserve(grpc::ServerContext* ctx, const v1::ReserveRequest* req, v1::ReserveResponse* resp) override;
  grpc::Status Unreserve(grpc::ServerContext* ctx, const v1::PodRef* req, v1::UnreserveResponse* resp) override;
  grpc::Status Permit(grpc::ServerContext* ctx, const v1::PodRef* req, v1::PermitResponse* resp) override;
  grpc::Status Preempt(grpc::ServerContext* ctx, const v1::PodRef* req, v1::PreemptResponse* resp) override;
  grpc::Status Bound(grpc::ServerContext* ctx, const v1::ReserveRequest* req, v1::BoundResponse* resp) override;
  grpc::Status Explain(grpc::ServerContext* ctx, const v1::ExplainRequest* req, v1::ExplainResponse* resp) override;
  grpc::Status Overdue(grpc::ServerContext* ctx, const v1::OverdueRequest* req, v1::OverdueResponse* resp) override;
  grpc::Status NodeRefused(grpc::ServerContext* ctx, const v1::NodeRefusal* req, v1::NodeRefusedResponse* resp) override;
  // Preemption: the shim's report of the evictions it did and the victims PDBs protect.
  grpc::Status Evicted(grpc::ServerContext* ctx, const v1::EvictedRequest* req, v1::EvictedResponse* resp) override;
  // The Slurm door: decisions (fenced by the door's Sync lease) and cross-door activations.
  grpc::Status Admit(grpc::ServerContext* ctx, const v1::AdmitRequest* req, v1::AdmitResponse* resp) override;
  grpc::Status TakeActivations(grpc::ServerContext* ctx, const v1::TakeActivationsRequest* req,
                               v1::TakeActivationsResponse* resp) override;
  // The disruption path: what a door should do now (notice / evict).
  grpc::Status Disruptions(grpc::ServerContext* ctx, const v1::DisruptionsRequest* req,
                           v1::DisruptionsResponse* resp) override;
  // Gang-aware drains (tidalctl drain).
  grpc::Status Drain(grpc::ServerContext* ctx, const v1::DrainRequest* req, v1::DrainResponse* resp) override;
  // Rolling-upgrade waves (tidalctl waves).
  grpc::Status PlanWaves(grpc::ServerContext* ctx, const v1::WavesRequest* req, v1::WavesResponse* resp) override;
  DoorLeases& leases() { return leases_; }
  // frontDoors names kubernetes: until its tidal-scheduler says whether it leads, this engine does
  // not serve the Slurm door (engine/door_lease.h, "Replicas").
  void ExpectKubernetesDoor(bool expected);
  bool Leading();  // this replica's scheduler leads now, or runs without leader election

 private:
  // Decorates a handler: request count by method and code, latency by method.
  // Counts the call by method and code and observes its latency; `latency` false for a stream that
  // observes its own (Sync: each batch applied, not the stream's lifetime).
  grpc::Status Observe(const char* method, const std::function<grpc::Status()>& body, bool latency = true);
  void RefreshServedDoors();  // tells the engine whether this replica serves the Slurm door now
  Engine& engine_;
  EngineMetrics* metrics_;
  DoorLeases leases_;  // one Sync holder per front door
  std::mutex served_mu_;  // RefreshServedDoors (taken before leases_' and the engine's locks)
};

// Conversions (exposed for tests).
void ToProto(const Status& s, v1::Status* out);
NodeInfo FromProto(const v1::Node& n);
PodInfo FromProto(const v1::Pod& p);
// One Sync message as the batch the engine applies, its pods and nodes belonging to `door`.
SyncBatch FromProto(const v1::SyncRequest& req, FrontDoor door);

}  // namespace tidal
