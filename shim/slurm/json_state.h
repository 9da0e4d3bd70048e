// Slurm state as JSON, without libslurm:
//  - ParseSqueueJson / ParseSinfoJson read Slurm 22.05's `squeue --json` / `sinfo --json`
//    (data format openapi/v0.0.38). A document-level problem (not JSON, a non-empty `errors` array:
//    Slurm's way of failing with exit code 0, no `jobs` / `nodes` array, a record without its id,
//    another data format) fails the whole read: the state is unknown, never "no jobs". A problem in
//    one record (a mistyped field, a bad gres) sets that record's parse_error and keeps the others.
//    What v0.0.38 does not carry, and libslurm does: req_switch (always 0 here), and the full task
//    list of a long pending array (array_task_string is cut with "..." like libslurm's
//    array_task_str; such a record gets a parse_error here, libslurm's reader uses array_bitmap).
//  - WriteStateJson / ReadStateJson: Tidal's own compact recorded-state format, ClusterRecords 1:1
//    (fields at their default are left out), for the benchmark driver and tests. Reading is strict:
//    an unknown key or a mistyped field fails the read.
//  - JsonFileApi: a SlurmApi whose Load reads such a file (or a pair of squeue/sinfo dumps) and
//    whose writes are recorded, not sent.
//
// Threading: the functions are pure. A JsonFileApi is used by one caller thread (like every
// SlurmApi); nothing in it is shared.
#pragma once

#include <string>
#include <vector>

#include "core/api/status.h"
#include "shim/slurm/records.h"

namespace tidal::slurm {

// On error *out is unchanged.
Status ParseSqueueJson(const std::string& text, std::vector<JobRecord>* out);
Status ParseSinfoJson(const std::string& text, std::vector<NodeRecord>* out);

// {"format":"tidal-slurm-state/1","read_unix":...,"jobs":[...],"nodes":[...]} and, when any were
// read, "partitions":[...] (optional: a file without it reads as no partition limits known).
// squeue/sinfo --json carry no partition table: a state parsed from them checks no partition limit.
std::string WriteStateJson(const ClusterRecords& records);
Status ReadStateJson(const std::string& text, ClusterRecords* out);

// Reads a whole file; an error names the path.
Status ReadTextFile(const std::string& path, std::string* out);

class JsonFileApi : public SlurmApi {
 public:
  // What a write asked for. op: "release", "hold", "hold_requeued", "set_comment", "requeue",
  // "signal", "shrink", "drain", "undrain"; target: the job id or node name; nodes: the pin or the
  // nodes a shrink keeps; text: the comment or drain reason, for "signal" the signal number, with
  // " batch" when batch_only ("10 batch"); count: the pin's node count "MIN-MAX" ("" = left).
  struct Call {
    std::string op, target;
    std::vector<std::string> nodes;
    std::string text;
    std::string count{};  // (a default: the calls that set no count leave it out)
    bool operator==(const Call&) const = default;
  };

  // Every Load reads `state_path` (WriteStateJson's format) again, so a test can change the file.
  explicit JsonFileApi(std::string state_path);
  // Every Load reads a `squeue --json` and a `sinfo --json` dump.
  JsonFileApi(std::string squeue_path, std::string sinfo_path);

  Status Load(ClusterRecords* out) override;
  Status Release(const std::string& job_id, const JobPin& pin, const std::string& comment) override;
  Status Hold(const std::string& job_id, const std::string& comment, const JobPin& pin) override;
  Status HoldRequeued(const std::string& job_id, const std::string& comment, const JobPin& pin) override;
  Status Shrink(const std::string& job_id, const std::vector<std::string>& nodes) override;
  Status SetComment(const std::string& job_id, const std::string& comment) override;
  Status Requeue(const std::string& job_id) override;
  Status Signal(const std::string& job_id, int signal, bool batch_only) override;
  Status Drain(const std::string& node, const std::string& reason) override;
  Status Undrain(const std::string& node) override;

  const std::vector<Call>& calls() const { return calls_; }
  void ClearCalls() { calls_.clear(); }
  // The next Load / the next write fails with `st` (once); the failed write is not recorded.
  void FailNextLoad(Status st) { fail_load_ = std::move(st); }
  void FailNextWrite(Status st) { fail_write_ = std::move(st); }

 private:
  Status Record(Call call);

  std::string state_path_, squeue_path_, sinfo_path_;
  std::vector<Call> calls_;
  Status fail_load_, fail_write_;
};

}  // namespace tidal::slurm
