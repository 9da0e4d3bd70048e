// Fluent builders for tests: MakeNode("n1").Gpus(8).At("b0","l0","nv0").Obj(),
// MakeGang("g").Members(16).Gpus(8).Required("leaf").Obj(), and FabricState(...) for regular fabrics.
#pragma once

#include <string>
#include <vector>

#include <memory>
#include <utility>

#include <gtest/gtest.h>

#include "core/api/node.h"
#include "core/api/workload.h"
#include "core/framework/profile.h"
#include "core/framework/scheduler.h"
#include "core/io/cluster_file.h"
#include "core/state/cluster_state.h"
#include "plugins/registry.h"

namespace tidal::testing {

// Names parameterized cases after their `name` field:
//   INSTANTIATE_TEST_SUITE_P(Table, FooTest, ::testing::ValuesIn(kCases), CaseName());
struct CaseName {
  template <typename Info>
  std::string operator()(const Info& i) const {
    return i.param.name;
  }
};

class MakeNode {
 public:
  explicit MakeNode(std::string name) {
    n_.name = std::move(name);
    n_.capacity = Resources{8, 64000, int64_t{512} << 30};
  }
  MakeNode& Gpus(int64_t g) { return n_.capacity.gpus = g, *this; }
  MakeNode& Cpu(int64_t milli) { return n_.capacity.cpu_milli = milli, *this; }
  MakeNode& Memory(int64_t bytes) { return n_.capacity.memory_bytes = bytes, *this; }
  MakeNode& Name(std::string name) { return n_.name = std::move(name), *this; }
  MakeNode& Used(int64_t gpus, int64_t cpu_milli = 0, int64_t mem = 0) {
    return n_.allocated = Resources{gpus, cpu_milli, mem}, *this;
  }
  MakeNode& Health(NodeHealth h) { return n_.health = h, *this; }
  MakeNode& Pool(tidal::Pool p) { return n_.pool = p, *this; }
  MakeNode& Model(std::string m) { return n_.gpu_model = std::move(m), *this; }
  MakeNode& Label(const std::string& k, const std::string& v) { return n_.labels[k] = v, *this; }
  // Default-level labels: block, leaf, nvlink.
  MakeNode& At(const std::string& block, const std::string& leaf, const std::string& nvlink) {
    Label("topology.tidal.dev/block", block);
    Label("topology.tidal.dev/leaf", leaf);
    return Label("topology.tidal.dev/nvlink", nvlink);
  }
  Node Obj() const { return n_; }

 private:
  Node n_;
};

class MakeGang {
 public:
  explicit MakeGang(std::string id) {
    w_.id = std::move(id);
    w_.per_member = Resources{1, 0, 0};
  }
  MakeGang& Members(int32_t n) { return w_.members = n, w_.min_members = n, *this; }
  MakeGang& MinMembers(int32_t n) { return w_.min_members = n, *this; }
  MakeGang& Arrived(int32_t n) { return w_.arrived_members = n, *this; }
  MakeGang& Gpus(int64_t g) { return w_.per_member.gpus = g, *this; }
  MakeGang& Cpu(int64_t milli) { return w_.per_member.cpu_milli = milli, *this; }
  MakeGang& Memory(int64_t bytes) { return w_.per_member.memory_bytes = bytes, *this; }
  MakeGang& Required(std::string l) { return w_.required_level = std::move(l), *this; }
  MakeGang& Preferred(std::string l) { return w_.preferred_level = std::move(l), *this; }
  MakeGang& Priority(int32_t p) { return w_.priority = p, *this; }
  MakeGang& Submitted(int64_t t) { return w_.submit_time_s = t, *this; }
  MakeGang& Limit(int64_t s) { return w_.runtime_limit_s = s, *this; }
  MakeGang& Queue(std::string q) { return w_.queue = std::move(q), *this; }
  MakeGang& Model(std::string m) { return w_.gpu_model = std::move(m), *this; }
  MakeGang& Door(FrontDoor d) { return w_.front_door = d, *this; }
  MakeGang& Class(WorkloadClass c) { return w_.workload_class = c, *this; }
  Workload Obj() const { return w_; }

 private:
  Workload w_;
};

// A regular fabric on the default levels: blocks x leaves x nvlink x nodes, `gpus` per node.
inline ClusterState FabricState(int32_t blocks, int32_t leaves, int32_t nvlinks, int32_t nodes, int64_t gpus = 8) {
  FabricSpec f;
  f.per_level = {blocks, leaves, nvlinks};
  f.nodes_per_domain = nodes;
  f.node_capacity.gpus = gpus;
  auto levels = TopologyLevels::Default();
  auto st = ClusterState::Build(levels, GenerateFabric(levels, f));
  return std::move(st).value();
}

// A state from explicit nodes on the default levels; throws (failing the calling test) if invalid.
inline ClusterState NodesState(std::vector<Node> nodes) {
  auto st = ClusterState::Build(TopologyLevels::Default(), std::move(nodes));
  return std::move(st).value();
}

// A profile built from `spec` with the built-in plugins (plugins::DefaultRegistry()).
inline std::unique_ptr<Profile> DefaultProfile(const ProfileSpec& spec = ProfileSpec::Default(),
                                               const TopologyLevels& levels = TopologyLevels::Default()) {
  auto p = Profile::Build(spec, plugins::DefaultRegistry(), PluginContext{levels});
  return std::move(p).value();
}

// A profile whose QueueSort is priority, with gang and topology (weight 1): spelled out, whatever
// the default profile becomes.
inline ProfileSpec PrioritySpec() {
  ProfileSpec p;
  p.plugins = {{"priority", 0, nlohmann::json::object()}, {"gang", 0, nlohmann::json::object()},
               {"topology", 1, nlohmann::json::object()}};
  return p;
}

// A scheduler over DefaultProfile(spec).
inline Scheduler DefaultScheduler(const ProfileSpec& spec = ProfileSpec::Default()) {
  return Scheduler(DefaultProfile(spec));
}

// The vertex at `path` (e.g. "b0/l1"); a test failure, and vertex 0, when there is none.
inline VertexId VertexByPath(const ClusterState& s, const std::string& path) {
  for (VertexId v = 0; v < s.vertex_count(); ++v) {
    if (s.vertex(v).path == path) return v;
  }
  ADD_FAILURE() << "no vertex " << path;
  return 0;
}

// The cycle's decision for workload `id` (a test failure, and the first decision, when there is none).
inline const Decision& Of(const CycleResult& r, const std::string& id) {
  for (const auto& d : r.decisions) {
    if (d.workload_id == id) return d;
  }
  ADD_FAILURE() << "no decision for " << id;
  return r.decisions.front();
}

}  // namespace tidal::testing
