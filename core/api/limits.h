// Bounds on what enters Tidal, in one place. Every door checks against these: the engine's Sync
// (engine/engine_sync.cc), the pod keys (engine/pod_spec.cc), the cluster, workload and engine
// config files (core/io, engine/engine_config.cc), tidal-slurm's conversions (shim/slurm) and the
// engine's gRPC server (cmd/tidal_engine/main.cc). The Go shim mirrors the numbers it needs in
// shim/kube/pkg/convert/limits.go (change both together). docs/user-guide.md lists them.
//
// Why these values:
//   - kMaxGpusPerNode 1024: the largest GPU nodes today have 8-16 GPUs (72 for a whole NVL72 rack
//     reported as one node); 1024 is 14x that and keeps every product below small (1024 x 10000
//     members ~ 1e7).
//   - kMaxCpuMilliPerNode 16384 cores and kMaxMemoryBytesPerNode 16 TiB: above the largest
//     single-system machines built (~1,800 cores, ~24 TB), and a cluster's summed capacity stays
//     within int64 for 500,000 nodes at these caps.
//   - kMaxGangMembers 10000: the documented tidal.dev/gang-size range; a Slurm job of more nodes
//     is refused (its members would be as many Sync objects).
//   - kMaxWorkloadGpus 2^20: one workload's members x GPUs per member; ~5x the largest clusters
//     built. Above it nothing could ever place it; refusing says so at once.
//   - kMaxDurationS 365 days: runtime-limit, checkpoint-interval and every duration in config;
//     start + duration and other sums of times can never overflow int64.
//   - String sizes: Kubernetes' own (DNS subdomain 253, label key 317 = 253 prefix + '/' + 63);
//     a value of a key the engine reads (gang, queue, topology, ...) 1024 bytes.
//   - Sync: one object (a pod or node message) at most 1 MiB; senders cut batches at 4 MiB (also
//     at their object count); the engine receives messages up to 16 MiB. A batch is therefore at
//     most 4 MiB + one object: well under the receive limit.
// Threading: constants and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/api/resources.h"
#include "core/api/status.h"

namespace tidal::limits {

inline constexpr int64_t kMaxGpusPerNode = 1024;
inline constexpr int64_t kMaxCpuMilliPerNode = int64_t{16384} * 1000;
inline constexpr int64_t kMaxMemoryBytesPerNode = int64_t{16} << 40;  // 16 TiB
inline constexpr int64_t kMaxGangMembers = 10000;
inline constexpr int64_t kMaxWorkloadGpus = int64_t{1} << 20;
inline constexpr int64_t kMaxDurationS = int64_t{365} * 86400;

inline constexpr size_t kMaxNameBytes = 253;       // pod, node, namespace names, uids
inline constexpr size_t kMaxLabelKeyBytes = 317;   // [prefix/]name: 253 + 1 + 63
inline constexpr size_t kMaxValueBytes = 1024;     // value of a label/annotation the engine reads

inline constexpr size_t kMaxObjectBytes = size_t{1} << 20;       // one pod or node in a Sync message
inline constexpr size_t kSyncBatchBytes = size_t{4} << 20;       // senders cut Sync batches here
inline constexpr int kMaxSyncMessageBytes = 16 << 20;            // the engine's gRPC receive limit

// The annotation the Go shim puts on a pod too large for a Sync message, in place of its labels,
// annotations and constraints (value: its size in bytes); the engine refuses the pod naming it.
inline constexpr const char* kOversizeAnnotation = "sync.internal.tidal.dev/oversize";

// A node's capacity or one member's request: each component at most the per-node cap (a member
// never exceeds a node). `field` is the path for the message, e.g. "node n7: capacity".
Status CheckResources(const Resources& r, const std::string& field);
// members x per-member GPUs at most kMaxWorkloadGpus (members at most kMaxGangMembers).
Status CheckWorkloadTotal(const Resources& per_member, int64_t members, const std::string& field);
// 0 < s <= kMaxDurationS is not checked here for 0: callers decide whether 0 is allowed.
Status CheckDuration(int64_t seconds, const std::string& field);
// A string of at most `max` bytes; the message shows the size, not the (maybe huge) value.
Status CheckSize(const std::string& s, size_t max, const std::string& field);
// "365d" style text of a cap for messages.
std::string DurationCapText();

// Kubernetes label key: [prefix/]name, name 1-63 of [A-Za-z0-9._-] starting and ending
// alphanumeric, prefix a DNS subdomain (lowercase, digits, '-', '.') of at most 253.
bool IsLabelKey(const std::string& k);

}  // namespace tidal::limits
