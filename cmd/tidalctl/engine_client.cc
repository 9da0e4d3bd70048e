// tidalctl explain / queues: read tidal-engine's explain API over HTTP (cpp-httplib) and print it
// kubectl-style; HttpGet, the HTTP client of every tidalctl command that reads the engine's HTTP
// API (explain, queues, config diff, snapshot).
#include <httplib.h>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cmd/tidalctl/commands.h"
#include "core/api/status.h"
#include "engine/explain_text.h"

namespace tidal::cli {

namespace {

constexpr auto kConnectTimeout = std::chrono::seconds(5);
constexpr auto kReadTimeout = std::chrono::seconds(30);

// --engine as a URL cpp-httplib takes: http:// or https://, or none (then http://). Another scheme
// is an error naming it, not a host name: "ftp://h:1" became "http://ftp://h:1".
StatusOr<std::string> EngineUrl(const std::string& base) {
  std::string url = base;
  while (!url.empty() && url.back() == '/') url.pop_back();
  const auto sep = url.find("://");
  if (sep == std::string::npos) return "http://" + url;
  const std::string scheme = url.substr(0, sep);
  if (scheme == "http" || scheme == "https") return url;
  return Status::Error("--engine: unsupported scheme " + scheme.substr(0, 32) + " in " + base.substr(0, 256) +
                       " (expected http://HOST:PORT, the engine's --http-addr)");
}

// Why a TCP connection to the URL's host and port fails, in words (strerror of a fresh connect:
// "Connection refused", "No route to host", ...); cpp-httplib reports only "Connection".
std::string ConnectFailure(const std::string& url) {
  std::string rest = url.substr(url.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  const bool tls = url.rfind("https://", 0) == 0;
  std::string host = rest, port = tls ? "443" : "80";
  if (const auto colon = rest.rfind(':'); colon != std::string::npos && rest.find(']', colon) == std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return "cannot resolve " + host + ": " + ::gai_strerror(rc);
  }
  std::string why = "cannot connect";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv{kConnectTimeout.count(), 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);  // bounds connect()
    const int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    const int err = errno;
    ::close(fd);
    if (rc == 0) {
      why = "the connection failed (it connects now: try again)";
      break;
    }
    why = err == EINPROGRESS || err == EAGAIN ? "timed out connecting" : std::string(std::strerror(err));
  }
  ::freeaddrinfo(found);
  for (auto& c : why) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return why;
}

// A transport error of a GET that took `elapsed`, in words an admin can act on.
std::string DescribeError(httplib::Error error, const std::string& url, std::chrono::steady_clock::duration elapsed) {
  switch (error) {
    case httplib::Error::Connection:
      return ConnectFailure(url);
    case httplib::Error::ConnectionTimeout:
      return "timed out connecting after " + std::to_string(kConnectTimeout.count()) + " s";
    case httplib::Error::Read:
      if (elapsed >= kReadTimeout - std::chrono::seconds(1)) {
        return "timed out after " + std::to_string(kReadTimeout.count()) + " s waiting for an answer";
      }
      return "no HTTP answer: not an HTTP server (is this the gRPC port? give the engine's --http-addr)";
    case httplib::Error::Write:
      return "the connection closed while the request was sent";
    default:
      return httplib::to_string(error);
  }
}

}  // namespace

// GET BASE/PATH (cpp-httplib); returns false with `err` on a transport error, saying what happened
// (connection refused, timed out, not an HTTP server, an unsupported scheme). With a token file
// (--token-file, or $TIDAL_ENGINE_TOKEN_FILE), sends its content as a bearer token: the engine asks
// for one on /explain and /queues from clients that are not on its loopback interface.
bool HttpGet(const std::string& base, const std::string& token_file, const std::string& path, int* code,
             std::string* body, std::string* err) {
  auto url = EngineUrl(base);
  if (!url.ok()) return *err = url.status().Message(), false;
  httplib::Client client(*url);
  if (!client.is_valid()) return *err = "--engine: expected http://HOST:PORT, got " + base, false;
  client.set_connection_timeout(kConnectTimeout);
  client.set_read_timeout(kReadTimeout);
  httplib::Headers headers;
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    std::string token;
    if (!std::getline(in, token) || token.empty()) return *err = "--token-file: cannot read a token from " + token_file, false;
    headers.emplace("Authorization", "Bearer " + token);
  }
  const auto start = std::chrono::steady_clock::now();
  auto res = client.Get(path.c_str(), headers);
  if (!res) {
    *err = "cannot reach tidal-engine at " + base + ": " +
           DescribeError(res.error(), *url, std::chrono::steady_clock::now() - start);
    return false;
  }
  *code = res->status;
  *body = res->body;
  return true;
}

std::string TokenFile(const Flags& flags) {
  const char* env = std::getenv("TIDAL_ENGINE_TOKEN_FILE");
  return flags.Get("--token-file", env != nullptr ? env : "");
}


int Explain(const Args& args) {
  Flags flags(args);
  if (!flags.Parse({"--engine", "--token-file", "-o", "--output"}) || flags.positional().size() != 1) {
    std::cerr << "usage: tidalctl explain NAMESPACE/NAME [--engine http://127.0.0.1:8081] [--token-file FILE] [-o text|json]\n";
    return 2;
  }
  const std::string output = flags.Get("-o", flags.Get("--output", "text"));
  if (output != "text" && output != "json") {
    return std::cerr << "tidalctl explain: -o: unknown format \"" << output << "\" (accepted: text, json)\n", 2;
  }
  int code = 0;
  std::string body, err;
  if (!HttpGet(flags.Get("--engine", "http://127.0.0.1:8081"), TokenFile(flags),
               "/explain?workload=" + httplib::detail::encode_query_param(flags.positional()[0]) + "&format=json", &code,
               &body, &err)) {
    std::cerr << "tidalctl explain: " << err << "\n";
    return 1;
  }
  if (code != 200) {
    std::cerr << "tidalctl explain: " << body;
    return 1;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const std::exception& e) {
    std::cerr << "tidalctl explain: engine answered non-JSON: " << e.what() << "\n";
    return 1;
  }
  if (output == "json") {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << ExplainRecordText(j, static_cast<int64_t>(std::time(nullptr)));  // engine/explain_text.h
  return 0;
}

int Queues(const Args& args) {
  Flags flags(args);
  if (!flags.Parse({"--engine", "--token-file", "-o", "--output"}) || !flags.positional().empty()) {
    std::cerr << "usage: tidalctl queues [--engine http://127.0.0.1:8081] [--token-file FILE] [-o table|json]\n";
    return 2;
  }
  const std::string output = flags.Get("-o", flags.Get("--output", "table"));
  if (output != "table" && output != "json") {
    return std::cerr << "tidalctl queues: -o: unknown format \"" << output << "\" (accepted: table, json)\n", 2;
  }
  int code = 0;
  std::string body, err;
  if (!HttpGet(flags.Get("--engine", "http://127.0.0.1:8081"), TokenFile(flags), "/queues?format=json", &code, &body,
               &err)) {
    std::cerr << "tidalctl queues: " << err << "\n";
    return 1;
  }
  if (code != 200) {
    std::cerr << "tidalctl queues: " << body;
    return 1;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const std::exception& e) {
    std::cerr << "tidalctl queues: engine answered non-JSON: " << e.what() << "\n";
    return 1;
  }
  if (output == "json") {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << QueuesTable(j);  // engine/explain_text.h
  return 0;
}

}  // namespace tidal::cli
