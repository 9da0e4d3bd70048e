// Slurm's own reasons not to start a job now (see waiting.h).
//
// Threading: pure functions; no shared state.
#include "shim/slurm/waiting.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>

#include "core/api/duration.h"
#include "shim/slurm/job_fields.h"
#include "shim/slurm/to_engine.h"

namespace tidal::slurm {

std::string UserHoldReason(const JobRecord& j) {
  if (j.state != JobState::kPending || j.completing) return "";
  const auto keys = CommentKeys(j.comment);
  const auto it = keys.find(kHoldKey);
  if (it == keys.end() || it->second.size() != 4) return "";
  for (size_t i = 0; i < 4; ++i) {
    if (std::tolower(static_cast<unsigned char>(it->second[i])) != "true"[i]) return "";
  }
  return "held: " + std::string(kHoldKey) + "=true in its comment (sbatch --hold or scontrol hold); `scontrol release " +
         j.id + "`, or removing the key, hands it to Tidal";
}

std::string BeginTimeReason(const JobRecord& j, int64_t now_unix) {
  if (j.state != JobState::kPending || j.completing || j.eligible_time <= now_unix) return "";
  return "not before its begin time " + FormatUnixTime(j.eligible_time) + " (--begin or StartTime; Slurm starts it no earlier)";
}

std::string PartitionReason(const JobRecord& j, const std::vector<PartitionRecord>& partitions) {
  if (j.state != JobState::kPending || j.completing || partitions.empty() || j.partition.empty()) return "";
  const NodeRange range = NodeRangeOf(j);
  std::string why;
  for (const std::string& name : SplitCommaList(j.partition)) {
    const auto it = std::find_if(partitions.begin(), partitions.end(), [&](const PartitionRecord& p) { return p.name == name; });
    if (it == partitions.end()) return "";  // not in the table: Slurm's to judge
    const PartitionRecord& p = *it;
    std::string no;
    if (!p.schedules) {
      no = "partition " + p.name + " is " + p.state + ": Slurm starts no job there until it is UP";
    } else if (p.max_time_min > 0 && (j.time_unlimited || j.time_limit_min > p.max_time_min)) {
      no = "partition " + p.name + "'s MaxTime is " + FormatDurationSeconds(p.max_time_min * 60) + ", below its --time " +
           (j.time_unlimited ? std::string("UNLIMITED") : FormatDurationSeconds(j.time_limit_min * 60)) +
           ": Slurm never starts it there (PartitionTimeLimit); `scontrol update JobId=" + j.id +
           " TimeLimit=...` within it, or another partition";
    } else if ((p.max_nodes > 0 && range.min > p.max_nodes) || (p.min_nodes > 0 && range.max < p.min_nodes)) {
      no = "partition " + p.name + " runs jobs of " + std::to_string(std::max<uint32_t>(1, p.min_nodes)) + "-" +
           (p.max_nodes > 0 ? std::to_string(p.max_nodes) : std::string("any")) + " nodes, not " +
           (range.Elastic() ? std::to_string(range.min) + "-" + std::to_string(range.max) : std::to_string(range.min)) +
           ": Slurm never starts it there (PartitionNodeLimit)";
    }
    if (no.empty()) return "";  // this partition would start it
    why += (why.empty() ? "" : "; ") + no;
  }
  return why;
}

std::string SlurmWaitReason(const JobRecord& j, const ClusterRecords& rec) {
  const int64_t now = rec.read_unix > 0 ? rec.read_unix : static_cast<int64_t>(std::time(nullptr));
  std::string why = BeginTimeReason(j, now);
  return why.empty() ? PartitionReason(j, rec.partitions) : why;
}

std::unordered_map<std::string, std::string> ThrottledArrayTasks(const std::vector<JobRecord>& jobs) {
  struct Array {
    uint32_t limit = 0;
    int64_t busy = 0;                                   // tasks running or released
    std::vector<std::pair<uint32_t, std::string>> held;  // task id, job id
  };
  std::map<uint32_t, Array> arrays;
  for (const JobRecord& j : jobs) {
    if (j.array_job_id == 0) continue;
    Array& a = arrays[j.array_job_id];
    a.limit = std::max(a.limit, j.array_max_tasks);
    const JobStance stance = StanceOf(j);
    if (stance == JobStance::kActive || stance == JobStance::kReleased) {
      ++a.busy;
    } else if (stance == JobStance::kHeld) {
      if (!UserHoldReason(j).empty()) continue;  // held by its owner: takes no slot of the limit
      if (j.array_task_id) a.held.emplace_back(*j.array_task_id, j.id);  // a task split off
      const std::vector<std::string> ids = JobIdsOf(j);  // the tasks the array's record still holds
      for (size_t k = 0; k < j.pending_array_tasks.size() && k < ids.size(); ++k) {
        a.held.emplace_back(j.pending_array_tasks[k], ids[k]);
      }
    }
  }
  std::unordered_map<std::string, std::string> out;
  for (auto& [array_id, a] : arrays) {
    if (a.limit == 0) continue;
    std::sort(a.held.begin(), a.held.end());
    const int64_t free = std::max<int64_t>(0, static_cast<int64_t>(a.limit) - a.busy);
    for (size_t i = static_cast<size_t>(std::min<int64_t>(free, static_cast<int64_t>(a.held.size()))); i < a.held.size(); ++i) {
      out[a.held[i].second] = "array " + std::to_string(array_id) + " runs at most " + std::to_string(a.limit) +
                              " task(s) at once (--array ...%" + std::to_string(a.limit) + "): " + std::to_string(a.busy) +
                              " running or starting; this task waits for one to end";
    }
  }
  return out;
}

std::string HeldBackReason(const JobRecord& j) {
  if (StanceOf(j) != JobStance::kReleased) return "";
  if (std::string why = UserHoldReason(j); !why.empty()) return why;
  if (j.state_reason == "BeginTime") {
    return j.restart_cnt > 0 ? "requeued; held to be placed anew"
                             : "released before its begin time; held again until then";
  }
  if (j.state_reason == "JobArrayTaskLimit") return "released past its array's task limit; held again";
  if (j.state_reason == "PartitionDown" || j.state_reason == "PartitionInactive" ||
      j.state_reason == "PartitionTimeLimit" || j.state_reason == "PartitionNodeLimit") {
    return "released, but Slurm does not start it in its partition (" + j.state_reason + "); held again";
  }
  return "";
}

}  // namespace tidal::slurm
