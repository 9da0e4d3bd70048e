// tidalctl waves --run (waves_run.cc): drain, wait, upgrade (--exec), undrain, wave by wave.
// Threading: single-threaded.
#pragma once

#include <cstdint>
#include <string>

#include "tidal/v1/engine.grpc.pb.h"

namespace tidal::cli {

struct WaveRunOptions {
  int64_t by_s = 1800;            // --by: each wave's work is gone this long after its drain
  int64_t wave_timeout_s = 2100;  // --wave-timeout: a wave not drained by then stops the run
  std::string exec;               // --exec: run with the wave's nodes as arguments ("" = none)
  int64_t poll_ms = 1000;
};

// One PlanWaves call; false when it failed or the engine refused (said on stderr: "WHO: ADDRESS:
// <rpc error>", "WHO: <reasons>").
bool CallPlanWaves(v1::Engine::Stub& stub, const v1::WavesRequest& req, v1::WavesResponse* resp, const std::string& who,
                   const std::string& address);

// Runs `plan` (PlanWaves' answer to `req`) wave by wave, planning the rest again after each.
// 0 when every wave ran; 1 when one failed (its nodes stay drained; said on stderr).
int RunWaves(v1::Engine::Stub& stub, const v1::WavesRequest& req, v1::WavesResponse plan, const WaveRunOptions& o);

}  // namespace tidal::cli
