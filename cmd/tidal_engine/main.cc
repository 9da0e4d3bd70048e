// tidal-engine: the gRPC placement engine.
//
//   tidal-engine [--listen unix:///PATH|HOST:PORT] [--http-addr HOST:PORT] [--config FILE]
//                [--state-file FILE] [--tls-cert FILE --tls-key FILE --tls-client-ca FILE]
//                [--insecure true] [--socket-mode 0660] [--http-token-file FILE]
//                [--decision-log FILE|-|none]
//
// Threading model: the main thread parses flags, starts the gRPC server (its own thread pool), the
// HTTP server (an accept thread and a worker pool, server/http_server.h) and the config watcher
// (one thread), then waits for SIGINT/SIGTERM, saving the state file (ledger, the doors' nodes;
// state_file.h) every 30 s and within a second of a change to the doors' nodes; then it stops the
// servers and saves once more. All scheduling state is owned by one Engine object, which
// serialises access with its own mutex.
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cmd/flags.h"
#include "cmd/tidal_engine/listen_flags.h"
#include "cmd/tidal_engine/state_file.h"
#include "core/api/limits.h"
#include "core/metrics/registry.h"
#include "server/config_load.h"
#include "server/config_watcher.h"
#include "server/endpoints.h"
#include "server/http_server.h"
#include "server/service.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

// When the state file is due (ticks of 100 ms): every 30 s, and within about a second of a change
// to the nodes the doors reported (a restarted engine gates them until their door resyncs:
// engine/engine_doors.cc), at most once a second.
class SaveSchedule {
 public:
  explicit SaveSchedule(uint64_t version) : saved_(version) {}
  bool Due(int tick, uint64_t version) const { return tick % 300 == 299 || (version != saved_ && tick - last_ >= 10); }
  void Saved(int tick, uint64_t version) {
    last_ = tick;
    saved_ = version;
  }

 private:
  uint64_t saved_;
  int last_ = -10;
};

constexpr const char* kUsage =
    "usage: tidal-engine [--listen unix:///PATH|HOST:PORT] [--http-addr HOST:PORT] [--config FILE]\n"
    "  --listen     gRPC address (default unix:///tmp/tidal-engine.sock)\n"
    "  --http-addr  HTTP: /metrics, /healthz, /readyz for anyone; /explain, /queues, /config, /snapshot for\n"
    "               loopback clients or a bearer token (default 127.0.0.1:8081)\n"
    "  --http-token-file FILE  bearer token that opens /explain, /queues, /config, /snapshot to other hosts\n"
    "  --config     engine config, YAML or JSON, reloaded on change (default: built-in defaults)\n"
    "  --state-file where the queue ledger's decayed usage and the nodes each front door reported are\n"
    "               kept across restarts (default: none)\n"
    "  --decision-log FILE  one JSON line per decision, rate-limited (default: - = stderr; none = off)\n";

}  // namespace

