// See grpc_engine.h. Threading: single-threaded.
#include "cmd/tidalctl/grpc_engine.h"

#include <algorithm>

#include "server/grpc_client_tls.h"

namespace tidal::cli {

std::vector<std::string> EngineFlagNames() {
  return {"--engine", "--tls-ca", "--tls-cert", "--tls-key", "--tls-server-name", "--insecure"};
}

std::string EngineAddress(const Flags& flags) { return flags.Get("--engine", "unix:///tmp/tidal-engine.sock"); }

Status CheckGrpcAddress(const std::string& address) {
  const auto sep = address.find("://");
  if (sep == std::string::npos) return Status::Ok();
  const std::string scheme = address.substr(0, std::min<size_t>(sep, 32));
  if (scheme == "unix" || scheme == "dns") return Status::Ok();  // gRPC's own target schemes
  return Status::Error("--engine: expected unix:///PATH or HOST:PORT for the gRPC API (got an " + scheme +
                       ":// URL): drain and waves talk to tidal-engine's gRPC API (its --listen address, default "
                       "unix:///tmp/tidal-engine.sock), not to its HTTP port");
}

StatusOr<std::unique_ptr<v1::Engine::Stub>> EngineStub(const Flags& flags) {
  if (Status s = CheckGrpcAddress(EngineAddress(flags)); !s.ok()) return s;
  ClientTlsOptions tls;
  tls.ca = flags.Get("--tls-ca");
  tls.cert = flags.Get("--tls-cert");
  tls.key = flags.Get("--tls-key");
  tls.server_name = flags.Get("--tls-server-name");
  tls.insecure = flags.Get("--insecure", "false") == "true";
  auto channel = DialEngine(EngineAddress(flags), tls, "--tls-", "--insecure");
  if (!channel.ok()) return channel.status();
  return v1::Engine::NewStub(*channel);
}

}  // namespace tidal::cli
