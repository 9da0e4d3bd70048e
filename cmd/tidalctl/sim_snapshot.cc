// tidalctl sim --snapshot FILE: the policy dry-run (sim/dryrun.h, docs/simulator.md "Policy
// dry-run"): the live state a snapshot captured, replayed forward under a new config and under the
// current one, compared per queue, with flags and --fail-on thresholds for a config repo's CI.
// Exit 0 done (no threshold breached), 1 a --fail-on check breached, 2 bad input (flags, snapshot,
// configs, trace) or the plots could not be drawn.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cmd/tidalctl/commands.h"
#include "core/api/duration.h"
#include "core/io/document.h"
#include "core/io/document_diff.h"
#include "engine/engine.h"
#include "sim/dryrun.h"
#include "sim/report.h"
#include "sim/trace.h"

namespace tidal::cli {
namespace {

constexpr const char* kUsage = R"(usage: tidalctl sim --snapshot FILE [--config NEW.yaml] [--against CURRENT.yaml] [options]

Policy dry-run: replays the live state a snapshot captured (tidalctl snapshot) forward through the
engine's own scheduling core, under NEW and under CURRENT (default: the config in the snapshot),
and reports per queue what the change does. Reference: docs/simulator.md, "Policy dry-run".

  --snapshot FILE         a snapshot (format tidal.dev/snapshot)
  --config FILE           the config to try (default: the snapshot's own: a self-check)
  --against FILE          the config to compare with (default: the snapshot's own)
  --horizon D             how far to replay (default 24h; 0 = the starting state only)
  --trace FILE            arrivals on the way: a trace (formats as tidalctl sim --trace), its submit
                          times counted from the snapshot; --format as tidalctl sim
  --arrivals recorded[:W] arrivals on the way at the rate the snapshot records: per queue, its work
                          submitted (or started) in the W before it (default 24h), as a Poisson
                          stream of copies of that work (a lower bound: ended work is not in it)
  --seed N                the recorded arrivals' random stream (default 1)
  --default-runtime D     how long work that declares no runtime runs (default 24h)
  --large-gpus N          a large job has N GPUs or more (default 64)
  -o text|json            the report on stdout (default text)
  --out FILE              the report as JSON into FILE as well
  --plots DIR             DIR/dryrun.json and PNG plots (python3 + matplotlib, tools/plot/dryrun_report.py)
  --plot-script FILE      the plotting script (default: found from the working directory or binary)
  --fail-on CHECKS        exit 1 when one breaches, e.g. preempt-nonpreemptible,ttst-p99-increase=20%,lost-gpu-hours=10
                          (checks: preempt-nonpreemptible, rejects-work, reserved-later[=D], ttst-avg-increase=X%|D,
                          ttst-p99-increase=X%|D, large-ttst-increase=X%|D, preemptions=N, lost-gpu-hours=H,
                          fairshare-gap-increase=G)
  --tidal-shortcuts on|off  as tidalctl sim
)";

// A config file (or the snapshot's document) as the dry-run takes it; *ok false with the errors printed.
bool LoadSide(const std::string& name, const std::string& file, const sim::Snapshot& snap, sim::DryRunConfig* out) {
  out->name = name;
  EngineConfig cfg;
  if (file.empty()) {
    out->source = "the snapshot's config";
    out->version = snap.config_version;
    if (!snap.config.is_null()) {
      auto parsed = ParseEngineConfig(snap.config.dump(), "snapshot.config.document");
      if (!parsed.ok()) {
        for (const auto& r : parsed.status().reasons()) std::cerr << r << "\n";
        return false;
      }
      cfg = *parsed;
    }
  } else {
    out->source = file;
    auto text = ReadFile(file);
    if (!text.ok()) return std::cerr << text.status().Message() << "\n", false;
    auto parsed = ParseEngineConfig(*text, file);
    if (!parsed.ok()) {
      for (const auto& r : parsed.status().reasons()) std::cerr << r << "\n";
      std::cerr << "tidalctl sim: " << file << " is not a valid engine config\n";
      return false;
    }
    cfg = *parsed;
    auto doc = ParseDocument(*text, file);
    out->version = doc.ok() ? DocumentVersion(doc->root) : std::string("?");
  }
  out->queues = cfg.queues;
  out->profile = cfg.profile;
  out->pools = cfg.pools;
  return true;
}

std::string PlotScript(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists("tools/plot/dryrun_report.py", ec)) return "tools/plot/dryrun_report.py";
  const fs::path exe = fs::canonical("/proc/self/exe", ec);
  for (fs::path p = ec ? fs::path() : exe.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
    if (fs::exists(p / "tools/plot/dryrun_report.py", ec)) return (p / "tools/plot/dryrun_report.py").string();
  }
  return "";
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

int64_t Duration(const Flags& flags, const char* flag, const char* def, bool* ok) {
  auto d = ParseDurationSeconds(flags.Get(flag, def), flag);
  if (!d.ok() || *d < 0) {
    std::cerr << "tidalctl sim: " << flag << ": expected a duration (30m, 24h, 3600), got \"" << flags.Get(flag, def) << "\"\n";
    *ok = false;
    return 0;
  }
  return *d;
}

}  // namespace

int SimSnapshot(const Args& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") return std::cout << kUsage, 0;
  }
  Flags flags(args);
  if (!flags.Parse({"--snapshot", "--config", "--against", "--horizon", "--trace", "--format", "--default-runtime",
                    "--large-gpus", "-o", "--output", "--out", "--plots", "--plot-script", "--fail-on", "--tidal-shortcuts",
                    "--arrivals", "--seed"}) ||
      !flags.positional().empty()) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string format = flags.Get("-o", flags.Get("--output", "text"));
  if (format != "text" && format != "json") return std::cerr << "tidalctl sim: -o: expected text or json\n", 2;
  bool ok = true;
  sim::DryRunOptions opts;
  opts.horizon_s = Duration(flags, "--horizon", "24h", &ok);
  opts.default_runtime_s = Duration(flags, "--default-runtime", "24h", &ok);
  if (!ok) return 2;
  try {
    size_t pos = 0;
    const std::string v = flags.Get("--large-gpus", "64");
    opts.large_gpus = std::stoll(v, &pos);
    if (pos != v.size() || opts.large_gpus < 1) throw std::invalid_argument("");
  } catch (const std::exception&) {
    return std::cerr << "tidalctl sim: --large-gpus: expected a whole number >= 1\n", 2;
  }
  const std::string shortcuts = flags.Get("--tidal-shortcuts", "on");
  if (shortcuts != "on" && shortcuts != "off") return std::cerr << "tidalctl sim: --tidal-shortcuts: expected on or off\n", 2;
  opts.shortcuts = shortcuts == "on";
  std::vector<sim::FailOnCheck> checks;
  if (const std::string f = flags.Get("--fail-on"); !f.empty()) {
    auto parsed = sim::ParseFailOn(f);
    if (!parsed.ok()) return std::cerr << "tidalctl sim: " << parsed.status().Message() << "\n", 2;
    checks = *parsed;
  }

