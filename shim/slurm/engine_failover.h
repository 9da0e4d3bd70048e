// FailoverEngineLink: tidal-slurm's engine at several addresses, the replicas of one Tidal
// deployment (deploy/base runs two, each an engine beside its own tidal-scheduler, one scheduler
// lease). Only the engine whose scheduler leads serves the Slurm door; the others refuse it
// (FAILED_PRECONDITION, engine/door_lease.h "Replicas"). So:
//   - a Send that opens a stream (a resync) tries each address once, from the current one on,
//     and stays on the first that takes it: the adapter finds the leader within one pass;
//   - any other failed call (a stream cut mid-snapshot, a refused Admit: the replica stood by,
//     the engine went away) closes the current stream and moves to the next address, so the
//     reconciler's next pass resyncs there (its link is no longer open).
// With one address it behaves exactly as that address's link.
//
// Threading: one caller thread (the reconcile loop), as every EngineLink.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shim/slurm/engine_link.h"

namespace tidal::slurm {

class FailoverEngineLink final : public EngineLink {
 public:
  // addresses[i] names links[i] in errors and logs; both non-empty, of the same length.
  FailoverEngineLink(std::vector<std::string> addresses, std::vector<std::unique_ptr<EngineLink>> links);

  Status Send(const v1::SyncRequest& req, v1::SyncAck* ack) override;
  Status Admit(const v1::AdmitRequest& req, v1::AdmitResponse* out) override;
  Status Explain(const std::string& workload, std::string* text) override;
  Status Disruptions(const v1::DisruptionsRequest& req, v1::DisruptionsResponse* out) override;
  Status Evicted(const v1::EvictedRequest& req) override;
  void Close() override;
  bool open() const override;

  const std::string& current() const { return addresses_[cur_]; }  // the address in use

 private:
  Status Moved(Status s);  // a failed call: close, go to the next address, name the one that failed
  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<EngineLink>> links_;
  size_t cur_ = 0;
};

// One link per address (DialGrpcEngineLink each), wrapped in a FailoverEngineLink when there are
// several. Errors name the config field and the address.
StatusOr<std::unique_ptr<EngineLink>> DialEngineLinks(const std::vector<std::string>& addresses,
                                                      const ClientTlsOptions& tls, int64_t rpc_timeout_ms = 10000);

}  // namespace tidal::slurm
