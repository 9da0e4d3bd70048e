// tidal-engine: the gRPC placement engine.
//
//   tidal-engine [--listen unix:///PATH|HOST:PORT] [--http-addr HOST:PORT] [--config FILE]
//
// Threading model: the main thread parses flags, starts the gRPC server (its own thread pool) and
// the HTTP server (one thread), then waits for SIGINT/SIGTERM and shuts both down. All scheduling
// state is owned by one Engine object, which serialises access with its own mutex.
#include <csignal>
#include <filesystem>
#include <iostream>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "core/cmd/flags.h"
#include "core/server/http_server.h"
#include "core/server/service.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

constexpr const char* kUsage =
    "usage: tidal-engine [--listen unix:///PATH|HOST:PORT] [--http-addr HOST:PORT] [--config FILE]\n"
    "  --listen     gRPC address (default unix:///tmp/tidal-engine.sock)\n"
    "  --http-addr  /healthz and /readyz (default 127.0.0.1:8081)\n"
    "  --config     engine config, YAML or JSON (default: built-in defaults)\n";

}  // namespace

int main(int argc, char** argv) {
  tidal::cli::Args args(argv + 1, argv + argc);
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") return std::cout << kUsage, 0;
  }
  tidal::cli::Flags flags(args);
  if (!flags.Parse({"--listen", "--http-addr", "--config"}) || !flags.positional().empty()) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string listen = flags.Get("--listen", "unix:///tmp/tidal-engine.sock");
  const std::string http_addr = flags.Get("--http-addr", "127.0.0.1:8081");
  tidal::EngineConfig cfg;
  if (const std::string path = flags.Get("--config"); !path.empty()) {
    auto loaded = tidal::LoadEngineConfig(path);
    if (!loaded.ok()) {
      std::cerr << "tidal-engine: config: " << loaded.status().Message() << "\n";
      return 1;
    }
    cfg = *loaded;
  }
  auto engine = tidal::Engine::Create(cfg);
  if (!engine.ok()) {
    std::cerr << "tidal-engine: " << engine.status().Message() << "\n";
    return 1;
  }
  if (listen.rfind("unix://", 0) == 0) {
    std::error_code ec;
    std::filesystem::remove(listen.substr(7), ec);  // a stale socket from a previous run
  }
  tidal::EngineService service(**engine);
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &bound_port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || (listen.rfind("unix:", 0) != 0 && bound_port == 0)) {
    std::cerr << "tidal-engine: cannot listen on " << listen << "\n";
    return 1;
  }
  tidal::HttpServer http;
  http.Handle("/healthz", [](const std::string&, const std::string&) { return tidal::HttpResponse{200, "text/plain", "ok\n"}; });
  http.Handle("/readyz", [&](const std::string&, const std::string&) {
    const auto st = (*engine)->Stats();
    return tidal::HttpResponse{200, "text/plain",
                               "ok\nsynced: " + std::string(st.synced ? "true" : "false") + "\nnodes: " +
                                   std::to_string(st.nodes) + "\npods: " + std::to_string(st.pods) + "\n"};
  });
  if (auto s = http.Start(http_addr); !s.ok()) {
    std::cerr << "tidal-engine: " << s.Message() << "\n";
    server->Shutdown();
    return 1;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  spdlog::info("tidal-engine epoch {} serving gRPC on {}, HTTP on {}:{}", (*engine)->epoch(), listen,
               http_addr.substr(0, http_addr.rfind(':')), http.port());
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  spdlog::info("tidal-engine shutting down");
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  http.Stop();
  return 0;
}
