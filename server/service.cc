#include "server/service.h"
#include "server/service_internal.h"

#include <chrono>

#include <google/protobuf/descriptor.h>

namespace tidal {

namespace service_internal {

grpc::Status Invalid(const std::string& field, const std::string& why) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, field + ": " + why);
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t SteadyFromUnixMs(int64_t unix_ms) {
  if (unix_ms <= 0) return 0;
  const int64_t wall =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return NowMs() + (unix_ms - wall);
}

StatusOr<FrontDoor> DoorFromProto(v1::FrontDoor d, const std::string& field) {
  switch (d) {
    case v1::FRONT_DOOR_UNSPECIFIED:
    case v1::KUBERNETES: return FrontDoor::kKubernetes;
    case v1::SLURM: return FrontDoor::kSlurm;
    default: return Status::Error(field + ": unknown front door " + std::to_string(static_cast<int>(d)));
  }
}

void ToProto(const PodRefInfo& p, v1::PodRef* out) {
  out->set_uid(p.uid);
  out->set_namespace_(p.ns);
  out->set_name(p.name);
}

}  // namespace service_internal

using service_internal::DoorFromProto;
using service_internal::Invalid;
using service_internal::NowMs;
using service_internal::SteadyFromUnixMs;
using service_internal::ToProto;

namespace {

Resources FromProto(const v1::Resources& r) { return Resources{r.gpus(), r.cpu_milli(), r.memory_bytes()}; }

grpc::Status CheckRef(const v1::PodRef& r, const std::string& field) {
  if (r.uid().empty()) return Invalid(field + ".uid", "must be set");
  return grpc::Status::OK;
}

}  // namespace

void ToProto(const Status& s, v1::Status* out) {
  switch (s.code()) {
    case StatusCode::kSuccess: out->set_code(v1::Status::SUCCESS); break;
    case StatusCode::kUnschedulable: out->set_code(v1::Status::UNSCHEDULABLE); break;
    case StatusCode::kUnschedulableAndUnresolvable: out->set_code(v1::Status::UNSCHEDULABLE_AND_UNRESOLVABLE); break;
    case StatusCode::kWait: out->set_code(v1::Status::WAIT); break;
    case StatusCode::kError: out->set_code(v1::Status::ERROR); break;
  }
  for (const auto& r : s.reasons()) out->add_reasons(r);
  out->set_plugin(s.plugin());
}

namespace {

StatusOr<SelectorTerm> FromProto(const v1::NodeSelectorTerm& t, const std::string& field) {
  SelectorTerm out;
  auto reqs = [&](const auto& list, const std::string& f, std::vector<SelectorRequirement>& to) -> Status {
    for (int i = 0; i < list.size(); ++i) {
      const auto& r = list[i];
      const std::string at = f + "[" + std::to_string(i) + "]";
      auto op = ParseSelectorOp(r.operator_(), at + ".operator");
      if (!op.ok()) return op.status();
      SelectorRequirement x{r.key(), *op, {r.values().begin(), r.values().end()}};
      const bool needs_values = *op == SelectorOp::kIn || *op == SelectorOp::kNotIn;
      const bool one_value = *op == SelectorOp::kGt || *op == SelectorOp::kLt;
      if ((needs_values && x.values.empty()) || (one_value && x.values.size() != 1) ||
          (!needs_values && !one_value && !x.values.empty())) {
        return Status::Unresolvable(at + ".values: " + std::to_string(x.values.size()) + " value(s) for operator " +
                                        r.operator_(),
                                    "podspec");
      }
      to.push_back(std::move(x));
    }
    return Status::Ok();
  };
  if (Status s = reqs(t.match_expressions(), field + ".matchExpressions", out.expressions); !s.ok()) return s;
  if (Status s = reqs(t.match_fields(), field + ".matchFields", out.fields); !s.ok()) return s;
  return out;
}

// The pod's node-static constraints; an invalid one is the pod's error (reported on the pod).
StatusOr<std::shared_ptr<const NodeConstraints>> ConstraintsFromProto(const v1::Pod& p) {
  auto c = std::make_shared<NodeConstraints>();
  c->node_selector.insert(p.node_selector().begin(), p.node_selector().end());
  const std::string aff = "spec.affinity.nodeAffinity.";
  for (int i = 0; i < p.required_node_affinity_size(); ++i) {
    auto t = FromProto(p.required_node_affinity(i),
                       aff + "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[" + std::to_string(i) + "]");
    if (!t.ok()) return t.status();
    c->required.push_back(std::move(t).value());
  }
  for (int i = 0; i < p.preferred_node_affinity_size(); ++i) {
    const auto& pt = p.preferred_node_affinity(i);
    const std::string f = aff + "preferredDuringSchedulingIgnoredDuringExecution[" + std::to_string(i) + "]";
    if (pt.weight() < 1 || pt.weight() > 100) {
      return Status::Unresolvable(f + ".weight: must be 1..100, got " + std::to_string(pt.weight()), "podspec");
    }
    auto t = FromProto(pt.preference(), f + ".preference");
    if (!t.ok()) return t.status();
    c->preferred.push_back({pt.weight(), std::move(t).value()});
  }
  for (int i = 0; i < p.tolerations_size(); ++i) {
    const auto& t = p.tolerations(i);
    const std::string f = "spec.tolerations[" + std::to_string(i) + "]";
    Toleration x;
    x.key = t.key();
    x.value = t.value();
    if (t.operator_() == "Exists") {
      x.exists = true;
    } else if (!t.operator_().empty() && t.operator_() != "Equal") {
      return Status::Unresolvable(f + ".operator: unknown \"" + t.operator_() + "\" (accepted: Equal, Exists)", "podspec");
    }
    if (!t.effect().empty()) x.effect = ParseTaintEffect(t.effect());
    c->tolerations.push_back(std::move(x));
  }
  if (p.self_anti_affinity_key() == "kubernetes.io/hostname") c->max_members_per_node = 1;
  if (c->Empty()) return std::shared_ptr<const NodeConstraints>();
  return std::shared_ptr<const NodeConstraints>(std::move(c));
}

}  // namespace

