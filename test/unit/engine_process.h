// EngineProcess: tidal-engine's pieces wired as cmd/tidal_engine/main.cc wires them, in process:
// an Engine, its EngineService on 127.0.0.1:<free port>, a metrics Registry with EngineMetrics and
// the callback gauges reading Engine::Gauges, a DecisionLog, the HttpServer's /healthz /metrics
// /explain /queues /config on 127.0.0.1:<free port>, and a ConfigWatcher polling the config file.
// For tests that drive the whole engine from many threads (concurrency_test.cc).
//
// Threading: Start and Stop run on the test's thread. In between, gRPC's thread pool runs the
// handlers, the HttpServer its own thread(s), the watcher its polling thread; all of them reach
// the Engine (its own mutex), the Registry (thread-safe) and the watcher's counts (its mutex).
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "core/metrics/registry.h"
#include "server/config_watcher.h"
#include "server/http_server.h"
#include "server/service.h"

namespace tidal::testing {

class EngineProcess {
 public:
  // config_path: an engine config file (read now, then watched every `poll`).
  Status Start(const std::string& config_path, std::chrono::milliseconds poll);
  void Stop();
  ~EngineProcess() { Stop(); }

  Engine& engine() { return *engine_; }
  ConfigWatcher& watcher() { return *watcher_; }
  metrics::Registry& registry() { return registry_; }
  std::unique_ptr<v1::Engine::Stub> NewStub() const;
  int grpc_port() const { return grpc_port_; }
  int http_port() const { return http_.port(); }

 private:
  void RegisterGauges();
  void RegisterHandlers();
  std::unique_ptr<Engine> engine_;
  metrics::Registry registry_;
  std::unique_ptr<EngineMetrics> engine_metrics_;
  FILE* log_file_ = nullptr;
  std::unique_ptr<DecisionLog> decision_log_;
  std::unique_ptr<ConfigWatcher> watcher_;
  std::unique_ptr<EngineService> service_;
  std::unique_ptr<grpc::Server> server_;
  HttpServer http_;
  int grpc_port_ = 0;
  bool stopped_ = false;
};

}  // namespace tidal::testing
