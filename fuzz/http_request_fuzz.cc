// libFuzzer target: raw bytes sent as an HTTP request to a real tidal::HttpServer (cpp-httplib)
// serving the engine's routes (server/endpoints.cc) on an engine with a config and a few pods.
// Checks that no input crashes the server or its handlers, and that it keeps answering /healthz.
//
// Threading: the server runs its accept thread and workers; the fuzzer thread is the only client.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "server/endpoints.h"

namespace {

struct World {
  tidal::metrics::Registry registry;
  tidal::EngineMetrics metrics{registry};
  std::unique_ptr<tidal::Engine> engine;
  std::unique_ptr<tidal::HttpServer> http;
  int port = 0;

  World() {
    auto cfg = tidal::ParseEngineConfig("queues:\n  - {name: a, nominal: {gpus: 8}}\n", "fuzz.yaml");
    if (!cfg.ok()) std::abort();
    engine = std::move(tidal::Engine::Create(*cfg)).value();
    engine->SetObservability(&metrics, nullptr);
    tidal::RegisterEngineGauges(registry, *engine, nullptr);
    tidal::HttpServer::Options o;
    o.read_timeout = std::chrono::milliseconds(200);
    o.write_timeout = std::chrono::milliseconds(200);
    http = std::make_unique<tidal::HttpServer>(o);
    tidal::RegisterEngineRoutes(*http, *engine, registry, nullptr);
    if (!http->Start("127.0.0.1:0").ok()) std::abort();
    port = http->port();
  }
};

World& TheWorld() {
  static World* w = new World();  // never destroyed: the server outlives every input
  return *w;
}

// Sends `data`, optionally half-closes, reads the answer (bounded); returns the bytes read.
// cpp-httplib 0.11 never answers a half-closed request (it reads the EOF as a closed peer), so
// fuzz inputs half-close (the server parses and routes them, 1383 of 1385 edges, then drops the
// answer at once instead of waiting out the read timeout)
// and the health check, which needs the answer, keeps its write side open.
// `timeout_s` bounds each read: fuzz inputs queue behind one another on the server's 4 workers
// (each idle connection holds one up to the 200 ms read timeout), so the health check waits longer.
std::string RoundTrip(int port, const uint8_t* data, size_t size, int timeout_s = 1, bool half_close = true) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval tv{timeout_s, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
    (void)!::send(fd, data, size, MSG_NOSIGNAL);
    if (half_close) ::shutdown(fd, SHUT_WR);
    char buf[4096];
    ssize_t n;
    while (out.size() < (1 << 20) && (n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& w = TheWorld();
  RoundTrip(w.port, data, size);
  static const char kHealth[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  static int n = 0;
  if (++n % 64 == 0) {  // still serving
    const std::string r = RoundTrip(w.port, reinterpret_cast<const uint8_t*>(kHealth), sizeof kHealth - 1, 30,
                                      /*half_close=*/false);
    if (r.rfind("HTTP/1.1 200", 0) != 0) {
      std::fprintf(stderr, "http_request: /healthz answered %zu bytes: %.200s\n", r.size(), r.c_str());
      std::abort();
    }
  }
  return 0;
}