NodeInfo FromProto(const v1::Node& n) {
  NodeInfo o;
  o.name = n.name();
  o.labels.insert(n.labels().begin(), n.labels().end());
  o.capacity = FromProto(n.capacity());
  o.ready = n.ready();
  o.unschedulable = n.unschedulable();
  o.gpu_model = n.gpu_model();
  for (const auto& t : n.taints()) o.taints.push_back(Taint{t.key(), t.value(), ParseTaintEffect(t.effect())});
  for (const auto& c : n.conditions()) o.conditions.push_back({c.type(), c.status(), c.reason()});
  o.annotations.insert(n.annotations().begin(), n.annotations().end());
  return o;
}

PodInfo FromProto(const v1::Pod& p) {
  PodInfo o;
  o.uid = p.uid();
  o.ns = p.namespace_();
  o.name = p.name();
  o.scheduler_name = p.scheduler_name();
  o.node_name = p.node_name();
  switch (p.phase()) {
    case v1::Pod::RUNNING: o.phase = PodPhase::kRunning; break;
    case v1::Pod::SUCCEEDED: o.phase = PodPhase::kSucceeded; break;
    case v1::Pod::FAILED: o.phase = PodPhase::kFailed; break;
    case v1::Pod::UNKNOWN: o.phase = PodPhase::kUnknown; break;
    default: o.phase = PodPhase::kPending; break;
  }
  o.request = FromProto(p.request());
  o.priority = p.priority();
  o.labels.insert(p.labels().begin(), p.labels().end());
  o.annotations.insert(p.annotations().begin(), p.annotations().end());
  o.creation_unix = p.creation_unix();
  o.start_unix = p.start_unix();
  o.terminating = p.terminating();
  if (auto c = ConstraintsFromProto(p); c.ok()) {
    o.constraints = std::move(c).value();
  } else {
    o.spec_error = c.status();
  }
  return o;
}

namespace {
// FinishedJob.end as the engine's classes (engine/engine_runtime.cc).
WorkloadEnd EndFromProto(v1::FinishedJob::End e) {
  switch (e) {
    case v1::FinishedJob::COMPLETED: return WorkloadEnd::kCompleted;
    case v1::FinishedJob::TIMEOUT: return WorkloadEnd::kTimeout;
    case v1::FinishedJob::PREEMPTED: return WorkloadEnd::kDisrupted;
    case v1::FinishedJob::CANCELLED: return WorkloadEnd::kCancelled;
    case v1::FinishedJob::FAILED: return WorkloadEnd::kFailed;
    default: return WorkloadEnd::kUnknown;  // END_UNKNOWN, or a value of a newer door
  }
}
}  // namespace

