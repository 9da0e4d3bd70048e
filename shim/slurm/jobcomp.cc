// JobcompReader (see jobcomp.h). Threading: one caller thread.
#include "shim/slurm/jobcomp.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include "shim/slurm/tres.h"

namespace tidal::slurm {

namespace {

// "2026-12-01T12:40:07" in slurmctld's local time -> unix seconds; 0 when unreadable.
int64_t ParseTime(const std::string& s) {
  std::tm tm{};
  if (std::sscanf(s.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec) != 6) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  return t < 0 ? 0 : static_cast<int64_t>(t);
}

}  // namespace

v1::FinishedJob::End EndOfJobState(std::string_view state) {
  // "CANCELLED by 1000" is split into words already; a trailing "+" (sacct's) is not part of it.
  const size_t n = state.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
  const std::string_view s = state.substr(0, n);
  if (s == "COMPLETED") return v1::FinishedJob::COMPLETED;
  if (s == "TIMEOUT") return v1::FinishedJob::TIMEOUT;
  if (s == "PREEMPTED" || s == "REQUEUED" || s == "REQUEUE_HOLD" || s == "REQUEUE_FED" || s == "NODE_FAIL") {
    return v1::FinishedJob::PREEMPTED;
  }
  if (s == "CANCELLED" || s == "DEADLINE") return v1::FinishedJob::CANCELLED;
  if (s == "FAILED" || s == "OUT_OF_MEMORY" || s == "BOOT_FAIL") return v1::FinishedJob::FAILED;
  return v1::FinishedJob::END_UNKNOWN;
}

bool ParseJobcompLine(const std::string& line, v1::FinishedJob* out) {
  std::map<std::string, std::string> kv;
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    const size_t eq = word.find('=');
    if (eq != std::string::npos) kv[word.substr(0, eq)] = word.substr(eq + 1);
  }
  auto id = kv.find("JobId");
  if (id == kv.end() || id->second.empty()) return false;
  const int64_t start = ParseTime(kv["StartTime"]), end = ParseTime(kv["EndTime"]);
  if (start <= 0 || end < start) return false;
  int64_t nodes = 0;
  if (!ParseCount("NodeCnt", kv["NodeCnt"], kMaxCount, &nodes).ok() || nodes <= 0) return false;
  out->set_gang("slurm/" + id->second);
  out->set_start_unix(start);
  out->set_end_unix(end);
  out->set_members(static_cast<int32_t>(nodes));
  out->set_end(EndOfJobState(kv["JobState"]));
  TresCounts tres;
  if (auto t = kv.find("Tres"); t != kv.end() && ParseTresCounts("Tres", t->second, &tres).ok() && tres.gpus > 0 &&
                                tres.gpus % nodes == 0) {
    out->set_gpus_per_member(tres.gpus / nodes);
  }
  return true;
}

Status JobcompReader::ReadNew(std::vector<v1::FinishedJob>* out) {
  std::ifstream f(path_, std::ios::binary);
  if (!f) return Status::Ok();  // not there yet: nothing finished
  f.seekg(0, std::ios::end);
  const int64_t size = static_cast<int64_t>(f.tellg());
  const bool first = offset_ < 0;
  if (first) offset_ = size > kFirstReadBytes ? size - kFirstReadBytes : 0;
  if (size < offset_) offset_ = 0;  // rotated
  f.seekg(offset_);
  std::string line;
  int64_t pos = offset_;
  bool skip_partial = first && offset_ > 0;  // the first read starts mid-line
  while (std::getline(f, line)) {
    if (f.eof()) break;  // a line still being written: read it next time
    pos += static_cast<int64_t>(line.size()) + 1;
    if (skip_partial) {
      skip_partial = false;
      continue;
    }
    if (line.empty()) continue;
    v1::FinishedJob j;
    if (ParseJobcompLine(line, &j)) {
      out->push_back(std::move(j));
    } else {
      ++bad_lines_;
    }
  }
  offset_ = pos;
  return Status::Ok();
}

}  // namespace tidal::slurm
