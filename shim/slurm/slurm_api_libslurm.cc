// LibslurmApi: reads and writes through libslurm (see slurm_api_libslurm.h for what each call
// sends and why).
//
// Threading: one caller thread per process (libslurm's configuration is process-wide; see the
// header). The process-wide init state below is guarded by a mutex only so that a wrong second
// Create fails cleanly.
#include "shim/slurm/slurm_api_libslurm.h"

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>

#include "shim/slurm/libslurm_convert.h"

namespace tidal::slurm {
namespace {

constexpr uint16_t kShowFlags = SHOW_ALL | SHOW_DETAIL;

std::string SlurmError() { return slurm_strerror(slurm_get_errno()); }

Status CallError(const std::string& call, const std::string& target) {
  return Status::Error(call + (target.empty() ? "" : " " + target) + ": " + SlurmError());
}

// Per-task errors of an array update; frees resp. For a whole array ("123"), tasks that already
// run or ended are not errors: the update was meant for the tasks still pending.
Status ArrayErrors(const std::string& call, const std::string& target, job_array_resp_msg_t* resp) {
  if (resp == nullptr) return Status::Ok();
  bool whole_array = target.find('_') == std::string::npos && resp->job_array_count > 1;
  std::string msg;
  for (uint32_t i = 0; i < resp->job_array_count; ++i) {
    uint32_t code = resp->error_code[i];
    if (code == SLURM_SUCCESS) continue;
    if (whole_array && (code == ESLURM_JOB_NOT_PENDING || code == ESLURM_ALREADY_DONE)) continue;
    if (!msg.empty()) msg += ", ";
    msg += std::string(resp->job_array_id[i] ? resp->job_array_id[i] : "?") + ": " +
           slurm_strerror(static_cast<int>(code));
  }
  slurm_free_job_array_resp(resp);
  if (msg.empty()) return Status::Ok();
  return Status::Error(call + " " + target + ": " + msg);
}

Status UpdateJob(const std::string& job_id, job_desc_msg_t* desc) {
  if (job_id.empty()) return Status::Error("slurm_update_job: empty job id");
  std::string id = job_id;
  desc->job_id_str = id.data();
  job_array_resp_msg_t* resp = nullptr;
  // slurm_update_job2, not slurm_update_job: an update of a whole array answers with one error
  // code per task, which slurm_update_job cannot receive.
  if (slurm_update_job2(desc, &resp) != SLURM_SUCCESS) {
    if (resp != nullptr) slurm_free_job_array_resp(resp);
    return CallError("slurm_update_job", job_id);
  }
  return ArrayErrors("slurm_update_job", job_id, resp);
}

Status LoadOneNode(const std::string& node, std::string* reason, bool* drained) {
  node_info_msg_t* msg = nullptr;
  std::string name = node;
  if (slurm_load_node_single(&msg, name.data(), kShowFlags) != SLURM_SUCCESS) {
    return CallError("slurm_load_node", node);
  }
  if (msg == nullptr || msg->record_count == 0 || msg->node_array[0].name == nullptr) {
    if (msg != nullptr) slurm_free_node_info_msg(msg);
    return Status::Error("slurm_load_node " + node + ": no such node");
  }
  const node_info_t& n = msg->node_array[0];
  *reason = n.reason ? n.reason : "";
  *drained = (n.node_state & NODE_STATE_DRAIN) != 0;
  slurm_free_node_info_msg(msg);
  return Status::Ok();
}

// "123" or "123_7".
bool ParseJobId(const std::string& s, uint32_t* job, uint32_t* task) {
  size_t under = s.find('_');
  auto num = [](const std::string& t, uint32_t* v) {
    if (t.empty() || t.size() > 10 || t.find_first_not_of("0123456789") != std::string::npos) return false;
    uint64_t x = std::stoull(t);
    if (x == 0 && t != "0") return false;
    if (x >= NO_VAL) return false;
    *v = static_cast<uint32_t>(x);
    return true;
  };
  *task = NO_VAL;
  if (under == std::string::npos) return num(s, job) && *job != 0;
  return num(s.substr(0, under), job) && *job != 0 && num(s.substr(under + 1), task);
}

// Release and Hold touch only pending jobs: on a running job slurmctld reads req_nodes as a new,
// smaller NodeList and SHRINKS the job (releasing the other nodes, killing what ran there), and
// accepts priority changes that mean nothing; Shrink only a running one. One slurm_load_job RPC:
// is `job_id` (a job, an array as a whole, or one task of it, split off or not) pending (running)?
Status CheckState(const std::string& job_id, bool running) {
  uint32_t job = 0, task = NO_VAL;
  // An array's pending record by the tasks it holds ("123_[7-9,11]", PendingArrayId): the array
  // must still have a record in that state.
  const size_t bracket = job_id.find("_[");
  const bool record = bracket != std::string::npos && job_id.back() == ']';
  if (!ParseJobId(record ? job_id.substr(0, bracket) : job_id, &job, &task)) {
    return Status::Error("slurm_update_job " + job_id + ": not a job id (123, 123_7 or 123_[7-9])");
  }
  job_info_msg_t* msg = nullptr;
  if (slurm_load_job(&msg, job, SHOW_DETAIL) != SLURM_SUCCESS) return CallError("slurm_load_job", job_id);
  bool found = false, in_state = false;
  for (uint32_t i = 0; msg != nullptr && i < msg->record_count; ++i) {
    const slurm_job_info_t& j = msg->job_array[i];
    bool match = task == NO_VAL;
    if (!match && j.array_job_id == job) {
      match = j.array_task_id == task ||
              (j.array_task_id == NO_VAL && j.array_bitmap != nullptr && task < slurm_bit_size(j.array_bitmap) &&
               slurm_bit_test(j.array_bitmap, task));
    }
    if (!match) continue;
    found = true;
    const uint32_t want = running ? JOB_RUNNING : JOB_PENDING;
    in_state = in_state || ((j.job_state & JOB_STATE_BASE) == want && !(j.job_state & JOB_COMPLETING));
  }
  if (msg != nullptr) slurm_free_job_info_msg(msg);
  if (!found) return Status::Error("slurm_update_job " + job_id + ": " + slurm_strerror(ESLURM_INVALID_JOB_ID));
  if (!in_state) {
    return Status::Error("slurm_update_job " + job_id + ": " + slurm_strerror(running ? ESLURM_JOB_NOT_RUNNING : ESLURM_JOB_NOT_PENDING));
  }
  return Status::Ok();
}

bool IsTidalReason(const std::string& reason) { return reason.rfind("tidal:", 0) == 0; }

std::string Join(const std::vector<std::string>& v, char sep) {
  std::string out;
  for (const std::string& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::mutex g_init_mu;
bool g_initialized = false;
std::string g_conf;

}  // namespace

struct LibslurmApi::Cache {
  time_t jobs_update = 0, nodes_update = 0, parts_update = 0;  // last_update of the last messages
  bool have_jobs = false, have_nodes = false, have_parts = false;
  std::vector<JobRecord> jobs;
  std::vector<NodeRecord> nodes;
  std::vector<std::string> node_names;  // the node table by index ("" = a hole)
  std::map<std::string, std::vector<std::string>> partitions;
  std::vector<PartitionRecord> partition_limits;
  std::string partitions_error;
  LibslurmConverter convert;
};

LibslurmApi::LibslurmApi() : cache_(std::make_unique<Cache>()) {}
LibslurmApi::~LibslurmApi() = default;

StatusOr<std::unique_ptr<LibslurmApi>> LibslurmApi::Create(const std::string& conf) {
  std::string path = conf;
  if (path.empty()) {
    const char* env = std::getenv("SLURM_CONF");
    path = env != nullptr && env[0] != '\0' ? env : "/etc/slurm/slurm.conf";
  }
  std::lock_guard<std::mutex> lock(g_init_mu);
  if (g_initialized) {
    if (path != g_conf) {
      return Status::Error("libslurm is already initialised with '" + g_conf + "' (one slurm.conf per process), not '" +
                           path + "'");
    }
    return std::unique_ptr<LibslurmApi>(new LibslurmApi());
  }
  if (access(path.c_str(), R_OK) != 0) {
    return Status::Error("slurm.conf '" + path + "': " + std::strerror(errno));
  }
  // slurm_init() exit()s on a configuration it cannot use: try it in a child first.
  pid_t pid = fork();
  if (pid < 0) return Status::Error(std::string("fork (to check slurm.conf): ") + std::strerror(errno));
  if (pid == 0) {
    slurm_init(path.c_str());
    _exit(0);
  }
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) return Status::Error(std::string("waitpid: ") + std::strerror(errno));
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return Status::Error("libslurm cannot use slurm.conf '" + path + "' (slurm_init in a child " +
                         (WIFEXITED(wstatus) ? "exited " + std::to_string(WEXITSTATUS(wstatus))
                                             : "died of signal " + std::to_string(WTERMSIG(wstatus))) +
                         "; its stderr says why)");
  }
  slurm_init(path.c_str());
  g_initialized = true;
  g_conf = path;
  return std::unique_ptr<LibslurmApi>(new LibslurmApi());
}

Status LibslurmApi::Load(ClusterRecords* out) {
  auto t0 = std::chrono::steady_clock::now();
  ++stats_.loads;
  Cache& c = *cache_;
  auto fail = [&](const std::string& call) {
    ++stats_.load_errors;
    return CallError(call, "");
  };
  // Jobs first: a job that starts between the two reads then shows as GPUs in use on its node
  // before it shows as running, which errs toward "busy", never toward "free".
  job_info_msg_t* jobs = nullptr;
  bool jobs_changed = true;
  if (slurm_load_jobs(c.have_jobs ? c.jobs_update : 0, &jobs, kShowFlags) != SLURM_SUCCESS) {
    if (slurm_get_errno() != SLURM_NO_CHANGE_IN_DATA || !c.have_jobs) return fail("slurm_load_jobs");
    jobs_changed = false;
    ++stats_.jobs_unchanged;
  }
  node_info_msg_t* nodes = nullptr;
  bool nodes_changed = true;
  if (slurm_load_node(c.have_nodes ? c.nodes_update : 0, &nodes, kShowFlags) != SLURM_SUCCESS) {
    if (slurm_get_errno() != SLURM_NO_CHANGE_IN_DATA || !c.have_nodes) {
      Status st = fail("slurm_load_node");
      if (jobs != nullptr) slurm_free_job_info_msg(jobs);
      return st;
    }
    nodes_changed = false;
    ++stats_.nodes_unchanged;
  }
  partition_info_msg_t* parts = nullptr;
  bool parts_changed = true;
  if (slurm_load_partitions(c.have_parts ? c.parts_update : 0, &parts, SHOW_ALL) != SLURM_SUCCESS) {
    if (slurm_get_errno() != SLURM_NO_CHANGE_IN_DATA || !c.have_parts) {
      Status st = fail("slurm_load_partitions");
      if (jobs != nullptr) slurm_free_job_info_msg(jobs);
      if (nodes != nullptr) slurm_free_node_info_msg(nodes);
      return st;
    }
    parts_changed = false;
  }
  // Every RPC answered: replace what changed. The messages are freed at once; only their
  // last_update is kept for the next call.
  if (parts_changed && parts != nullptr) {
    c.partitions_error.clear();
    c.partitions = LibslurmConverter::PartitionsByNode(parts, &c.partitions_error);
    c.partition_limits = LibslurmConverter::Partitions(parts);
    c.parts_update = parts->last_update;
    c.have_parts = true;
    slurm_free_partition_info_msg(parts);
  }
  if (nodes_changed && nodes != nullptr) {
    std::vector<NodeRecord> records;
    records.reserve(nodes->record_count);
    c.node_names.assign(nodes->record_count, std::string());
    for (uint32_t i = 0; i < nodes->record_count; ++i) {
      if (nodes->node_array[i].name == nullptr) continue;  // a hole in the node table (removed node)
      c.node_names[i] = nodes->node_array[i].name;
      records.push_back(c.convert.Node(nodes->node_array[i], c.partitions));
    }
    c.nodes = std::move(records);
    c.nodes_update = nodes->last_update;
    c.have_nodes = true;
    slurm_free_node_info_msg(nodes);
  } else if (parts_changed) {
    for (NodeRecord& n : c.nodes) {
      auto it = c.partitions.find(n.name);
      n.partitions = it == c.partitions.end() ? std::vector<std::string>{} : it->second;
    }
  }
  // Jobs after the nodes: a running job's per-node GPUs name its nodes by node-table index.
  if (jobs_changed && jobs != nullptr) {
    std::vector<JobRecord> records;
    records.reserve(jobs->record_count);
    for (uint32_t i = 0; i < jobs->record_count; ++i) records.push_back(c.convert.Job(jobs->job_array[i], c.node_names));
    c.jobs = std::move(records);
    c.jobs_update = jobs->last_update;
    c.have_jobs = true;
    slurm_free_job_info_msg(jobs);
  }
  out->jobs = c.jobs;
  out->nodes = c.nodes;
  out->partitions = c.partition_limits;
  if (!c.partitions_error.empty()) {
    for (NodeRecord& n : out->nodes) n.parse_error += (n.parse_error.empty() ? "" : "; ") + c.partitions_error;
  }
  out->read_unix = static_cast<int64_t>(std::time(nullptr));
  stats_.last_job_count = static_cast<int64_t>(out->jobs.size());
  stats_.last_node_count = static_cast<int64_t>(out->nodes.size());
  stats_.last_load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

namespace {
// The pin's node count on `desc` (NumNodes=MIN-MAX), when it sets one.
void SetCount(const JobPin& pin, job_desc_msg_t* desc) {
  if (pin.min_nodes == 0) return;
  desc->min_nodes = pin.min_nodes;
  desc->max_nodes = std::max(pin.min_nodes, pin.max_nodes);
}
}  // namespace

Status LibslurmApi::Release(const std::string& job_id, const JobPin& pin, const std::string& comment) {
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  std::string req_nodes = Join(pin.nodes, ',');
  std::string text = comment;
  if (!pin.nodes.empty()) desc.req_nodes = req_nodes.data();
  SetCount(pin, &desc);
  desc.admin_comment = text.data();  // Tidal writes AdminComment; the user's --comment is theirs
  desc.priority = INFINITE;  // `scontrol release`: clears a user or admin hold
  if (Status st = CheckState(job_id, false); !st.ok()) return st;
  return UpdateJob(job_id, &desc);
}

Status LibslurmApi::Hold(const std::string& job_id, const std::string& comment, const JobPin& pin) {
  if (Status st = CheckState(job_id, false); !st.ok()) return st;
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  std::string nodes = Join(pin.nodes, ',');
  std::string text = comment;
  desc.req_nodes = nodes.data();  // the user's --nodelist again; "" clears ReqNodeList
  SetCount(pin, &desc);
  desc.admin_comment = text.data();
  desc.priority = 0;
  return UpdateJob(job_id, &desc);
}

Status LibslurmApi::HoldRequeued(const std::string& job_id, const std::string& comment, const JobPin& pin) {
  if (Status st = CheckState(job_id, false); !st.ok()) return st;
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  std::string nodes = Join(pin.nodes, ',');
  std::string text = comment;
  desc.req_nodes = nodes.data();
  SetCount(pin, &desc);
  desc.admin_comment = text.data();
  desc.priority = 0;
  desc.begin_time = std::time(nullptr);  // `scontrol update StartTime=now`
  return UpdateJob(job_id, &desc);
}

Status LibslurmApi::Shrink(const std::string& job_id, const std::vector<std::string>& nodes) {
  if (nodes.empty()) return Status::Error("slurm_update_job " + job_id + ": a shrink to no nodes");
  if (Status st = CheckState(job_id, true); !st.ok()) return st;
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  std::string list = Join(nodes, ',');
  desc.req_nodes = list.data();  // on a running job: its new, smaller NodeList
  return UpdateJob(job_id, &desc);
}

Status LibslurmApi::SetComment(const std::string& job_id, const std::string& comment) {
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  std::string text = comment;
  desc.admin_comment = text.data();
  return UpdateJob(job_id, &desc);
}

Status LibslurmApi::Requeue(const std::string& job_id) {
  std::string id = job_id;
  job_array_resp_msg_t* resp = nullptr;
  // JOB_RUNNING: only a job that still runs. Without it slurmctld also requeues a job that has
  // just COMPLETED (or failed), and it would run a second time.
  if (slurm_requeue2(id.data(), JOB_REQUEUE_HOLD | JOB_RUNNING, &resp) == SLURM_SUCCESS) {
    return ArrayErrors("slurm_requeue", job_id, resp);
  }
  if (resp != nullptr) slurm_free_job_array_resp(resp);
  int err = slurm_get_errno();
  if (err != ESLURM_BATCH_ONLY && err != ESLURM_DISABLED) return CallError("slurm_requeue", job_id);
  // Not requeueable (an salloc/srun allocation, or --no-requeue): cancel it.
  if (slurm_kill_job2(id.c_str(), SIGKILL, 0, nullptr) != SLURM_SUCCESS) {
    if (slurm_get_errno() == ESLURM_ALREADY_DONE) return Status::Ok();  // ended on its own meanwhile
    return Status::Error("slurm_requeue " + job_id + ": " + slurm_strerror(err) + "; slurm_kill_job " + job_id +
                         ": " + SlurmError());
  }
  return Status::Ok();
}

Status LibslurmApi::Signal(const std::string& job_id, int signal, bool batch_only) {
  if (signal <= 0 || signal > 64) return Status::Error("slurm_kill_job " + job_id + ": signal " + std::to_string(signal) + " is not a signal");
  uint32_t job = 0, task = NO_VAL;
  if (!ParseJobId(job_id, &job, &task)) return Status::Error("slurm_kill_job " + job_id + ": not a job id (123 or 123_7)");
  // slurm_kill_job2 takes "123" and "123_7" (an array task, split off or not), as scancel does.
  if (slurm_kill_job2(job_id.c_str(), static_cast<uint16_t>(signal), batch_only ? KILL_JOB_BATCH : 0, nullptr) !=
      SLURM_SUCCESS) {
    return CallError("slurm_kill_job", job_id);
  }
  return Status::Ok();
}

std::string LibslurmApi::DrainReason(const std::string& reason) {
  if (IsTidalReason(reason)) return reason;
  return reason.empty() ? "tidal: drained" : "tidal: " + reason;
}

Status LibslurmApi::Drain(const std::string& node, const std::string& reason) {
  std::string current;
  bool drained = false;
  Status st = LoadOneNode(node, &current, &drained);
  if (!st.ok()) return st;
  if (drained && !IsTidalReason(current)) return Status::Ok();  // someone else's drain: theirs to lift
  update_node_msg_t msg;
  slurm_init_update_node_msg(&msg);
  std::string names = node;
  std::string why = DrainReason(reason);
  msg.node_names = names.data();
  msg.node_state = NODE_STATE_DRAIN;
  msg.reason = why.data();
  msg.reason_uid = static_cast<uint32_t>(getuid());
  if (slurm_update_node(&msg) != SLURM_SUCCESS) return CallError("slurm_update_node", node);
  return Status::Ok();
}

Status LibslurmApi::Undrain(const std::string& node) {
  std::string current;
  bool drained = false;
  Status st = LoadOneNode(node, &current, &drained);
  if (!st.ok()) return st;
  if (!drained) return Status::Ok();
  if (!IsTidalReason(current)) {
    return Status::Error("slurm_update_node " + node + ": drained by someone else (reason '" + current +
                         "'), left drained");
  }
  update_node_msg_t msg;
  slurm_init_update_node_msg(&msg);
  std::string names = node;
  msg.node_names = names.data();
  msg.node_state = NODE_STATE_UNDRAIN;
  if (slurm_update_node(&msg) != SLURM_SUCCESS) return CallError("slurm_update_node", node);
  return Status::Ok();
}

}  // namespace tidal::slurm
