// Drives a real tidal-engine over gRPC for the Prometheus end-to-end test: syncs a 16-node fabric
// and three 4-pod gangs (plus one gang too large for any NVLink domain), runs each gang through
// PlanPod -> Reserve -> Permit -> Bound, and prints what it did as key=value lines that the test
// compares with what Prometheus scraped.
//   engine_driver HOST:PORT
#include <iostream>
#include <map>

#include <grpcpp/grpcpp.h>

#include "tidal/v1/engine.grpc.pb.h"

using namespace tidal;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: engine_driver HOST:PORT\n";
    return 2;
  }
  auto stub = v1::Engine::NewStub(grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
  v1::SyncRequest sync;
  sync.set_resync(true);
  for (int i = 0; i < 16; ++i) {
    auto* n = sync.add_upsert_nodes();
    n->set_name("node-" + std::to_string(i));
    n->set_ready(true);
    (*n->mutable_labels())["topology.tidal.dev/block"] = "block-0";
    (*n->mutable_labels())["topology.tidal.dev/leaf"] = "leaf-" + std::to_string(i / 8);
    (*n->mutable_labels())["topology.tidal.dev/nvlink"] = "nvlink-" + std::to_string(i / 4);
    n->mutable_capacity()->set_gpus(8);
    n->mutable_capacity()->set_cpu_milli(64000);
    n->mutable_capacity()->set_memory_bytes(int64_t{512} << 30);
  }
  std::map<std::string, std::vector<std::string>> gangs;
  auto add_gang = [&](const std::string& gang, int size, const std::string& required) {
    for (int m = 0; m < size; ++m) {
      auto* p = sync.add_upsert_pods();
      const std::string name = gang + "-" + std::to_string(m);
      p->set_uid("uid-" + name);
      p->set_namespace_("team");
      p->set_name(name);
      p->set_scheduler_name("tidal-scheduler");
      p->mutable_request()->set_gpus(8);
      (*p->mutable_labels())["tidal.dev/gang"] = gang;
      (*p->mutable_labels())["tidal.dev/gang-size"] = std::to_string(size);
      (*p->mutable_labels())["tidal.dev/queue"] = "team-llm";
      if (!required.empty()) (*p->mutable_labels())["tidal.dev/topology-required"] = required;
      gangs[gang].push_back(p->uid());
    }
  };
  add_gang("g1", 4, "nvlink");
  add_gang("g2", 4, "nvlink");
  add_gang("g3", 4, "leaf");
  add_gang("too-big", 5, "nvlink");
  {
    grpc::ClientContext ctx;
    auto stream = stub->Sync(&ctx);
    v1::SyncAck ack;
    if (!stream->Write(sync) || !stream->Read(&ack)) {
      std::cerr << "sync failed\n";
      return 1;
    }
    stream->WritesDone();
    if (!stream->Finish().ok()) return std::cerr << "sync stream failed\n", 1;
  }
  int plan_calls = 0, bound_gpus = 0, rejected = 0;
  for (const auto& [gang, uids] : gangs) {
    bool ok = true;
    std::map<std::string, std::string> node_of;
    for (const auto& uid : uids) {
      grpc::ClientContext ctx;
      v1::PodRef ref;
      ref.set_uid(uid);
      v1::PlanResponse plan;
      ++plan_calls;
      if (!stub->PlanPod(&ctx, ref, &plan).ok()) return std::cerr << "PlanPod transport error\n", 1;
      if (plan.status().code() != v1::Status::SUCCESS) {
        ok = false;
        if (plan.status().code() == v1::Status::UNSCHEDULABLE_AND_UNRESOLVABLE) ++rejected;
        break;
      }
      node_of[uid] = plan.node_name();
    }
    if (!ok) continue;
    for (const auto& uid : uids) {
      grpc::ClientContext c1, c2;
      v1::ReserveRequest rr;
      rr.mutable_pod()->set_uid(uid);
      rr.set_node_name(node_of[uid]);
      v1::ReserveResponse rresp;
      v1::PodRef ref;
      ref.set_uid(uid);
      v1::PermitResponse presp;
      if (!stub->Reserve(&c1, rr, &rresp).ok() || !stub->Permit(&c2, ref, &presp).ok()) return 1;
    }
    for (const auto& uid : uids) {
      grpc::ClientContext ctx;
      v1::ReserveRequest rr;
      rr.mutable_pod()->set_uid(uid);
      rr.set_node_name(node_of[uid]);
      v1::BoundResponse b;
      if (!stub->Bound(&ctx, rr, &b).ok()) return 1;
      bound_gpus += 8;
    }
  }
  std::cout << "plan_calls=" << plan_calls << "\nbound_gpus=" << bound_gpus << "\nrejected=" << rejected << "\n";
  return 0;
}
