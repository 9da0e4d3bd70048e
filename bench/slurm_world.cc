// The recorded Slurm state of the reconcile benchmark (bench/slurm_world.h).
#include "bench/slurm_world.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <unordered_map>

#include "shim/slurm/to_engine.h"

namespace tidal::slurm::bench {
namespace {

struct Account {
  const char* name;
  const char* queue;
  int weight;
};
constexpr Account kAccounts[] = {
    {"llm-pretrain", "research-llm", 14}, {"llm-finetune", "research-llm", 10}, {"vision", "research-vision", 10},
    {"multimodal", "research-vision", 6},  {"rl", "research-rl", 8},            {"search", "product-search", 12},
    {"recs", "product-recs", 10},          {"ads", "product-recs", 8},          {"eval", "infra-eval", 10},
    {"batch", "infra-batch", 8},           {"data", "infra-batch", 4},
};

constexpr const char* kEngineConfig = R"(
planTtlSeconds: 600
queues:
  - {name: research, weight: 3, nominal: {gpus: 4000}}
  - {name: research-llm, parent: research, weight: 3, nominal: {gpus: 2000}}
  - {name: research-vision, parent: research, weight: 2, nominal: {gpus: 1200}}
  - {name: research-rl, parent: research, nominal: {gpus: 800}}
  - {name: product, weight: 2, nominal: {gpus: 3000}}
  - {name: product-search, parent: product, nominal: {gpus: 1500}}
  - {name: product-recs, parent: product, nominal: {gpus: 1500}}
  - {name: infra, nominal: {gpus: 1000}}
  - {name: infra-eval, parent: infra, nominal: {gpus: 500}}
  - {name: infra-batch, parent: infra, nominal: {gpus: 400}}
  - {name: interactive, parent: infra, nominal: {gpus: 100}}
)";

std::string NodeName(int i) {
  char b[16];
  std::snprintf(b, sizeof(b), "gpu%04d", i);
  return b;
}

AdapterConfig MakeAdapterConfig() {
  AdapterConfig cfg;
  cfg.holder = "tidal-slurm@bench";
  cfg.metrics_address = "";
  cfg.queues.push_back({"", "debug", "", "interactive"});
  for (const auto& a : kAccounts) cfg.queues.push_back({a.name, "", "", a.queue});
  return cfg;
}


}  // namespace

// Pending jobs as the gate leaves them: held (priority 0), of a realistic mix.
class JobGen {
 public:
  explicit JobGen(uint32_t seed) : rng_(seed) {
    for (const auto& a : kAccounts) total_weight_ += a.weight;
  }
  uint32_t NextId() { return next_id_++; }
  int Uniform(int lo, int hi) { return lo + static_cast<int>(rng_() % static_cast<uint32_t>(hi - lo + 1)); }
  bool Chance(int per_mille) { return static_cast<int>(rng_() % 1000) < per_mille; }
  std::mt19937& rng() { return rng_; }

  void Common(JobRecord& j, int64_t now) {
    int w = static_cast<int>(rng_() % static_cast<uint32_t>(total_weight_));
    const Account* acc = &kAccounts[0];
    for (const auto& a : kAccounts) {
      if (w < a.weight) {
        acc = &a;
        break;
      }
      w -= a.weight;
    }
    j.job_id = NextId();
    j.id = std::to_string(j.job_id);
    j.account = acc->name;
    j.user = std::string("u") + std::to_string(static_cast<int>(acc - kAccounts) * 20 + Uniform(0, 19));
    j.partition = "gpu";
    j.qos = Chance(150) ? "high" : "normal";
    j.submit_time = now - Uniform(0, 3 * 86400);
    j.time_limit_min = std::vector<int64_t>{30, 60, 240, 720, 1440, 4320}[rng_() % 6];
  }

