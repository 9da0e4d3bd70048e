// JobcompReader: follows slurmctld's jobcomp/filetxt log (JobCompType=jobcomp/filetxt, one line per
// finished job: "JobId=12 ... JobState=COMPLETED ... StartTime=2026-12-01T12:40:07
// EndTime=... NodeCnt=2 ... Tres=cpu=2,mem=2G,node=2,billing=2[,gres/gpu=16] ...") and turns new
// lines into FinishedJob records for the engine's gap ledger (a job that ran while the adapter
// was away is charged once; see Engine::SettleFinishedLocked) and, with how it ended (JobState),
// for the engine's learned runtime correction (engine/engine_runtime.cc). The first read starts at most
// kFirstReadBytes before the end; later reads continue where the last stopped (a shorter file:
// rotated, read from the start). A line that cannot be read is skipped and counted.
//
// Threading: one caller thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/status.h"
#include "tidal/v1/engine.pb.h"

namespace tidal::slurm {

// One jobcomp line; false when it is not a finished job's line (missing JobId, times). Its
// JobState becomes FinishedJob.end (EndOfJobState).
bool ParseJobcompLine(const std::string& line, v1::FinishedJob* out);
// Slurm's job state name (COMPLETED, TIMEOUT, CANCELLED, PREEMPTED, ...) as FinishedJob.end:
// PREEMPTED also for REQUEUED and NODE_FAIL (the run was cut short by the cluster), CANCELLED also
// for DEADLINE, FAILED also for OUT_OF_MEMORY and BOOT_FAIL; anything else END_UNKNOWN.
v1::FinishedJob::End EndOfJobState(std::string_view state);

class JobcompReader {
 public:
  static constexpr int64_t kFirstReadBytes = 8 << 20;
  explicit JobcompReader(std::string path) : path_(std::move(path)) {}
  // New finished jobs since the last call. A missing file is no error (nothing finished yet).
  Status ReadNew(std::vector<v1::FinishedJob>* out);
  int64_t bad_lines() const { return bad_lines_; }

 private:
  std::string path_;
  int64_t offset_ = -1;  // -1: not read yet
  int64_t bad_lines_ = 0;
};

}  // namespace tidal::slurm
