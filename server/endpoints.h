// tidal-engine's observability wiring: the callback families read from Engine::Gauges and the HTTP
// routes (/metrics, /healthz, /readyz public; /explain, /queues, /config, /snapshot private, see
// HttpServer::Access). Kept out of main() so tests serve exactly what the binary serves.
//
// Threading: the registered callbacks and handlers run on the HTTP server's worker threads, several
// at once; they only call Engine's and ConfigWatcher's thread-safe methods and Registry::Render.
// `engine`, `registry` and `watcher` must outlive the server.
#pragma once

#include <cstdint>
#include <functional>

#include "core/metrics/registry.h"
#include "engine/engine.h"
#include "server/config_watcher.h"
#include "server/http_server.h"

namespace tidal {

// tidal_gpus, tidal_pending_workloads, ... and tidal_config_reloads_total (`watcher` may be null:
// no --config file). Refusals land in registry.status().
void RegisterEngineGauges(metrics::Registry& registry, Engine& engine, const ConfigWatcher* watcher);

// The process's own series: tidal_engine_leading (this replica schedules: `leading`) and
// tidal_state_file_saves_total (`saves`: the state-file saves that succeeded and failed so far).
// Both callbacks run on scrape threads: they must be thread-safe.
struct StateFileSaves {
  int64_t ok = 0, failed = 0;
};
void RegisterProcessGauges(metrics::Registry& registry, std::function<bool()> leading, std::function<StateFileSaves()> saves);

// /readyz answers 503 until the engine has had its first full sync from a front door.
void RegisterEngineRoutes(HttpServer& http, Engine& engine, const metrics::Registry& registry,
                          const ConfigWatcher* watcher);

}  // namespace tidal
