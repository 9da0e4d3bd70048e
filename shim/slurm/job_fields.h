// What both readers (libslurm and squeue/sinfo --json) derive the same way from Slurm's raw
// strings: GPUs / CPUs / memory per node, expanded node lists, pending array task ids, state names.
// A reader copies the plain fields itself, fills a RawJob with the strings, and calls
// DeriveJobFields; every problem lands in the record's parse_error, the record is still returned.
//
// Threading: pure functions; no shared state.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/status.h"
#include "shim/slurm/records.h"

namespace tidal::slurm {

// Slurm's hard ceiling on MaxArraySize is 4000001: task ids are below it.
inline constexpr uint32_t kMaxArrayTaskId = 4000000;

struct RawJob {
  std::string tres_per_node, tres_per_job, tres_per_task, tres_per_socket;
  std::string tres_req_str, tres_alloc_str;
  std::string nodes, required_nodes, excluded_nodes;  // hostlist expressions
  std::string array_task_str;  // pending array meta record only: "0-99%4", "1,3,5-7", "0x1F"
  // A job holding nodes: its per-node GRES allocation ("gpu:a100:3(IDX:0-2)"), one entry per
  // node, and the node of each entry ("" or a shorter list: entry i is the i-th of `nodes`
  // expanded, which is the job's node order when the node table is in name order).
  std::vector<std::string> gres_detail, gres_detail_nodes;
  int64_t num_tasks = 0;       // 0 = not known
  int64_t pn_min_cpus = 0;     // per node, 0 = not stated
  int64_t pn_min_memory_mb = 0, mem_per_cpu_mb = 0;  // 0 = not stated
};

// Fills gpus_per_node, gpus_total, node_gpus, gpu_model, cpus_per_node, memory_mb_per_node, nodes,
// required_nodes, excluded_nodes, pending_array_tasks, array_max_tasks, and warn_signal /
// warn_time_s / warn_batch_only from job->comment's kSignalKey. Reads job->state, job->node_count,
// job->comment and job->id (for nothing but messages); appends problems to job->parse_error.
void DeriveJobFields(const RawJob& raw, JobRecord* job);

// "0-99%4" -> 0..99 and max 4; "1,3,5-7"; "0-15:4" (step); "0x1F" (hex bitmap, bit i = task i).
Status ExpandArrayTasks(std::string_view text, std::vector<uint32_t>* tasks, uint32_t* max_tasks);

// Node gres / gres_used strings into gpus, gpu_model, gpu_types, gpus_used; problems appended to
// node->parse_error.
void DeriveNodeGpus(std::string_view gres, std::string_view gres_used, NodeRecord* node);

// squeue --json job_state ("PENDING", "COMPLETING", "REQUEUE_HOLD", ...; what job_state_string()
// prints: one flag name, else the base). false for a name it does not know.
bool JobStateFromName(std::string_view name, JobState* state, bool* completing);
// sinfo --json state ("idle", "mixed", ..., any case). false for a name it does not know.
bool NodeStateFromName(std::string_view name, NodeState* state);
// One sinfo --json state_flags entry ("DRAIN", "NOT_RESPONDING", ...) applied to *node; unknown
// flags are ignored (POWERED_DOWN, CLOUD, ... do not change what Tidal does).
void ApplyNodeFlag(std::string_view flag, NodeRecord* node);

// "a; b": appends st's message (or `msg`) to *parse_error.
void AddParseError(std::string* parse_error, const Status& st);
void AddParseError(std::string* parse_error, std::string_view msg);

// "a,b,,c" -> {a, b, c}.
std::vector<std::string> SplitCommaList(std::string_view s);

// The user's Tidal keys in --comment: whitespace-, comma- or semicolon-separated key=value words
// whose key starts "tidal.dev/" (the last of a key wins); everything else is the user's own text.
std::map<std::string, std::string> CommentKeys(std::string_view comment);

// The comment key a job declares its notice signal with: Slurm's --signal syntax,
// [{R|B}:]SIG[@TIME] (SIG a name, USR1 or SIGUSR1, or a number; TIME seconds, 60 when left out; R:
// is Slurm's reservation flag, ignored here). deploy/slurm/cli_filter.lua copies a job's --signal
// here at submit: Slurm 22.05 shows --signal to no other program (job_info_t, squeue --json and the
// job_submit plugin's job_desc all lack it).
inline constexpr const char* kSignalKey = "tidal.dev/signal";
struct NoticeSignal {
  int signal = 0;          // 0 = none declared
  int64_t time_s = 0;
  bool batch_only = false;  // B:
};
Status ParseNoticeSignal(std::string_view value, NoticeSignal* out);

}  // namespace tidal::slurm