  // A pending record; *ids gets the job ids it stands for (array tasks counted).
  JobRecord Pending(int64_t now, int* ids) {
    JobRecord j;
    Common(j, now);
    j.state = JobState::kPending;
    j.state_reason = "JobHeldAdmin";
    j.priority = 0;
    j.name = "job";
    const int r = static_cast<int>(rng_() % 1000);
    int64_t gpus = 1;
    uint32_t nodes = 1;
    if (r < 5) {  // an array of 1-GPU tasks, all pending
      const uint32_t n = static_cast<uint32_t>(Uniform(10, 100));
      for (uint32_t t = 0; t < n; ++t) j.pending_array_tasks.push_back(t);
      j.array_job_id = j.job_id;
      j.array_max_tasks = Chance(500) ? 10 : 0;
      j.name = "sweep";
    } else if (r < 460) {
      gpus = 1;
    } else if (r < 640) {
      gpus = 2;
    } else if (r < 780) {
      gpus = 4;
    } else if (r < 920) {
      gpus = 8;
    } else {  // a gang of whole nodes
      const int g = static_cast<int>(rng_() % 100);
      nodes = g < 35 ? 2 : g < 65 ? 4 : g < 85 ? 8 : g < 95 ? 16 : 32;
      gpus = 8;
      if (Chance(400)) j.req_switch = 1;
      if (Chance(300)) j.comment = "tidal.dev/topology-preferred=nvlink";
      j.name = "train";
    }
    j.node_count = nodes;
    j.gpus_per_node = gpus;
    j.cpus_per_node = gpus * 12;
    j.memory_mb_per_node = gpus * 128000;
    if (Chance(200)) j.gpu_model = "h100";
    if (Chance(50)) j.features = "ib";
    if (Chance(10)) j.excluded_nodes = {NodeName(500), NodeName(777)};
    if (Chance(100)) j.nice = Uniform(1, 100);
    if (gpus <= 2 && nodes == 1 && j.pending_array_tasks.empty() && Chance(40)) {
      j.partition = "debug";
      j.time_limit_min = 60;
      j.comment = "tidal.dev/class=interactive";
    }
    if (Chance(30)) {
      j.dependency = "afterok:" + std::to_string(j.job_id - static_cast<uint32_t>(Uniform(1, 500))) + "(unfulfilled)";
      if (Chance(500)) j.state_reason = "Dependency";
    }
    if (Chance(1)) j.parse_error = "tres_per_node: gpu count 'x' is not a number";
    *ids = j.pending_array_tasks.empty() ? 1 : static_cast<int>(j.pending_array_tasks.size());
    return j;
  }

 private:
  std::mt19937 rng_;
  int total_weight_ = 0;
  uint32_t next_id_ = 1000000;
};


JobRecord NextPending(JobGen& gen, int64_t now, int* ids) { return gen.Pending(now, ids); }

