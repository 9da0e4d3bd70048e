// How tidal-engine's gRPC server listens, and the security checks around it (docs/operations.md,
// "Security"):
//
//  - unix:///PATH: before binding, the socket's directory must not be world-writable without the
//    sticky bit and must be owned by this user or root (another user could replace the socket and
//    impersonate the engine); a missing directory (its parent existing) is created with mode 0750.
//    A stale socket is removed; a socket another process still listens on, or any other kind of
//    file at PATH, is refused, never deleted. The socket
//    is created with the requested mode (default 0660, umask set around the bind so that it never
//    exists with a wider one) and its owner checked after the bind.
//  - HOST:PORT: with --tls-cert, --tls-key and --tls-client-ca the listener is mutual TLS: the
//    client must present a certificate signed by the client CA. The three files are reloaded
//    (gRPC's FileWatcherCertificateProvider) every tls_refresh_seconds; new connections use the new
//    ones, open connections keep theirs. Replace the files atomically (rename, or a symlink swap
//    as Kubernetes does for Secret volumes); a key and certificate read in the middle of a
//    non-atomic update do not match, and the previous pair stays in use until the next refresh.
//    Without TLS a TCP listener is allowed only on a loopback address, unless insecure is set.
//    SO_REUSEPORT is off: a HOST:PORT another process listens on is refused.
//
// Threading: StartGrpcServer changes the process umask for the duration of the bind: call it from
// the main thread before other threads create files. The certificate provider reloads the files on
// a gRPC-owned thread.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "core/api/status.h"

namespace tidal {

struct ListenOptions {
  std::string address;  // unix:///PATH (or unix:PATH) or HOST:PORT
  std::string tls_cert, tls_key, tls_client_ca;  // PEM files: all three or none
  bool insecure = false;                         // allow plaintext TCP on a non-loopback address
  unsigned socket_mode = 0660;                   // of a unix socket
  unsigned tls_refresh_seconds = 10;             // how often the TLS files are re-read
  bool tls() const { return !tls_cert.empty() || !tls_key.empty() || !tls_client_ca.empty(); }
};

// "0660" (octal) -> 0660. Errors name --socket-mode: not octal, above 0777, or without owner rw.
StatusOr<unsigned> ParseSocketMode(const std::string& text);

// The path of a unix:///PATH or unix:PATH address; "" for anything else.
std::string UnixSocketPath(const std::string& address);

// HOST:PORT where HOST is localhost, 127.x.y.z, ::1 or [::1]. False for 0.0.0.0, [::], other
// hosts, and addresses without a port.
bool IsLoopbackAddress(const std::string& host_port);

// The unix socket's directory: exists (or is created, mode 0750, when only the last component is
// missing), is a directory, owned by this user or root, not world-writable without the sticky bit.
// A stale socket at the path is removed; a live one (a process accepts connections on it) is refused.
Status CheckSocketDirectory(const std::string& socket_path);

// Server credentials for opts: mutual TLS with reloading files, or insecure (refused for TCP on a
// non-loopback address unless opts.insecure). Validates that the files exist and hold PEM.
StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const ListenOptions& opts);

// Checks opts, adds the listening port to builder (services and other options already set), builds
// and starts the server, then secures a unix socket (mode, owner). *bound_port: the TCP port (0 for
// a unix socket). Every failure is an error naming the flag or path; the server is shut down again
// when a post-start check fails.
StatusOr<std::unique_ptr<grpc::Server>> StartGrpcServer(grpc::ServerBuilder& builder, const ListenOptions& opts,
                                                        int* bound_port);

}  // namespace tidal
