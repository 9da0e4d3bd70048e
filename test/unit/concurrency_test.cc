// Every caller of tidal-engine at once, against the real servers in process (EngineProcess: the
// gRPC service, /metrics /explain /queues /config /healthz, the config watcher), for a bounded
// time. Run in the normal suite and under ThreadSanitizer (make test-sanitize, build-tsan).
//
//   kube door    the Kubernetes Sync stream (holder "kube"): gangs created, finished, cancelled;
//                every 40 batches the stream is reopened with a full snapshot (a resync)
//   slurm door   the Slurm Sync stream (holder "slurm") and Admit: jobs submitted, started on the
//                nodes Admit gave them, finished; a resync every 60 batches
//   intruder     a second Kubernetes stream under another holder: always refused (ABORTED)
//   shims (3)    per gang: CheckPod -> PlanPod -> Reserve -> Permit -> Bound, or Unreserve,
//                NodeRefused, Preempt on the way
//   reader       Explain, Overdue, TakeActivations over gRPC
//   scrapers (2) GET /metrics, /explain, /queues, /config, /healthz over plain sockets
//   config       valid and invalid configs in turn, each waited for until the watcher read it
//
// Then: no node ever held more GPUs than it has (World, concurrency_world.h), the engine holds
// exactly the pods the doors still report, bound and pending as they say, the reload counters
// are served, every GPU is idle again once the doors drop their pods, and both servers answer.
//
// Threading model: each role runs on its own std::thread with its own stub; they share the World
// (its mutex), the Disruptions clock and the counters (atomics). stop_clients ends every role but
// the doors; stop_doors then makes the doors send what is left in their outboxes and close.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "test/support/http_get.h"
#include "test/unit/concurrency_world.h"
#include "test/unit/engine_process.h"

namespace tidal::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kKubeNodes[2] = {0, 8};   // n0..n7: Kubernetes
constexpr int kSlurmNodes[2] = {4, 12};  // n4..n11: Slurm (n4..n7 shared)
constexpr int kNodes = 12;

struct Env {
  EngineProcess proc;
  World world;
  Disruptions disrupt;
  std::string config_path;
  std::atomic<bool> stop_clients{false}, stop_doors{false};
  std::atomic<int> kube_bound{0}, slurm_bound{0}, scrapes{0}, aborted{0}, rpcs{0}, resyncs{0};

  void Check(const grpc::Status& s, const std::string& what) {
    rpcs++;
    if (!s.ok()) world.Error(what + ": gRPC " + std::to_string(s.error_code()) + " " + s.error_message());
  }
};

std::string ConfigText(int version, bool valid) {
  // Both versions keep queues qa and qb (the workloads' queues); the invalid one names a parent
  // that does not exist, so the watcher refuses it and the last good config stays.
  std::string t = "# version " + std::to_string(version) + "\nqueues:\n  - name: qa\n    weight: " +
                  std::to_string(1 + version % 3) + "\n  - name: qb\n    weight: 2\n";
  return valid ? t : t + "    parent: nosuch\n";
}

void WriteConfig(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  std::filesystem::rename(tmp, path);
}

// One door's Sync stream: opened with a snapshot (the door's nodes and its jobs as the World has
// them), then one message and one ack at a time.
class DoorStream {
 public:
  DoorStream(v1::Engine::Stub& stub, v1::FrontDoor door, std::string holder)
      : stub_(stub), door_(door), holder_(std::move(holder)) {}
  bool Open(v1::SyncRequest snapshot, v1::SyncAck* ack) {
    ctx_ = std::make_unique<grpc::ClientContext>();
    stream_ = stub_.Sync(ctx_.get());
    snapshot.set_resync(true);
    snapshot.set_door(door_);
    snapshot.set_holder(holder_);
    snapshot.set_lease_ttl_ms(600000);
    return Send(snapshot, ack);
  }
  bool Send(const v1::SyncRequest& req, v1::SyncAck* ack) { return stream_ && stream_->Write(req) && stream_->Read(ack); }
  grpc::Status Close() {
    if (!stream_) return grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke earlier");
    stream_->WritesDone();
    grpc::Status s = stream_->Finish();
    stream_.reset();
    ctx_.reset();
    return s;
  }

 private:
  v1::Engine::Stub& stub_;
  v1::FrontDoor door_;
  std::string holder_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SyncRequest, v1::SyncAck>> stream_;
};

