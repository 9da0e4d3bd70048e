// The recorded Slurm state bench/slurm_reconcile_bench.cc serves (see its header for the shape):
// 1,000 nodes, 5,000 running and 100,000 pending job ids from a fixed seed, and the generator that
// keeps producing arrivals after it. Built once per process (TheWorld), then only read.
// Threading: TheWorld is built on first use (a function-local static); JobGen is not thread-safe.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/engine.h"
#include "shim/slurm/config.h"
#include "shim/slurm/records.h"

namespace tidal::slurm::bench {

inline constexpr int kBlocks = 5, kLeaves = 10, kNvlinks = 5, kPerNvlink = 4;  // 1,000 nodes
inline constexpr int kNodes = kBlocks * kLeaves * kNvlinks * kPerNvlink;
inline constexpr int kDebugNodes = 40;
inline constexpr int kRunningJobs = 5000;
inline constexpr int kPendingIds = 100000;
inline constexpr int64_t kStartUnix = 1'800'000'000;

class JobGen;
// The next pending job as the gate leaves it (held); *ids = the job ids it holds (array tasks).
JobRecord NextPending(JobGen& gen, int64_t now, int* ids);

struct World {
  ClusterRecords records;
  AdapterConfig cfg;
  EngineConfig engine_cfg;
  std::unique_ptr<JobGen> gen;  // continues after the initial state (arrivals)
  int64_t busy_gpus = 0, usable_gpus = 0, pending_ids = 0;
};

const World& TheWorld();

}  // namespace tidal::slurm::bench
