// The policy dry-run's report (sim/dryrun.h): two runs compared per queue, the pending gangs whose
// start moved, the flags, the text table, and the --fail-on checks over the report.
// Threading: plain functions.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/api/duration.h"
#include "sim/dryrun.h"
#include "sim/report.h"

namespace tidal::sim {
namespace {

double Num(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return 0;
    p = &(*p)[k];
  }
  return p->is_number() ? p->get<double>() : 0;
}

// +12.5% from a to b (null when a is 0: no percentage of nothing).
nlohmann::json Pct(double a, double b) {
  if (a == 0) return nullptr;
  return std::round(1000 * (b - a) / a) / 10;
}

std::string Signed(double s) { return (s < 0 ? "-" : "+") + HumanSeconds(std::fabs(s)); }

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string Fixed1(double x) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  o << x;
  return o.str();
}

// The queues the new config renamed that the current run shows under their former name:
// new name -> former name. Only where the current run has exactly one of the queue's former names
// and not the new name itself (several queues merged into one stay rows of their own: their
// figures cannot be added up).
std::map<std::string, std::string> RenamedQueues(const nlohmann::json& cur, const nlohmann::json& nxt) {
  std::map<std::string, std::vector<std::string>> seen;
  const nlohmann::json former = nxt.value("former_names", nlohmann::json::object());
  for (const auto& [before, now] : former.items()) {
    if (cur["queues"].contains(before) && !nxt["queues"].contains(before)) seen[now.get<std::string>()].push_back(before);
  }
  std::map<std::string, std::string> out;
  for (const auto& [now, befores] : seen) {
    if (befores.size() == 1 && !cur["queues"].contains(now)) out[now] = befores.front();
  }
  return out;
}

}  // namespace