SyncBatch FromProto(const v1::SyncRequest& req, FrontDoor door) {
  SyncBatch b;
  b.door = door;
  b.resync = req.resync();
  b.snapshot_continues = req.snapshot_continues();
  for (const auto& n : req.upsert_nodes()) b.upsert_nodes.push_back(FromProto(n));
  b.delete_nodes.assign(req.delete_nodes().begin(), req.delete_nodes().end());
  for (const auto& p : req.upsert_pods()) {
    b.upsert_pods.push_back(FromProto(p));
    b.upsert_pods.back().door = door;
  }
  b.delete_pods.assign(req.delete_pods().begin(), req.delete_pods().end());
  b.vanished_pods.assign(req.vanished_pods().begin(), req.vanished_pods().end());
  for (const auto& a : req.upsert_autoscalers()) {
    AutoscalerInfo o;
    o.ns = a.namespace_();
    o.name = a.name();
    o.target_kind = a.target_kind();
    o.target_name = a.target_name();
    o.target_api_version = a.target_api_version();
    o.max_replicas = a.max_replicas();
    o.target_found = a.target_found() && a.has_replica();
    if (o.target_found) {
      o.scheduler_name = a.replica().scheduler_name();
      o.labels.insert(a.replica().labels().begin(), a.replica().labels().end());
      o.annotations.insert(a.replica().annotations().begin(), a.replica().annotations().end());
      o.gpus_per_replica = a.replica().request().gpus();
    }
    b.upsert_autoscalers.push_back(std::move(o));
  }
  b.delete_autoscalers.assign(req.delete_autoscalers().begin(), req.delete_autoscalers().end());
  for (const auto& f : req.finished()) {
    b.finished.push_back({f.gang(), f.start_unix(), f.end_unix(), f.members(), f.gpus_per_member(), EndFromProto(f.end())});
  }
  return b;
}

EngineService::EngineService(Engine& engine, EngineMetrics* metrics) : engine_(engine), metrics_(metrics) {
  if (metrics_ == nullptr) return;
  const auto* service = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(v1::Engine::service_full_name());
  for (int i = 0; service != nullptr && i < service->method_count(); ++i) metrics_->grpc_requests.With({service->method(i)->name(), "OK"});
}

grpc::Status EngineService::Observe(const char* method, const std::function<grpc::Status()>& body, bool latency) {
  const auto t0 = std::chrono::steady_clock::now();
  grpc::Status s = body();
  if (metrics_ != nullptr) {
    static constexpr const char* kCodes[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                                             "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                             "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
                                             "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
    const int c = static_cast<int>(s.error_code());
    metrics_->grpc_requests.With({method, c >= 0 && c <= 16 ? kCodes[c] : "UNKNOWN"}).Increment();
    if (latency) metrics_->grpc_duration.With({method}).Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return s;
}

grpc::Status EngineService::Sync(grpc::ServerContext*, grpc::ServerReaderWriter<v1::SyncAck, v1::SyncRequest>* stream) {
  return Observe("Sync", [&]() -> grpc::Status {
    v1::SyncRequest req;
    bool first = true;
    FrontDoor door = FrontDoor::kKubernetes;
    uint64_t token = 0;
    // The lease lapses (or starts its ttl) when the stream ends, however it ends; the Kubernetes
    // door's leadership is unknown from then on.
    struct Releaser {
      EngineService& s;
      const FrontDoor& d;
      const uint64_t& t;
      ~Releaser() {
        if (t == 0) return;
        s.leases_.Release(d, t, NowMs());
        if (d == FrontDoor::kKubernetes) {
          s.leases_.ForgetLeadership();
          s.RefreshServedDoors();
        }
      }
    } releaser{*this, door, token};
    while (stream->Read(&req)) {
      auto d = DoorFromProto(req.door(), "door");
      if (!d.ok()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, d.status().reasons().front());
      if (first) {
        if (!req.resync()) {
          return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                              "resync: the first message of a Sync stream must be a full snapshot (resync=true)");
        }
        door = *d;
        if (std::string why = leases_.NotServed(door, NowMs()); !why.empty()) {
          RefreshServedDoors();
          return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, why);
        }
        auto t = leases_.Acquire(door, req.holder(), req.lease_ttl_ms(), NowMs());
        if (!t.ok()) return grpc::Status(grpc::StatusCode::ABORTED, t.status().reasons().front());
        token = *t;
        RefreshServedDoors();
      } else if (req.door() != v1::FRONT_DOOR_UNSPECIFIED && *d != door) {
        return Invalid("door", "a Sync stream speaks for one door (" + std::string(FrontDoorName(door)) + "), got " +
                                   std::string(FrontDoorName(*d)));
      } else if (!leases_.StreamServed(door, token, NowMs())) {
        RefreshServedDoors();
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            "front door " + std::string(FrontDoorName(door)) +
                                ": this engine's replica stood by since the stream began (only the leading replica's "
                                "engine serves it); open a new stream, with a resync, on the leading replica's engine");
      }
      first = false;
      if (req.has_leadership()) {
        if (door != FrontDoor::kKubernetes) return Invalid("leadership", "only the kubernetes door reports leadership");
        leases_.SetLeadership(req.leadership().election(), SteadyFromUnixMs(req.leadership().leading_until_unix_ms()), NowMs());
        RefreshServedDoors();
      }
      const auto t0 = std::chrono::steady_clock::now();
      SyncBatch b = FromProto(req, door);
      uint64_t gen = 0;
      std::vector<NodeWarningInfo> warnings;
      Status st = engine_.Sync(std::move(b), &gen, &warnings);
      if (metrics_ != nullptr) {  // one observation per batch: a stream lives as long as its door
        metrics_->grpc_duration.With({"Sync"}).Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      v1::SyncAck ack;
      for (const auto& w : warnings) {
        v1::NodeWarning* out = ack.add_node_warnings();
        out->set_node(w.node);
        out->set_reason(w.reason);
        out->set_message(w.message);
      }
      ack.set_engine_epoch(engine_.epoch());
      ack.set_generation(gen);
      ToProto(st, ack.mutable_status());
      if (!stream->Write(ack)) break;
    }
    return grpc::Status::OK;
  }, /*latency=*/false);
}

