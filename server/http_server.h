// HttpServer: the HTTP endpoints of tidal-engine and tidal-slurm (/metrics, /healthz, /readyz, the
// explain API) on cpp-httplib (Debian's libcpp-httplib-dev 0.11).
//
// What it adds to cpp-httplib: GET-only routes whose handlers get (path, raw query); a worker pool,
// read/write timeouts, one request per connection and a request size limit (Options); an access
// policy per route:
//   - Access::kPublic: anyone who can reach the port (metrics and health, for Prometheus and probes);
//   - Access::kPrivate: routes that reveal workloads (explain, queues, config). Served to clients
//     on the loopback interface (in a pod that is the pod itself and `kubectl port-forward`, whose
//     callers the API server has authenticated and authorised), or to a client presenting
//     "Authorization: Bearer <token>" equal to the token file's content (Options::token_file,
//     re-read when it changes, compared in constant time). Anyone else gets 403 (no token) or 401.
// Errors are plain text: 404 unknown path, 405 a method other than GET/HEAD, 413 a declared body
// over max_body_bytes whatever the method (GET included; a chunked body counts as over), 414 a URI
// over 8 KiB, 408 a client too slow to send its request (cpp-httplib closes it at read_timeout).
// No route reads a body: a request that carries one is answered with "Connection: close" and its
// connection is shut down after the answer, so its unread body is never taken for a request.
//
// Threading model: cpp-httplib's accept loop runs on one thread owned by the server (started by
// Start, joined by Stop); requests run on Options::workers pool threads at once, so a slow client
// holds one worker, never the others. Handlers therefore run concurrently and must be thread-safe
// with respect to what they read. Handle() must be called before Start(). The token cache has its
// own mutex.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/api/status.h"

namespace httplib {
class Server;
}

namespace tidal {

struct HttpResponse {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  enum class Access { kPublic, kPrivate };
  struct Options {
    int workers = 4;
    std::chrono::milliseconds read_timeout{5000};
    std::chrono::milliseconds write_timeout{5000};
    size_t max_body_bytes = 4096;  // a request declaring a bigger body, any method, is refused (413)
    std::string token_file;        // bearer token for kPrivate routes from other hosts ("" = loopback only)
    // Told (once per distinct error) when a changed token file cannot be loaded: the last good
    // token stays in force, and without this an empty or short rotated file went unnoticed.
    std::function<void(const std::string&)> on_token_error;
    // Loopback clients reach kPrivate routes without a token. Turn off when a proxy on the same
    // host forwards outside traffic (then every client needs the token).
    bool trust_loopback = true;
  };
  using Handler = std::function<HttpResponse(const std::string& path, const std::string& query)>;

  HttpServer();
  explicit HttpServer(Options options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void Handle(const std::string& path, Handler h, Access access = Access::kPublic);
  // The percent-decoded value of `key` in a raw query string ("" when absent; the first if repeated).
  static std::string QueryParam(const std::string& query, const std::string& key);
  // An address as Start takes it: "HOST:PORT" (HOST empty for all interfaces, or [IPv6]; PORT
  // 0-65535). Ok, or why not (without a field name: callers name theirs); host and port when asked.
  static Status CheckAddress(const std::string& addr, std::string* host = nullptr, int* port = nullptr);
  // addr: "HOST:PORT" (port 0 picks a free one; see port()). A token_file that cannot be read is
  // an error here, not a silent fallback.
  Status Start(const std::string& addr);
  void Stop();
  int port() const { return port_; }

 private:
  struct Route {
    Handler handler;
    Access access;
  };
  // 0 allowed, else the HTTP status refusing it (401, 403).
  int Authorize(const std::string& remote_addr, const std::string& authorization);
  Status LoadToken();  // token_mu_ held

  Options options_;
  std::map<std::string, Route> routes_;
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex token_mu_;  // guards the token cache below
  std::string token_;
  std::filesystem::file_time_type token_mtime_{};
  std::string token_error_;  // the last load error reported (on_token_error), "" after a good load
};

}  // namespace tidal
