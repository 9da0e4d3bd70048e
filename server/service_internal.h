// Helpers EngineService's handler files share (service.cc, service_doors.cc); not an API of its own.
// Threading: pure functions (NowMs and SteadyFromUnixMs read the clocks).
#pragma once

#include <cstdint>
#include <string>

#include <grpcpp/grpcpp.h>

#include "core/api/status.h"
#include "core/api/workload.h"
#include "engine/engine_results.h"
#include "tidal/v1/engine.pb.h"

namespace tidal::service_internal {

// INVALID_ARGUMENT naming the field.
grpc::Status Invalid(const std::string& field, const std::string& why);
// The steady clock the door leases run on (ms).
int64_t NowMs();
// A Unix time (the scheduler's wall clock, SyncRequest.leadership) on NowMs's steady clock: a
// wall-clock step after it was read moves nothing. 0 stays 0.
int64_t SteadyFromUnixMs(int64_t unix_ms);
// UNSPECIFIED reads as Kubernetes (shims older than the second door).
StatusOr<FrontDoor> DoorFromProto(v1::FrontDoor d, const std::string& field);
void ToProto(const PodRefInfo& p, v1::PodRef* out);

}  // namespace tidal::service_internal
