// A gRPC channel to tidal-engine, plaintext or mutual TLS (see grpc_client_tls.h).
#include "server/grpc_client_tls.h"

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>

#include "server/grpc_listener.h"
#include "server/pem_check.h"

namespace tidal {

StatusOr<std::shared_ptr<grpc::ChannelCredentials>> EngineChannelCredentials(const std::string& address,
                                                                             const ClientTlsOptions& tls,
                                                                             const std::string& field_prefix,
                                                                             const std::string& insecure_field) {
  const bool is_unix = !UnixSocketPath(address).empty();
  if (!tls.enabled()) {
    if (!is_unix && !IsLoopbackAddress(address) && !tls.insecure) {
      // A command-line flag takes its value after a space (--insecure true), a config field after a colon.
      const std::string insecure = insecure_field + (insecure_field.rfind("--", 0) == 0 ? " true" : ": true");
      return Status::Error("engine address " + address + " is not a loopback address: give " + field_prefix + "ca, " +
                           field_prefix + "cert and " + field_prefix + "key (mutual TLS), or " + insecure +
                           " to send plaintext gRPC over the network anyway");
    }
    return grpc::InsecureChannelCredentials();
  }
  if (tls.ca.empty() || tls.cert.empty() || tls.key.empty()) {
    return Status::Error(field_prefix + "ca, " + field_prefix + "cert and " + field_prefix + "key: give all three or none");
  }
  if (tls.refresh_seconds == 0) return Status::Error(field_prefix + ": refresh interval must be at least 1 second");
  if (Status s = CheckCertificateFile(tls.ca, field_prefix + "ca"); !s.ok()) return s;
  if (Status s = CheckCertificatePair(tls.cert, tls.key, field_prefix + "cert", field_prefix + "key"); !s.ok()) return s;
  auto provider =
      std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(tls.key, tls.cert, tls.ca, tls.refresh_seconds);
  grpc::experimental::TlsChannelCredentialsOptions opts;
  opts.set_certificate_provider(provider);
  opts.watch_root_certs();
  opts.watch_identity_key_cert_pairs();
  opts.set_verify_server_certs(true);
  opts.set_certificate_verifier(std::make_shared<grpc::experimental::HostNameCertificateVerifier>());
  auto creds = grpc::experimental::TlsCredentials(opts);
  if (!creds) return Status::Error(field_prefix + ": gRPC refused the TLS channel options");
  return creds;
}

StatusOr<std::shared_ptr<grpc::Channel>> DialEngine(const std::string& address, const ClientTlsOptions& tls,
                                                    const std::string& field_prefix, const std::string& insecure_field,
                                                    grpc::ChannelArguments args) {
  auto creds = EngineChannelCredentials(address, tls, field_prefix, insecure_field);
  if (!creds.ok()) return creds.status();
  if (tls.enabled() && !tls.server_name.empty()) args.SetSslTargetNameOverride(tls.server_name);
  return grpc::CreateCustomChannel(address, *creds, args);
}

}  // namespace tidal