v1::SyncRequest Snapshot(World& w, bool slurm, bool with_jobs) {
  v1::SyncRequest s;
  const int* range = slurm ? kSlurmNodes : kKubeNodes;
  for (int i = range[0]; i < range[1]; ++i) *s.add_upsert_nodes() = NodeProto("n" + std::to_string(i), i / 4);
  std::lock_guard<std::mutex> lock(w.mu);
  if (with_jobs) {
    for (const auto& [key, j] : w.jobs) {
      if (j.slurm != slurm) continue;
      for (int i = 0; i < j.size; ++i) *s.add_upsert_pods() = MemberProto(j, i);
    }
  }
  w.outbox[slurm ? 1 : 0] = {};  // the snapshot says it all
  return s;
}

// Under w.mu: new jobs while fewer than `pending_cap` wait; a bound one finishes now and then, a
// pending one is cancelled now and then.
void ChurnLocked(World& w, bool slurm, int pending_cap, std::mt19937& rng, int& next_id) {
  int pending = 0;
  std::vector<std::string> bound, waiting;
  for (const auto& [key, j] : w.jobs) {
    if (j.slurm != slurm) continue;
    if (j.state == Job::kBound) bound.push_back(key);
    if (j.state == Job::kPending) waiting.push_back(key);
    pending += j.state != Job::kBound;
  }
  for (int n = 0; n < 2 && pending < pending_cap; ++n, ++pending) {
    Job j;
    j.slurm = slurm;
    j.name = std::to_string(next_id++);
    j.key = (slurm ? "slurm/" : "team/g") + j.name;
    if (!slurm) j.name = "g" + j.name;
    j.size = 1 + static_cast<int>(rng() % 2);
    j.gpus = j.size == 2 ? 8 : int64_t{2} << (rng() % 3);  // 2, 4 or 8 GPUs alone, 8 in a pair
    j.queue = rng() % 2 ? "qa" : "qb";
    for (int i = 0; i < j.size; ++i) w.outbox[slurm ? 1 : 0].upserts.push_back(MemberProto(j, i));
    w.jobs[j.key] = j;
  }
  if (!bound.empty() && rng() % 3 == 0) w.RemoveLocked(bound[rng() % bound.size()]);
  if (!waiting.empty() && rng() % 10 == 0) w.RemoveLocked(waiting[rng() % waiting.size()]);
}

v1::SyncRequest TakeOutbox(World& w, bool slurm) {
  v1::SyncRequest b;
  auto& o = w.outbox[slurm ? 1 : 0];
  for (auto& p : o.upserts) *b.add_upsert_pods() = std::move(p);
  for (auto& d : o.deletes) b.add_delete_pods(d);
  o = {};
  return b;
}

