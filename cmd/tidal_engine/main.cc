// tidal-engine: the gRPC placement engine.
//
//   tidal-engine [--listen unix:///PATH|HOST:PORT] [--http-addr HOST:PORT] [--config FILE]
//                [--state-file FILE]
//
// Threading model: the main thread parses flags, starts the gRPC server (its own thread pool), the
// HTTP server (one thread) and the config watcher (one thread), then waits for SIGINT/SIGTERM,
// saving the ledger state file every 30 s, and shuts everything down. All scheduling state is
// owned by one Engine object, which serialises access with its own mutex.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cmd/flags.h"
#include "core/metrics/registry.h"
#include "server/config_watcher.h"
#include "server/http_server.h"
#include "server/service.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

constexpr const char* kUsage =
    "usage: tidal-engine [--listen unix:///PATH|HOST:PORT] [--http-addr HOST:PORT] [--config FILE]\n"
    "  --listen     gRPC address (default unix:///tmp/tidal-engine.sock)\n"
    "  --http-addr  /healthz and /readyz (default 127.0.0.1:8081)\n"
    "  --config     engine config, YAML or JSON, reloaded on change (default: built-in defaults)\n"
    "  --state-file where the queue ledger's decayed usage is kept across restarts (default: none)\n"
    "  --decision-log FILE  one JSON line per decision, rate-limited (default: - = stderr; none = off)\n";

}  // namespace

