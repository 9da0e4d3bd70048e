// metrics_render_sample: registers the metrics tidal-engine exports (same names, types and label
// names) with awkward label values and HELP text, and prints the rendered exposition on stdout.
// test/metrics/promtool_check_test.sh pipes it into `promtool check metrics`.
#include <cmath>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "core/metrics/registry.h"

namespace m = tidal::metrics;

int main() {
  m::Registry reg;
  const std::vector<std::string> tricky = {
      "plain",
      "back\\slash",
      "quote\"d",
      "new\nline",
      "tab\there",
      "all\\\"\n three",
      "",
      "utf8 \xC3\xA9\xE2\x82\xAC",
      "bad utf8 \xFF\xC3",
      "{braces},=commas=",
      "trailing\\",
  };

  auto& pending = reg.Gauge("tidal_pending_workloads", "Pending workloads by queue and class.", {"queue", "class"});
  for (size_t i = 0; i < tricky.size(); ++i) pending.With({tricky[i], "batch"}).Set(static_cast<double>(i));

  const std::vector<std::string> sizes = {"1", "2-8", "9-64", "65+"};
  auto& admission = reg.Histogram("tidal_admission_wait_seconds",
                                  "Seconds from submission to admission.\nBy queue, class and size bucket.",
                                  {"queue", "class", "size_bucket"}, m::WaitBuckets());
  auto& tts = reg.Histogram("tidal_time_to_start_seconds",
                            "Seconds from submission until every member is bound (C:\\ style \\n).",
                            {"queue", "class", "size_bucket"}, m::WaitBuckets());
  for (const auto& s : sizes) {
    for (double v : {0.05, 1.0, 5.0, 5.000001, 42.0, 1e6}) {
      admission.With({"team-a", "training", s}).Observe(v);
      tts.With({"team-a", "training", s}).Observe(v);
    }
  }
  tts.With({"quote\"d", "new\nline", "65+"});  // an empty histogram series

  reg.CallbackGauge("tidal_gpus", "GPUs by state and pool.", {"state", "pool"}, [] {
    std::vector<m::Sample> out;
    for (const char* state : {"allocated", "idle", "reserved", "perishable", "unhealthy"}) {
      out.push_back({{state, "h100"}, 8});
      out.push_back({{state, "pool \"x\"\\y"}, 0});
    }
    return out;
  });
  reg.Gauge("tidal_fragmentation_unusable_free_gpus", "Free GPUs no pending gang shape can use.").With({}).Set(3);
  auto& largest = reg.Gauge("tidal_largest_placeable_gang_gpus", "Largest gang placeable now, per level.", {"level"});
  largest.With({"nvlink"}).Set(8);
  largest.With({"leaf"}).Set(128);
  auto& preempt = reg.Counter("tidal_preemptions_total", "Gangs preempted, by reason.", {"reason"});
  preempt.With({"quota"}).Increment();
  preempt.With({"priority"}).Increment(3);
  auto& preempted = reg.Counter("tidal_preempted_gpu_seconds_total", "GPU-seconds of work lost to preemption.",
                                {"reason"});
  preempted.With({"quota"}).Increment(1234.5);
  preempted.With({"priority"}).Increment(1e20);
  auto& cycle = reg.Histogram("tidal_cycle_duration_seconds", "Scheduling cycle duration.", {}, m::DefaultBuckets());
  cycle.With({}).Observe(0.003);
  cycle.With({}).Observe(std::numeric_limits<double>::infinity());
  {
    m::ScopedTimer t(cycle.With({}));
  }
  for (const std::string what : {"usage", "nominal", "borrowed"}) {
    reg.CallbackGauge("tidal_queue_" + what, "Per-queue " + what + " by resource.", {"queue", "resource"}, [] {
      return std::vector<m::Sample>{{{"team-a", "nvidia.com/gpu"}, 16},
                                    {{"team-a", "cpu"}, 0.5},
                                    {{"team\nb", "memory"}, 1.5e12},
                                    {{"team-c", "nvidia.com/gpu"}, std::numeric_limits<double>::quiet_NaN()}};
    });
  }
  reg.CallbackGauge("tidal_queue_fair_share_usage", "Usage over fair share, per queue.", {"queue"}, [] {
    return std::vector<m::Sample>{{{"team-a"}, 0.25}, {{"team-b"}, -std::numeric_limits<double>::infinity()},
                                  {{"team-c"}, 2.5e-7}};
  });
  auto& grpc = reg.Counter("tidal_grpc_requests_total", "gRPC requests by method and code.", {"method", "code"});
  grpc.With({"/tidal.v1.Engine/PlanPod", "OK"}).Increment(10);
  grpc.With({"/tidal.v1.Engine/PlanPod", "UNAVAILABLE"}).Increment();
  reg.Histogram("tidal_grpc_request_duration_seconds", "gRPC handling time by method.", {"method"},
                m::ExponentialBuckets(0.0001, 4, 10))
      .With({"/tidal.v1.Engine/Sync"})
      .Observe(0.02);
  auto& reloads = reg.Counter("tidal_config_reloads_total", "Config reloads by result.", {"result"});
  reloads.With({"success"}).Increment();
  reloads.With({"failure"});

  if (!reg.status().ok()) {
    std::cerr << "metrics_render_sample: registration refused: " << reg.status().Message() << "\n";
    return 1;
  }
  std::cout << reg.Render();
  return 0;
}