  auto snap = sim::LoadSnapshot(flags.Get("--snapshot"));
  if (!snap.ok()) {
    for (const auto& r : snap.status().reasons()) std::cerr << r << "\n";
    return 2;
  }
  sim::DryRunConfig current, next;
  if (!LoadSide("current", flags.Get("--against"), *snap, &current) || !LoadSide("new", flags.Get("--config"), *snap, &next)) {
    return 2;
  }
  if (const std::string trace = flags.Get("--trace"); !trace.empty()) {
    sim::TraceOptions to;
    to.format = flags.Get("--format", "auto");
    for (const auto& n : snap->nodes) to.gpus_per_node = std::max(to.gpus_per_node, n.capacity.gpus);
    auto t = sim::LoadTrace(trace, to);
    if (!t.ok()) return std::cerr << t.status().Message() << "\n", 2;
    for (const auto& b : t->bad_rows) std::cerr << b.message << "\n";
    opts.arrivals = t->jobs;
    opts.arrivals_from = trace;
  }
  if (const std::string a = flags.Get("--arrivals"); !a.empty()) {
    int64_t window = 86400;
    if (a.rfind("recorded:", 0) == 0) {
      auto d = ParseDurationSeconds(a.substr(9), "--arrivals");
      if (!d.ok() || *d <= 0) return std::cerr << "tidalctl sim: --arrivals: expected recorded or recorded:DURATION, got \"" << a << "\"\n", 2;
      window = *d;
    } else if (a != "recorded") {
      return std::cerr << "tidalctl sim: --arrivals: expected recorded or recorded:DURATION, got \"" << a << "\"\n", 2;
    }
    uint64_t seed = 1;
    try {
      size_t pos = 0;
      const std::string v = flags.Get("--seed", "1");
      seed = std::stoull(v, &pos);
      if (pos != v.size()) throw std::invalid_argument("");
    } catch (const std::exception&) {
      return std::cerr << "tidalctl sim: --seed: expected a whole number >= 0\n", 2;
    }
    opts.arrivals_from += (opts.arrivals_from.empty() ? "" : " + ") + std::string("recorded:") + std::to_string(window) + " s";
    for (auto& j : sim::RecordedArrivals(*snap, window, opts.horizon_s, opts.default_runtime_s, seed)) opts.arrivals.push_back(std::move(j));
  }