int main(int argc, char** argv) {
  tidal::cli::Args args(argv + 1, argv + argc);
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") return std::cout << kUsage << tidal::kListenUsage, 0;
  }
  tidal::cli::Flags flags(args);
  std::vector<std::string> known = {"--listen", "--http-addr", "--config", "--state-file", "--decision-log",
                                    "--http-token-file"};
  known.insert(known.end(), tidal::kListenFlags.begin(), tidal::kListenFlags.end());
  if (!flags.Parse(known) || !flags.positional().empty()) {
    std::cerr << kUsage << tidal::kListenUsage;
    return 2;
  }
  const std::string listen = flags.Get("--listen", "unix:///tmp/tidal-engine.sock");
  auto listen_opts = tidal::ListenOptionsFromFlags(flags, listen);
  if (!listen_opts.ok()) {
    std::cerr << "tidal-engine: " << listen_opts.status().Message() << "\n";
    return 2;
  }
  const std::string http_addr = flags.Get("--http-addr", "127.0.0.1:8081");
  tidal::EngineConfig cfg;
  if (const std::string path = flags.Get("--config"); !path.empty()) {
    auto loaded = tidal::LoadServedConfig(path);  // with the rollout gate's failOn (server/config_load.h)
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
  const std::string state_file = flags.Get("--state-file");
  // The state file is written where it will be (its own temporary file, renamed over it): a
  // directory that is missing or not writable is refused now, not found out at the first save,
  // 30 s later, as a warning while the usage history is lost.
  const std::string host = [] {
    char h[256] = {0};
    if (gethostname(h, sizeof(h) - 1) != 0) h[0] = '\0';
    return std::string(h);
  }();
  const std::string state_tmp = tidal::StateFileTemporary(state_file, host, getpid());
  if (!state_file.empty()) {
    FILE* f = std::fopen(state_tmp.c_str(), "w");
    if (f == nullptr) {
      std::cerr << "tidal-engine: --state-file: cannot write " << state_tmp << ": " << std::strerror(errno)
                << " (the file's directory must exist and be writable)\n";
      return 1;
    }
    std::fclose(f);
    std::remove(state_tmp.c_str());
    for (const auto& stale : tidal::RemoveStaleStateTemporaries(state_file, host, getpid())) {
      spdlog::info("state file: removed {}, left by an earlier process killed while writing", stale);
    }
    // A file that exists but cannot be read whole refuses the start (state_file.h says why).
    auto read = tidal::ReadStateFile(state_file, **engine);
    if (!read.ok()) {
      std::cerr << "tidal-engine: " << read.status().Message() << "\n";
      return 1;
    }
    if (!read->found) spdlog::info("state file {}: none yet; starting without usage history", state_file);
    for (const auto& w : read->warnings) spdlog::warn("state file {}: {}", state_file, w);  // the rest applied
  }
  // Saves by result, for tidal_state_file_saves_total (main thread writes, scrapes read).
  std::atomic<int64_t> saves_ok{0}, saves_failed{0};
  auto save_state = [&] {
    if (state_file.empty()) return false;
    // A temporary file of this process's own: replicas may share the state volume (deploy/base).
    if (auto s = tidal::WriteStateFile(state_file, state_tmp, tidal::StateFileText((*engine)->SaveLedger())); !s.ok()) {
      spdlog::warn("{}", s.Message());  // the last complete file stays in place
      saves_failed.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    saves_ok.fetch_add(1, std::memory_order_relaxed);
    return true;
  };
  std::unique_ptr<tidal::ConfigWatcher> watcher;
  if (const std::string path = flags.Get("--config"); !path.empty()) {
    watcher = std::make_unique<tidal::ConfigWatcher>(**engine, path, std::chrono::milliseconds(1000));
    watcher->Start();
  }
  // Metrics and the decision log (declared before the servers so they outlive them).
  tidal::metrics::Registry metrics;
  tidal::EngineMetrics engine_metrics(metrics);
  tidal::Engine* eng = engine->get();
  tidal::RegisterEngineGauges(metrics, *eng, watcher.get());
  if (auto s = metrics.status(); !s.ok()) {
    std::cerr << "tidal-engine: metrics: " << s.Message() << "\n";
    return 1;
  }
  const std::string log_target = flags.Get("--decision-log", "-");
  FILE* log_file = log_target == "-" ? stderr : log_target == "none" ? nullptr : std::fopen(log_target.c_str(), "a");
  if (log_target != "-" && log_target != "none" && log_file == nullptr) {
    std::cerr << "tidal-engine: --decision-log: cannot open " << log_target << "\n";
    return 1;
  }
  std::unique_ptr<tidal::DecisionLog> decision_log;
  if (log_file != nullptr) decision_log = std::make_unique<tidal::DecisionLog>(log_file, 50.0);
  eng->SetObservability(&engine_metrics, decision_log.get());
  if (watcher) watcher->set_decision_log(decision_log.get());  // reloads with both versions
  tidal::EngineService service(**engine, &engine_metrics);
  // Replicas: the Slurm door waits for the scheduler to say it leads (engine/door_lease.h).
  service.ExpectKubernetesDoor(std::count(cfg.front_doors.begin(), cfg.front_doors.end(), tidal::FrontDoor::kKubernetes) > 0);
  // The availability SLO counts the leading replica's engine (deploy/prometheus/tidal-rules.yaml).
  tidal::RegisterProcessGauges(metrics, [&service] { return service.Leading(); }, [&] {
    return tidal::StateFileSaves{saves_ok.load(std::memory_order_relaxed), saves_failed.load(std::memory_order_relaxed)};
  });
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(tidal::limits::kMaxSyncMessageBytes);  // Sync batches (core/api/limits.h)
  // Socket checks, mutual TLS, the socket's mode (server/grpc_listener.h).
  auto started = tidal::StartGrpcServer(builder, *listen_opts, &bound_port);
  if (!started.ok()) {
    std::cerr << "tidal-engine: " << started.status().Message() << "\n";
    return 1;
  }
  std::unique_ptr<grpc::Server> server = std::move(*started);
  tidal::HttpServer::Options http_options;
  http_options.token_file = flags.Get("--http-token-file");
  http_options.on_token_error = [](const std::string& why) { spdlog::warn("{}", why); };
  tidal::HttpServer http(http_options);
  tidal::RegisterEngineRoutes(http, *eng, metrics, watcher.get());
  if (auto s = http.Start(http_addr); !s.ok()) {
    std::cerr << "tidal-engine: " << s.Message() << "\n";
    server->Shutdown();
    return 1;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  spdlog::info("tidal-engine epoch {} serving gRPC on {}, HTTP on {}:{}", (*engine)->epoch(), listen,
               http_addr.substr(0, http_addr.rfind(':')), http.port());
  SaveSchedule schedule(eng->DoorMemoryVersion());
  for (int tick = 0; !g_stop; ++tick) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint64_t version = eng->DoorMemoryVersion();  // read first: a change during the save is saved next
    if (!schedule.Due(tick, version)) continue;
    save_state();
    schedule.Saved(tick, version);
  }
  spdlog::info("tidal-engine shutting down");
  if (watcher) watcher->Stop();
  // The last save after the doors have stopped: a batch taken during the shutdown is in it.
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  http.Stop();
  const bool saved = save_state();
  spdlog::info("tidal-engine stopped{}", saved ? "; state file " + state_file + " saved" : "");
  return 0;
}