nlohmann::json CompareDryRuns(const Snapshot& snap, const nlohmann::json& cur, const nlohmann::json& nxt, const DryRunOptions& o) {
  int64_t gpus = 0;
  for (const auto& n : snap.nodes) gpus += n.capacity.gpus;
  nlohmann::json rep{{"format", "tidal.dev/dryrun"},
                     {"version", 1},
                     {"snapshot",
                      {{"taken_at", snap.taken_at},
                       {"config_version", snap.config_version},
                       {"nodes", static_cast<int64_t>(snap.nodes.size())},
                       {"gpus", gpus},
                       {"running", static_cast<int64_t>(snap.running.size())},
                       {"pending", static_cast<int64_t>(snap.pending.size())},
                       {"reservations", static_cast<int64_t>(snap.reservations.size())}}},
                     {"horizon_s", o.horizon_s},
                     {"large_gpus", o.large_gpus},
                     {"arrivals", static_cast<int64_t>(o.arrivals.size())},
                     {"arrivals_from", o.arrivals_from},
                     {"current", cur},
                     {"new", nxt}};
  // One row per queue, keyed by the new config's name: a queue it renames is compared with its
  // former self (current_name), not shown as one queue gone and another new.
  const std::map<std::string, std::string> was = RenamedQueues(cur, nxt);
  std::set<std::string> folded;  // the current run's names shown under a new one
  for (const auto& [now, before] : was) folded.insert(before);
  std::set<std::string> names;
  for (const auto& [q, _] : nxt["queues"].items()) names.insert(q);
  for (const auto& [q, _] : cur["queues"].items()) {
    if (!folded.count(q)) names.insert(q);
  }
  nlohmann::json queues = nlohmann::json::object();
  for (const auto& q : names) {
    const auto renamed = was.find(q);
    const std::string before = renamed != was.end() ? renamed->second : q;
    const nlohmann::json a = cur["queues"].value(before, nlohmann::json::object());
    const nlohmann::json b = nxt["queues"].value(q, nlohmann::json::object());
    nlohmann::json ch;
    for (const char* k : {"avg_s", "p99_s"}) {
      ch[std::string("ttst_") + k] = Num(b, {"ttst", k}) - Num(a, {"ttst", k});
      ch[std::string("ttst_") + k + "_pct"] = Pct(Num(a, {"ttst", k}), Num(b, {"ttst", k}));
    }
    ch["large_ttst_avg_s"] = Num(b, {"large_ttst", "avg_s"}) - Num(a, {"large_ttst", "avg_s"});
    for (const char* k : {"preemptions", "preempted_nonpreemptible", "lost_gpu_s", "avg_gpus", "fair_share_gap_gpus"}) {
      ch[k] = std::round(100 * (Num(b, {k}) - Num(a, {k}))) / 100;
    }
    queues[q] = {{"current", a}, {"new", b}, {"change", ch}};
    if (before != q) queues[q]["current_name"] = before;
  }
  rep["queues"] = queues;

  // Pending gangs whose start moved (a start beyond the horizon counts as the horizon: a bound).
  nlohmann::json moved = nlohmann::json::array(), flags = nlohmann::json::array();
  int64_t later = 0, earlier = 0;
  for (const auto& [id, a] : cur["gangs"].items()) {
    if (!nxt["gangs"].contains(id)) continue;
    const nlohmann::json& b = nxt["gangs"][id];
    const bool na = a["start_s"].is_null(), nb = b["start_s"].is_null();
    if (na && nb) continue;
    const int64_t sa = na ? o.horizon_s : a["start_s"].get<int64_t>(), sb = nb ? o.horizon_s : b["start_s"].get<int64_t>();
    if (sa == sb) continue;
    (sb > sa ? later : earlier) += 1;
    const bool reserved = a.value("reserved_in_snapshot", false);
    moved.push_back({{"id", id},
                     {"queue", a["queue"]},
                     {"gpus", a["gpus"]},
                     {"reserved_in_snapshot", reserved},
                     {"current_start_s", a["start_s"]},
                     {"new_start_s", b["start_s"]},
                     {"delta_s", sb - sa}});
    if (reserved && sb > sa) {
      flags.push_back({{"kind", "reserved-later"},
                       {"id", id},
                       {"delta_s", sb - sa},
                       {"message", "pushes reserved gang " + id + " later by " + HumanSeconds(static_cast<double>(sb - sa)) +
                                       (nb ? " (or more: not started within the horizon)" : "")}});
    }
  }
  rep["reservations"] = {{"later", later}, {"earlier", earlier}, {"moved", moved}};
  const double np_cur = Num(cur, {"total", "preempted_nonpreemptible"}), np_new = Num(nxt, {"total", "preempted_nonpreemptible"});
  if (np_new > np_cur) {
    nlohmann::json who = nlohmann::json::array();
    for (const auto& p : nxt["preempted"]) {
      if (!p.value("preemptible", true)) who.push_back(p["id"]);
    }
    flags.insert(flags.begin(),
                 nlohmann::json{{"kind", "preempts-nonpreemptible"},
                  {"count", np_new - np_cur},
                  {"workloads", who},
                  {"message", "preempts non-preemptible work: " + std::to_string(static_cast<int64_t>(np_new)) +
                                  " preemption(s) under the new config, " + std::to_string(static_cast<int64_t>(np_cur)) +
                                  " under the current one"}});
  }
  // Work the new config refuses that the current one takes (a queue dropped, a quota or pool
  // that no longer fits a shape).
  std::set<std::string> refused_now;
  for (const auto& x : cur.value("rejected", nlohmann::json::array())) refused_now.insert(x["id"].get<std::string>());
  nlohmann::json newly = nlohmann::json::array();
  for (const auto& x : nxt.value("rejected", nlohmann::json::array())) {
    if (!refused_now.count(x["id"].get<std::string>())) newly.push_back(x);
  }
  if (!newly.empty()) {
    flags.push_back({{"kind", "rejects-work"},
                     {"count", newly.size()},
                     {"workloads", newly},
                     {"message", "rejects " + std::to_string(newly.size()) + " workload(s) the current config takes (" +
                                     newly[0]["id"].get<std::string>() + ": " + FirstLine(newly[0]["reason"].get<std::string>()) + ")"}});
  }
  rep["flags"] = flags;
  return rep;
}