  nlohmann::json runs[2];
  for (int i = 0; i < 2; ++i) {
    const sim::DryRunConfig& c = i == 0 ? current : next;
    std::cerr << "tidalctl sim: replaying the snapshot under the " << c.name << " config (" << c.source << ") ...\n";
    auto r = sim::RunDryRun(*snap, c, opts);
    if (!r.ok()) {
      for (const auto& m : r.status().reasons()) std::cerr << "tidalctl sim: " << m << "\n";
      return 2;
    }
    runs[i] = std::move(r).value();
  }
  nlohmann::json report = sim::CompareDryRuns(*snap, runs[0], runs[1], opts);
  const std::vector<std::string> breaches = sim::FailOnBreaches(checks, report);
  report["fail_on"] = {{"checks", flags.Get("--fail-on")}, {"breaches", breaches}};
  nlohmann::json printable = report;
  for (const char* side : {"current", "new"}) printable[side].erase("series");
  if (format == "json") {
    std::cout << sim::DumpJson(printable, 1) << "\n";
  } else {
    std::cout << sim::DryRunText(report);
  }
  if (const std::string out = flags.Get("--out"); !out.empty()) {
    if (Status s = sim::WriteTextFile(out, sim::DumpJson(printable, 1) + "\n"); !s.ok()) {
      return std::cerr << "tidalctl sim: " << s.Message() << "\n", 2;
    }
  }
  if (const std::string dir = flags.Get("--plots"); !dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (Status s = sim::WriteTextFile(dir + "/dryrun.json", sim::DumpJson(report) + "\n"); !s.ok()) {
      return std::cerr << "tidalctl sim: " << s.Message() << "\n", 2;
    }
    const std::string script = PlotScript(flags.Get("--plot-script"));
    if (script.empty()) return std::cerr << "tidalctl sim: plots not drawn: tools/plot/dryrun_report.py not found (give --plot-script)\n", 2;
    std::string python = "python3";
    if (const char* env = std::getenv("TIDAL_PYTHON"); env != nullptr && *env != 0) {
      python = env;
    } else if (std::filesystem::exists("/usr/bin/python3", ec)) {
      python = "/usr/bin/python3";
    }
    const std::string cmd = Quote(python) + " " + Quote(script) + " " + Quote(dir + "/dryrun.json") + " " + Quote(dir);
    if (std::system(cmd.c_str()) != 0) {
      return std::cerr << "tidalctl sim: plots not drawn: `" << cmd << "` failed (needs python3-matplotlib)\n", 2;
    }
    std::cerr << "tidalctl sim: plots in " << dir << "\n";
  }
  for (const auto& b : breaches) std::cerr << "tidalctl sim: --fail-on " << b << "\n";
  return breaches.empty() ? 0 : 1;
}

}  // namespace tidal::cli
