// GPU, CPU and memory amounts out of the strings slurmctld reports, the same for libslurm and JSON:
//   tres_per_node / tres_per_job / tres_per_task   "gres:gpu:a100:4" "gres:gpu:4" (22.05),
//                                                  "gres/gpu:a100=4" "gres/gpu=4" (23.02+),
//                                                  lists joined by ',' or ';' with other gres
//   tres_req_str / tres_alloc_str                  "cpu=4,mem=16G,node=2,billing=4,gres/gpu=8"
//   node gres / gres_used                          "gpu:a100:8(S:0-1)" "gpu:a100:2(IDX:0-1),mps:0"
// Counts take Slurm's suffixes (k, m, g, t, p: powers of 1024); memory defaults to MiB. Absurd
// values (negative, not a number, over the bounds below, overflow) are errors naming the field and
// the value; nothing here throws or aborts.
//
// Threading: pure functions; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/status.h"

namespace tidal::slurm {

inline constexpr int64_t kMaxGpuCount = 1000000;            // per node, per job or per task
inline constexpr int64_t kMaxCount = 1000000000;            // cpus, nodes, other counts
inline constexpr int64_t kMaxMemoryMb = int64_t{1} << 40;   // 1 EiB in MiB

// A GPU request: "gres:gpu:a100:4" -> {4, "a100"}. found = false when the string names no GPU.
struct GpuRequest {
  bool found = false;
  int64_t count = 0;
  std::string model;  // "" = any
};

// tres_per_node / tres_per_job / tres_per_task / tres_per_socket. Several gpu entries of one model
// add up; of different models they are an error (a job asking for two GPU models is not placed).
Status ParseTresGpus(std::string_view field, std::string_view text, GpuRequest* out);

// tres_req_str / tres_alloc_str. -1 = not in the string.
struct TresCounts {
  int64_t cpus = -1;
  int64_t memory_mb = -1;
  int64_t nodes = -1;
  int64_t gpus = -1;   // "gres/gpu=8" (or the sum of the typed "gres/gpu:a100=8" when untyped is absent)
  std::string gpu_model;  // one typed gres/gpu:TYPE entry -> its TYPE
};
Status ParseTresCounts(std::string_view field, std::string_view text, TresCounts* out);

// A node's gres / gres_used: total gpu count, per-type counts in order. "(null)" and "" = none.
struct NodeGpus {
  int64_t count = 0;
  std::vector<std::pair<std::string, int64_t>> types;  // ("a100", 8); ("", 2) for untyped
};
Status ParseNodeGres(std::string_view field, std::string_view text, NodeGpus* out);

// "16G" -> 16384, "512" -> 512 (MiB), "1.50G" -> 1536, "4096K" -> 4. Rounds up to whole MiB.
Status ParseMemoryMb(std::string_view field, std::string_view text, int64_t* mb);

// "8", "2k" -> 2048. Non-negative, at most `max`.
Status ParseCount(std::string_view field, std::string_view text, int64_t max, int64_t* out);

}  // namespace tidal::slurm
