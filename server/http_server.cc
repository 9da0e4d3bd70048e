#include "server/http_server.h"

#include <algorithm>
#include <cctype>
#include <httplib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tidal {
namespace {

// Loopback peers: 127.0.0.0/8, ::1 and IPv4-mapped loopback.
bool IsLoopback(const std::string& addr) {
  return addr.rfind("127.", 0) == 0 || addr == "::1" || addr.rfind("::ffff:127.", 0) == 0;
}

// Constant-time comparison of two secrets (length leaks, content does not).
bool SecretsEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
  return s.substr(b);
}

void Reply(httplib::Response& res, int code, const std::string& body) {
  res.status = code;
  res.set_content(body, "text/plain; charset=utf-8");
}

// The body a request declares: its Content-Length (0 when absent), SIZE_MAX when it cannot be
// known before it is read (Transfer-Encoding: chunked) or the length is not a number.
size_t DeclaredBody(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return SIZE_MAX;
  if (!req.has_header("Content-Length")) return 0;
  const std::string v = req.get_header_value("Content-Length");
  if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos) return SIZE_MAX;
  return static_cast<size_t>(std::strtoull(v.c_str(), nullptr, 10));
}

}  // namespace

HttpServer::HttpServer() : HttpServer(Options{}) {}
HttpServer::HttpServer(Options options) : options_(std::move(options)) {}
HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, Handler h, Access access) {
  routes_[path] = Route{std::move(h), access};
}

std::string HttpServer::QueryParam(const std::string& query, const std::string& key) {
  httplib::Params params;
  httplib::detail::parse_query_text(query, params);
  const auto it = params.find(key);
  return it == params.end() ? std::string() : it->second;
}

Status HttpServer::LoadToken() {
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(options_.token_file, ec);
  if (ec) return Status::Error("http token file " + options_.token_file + ": " + ec.message());
  if (!token_.empty() && mtime == token_mtime_) return Status::Ok();
  std::ifstream in(options_.token_file);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string token = Trimmed(ss.str());
  if (!in && !in.eof()) return Status::Error("http token file " + options_.token_file + ": cannot read");
  if (token.size() < 16) return Status::Error("http token file " + options_.token_file + ": token shorter than 16 bytes");
  token_ = token;
  token_mtime_ = mtime;
  return Status::Ok();
}

int HttpServer::Authorize(const std::string& remote_addr, const std::string& authorization) {
  if (options_.trust_loopback && IsLoopback(remote_addr)) return 0;
  if (options_.token_file.empty()) return 403;
  // The scheme is case-insensitive (RFC 9110 section 11.1): "Bearer", "bearer", "BEARER".
  constexpr std::string_view kBearer = "bearer ";
  if (authorization.size() < kBearer.size() ||
      !std::equal(kBearer.begin(), kBearer.end(), authorization.begin(),
                  [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); })) {
    return 401;
  }
  std::lock_guard<std::mutex> lock(token_mu_);
  // A token file being rewritten (rotation) keeps the last good token until the new one reads.
  if (Status s = LoadToken(); s.ok()) {
    token_error_.clear();
  } else if (s.Message() != token_error_) {
    token_error_ = s.Message();
    if (options_.on_token_error) {
      options_.on_token_error(token_error_ + (token_.empty() ? "; private routes refuse every token until it loads"
                                                             : "; the last good token stays in force"));
    }
  }
  if (token_.empty()) return 401;
  return SecretsEqual(authorization.substr(kBearer.size()), token_) ? 0 : 401;
}

Status HttpServer::CheckAddress(const std::string& addr, std::string* host_out, int* port_out) {
  const auto colon = addr.rfind(':');
  if (colon == std::string::npos) return Status::Error("expected HOST:PORT, got \"" + addr + "\"");
  std::string host = addr.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  int port = -1;
  const std::string port_text = addr.substr(colon + 1);
  if (port_text.empty() || port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos ||
      (port = std::stoi(port_text)) > 65535) {
    return Status::Error("invalid port in \"" + addr + "\" (want 0-65535)");
  }
  if (host_out != nullptr) *host_out = host;
  if (port_out != nullptr) *port_out = port;
  return Status::Ok();
}