const World& TheWorld() {
  static World* world = [] {
    auto* w = new World;
    w->cfg = MakeAdapterConfig();
    auto ec = ParseEngineConfig(kEngineConfig, "bench.yaml");
    if (!ec.ok()) {
      std::fprintf(stderr, "engine config: %s\n", ec.status().ToString().c_str());
      std::abort();
    }
    w->engine_cfg = *ec;
    w->gen = std::make_unique<JobGen>(42);
    JobGen& gen = *w->gen;
    auto& rec = w->records;
    rec.read_unix = kStartUnix;

    std::vector<int> free(kNodes, 8);
    for (int b = 0, i = 0; b < kBlocks; ++b) {
      for (int l = 0; l < kLeaves; ++l) {
        for (int v = 0; v < kNvlinks; ++v) {
          for (int k = 0; k < kPerNvlink; ++k, ++i) {
            NodeRecord n;
            n.name = NodeName(i);
            n.gpus = 8;
            n.gpu_model = "h100";
            n.gpu_types = {{"h100", 8}};
            n.cpus = 128;
            n.real_memory_mb = 2000000;
            const std::string leaf = "b" + std::to_string(b) + "-l" + std::to_string(l);
            n.features = {"tidal-block-b" + std::to_string(b), "tidal-leaf-" + leaf,
                          "tidal-nvlink-" + leaf + "-v" + std::to_string(v), "h100", "ib"};
            n.partitions = {"gpu"};
            if (i < kDebugNodes) n.partitions.push_back("debug");
            n.state = NodeState::kIdle;
            if (i % 167 == 5) {
              n.drain = true;
              n.reason = "xid 79: GPU fell off the bus";
            }
            if (i == 500 || i == 777) {
              n.state = NodeState::kDown;
              n.not_responding = true;
              n.reason = "Not responding";
            }
            if (!Pinnable(n)) free[static_cast<size_t>(i)] = 0;
            rec.nodes.push_back(std::move(n));
          }
        }
      }
    }
    for (int f : free) w->usable_gpus += f;

    // Running jobs, placed first fit from a random node (fragmentation as a real cluster has it).
    const int64_t now = kStartUnix;
    for (int made = 0; made < kRunningJobs;) {
      JobRecord j;
      gen.Common(j, now);
      j.state = JobState::kRunning;
      j.state_reason = "None";
      j.priority = 1000;
      j.name = "run";
      const int r = static_cast<int>(gen.rng()() % 1000);
      int64_t gpus = r < 880 ? 1 : r < 950 ? 2 : r < 980 ? 4 : 8;
      int nodes = 1;
      if (gen.Chance(5)) {
        nodes = std::vector<int>{2, 2, 2, 4, 4, 8, 16}[gen.rng()() % 7];
        gpus = 8;
      }
      std::vector<int> on;
      const int start = gen.Uniform(0, kNodes - 1);
      for (int k = 0; k < kNodes && static_cast<int>(on.size()) < nodes; ++k) {
        const int i = (start + k) % kNodes;
        if (free[static_cast<size_t>(i)] >= gpus) on.push_back(i);
      }
      if (static_cast<int>(on.size()) < nodes) {
        if (gpus == 1) break;  // full
        continue;
      }
      for (int i : on) {
        free[static_cast<size_t>(i)] -= static_cast<int>(gpus);
        j.nodes.push_back(NodeName(i));
        w->busy_gpus += gpus;
      }
      std::sort(j.nodes.begin(), j.nodes.end());
      j.required_nodes = j.nodes;
      j.admin_comment = std::string(kReleasedPrefix) + " to " + j.nodes.front();
      j.node_count = static_cast<uint32_t>(nodes);
      j.gpus_per_node = gpus;
      j.cpus_per_node = gpus * 12;
      j.memory_mb_per_node = gpus * 128000;
      j.start_time = now - gen.Uniform(60, j.time_limit_min * 60 - 1);
      j.submit_time = std::min(j.submit_time, j.start_time);
      if (nodes > 1) j.name = "train";
      rec.jobs.push_back(std::move(j));
      ++made;
    }
    for (int i = 0; i < kNodes; ++i) {
      NodeRecord& n = rec.nodes[static_cast<size_t>(i)];
      n.gpus_used = 8 - free[static_cast<size_t>(i)];
      if (Pinnable(n)) n.state = n.gpus_used == 0 ? NodeState::kIdle : n.gpus_used == 8 ? NodeState::kAllocated : NodeState::kMixed;
    }

    for (int ids = 0; w->pending_ids < kPendingIds; w->pending_ids += ids) {
      rec.jobs.push_back(gen.Pending(now, &ids));
      if (w->pending_ids + ids > kPendingIds && !rec.jobs.back().pending_array_tasks.empty()) {
        rec.jobs.back().pending_array_tasks.resize(static_cast<size_t>(kPendingIds - w->pending_ids));
        ids = kPendingIds - static_cast<int>(w->pending_ids);
      }
    }
    return w;
  }();
  return *world;
}

}  // namespace tidal::slurm::bench