std::string DryRunText(const nlohmann::json& rep) {
  std::ostringstream out;
  const auto& s = rep["snapshot"];
  const auto& cur = rep["current"];
  const auto& nxt = rep["new"];
  out << "Policy dry-run over " << HumanSeconds(Num(rep, {"horizon_s"})) << " from a snapshot of "
      << s["nodes"].get<int64_t>() << " nodes (" << s["gpus"].get<int64_t>() << " GPUs): " << s["running"].get<int64_t>()
      << " running, " << s["pending"].get<int64_t>() << " pending, " << s["reservations"].get<int64_t>() << " reservations";
  if (Num(rep, {"arrivals"}) > 0) {
    out << ", " << static_cast<int64_t>(Num(rep, {"arrivals"})) << " arrivals (" << rep.value("arrivals_from", "") << ")";
  }
  out << "\n  current: " << cur.value("source", "") << " (version " << cur.value("version", "") << ")\n"
      << "  new:     " << nxt.value("source", "") << " (version " << nxt.value("version", "") << ")\n";
  for (const auto* side : {&cur, &nxt}) {
    if (!(*side)["placements"].value("match", true)) {
      out << "  warning: the " << side->value("config", "") << " run's starting state differs from the snapshot:";
      for (const auto& p : (*side)["placements"]["problems"]) out << " " << p.get<std::string>() << ";";
      out << "\n";
    }
  }
  out << "\n| queue | avg GPUs | time to start avg | p99 | large jobs avg | preemptions (non-preemptible) | GPU-h lost | fair-share gap (GPUs) |\n"
      << "|---|---|---|---|---|---|---|---|\n";
  auto row = [&](const std::string& name, const nlohmann::json& a, const nlohmann::json& b) {
    auto pair = [](const std::string& x, const std::string& y) { return x == y ? x : x + " -> " + y; };
    // "-" for a queue with no work waiting to start.
    auto hs = [&](const nlohmann::json& j, const char* f, const char* k) { return Num(j, {f, "n"}) > 0 ? HumanSeconds(Num(j, {f, k})) : std::string("-"); };
    auto n = [&](const nlohmann::json& j, const char* k) { return std::to_string(static_cast<int64_t>(Num(j, {k}))); };
    out << "| " << name << " | " << pair(Fixed1(Num(a, {"avg_gpus"})), Fixed1(Num(b, {"avg_gpus"}))) << " | "
        << pair(hs(a, "ttst", "avg_s"), hs(b, "ttst", "avg_s")) << " | " << pair(hs(a, "ttst", "p99_s"), hs(b, "ttst", "p99_s"))
        << " | " << (Num(a, {"large_ttst", "n"}) + Num(b, {"large_ttst", "n"}) > 0 ? pair(hs(a, "large_ttst", "avg_s"), hs(b, "large_ttst", "avg_s")) : "-")
        << " | " << pair(n(a, "preemptions") + " (" + n(a, "preempted_nonpreemptible") + ")", n(b, "preemptions") + " (" + n(b, "preempted_nonpreemptible") + ")")
        << " | " << pair(Fixed1(Num(a, {"lost_gpu_s"}) / 3600), Fixed1(Num(b, {"lost_gpu_s"}) / 3600)) << " | "
        << (a.contains("fair_share_gap_gpus") ? pair(Fixed1(Num(a, {"fair_share_gap_gpus"})), Fixed1(Num(b, {"fair_share_gap_gpus"}))) : "-") << " |\n";
  };
  for (const auto& [q, v] : rep["queues"].items()) row(v.contains("current_name") ? q + " (was " + v["current_name"].get<std::string>() + ")" : q, v["current"], v["new"]);
  row("all", cur["total"], nxt["total"]);
  out << "\nJain's index: " << Num(cur, {"total", "jain_index"}) << " -> " << Num(nxt, {"total", "jain_index"}) << "\n";  if (Num(cur, {"total", "rejected"}) + Num(nxt, {"total", "rejected"}) > 0) {
    out << "Refused by the core (an unknown queue, a shape that never fits): " << Num(cur, {"total", "rejected"}) << " -> "
        << Num(nxt, {"total", "rejected"}) << "\n";
  }
  const auto& r = rep["reservations"];
  out << "Pending gangs' start: " << r["later"].get<int64_t>() << " later, " << r["earlier"].get<int64_t>() << " earlier\n";
  // The reserved gangs first, then by how far they moved; ten at most (-o json has all).
  std::vector<nlohmann::json> moved(r["moved"].begin(), r["moved"].end());
  std::stable_sort(moved.begin(), moved.end(), [](const nlohmann::json& x, const nlohmann::json& y) {
    if (x["reserved_in_snapshot"] != y["reserved_in_snapshot"]) return x["reserved_in_snapshot"].get<bool>();
    return std::fabs(x["delta_s"].get<double>()) > std::fabs(y["delta_s"].get<double>());
  });
  if (moved.size() > 10) {
    out << "  (the " << 10 << " that moved most; -o json lists all " << moved.size() << ")\n";
    moved.resize(10);
  }
  for (const auto& m : moved) {
    auto when = [](const nlohmann::json& v) { return v.is_null() ? std::string("beyond the horizon") : "in " + HumanSeconds(v.get<double>()); };
    out << "  " << m["id"].get<std::string>() << " (" << m["queue"].get<std::string>() << ", " << m["gpus"].get<int64_t>()
        << " GPUs" << (m["reserved_in_snapshot"].get<bool>() ? ", reserved" : "") << "): " << when(m["current_start_s"])
        << " -> " << when(m["new_start_s"]) << " (" << Signed(m["delta_s"].get<double>()) << ")\n";
  }
  if (rep["flags"].empty()) {
    out << "Flags: none\n";
  } else {
    out << "Flags:\n";
    for (const auto& f : rep["flags"]) out << "  ! " << f["message"].get<std::string>() << "\n";
  }
  return out.str();
}

