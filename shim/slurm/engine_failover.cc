// FailoverEngineLink (see engine_failover.h). Threading: one caller thread.
#include "shim/slurm/engine_failover.h"

namespace tidal::slurm {

FailoverEngineLink::FailoverEngineLink(std::vector<std::string> addresses, std::vector<std::unique_ptr<EngineLink>> links)
    : addresses_(std::move(addresses)), links_(std::move(links)) {}

Status FailoverEngineLink::Moved(Status s) {
  const std::string at = addresses_[cur_];
  links_[cur_]->Close();
  cur_ = (cur_ + 1) % links_.size();
  if (links_.size() == 1) return s;
  return Status::Error("engine " + at + ": " + s.Message() + " (next: " + addresses_[cur_] + ")");
}

Status FailoverEngineLink::Send(const v1::SyncRequest& req, v1::SyncAck* ack) {
  if (links_[cur_]->open() || !req.resync()) {
    Status s = links_[cur_]->Send(req, ack);
    return s.ok() ? s : Moved(std::move(s));
  }
  // Opening a stream: the first address that takes the door keeps it.
  std::string tried;
  for (size_t i = 0; i < links_.size(); ++i) {
    Status s = links_[cur_]->Send(req, ack);
    if (s.ok()) return s;
    if (links_.size() == 1) return s;
    tried += (tried.empty() ? "" : "; ") + addresses_[cur_] + ": " + s.Message();
    links_[cur_]->Close();
    cur_ = (cur_ + 1) % links_.size();
  }
  return Status::Error("no engine took the slurm door (" + tried + ")");
}

Status FailoverEngineLink::Admit(const v1::AdmitRequest& req, v1::AdmitResponse* out) {
  Status s = links_[cur_]->Admit(req, out);
  return s.ok() ? s : Moved(std::move(s));
}

Status FailoverEngineLink::Explain(const std::string& workload, std::string* text) {
  return links_[cur_]->Explain(workload, text);  // read-only: a failure moves nothing
}

Status FailoverEngineLink::Disruptions(const v1::DisruptionsRequest& req, v1::DisruptionsResponse* out) {
  Status s = links_[cur_]->Disruptions(req, out);
  return s.ok() ? s : Moved(std::move(s));
}

Status FailoverEngineLink::Evicted(const v1::EvictedRequest& req) {
  Status s = links_[cur_]->Evicted(req);
  return s.ok() ? s : Moved(std::move(s));
}

void FailoverEngineLink::Close() {
  for (auto& l : links_) l->Close();
}

bool FailoverEngineLink::open() const { return links_[cur_]->open(); }

StatusOr<std::unique_ptr<EngineLink>> DialEngineLinks(const std::vector<std::string>& addresses,
                                                      const ClientTlsOptions& tls, int64_t rpc_timeout_ms) {
  if (addresses.empty()) return Status::Error("engine: at least one address is required");
  std::vector<std::unique_ptr<EngineLink>> links;
  for (const auto& a : addresses) {
    auto l = DialGrpcEngineLink(a, tls, rpc_timeout_ms);
    if (!l.ok()) return Status::Error("engine " + a + ": " + l.status().Message());
    links.push_back(std::move(*l));
  }
  if (links.size() == 1) return std::move(links.front());
  return std::unique_ptr<EngineLink>(std::make_unique<FailoverEngineLink>(addresses, std::move(links)));
}

}  // namespace tidal::slurm