int main(int argc, char** argv) {
  tidal::cli::Args args(argv + 1, argv + argc);
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") return std::cout << kUsage, 0;
  }
  tidal::cli::Flags flags(args);
  if (!flags.Parse({"--listen", "--http-addr", "--config", "--state-file", "--decision-log"}) || !flags.positional().empty()) {
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
  const std::string state_file = flags.Get("--state-file");
  if (!state_file.empty() && std::filesystem::exists(state_file)) {
    std::ifstream in(state_file);
    std::stringstream ss;
    ss << in.rdbuf();
    if (auto s = (*engine)->LoadLedger(ss.str()); !s.ok()) {
      spdlog::warn("state file {} ignored: {}", state_file, s.Message());
    }
  }
  auto save_state = [&] {
    if (state_file.empty()) return;
    const std::string tmp = state_file + ".tmp";
    {
      std::ofstream out(tmp);
      out << (*engine)->SaveLedger();
    }
    std::error_code ec;
    std::filesystem::rename(tmp, state_file, ec);
    if (ec) spdlog::warn("cannot write state file {}: {}", state_file, ec.message());
  };
  std::unique_ptr<tidal::ConfigWatcher> watcher;
  if (const std::string path = flags.Get("--config"); !path.empty()) {
    watcher = std::make_unique<tidal::ConfigWatcher>(**engine, path, std::chrono::milliseconds(1000));
    watcher->Start();
  }
  if (listen.rfind("unix://", 0) == 0) {
    std::error_code ec;
    std::filesystem::remove(listen.substr(7), ec);  // a stale socket from a previous run
  }
  // Metrics and the decision log (declared before the servers so they outlive them).
  tidal::metrics::Registry metrics;
  tidal::EngineMetrics engine_metrics(metrics);
  auto rows = [](std::vector<tidal::EngineGauges::Row> tidal::EngineGauges::*field, tidal::Engine* e) {
    return [field, e] {
      std::vector<tidal::metrics::Sample> out;
      tidal::EngineGauges g = e->Gauges();
      for (auto& r : g.*field) out.push_back({std::move(r.labels), r.value});
      return out;
    };
  };
  tidal::Engine* eng = engine->get();
  metrics.CallbackGauge("tidal_gpus", "GPUs by state (allocated, idle, reserved, perishable, unhealthy) and pool.",
                        {"state", "pool"}, rows(&tidal::EngineGauges::gpus, eng));
  metrics.CallbackGauge("tidal_pending_workloads", "Pending workloads (gangs) by queue and class.", {"queue", "class"},
                        rows(&tidal::EngineGauges::pending, eng));
  metrics.CallbackGauge("tidal_backfill_reservations",
                        "Pending gangs holding a backfill reservation (nodes held for their earliest start), by queue.",
                        {"queue"}, rows(&tidal::EngineGauges::reservations, eng));
  metrics.CallbackGauge("tidal_queue_usage", "Current allocation of each queue (subtree), by resource.",
                        {"queue", "resource"}, rows(&tidal::EngineGauges::queue_usage, eng));
  metrics.CallbackGauge("tidal_queue_nominal", "Nominal quota of each queue, by resource.", {"queue", "resource"},
                        rows(&tidal::EngineGauges::queue_nominal, eng));
  metrics.CallbackGauge("tidal_queue_borrowed", "Allocation above nominal quota (borrowed), by queue and resource.",
                        {"queue", "resource"}, rows(&tidal::EngineGauges::queue_borrowed, eng));
  metrics.CallbackGauge("tidal_queue_fair_share_usage", "Weighted dominant share (allocation blended with decayed usage).",
                        {"queue"}, rows(&tidal::EngineGauges::fair_share, eng));
  metrics.CallbackGauge("tidal_largest_placeable_gang_gpus",
                        "GPUs of the largest whole-node gang that fits now inside one domain of each level.", {"level"},
                        rows(&tidal::EngineGauges::largest_gang, eng));
  metrics.CallbackGauge("tidal_nodes_missing_topology_label",
                        "Nodes without a valid label for a topology level (each is its own domain at that level), by level.",
                        {"level"}, rows(&tidal::EngineGauges::missing_topology, eng));
  metrics.CallbackGauge("tidal_door_members", "Members (pods, Slurm job members) by front door and state (pending, bound).",
                        {"door", "state"}, rows(&tidal::EngineGauges::door_members, eng));
  metrics.CallbackGauge("tidal_door_gpus", "GPUs held by bound members, by front door.", {"door"},
                        rows(&tidal::EngineGauges::door_gpus, eng));
  metrics.CallbackGauge("tidal_door_nodes", "Nodes each front door reports (a shared node counts for both).", {"door"},
                        rows(&tidal::EngineGauges::door_nodes, eng));
  metrics.CallbackGauge("tidal_queue_door_gpus", "GPUs a queue's bound members hold, by front door (one ledger).",
                        {"queue", "door"}, rows(&tidal::EngineGauges::queue_door_gpus, eng));
  metrics.CallbackGauge("tidal_fragmentation_unusable_free_gpus",
                        "Free GPUs on nodes with fewer free GPUs than the smallest pending member needs.", {},
                        [eng] { return std::vector<tidal::metrics::Sample>{{{}, eng->Gauges().unusable_free_gpus}}; });
  metrics.CallbackCounter("tidal_config_reloads_total", "Config hot reloads, by result.", {"result"}, [&watcher] {
    std::vector<tidal::metrics::Sample> out;
    const auto c = watcher ? watcher->counts() : tidal::ConfigWatcher::Counts{};
    out.push_back({{"success"}, static_cast<double>(c.success)});
    out.push_back({{"failure"}, static_cast<double>(c.failure)});
    return out;
  });
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
  tidal::EngineService service(**engine, &engine_metrics);
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
  http.Handle("/metrics", [&metrics](const std::string&, const std::string&) {
    return tidal::HttpResponse{200, std::string(tidal::metrics::kContentType), metrics.Render()};
  });
  // Explain API: /explain?workload=NS/NAME[&format=json] and /queues[?format=json].
  auto param = [](const std::string& query, const std::string& key) -> std::string {
    size_t pos = 0;
    while (pos <= query.size()) {
      const size_t amp = query.find('&', pos);
      const std::string kv = query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
      if (kv.rfind(key + "=", 0) == 0) return kv.substr(key.size() + 1);
      if (amp == std::string::npos) break;
      pos = amp + 1;
    }
    return "";
  };
  http.Handle("/explain", [&](const std::string&, const std::string& query) {
    const std::string name = param(query, "workload");
    if (name.empty()) return tidal::HttpResponse{400, "text/plain", "usage: /explain?workload=NAMESPACE/NAME[&format=json]\n"};
    auto j = eng->ExplainJson(name);
    if (!j.ok()) return tidal::HttpResponse{404, "text/plain", j.status().Message() + "\n"};
    if (param(query, "format") == "json") return tidal::HttpResponse{200, "application/json", j->dump(2) + "\n"};
    return tidal::HttpResponse{200, "text/plain", (*j)["text"].get<std::string>()};
  });
  http.Handle("/config", [&](const std::string&, const std::string&) {
    if (!watcher) return tidal::HttpResponse{200, "text/plain", "no --config file; built-in defaults\n"};
    const std::string err = watcher->LastError();
    const auto c = watcher->counts();
    return tidal::HttpResponse{200, "text/plain",
                               "reloads: " + std::to_string(c.success) + " ok, " + std::to_string(c.failure) +
                                   " refused\n" + (err.empty() ? "last: ok\n" : "last refused:\n" + err)};
  });
  http.Handle("/queues", [&](const std::string&, const std::string& query) {
    if (param(query, "format") != "json") return tidal::HttpResponse{200, "text/plain", eng->DescribeQueues()};
    const tidal::EngineGauges g = eng->Gauges();
    nlohmann::json out = nlohmann::json::array();
    std::map<std::string, nlohmann::json> by_queue;
    for (const auto& r : g.queue_usage) by_queue[r.labels[0]]["usage"][r.labels[1]] = r.value;
    for (const auto& r : g.queue_nominal) by_queue[r.labels[0]]["nominal"][r.labels[1]] = r.value;
    for (const auto& r : g.queue_borrowed) by_queue[r.labels[0]]["borrowed"][r.labels[1]] = r.value;
    for (const auto& r : g.fair_share) by_queue[r.labels[0]]["share"] = r.value;
    for (const auto& r : g.pending) by_queue[r.labels[0]]["pending"][r.labels[1]] = r.value;
    for (const auto& r : g.queue_door_gpus) by_queue[r.labels[0]]["door_gpus"][r.labels[1]] = r.value;
    for (auto& [q, j] : by_queue) {
      j["queue"] = q;
      out.push_back(std::move(j));
    }
    return tidal::HttpResponse{200, "application/json", out.dump(2) + "\n"};
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
  for (int tick = 0; !g_stop; ++tick) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (tick % 300 == 299) save_state();
  }
  spdlog::info("tidal-engine shutting down");
  if (watcher) watcher->Stop();
  save_state();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  http.Stop();
  return 0;
}