void Door(Env& env, bool slurm) {
  auto stub = env.proc.NewStub();
  std::mt19937 rng(slurm ? 2 : 1);
  DoorStream s(*stub, slurm ? v1::SLURM : v1::KUBERNETES, slurm ? "slurm" : "kube");
  const std::string who = slurm ? "slurm door" : "kube door";
  int next_id = 0, batches = 0;
  // Slurm jobs started on Admit's nodes, with the disruption mark taken before that Admit: their
  // plan->running window closes when the running report is acked.
  std::vector<std::pair<std::string, Disruptions::Mark>> started;
  bool broken = false;  // the stream broke (an error is recorded): the door stops
  auto ack_ok = [&](bool sent, const v1::SyncAck& ack, const std::string& what) {
    if (!sent) {
      env.world.Error(who + ": " + what + ": stream broke: " + s.Close().error_message());
      broken = true;
    } else if (ack.status().code() != v1::Status::SUCCESS) {
      env.world.Error(who + ": " + what + ": " + ack.status().DebugString());
    }
  };
  auto open = [&] {
    env.disrupt.Begin();
    v1::SyncAck ack;
    ack_ok(s.Open(Snapshot(env.world, slurm, true), &ack), ack, "snapshot");
    env.disrupt.End();
    env.resyncs++;
  };
  open();
  for (;;) {
    const bool last = env.stop_doors.load();
    v1::SyncRequest b;
    {
      std::lock_guard<std::mutex> lock(env.world.mu);
      if (!env.stop_clients) ChurnLocked(env.world, slurm, slurm ? 12 : 24, rng, next_id);
      b = TakeOutbox(env.world, slurm);
    }
    v1::SyncAck ack;
    ack_ok(s.Send(b, &ack), ack, "batch");
    for (const auto& [key, mark] : started) {
      if (!env.disrupt.Overlaps(mark)) continue;
      std::lock_guard<std::mutex> lock(env.world.mu);
      env.world.exempt.insert(key);
    }
    started.clear();
    if (last || broken) break;
    if (slurm && !env.stop_clients) {
      const Disruptions::Mark mark = env.disrupt.Snapshot();
      grpc::ClientContext ctx;
      v1::AdmitRequest req;
      req.set_door(v1::SLURM);
      req.set_holder("slurm");
      req.set_max_waiting(50);
      v1::AdmitResponse resp;
      env.Check(stub->Admit(&ctx, req, &resp), "Admit");
      std::lock_guard<std::mutex> lock(env.world.mu);
      for (const auto& a : resp.admitted()) {
        auto it = env.world.jobs.find(a.gang());
        if (it == env.world.jobs.end() || it->second.state != Job::kPending) continue;
        if (a.nodes_size() != it->second.size) continue;
        env.world.BindLocked(it->second, {a.nodes().begin(), a.nodes().end()});
        started.push_back({a.gang(), mark});
        env.slurm_bound++;
      }
    }
    if (++batches % (slurm ? 60 : 40) == 0 && !env.stop_clients) {
      env.Check(s.Close(), who + ": close");
      open();
      if (broken) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!broken) env.Check(s.Close(), who + ": close");
}

void Intruder(Env& env) {
  auto stub = env.proc.NewStub();
  while (!env.stop_clients) {
    DoorStream s(*stub, v1::KUBERNETES, "intruder");
    v1::SyncAck ack;
    if (s.Open(v1::SyncRequest{}, &ack)) env.world.Error("intruder: a second holder got the Kubernetes door");
    const grpc::Status st = s.Close();
    if (st.error_code() == grpc::StatusCode::ABORTED) {
      env.aborted++;
    } else {
      env.world.Error("intruder: want ABORTED, got " + std::to_string(st.error_code()) + " " + st.error_message());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

v1::PodRef Ref(const std::string& uid) {
  v1::PodRef r;
  r.set_uid(uid);
  return r;
}

void Shim(Env& env, int seed) {
  auto stub = env.proc.NewStub();
  std::mt19937 rng(static_cast<uint32_t>(100 + seed));
  while (!env.stop_clients) {
    Job j;
    {
      std::lock_guard<std::mutex> lock(env.world.mu);
      std::vector<Job*> free;
      for (auto& [key, o] : env.world.jobs) {
        if (!o.slurm && o.state == Job::kPending) free.push_back(&o);
      }
      if (!free.empty()) {
        Job* pick = free[rng() % free.size()];
        pick->state = Job::kClaimed;
        j = *pick;
      }
    }
    if (j.key.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    auto release = [&] {
      std::lock_guard<std::mutex> lock(env.world.mu);
      if (auto it = env.world.jobs.find(j.key); it != env.world.jobs.end()) it->second.state = Job::kPending;
    };
    auto call = [&](auto method, const auto& req, auto* resp, const char* name) {
      grpc::ClientContext ctx;
      env.Check(((*stub).*method)(&ctx, req, resp), name);
      return resp->status().code();
    };
    const Disruptions::Mark mark = env.disrupt.Snapshot();
    v1::CheckPodResponse check;
    if (call(&v1::Engine::Stub::CheckPod, Ref(j.Uid(0)), &check, "CheckPod") != v1::Status::SUCCESS) {
      release();
      continue;
    }
    std::vector<std::string> nodes;
    for (int i = 0; i < j.size; ++i) {
      v1::PlanResponse plan;
      if (call(&v1::Engine::Stub::PlanPod, Ref(j.Uid(i)), &plan, "PlanPod") != v1::Status::SUCCESS) {
        v1::PreemptResponse pre;
        if (rng() % 4 == 0) call(&v1::Engine::Stub::Preempt, Ref(j.Uid(i)), &pre, "Preempt");
        break;
      }
      nodes.push_back(plan.node_name());
    }
    bool ok = static_cast<int>(nodes.size()) == j.size;
    for (int i = 0; ok && i < j.size; ++i) {
      v1::ReserveRequest req;
      *req.mutable_pod() = Ref(j.Uid(i));
      req.set_node_name(nodes[static_cast<size_t>(i)]);
      v1::ReserveResponse resp;
      ok = call(&v1::Engine::Stub::Reserve, req, &resp, "Reserve") == v1::Status::SUCCESS;
    }
    const uint32_t dice = rng() % 20;
    if (ok && dice == 1) {  // kube-scheduler's own filters refused the planned node
      v1::NodeRefusal req;
      *req.mutable_pod() = Ref(j.Uid(0));
      req.set_node_name(nodes[0]);
      req.set_plugin("NodePorts");
      v1::NodeRefusedResponse resp;
      call(&v1::Engine::Stub::NodeRefused, req, &resp, "NodeRefused");
      release();
      continue;
    }
    v1::PermitResponse permit;
    ok = ok && dice != 0 && call(&v1::Engine::Stub::Permit, Ref(j.Uid(0)), &permit, "Permit") == v1::Status::SUCCESS;
    if (!ok) {
      grpc::ClientContext ctx;
      v1::UnreserveResponse un;
      env.Check(stub->Unreserve(&ctx, Ref(j.Uid(0)), &un), "Unreserve");
      release();
      continue;
    }
    if (permit.allow_size() != j.size) env.world.Error("Permit of " + j.key + " allowed " + std::to_string(permit.allow_size()));
    for (int i = 0; i < j.size; ++i) {
      v1::ReserveRequest req;
      *req.mutable_pod() = Ref(j.Uid(i));
      req.set_node_name(nodes[static_cast<size_t>(i)]);
      v1::BoundResponse resp;
      if (call(&v1::Engine::Stub::Bound, req, &resp, "Bound") != v1::Status::SUCCESS) {
        env.world.Error("Bound " + j.Uid(i) + ": " + resp.status().DebugString());
      }
    }
    const bool exempt = env.disrupt.Overlaps(mark);
    std::lock_guard<std::mutex> lock(env.world.mu);
    Job& mine = env.world.jobs.at(j.key);  // claimed: no door removes it
    env.world.BindLocked(mine, nodes);
    if (exempt) env.world.exempt.insert(j.key);
    env.kube_bound++;
  }
}

std::string AnyJob(World& w, std::mt19937& rng) {
  std::lock_guard<std::mutex> lock(w.mu);
  if (w.jobs.empty()) return "team/none";
  auto it = w.jobs.begin();
  std::advance(it, static_cast<long>(rng() % w.jobs.size()));
  return it->first;
}

void Reader(Env& env) {
  auto stub = env.proc.NewStub();
  std::mt19937 rng(7);
  while (!env.stop_clients) {
    {
      grpc::ClientContext ctx;
      v1::ExplainRequest req;
      req.set_workload(AnyJob(env.world, rng));
      v1::ExplainResponse resp;
      env.Check(stub->Explain(&ctx, req, &resp), "Explain " + req.workload());
    }
    {
      grpc::ClientContext ctx;
      v1::OverdueResponse resp;
      env.Check(stub->Overdue(&ctx, v1::OverdueRequest{}, &resp), "Overdue");
    }
    {
      grpc::ClientContext ctx;
      v1::TakeActivationsRequest req;
      req.set_door(v1::KUBERNETES);
      v1::TakeActivationsResponse resp;
      env.Check(stub->TakeActivations(&ctx, req, &resp), "TakeActivations");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void Scraper(Env& env, int seed) {
  std::mt19937 rng(static_cast<uint32_t>(50 + seed));
  for (int i = seed; !env.stop_clients; ++i) {
    const std::string job = AnyJob(env.world, rng);
    const std::string paths[] = {"/metrics", "/explain?workload=" + job, "/explain?workload=" + job + "&format=json",
                                 "/queues", "/queues?format=json", "/config", "/healthz"};
    const std::string& path = paths[static_cast<size_t>(i) % std::size(paths)];
    const HttpReply r = HttpGet(env.proc.http_port(), path);
    const bool explain = path.rfind("/explain", 0) == 0;
    if (r.code != 200 && !(explain && r.code == 404)) {
      env.world.Error("GET " + path + ": " + std::to_string(r.code) + " " + r.error + r.body.substr(0, 200));
    } else if (path == "/metrics" && r.body.find("tidal_gpus{") == std::string::npos) {
      env.world.Error("GET /metrics: no tidal_gpus family");
    }
    env.scrapes++;
  }
}

int64_t Reloads(EngineProcess& p) {
  const auto c = p.watcher().counts();
  return c.success + c.failure;
}

// Writes a config and waits (up to 5 s) until the watcher has read it.
bool Reconfigure(Env& env, int version, bool valid) {
  const int64_t before = Reloads(env.proc);
  env.disrupt.Begin();
  WriteConfig(env.config_path, ConfigText(version, valid));
  const auto until = Clock::now() + std::chrono::seconds(5);
  while (Reloads(env.proc) == before && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  env.disrupt.End();
  return Reloads(env.proc) > before;
}

void ConfigWriter(Env& env) {
  for (int v = 1; !env.stop_clients; ++v) {
    if (!Reconfigure(env, v, v % 3 != 0)) env.world.Error("config version " + std::to_string(v) + " was never reloaded");
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
}

double Gauge(const std::vector<EngineGauges::Row>& rows, const std::vector<std::string>& labels) {
  double sum = 0;
  for (const auto& r : rows) {
    bool match = true;
    for (size_t i = 0; i < labels.size(); ++i) match = match && (labels[i].empty() || r.labels[i] == labels[i]);
    if (match) sum += r.value;
  }
  return sum;
}

TEST(ConcurrencyTest, EveryCallerAtOnceKeepsTheBooksStraight) {
  const auto dir = std::filesystem::temp_directory_path() / ("tidal-concurrency-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  Env env;
  env.config_path = (dir / "engine.yaml").string();
  WriteConfig(env.config_path, ConfigText(0, true));
  ASSERT_TRUE(env.proc.Start(env.config_path, std::chrono::milliseconds(5)).ok());

  std::vector<std::thread> doors, clients;
  doors.emplace_back(Door, std::ref(env), false);
  doors.emplace_back(Door, std::ref(env), true);
  // Both doors hold their leases before the intruder starts knocking.
  for (const auto until = Clock::now() + std::chrono::seconds(30); env.resyncs < 2 && Clock::now() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(env.resyncs, 2) << "the doors did not open their streams";
  clients.emplace_back(Intruder, std::ref(env));
  for (int i = 0; i < 3; ++i) clients.emplace_back(Shim, std::ref(env), i);
  clients.emplace_back(Reader, std::ref(env));
  for (int i = 0; i < 2; ++i) clients.emplace_back(Scraper, std::ref(env), i);
  clients.emplace_back(ConfigWriter, std::ref(env));
  // At least 2 s of it, and until every kind of event happened a few times (60 s at most).
  const auto t0 = Clock::now();
  auto enough = [&] {
    const auto c = env.proc.watcher().counts();
    return c.success >= 3 && c.failure >= 2 && env.kube_bound >= 10 && env.slurm_bound >= 5 && env.scrapes >= 30 &&
           env.aborted >= 3 && env.resyncs >= 4;
  };
  while (Clock::now() - t0 < std::chrono::seconds(2) || (!enough() && Clock::now() - t0 < std::chrono::seconds(60))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  env.stop_clients = true;
  for (auto& t : clients) t.join();
  env.stop_doors = true;
  for (auto& t : doors) t.join();
  const auto c = env.proc.watcher().counts();
  std::printf("storm %.1fs: %d RPCs, %d kube gangs and %d slurm jobs bound, %d scrapes, %d refused intruders, "
              "%d resyncs, %lld+%lld reloads, %zu exempt\n",
              std::chrono::duration<double>(Clock::now() - t0).count(), env.rpcs.load(), env.kube_bound.load(),
              env.slurm_bound.load(), env.scrapes.load(), env.aborted.load(), env.resyncs.load(),
              static_cast<long long>(c.success), static_cast<long long>(c.failure), env.world.exempt.size());
  EXPECT_TRUE(enough());
  for (const auto& e : env.world.errors) ADD_FAILURE() << e;

  // No node ever held more GPUs than it has, unless a gang bound across a disruption sits on it.
  for (const auto& [node, jobs] : env.world.overfull) {
    bool excused = false;
    for (const auto& k : jobs) excused = excused || env.world.exempt.count(k) > 0;
    std::string on;
    for (const auto& k : jobs) on += " " + k;
    EXPECT_TRUE(excused) << node << " held more than " << kNodeGpus << " GPUs:" << on;
  }
  // The engine holds exactly what the doors report: pods, and bound/pending members per door.
  double members[2][2] = {{0, 0}, {0, 0}}, gpus[2] = {0, 0};
  int pods = 0;
  for (const auto& [key, j] : env.world.jobs) {
    pods += j.size;
    members[j.slurm][j.state == Job::kBound] += j.size;
    if (j.state == Job::kBound) gpus[j.slurm] += static_cast<double>(j.size * j.gpus);
  }
  const EngineStats st = env.proc.engine().Stats();
  EXPECT_EQ(st.pods, pods);
  EXPECT_EQ(st.nodes, kNodes);
  const EngineGauges g = env.proc.engine().Gauges();
  for (int d = 0; d < 2; ++d) {
    const std::string door = d ? "slurm" : "kubernetes";
    EXPECT_EQ(Gauge(g.door_members, {door, "pending"}), members[d][0]) << door;
    EXPECT_EQ(Gauge(g.door_members, {door, "bound"}), members[d][1]) << door;
    EXPECT_EQ(Gauge(g.door_gpus, {door}), gpus[d]) << door;
  }

  // A last good config: read, no error kept, and the counters are what /metrics serves.
  ASSERT_TRUE(Reconfigure(env, 1000, true));
  EXPECT_EQ(env.proc.watcher().LastError(), "");
  // The watcher's poll may reload the same file once more meanwhile (seen under ASan: 9 counted,
  // then 10 served), so the served count lies between the counts read before and after the scrape.
  const auto before = env.proc.watcher().counts();
  const HttpReply m = HttpGet(env.proc.http_port(), "/metrics");
  const auto after = env.proc.watcher().counts();
  ASSERT_EQ(m.code, 200) << m.error;
  const std::string line = "tidal_config_reloads_total{result=\"success\"} ";
  const size_t at = m.body.find(line);
  ASSERT_NE(at, std::string::npos) << m.body.substr(0, 2000);
  const double served = std::strtod(m.body.c_str() + at + line.size(), nullptr);
  EXPECT_GE(served, static_cast<double>(before.success));
  EXPECT_LE(served, static_cast<double>(after.success));

  // Both doors resync without their pods: every GPU is idle again, nothing planned or held.
  auto stub = env.proc.NewStub();
  DoorStream kube(*stub, v1::KUBERNETES, "kube"), slurm(*stub, v1::SLURM, "slurm");
  v1::SyncAck ack;
  ASSERT_TRUE(kube.Open(Snapshot(env.world, false, false), &ack));
  ASSERT_TRUE(slurm.Open(Snapshot(env.world, true, false), &ack));
  EXPECT_EQ(env.proc.engine().Stats().pods, 0);
  const EngineGauges idle = env.proc.engine().Gauges();
  EXPECT_EQ(Gauge(idle.gpus, {"allocated", ""}), 0);
  EXPECT_EQ(Gauge(idle.gpus, {"reserved", ""}), 0);
  EXPECT_EQ(Gauge(idle.gpus, {"idle", ""}), kNodes * kNodeGpus);

  // The servers still answer: a new gang of two plans, and /healthz says ok.
  Job fresh;
  fresh.key = "team/gfresh";
  fresh.name = "gfresh";
  fresh.size = 2;
  fresh.queue = "qa";
  v1::SyncRequest add;
  for (int i = 0; i < 2; ++i) *add.add_upsert_pods() = MemberProto(fresh, i);
  ASSERT_TRUE(kube.Send(add, &ack));
  for (int i = 0; i < 2; ++i) {
    grpc::ClientContext ctx;
    v1::PlanResponse plan;
    ASSERT_TRUE(stub->PlanPod(&ctx, Ref(fresh.Uid(i)), &plan).ok());
    EXPECT_EQ(plan.status().code(), v1::Status::SUCCESS) << plan.status().DebugString();
  }
  EXPECT_EQ(HttpGet(env.proc.http_port(), "/healthz").code, 200);
  EXPECT_TRUE(kube.Close().ok());
  EXPECT_TRUE(slurm.Close().ok());
  env.proc.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tidal::testing
