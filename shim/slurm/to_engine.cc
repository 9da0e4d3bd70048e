// Slurm jobs and nodes as tidal.v1 messages (see to_engine.h). Pure functions.
#include "shim/slurm/to_engine.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string_view>

#include "core/api/duration.h"
#include "core/api/limits.h"
#include "shim/slurm/hostlist.h"
#include "shim/slurm/job_fields.h"
#include "shim/slurm/waiting.h"

namespace tidal::slurm {

namespace {

bool StartsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// A label key's name part: [A-Za-z0-9._-], at most 63 characters.
std::string LabelName(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && !std::isalnum(static_cast<unsigned char>(out.back()))) out.pop_back();
  while (!out.empty() && !std::isalnum(static_cast<unsigned char>(out.front()))) out.erase(out.begin());
  return out.empty() ? "x" : out;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(sep, i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

void AddFieldTerm(v1::NodeSelectorTerm* t, const char* op, const std::vector<std::string>& nodes) {
  auto* r = t->add_match_fields();
  r->set_key("metadata.name");
  r->set_operator_(op);
  for (const auto& n : nodes) r->add_values(n);
}

// The job's node constraints: partition(s) (one term each), --constraint features, --exclude, a
// user's --nodelist (not Tidal's own pin). Returns "" or why the job cannot be expressed.
std::string Constrain(const JobRecord& j, JobStance stance, v1::Pod& p) {
  std::vector<std::string> parts = Split(j.partition, ',');
  std::map<std::string, std::string> features;
  if (!j.features.empty()) {
    for (const auto& f : Split(j.features, '&')) {
      if (f.find_first_of("|[]*()!:") != std::string::npos) {
        return "--constraint '" + j.features + "': Tidal reads only features joined by '&'";
      }
      features[FeatureLabel(f)] = "true";
    }
  }
  p.mutable_node_selector()->insert(features.begin(), features.end());
  const std::vector<std::string> pin = stance == JobStance::kReleased ? std::vector<std::string>{} : UserPin(j);
  const bool user_pin = !pin.empty();
  const size_t terms = std::max<size_t>(1, parts.size());
  for (size_t i = 0; i < terms; ++i) {
    if (parts.empty() && j.excluded_nodes.empty() && !user_pin) break;
    auto* t = p.add_required_node_affinity();
    if (!parts.empty()) {
      auto* r = t->add_match_expressions();
      r->set_key(PartitionLabel(parts[i]));
      r->set_operator_("In");
      r->add_values("true");
    }
    if (!j.excluded_nodes.empty()) AddFieldTerm(t, "NotIn", j.excluded_nodes);
    if (user_pin) AddFieldTerm(t, "In", pin);
  }
  return "";
}

}  // namespace

int64_t GpusOn(const JobRecord& j, const std::string& node) {
  if (j.node_gpus.size() != j.nodes.size()) return -1;
  for (size_t i = 0; i < j.nodes.size(); ++i) {
    if (j.nodes[i] == node) return j.node_gpus[i];
  }
  return -1;
}

std::string PartitionLabel(const std::string& p) { return "partition.slurm.tidal.dev/" + LabelName(p); }
std::string FeatureLabel(const std::string& f) { return "feature.slurm.tidal.dev/" + LabelName(f); }

namespace {
constexpr std::string_view kPinNote = " [nodelist: ";

// The hostlist of Tidal's note in the AdminComment of a job on Tidal's pin ("" when none).
std::string_view PinNoteOf(const JobRecord& j) {
  if (!TidalPin(j)) return {};
  const size_t at = j.admin_comment.rfind(kPinNote);
  if (at == std::string::npos || j.admin_comment.back() != ']') return {};
  const size_t from = at + kPinNote.size();
  return std::string_view(j.admin_comment).substr(from, j.admin_comment.size() - 1 - from);
}

}  // namespace

namespace {
constexpr std::string_view kRangeNote = " [nodes: ";

// The range of Tidal's note (" [nodes: 2-4]") in a Tidal AdminComment; nullopt when none.
std::optional<NodeRange> RangeNoteOf(const JobRecord& j) {
  if (j.admin_comment.rfind(kTidalPrefix, 0) != 0) return std::nullopt;
  const size_t at = j.admin_comment.rfind(kRangeNote);
  if (at == std::string::npos) return std::nullopt;
  const char* p = j.admin_comment.c_str() + at + kRangeNote.size();
  char* end = nullptr;
  const unsigned long lo = std::strtoul(p, &end, 10);
  if (end == p || *end != '-') return std::nullopt;
  p = end + 1;
  const unsigned long hi = std::strtoul(p, &end, 10);
  if (end == p || *end != ']' || lo < 1 || hi <= lo || hi > static_cast<unsigned long>(limits::kMaxGangMembers)) {
    return std::nullopt;
  }
  return NodeRange{static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)};
}
}  // namespace

NodeRange NodeRangeOf(const JobRecord& j) {
  if (std::optional<NodeRange> noted = RangeNoteOf(j)) return *noted;
  const uint32_t n = std::max<uint32_t>(1, j.node_count);
  if (j.state == JobState::kPending && j.max_node_count > n) return {n, j.max_node_count};
  return {n, n};
}

std::string NodeRangeNote(const JobRecord& j) {
  const NodeRange r = NodeRangeOf(j);
  return r.Elastic() ? std::string(kRangeNote) + std::to_string(r.min) + "-" + std::to_string(r.max) + "]" : "";
}

std::string TidalNotes(const JobRecord& j, bool pinned) {
  return NodeRangeNote(j) + (pinned ? UserPinNote(UserPin(j)) : "");
}

std::vector<std::pair<uint32_t, std::string>> MemberNodes(const JobRecord& j) {
  std::vector<std::string> on = j.nodes;
  std::sort(on.begin(), on.end());
  std::vector<std::pair<uint32_t, std::string>> out;
  out.reserve(on.size());
  std::vector<std::string> pin;
  if (TidalPin(j)) {
    pin = j.required_nodes;
    std::sort(pin.begin(), pin.end());
  }
  const bool on_pin = !pin.empty() && std::includes(pin.begin(), pin.end(), on.begin(), on.end());
  for (size_t i = 0; i < on.size(); ++i) {
    const size_t at = on_pin ? static_cast<size_t>(std::lower_bound(pin.begin(), pin.end(), on[i]) - pin.begin()) : i;
    out.emplace_back(static_cast<uint32_t>(at), on[i]);
  }
  return out;
}

std::string UserPinNote(const std::vector<std::string>& pin) {
  return pin.empty() ? "" : std::string(kPinNote) + CompressHostlist(pin) + "]";
}

std::vector<std::string> UserPin(const JobRecord& j) {
  if (!TidalPin(j)) return j.required_nodes;
  std::vector<std::string> out;
  if (const std::string_view note = PinNoteOf(j); note.empty() || !ExpandHostlist(note, &out).ok()) return {};
  return out;
}

bool TidalPin(const JobRecord& j) {
  return StartsWith(j.admin_comment, kReleasedPrefix) || StartsWith(j.admin_comment, kNoticePrefix);
}

JobStance StanceOf(const JobRecord& j) {
  if (j.completing) return JobStance::kActive;
  switch (j.state) {
    case JobState::kRunning:
    case JobState::kSuspended:
    case JobState::kCompleting: return JobStance::kActive;
    case JobState::kPending:
      if (j.priority == 0) return JobStance::kHeld;
      if (StartsWith(j.admin_comment, kReleasedPrefix) && !j.required_nodes.empty()) return JobStance::kReleased;
      return JobStance::kEscaped;
    default: return JobStance::kFinished;
  }
}

std::string SkipReason(const JobRecord& j) {
  if (!j.parse_error.empty()) return "cannot schedule: " + j.parse_error;
  if (j.state != JobState::kPending) return "";
  if (std::string held = UserHoldReason(j); !held.empty()) return held;  // its owner's hold (waiting.h)
  if (j.state_reason == "DependencyNeverSatisfied") return "dependency never satisfied (" + j.dependency + ")";
  if (j.state_reason == "Dependency" || (!j.dependency.empty() && j.state_reason != "JobHeldUser" && j.state_reason != "JobHeldAdmin")) {
    return "waiting on dependency " + (j.dependency.empty() ? std::string("(see squeue)") : j.dependency);
  }
  if (!j.dependency.empty() && j.dependency.find("(unfulfilled)") != std::string::npos) {
    return "waiting on dependency " + j.dependency;
  }
  if (j.node_count == 0) return "cannot schedule: node_count: 0 nodes";
  if (NodeRangeOf(j).Elastic() && j.gpus_total > 0) {
    // A per-job GPU count has no per-node share while the node count is open.
    const NodeRange r = NodeRangeOf(j);
    return "cannot schedule: --nodes=" + std::to_string(r.min) + "-" + std::to_string(r.max) +
           " with GPUs per job (--gpus or --gpus-per-task): ask for GPUs per node (--gpus-per-node) with a node range";
  }
  return BoundsError(j);
}

std::string BoundsError(const JobRecord& j) {
  // core/api/limits.h: what the engine accepts of one gang, refused here with the job's own words.
  auto over = [](const std::string& what, int64_t v, const std::string& limit) {
    return "cannot schedule: " + what + " " + std::to_string(v) + " is over Tidal's limit of " + limit;
  };
  const uint32_t most = std::max(j.node_count, j.max_node_count);
  if (most > limits::kMaxGangMembers) return over("node_count:", most, std::to_string(limits::kMaxGangMembers) + " nodes");
  if (j.gpus_per_node > limits::kMaxGpusPerNode) {
    return over("GPUs per node:", j.gpus_per_node, std::to_string(limits::kMaxGpusPerNode));
  }
  if (j.cpus_per_node > limits::kMaxCpuMilliPerNode / 1000) {
    return over("CPUs per node:", j.cpus_per_node, std::to_string(limits::kMaxCpuMilliPerNode / 1000));
  }
  if (j.memory_mb_per_node > (limits::kMaxMemoryBytesPerNode >> 20)) {
    return over("memory per node (MiB):", j.memory_mb_per_node, std::to_string(limits::kMaxMemoryBytesPerNode >> 20));
  }
  const int64_t nodes = std::max<int64_t>(1, most);
  if (Status s = limits::CheckWorkloadTotal(Resources{std::max<int64_t>(0, j.gpus_per_node), 0, 0}, nodes, "GPUs"); !s.ok()) {
    return "cannot schedule: " + s.Message();
  }
  for (const auto& [k, v] : CommentKeys(j.comment)) {
    if (v.size() > limits::kMaxValueBytes) {
      return "cannot schedule: --comment " + k + ": a value of " + std::to_string(v.size()) + " bytes, over the limit of " +
             std::to_string(limits::kMaxValueBytes);
    }
  }
  size_t names = 0;
  for (const auto* list : {&j.excluded_nodes, &j.required_nodes}) {
    for (const auto& n : *list) names += n.size() + 2;
  }
  if (names > limits::kMaxObjectBytes / 2) {
    return "cannot schedule: --exclude / --nodelist name " + std::to_string(names) + " bytes of nodes, over the limit of " +
           std::to_string(limits::kMaxObjectBytes / 2);
  }
  return "";
}

std::vector<std::string> JobIdsOf(const JobRecord& j) {
  if (j.pending_array_tasks.empty()) return {j.id};
  std::vector<std::string> out;
  out.reserve(j.pending_array_tasks.size());
  const uint32_t base = j.array_job_id != 0 ? j.array_job_id : j.job_id;
  for (uint32_t t : j.pending_array_tasks) out.push_back(std::to_string(base) + "_" + std::to_string(t));
  return out;
}

std::string PendingArrayId(const JobRecord& j) {
  if (j.pending_array_tasks.empty()) return "";
  std::vector<uint32_t> t = j.pending_array_tasks;
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  std::string out = std::to_string(j.array_job_id != 0 ? j.array_job_id : j.job_id) + "_[";
  for (size_t i = 0; i < t.size();) {
    size_t k = i;
    while (k + 1 < t.size() && t[k + 1] == t[k] + 1) ++k;
    out += (i == 0 ? "" : ",") + std::to_string(t[i]) + (k == i ? "" : "-" + std::to_string(t[k]));
    i = k + 1;
  }
  return out + "]";
}

namespace {

// Members of a job that holds no nodes: MAX of an elastic job's range, else its node count.
int64_t WaitingMembers(const JobRecord& j) {
  const NodeRange range = NodeRangeOf(j);
  return range.Elastic() ? range.max : std::max<int64_t>(1, j.node_count);
}

}  // namespace

google::protobuf::Map<std::string, std::string> TidalKeys(const JobRecord& j, const std::string& id, int64_t members,
                                                          const AdapterConfig& cfg, std::vector<std::string>* overridden) {
  google::protobuf::Map<std::string, std::string> a;
  const std::map<std::string, std::string> user = CommentKeys(j.comment);
  a.insert(user.begin(), user.end());  // the user's keys first; Slurm's below win
  // Slurm's value for `key` replaces the comment's; a comment value that differs is reported.
  auto slurm = [&](const char* key, const std::string& value, const std::string& from) {
    if (auto u = user.find(key); overridden != nullptr && u != user.end() && u->second != value) {
      overridden->push_back(std::string(key) + "=" + u->second + " (" + from + ")");
    }
    a[key] = value;
  };
  // A key the comment may not set at all.
  auto drop = [&](const char* key, const std::string& why) {
    if (auto u = user.find(key); overridden != nullptr && u != user.end()) {
      overridden->push_back(std::string(key) + "=" + u->second + " (" + why + ")");
    }
    a.erase(key);
  };
  // A job is one gang of its nodes. Slurm starts it on all its nodes or none: a gang-min is not
  // Tidal's to honour (an elastic job's, --nodes=MIN-MAX, is its MIN: NodeRange). The leader is
  // the batch host's member (MembersOf); a comment's would mark every member.
  slurm("tidal.dev/gang", id, "a job is its own gang");
  slurm("tidal.dev/gang-size", std::to_string(members), "its node count");
  drop("tidal.dev/gang-min", "ask for a node range, --nodes=MIN-MAX");
  drop("tidal.dev/gang-leader", "the batch host's member is the leader");
  if (const NodeRange range = NodeRangeOf(j); range.Elastic() && range.min < members) {
    a["tidal.dev/gang-min"] = std::to_string(range.min);
  }
  const std::string queue = QueueFor(cfg, j.account, j.partition, j.qos);
  slurm("tidal.dev/queue", queue, "the queue of its account/partition/QOS is " + queue);
  // Slurm enforces the time limit itself; Tidal plans with it, at most its 365-day cap. A comment
  // value of the same limit ("2h" with --time=120) is not reported.
  if (j.time_limit_min > 0) {
    const int64_t limit_m = std::min<int64_t>(j.time_limit_min, limits::kMaxDurationS / 60);
    const char* key = "tidal.dev/runtime-limit";
    auto same = [&](const std::string& v) {
      auto d = ParseDurationSeconds(v, key);
      return d.ok() && *d == limit_m * 60;
    };
    const std::string limit = std::to_string(limit_m) + "m";
    if (auto u = user.find(key); u != user.end() && same(u->second)) {
      a[key] = limit;
    } else {
      slurm(key, limit, "--time is " + FormatDurationSeconds(limit_m * 60));
    }
  }
  // The GPUs Slurm allocates are of its --gres type.
  if (!j.gpu_model.empty()) slurm("tidal.dev/gpu-model", j.gpu_model, "its --gres type is " + j.gpu_model);
  // --signal=[B:]SIG@TIME: the job acts on SIG and needs TIME seconds (the user's own key wins).
  if (j.warn_signal > 0 && j.warn_time_s > 0 && !a.count("tidal.dev/checkpoint-on-notice")) {
    a["tidal.dev/checkpoint-on-notice"] = std::to_string(std::min<int64_t>(j.warn_time_s, limits::kMaxDurationS)) + "s";
  }
  // --switches=1: all nodes under one switchLevel domain, unless the comment names a level itself.
  if (j.req_switch == 1 && !cfg.switch_level.empty()) {
    if (auto u = user.find("tidal.dev/topology-required"); u == user.end()) {
      a["tidal.dev/topology-required"] = cfg.switch_level;
    } else if (overridden != nullptr && u->second != cfg.switch_level) {
      overridden->push_back("--switches=1 (" + cfg.switch_level + ") gives way to tidal.dev/topology-required=" + u->second);
    }
  }
  return a;
}

std::string OverrideNote(const JobRecord& j, const AdapterConfig& cfg) {
  if (j.comment.find("tidal.dev/") == std::string::npos && j.req_switch != 1) return "";
  std::vector<std::string> overridden;
  TidalKeys(j, j.id, WaitingMembers(j), cfg, &overridden);
  if (overridden.empty()) return "";
  std::string out = "; --comment keys Slurm's options replace:";
  for (const auto& o : overridden) out += (out.back() == ':' ? " " : ", ") + o;
  return out;
}

std::vector<v1::Pod> MembersOf(const JobRecord& j, const std::string& id, const AdapterConfig& cfg) {
  const JobStance stance = StanceOf(j);
  if (stance == JobStance::kFinished) return {};
  if ((stance == JobStance::kHeld || stance == JobStance::kEscaped) && !SkipReason(j).empty()) return {};
  // The member nodes with their indices, when it holds nodes (MemberNodes).
  std::vector<std::pair<uint32_t, std::string>> on;
  if (stance == JobStance::kActive) on = MemberNodes(j);
  if (stance == JobStance::kReleased) {
    std::vector<std::string> pin = j.required_nodes;
    std::sort(pin.begin(), pin.end());
    for (size_t i = 0; i < pin.size(); ++i) on.emplace_back(static_cast<uint32_t>(i), pin[i]);
  }
  const int64_t members = !on.empty() ? static_cast<int64_t>(on.size()) : WaitingMembers(j);
  if (stance == JobStance::kActive && on.empty()) return {};  // no nodes reported: nothing to charge
  v1::Pod base;
  base.set_namespace_("slurm");
  base.set_scheduler_name("tidal-slurm");
  base.mutable_request()->set_gpus(std::max<int64_t>(0, j.gpus_per_node));
  base.mutable_request()->set_cpu_milli(std::max<int64_t>(0, j.cpus_per_node) * 1000);
  base.mutable_request()->set_memory_bytes(std::max<int64_t>(0, j.memory_mb_per_node) * (int64_t{1} << 20));
  base.set_priority(-j.nice);
  base.set_creation_unix(j.submit_time);
  if (stance == JobStance::kActive) {
    base.set_phase(v1::Pod::RUNNING);
    base.set_start_unix(j.start_time);
  }
  auto& a = *base.mutable_annotations();
  a = TidalKeys(j, id, members, cfg, nullptr);
  a["slurm.tidal.dev/user"] = j.user;
  a["slurm.tidal.dev/account"] = j.account;
  a["slurm.tidal.dev/partition"] = j.partition;
  // Requeueing it would cancel it: the engine never makes it a preemption victim.
  if (!j.requeueable) a["slurm.tidal.dev/requeue"] = "false";
  auto* tol = base.add_tolerations();
  tol->set_operator_("Exists");
  base.set_self_anti_affinity_key("kubernetes.io/hostname");
  if (std::string why = Constrain(j, stance, base); !why.empty()) {
    // Not expressible: sent nowhere (SkipReason-like); the reconciler tells the owner.
    return {};
  }
  std::vector<v1::Pod> out;
  out.reserve(static_cast<size_t>(members));
  for (int64_t i = 0; i < members; ++i) {
    v1::Pod p = i + 1 == members ? std::move(base) : base;  // the last member takes the template
    const uint32_t index = on.empty() ? static_cast<uint32_t>(i) : on[static_cast<size_t>(i)].first;
    p.set_uid("slurm/" + id + "#" + std::to_string(index));
    p.set_name(id + "#" + std::to_string(index));
    if (!on.empty()) {
      const std::string& node = on[static_cast<size_t>(i)].second;
      p.set_node_name(node);
      // What Slurm allocated there, when it differs from node to node (--gpus=N over nodes).
      if (stance == JobStance::kActive) {
        if (const int64_t g = GpusOn(j, node); g >= 0) p.mutable_request()->set_gpus(g);
      }
      // The batch script's node: Slurm never takes it from a running job, so it goes last.
      if (node == j.batch_host) (*p.mutable_annotations())["tidal.dev/gang-leader"] = "true";
    }
    out.push_back(std::move(p));
  }
  return out;
}

uint64_t MembersKey(const JobRecord& j) {
  // Each field's hash mixed in turn (splitmix64's finalizer), strings by std::hash, lists by
  // length then elements: a different value in any field gives another key but for 2^-64.
  uint64_t h = 0x243f6a8885a308d3ULL;
  auto mix = [&h](uint64_t v) {
    uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    h = z ^ (z >> 31);
  };
  auto str = [&](std::string_view s) { mix(std::hash<std::string_view>{}(s)); };
  auto num = [&](auto v) { mix(static_cast<uint64_t>(static_cast<int64_t>(v))); };
  auto list = [&](const std::vector<std::string>& v) {
    num(v.size());
    for (const auto& s : v) str(s);
  };
  const JobStance stance = StanceOf(j);
  num(static_cast<int>(j.state));
  num(j.completing);
  num(j.priority);
  num(StartsWith(j.admin_comment, kReleasedPrefix));
  num(TidalPin(j));
  str(j.state_reason);
  str(j.dependency);
  str(j.parse_error);
  str(j.user);
  str(j.account);
  str(j.partition);
  str(j.qos);
  num(j.nice);
  num(j.node_count);
  num(j.max_node_count);
  const NodeRange range = NodeRangeOf(j);  // the note, when Tidal's AdminComment carries one
  num(range.min);
  num(range.max);
  num(j.gpus_per_node);
  num(j.gpus_total);
  str(j.gpu_model);
  num(j.cpus_per_node);
  num(j.memory_mb_per_node);
  num(j.time_limit_min);
  num(j.time_unlimited);
  num(j.exclusive);
  num(j.submit_time);
  num(stance == JobStance::kActive ? j.start_time : 0);
  list(j.nodes);
  num(j.node_gpus.size());
  for (int64_t g : j.node_gpus) num(g);
  str(j.batch_host);
  list(j.required_nodes);
  list(j.excluded_nodes);
  str(j.features);
  num(j.req_switch);
  str(j.comment);
  num(j.warn_signal);
  num(j.warn_time_s);
  num(j.requeueable);
  str(PinNoteOf(j));  // the user's --nodelist on Tidal's pin (UserPin), unparsed
  return h;
}

std::string ConstraintError(const JobRecord& j) {
  v1::Pod scratch;
  return Constrain(j, StanceOf(j), scratch);
}

bool Pinnable(const NodeRecord& n) {
  if (!n.parse_error.empty() || n.not_responding || n.drain || n.maint) return false;
  return n.state == NodeState::kIdle || n.state == NodeState::kMixed || n.state == NodeState::kAllocated;
}

v1::Node NodeOf(const NodeRecord& n, const AdapterConfig& cfg) {
  v1::Node out;
  out.set_name(n.name);
  auto& l = *out.mutable_labels();
  l["kubernetes.io/hostname"] = n.name;
  for (const auto& f : n.features) {
    if (StartsWith(f, cfg.topology_feature_prefix)) {
      // tidal-<level>-<value>
      const std::string rest = f.substr(cfg.topology_feature_prefix.size());
      const size_t dash = rest.find('-');
      if (dash != std::string::npos && dash > 0 && dash + 1 < rest.size()) {
        l[cfg.topology_label_prefix + rest.substr(0, dash)] = rest.substr(dash + 1);
      }
    }
    l[FeatureLabel(f)] = "true";
  }
  for (const auto& p : n.partitions) l[PartitionLabel(p)] = "true";
  // At most the engine's per-node caps (core/api/limits.h): a node beyond them plans as one at them.
  out.mutable_capacity()->set_gpus(std::clamp<int64_t>(n.gpus, 0, limits::kMaxGpusPerNode));
  out.mutable_capacity()->set_cpu_milli(std::clamp<int64_t>(n.cpus, 0, limits::kMaxCpuMilliPerNode / 1000) * 1000);
  out.mutable_capacity()->set_memory_bytes(std::clamp<int64_t>(n.real_memory_mb, 0, limits::kMaxMemoryBytesPerNode >> 20) *
                                           (int64_t{1} << 20));
  out.set_gpu_model(n.gpu_model);
  // Ready: slurmctld hears from it and it is up. Schedulable for Slurm: not drained (by anyone: an
  // admin's drain keeps Tidal's Slurm jobs off too), not in maintenance, parsed.
  const bool up = n.state == NodeState::kIdle || n.state == NodeState::kMixed || n.state == NodeState::kAllocated;
  out.set_ready(up && !n.not_responding && n.parse_error.empty());
  out.set_unschedulable(n.drain || n.maint || !n.parse_error.empty());
  return out;
}

}  // namespace tidal::slurm
