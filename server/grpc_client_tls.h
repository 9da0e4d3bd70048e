// The client side of the engine's gRPC security (tidal-slurm, test drivers): a channel to
// tidal-engine, plaintext for a unix socket or a loopback address, mutual TLS when CA, certificate
// and key are given. With TLS the three files are reloaded (gRPC's FileWatcherCertificateProvider)
// every refresh_seconds: new connections use the new ones. The server's certificate must be signed
// by the CA and name server_name (default: the address's host; "localhost" for a unix socket).
// Without TLS a TCP address that is not loopback is refused unless insecure is set.
//
// Threading: DialEngine is safe to call from any thread; the provider reloads on a gRPC thread.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "core/api/status.h"

namespace tidal {

struct ClientTlsOptions {
  std::string ca, cert, key;  // PEM files: all three or none
  std::string server_name;    // the name the engine's certificate must carry ("" = the address's host)
  bool insecure = false;      // allow plaintext to a non-loopback TCP address
  unsigned refresh_seconds = 10;
  bool enabled() const { return !ca.empty() || !cert.empty() || !key.empty(); }
};

// The channel credentials DialEngine uses (one certificate provider: every channel made with them
// sees the reloaded files on its next connection). server_name is applied by DialEngine (a channel
// argument).
StatusOr<std::shared_ptr<grpc::ChannelCredentials>> EngineChannelCredentials(const std::string& address,
                                                                             const ClientTlsOptions& tls,
                                                                             const std::string& field_prefix = "engineTls.",
                                                                             const std::string& insecure_field = "engineInsecure");

// field_prefix and insecure_field name the options in errors (tidal-slurm's config: engineTls.ca,
// engineInsecure, said "engineInsecure: true"; a flag such as "--insecure" is said "--insecure true").
StatusOr<std::shared_ptr<grpc::Channel>> DialEngine(const std::string& address, const ClientTlsOptions& tls,
                                                    const std::string& field_prefix = "engineTls.",
                                                    const std::string& insecure_field = "engineInsecure",
                                                    grpc::ChannelArguments args = {});

}  // namespace tidal
