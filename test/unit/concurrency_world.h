// World: what the test's front doors believe (concurrency_test.cc): the workloads they reported,
// which are bound where, the Sync messages still to send, and the GPUs each node holds by their
// account. Also the wire builders (nodes, pods, members) and the disruption clock.
//
// Disruptions (a config reload, a door's resync) drop the engine's plans: a gang permitted just
// before one and bound just after may legitimately land on capacity the engine meanwhile planned
// for someone else (kube-scheduler binds what Permit allowed). Such a gang is marked `exempt`; an
// over-full node is a failure only when no exempt gang sits on it.
//
// Threading: every field is guarded by mu, except the Disruptions' atomics.
#pragma once

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/pod_spec.h"
#include "tidal/v1/engine.pb.h"

namespace tidal::testing {

constexpr int64_t kNodeGpus = 8;

// Begin/End around anything that drops plans; Snapshot before and Overlaps after a plan->bind
// window says whether one happened in it (or was under way at its start).
class Disruptions {
 public:
  struct Mark {
    uint64_t gen;
    int active;
  };
  void Begin() {
    active_++;
    gen_++;
  }
  void End() {
    gen_++;
    active_--;
  }
  Mark Snapshot() const { return {gen_.load(), active_.load()}; }
  bool Overlaps(const Mark& start) const { return start.active > 0 || gen_.load() != start.gen || active_.load() > 0; }

 private:
  std::atomic<uint64_t> gen_{0};
  std::atomic<int> active_{0};
};

struct Job {
  enum State { kPending, kClaimed, kBound };
  std::string key;   // "team/g7" (Kubernetes gang) or "slurm/7" (Slurm job): the engine's gang key
  std::string name;  // gang label / Slurm job id
  bool slurm = false;
  int size = 1;
  int64_t gpus = 8;  // per member
  std::string queue;
  State state = kPending;
  std::vector<std::string> nodes;  // when bound: one per member
  bool exempt = false;
  std::string Uid(int i) const { return slurm ? "slurm/" + name + "#" + std::to_string(i) : key + "-" + std::to_string(i); }
};

inline v1::Node NodeProto(const std::string& name, int leaf) {
  v1::Node n;
  n.set_name(name);
  n.set_ready(true);
  (*n.mutable_labels())["topology.tidal.dev/block"] = "b0";
  (*n.mutable_labels())["topology.tidal.dev/leaf"] = "l" + std::to_string(leaf);
  (*n.mutable_labels())["topology.tidal.dev/nvlink"] = "v" + name;
  n.mutable_capacity()->set_gpus(kNodeGpus);
  n.mutable_capacity()->set_cpu_milli(64000);
  n.mutable_capacity()->set_memory_bytes(int64_t{512} << 30);
  return n;
}

inline v1::Pod MemberProto(const Job& j, int i) {
  v1::Pod p;
  p.set_uid(j.Uid(i));
  p.mutable_request()->set_gpus(j.gpus);
  if (j.slurm) {
    p.set_namespace_("slurm");
    p.set_name(j.name + "#" + std::to_string(i));
    (*p.mutable_annotations())[kLabelGang] = j.name;
    (*p.mutable_annotations())[kLabelGangSize] = std::to_string(j.size);
    (*p.mutable_annotations())[kLabelQueue] = j.queue;
  } else {
    p.set_namespace_("team");
    p.set_name(j.name + "-" + std::to_string(i));
    p.set_scheduler_name("tidal-scheduler");
    p.mutable_request()->set_cpu_milli(1000);
    p.mutable_request()->set_memory_bytes(int64_t{1} << 30);
    (*p.mutable_labels())[kLabelGang] = j.name;
    (*p.mutable_labels())[kLabelGangSize] = std::to_string(j.size);
    (*p.mutable_labels())[kLabelQueue] = j.queue;
  }
  p.set_creation_unix(1);
  if (j.state == Job::kBound) {
    p.set_node_name(j.nodes[static_cast<size_t>(i)]);
    p.set_phase(v1::Pod::RUNNING);
  }
  return p;
}

struct World {
  std::mutex mu;
  std::map<std::string, Job> jobs;  // by key
  struct Outbox {
    std::vector<v1::Pod> upserts;
    std::vector<std::string> deletes;
  } outbox[2];  // [0] Kubernetes, [1] Slurm
  std::map<std::string, int64_t> used;  // node -> GPUs of bound members (the doors' account)
  // Nodes that were over-full at some point, with the jobs on them then (checked at the end,
  // once every job's exempt flag is known).
  std::vector<std::pair<std::string, std::set<std::string>>> overfull;
  std::set<std::string> exempt;     // keys of jobs bound across a disruption (kept after they end)
  std::vector<std::string> errors;  // unexpected RPC outcomes, by any thread

  void Error(const std::string& e) {
    std::lock_guard<std::mutex> lock(mu);
    if (errors.size() < 50) errors.push_back(e);
  }
  // Under mu: the job is bound on `nodes`; its members' running state goes out with the next Sync.
  void BindLocked(Job& j, std::vector<std::string> nodes) {
    j.state = Job::kBound;
    j.nodes = std::move(nodes);
    for (int i = 0; i < j.size; ++i) {
      const std::string& n = j.nodes[static_cast<size_t>(i)];
      if ((used[n] += j.gpus) > kNodeGpus) {
        std::set<std::string> on;
        for (const auto& [k, o] : jobs) {
          if (o.state == Job::kBound && std::count(o.nodes.begin(), o.nodes.end(), n) > 0) on.insert(k);
        }
        overfull.push_back({n, on});
      }
      outbox[j.slurm ? 1 : 0].upserts.push_back(MemberProto(j, i));
    }
  }
  // Under mu: the job ends (finished or cancelled): its GPUs are given back before the engine
  // hears of it (and bound ones are counted once the engine bound them), so `used` never counts
  // more than the engine holds: a node over kNodeGpus here is over-full in the engine too.
  void RemoveLocked(const std::string& key) {
    auto it = jobs.find(key);
    if (it == jobs.end()) return;
    Job& j = it->second;
    if (j.state == Job::kBound) {
      for (const auto& n : j.nodes) used[n] -= j.gpus;
    }
    for (int i = 0; i < j.size; ++i) outbox[j.slurm ? 1 : 0].deletes.push_back(j.Uid(i));
    jobs.erase(it);
  }
};

}  // namespace tidal::testing
