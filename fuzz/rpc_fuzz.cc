// Fuzz target: every request of the engine's gRPC service (server/service.cc) on a fresh Engine.
// Input: a serialized tidal.fuzz.Session (fuzz/rpc_session.proto): calls in order, each one of the
// service's request messages. Sync messages go through FromProto(SyncRequest) (the Sync handler's
// conversion: nodes, pods with their constraints, finished jobs) into Engine::Sync; every other
// request goes to its EngineService handler as gRPC would call it (validation, conversion, the
// engine call, the response). The Sync stream's lease is taken per door as the Sync handler does,
// so Admit from that holder is fenced as in production. Input that does not parse is skipped.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rpc_session.pb.h"  // generated into build-fuzz/ (fuzz/CMakeLists.txt)
#include "server/service.h"

namespace {

// A small config with a queue tree and the default levels: quota, fair share and preemption run.
constexpr const char* kConfig = R"(
queues:
  - {name: research, weight: 2, nominal: {gpus: 16}}
  - {name: team-a, parent: research, nominal: {gpus: 8}, borrowingLimit: {gpus: 4}}
  - {name: prod, nominal: {gpus: 16}}
)";

// The clock the handlers fence leases with (service.cc NowMs).
int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const tidal::EngineConfig& Config() {
  static const tidal::EngineConfig cfg = [] {
    auto c = tidal::ParseEngineConfig(kConfig, "fuzz-config");
    if (!c.ok()) __builtin_trap();
    return *c;
  }();
  return cfg;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tidal::fuzz::Session session;
  if (!session.ParseFromArray(data, static_cast<int>(size))) return 0;
  int64_t now = 1700000000;
  auto engine = tidal::Engine::Create(Config(), [&now] { return now; });
  if (!engine.ok()) __builtin_trap();
  tidal::EngineService svc(**engine);
  bool leased[2] = {false, false};
  int calls = 0;
  for (const auto& c : session.calls()) {
    if (++calls > 64) break;
    now += std::min<uint32_t>(c.advance_s(), 86400);
    switch (c.call_case()) {
      case tidal::fuzz::Call::kSync: {
        const auto& req = c.sync();
        if (req.door() != tidal::v1::FRONT_DOOR_UNSPECIFIED && req.door() != tidal::v1::KUBERNETES &&
            req.door() != tidal::v1::SLURM) {
          break;  // the handler refuses an unknown door
        }
        const auto door = req.door() == tidal::v1::SLURM ? tidal::FrontDoor::kSlurm : tidal::FrontDoor::kKubernetes;
        bool& held = leased[door == tidal::FrontDoor::kSlurm ? 1 : 0];
        if (!held) {
          if (!req.resync()) break;  // the handler's rule: a stream starts with a full snapshot
          held = svc.leases().Acquire(door, req.holder(), req.lease_ttl_ms(), SteadyMs()).ok();
          if (!held) break;
        }
        uint64_t gen = 0;
        std::vector<tidal::NodeWarningInfo> warnings;
        (void)(*engine)->Sync(tidal::FromProto(req, door), &gen, &warnings);
        break;
      }
      case tidal::fuzz::Call::kCheckPod: {
        tidal::v1::CheckPodResponse r;
        (void)svc.CheckPod(nullptr, &c.check_pod(), &r);
        break;
      }
      case tidal::fuzz::Call::kPlanPod: {
        tidal::v1::PlanResponse r;
        (void)svc.PlanPod(nullptr, &c.plan_pod(), &r);
        break;
      }
      case tidal::fuzz::Call::kReserve: {
        tidal::v1::ReserveResponse r;
        (void)svc.Reserve(nullptr, &c.reserve(), &r);
        break;
      }
      case tidal::fuzz::Call::kUnreserve: {
        tidal::v1::UnreserveResponse r;
        (void)svc.Unreserve(nullptr, &c.unreserve(), &r);
        break;
      }
      case tidal::fuzz::Call::kPermit: {
        tidal::v1::PermitResponse r;
        (void)svc.Permit(nullptr, &c.permit(), &r);
        break;
      }
      case tidal::fuzz::Call::kPreempt: {
        tidal::v1::PreemptResponse r;
        (void)svc.Preempt(nullptr, &c.preempt(), &r);
        break;
      }
      case tidal::fuzz::Call::kBound: {
        tidal::v1::BoundResponse r;
        (void)svc.Bound(nullptr, &c.bound(), &r);
        break;
      }
      case tidal::fuzz::Call::kExplain: {
        tidal::v1::ExplainResponse r;
        (void)svc.Explain(nullptr, &c.explain(), &r);
        break;
      }
      case tidal::fuzz::Call::kOverdue: {
        tidal::v1::OverdueResponse r;
        (void)svc.Overdue(nullptr, &c.overdue(), &r);
        break;
      }
      case tidal::fuzz::Call::kNodeRefused: {
        tidal::v1::NodeRefusedResponse r;
        (void)svc.NodeRefused(nullptr, &c.node_refused(), &r);
        break;
      }
      case tidal::fuzz::Call::kEvicted: {
        tidal::v1::EvictedResponse r;
        (void)svc.Evicted(nullptr, &c.evicted(), &r);
        break;
      }
      case tidal::fuzz::Call::kAdmit: {
        tidal::v1::AdmitResponse r;
        (void)svc.Admit(nullptr, &c.admit(), &r);
        break;
      }
      case tidal::fuzz::Call::kTakeActivations: {
        tidal::v1::TakeActivationsResponse r;
        (void)svc.TakeActivations(nullptr, &c.take_activations(), &r);
        break;
      }
      case tidal::fuzz::Call::CALL_NOT_SET: break;
    }
  }
  return 0;
}
