// tidal-slurm: the Slurm front door. Mirrors slurmctld's jobs and nodes into tidal-engine and
// applies the engine's decisions (reconciler.h), every pollIntervalMs, until SIGINT/SIGTERM.
//
//   tidal-slurm --config FILE [--engine ADDR] [--slurm-conf PATH] [--metrics ADDR] [--once]
//               [--state FILE]   (read a recorded state instead of slurmctld: tests, benchmarks)
//
// Threading: the main thread runs the reconcile loop; the HTTP server's thread renders /metrics
// from the reconciler's stats (under its lock) and answers /healthz.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include <spdlog/spdlog.h>

#include "cmd/flags.h"
#include "core/metrics/registry.h"
#include "server/http_server.h"
#include "shim/slurm/config.h"
#include "shim/slurm/engine_failover.h"
#include "shim/slurm/json_state.h"
#include "shim/slurm/reconciler.h"
#include "shim/slurm/slurm_api_libslurm.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

void RegisterMetrics(tidal::metrics::Registry& reg, tidal::slurm::Reconciler& r) {
  using tidal::metrics::Sample;
  auto last = [&r](auto f) { return [&r, f] { return std::vector<Sample>{{{}, f(r.LastStats())}}; }; };
  auto total = [&r](auto f) { return [&r, f] { return std::vector<Sample>{{{}, static_cast<double>(f(r.totals()))}}; }; };
  using S = tidal::slurm::ReconcileStats;
  using T = tidal::slurm::Reconciler::Totals;
  reg.CallbackGauge("tidal_slurm_jobs_pending", "Slurm jobs (array tasks counted) pending for Tidal, last pass.", {},
                    last([](const S& s) { return static_cast<double>(s.pending); }));
  reg.CallbackGauge("tidal_slurm_jobs_running", "Slurm jobs holding nodes (running, suspended, completing), last pass.", {},
                    last([](const S& s) { return static_cast<double>(s.running); }));
  reg.CallbackGauge("tidal_slurm_jobs_skipped", "Pending Slurm jobs not sent to the engine (dependency, unreadable fields).", {},
                    last([](const S& s) { return static_cast<double>(s.skipped); }));
  reg.CallbackGauge("tidal_slurm_gpus_running", "GPUs held by running Slurm jobs, last pass.", {},
                    last([](const S& s) { return static_cast<double>(s.gpus_running); }));
  reg.CallbackGauge("tidal_slurm_poll_seconds", "Duration of the last reconcile pass (read + sync + admit + apply).", {},
                    last([](const S& s) { return s.total_s; }));
  reg.CallbackGauge("tidal_slurm_read_seconds", "Duration of the last slurmctld read.", {},
                    last([](const S& s) { return s.read_s; }));
  reg.CallbackGauge("tidal_slurm_up", "1 when the last pass read Slurm, synced and asked the engine.", {},
                    last([](const S& s) { return s.admitted ? 1.0 : 0.0; }));
  reg.CallbackCounter("tidal_slurm_passes_total", "Reconcile passes.", {}, total([](const T& t) { return t.passes; }));
  reg.CallbackCounter("tidal_slurm_read_errors_total", "Failed slurmctld reads (nothing applied).", {},
                      total([](const T& t) { return t.read_errors; }));
  reg.CallbackCounter("tidal_slurm_engine_errors_total", "Failed Sync or Admit calls.", {},
                      total([](const T& t) { return t.sync_errors + t.admit_errors; }));
  reg.CallbackCounter("tidal_slurm_released_total", "Jobs pinned and released to Slurm.", {},
                      total([](const T& t) { return t.released; }));
  reg.CallbackCounter("tidal_slurm_held_total", "Jobs held again (escaped the gate, pin on a vanished node).", {},
                      total([](const T& t) { return t.held; }));
  reg.CallbackCounter("tidal_slurm_comments_total", "AdminComment updates (why a job waits).", {},
                      total([](const T& t) { return t.comments; }));
  reg.CallbackCounter("tidal_slurm_apply_errors_total", "Failed writes to slurmctld.", {},
                      total([](const T& t) { return t.apply_errors; }));
  reg.CallbackCounter("tidal_slurm_notices_total", "Jobs signalled with their --signal for a disruption's notice.", {},
                      total([](const T& t) { return t.notices; }));
  reg.CallbackCounter("tidal_slurm_disruption_requeues_total", "Running jobs requeued (held) for the engine's disruptions.", {},
                      total([](const T& t) { return t.disruption_requeues; }));
  reg.CallbackCounter("tidal_slurm_disruption_shrinks_total",
                      "Running elastic jobs shrunk (nodes given back, the job goes on) for the engine's disruptions.", {},
                      total([](const T& t) { return t.disruption_shrinks; }));
  reg.CallbackCounter("tidal_slurm_lent_drains_total",
                      "Nodes drained (reason 'tidal: lent to kubernetes') while the engine lends them to Kubernetes.", {},
                      total([](const T& t) { return t.lent_drains; }));
  reg.CallbackCounter("tidal_slurm_lent_undrains_total", "Nodes undrained when the engine gave them back to Slurm.", {},
                      total([](const T& t) { return t.lent_undrains; }));
}

}  // namespace

