// Fields both readers derive from Slurm's raw strings (see job_fields.h).
//
// Threading: pure functions; no shared state.
#include "shim/slurm/job_fields.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <csignal>

#include "shim/slurm/hostlist.h"
#include "shim/slurm/tres.h"

namespace tidal::slurm {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return b <= 0 ? a : (a + b - 1) / b; }

bool ParseU32(std::string_view s, uint32_t* v) {
  if (s.empty() || s.size() > 10) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool HoldsNodes(const JobRecord& j) {
  return j.completing || j.state == JobState::kRunning || j.state == JobState::kSuspended ||
         j.state == JobState::kCompleting;
}

void DeriveGpus(const RawJob& raw, JobRecord* job) {
  GpuRequest per_node, per_job, per_task, per_socket;
  Status st = ParseTresGpus("tres_per_node", raw.tres_per_node, &per_node);
  if (st.ok()) st = ParseTresGpus("tres_per_job", raw.tres_per_job, &per_job);
  if (st.ok()) st = ParseTresGpus("tres_per_task", raw.tres_per_task, &per_task);
  if (st.ok()) st = ParseTresGpus("tres_per_socket", raw.tres_per_socket, &per_socket);
  if (!st.ok()) return AddParseError(&job->parse_error, st);
  int64_t nodes = std::max<int64_t>(job->node_count, 1);
  std::vector<std::string> models;
  if (per_socket.found) {
    return AddParseError(&job->parse_error,
                         "tres_per_socket: GPUs per socket ('" + raw.tres_per_socket + "') are not supported");
  }
  if (per_node.found) {
    job->gpus_per_node = per_node.count;
    models.push_back(per_node.model);
  }
  if (per_job.found) {
    job->gpus_total = per_job.count;
    models.push_back(per_job.model);
  } else if (per_task.found) {
    int64_t tasks = std::max<int64_t>(raw.num_tasks, 1);
    if (__builtin_mul_overflow(per_task.count, tasks, &job->gpus_total) || job->gpus_total > kMaxGpuCount) {
      job->gpus_total = 0;
      return AddParseError(&job->parse_error, "tres_per_task: '" + raw.tres_per_task + "' x " +
                                                  std::to_string(tasks) + " tasks is over the GPU limit");
    }
    models.push_back(per_task.model);
  }
  if (!per_node.found && !per_job.found && !per_task.found) {
    // Only the TRES accounting string says it (AccountingStorageTRES=gres/gpu with slurmdbd).
    TresCounts req;
    if (ParseTresCounts("tres_req_str", raw.tres_req_str, &req).ok() && req.gpus > 0) {
      job->gpus_total = req.gpus;
      models.push_back(req.gpu_model);
    }
  }
  if (job->gpus_total > 0 && !per_node.found) job->gpus_per_node = CeilDiv(job->gpus_total, nodes);
  for (const std::string& m : models) {
    if (m.empty()) continue;
    if (!job->gpu_model.empty() && job->gpu_model != m) {
      return AddParseError(&job->parse_error, "GPU models '" + job->gpu_model + "' and '" + m + "' both asked for");
    }
    job->gpu_model = m;
  }
}

void DeriveCpusMemory(const RawJob& raw, JobRecord* job) {
  // tres_alloc_str once the job holds nodes (exclusive jobs get more than they asked for).
  bool alloc = HoldsNodes(*job) && !raw.tres_alloc_str.empty();
  const std::string& text = alloc ? raw.tres_alloc_str : raw.tres_req_str;
  TresCounts t;
  Status st = ParseTresCounts(alloc ? "tres_alloc_str" : "tres_req_str", text, &t);
  if (!st.ok()) AddParseError(&job->parse_error, st);
  int64_t nodes = t.nodes > 0 ? t.nodes : std::max<int64_t>(job->node_count, 1);
  job->cpus_per_node = t.cpus >= 0 ? CeilDiv(t.cpus, nodes) : raw.pn_min_cpus;
  job->cpus_per_node = std::max(job->cpus_per_node, raw.pn_min_cpus);
  if (t.memory_mb >= 0) {
    job->memory_mb_per_node = CeilDiv(t.memory_mb, nodes);
  } else if (raw.pn_min_memory_mb > 0) {
    job->memory_mb_per_node = raw.pn_min_memory_mb;
  } else if (raw.mem_per_cpu_mb > 0 && job->cpus_per_node > 0) {
    int64_t mb = 0;
    if (__builtin_mul_overflow(raw.mem_per_cpu_mb, job->cpus_per_node, &mb) || mb > kMaxMemoryMb) {
      AddParseError(&job->parse_error, "memory_per_cpu: " + std::to_string(raw.mem_per_cpu_mb) + " MiB x " +
                                           std::to_string(job->cpus_per_node) + " cpus is over the memory limit");
    } else {
      job->memory_mb_per_node = mb;
    }
  }
}

// node_gpus from the per-node GRES detail of a job holding nodes: each entry's GPU count on its
// node, in the order of job->nodes. Whatever the job asked for: an --exclusive job that asked for
// no GPUs is given every GPU of its nodes (Slurm 22.05: JOB_GRES=gpu:a100:4), and read as 0 the
// engine counted them free and its queue was charged nothing for them. Anything that does not
// line up (a count of entries other than the nodes', an entry that does not parse or names no
// GPU, a node not among the job's) leaves it empty: the job is then read as gpus_per_node on each
// node, as before the detail was read.
void DeriveJobNodeGpus(const RawJob& raw, JobRecord* job) {
  job->node_gpus.clear();
  if (!HoldsNodes(*job) || raw.gres_detail.empty() || raw.gres_detail.size() != job->nodes.size()) return;
  std::map<std::string, int64_t> on;
  for (size_t i = 0; i < raw.gres_detail.size(); ++i) {
    NodeGpus g;
    if (!ParseNodeGres("gres_detail", raw.gres_detail[i], &g).ok() || g.types.empty()) return;
    const std::string& node = i < raw.gres_detail_nodes.size() && !raw.gres_detail_nodes[i].empty()
                                  ? raw.gres_detail_nodes[i]
                                  : job->nodes[i];
    if (!on.emplace(node, g.count).second) return;
  }
  std::vector<int64_t> out;
  out.reserve(job->nodes.size());
  for (const std::string& n : job->nodes) {
    auto it = on.find(n);
    if (it == on.end()) return;
    out.push_back(it->second);
  }
  job->node_gpus = std::move(out);
}

void Expand(std::string_view field, const std::string& expr, std::vector<std::string>* out,
            std::string* parse_error) {
  out->clear();
  Status st = ExpandHostlist(expr, out, field);
  if (!st.ok()) AddParseError(parse_error, st);
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Signal names as Slurm's sig_name2num reads them ("USR1", "SIGUSR1", any case).
int SignalNumber(std::string_view name) {
  static constexpr std::pair<const char*, int> kSignals[] = {
      {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ABRT", SIGABRT},   {"KILL", SIGKILL},
      {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},   {"URG", SIGURG},
      {"CONT", SIGCONT}, {"STOP", SIGSTOP}, {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},   {"TTOU", SIGTTOU},
      {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ}, {"PROF", SIGPROF}, {"VTALRM", SIGVTALRM}, {"WINCH", SIGWINCH},
  };
  if (name.size() > 3 && EqualsNoCase(name.substr(0, 3), "SIG")) name.remove_prefix(3);
  for (const auto& [n, v] : kSignals) {
    if (EqualsNoCase(name, n)) return v;
  }
  return 0;
}

}  // namespace

std::map<std::string, std::string> CommentKeys(std::string_view comment) {
  std::map<std::string, std::string> out;
  auto sep = [](char c) { return std::isspace(static_cast<unsigned char>(c)) || c == ',' || c == ';'; };
  size_t i = 0;
  while (i < comment.size()) {
    while (i < comment.size() && sep(comment[i])) ++i;
    size_t j = i;
    while (j < comment.size() && !sep(comment[j])) ++j;
    const std::string_view word = comment.substr(i, j - i);
    const size_t eq = word.find('=');
    if (eq != std::string_view::npos && word.substr(0, 10) == "tidal.dev/") {
      out[std::string(word.substr(0, eq))] = std::string(word.substr(eq + 1));
    }
    i = j;
  }
  return out;
}

Status ParseNoticeSignal(std::string_view value, NoticeSignal* out) {
  auto fail = [&](const std::string& why) {
    return Status::Error(std::string("--comment ") + kSignalKey + "=" + std::string(value.substr(0, 100)) + ": " + why +
                         " (want [B:]SIG[@SECONDS], e.g. B:USR1@60)");
  };
  NoticeSignal r;
  std::string_view s = value;
  if (size_t colon = s.find(':'); colon != std::string_view::npos) {
    for (char c : s.substr(0, colon)) {
      if (c == 'B' || c == 'b') {
        r.batch_only = true;
      } else if (c != 'R' && c != 'r') {
        return fail("unknown flag '" + std::string(1, c) + "'");
      }
    }
    s.remove_prefix(colon + 1);
  }
  r.time_s = 60;  // sbatch's default
  if (size_t at = s.find('@'); at != std::string_view::npos) {
    uint32_t t = 0;
    if (!ParseU32(s.substr(at + 1), &t) || t > 0xffff) return fail("the time is not 0..65535 seconds");
    r.time_s = t;
    s = s.substr(0, at);
  }
  uint32_t num = 0;
  if (ParseU32(s, &num)) {
    if (num == 0 || num > 64) return fail("signal " + std::to_string(num) + " is not 1..64");
    r.signal = static_cast<int>(num);
  } else {
    r.signal = SignalNumber(s);
    if (r.signal == 0) return fail("'" + std::string(s) + "' is not a signal name");
  }
  *out = r;
  return Status::Ok();
}

void AddParseError(std::string* parse_error, std::string_view msg) {
  if (!parse_error->empty()) *parse_error += "; ";
  *parse_error += msg;
}

void AddParseError(std::string* parse_error, const Status& st) { AddParseError(parse_error, st.Message()); }

std::vector<std::string> SplitCommaList(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',') {
      if (i > start) out.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

Status ExpandArrayTasks(std::string_view text, std::vector<uint32_t>* tasks, uint32_t* max_tasks) {
  auto fail = [&](const std::string& what) {
    return Status::Error("array_task_str: " + what + " in '" + std::string(text.substr(0, 200)) + "'");
  };
  std::vector<uint32_t> out;
  uint32_t limit = 0;
  std::string_view s = text;
  if (size_t pct = s.find('%'); pct != std::string_view::npos) {
    if (!ParseU32(s.substr(pct + 1), &limit)) return fail("bad '%' limit");
    s = s.substr(0, pct);
  }
  if (s.size() >= 3 && s.substr(s.size() - 3) == "...") return fail("truncated list");
  if (s.substr(0, 2) == "0x" || s.substr(0, 2) == "0X") {
    // Hex bitmap, least significant bit = task 0 (slurmctld's bit_fmt_hexmask).
    std::string_view hex = s.substr(2);
    if (hex.empty() || hex.size() * 4 > kMaxArrayTaskId + 4) return fail("bad hex task bitmap");
    for (size_t i = 0; i < hex.size(); ++i) {
      char c = hex[hex.size() - 1 - i];
      int v = HexValue(c);
      if (v < 0) return fail("bad hex task bitmap");
      for (int b = 0; b < 4; ++b) {
        if (v & (1 << b)) out.push_back(static_cast<uint32_t>(i * 4 + b));
      }
    }
  } else {
    for (const std::string& r : SplitCommaList(s)) {
      std::string_view range = r;
      uint32_t step = 1;
      if (size_t colon = range.find(':'); colon != std::string_view::npos) {
        if (!ParseU32(range.substr(colon + 1), &step) || step == 0) return fail("bad step '" + r + "'");
        range = range.substr(0, colon);
      }
      size_t dash = range.find('-');
      uint32_t lo = 0, hi = 0;
      if (!ParseU32(range.substr(0, dash), &lo) ||
          !ParseU32(dash == std::string_view::npos ? range : range.substr(dash + 1), &hi)) {
        return fail("bad range '" + r + "'");
      }
      if (hi < lo) return fail("range '" + r + "' runs backwards");
      if (hi > kMaxArrayTaskId) return fail("task id over " + std::to_string(kMaxArrayTaskId));
      for (uint64_t t = lo; t <= hi; t += step) out.push_back(static_cast<uint32_t>(t));
      if (out.size() > kMaxArrayTaskId) return fail("more than " + std::to_string(kMaxArrayTaskId) + " tasks");
    }
  }
  if (out.empty()) return fail("no task ids");
  *tasks = std::move(out);
  *max_tasks = limit;
  return Status::Ok();
}

void DeriveJobFields(const RawJob& raw, JobRecord* job) {
  DeriveGpus(raw, job);
  DeriveCpusMemory(raw, job);
  Expand("nodes", raw.nodes, &job->nodes, &job->parse_error);
  DeriveJobNodeGpus(raw, job);
  Expand("required_nodes", raw.required_nodes, &job->required_nodes, &job->parse_error);
  Expand("excluded_nodes", raw.excluded_nodes, &job->excluded_nodes, &job->parse_error);
  job->warn_signal = 0;
  job->warn_time_s = 0;
  job->warn_batch_only = false;
  if (job->comment.find(kSignalKey) != std::string::npos) {
    const auto keys = CommentKeys(job->comment);
    if (auto it = keys.find(kSignalKey); it != keys.end()) {
      NoticeSignal sig;
      if (Status st = ParseNoticeSignal(it->second, &sig); !st.ok()) {
        AddParseError(&job->parse_error, st);
      } else {
        job->warn_signal = sig.signal;
        job->warn_time_s = sig.time_s;
        job->warn_batch_only = sig.batch_only;
      }
    }
  }
  job->pending_array_tasks.clear();
  if (!raw.array_task_str.empty()) {
    Status st = ExpandArrayTasks(raw.array_task_str, &job->pending_array_tasks, &job->array_max_tasks);
    if (!st.ok()) AddParseError(&job->parse_error, st);
  }
}

void DeriveNodeGpus(std::string_view gres, std::string_view gres_used, NodeRecord* node) {
  NodeGpus total, used;
  Status st = ParseNodeGres("gres", gres, &total);
  if (!st.ok()) AddParseError(&node->parse_error, st);
  st = ParseNodeGres("gres_used", gres_used, &used);
  if (!st.ok()) AddParseError(&node->parse_error, st);
  node->gpus = total.count;
  node->gpus_used = used.count;
  node->gpu_types.clear();
  for (const auto& [model, count] : total.types) node->gpu_types.push_back({model, count});
  node->gpu_model = total.types.size() == 1 ? total.types[0].first : "";
}

bool JobStateFromName(std::string_view name, JobState* state, bool* completing) {
  struct Entry {
    const char* name;
    JobState state;
    bool completing;
  };
  static constexpr Entry kNames[] = {
      {"PENDING", JobState::kPending, false}, {"RUNNING", JobState::kRunning, false},
      {"SUSPENDED", JobState::kSuspended, false}, {"COMPLETED", JobState::kCompleted, false},
      {"CANCELLED", JobState::kCancelled, false}, {"FAILED", JobState::kFailed, false},
      {"TIMEOUT", JobState::kTimeout, false}, {"NODE_FAIL", JobState::kNodeFail, false},
      {"PREEMPTED", JobState::kPreempted, false}, {"BOOT_FAIL", JobState::kBootFail, false},
      {"DEADLINE", JobState::kDeadline, false}, {"OUT_OF_MEMORY", JobState::kOutOfMemory, false},
      // Flags job_state_string() prints instead of the base state.
      {"COMPLETING", JobState::kCompleting, true},
      {"STAGE_OUT", JobState::kCompleting, true},       // burst buffer stage-out: treat as still held
      {"CONFIGURING", JobState::kRunning, false},       // allocated, nodes booting
      {"POWER_UP_NODE", JobState::kRunning, false},
      {"RESIZING", JobState::kRunning, false},
      {"SIGNALING", JobState::kRunning, false},
      {"STOPPED", JobState::kSuspended, false},         // SIGSTOP: still holds its nodes
      {"REQUEUED", JobState::kPending, false},
      {"REQUEUE_HOLD", JobState::kPending, false},
      {"REQUEUE_FED", JobState::kPending, false},
      {"SPECIAL_EXIT", JobState::kPending, false},
      {"RESV_DEL_HOLD", JobState::kPending, false},
      {"LAUNCH_FAILED", JobState::kPending, false},
      {"REVOKED", JobState::kCancelled, false},
  };
  for (const Entry& e : kNames) {
    if (EqualsNoCase(name, e.name)) {
      *state = e.state;
      *completing = e.completing;
      return true;
    }
  }
  return false;
}

bool NodeStateFromName(std::string_view name, NodeState* state) {
  static constexpr std::pair<const char*, NodeState> kNames[] = {
      {"idle", NodeState::kIdle},   {"allocated", NodeState::kAllocated}, {"alloc", NodeState::kAllocated},
      {"mixed", NodeState::kMixed}, {"down", NodeState::kDown},           {"error", NodeState::kError},
      {"future", NodeState::kFuture}, {"unknown", NodeState::kUnknown},
  };
  for (const auto& [n, s] : kNames) {
    if (EqualsNoCase(name, n)) {
      *state = s;
      return true;
    }
  }
  return false;
}

void ApplyNodeFlag(std::string_view flag, NodeRecord* node) {
  if (EqualsNoCase(flag, "DRAIN") || EqualsNoCase(flag, "DRAINED") || EqualsNoCase(flag, "DRAINING") ||
      EqualsNoCase(flag, "FAIL")) {  // FAIL: "failing, no new work", the same for placement
    node->drain = true;
  } else if (EqualsNoCase(flag, "COMPLETING")) {
    node->completing = true;
  } else if (EqualsNoCase(flag, "NOT_RESPONDING") || EqualsNoCase(flag, "NO_RESPOND")) {
    node->not_responding = true;
  } else if (EqualsNoCase(flag, "MAINTENANCE") || EqualsNoCase(flag, "MAINT")) {
    node->maint = true;
  } else if (EqualsNoCase(flag, "RESERVED")) {
    node->reserved = true;
  }
}

}  // namespace tidal::slurm
