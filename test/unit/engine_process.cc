#include "test/unit/engine_process.h"

#include <map>

#include <nlohmann/json.hpp>

namespace tidal::testing {
namespace {

// The value of `key` in "a=1&key=v" ("" when absent), as cmd/tidal_engine/main.cc reads it.
std::string Param(const std::string& query, const std::string& key) {
  size_t pos = 0;
  while (pos <= query.size()) {
    const size_t amp = query.find('&', pos);
    const std::string kv = query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    if (kv.rfind(key + "=", 0) == 0) return kv.substr(key.size() + 1);
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
  return "";
}

}  // namespace

Status EngineProcess::Start(const std::string& config_path, std::chrono::milliseconds poll) {
  auto cfg = LoadEngineConfig(config_path);
  if (!cfg.ok()) return cfg.status();
  auto engine = Engine::Create(*cfg);
  if (!engine.ok()) return engine.status();
  engine_ = std::move(engine).value();
  watcher_ = std::make_unique<ConfigWatcher>(*engine_, config_path, poll);
  engine_metrics_ = std::make_unique<EngineMetrics>(registry_);
  RegisterGauges();
  if (Status s = registry_.status(); !s.ok()) return s;
  log_file_ = std::tmpfile();
  if (log_file_ == nullptr) return Status::Error("tmpfile: cannot open the decision log");
  decision_log_ = std::make_unique<DecisionLog>(log_file_, 200.0);
  engine_->SetObservability(engine_metrics_.get(), decision_log_.get());
  watcher_->Start();

  service_ = std::make_unique<EngineService>(*engine_, engine_metrics_.get());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &grpc_port_);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || grpc_port_ == 0) return Status::Error("gRPC: cannot listen on 127.0.0.1:0");
  RegisterHandlers();
  return http_.Start("127.0.0.1:0");
}

void EngineProcess::Stop() {
  if (stopped_ || !engine_) return;
  stopped_ = true;
  if (watcher_) watcher_->Stop();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  http_.Stop();
  if (engine_) engine_->SetObservability(nullptr, nullptr);
  if (log_file_ != nullptr) std::fclose(log_file_);
  log_file_ = nullptr;
}

std::unique_ptr<v1::Engine::Stub> EngineProcess::NewStub() const {
  return v1::Engine::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port_), grpc::InsecureChannelCredentials()));
}

void EngineProcess::RegisterGauges() {
  Engine* e = engine_.get();
  auto rows = [e](std::vector<EngineGauges::Row> EngineGauges::*field) {
    return [field, e] {
      std::vector<metrics::Sample> out;
      EngineGauges g = e->Gauges();
      for (auto& r : g.*field) out.push_back({std::move(r.labels), r.value});
      return out;
    };
  };
  registry_.CallbackGauge("tidal_gpus", "GPUs by state and pool.", {"state", "pool"}, rows(&EngineGauges::gpus));
  registry_.CallbackGauge("tidal_pending_workloads", "Pending workloads by queue and class.", {"queue", "class"},
                          rows(&EngineGauges::pending));
  registry_.CallbackGauge("tidal_backfill_reservations", "Pending gangs holding a backfill reservation.", {"queue"},
                          rows(&EngineGauges::reservations));
  registry_.CallbackGauge("tidal_queue_usage", "Allocation of each queue.", {"queue", "resource"},
                          rows(&EngineGauges::queue_usage));
  registry_.CallbackGauge("tidal_queue_fair_share_usage", "Weighted dominant share.", {"queue"},
                          rows(&EngineGauges::fair_share));
  registry_.CallbackGauge("tidal_largest_placeable_gang_gpus", "Largest placeable gang by level.", {"level"},
                          rows(&EngineGauges::largest_gang));
  registry_.CallbackGauge("tidal_door_members", "Members by front door and state.", {"door", "state"},
                          rows(&EngineGauges::door_members));
  registry_.CallbackGauge("tidal_door_gpus", "GPUs held by bound members, by front door.", {"door"},
                          rows(&EngineGauges::door_gpus));
  registry_.CallbackGauge("tidal_fragmentation_unusable_free_gpus", "Free GPUs too few for any pending member.", {},
                          [e] { return std::vector<metrics::Sample>{{{}, e->Gauges().unusable_free_gpus}}; });
  ConfigWatcher* w = watcher_.get();
  registry_.CallbackCounter("tidal_config_reloads_total", "Config hot reloads, by result.", {"result"}, [w] {
    const auto c = w->counts();
    return std::vector<metrics::Sample>{{{"success"}, static_cast<double>(c.success)},
                                        {{"failure"}, static_cast<double>(c.failure)}};
  });
}

void EngineProcess::RegisterHandlers() {
  Engine* e = engine_.get();
  http_.Handle("/healthz", [](const std::string&, const std::string&) { return HttpResponse{200, "text/plain", "ok\n"}; });
  http_.Handle("/metrics", [this](const std::string&, const std::string&) {
    return HttpResponse{200, std::string(metrics::kContentType), registry_.Render()};
  });
  http_.Handle("/explain", [e](const std::string&, const std::string& query) {
    const std::string name = Param(query, "workload");
    if (name.empty()) return HttpResponse{400, "text/plain", "usage: /explain?workload=NAMESPACE/NAME\n"};
    auto j = e->ExplainJson(name);
    if (!j.ok()) return HttpResponse{404, "text/plain", j.status().Message() + "\n"};
    if (Param(query, "format") == "json") return HttpResponse{200, "application/json", j->dump(2) + "\n"};
    return HttpResponse{200, "text/plain", (*j)["text"].get<std::string>()};
  });
  http_.Handle("/config", [this](const std::string&, const std::string&) {
    const auto c = watcher_->counts();
    return HttpResponse{200, "text/plain",
                        "reloads: " + std::to_string(c.success) + " ok, " + std::to_string(c.failure) + " refused\n" +
                            watcher_->LastError()};
  });
  http_.Handle("/queues", [e](const std::string&, const std::string& query) {
    if (Param(query, "format") != "json") return HttpResponse{200, "text/plain", e->DescribeQueues()};
    const EngineGauges g = e->Gauges();
    std::map<std::string, nlohmann::json> by_queue;
    for (const auto& r : g.queue_usage) by_queue[r.labels[0]]["usage"][r.labels[1]] = r.value;
    for (const auto& r : g.fair_share) by_queue[r.labels[0]]["share"] = r.value;
    nlohmann::json out = nlohmann::json::array();
    for (auto& [q, j] : by_queue) {
      j["queue"] = q;
      out.push_back(std::move(j));
    }
    return HttpResponse{200, "application/json", out.dump(2) + "\n"};
  });
}

}  // namespace tidal::testing
