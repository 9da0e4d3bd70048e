#include "server/endpoints.h"

#include <map>

#include <nlohmann/json.hpp>

namespace tidal {
namespace {

// A collector for one row list of Engine::Gauges.
metrics::Collector Rows(std::vector<EngineGauges::Row> EngineGauges::*field, Engine& engine) {
  return [field, e = &engine] {
    std::vector<metrics::Sample> out;
    EngineGauges g = e->Gauges();
    for (auto& r : g.*field) out.push_back({std::move(r.labels), r.value});
    return out;
  };
}

// The queue rows (tidal_queue_usage, _nominal, _borrowed) in Prometheus' base units: the ledger
// keeps cpu in millicores, exported in cores (the unit tidal.yaml and /queues use: `cpu: 64` is
// 64, not 64000); gpus are devices and memory bytes already.
metrics::Collector QueueResourceRows(std::vector<EngineGauges::Row> EngineGauges::*field, Engine& engine) {
  return [field, e = &engine] {
    std::vector<metrics::Sample> out;
    EngineGauges g = e->Gauges();
    for (auto& r : g.*field) {
      const bool milli = r.labels.size() == 2 && r.labels[1] == "cpu";
      out.push_back({std::move(r.labels), milli ? r.value / 1000.0 : r.value});
    }
    return out;
  };
}

HttpResponse Text(int code, std::string body) { return {code, "text/plain; charset=utf-8", std::move(body)}; }

// The routes that answer text or ?format=json: any other format is refused naming the parameter
// before the handler runs, rather than answered as text a script would then fail to parse.
HttpServer::Handler FormatChecked(HttpServer::Handler h) {
  return [h = std::move(h)](const std::string& path, const std::string& query) {
    const std::string f = HttpServer::QueryParam(query, "format");
    if (!f.empty() && f != "json" && f != "text") return Text(400, "format: unknown value \"" + f + "\" (accepted: json, text)\n");
    return h(path, query);
  };
}

// /queues?format=json: one object per queue with usage, nominal, borrowed, share, headroom, pending, door GPUs.
std::string QueuesJson(Engine& engine) {
  const EngineGauges g = engine.Gauges();
  std::map<std::string, nlohmann::json> by_queue;
  for (const auto& r : g.queue_usage) by_queue[r.labels[0]]["usage"][r.labels[1]] = r.value;
  for (const auto& r : g.queue_nominal) by_queue[r.labels[0]]["nominal"][r.labels[1]] = r.value;
  for (const auto& r : g.queue_borrowed) by_queue[r.labels[0]]["borrowed"][r.labels[1]] = r.value;
  for (const auto& r : g.fair_share) by_queue[r.labels[0]]["share"] = r.value;
  for (const auto& r : g.queue_headroom) by_queue[r.labels[0]]["headroom_gpus"] = r.value;
  for (const auto& r : g.pending) by_queue[r.labels[0]]["pending"][r.labels[1]] = r.value;
  for (const auto& r : g.queue_door_gpus) by_queue[r.labels[0]]["door_gpus"][r.labels[1]] = r.value;
  nlohmann::json out = nlohmann::json::array();
  for (auto& [q, j] : by_queue) {
    j["queue"] = q;
    out.push_back(std::move(j));
  }
  return out.dump(2) + "\n";
}

// /readyz?format=json: {ready, synced, nodes, pods, awaitingDoors}; awaitingDoors names the doors
// whose first resync since the engine started is awaited (their nodes take no new work meanwhile).
std::string ReadyJson(const EngineStats& st) {
  nlohmann::json j{{"ready", st.synced}, {"synced", st.synced}, {"nodes", st.nodes}, {"pods", st.pods},
                   {"awaitingDoors", st.awaiting_doors}};
  return j.dump() + "\n";
}

}  // namespace

void RegisterEngineGauges(metrics::Registry& reg, Engine& e, const ConfigWatcher* watcher) {
  reg.CallbackGauge("tidal_gpus", "GPUs by state (allocated, idle, reserved, perishable, unhealthy) and pool.",
                    {"state", "pool"}, Rows(&EngineGauges::gpus, e));
  reg.CallbackGauge("tidal_nodes", "Nodes by health: ready, degraded (single-member work only), unhealthy, draining, "
                    "cordoned.", {"health"}, Rows(&EngineGauges::node_health, e));
  reg.CallbackGauge("tidal_pending_workloads", "Pending workloads (gangs) by queue and class.", {"queue", "class"},
                    Rows(&EngineGauges::pending, e));
  reg.CallbackGauge("tidal_backfill_reservations",
                    "Pending gangs holding a backfill reservation (nodes held for their earliest start), by queue.",
                    {"queue"}, Rows(&EngineGauges::reservations, e));
  reg.CallbackGauge("tidal_queue_usage", "Current allocation of each queue (subtree), by resource (gpus and "
                    "gpus.MODEL: devices, cpu: cores, memory: bytes).",
                    {"queue", "resource"}, QueueResourceRows(&EngineGauges::queue_usage, e));
  reg.CallbackGauge("tidal_queue_nominal", "Nominal quota of each queue, by resource (gpus and gpus.MODEL: devices, "
                    "cpu: cores, memory: bytes).", {"queue", "resource"},
                    QueueResourceRows(&EngineGauges::queue_nominal, e));
  reg.CallbackGauge("tidal_queue_borrowed", "Allocation above nominal quota (borrowed), by queue and resource (gpus "
                    "and gpus.MODEL: devices, cpu: cores, memory: bytes).",
                    {"queue", "resource"}, QueueResourceRows(&EngineGauges::queue_borrowed, e));
  reg.CallbackGauge("tidal_queue_fair_share_usage", "Weighted dominant share (allocation blended with decayed usage).",
                    {"queue"}, Rows(&EngineGauges::fair_share, e));
  reg.CallbackGauge("tidal_queue_headroom_gpus",
                    "GPUs a queue with headroom may grow to at any time (headroom.gpus, or derived from HPAs: fromHPA).",
                    {"queue"}, Rows(&EngineGauges::queue_headroom, e));
  reg.CallbackGauge("tidal_runtime_correction_ratio",
                    "A queue's learned runtime correction: the quantile (perishable.runtimeCorrection) of actual / "
                    "declared runtime of its recent completed work; absent until minSamples are in.",
                    {"queue"}, Rows(&EngineGauges::runtime_correction, e));
  reg.CallbackGauge("tidal_largest_placeable_gang_gpus",
                    "GPUs of the largest whole-node gang that fits now inside one domain of each level.", {"level"},
                    Rows(&EngineGauges::largest_gang, e));
  reg.CallbackGauge("tidal_nodes_missing_topology_label",
                    "Nodes without a valid label for a topology level (each is its own domain at that level), by level.",
                    {"level"}, Rows(&EngineGauges::missing_topology, e));
  reg.CallbackGauge("tidal_door_members", "Members (pods, Slurm job members) by front door and state (pending, bound).",
                    {"door", "state"}, Rows(&EngineGauges::door_members, e));
  reg.CallbackGauge("tidal_door_gpus", "GPUs held by bound members, by front door.", {"door"},
                    Rows(&EngineGauges::door_gpus, e));
  reg.CallbackGauge("tidal_door_nodes", "Nodes each front door reports (a shared node counts for both).", {"door"},
                    Rows(&EngineGauges::door_nodes, e));
  reg.CallbackGauge("tidal_door_awaiting_resync",
                    "1 while the engine awaits the door's first resync since it started (nodes the door may run work on take "
                    "no new work meanwhile), else 0.",
                    {"door"}, Rows(&EngineGauges::door_awaiting, e));
  reg.CallbackGauge("tidal_pool_lent_gpus", "GPUs of nodes an owner pool lends to the other front door now.",
                    {"from", "to"}, Rows(&EngineGauges::lent_gpus, e));
  reg.CallbackGauge("tidal_queue_door_gpus", "GPUs a queue's bound members hold, by front door (one ledger).",
                    {"queue", "door"}, Rows(&EngineGauges::queue_door_gpus, e));
  reg.CallbackGauge("tidal_fragmentation_unusable_free_gpus",
                    "Free GPUs on nodes with fewer free GPUs than the smallest pending member needs.", {},
                    [e = &e] { return std::vector<metrics::Sample>{{{}, e->Gauges().unusable_free_gpus}}; });
  reg.CallbackCounter("tidal_config_reloads_total", "Config hot reloads, by result.", {"result"}, [watcher] {
    const auto c = watcher != nullptr ? watcher->counts() : ConfigWatcher::Counts{};
    return std::vector<metrics::Sample>{{{"success"}, static_cast<double>(c.success)},
                                        {{"failure"}, static_cast<double>(c.failure)}};
  });
  reg.CallbackCounter("tidal_config_rollbacks_total", "Activated configs rolled back to the previous version after "
                      "breaching their rollout watch (rollout: engine/rollout.h).", {}, [watcher] {
    return std::vector<metrics::Sample>{{{}, static_cast<double>(watcher != nullptr ? watcher->counts().rollbacks : 0)}};
  });
  reg.CallbackGauge("tidal_config_watch_open", "1 while a newly activated config is watched (rollout.watchSeconds).", {},
                    [watcher] { return std::vector<metrics::Sample>{{{}, watcher != nullptr && watcher->Watching() ? 1.0 : 0.0}}; });
  // GitOps drift: the config version the engine runs, and whether the watched file holds another.
  reg.CallbackGauge("tidal_config_info", "The config the engine runs: 1 for its version (the file's canonical "
                    "JSON hash; \"builtin\" without --config).", {"version"}, [watcher] {
    return std::vector<metrics::Sample>{{{watcher != nullptr ? watcher->versions().running : "builtin"}, 1.0}};
  });
  reg.CallbackGauge("tidal_config_drift", "1 when the watched config file differs from the config the engine runs "
                    "(an edit it refused, or a file it cannot read).", {}, [watcher] {
    return std::vector<metrics::Sample>{{{}, watcher != nullptr && watcher->versions().drift() ? 1.0 : 0.0}};
  });
}

void RegisterProcessGauges(metrics::Registry& reg, std::function<bool()> leading, std::function<StateFileSaves()> saves) {
  reg.CallbackGauge("tidal_engine_leading",
                    "1 while this engine's tidal-scheduler leads (or runs without leader election), else 0.", {},
                    [leading = std::move(leading)] { return std::vector<metrics::Sample>{{{}, leading() ? 1.0 : 0.0}}; });
  // A full disk or a read-only volume loses the ledger at the next restart: TidalStateFileNotSaved.
  reg.CallbackCounter("tidal_state_file_saves_total", "State file (--state-file) saves, by result.", {"result"},
                      [saves = std::move(saves)] {
                        const StateFileSaves s = saves();
                        return std::vector<metrics::Sample>{{{"success"}, static_cast<double>(s.ok)},
                                                            {{"failure"}, static_cast<double>(s.failed)}};
                      });
}

namespace {
// /config?format=json: the running config, its version, the file's, drift and the reload counts.
std::string ConfigJson(const ConfigWatcher* watcher) {
  if (watcher == nullptr) {
    // The built-in defaults as a document: the empty one, every field its default.
    return nlohmann::json{{"file", nullptr}, {"version", "builtin"}, {"drift", false}, {"config", nlohmann::json::object()}}
               .dump(2) + "\n";
  }
  const auto v = watcher->versions();
  const auto c = watcher->counts();
  const std::string err = watcher->LastError();
  nlohmann::json j{{"file", watcher->path()},       {"version", v.running},
                   {"file_version", v.file},        {"drift", v.drift()},
                   {"reloads", {{"success", c.success}, {"failure", c.failure}, {"rollbacks", c.rollbacks}}},
                   {"watching", watcher->Watching()},
                   {"last_error", err.empty() ? nlohmann::json(nullptr) : nlohmann::json(err)},
                   {"restart_needed", watcher->RestartNeeded()},
                   {"config", v.running_doc}};
  return j.dump(2) + "\n";
}
}  // namespace

void RegisterEngineRoutes(HttpServer& http, Engine& e, const metrics::Registry& reg, const ConfigWatcher* watcher) {
  using Access = HttpServer::Access;
  http.Handle("/healthz", [](const std::string&, const std::string&) { return Text(200, "ok\n"); });
  http.Handle("/readyz", FormatChecked([&e](const std::string&, const std::string& query) {
    const auto st = e.Stats();
    const int code = st.synced ? 200 : 503;
    if (HttpServer::QueryParam(query, "format") == "json") return HttpResponse{code, "application/json", ReadyJson(st)};
    std::string awaiting;
    for (const auto& d : st.awaiting_doors) awaiting += (awaiting.empty() ? "" : ",") + d;
    return Text(code, std::string(st.synced ? "ok" : "not ready: no full sync from a front door yet") +
                          "\nsynced: " + (st.synced ? "true" : "false") + "\nnodes: " + std::to_string(st.nodes) +
                          "\npods: " + std::to_string(st.pods) +
                          "\nawaiting doors: " + (awaiting.empty() ? "none" : awaiting) + "\n");
  }));
  http.Handle("/metrics", [&reg](const std::string&, const std::string&) {
    return HttpResponse{200, std::string(metrics::kContentType), reg.Render()};
  });
  // Explain API: /explain?workload=NS/NAME[&format=json] and /queues[?format=json].
  http.Handle(
      "/explain",
      FormatChecked([&e](const std::string&, const std::string& query) {
        const std::string name = HttpServer::QueryParam(query, "workload");
        if (name.empty()) return Text(400, "usage: /explain?workload=NAMESPACE/NAME[&format=json]\n");
        auto j = e.ExplainJson(name);
        if (!j.ok()) return Text(404, j.status().Message() + "\n");
        if (HttpServer::QueryParam(query, "format") == "json") return HttpResponse{200, "application/json", j->dump(2) + "\n"};
        return Text(200, (*j)["text"].get<std::string>());
      }),
      Access::kPrivate);
  http.Handle(
      "/config",
      FormatChecked([watcher](const std::string&, const std::string& query) {
        if (HttpServer::QueryParam(query, "format") == "json") return HttpResponse{200, "application/json", ConfigJson(watcher)};
        if (watcher == nullptr) return Text(200, "no --config file; built-in defaults\n");
        const std::string err = watcher->LastError();
        const auto c = watcher->counts();
        const auto v = watcher->versions();
        std::string restart;
        for (const auto& f : watcher->RestartNeeded()) restart += (restart.empty() ? "" : ", ") + f;
        if (!restart.empty()) restart = "restart needed: " + restart + " (read at start only; the engine runs the value it started with)\n";
        return Text(200, "version: " + v.running + (v.drift() ? " (the file is " + (v.file.empty() ? std::string("unreadable") : v.file) + ": drift)" : "") +
                             "\nreloads: " + std::to_string(c.success) + " ok, " + std::to_string(c.failure) + " refused\n" +
                             restart + (err.empty() ? "last: ok\n" : "last refused:\n" + err));
      }),
      Access::kPrivate);
  http.Handle(
      "/queues",
      FormatChecked([&e](const std::string&, const std::string& query) {
        if (HttpServer::QueryParam(query, "format") != "json") return Text(200, e.DescribeQueues());
        return HttpResponse{200, "application/json", QueuesJson(e)};
      }),
      Access::kPrivate);
  // Policy dry-runs (tidalctl snapshot, docs/simulator.md): Engine::Snapshot plus the config it runs.
  http.Handle(
      "/snapshot",
      [&e, watcher](const std::string&, const std::string&) {
        nlohmann::json s = e.Snapshot();
        if (watcher == nullptr) {
          s["config"] = {{"version", "builtin"}, {"document", nullptr}};
        } else {
          const auto v = watcher->versions();
          s["config"] = {{"version", v.running}, {"document", v.running_doc}};
        }
        return HttpResponse{200, "application/json", s.dump() + "\n"};
      },
      Access::kPrivate);
}

}  // namespace tidal
