// See grpc_engine.h. Threading: single-threaded.
#include "cmd/tidalctl/grpc_engine.h"

#include "server/grpc_client_tls.h"

namespace tidal::cli {

std::vector<std::string> EngineFlagNames() {
  return {"--engine", "--tls-ca", "--tls-cert", "--tls-key", "--tls-server-name", "--insecure"};
}

std::string EngineAddress(const Flags& flags) { return flags.Get("--engine", "unix:///tmp/tidal-engine.sock"); }

StatusOr<std::unique_ptr<v1::Engine::Stub>> EngineStub(const Flags& flags) {
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
