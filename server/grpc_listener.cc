// tidal-engine's gRPC listener (see grpc_listener.h). Threading: main thread only (umask).
#include "server/grpc_listener.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <grpc/grpc.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include "server/pem_check.h"

namespace tidal {

StatusOr<unsigned> ParseSocketMode(const std::string& text) {
  if (text.empty() || text.size() > 4 || text.find_first_not_of("01234567") != std::string::npos) {
    return Status::Error("--socket-mode: \"" + text + "\" is not an octal mode like 0660");
  }
  const unsigned mode = static_cast<unsigned>(std::stoul(text, nullptr, 8));
  if (mode > 0777) return Status::Error("--socket-mode: " + text + " is above 0777 (no setuid, setgid or sticky bits)");
  if ((mode & 0600) != 0600) return Status::Error("--socket-mode: " + text + " must let the owner read and write (0600)");
  return mode;
}

std::string UnixSocketPath(const std::string& address) {
  if (address.rfind("unix://", 0) == 0) return address.substr(7);
  if (address.rfind("unix:", 0) == 0) return address.substr(5);
  return "";
}

bool IsLoopbackAddress(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon + 1 == host_port.size()) return false;
  std::string host = host_port.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost" || host == "::1") return true;
  // 127.0.0.0/8, written as four decimal parts.
  if (host.rfind("127.", 0) != 0) return false;
  int parts = 0;
  size_t pos = 0;
  while (pos <= host.size()) {
    const size_t dot = host.find('.', pos);
    const std::string part = host.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (part.empty() || part.size() > 3 || part.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(part) > 255) {
      return false;
    }
    ++parts;
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return parts == 4;
}

namespace {

// Whether a process accepts connections on the unix socket at path (connect succeeds). A socket
// file left by a process that exited refuses the connection (ECONNREFUSED): stale.
bool SocketHasListener(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  const bool live = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return live;
}

}  // namespace

Status CheckSocketDirectory(const std::string& socket_path) {
  namespace fs = std::filesystem;
  if (socket_path.empty()) return Status::Error("--listen: the unix socket path is empty");
  if (socket_path.size() >= 108) {  // sizeof(sockaddr_un::sun_path)
    return Status::Error("--listen: unix socket path " + socket_path + " is longer than 107 bytes");
  }
  fs::path dir = fs::path(socket_path).parent_path();
  if (dir.empty()) dir = ".";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::Error("--listen: socket directory " + dir.string() + ": " + std::strerror(errno));
    if (::mkdir(dir.c_str(), 0750) != 0 || ::chmod(dir.c_str(), 0750) != 0) {  // chmod: whatever the umask
      return Status::Error("--listen: cannot create socket directory " + dir.string() + ": " + std::strerror(errno));
    }
    if (::stat(dir.c_str(), &st) != 0) return Status::Error("--listen: socket directory " + dir.string() + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return Status::Error("--listen: " + dir.string() + " (the socket's directory) is not a directory");
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return Status::Error("--listen: socket directory " + dir.string() + " is owned by uid " + std::to_string(st.st_uid) +
                         ", not by this user (uid " + std::to_string(::geteuid()) +
                         ") or root: its owner could replace the socket");
  }
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return Status::Error("--listen: socket directory " + dir.string() +
                         " is world-writable without the sticky bit: any local user could replace the socket "
                         "(use a directory of mode 0750, or 1777 like /tmp)");
  }
  // A stale socket from an earlier run is removed; anything else there is not ours to delete, and
  // neither is a socket a live process still listens on (a second engine started by mistake would
  // take the address from the first: new clients would reach it, the first would serve no one).
  struct stat sst {};
  if (::lstat(socket_path.c_str(), &sst) == 0) {
    if (!S_ISSOCK(sst.st_mode)) {
      return Status::Error("--listen: " + socket_path + " exists and is not a socket (refusing to remove it)");
    }
    if (SocketHasListener(socket_path)) {
      return Status::Error("--listen: another process is listening on " + socket_path +
                           " (another tidal-engine?); stop it or choose another --listen");
    }
    if (::unlink(socket_path.c_str()) != 0) {
      return Status::Error("--listen: cannot remove the stale socket " + socket_path + ": " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const ListenOptions& opts) {
  const bool is_unix = !UnixSocketPath(opts.address).empty();
  if (!opts.tls()) {
    if (!is_unix && !IsLoopbackAddress(opts.address) && !opts.insecure) {
      return Status::Error("--listen: " + opts.address +
                           " is not a loopback address: give --tls-cert, --tls-key and --tls-client-ca (mutual TLS), "
                           "or --insecure=true to serve plaintext gRPC to the network anyway");
    }
    return grpc::InsecureServerCredentials();
  }
  if (opts.tls_cert.empty() || opts.tls_key.empty() || opts.tls_client_ca.empty()) {
    return Status::Error("--tls-cert, --tls-key and --tls-client-ca: give all three (mutual TLS) or none");
  }
  if (opts.tls_refresh_seconds == 0) return Status::Error("TLS refresh interval must be at least 1 second");
  if (Status s = CheckCertificatePair(opts.tls_cert, opts.tls_key, "--tls-cert", "--tls-key"); !s.ok()) return s;
  if (Status s = CheckCertificateFile(opts.tls_client_ca, "--tls-client-ca"); !s.ok()) return s;
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      opts.tls_key, opts.tls_cert, opts.tls_client_ca, opts.tls_refresh_seconds);
  grpc::experimental::TlsServerCredentialsOptions tls(provider);
  tls.watch_root_certs();
  tls.watch_identity_key_cert_pairs();
  tls.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  auto creds = grpc::experimental::TlsServerCredentials(tls);
  if (!creds) return Status::Error("--tls-cert: gRPC refused the TLS server options");
  return creds;
}

namespace {

// Sets the umask for one scope (the socket file is created by bind with mode 0777 & ~umask).
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  mode_t old_;
};

Status SecureSocketFile(const std::string& path, unsigned mode) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Status::Error("--listen: socket " + path + " missing after bind: " + std::strerror(errno));
  if (!S_ISSOCK(st.st_mode)) return Status::Error("--listen: " + path + " is not a socket after bind");
  if (st.st_uid != ::geteuid()) {
    return Status::Error("--listen: socket " + path + " is owned by uid " + std::to_string(st.st_uid) +
                         ", not by this process (uid " + std::to_string(::geteuid()) + ")");
  }
  if (::chmod(path.c_str(), mode) != 0) return Status::Error("--listen: chmod " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<grpc::Server>> StartGrpcServer(grpc::ServerBuilder& builder, const ListenOptions& opts,
                                                        int* bound_port) {
  *bound_port = 0;
  if (opts.socket_mode > 0777 || (opts.socket_mode & 0600) != 0600) {
    return Status::Error("--socket-mode: must be at most 0777 and let the owner read and write");
  }
  const std::string path = UnixSocketPath(opts.address);
  if (path.empty()) {
    if (opts.address.rfind(':') == std::string::npos || opts.address.find("://") != std::string::npos) {
      return Status::Error("--listen: \"" + opts.address + "\" is neither unix:///PATH nor HOST:PORT");
    }
  } else if (Status s = CheckSocketDirectory(path); !s.ok()) {
    return s;
  }
  auto creds = MakeServerCredentials(opts);
  if (!creds.ok()) return creds.status();
  int port = 0;  // gRPC reports 1 for a unix socket
  // gRPC sets SO_REUSEPORT on TCP listeners by default: a second engine on the same HOST:PORT would
  // bind too and take half the connections. Off: the second bind fails (restarts still rebind at
  // once: SO_REUSEADDR stays).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(opts.address, *creds, &port);
  std::unique_ptr<grpc::Server> server;
  {
    ScopedUmask mask(static_cast<mode_t>(~opts.socket_mode & 0777));
    server = builder.BuildAndStart();
  }
  if (!server || (path.empty() && port == 0)) return Status::Error("--listen: cannot listen on " + opts.address + " (in use, or not a local address)");
  *bound_port = path.empty() ? port : 0;
  if (!path.empty()) {
    if (Status s = SecureSocketFile(path, opts.socket_mode); !s.ok()) {
      server->Shutdown();
      return s;
    }
  }
  return server;
}

}  // namespace tidal
