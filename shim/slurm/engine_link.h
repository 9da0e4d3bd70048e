// EngineLink: tidal-engine as tidal-slurm uses it - one Sync stream (door SLURM, this adapter's
// holder, one message in flight: each Send waits for its ack) and the unary calls Admit, Explain,
// Disruptions and Evicted, over gRPC.
// A failed Send closes the stream; the next Send opens a new one and must be a resync (the engine
// refuses anything else as the first message). A stream the engine refused because another
// holder has the door returns that error (ABORTED) and keeps nothing.
//
// Threading: one caller thread (the reconcile loop).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/api/status.h"
#include "server/grpc_client_tls.h"
#include "tidal/v1/engine.pb.h"

namespace tidal::slurm {

class EngineLink {
 public:
  virtual ~EngineLink() = default;
  virtual Status Send(const v1::SyncRequest& req, v1::SyncAck* ack) = 0;
  virtual Status Admit(const v1::AdmitRequest& req, v1::AdmitResponse* out) = 0;
  virtual Status Explain(const std::string& workload, std::string* text) = 0;
  // The engine's one disruption path (proto: Disruptions, Evicted). An engine without the
  // Disruptions RPC (older: UNIMPLEMENTED) answers an empty list, not an error. Evicted fails when
  // the call fails or the engine's status is not SUCCESS.
  virtual Status Disruptions(const v1::DisruptionsRequest& req, v1::DisruptionsResponse* out) = 0;
  virtual Status Evicted(const v1::EvictedRequest& req) = 0;
  virtual void Close() = 0;
  virtual bool open() const = 0;
};

// rpc_timeout_ms bounds each unary call and each ack wait. tls: mutual TLS (server/grpc_client_tls.h;
// without it a non-loopback TCP address is refused unless tls.insecure). Errors name the config field.
StatusOr<std::unique_ptr<EngineLink>> DialGrpcEngineLink(const std::string& address, const ClientTlsOptions& tls,
                                                         int64_t rpc_timeout_ms = 10000);
// Plaintext, no address check: tests and benchmarks on loopback.
std::unique_ptr<EngineLink> NewGrpcEngineLink(const std::string& address, int64_t rpc_timeout_ms = 10000);

}  // namespace tidal::slurm
