#include "sim/report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/api/size_bucket.h"

namespace tidal::sim {
namespace {

std::string Fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

std::string Pct(double x) { return Fixed(100.0 * x, 1) + "%"; }

double Num(const nlohmann::json& j, const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0; }

std::string Triple(const nlohmann::json& s) {
  return HumanSeconds(Num(s, "avg")) + " / " + HumanSeconds(Num(s, "p50")) + " / " + HumanSeconds(Num(s, "p99"));
}

// Two pools: each door's queueing delay and each pool's lending figures, per policy.
std::string PoolsReport(const nlohmann::json& pols) {
  if (pols.empty() || !pols[0].contains("pools")) return "";
  std::string out =
      "\nTwo pools: queueing delay by door (avg / p50 / p99), each pool's idle GPU-hours, lending and reclaim:\n\n"
      "| policy | kubernetes door | slurm door | pool | idle GPU-h | lent GPU-h | filled GPU-h | lends / reclaims | "
      "reclaim p50 / p99 / max | lost to reclaim (of filled) | windows >= 15 min: offered GPU-h, filled |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& p : pols) {
    const auto& pl = p.at("pools");
    const auto& doors = pl.at("by_door");
    bool first = true;
    for (const auto& x : pl.at("pools")) {
      const auto& rs = x.at("reclaim_s");
      const auto& lw = x.at("long_windows");
      out += "| " + (first ? p.value("policy", "?") + " | " + Triple(doors.at("kubernetes").at("queueing_delay_s")) + " | " +
                                 Triple(doors.at("slurm").at("queueing_delay_s"))
                           : std::string(" | | ")) +
             " | " + x.value("pool", "?") + " (" + std::to_string(x.value("gpus", 0)) + " GPUs) | " +
             Fixed(Num(x, "idle_gpu_hours"), 0) + " | " + Fixed(Num(x, "lent_gpu_hours"), 0) + " | " +
             Fixed(Num(x, "filled_gpu_hours"), 0) + " | " + std::to_string(x.value("lends", 0)) + " / " +
             std::to_string(x.value("reclaims", 0)) + " | " +
             (rs.value("count", 0) > 0 ? HumanSeconds(Num(rs, "p50")) + " / " + HumanSeconds(Num(rs, "p99")) + " / " +
                                             HumanSeconds(Num(rs, "max"))
                                       : std::string("-")) +
             " | " + Fixed(Num(x, "lost_gpu_hours"), 0) + " GPU-h (" + Pct(Num(x, "lost_share_of_filled")) + ") | " +
             Fixed(Num(lw, "offered_gpu_hours"), 0) + ", " + Pct(Num(lw, "filled_share")) + " |\n";
      first = false;
    }
  }
  out += "\nidle: free GPU-time on the pool's nodes. filled: the other door's GPU-time on nodes the pool lent. "
         "windows: stretches while the pool had whole nodes its owner did not use and the other door had work "
         "waiting that could use them; offered = min(those GPUs, the other door's waiting GPUs + what it ran there).\n";
  return out;
}

// Why each policy rejected jobs ("" when none did): a rejected job never runs, so a count without
// its reason would leave the reader guessing (an unconfigured queue, a job larger than the fabric).
std::string RejectionsReport(const nlohmann::json& pols) {
  std::string out;
  for (const auto& p : pols) {
    if (!p.contains("rejections")) continue;
    for (const auto& r : p.at("rejections")) {
      const std::string first = r.value("first", "");
      out += "| " + p.value("policy", "?") + " | " + std::to_string(r.value("jobs", 0)) + " | " +
             (first.empty() ? std::string("-") : first) + " | " + r.value("reason", "?") + " |\n";
    }
  }
  if (out.empty()) return "";
  return "\nRejected jobs, why (a rejected job never runs; the most frequent reasons first):\n\n"
         "| policy | jobs | first | reason |\n|---|---|---|---|\n" + out;
}

// Queueing delay by job size, one column per bucket (kSizeBuckets); CPU-only work ("0") gets a
// column only when some policy has any. Older result files without a bucket print "-".
std::string SizeReport(const nlohmann::json& pols) {
  auto jobs_in = [](const nlohmann::json& p, const char* b) -> int64_t {
    return p.contains("by_size") && p["by_size"].contains(b) ? p["by_size"][b].value("jobs", int64_t{0}) : 0;
  };
  bool cpu_only = false;
  for (const auto& p : pols) cpu_only = cpu_only || jobs_in(p, kSizeBuckets[0]) > 0;
  // By index, not by pointer: two uses of one string literal need not share an address.
  const size_t first = cpu_only ? 0 : 1;
  std::string head = "| policy |", rule = "|---|";
  for (size_t i = first; i < kSizeBuckets.size(); ++i) {
    head += i == 0 ? std::string(" CPU only |") : std::string(" ") + kSizeBuckets[i] + (i == 1 ? " GPU |" : " GPUs |");
    rule += "---|";
  }
  std::string out = "\nQueueing delay by job size (avg / p50 / p99):\n\n" + head + "\n" + rule + "\n";
  for (const auto& p : pols) {
    out += "| " + p.value("policy", "?") + " |";
    for (size_t i = first; i < kSizeBuckets.size(); ++i) {
      const char* b = kSizeBuckets[i];
      const int64_t n = jobs_in(p, b);
      out += n == 0 ? std::string(" - |") : " " + Triple(p["by_size"][b]["queueing_delay_s"]) + " (" + std::to_string(n) + ") |";
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::string HumanSeconds(double s) {
  if (s < 120) return Fixed(s, 0) + " s";
  if (s < 7200) return Fixed(s / 60, 1) + " min";
  if (s < 172800) return Fixed(s / 3600, 1) + " h";
  return Fixed(s / 86400, 1) + " d";
}

std::string MarkdownReport(const nlohmann::json& doc) {
  std::string out;
  const auto& in = doc.value("input", nlohmann::json::object());
  out += "# Trace replay\n\n";
  for (const auto& [k, v] : in.items()) out += "- " + k + ": " + (v.is_string() ? v.get<std::string>() : DumpJson(v)) + "\n";
  out += "\n| policy | completed | JCT avg / p50 / p99 | queueing avg / p50 / p99 | makespan | GPU alloc | stranded | Jain | preempt (GPU-h lost) | multi-node in one";
  const auto& pols = doc.at("policies");
  std::vector<std::string> levels;
  if (!pols.empty()) {
    for (const auto& [k, v] : pols[0].at("locality").items()) {
      if (k.rfind("within_one_", 0) == 0) levels.push_back(k.substr(11));
    }
  }
  std::string lv;
  for (size_t i = levels.size(); i-- > 0;) lv += (lv.empty() ? "" : " / ") + levels[i];
  out += " " + lv + " | partial-gang GPU-h | sim wall | jobs/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& p : pols) {
    const auto& jobs = p.at("jobs");
    std::string done = std::to_string(jobs.value("completed", 0)) + "/" + std::to_string(jobs.value("submitted", 0));
    if (jobs.value("unfinished", 0) > 0) done += " (" + std::to_string(jobs.value("unfinished", 0)) + " unfinished)";
    if (jobs.value("rejected", 0) > 0) done += " (" + std::to_string(jobs.value("rejected", 0)) + " rejected)";
    std::string loc;
    const auto& l = p.at("locality");
    for (size_t i = levels.size(); i-- > 0;) loc += (loc.empty() ? "" : " / ") + Pct(Num(l, ("within_one_" + levels[i]).c_str()));
    loc += " (" + std::to_string(l.value("multi_node_jobs", 0)) + " jobs)";
    const auto& sim = p.at("sim");
    out += "| " + p.value("policy", "?") + " | " + done + " | " + Triple(p.at("jct_s")) + " | " +
           Triple(p.at("queueing_delay_s")) + " | " + HumanSeconds(Num(p, "makespan_s")) + " | " +
           Pct(Num(p, "gpu_allocation_rate")) + " | " + Pct(Num(p, "fragmentation")) + " | " +
           Fixed(Num(p, "jain_index"), 3) + " | " + std::to_string(p.value("preemptions", 0)) + " (" +
           Fixed(Num(p, "gpu_hours_lost"), 0) + ") | " + loc + " | " + Fixed(Num(p, "partial_gang_gpu_hours"), 0) + " | " +
           (sim.contains("wall_s") ? Fixed(Num(sim, "wall_s"), 1) + " s" : "-") + " | " +
           (sim.contains("jobs_per_s") ? Fixed(Num(sim, "jobs_per_s"), 0) : "-") + " |\n";
  }
  out += SizeReport(pols);
  out += RejectionsReport(pols);
  out += PoolsReport(pols);
  out += "\nGPU alloc: GPU-time allocated (running jobs and partly placed gangs) / capacity over the replay. "
         "stranded: idle GPU-time while a waiting job asked for no more GPUs than were idle, / capacity. "
         "Jain: over queues' allocation / weighted max-min fair share, time-averaged while jobs wait. "
         "Definitions: docs/simulator.md.\n";
  return out;
}

std::string DumpJson(const nlohmann::json& doc, int indent) {
  return doc.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  errno = 0;
  std::ofstream f(path, std::ios::binary);
  if (f) f << text;
  if (f) f.close();  // flushes: a full disk shows here
  if (!f) return Status::Error("cannot write " + path + ": " + (errno != 0 ? std::strerror(errno) : "write failed"));
  return Status::Ok();
}

Status WriteReport(const std::string& dir, const nlohmann::json& doc) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Error(dir + ": cannot create directory: " + ec.message());
  if (Status s = WriteTextFile(dir + "/report.md", MarkdownReport(doc)); !s.ok()) return s;
  return WriteTextFile(dir + "/metrics.json", DumpJson(doc) + "\n");
}

}  // namespace tidal::sim
