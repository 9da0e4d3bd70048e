// libslurm structs into records (see libslurm_convert.h). Slurm's "no value" markers (NO_VAL,
// INFINITE, NO_VAL64, NULL strings) read as "not stated"; strings are parsed by the same
// job_fields / tres / hostlist code as the JSON reader, so both readers agree.
//
// Threading: one caller thread (the user name cache is not locked).
#include "shim/slurm/libslurm_convert.h"

#include <pwd.h>

#include <algorithm>

#include "shim/slurm/hostlist.h"
#include "shim/slurm/job_fields.h"
#include "shim/slurm/tres.h"


namespace tidal::slurm {
namespace {

std::string Str(const char* s) { return s == nullptr ? std::string() : std::string(s); }

JobState BaseJobState(uint32_t state) {
  switch (state & JOB_STATE_BASE) {
    case JOB_PENDING: return JobState::kPending;
    case JOB_RUNNING: return JobState::kRunning;
    case JOB_SUSPENDED: return JobState::kSuspended;
    case JOB_COMPLETE: return JobState::kCompleted;
    case JOB_CANCELLED: return JobState::kCancelled;
    case JOB_FAILED: return JobState::kFailed;
    case JOB_TIMEOUT: return JobState::kTimeout;
    case JOB_NODE_FAIL: return JobState::kNodeFail;
    case JOB_PREEMPTED: return JobState::kPreempted;
    case JOB_BOOT_FAIL: return JobState::kBootFail;
    case JOB_DEADLINE: return JobState::kDeadline;
    case JOB_OOM: return JobState::kOutOfMemory;
    default: return JobState::kUnknown;
  }
}

NodeState BaseNodeState(uint32_t state) {
  switch (state & NODE_STATE_BASE) {
    case NODE_STATE_IDLE: return NodeState::kIdle;
    case NODE_STATE_ALLOCATED: return NodeState::kAllocated;
    case NODE_STATE_MIXED: return NodeState::kMixed;
    case NODE_STATE_DOWN: return NodeState::kDown;
    case NODE_STATE_ERROR: return NodeState::kError;
    case NODE_STATE_FUTURE: return NodeState::kFuture;
    default: return NodeState::kUnknown;
  }
}

// NO_VAL / INFINITE (and their 16-bit forms) -> 0.
uint32_t Val32(uint32_t v) { return (v == NO_VAL || v == INFINITE) ? 0 : v; }
uint16_t Val16(uint16_t v) { return (v == NO_VAL16 || v == INFINITE16) ? 0 : v; }

}  // namespace

std::string LibslurmConverter::UserName(const slurm_job_info_t& job) {
  if (job.user_name != nullptr && job.user_name[0] != '\0') return job.user_name;
  auto it = users_.find(job.user_id);
  if (it != users_.end()) return it->second;
  std::string name = std::to_string(job.user_id);
  struct passwd pw;
  struct passwd* found = nullptr;
  char buf[4096];
  if (getpwuid_r(job.user_id, &pw, buf, sizeof buf, &found) == 0 && found != nullptr) name = found->pw_name;
  users_.emplace(job.user_id, name);
  return name;
}

JobRecord LibslurmConverter::Job(const slurm_job_info_t& job, const std::vector<std::string>& node_names) {
  JobRecord r;
  r.job_id = job.job_id;
  r.array_job_id = job.array_job_id;
  bool split_task = job.array_job_id != 0 && job.array_task_id != NO_VAL && job.array_task_id != INFINITE;
  if (split_task) r.array_task_id = job.array_task_id;
  r.id = split_task ? std::to_string(job.array_job_id) + "_" + std::to_string(job.array_task_id)
                    : std::to_string(job.job_id);
  r.name = Str(job.name);
  r.user = UserName(job);
  r.account = Str(job.account);
  r.partition = Str(job.partition);
  r.qos = Str(job.qos);
  r.state = BaseJobState(job.job_state);
  r.completing = (job.job_state & JOB_COMPLETING) != 0;
  const char* reason = slurm_job_reason_string(static_cast<enum job_state_reason>(job.state_reason));
  r.state_reason = Str(reason);
  r.priority = job.priority;
  if (job.nice != NO_VAL) r.nice = static_cast<int32_t>(static_cast<int64_t>(job.nice) - NICE_OFFSET);
  r.dependency = Str(job.dependency);
  r.node_count = Val32(job.num_nodes) == 0 ? 1 : job.num_nodes;
  // A range only while pending (a running job's max_nodes is what it asked, its num_nodes what it got).
  if (r.state == JobState::kPending) r.max_node_count = Val32(job.max_nodes);
  r.time_limit_min = Val32(job.time_limit);
  r.time_unlimited = job.time_limit == INFINITE;
  r.exclusive = job.shared == JOB_SHARED_NONE;  // --exclusive: OverSubscribe=NO
  r.submit_time = static_cast<int64_t>(job.submit_time);
  r.start_time = static_cast<int64_t>(job.start_time);
  r.end_time = static_cast<int64_t>(job.end_time);
  r.eligible_time = static_cast<int64_t>(job.eligible_time);  // --begin (details->begin_time)
  r.restart_cnt = job.restart_cnt;
  r.requeueable = job.requeue != 0 && job.batch_flag != 0;
  if (r.state == JobState::kRunning || r.state == JobState::kSuspended) r.batch_host = Str(job.batch_host);
  r.features = Str(job.features);
  r.req_switch = Val32(job.req_switch);
  r.comment = Str(job.comment);
  r.admin_comment = Str(job.admin_comment);

  RawJob raw;
  raw.tres_per_node = Str(job.tres_per_node);
  raw.tres_per_job = Str(job.tres_per_job);
  raw.tres_per_task = Str(job.tres_per_task);
  raw.tres_per_socket = Str(job.tres_per_socket);
  raw.tres_req_str = Str(job.tres_req_str);
  raw.tres_alloc_str = Str(job.tres_alloc_str);
  raw.nodes = Str(job.nodes);
  // Per node, in node-table order (node_inx: index ranges, -1 ends them); job.nodes is sorted by
  // name, so each entry's node comes from the table.
  for (uint32_t i = 0; job.gres_detail_str != nullptr && i < job.gres_detail_cnt; ++i) {
    raw.gres_detail.push_back(Str(job.gres_detail_str[i]));
  }
  if (!raw.gres_detail.empty() && job.node_inx != nullptr && !node_names.empty()) {
    for (size_t k = 0; job.node_inx[k] >= 0 && job.node_inx[k + 1] >= 0; k += 2) {
      for (int32_t x = job.node_inx[k]; x <= job.node_inx[k + 1]; ++x) {
        raw.gres_detail_nodes.push_back(static_cast<size_t>(x) < node_names.size() ? node_names[static_cast<size_t>(x)] : "");
      }
    }
    const bool mapped = raw.gres_detail_nodes.size() == raw.gres_detail.size() &&
                        std::find(raw.gres_detail_nodes.begin(), raw.gres_detail_nodes.end(), "") == raw.gres_detail_nodes.end();
    if (!mapped) raw.gres_detail.clear(), raw.gres_detail_nodes.clear();  // not placed: not used
  }
  raw.required_nodes = Str(job.req_nodes);
  raw.excluded_nodes = Str(job.exc_nodes);
  // A pending array's task ids: from array_bitmap, not array_task_str, which libslurm cuts at a
  // length with "..." ("1-2,4-5,7,10,...,58...") once the list is long.
  bool from_bitmap = !split_task && job.array_bitmap != nullptr;
  if (!split_task && !from_bitmap && job.array_task_str != nullptr) raw.array_task_str = job.array_task_str;
  raw.num_tasks = Val32(job.num_tasks);
  raw.pn_min_cpus = Val16(job.pn_min_cpus);
  if (job.pn_min_memory != NO_VAL64 && job.pn_min_memory != INFINITE64) {
    uint64_t mem = job.pn_min_memory & ~MEM_PER_CPU;
    mem = std::min<uint64_t>(mem, static_cast<uint64_t>(kMaxMemoryMb));
    if (job.pn_min_memory & MEM_PER_CPU) {
      raw.mem_per_cpu_mb = static_cast<int64_t>(mem);
    } else {
      raw.pn_min_memory_mb = static_cast<int64_t>(mem);
    }
  }
  if (job.het_job_id != 0 && job.het_job_id != NO_VAL) {
    AddParseError(&r.parse_error, "heterogeneous job (het_job_id " + std::to_string(job.het_job_id) +
                                      ") is not supported");
  }
  DeriveJobFields(raw, &r);
  if (from_bitmap) {
    bitstr_t* bits = job.array_bitmap;
    bitoff_t n = std::min<bitoff_t>(slurm_bit_size(bits), bitoff_t{kMaxArrayTaskId} + 1);
    for (bitoff_t i = 0; i < n; ++i) {
      if (slurm_bit_test(bits, i)) r.pending_array_tasks.push_back(static_cast<uint32_t>(i));
    }
    if (r.pending_array_tasks.empty()) AddParseError(&r.parse_error, "array_bitmap: no task ids");
  }
  // The array's %K (every task's record carries it, split off or not): waiting.h.
  if (job.array_job_id != 0) r.array_max_tasks = Val32(job.array_max_tasks);
  if (!r.parse_error.empty()) r.parse_error = "job " + r.id + ": " + r.parse_error;
  return r;
}

NodeRecord LibslurmConverter::Node(const node_info_t& node,
                                   const std::map<std::string, std::vector<std::string>>& partitions) {
  NodeRecord r;
  r.name = Str(node.name);
  r.state = BaseNodeState(node.node_state);
  // slurmctld sends IDLE / ALLOCATED; "mixed" is what scontrol and sinfo work out of the cpus the
  // select plugin counts as allocated.
  uint16_t alloc_cpus = 0;
  if (node.select_nodeinfo != nullptr &&
      slurm_get_select_nodeinfo(node.select_nodeinfo, SELECT_NODEDATA_SUBCNT, NODE_STATE_ALLOCATED,
                                &alloc_cpus) == SLURM_SUCCESS) {
    uint16_t total = node.cpus_efctv != 0 ? node.cpus_efctv : node.cpus;
    if (alloc_cpus > 0 && alloc_cpus < total &&
        (r.state == NodeState::kAllocated || r.state == NodeState::kIdle)) {
      r.state = NodeState::kMixed;
    }
  }
  uint32_t flags = node.node_state;
  r.drain = (flags & (NODE_STATE_DRAIN | NODE_STATE_FAIL)) != 0;
  r.completing = (flags & NODE_STATE_COMPLETING) != 0;
  r.not_responding = (flags & NODE_STATE_NO_RESPOND) != 0;
  r.maint = (flags & NODE_STATE_MAINT) != 0;
  r.reserved = (flags & NODE_STATE_RES) != 0;
  r.cpus = node.cpus;
  r.real_memory_mb = static_cast<int64_t>(std::min<uint64_t>(node.real_memory, kMaxMemoryMb));
  r.reason = Str(node.reason);
  r.features = SplitCommaList(Str(node.features_act != nullptr ? node.features_act : node.features));
  if (auto it = partitions.find(r.name); it != partitions.end()) r.partitions = it->second;
  DeriveNodeGpus(Str(node.gres), Str(node.gres_used), &r);
  if (!r.parse_error.empty()) r.parse_error = "node " + r.name + ": " + r.parse_error;
  return r;
}

std::map<std::string, std::vector<std::string>> LibslurmConverter::PartitionsByNode(
    const partition_info_msg_t* parts, std::string* error) {
  std::map<std::string, std::vector<std::string>> out;
  if (parts == nullptr) return out;
  for (uint32_t i = 0; i < parts->record_count; ++i) {
    const partition_info_t& p = parts->partition_array[i];
    std::vector<std::string> names;
    Status st = ExpandHostlist(Str(p.nodes), &names, "partition " + Str(p.name) + " nodes");
    if (!st.ok()) {
      AddParseError(error, st);
      continue;
    }
    for (const std::string& n : names) out[n].push_back(Str(p.name));
  }
  return out;
}

std::vector<PartitionRecord> LibslurmConverter::Partitions(const partition_info_msg_t* parts) {
  std::vector<PartitionRecord> out;
  if (parts == nullptr) return out;
  for (uint32_t i = 0; i < parts->record_count; ++i) {
    const partition_info_t& p = parts->partition_array[i];
    PartitionRecord r;
    r.name = Str(p.name);
    r.schedules = (p.state_up & PARTITION_SCHED) != 0;
    r.state = p.state_up == PARTITION_UP ? "UP" : p.state_up == PARTITION_DOWN ? "DOWN"
            : p.state_up == PARTITION_DRAIN ? "DRAIN" : "INACTIVE";
    r.max_time_min = Val32(p.max_time);
    r.min_nodes = p.min_nodes <= 1 ? 0 : Val32(p.min_nodes);
    r.max_nodes = Val32(p.max_nodes);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace tidal::slurm