grpc::Status EngineService::CheckPod(grpc::ServerContext*, const v1::PodRef* req, v1::CheckPodResponse* resp) {
  return Observe("CheckPod", [&]() -> grpc::Status {
    if (auto s = CheckRef(*req, "pod"); !s.ok()) return s;
    std::string gang;
    ToProto(engine_.CheckPod(req->uid(), &gang), resp->mutable_status());
    resp->set_gang(gang);
    return grpc::Status::OK;
  });
}

grpc::Status EngineService::PlanPod(grpc::ServerContext*, const v1::PodRef* req, v1::PlanResponse* resp) {
  return Observe("PlanPod", [&]() -> grpc::Status {
    if (auto s = CheckRef(*req, "pod"); !s.ok()) return s;
    PlanResult r = engine_.PlanPod(req->uid());
    ToProto(r.status, resp->mutable_status());
    resp->set_node_name(r.node);
    resp->set_gang(r.gang);
    resp->set_domain(r.domain);
    resp->set_explanation(r.explanation);
    for (const auto& a : r.activate) ToProto(a, resp->add_activate());
    return grpc::Status::OK;
  });
}

grpc::Status EngineService::Reserve(grpc::ServerContext*, const v1::ReserveRequest* req, v1::ReserveResponse* resp) {
  return Observe("Reserve", [&]() -> grpc::Status {
    if (auto s = CheckRef(req->pod(), "pod"); !s.ok()) return s;
    if (req->node_name().empty()) return Invalid("node_name", "must be set");
    ToProto(engine_.Reserve(req->pod().uid(), req->node_name()), resp->mutable_status());
    return grpc::Status::OK;
  });
}

grpc::Status EngineService::Unreserve(grpc::ServerContext*, const v1::PodRef* req, v1::UnreserveResponse* resp) {
  return Observe("Unreserve", [&]() -> grpc::Status {
    if (auto s = CheckRef(*req, "pod"); !s.ok()) return s;
    for (const auto& p : engine_.Unreserve(req->uid())) ToProto(p, resp->add_released());
    return grpc::Status::OK;
  });
}

grpc::Status EngineService::Permit(grpc::ServerContext*, const v1::PodRef* req, v1::PermitResponse* resp) {
  return Observe("Permit", [&]() -> grpc::Status {
    if (auto s = CheckRef(*req, "pod"); !s.ok()) return s;
    PermitResult r = engine_.Permit(req->uid());
    ToProto(r.status, resp->mutable_status());
    resp->set_wait_timeout_ms(r.wait_timeout_ms);
    for (const auto& p : r.allow) ToProto(p, resp->add_allow());
    return grpc::Status::OK;
  });
}