StatusOr<std::vector<FailOnCheck>> ParseFailOn(const std::string& text) {
  static const std::set<std::string> kFlags = {"preempt-nonpreemptible", "rejects-work"};
  static const std::set<std::string> kTimes = {"reserved-later", "ttst-avg-increase", "ttst-p99-increase", "large-ttst-increase"};
  static const std::set<std::string> kNumbers = {"preemptions", "lost-gpu-hours", "fairshare-gap-increase"};
  std::vector<FailOnCheck> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    FailOnCheck c;
    c.text = item;
    const size_t eq = item.find('=');
    c.name = item.substr(0, eq);
    const std::string v = eq == std::string::npos ? "" : item.substr(eq + 1);
    const std::string q = "--fail-on: \"" + item + "\": ";
    if (kFlags.count(c.name)) {
      if (eq != std::string::npos) return Status::Error(q + c.name + " takes no value");
    } else if (kTimes.count(c.name)) {
      if (v.empty() && c.name != "reserved-later") return Status::Error(q + "expected " + c.name + "=X% or " + c.name + "=DURATION");
      if (!v.empty() && v.back() == '%' && c.name != "reserved-later") {
        try {
          size_t pos = 0;
          c.limit = std::stod(v.substr(0, v.size() - 1), &pos);
          if (pos != v.size() - 1 || c.limit < 0) throw std::invalid_argument("");
        } catch (const std::exception&) {
          return Status::Error(q + "expected a percentage (20%) or a duration (30m)");
        }
        c.unit = FailOnCheck::Unit::kPercent;
      } else if (!v.empty()) {
        auto d = ParseDurationSeconds(v, c.name);
        if (!d.ok() || *d < 0) {
          return Status::Error(q + (c.name == "reserved-later" ? "expected a duration (30m)" : "expected a percentage (20%) or a duration (30m)"));
        }
        c.limit = static_cast<double>(*d);
        c.unit = FailOnCheck::Unit::kSeconds;
      } else {
        c.unit = FailOnCheck::Unit::kSeconds;  // reserved-later: any delay
      }
    } else if (kNumbers.count(c.name)) {
      try {
        size_t pos = 0;
        c.limit = std::stod(v, &pos);
        if (pos != v.size() || c.limit < 0) throw std::invalid_argument("");
      } catch (const std::exception&) {
        return Status::Error(q + "expected " + c.name + "=N (a number >= 0)");
      }
      c.unit = FailOnCheck::Unit::kNumber;
    } else {
      return Status::Error(q + "unknown check (accepted: preempt-nonpreemptible, rejects-work, reserved-later[=DURATION], "
                               "ttst-avg-increase=X%|DURATION, ttst-p99-increase=X%|DURATION, "
                               "large-ttst-increase=X%|DURATION, preemptions=N, lost-gpu-hours=H, fairshare-gap-increase=G)");
    }
    out.push_back(std::move(c));
  }
  if (out.empty()) return Status::Error("--fail-on: empty");
  return out;
}