constexpr const char* kUsage =
    "usage: tidal-slurm [--config FILE] [--engine ADDR] [--slurm-conf FILE] [--metrics ADDR|off]\n"
    "                   [--holder NAME] [--once 1] [--state FILE]\n"
    "  --config      the adapter's YAML config (docs/slurm.md, \"Config\"); without it, the defaults\n"
    "  --engine      tidal-engine's gRPC address (HOST:PORT, [IPv6]:PORT or unix:PATH); overrides engine:\n"
    "  --slurm-conf  slurm.conf for libslurm; overrides slurmConf:\n"
    "  --metrics     /metrics and /healthz address, or off; overrides metricsAddress:\n"
    "  --holder      the name this adapter holds the engine's Slurm door under; overrides holder:\n"
    "  --once        1 or true: one pass, exit 0 when it applied everything\n"
    "  --state       read a recorded state (JSON) instead of slurmctld: tests and benchmarks\n";

int main(int argc, char** argv) {
  tidal::cli::Args args(argv + 1, argv + argc);
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") return std::fputs(kUsage, stdout), 0;
  }
  tidal::cli::Flags flags(args);
  if (!flags.Parse({"--config", "--engine", "--slurm-conf", "--metrics", "--once", "--state", "--holder"})) {
    return std::fputs(kUsage, stderr), 2;
  }
  if (!flags.positional().empty()) {
    std::fprintf(stderr, "tidal-slurm: unexpected argument %s\n%s", flags.positional()[0].c_str(), kUsage);
    return 2;
  }
  const std::string once_flag = flags.Get("--once", "false");
  if (once_flag != "true" && once_flag != "1" && once_flag != "false" && once_flag != "0") {
    std::fprintf(stderr, "tidal-slurm: --once: %s is not 1, 0, true or false\n", once_flag.c_str());
    return 2;
  }
  tidal::slurm::AdapterConfig cfg;
  if (const std::string path = flags.Get("--config"); !path.empty()) {
    auto c = tidal::slurm::LoadAdapterConfig(path);
    if (!c.ok()) {
      std::fprintf(stderr, "tidal-slurm: %s\n", c.status().Message().c_str());
      return 2;
    }
    cfg = std::move(c).value();
  } else {
    auto c = tidal::slurm::ParseAdapterConfig("{}", "<defaults>");
    cfg = std::move(c).value();
  }
  if (const std::string v = flags.Get("--engine"); !v.empty()) {
    if (const std::string why = tidal::slurm::ParseEngineList(v, &cfg.engines); !why.empty()) {
      std::fprintf(stderr, "tidal-slurm: --engine: %s\n", why.c_str());
      return 2;
    }
  }
  if (const std::string v = flags.Get("--slurm-conf"); !v.empty()) cfg.slurm_conf = v;
  if (const std::string v = flags.Get("--metrics"); !v.empty()) cfg.metrics_address = v == "off" ? "" : v;
  if (const std::string v = flags.Get("--holder"); !v.empty()) cfg.holder = v;
  const bool once = once_flag == "true" || once_flag == "1";

  std::unique_ptr<tidal::slurm::SlurmApi> slurm;
  if (const std::string state = flags.Get("--state"); !state.empty()) {
    slurm = std::make_unique<tidal::slurm::JsonFileApi>(state);
  } else {
    auto api = tidal::slurm::LibslurmApi::Create(cfg.slurm_conf);
    if (!api.ok()) {
      std::fprintf(stderr, "tidal-slurm: %s\n", api.status().Message().c_str());
      return 2;
    }
    slurm = std::move(api).value();
  }
  auto dialed = tidal::slurm::DialEngineLinks(cfg.engines, cfg.engine_tls);
  if (!dialed.ok()) {
    std::fprintf(stderr, "tidal-slurm: %s\n", dialed.status().Message().c_str());
    return 2;
  }
  std::unique_ptr<tidal::slurm::EngineLink> engine = std::move(*dialed);
  tidal::slurm::Reconciler rec(cfg, slurm.get(), engine.get());
  tidal::slurm::JobcompReader jobcomp(cfg.jobcomp_file);
  if (!cfg.jobcomp_file.empty()) rec.SetJobcomp(&jobcomp);

  tidal::metrics::Registry reg;
  RegisterMetrics(reg, rec);
  tidal::HttpServer http;
  if (!cfg.metrics_address.empty()) {
    http.Handle("/metrics", [&](const std::string&, const std::string&) {
      tidal::HttpResponse r;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = reg.Render();
      return r;
    });
    http.Handle("/healthz", [](const std::string&, const std::string&) { return tidal::HttpResponse{200, "text/plain", "ok\n"}; });
    if (tidal::Status s = http.Start(cfg.metrics_address); !s.ok()) {
      std::fprintf(stderr, "tidal-slurm: metricsAddress %s: %s\n", cfg.metrics_address.c_str(), s.Message().c_str());
      return 2;
    }
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  spdlog::info("tidal-slurm {} -> engine {}, polling every {} ms", cfg.holder, fmt::join(cfg.engines, ", "),
               cfg.poll_interval_ms);
  std::string last_error;
  while (!g_stop) {
    const auto t0 = std::chrono::steady_clock::now();
    tidal::slurm::ReconcileStats st = rec.ReconcileOnce();
    const std::string err = st.status.ok() ? std::string() : st.status.Message();
    if (err != last_error) {
      if (err.empty()) {
        spdlog::info("tidal-slurm: reconciling again");
      } else {
        spdlog::warn("tidal-slurm: {}", err);
      }
      last_error = err;
    }
    if (st.released + st.held + st.comments + st.notices + st.disruption_requeues + st.disruption_shrinks +
                st.lent_drains + st.lent_undrains >
            0 ||
        st.resynced) {
      spdlog::info("pass: {} jobs ({} pending, {} running, {} skipped), sent {} / deleted {}, released {}, held {}, "
                   "comments {}, notices {}, requeued {}, shrunk {}, lent {} / back {}, errors {}, {:.3f}s",
                   st.jobs, st.pending, st.running, st.skipped, st.upserts, st.deletes, st.released, st.held, st.comments,
                   st.notices, st.disruption_requeues, st.disruption_shrinks, st.lent_drains, st.lent_undrains,
                   st.apply_errors, st.total_s);
    }
    if (once) return st.admitted && st.apply_errors == 0 ? 0 : 1;
    while (!g_stop && std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(cfg.poll_interval_ms)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  engine->Close();
  spdlog::info("tidal-slurm shutting down");
  return 0;
}