grpc::Status EngineService::Preempt(grpc::ServerContext*, const v1::PodRef* req, v1::PreemptResponse* resp) {
  return Observe("Preempt", [&]() -> grpc::Status {
    if (auto s = CheckRef(*req, "pod"); !s.ok()) return s;
    PreemptResult r = engine_.Preempt(req->uid());
    ToProto(r.status, resp->mutable_status());
    for (const auto& v : r.victims) ToProto(v, resp->add_victims());
    for (const auto& [id, pods] : r.victim_gangs) {
      v1::VictimGang* g = resp->add_victim_gangs();
      g->set_id(id);
      for (const auto& p : pods) ToProto(p, g->add_pods());
      if (size_t i = static_cast<size_t>(resp->victim_gangs_size() - 1); i < r.victim_notice.size()) {
        g->set_notice_seconds(r.victim_notice[i].first);
        g->set_deadline_unix(r.victim_notice[i].second);
      }
      if (size_t i = static_cast<size_t>(resp->victim_gangs_size() - 1); i < r.victim_doors.size()) {
        g->set_door(r.victim_doors[i] == FrontDoor::kSlurm ? v1::SLURM : v1::KUBERNETES);
      }
      if (size_t i = static_cast<size_t>(resp->victim_gangs_size() - 1); i < r.victim_queues.size()) {
        g->set_queue(r.victim_queues[i]);
      }
    }
    resp->set_nominated_node(r.nominated_domain);
    resp->set_reason(r.reason);
    resp->set_queue(r.queue);
    return grpc::Status::OK;
  });
}

grpc::Status EngineService::Bound(grpc::ServerContext*, const v1::ReserveRequest* req, v1::BoundResponse* resp) {
  return Observe("Bound", [&]() -> grpc::Status {
    if (auto s = CheckRef(req->pod(), "pod"); !s.ok()) return s;
    if (req->node_name().empty()) return Invalid("node_name", "must be set");
    ToProto(engine_.Bound(req->pod().uid(), req->node_name()), resp->mutable_status());
    return grpc::Status::OK;
  });
}

grpc::Status EngineService::Explain(grpc::ServerContext*, const v1::ExplainRequest* req, v1::ExplainResponse* resp) {
  return Observe("Explain", [&]() -> grpc::Status {
    if (req->workload().empty()) return Invalid("workload", "must be set");
    std::string text;
    ToProto(engine_.Explain(req->workload(), &text), resp->mutable_status());
    resp->set_text(text);
    return grpc::Status::OK;
  });
}

grpc::Status EngineService::Overdue(grpc::ServerContext*, const v1::OverdueRequest*, v1::OverdueResponse* resp) {
  return Observe("Overdue", [&]() -> grpc::Status {
    for (const auto& o : engine_.Overdue()) {
      v1::OverduePod* out = resp->add_pods();
      ToProto(o.pod, out->mutable_pod());
      out->set_reason(o.reason);
    }
    ToProto(Status::Ok(), resp->mutable_status());
    return grpc::Status::OK;
  });
}

grpc::Status EngineService::NodeRefused(grpc::ServerContext*, const v1::NodeRefusal* req, v1::NodeRefusedResponse* resp) {
  return Observe("NodeRefused", [&]() -> grpc::Status {
    if (auto s = CheckRef(req->pod(), "pod"); !s.ok()) return s;
    if (req->node_name().empty()) return Invalid("node_name", "must be set");
    std::string why = req->plugin();
    for (const auto& r : req->reasons()) why += (why.empty() ? "" : ": ") + r;
    ToProto(engine_.NodeRefused(req->pod().uid(), req->node_name(), why), resp->mutable_status());
    return grpc::Status::OK;
  });
}

// --- preemption: Evicted (engine_preempt.cc)
grpc::Status EngineService::Evicted(grpc::ServerContext*, const v1::EvictedRequest* req, v1::EvictedResponse* resp) {
  return Observe("Evicted", [&]() -> grpc::Status {
    EvictionReport r;
    if (req->has_preemptor() && !req->preemptor().uid().empty()) {
      if (auto s = CheckRef(req->preemptor(), "preemptor"); !s.ok()) return s;
      r.preemptor_uid = req->preemptor().uid();
    }
    for (int i = 0; i < req->pods_size(); ++i) {
      if (auto s = CheckRef(req->pods(i), "pods[" + std::to_string(i) + "]"); !s.ok()) return s;
      r.evicted.push_back({req->pods(i).uid(), req->pods(i).namespace_(), req->pods(i).name()});
    }
    r.reason = req->reason();
    r.protected_gangs.assign(req->protected_gangs().begin(), req->protected_gangs().end());
    r.disruption = req->disruption();
    ToProto(engine_.Evicted(r), resp->mutable_status());
    return grpc::Status::OK;
  });
}