std::vector<std::string> FailOnBreaches(const std::vector<FailOnCheck>& checks, const nlohmann::json& rep) {
  std::vector<std::string> out;
  // An increase from a to b over the check's limit (a percentage of a, or seconds).
  auto grew = [](const FailOnCheck& c, double a, double b) {
    if (c.unit == FailOnCheck::Unit::kPercent) return a > 0 ? (b - a) / a * 100 > c.limit : b > a;
    return b - a > c.limit;
  };
  for (const auto& c : checks) {
    if (c.name == "preempt-nonpreemptible" || c.name == "reserved-later" || c.name == "rejects-work") {
      const std::string kind = c.name == "preempt-nonpreemptible" ? "preempts-nonpreemptible" : c.name;
      for (const auto& f : rep["flags"]) {
        if (f["kind"] == kind && (kind != "reserved-later" || f["delta_s"].get<double>() > c.limit)) {
          out.push_back(c.text + ": " + f["message"].get<std::string>());
        }
      }
    } else if (c.name == "ttst-avg-increase" || c.name == "ttst-p99-increase") {
      const char* k = c.name == "ttst-avg-increase" ? "avg_s" : "p99_s";
      for (const auto& [q, v] : rep["queues"].items()) {
        const double a = Num(v, {"current", "ttst", k}), b = Num(v, {"new", "ttst", k});
        if (grew(c, a, b)) {
          out.push_back(c.text + ": queue " + q + " " + (k[0] == 'a' ? "average" : "p99") + " time to start " + HumanSeconds(a) +
                        " -> " + HumanSeconds(b));
        }
      }
    } else if (c.name == "large-ttst-increase") {
      const double a = Num(rep, {"current", "total", "large_ttst", "avg_s"}), b = Num(rep, {"new", "total", "large_ttst", "avg_s"});
      if (grew(c, a, b)) out.push_back(c.text + ": large jobs' average time to start " + HumanSeconds(a) + " -> " + HumanSeconds(b));
    } else if (c.name == "preemptions") {
      const double a = Num(rep, {"current", "total", "preemptions"}), b = Num(rep, {"new", "total", "preemptions"});
      if (b - a > c.limit) {
        out.push_back(c.text + ": " + std::to_string(static_cast<int64_t>(b)) + " preemptions, " +
                      std::to_string(static_cast<int64_t>(a)) + " under the current config");
      }
    } else if (c.name == "lost-gpu-hours") {
      const double a = Num(rep, {"current", "total", "lost_gpu_s"}) / 3600, b = Num(rep, {"new", "total", "lost_gpu_s"}) / 3600;
      if (b - a > c.limit) out.push_back(c.text + ": " + Fixed1(b) + " GPU-hours lost, " + Fixed1(a) + " under the current config");
    } else if (c.name == "fairshare-gap-increase") {
      for (const auto& [q, v] : rep["queues"].items()) {
        const double a = std::fabs(Num(v, {"current", "fair_share_gap_gpus"})), b = std::fabs(Num(v, {"new", "fair_share_gap_gpus"}));
        if (b - a > c.limit) out.push_back(c.text + ": queue " + q + " fair-share gap " + Fixed1(a) + " -> " + Fixed1(b) + " GPUs");
      }
    }
  }
  return out;
}

}  // namespace tidal::sim
