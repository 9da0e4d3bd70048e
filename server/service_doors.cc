// EngineService's front-door handlers: which doors this replica serves (engine/door_lease.h,
// "Replicas"), the Slurm door's Admit, and cross-door activations. Threading: as service.cc (gRPC's
// handler threads; state in Engine and DoorLeases, each locked; served_mu_ orders the served looks).
#include "server/service.h"
#include "server/service_internal.h"

namespace tidal {

using service_internal::DoorFromProto;
using service_internal::Invalid;
using service_internal::NowMs;
using service_internal::ToProto;

void EngineService::ExpectKubernetesDoor(bool expected) {
  leases_.ExpectKubernetes(expected);
  RefreshServedDoors();
}

bool EngineService::Leading() { return leases_.Leading(NowMs()); }

void EngineService::RefreshServedDoors() {
  // Serialised: two handlers must not tell the engine their looks in the reverse order.
  std::lock_guard<std::mutex> lock(served_mu_);
  engine_.SetDoorServed(FrontDoor::kSlurm, leases_.NotServed(FrontDoor::kSlurm, NowMs()).empty());
}

grpc::Status EngineService::Admit(grpc::ServerContext*, const v1::AdmitRequest* req, v1::AdmitResponse* resp) {
  return Observe("Admit", [&]() -> grpc::Status {
    auto door = DoorFromProto(req->door(), "door");
    if (!door.ok()) return Invalid("door", door.status().reasons().front());
    if (req->max_waiting() < 0) return Invalid("max_waiting", "must not be negative");
    if (!leases_.Holds(*door, req->holder(), NowMs())) {
      RefreshServedDoors();
      if (std::string why = leases_.NotServed(*door, NowMs()); !why.empty()) {
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, why);
      }
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "holder: \"" + req->holder() + "\" does not hold the " + std::string(FrontDoorName(*door)) +
                              " door's Sync lease in this engine's leading spell (open a Sync stream first)");
    }
    AdmitResult r = engine_.Admit(*door, req->max_waiting());
    ToProto(r.status, resp->mutable_status());
    for (const auto& a : r.admitted) {
      v1::Admission* out = resp->add_admitted();
      out->set_gang(a.gang);
      for (const auto& n : a.nodes) out->add_nodes(n);
      out->set_domain(a.domain);
      out->set_explanation(a.explanation);
    }
    for (const auto& w : r.waiting) {
      v1::Waiting* out = resp->add_waiting();
      out->set_gang(w.gang);
      out->set_reason(w.reason);
    }
    resp->set_tried(r.tried);
    for (const auto& n : r.lent_nodes) resp->add_lent_nodes(n);
    return grpc::Status::OK;
  });
}

grpc::Status EngineService::TakeActivations(grpc::ServerContext*, const v1::TakeActivationsRequest* req,
                                            v1::TakeActivationsResponse* resp) {
  return Observe("TakeActivations", [&]() -> grpc::Status {
    auto door = DoorFromProto(req->door(), "door");
    if (!door.ok()) return Invalid("door", door.status().reasons().front());
    for (const auto& p : engine_.TakeActivations(*door)) ToProto(p, resp->add_pods());
    return grpc::Status::OK;
  });
}

}  // namespace tidal