// --- the disruption path (engine_disruptions.cc)
grpc::Status EngineService::Disruptions(grpc::ServerContext*, const v1::DisruptionsRequest* req,
                                        v1::DisruptionsResponse* resp) {
  return Observe("Disruptions", [&]() -> grpc::Status {
    auto door = DoorFromProto(req->door(), "door");
    if (!door.ok()) return Invalid("door", door.status().reasons().front());
    for (const auto& a : engine_.Disruptions(*door)) {
      v1::Disruption* d = resp->add_disruptions();
      d->set_id(a.id);
      d->set_cause(a.cause);
      d->set_action(a.kind == DisruptionAction::Kind::kNotice ? v1::Disruption::NOTICE : v1::Disruption::EVICT);
      for (const auto& p : a.pods) ToProto(p, d->add_pods());
      d->set_reason(a.reason);
      d->set_deadline_unix(a.deadline_unix);
    }
    if (*door == FrontDoor::kKubernetes) {
      NodeLendingInfo lending = engine_.TakeNodeLending();
      for (const auto& e : lending.events) {
        v1::NodeWarning* w = resp->add_node_events();
        w->set_node(e.node);
        w->set_reason(e.reason);
        w->set_message(e.message);
      }
      for (auto& n : lending.lent_to_slurm) resp->add_lent_to_slurm(std::move(n));
      resp->set_lending_known(true);
    }
    ToProto(Status::Ok(), resp->mutable_status());
    return grpc::Status::OK;
  });
}

grpc::Status EngineService::Drain(grpc::ServerContext*, const v1::DrainRequest* req, v1::DrainResponse* resp) {
  return Observe("Drain", [&]() -> grpc::Status {
    if (req->nodes_size() > 100000) return Invalid("nodes", "at most 100000 per call");
    std::vector<std::string> nodes;
    for (int i = 0; i < req->nodes_size(); ++i) {
      if (req->nodes(i).empty() || req->nodes(i).size() > 253) return Invalid("nodes[" + std::to_string(i) + "]", "must be a node name");
      nodes.push_back(req->nodes(i));
    }
    if (req->cancel() && nodes.empty()) return Invalid("nodes", "name the nodes whose drain ends");
    if (req->by_unix() < 0) return Invalid("by_unix", "must not be negative");
    for (const auto& d : engine_.Drain(nodes, req->by_unix(), req->cancel(), req->decommission())) {
      v1::NodeDrain* n = resp->add_nodes();
      n->set_node(d.node);
      n->set_by_unix(d.by_unix);
      n->set_state(d.state);
      n->set_free_at_unix(d.free_at_unix);
      n->set_workloads_left(d.workloads_left);
      n->set_note(d.note);
    }
    ToProto(Status::Ok(), resp->mutable_status());
    return grpc::Status::OK;
  });
}

grpc::Status EngineService::PlanWaves(grpc::ServerContext*, const v1::WavesRequest* req, v1::WavesResponse* resp) {
  return Observe("PlanWaves", [&]() -> grpc::Status {
    if (req->nodes_size() > 100000) return Invalid("nodes", "at most 100000 per call");
    if (req->max_nodes() < 0) return Invalid("max_nodes", "must not be negative");
    if ((req->max_nodes() > 0) == !req->domain().empty()) return Invalid("max_nodes", "give max_nodes or domain, not both");
    std::vector<std::string> nodes(req->nodes().begin(), req->nodes().end());
    auto plan = engine_.PlanWaves(nodes, req->max_nodes(), req->domain());
    if (!plan.ok()) {
      ToProto(plan.status(), resp->mutable_status());
      return grpc::Status::OK;
    }
    for (const auto& w : plan->waves) {
      v1::Wave* out = resp->add_waves();
      for (const auto& n : w.nodes) out->add_nodes(n);
      for (const auto& g : w.gangs) out->add_gangs(g);
      out->set_why(w.why);
    }
    for (const auto& n : plan->notes) resp->add_notes(n);
    ToProto(Status::Ok(), resp->mutable_status());
    return grpc::Status::OK;
  });
}

}  // namespace tidal