Status HttpServer::Start(const std::string& addr) {
  std::string host;
  int port = -1;
  if (Status s = CheckAddress(addr, &host, &port); !s.ok()) return Status::Error("http address: " + s.Message());
  if (options_.workers < 1) return Status::Error("http: workers must be at least 1");
  if (!options_.token_file.empty()) {
    std::lock_guard<std::mutex> lock(token_mu_);
    if (auto s = LoadToken(); !s.ok()) return s;
  }
  server_ = std::make_unique<httplib::Server>();
  httplib::Server& srv = *server_;
  const int workers = options_.workers;
  srv.new_task_queue = [workers] { return new httplib::ThreadPool(static_cast<size_t>(workers)); };
  srv.set_read_timeout(options_.read_timeout);
  srv.set_write_timeout(options_.write_timeout);
  // One request per connection. No route reads a body and cpp-httplib reads none of a GET or HEAD
  // (nor of a request refused below): a body left on a kept-alive connection would be read as the
  // next request (a request hidden in it served). cpp-httplib 0.11 gives handlers no socket to
  // close, so no connection is kept after its answer; the clients (scrapes, tidalctl) reconnect.
  srv.set_keep_alive_max_count(1);
  srv.set_payload_max_length(options_.max_body_bytes);
  // cpp-httplib's default socket options add SO_REUSEPORT, which lets a second process bind the same
  // port and take half the connections (a second engine started by mistake would answer half the
  // scrapes). SO_REUSEADDR only: restarts still rebind at once, a second bind fails.
  srv.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  for (const auto& [path, route] : routes_) {
    srv.Get(path, [this, path = path, route = &route](const httplib::Request& req, httplib::Response& res) {
      if (route->access == Access::kPrivate) {
        if (const int refused = Authorize(req.remote_addr, req.get_header_value("Authorization")); refused != 0) {
          if (refused == 401) res.set_header("WWW-Authenticate", "Bearer");
          Reply(res, refused,
                refused == 403 ? path + " is served to loopback clients only (use kubectl port-forward, or configure a token)\n"
                               : "missing or wrong bearer token\n");
          return;
        }
      }
      const auto q = req.target.find('?');
      HttpResponse out = route->handler(path, q == std::string::npos ? std::string() : req.target.substr(q + 1));
      res.status = out.code;
      res.set_content(std::move(out.body), out.content_type.c_str());
    });
  }
  srv.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) return Reply(res, 404, "not found: " + req.path + "\n");
    if (res.status == 413 || res.status == 414) return Reply(res, res.status, "request too large\n");
    if (res.status == 400) return Reply(res, 400, "bad request\n");
    Reply(res, res.status, "error " + std::to_string(res.status) + "\n");
  });
  // Routes are GET and read no body. A request declaring a body over the limit (any method; one
  // whose length is unknown, chunked, counts as over) is refused with 413; any other method with
  // 405. Its connection ends with the answer (set_keep_alive_max_count above).
  const size_t max_body = options_.max_body_bytes;
  srv.set_pre_routing_handler([max_body](const httplib::Request& req, httplib::Response& res) {
    if (DeclaredBody(req) > max_body) {
      Reply(res, 413, "request body too large (at most " + std::to_string(max_body) + " bytes; routes take none)\n");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method == "GET" || req.method == "HEAD") return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("Allow", "GET, HEAD");
    Reply(res, 405, "only GET is supported\n");
    return httplib::Server::HandlerResponse::Handled;
  });
  srv.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    Reply(res, 500, "internal error\n");
  });
  if (port == 0) {
    port_ = srv.bind_to_any_port(host);
    if (port_ <= 0) return Status::Error("http: cannot listen on " + addr);
  } else {
    if (!srv.bind_to_port(host, port)) return Status::Error("http: cannot listen on " + addr + " (in use, or not a local address)");
    port_ = port;
  }
  thread_ = std::thread([&srv] { srv.listen_after_bind(); });
  // httplib's stop() does nothing until the loop runs: wait for it, so a Stop() right after Start()
  // cannot leave the loop running (and Stop's join hanging).
  for (int i = 0; i < 5000 && !srv.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!srv.is_running()) {
    srv.stop();
    Stop();
    return Status::Error("http: server on " + addr + " did not start");
  }
  return Status::Ok();
}

void HttpServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace tidal
