// tidalctl sim: replays a job trace on a virtual clock through the scheduling core (policy tidal)
// and sim-only baselines, and reports metrics per policy (sim/, docs/simulator.md).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include <unistd.h>

#include "cmd/tidalctl/commands.h"
#include "engine/engine.h"
#include "core/io/cluster_file.h"
#include "sim/fabric.h"
#include "sim/replay.h"
#include "sim/report.h"
#include "sim/trace.h"

namespace tidal::cli {
namespace {

constexpr const char* kSimUsage = R"(usage: tidalctl sim --trace FILE [--slurm-trace FILE] [options]
       tidalctl sim --snapshot FILE --config NEW.yaml [--against CURRENT.yaml] ...  (policy dry-run:
                                                                  tidalctl sim --snapshot X --help)

Replays a job trace on a virtual clock through the same core and plugins as tidal-engine (policy
tidal) and through baselines, and reports metrics per policy. Reference: docs/simulator.md.

Input
  --trace FILE            job table: Philly CSV, generic CSV or YAML/JSON (see docs/simulator.md)
  --format F              auto (default) | philly | csv | json | sacct (sacct -X -P output)
  --columns MAP           csv: the table's own names for csv columns, e.g. submit=submit_time,gpus=gpu_num
                          (the other columns are then ignored, and listed)
  --on-bad-row M          skip (default: report each malformed row with its line, skip it) | fail
  --gpu-time-tolerance E  philly gpu_time may differ from duration x num_gpus by E (default 1%)
                          beyond the columns' rounding; such rows are counted as corrected
  --from T, --to T        window on submit time: a timestamp ("2017-10-01", "2017-10-01 12:00:00",
                          traces with timestamps) or a duration from the trace start ("30d", "3600")
  --max-jobs N            only the first N (>= 1) jobs (submit order) of the window
  --load-scale X          divide submit times by X (time compression; 2 = twice the arrival rate;
                          1e-6..1e6)
  --limit-factor F        declared runtime limit = actual duration x F for jobs that declare none
                          (default 2, 1..1e6; the traces carry actual durations only)
Two pools (docs/simulator.md, "Two pools")
  --slurm-trace FILE      a second trace, submitted through the Slurm door; --trace is then the
                          Kubernetes door's. The fabric is split into a Kubernetes and a Slurm pool;
                          each policy runs on the static partition, and tidal+lending has the pools
                          lend idle nodes to each other by the config's `pools` (default: both lend,
                          to any work, idleSeconds 60, graceCapSeconds 120). Default policies:
                          tidal,tidal+lending
  --slurm-gpus N          the Slurm pool's GPUs (default: half the fabric; the last nodes in
                          topology order)
  --slurm-from T, --slurm-to T  the Slurm trace's window (default: --from, --to)
  --checkpoint C          how --trace's jobs that declare none checkpoint: none (default: an evicted
                          job loses all its work), notice (it checkpoints on notice and loses none)
                          or a duration ("30m": it loses the work since its last periodic checkpoint)
  --slurm-checkpoint C    the same for --slurm-trace's jobs
Cluster and policies
  --config FILE           engine config (topology levels, queues, profile), as tidal-engine loads it;
                          without queues: one queue per trace queue (Philly: virtual cluster), weight 1
  --topology FILE         a cluster file (core/io/cluster_file.h) instead of the synthetic fabric
  --gpus N                synthetic fabric size in GPUs (default 2048)
  --gpus-per-node N       default 8
  --nodes-per-domain N    nodes per NVLink domain (deepest level; default 4)
  --fanout A,B            children per vertex below the outermost level, outermost first
                          (default 4,8: 4 leaves per block, 8 NVLink domains per leaf)
  --policy P              tidal (default) | fifo | easy-backfill | kube-default | tidal+lending
                          (two pools) | all | a,b,...
Output
  --out FILE              metrics of every policy as JSON
  --report DIR            DIR/report.md (tables), DIR/metrics.json and PNG plots (python3 +
                          matplotlib, tools/plot/sim_report.py)
  --plot-script FILE      the plotting script (default: found from the working directory or binary)
  --sample-interval D     --report's time-series period (default: about 2,000 samples over the
                          trace); one giving more than 200,000 samples over the trace is refused
  --timing on|off         include the simulator's wall time (default on; off for byte-identical output)
  --tidal-shortcuts on|off  tidal's exact shortcuts (skipped, verified-prefix and PostFilter-free
                          cycles while no victim can exist; default on). off = every cycle over the
                          whole queue with PostFilter: the same results, much slower
)";

bool ParseInt64(const std::string& flag, const std::string& v, int64_t lo, int64_t hi, int64_t* out) {
  try {
    size_t pos = 0;
    const long long x = std::stoll(v, &pos);
    if (pos != v.size() || x < lo || x > hi) throw std::out_of_range("");
    *out = x;
    return true;
  } catch (const std::exception&) {
    std::cerr << "tidalctl sim: " << flag << ": expected a whole number in " << lo << ".." << hi << ", got \"" << v
              << "\"\n";
    return false;
  }
}

bool ParseDouble(const std::string& flag, const std::string& v, double* out) {
  try {
    size_t pos = 0;
    *out = std::stod(v, &pos);
    if (pos != v.size()) throw std::invalid_argument("");
    return true;
  } catch (const std::exception&) {
    std::cerr << "tidalctl sim: " << flag << ": expected a number, got \"" << v << "\"\n";
    return false;
  }
}

std::string FindPlotScript(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists("tools/plot/sim_report.py", ec)) return "tools/plot/sim_report.py";
  const fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path p = exe.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
      if (fs::exists(p / "tools/plot/sim_report.py", ec)) return (p / "tools/plot/sim_report.py").string();
    }
  }
  return "";
}

// --checkpoint: none | notice | a duration; applied to the jobs that declare no checkpointing.
bool ApplyCheckpoint(const std::string& flag, const std::string& v, std::vector<sim::SimJob>::iterator begin,
                     std::vector<sim::SimJob>::iterator end) {
  bool notice = false;
  int64_t every = 0;
  if (v == "notice") {
    notice = true;
  } else if (v != "none") {
    auto d = ParseDurationSeconds(v, flag);
    if (!d.ok() || *d <= 0) {
      std::cerr << "tidalctl sim: " << flag << ": expected none, notice or a positive duration, got \"" << v << "\"\n";
      return false;
    }
    every = *d;
  }
  for (auto it = begin; it != end; ++it) {
    if (it->w.checkpoints_on_notice || it->w.checkpoint_interval_s > 0) continue;
    it->w.checkpoints_on_notice = notice;
    it->w.checkpoint_interval_s = every;
  }
  return true;
}

// "FILE: 3 row(s) read: 1 malformed, 2 outside the window [1h, )": why a trace gave no job.
std::string NoJobsWhy(const sim::Trace& t, const sim::TraceOptions& o) {
  std::string out = t.file + ": " + std::to_string(t.rows) + " row(s) read";
  if (t.rows == 0) return out + " (only a header, comments or blank lines?)";
  if (!t.bad_rows.empty()) out += ", " + std::to_string(t.bad_rows.size()) + " malformed";
  if (const std::string sk = sim::DescribeSkipped(t); !sk.empty()) out += ", skipped: " + sk;
  if (t.outside_window > 0) out += ", " + std::to_string(t.outside_window) + " outside the window [" + o.from + ", " + o.to + ")";
  return out;
}

// The trace options --slurm-trace is read with: --trace's, less --columns, with its own window.
sim::TraceOptions SlurmTraceOptions(const sim::TraceOptions& to, const Flags& flags) {
  sim::TraceOptions so = to;
  so.columns.clear();  // --columns names --trace's columns
  so.from = flags.Get("--slurm-from", to.from);
  so.to = flags.Get("--slurm-to", to.to);
  so.from_flag = flags.Get("--slurm-from").empty() ? to.from_flag : "--slurm-from";
  so.to_flag = flags.Get("--slurm-to").empty() ? to.to_flag : "--slurm-to";
  return so;
}

// A trace that did not load: exit 2 when an option caused it (the Status names the flag, trace.h),
// else 1 (the file's problem).
int TraceFailed(const Status& s) {
  const bool usage = s.plugin().rfind("--", 0) == 0;
  std::cerr << (usage ? "tidalctl sim: " : "") << s.Message() << "\n";
  return usage ? 2 : 1;
}

// --sample-interval against the trace's span: "" when the series stays within
// Simulator::kMaxSamples, else why not (naming the flag, the count and the least period).
std::string TooManySamples(const std::string& flag_value, int64_t interval, int64_t span) {
  const double samples = static_cast<double>(span) / static_cast<double>(interval);
  if (samples <= static_cast<double>(sim::Simulator::kMaxSamples)) return "";
  const int64_t least = span / static_cast<int64_t>(sim::Simulator::kMaxSamples) + 1;
  char why[320];
  std::snprintf(why, sizeof why,
                "tidalctl sim: --sample-interval %s gives %.3g samples over the trace's %s (first submit to last "
                "end); at most %zu: give at least %llds",
                flag_value.c_str(), samples, sim::HumanSeconds(static_cast<double>(span)).c_str(),
                sim::Simulator::kMaxSamples, static_cast<long long>(least));
  return why;
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Whether `path` (a file for --out, a directory for --report) can be written, checked before a
// replay that may take minutes: "" when it can, else why not (naming the flag and the path).
std::string CannotWrite(const std::string& flag, const std::string& path, bool dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  auto why = [&](const std::string& reason) { return "tidalctl sim: " + flag + " " + path + ": " + reason; };
  if (fs::exists(p, ec)) {
    if (dir != fs::is_directory(p, ec)) return why(dir ? "exists and is not a directory" : "is a directory");
    return access(path.c_str(), W_OK) == 0 ? "" : why(std::string("cannot write: ") + std::strerror(errno));
  }
  // The nearest existing ancestor must be a writable directory (--report creates the levels below).
  fs::path up = p.parent_path();
  while (!up.empty() && !fs::exists(up, ec)) {
    if (!dir) return why("cannot write: its directory " + up.string() + " does not exist");
    up = up.parent_path();
  }
  const std::string at = up.empty() ? "." : up.string();
  if (!fs::is_directory(at, ec)) return why("cannot write: " + at + " is not a directory");
  return access(at.c_str(), W_OK | X_OK) == 0 ? "" : why("cannot write in " + at + ": " + std::strerror(errno));
}

}  // namespace

int Sim(const Args& args) {
  for (const auto& a : args) {
    if (a == "--snapshot" || a.rfind("--snapshot=", 0) == 0) return SimSnapshot(args);  // the policy dry-run
  }
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << kSimUsage;
      return 0;
    }
  }
  Flags flags(args);
  if (!flags.Parse({"--trace", "--format", "--on-bad-row", "--from", "--to", "--max-jobs", "--load-scale",
                    "--limit-factor", "--config", "--topology", "--gpus", "--gpus-per-node", "--nodes-per-domain",
                    "--fanout", "--policy", "--out", "--report", "--plot-script", "--sample-interval", "--timing",
                    "--tidal-shortcuts", "--slurm-trace", "--slurm-gpus", "--slurm-from", "--slurm-to", "--checkpoint",
                    "--slurm-checkpoint", "--gpu-time-tolerance", "--columns"})) {
    std::cerr << kSimUsage;
    return 2;
  }
  if (!flags.positional().empty()) {
    std::cerr << "tidalctl sim: unexpected argument \"" << flags.positional().front() << "\"\n" << kSimUsage;
    return 2;
  }
  const std::string trace_file = flags.Get("--trace");
  if (trace_file.empty()) {
    std::cerr << "tidalctl sim: --trace is required\n" << kSimUsage;
    return 2;
  }
  for (const auto& [flag, dir] : {std::pair<const char*, bool>{"--out", false}, {"--report", true}}) {
    const std::string path = flags.Get(flag);
    if (std::string why = path.empty() ? "" : CannotWrite(flag, path, dir); !why.empty()) {
      return std::cerr << why << " (checked before the replay)\n", 2;
    }
  }
  sim::TraceOptions to;
  to.format = flags.Get("--format", "auto");
  if (const std::string c = flags.Get("--columns"); !c.empty()) {
    auto cols = sim::ParseColumns(c);
    if (!cols.ok()) return std::cerr << "tidalctl sim: " << cols.status().Message() << "\n", 2;
    to.columns = std::move(cols).value();
  }
  const std::string bad = flags.Get("--on-bad-row", "skip");
  if (bad != "skip" && bad != "fail") {
    std::cerr << "tidalctl sim: --on-bad-row: expected skip or fail, got \"" << bad << "\"\n";
    return 2;
  }
  to.on_bad_row = bad == "fail" ? sim::TraceOptions::OnBadRow::kFail : sim::TraceOptions::OnBadRow::kSkip;
  to.from = flags.Get("--from");
  to.to = flags.Get("--to");
  if (!ParseDouble("--load-scale", flags.Get("--load-scale", "1"), &to.load_scale)) return 2;
  if (!ParseDouble("--limit-factor", flags.Get("--limit-factor", "2"), &to.limit_factor)) return 2;
  if (const std::string mj = flags.Get("--max-jobs"); !mj.empty() && !ParseInt64("--max-jobs", mj, 1, INT64_MAX / 2, &to.max_jobs)) {
    return 2;
  }
  auto tol = sim::ParseRelativeTolerance(flags.Get("--gpu-time-tolerance", "1%"), "--gpu-time-tolerance");
  if (!tol.ok()) return std::cerr << "tidalctl sim: " << tol.status().Message() << "\n", 2;
  to.gpu_time_tolerance = *tol;
  for (const sim::TraceOptions& o : {to, SlurmTraceOptions(to, flags)}) {  // before any file is read
    if (Status s = sim::CheckTraceOptions(o); !s.ok()) return std::cerr << "tidalctl sim: " << s.Message() << "\n", 2;
  }
  const std::string timing = flags.Get("--timing", "on");
  if (timing != "on" && timing != "off") {
    std::cerr << "tidalctl sim: --timing: expected on or off\n";
    return 2;
  }
  const std::string shortcuts = flags.Get("--tidal-shortcuts", "on");
  if (shortcuts != "on" && shortcuts != "off") {
    std::cerr << "tidalctl sim: --tidal-shortcuts: expected on or off\n";
    return 2;
  }
  const std::string slurm_file = flags.Get("--slurm-trace");
  const bool two_pools = !slurm_file.empty();
  auto policies = sim::ParsePolicies(flags.Get("--policy", two_pools ? std::string("tidal,") + sim::kLendingPolicyName : "tidal"));
  if (!policies.ok()) return std::cerr << "tidalctl sim: " << policies.status().Message() << "\n", 2;
  if (two_pools && flags.Get("--policy") == "all") policies->push_back(sim::kLendingPolicyName);
  for (const auto& p : *policies) {
    if (p == sim::kLendingPolicyName && !two_pools) {
      return std::cerr << "tidalctl sim: --policy " << p << " needs two pools (--slurm-trace)\n", 2;
    }
  }
  if (const std::string ps = flags.Get("--plot-script"); !ps.empty()) {
    if (std::error_code ec; !std::filesystem::is_regular_file(ps, ec)) {
      return std::cerr << "tidalctl sim: --plot-script " << ps << ": no such file\n", 2;
    }
  }

  // Config: levels, queues, profile.
  EngineConfig cfg;
  if (const std::string c = flags.Get("--config"); !c.empty()) {
    auto loaded = LoadEngineConfig(c);
    if (!loaded.ok()) {
      for (const auto& r : loaded.status().reasons()) std::cerr << r << "\n";
      return 1;
    }
    cfg = *loaded;
  }

  // Fabric.
  sim::SyntheticFabric sf;
  if (!ParseInt64("--gpus", flags.Get("--gpus", "2048"), 1, int64_t{1} << 40, &sf.gpus)) return 2;
  if (!ParseInt64("--gpus-per-node", flags.Get("--gpus-per-node", "8"), 1, 1024, &sf.gpus_per_node)) return 2;
  int64_t npd = 4;
  if (!ParseInt64("--nodes-per-domain", flags.Get("--nodes-per-domain", "4"), 1, 1 << 20, &npd)) return 2;
  sf.nodes_per_domain = static_cast<int32_t>(npd);
  if (const std::string fo = flags.Get("--fanout"); !fo.empty()) {
    sf.fanout.clear();
    std::stringstream ss(fo);
    std::string x;
    while (std::getline(ss, x, ',')) {
      int64_t v = 0;
      if (!ParseInt64("--fanout", x, 1, 1 << 20, &v)) return 2;
      sf.fanout.push_back(static_cast<int32_t>(v));
    }
  } else if (cfg.levels.levels.size() != 3) {
    sf.fanout.assign(cfg.levels.levels.empty() ? 0 : cfg.levels.levels.size() - 1, 4);
  }
  std::string fabric_desc;
  std::optional<ClusterState> fabric;
  if (const std::string topo = flags.Get("--topology"); !topo.empty()) {
    auto st = LoadCluster(topo);
    if (!st.ok()) return std::cerr << st.status().Message() << "\n", 1;
    fabric.emplace(std::move(st).value());
    int64_t g = 0;
    for (const auto& n : fabric->nodes()) g += n.capacity.gpus;
    fabric_desc = sim::AsUtf8(topo) + ": " + std::to_string(fabric->node_count()) + " nodes, " + std::to_string(g) + " GPUs, levels " +
                  fabric->levels().Accepted();
    to.gpus_per_node = fabric->max_gpus_per_node();
  } else {
    auto st = sim::BuildSyntheticFabric(cfg.levels, sf);
    if (!st.ok()) return std::cerr << "tidalctl sim: " << st.status().Message() << "\n", 2;
    fabric.emplace(std::move(st).value());
    fabric_desc = "synthetic: " + sim::DescribeFabric(cfg.levels, sf);
    to.gpus_per_node = sf.gpus_per_node;
  }

  // Trace.
  auto trace = sim::LoadTrace(trace_file, to);
  if (!trace.ok()) return TraceFailed(trace.status());
  for (const auto& b : trace->bad_rows) std::cerr << b.message << "\n";
  if (!trace->bad_rows.empty()) {
    std::cerr << "tidalctl sim: " << trace->bad_rows.size() << " malformed row(s) skipped (--on-bad-row=fail refuses them)\n";
  }
  const std::string skipped = sim::DescribeSkipped(*trace);
  if (!skipped.empty()) std::cerr << "tidalctl sim: rows that are no job to replay: " << skipped << "\n";
  std::string ignored;
  for (const auto& c : trace->ignored_columns) ignored += (ignored.empty() ? "" : ", ") + c;
  if (!ignored.empty()) std::cerr << "tidalctl sim: columns not read (not named by --columns): " << ignored << "\n";
  if (trace->jobs.empty()) return std::cerr << "tidalctl sim: no jobs to replay in " << NoJobsWhy(*trace, to) << "\n", 1;
  std::vector<sim::SimJob> jobs = trace->jobs;
  if (!ApplyCheckpoint("--checkpoint", flags.Get("--checkpoint", "none"), jobs.begin(), jobs.end())) return 2;
  nlohmann::json pools_input;
  if (two_pools) {
    const sim::TraceOptions so = SlurmTraceOptions(to, flags);
    auto st = sim::LoadTrace(slurm_file, so);
    if (!st.ok()) return TraceFailed(st.status());
    for (const auto& b : st->bad_rows) std::cerr << b.message << "\n";
    if (!st->bad_rows.empty()) {
      std::cerr << "tidalctl sim: " << st->bad_rows.size() << " malformed row(s) of " << slurm_file
                << " skipped (--on-bad-row=fail refuses them)\n";
    }
    if (const std::string sk = sim::DescribeSkipped(*st); !sk.empty()) {
      std::cerr << "tidalctl sim: rows of " << slurm_file << " that are no job to replay: " << sk << "\n";
    }
    if (st->jobs.empty()) return std::cerr << "tidalctl sim: no jobs to replay in " << NoJobsWhy(*st, so) << "\n", 1;
    const size_t first_slurm = jobs.size();
    for (auto j : st->jobs) {  // the Slurm door's, with ids of their own
      j.w.front_door = FrontDoor::kSlurm;
      j.w.id = "slurm/" + j.w.id;
      jobs.push_back(std::move(j));
    }
    if (!ApplyCheckpoint("--slurm-checkpoint", flags.Get("--slurm-checkpoint", "none"),
                         jobs.begin() + static_cast<std::ptrdiff_t>(first_slurm), jobs.end())) {
      return 2;
    }
    int64_t total = 0;
    for (const auto& n : fabric->nodes()) total += n.capacity.gpus;
    int64_t slurm_gpus = total / 2;
    if (!ParseInt64("--slurm-gpus", flags.Get("--slurm-gpus", std::to_string(slurm_gpus)), 1, total - 1, &slurm_gpus)) return 2;
    if (Status s = sim::SplitPools(*fabric, slurm_gpus); !s.ok()) return std::cerr << "tidalctl sim: " << s.Message() << "\n", 2;
    int64_t pool_gpus[2] = {0, 0};
    for (const auto& n : fabric->nodes()) pool_gpus[n.pool == Pool::kSlurm ? 1 : 0] += n.capacity.gpus;
    pools_input = {{"slurm_trace", st->file + " (" + st->format + ")"},
                   {"slurm_jobs", static_cast<int64_t>(st->jobs.size())},
                   {"malformed_rows", static_cast<int64_t>(st->bad_rows.size())},
                   {"skipped_rows", sim::DescribeSkipped(*st)},
                   {"kubernetes_gpus", pool_gpus[0]},
                   {"slurm_gpus", pool_gpus[1]}};
    if (!so.from.empty() || !so.to.empty()) pools_input["slurm_window"] = sim::AsUtf8("[" + so.from + ", " + so.to + ")");
  } else {
    for (const char* f : {"--slurm-gpus", "--slurm-from", "--slurm-to", "--slurm-checkpoint"}) {
      if (!flags.Get(f).empty()) return std::cerr << "tidalctl sim: " << f << " needs --slurm-trace\n", 2;
    }
  }

  if (const int64_t renamed = sim::UseQueueNames(cfg.queues, &jobs); renamed > 0) {
    std::cerr << "tidalctl sim: " << renamed << " job(s) name a queue's former name (queues[].formerNames): read as its name\n";
  }
  sim::ReplaySpec spec;
  spec.fabric = &*fabric;
  spec.jobs = &jobs;
  if (!cfg.pools.empty()) spec.lending = cfg.pools;
  spec.queues = cfg.queues;
  spec.profile = cfg.profile;
  spec.tidal_shortcuts = shortcuts == "on";
  spec.series = !flags.Get("--report").empty();  // only --report's metrics.json and plots read it
  if (const std::string si = flags.Get("--sample-interval"); !si.empty()) {
    auto d = ParseDurationSeconds(si, "--sample-interval");
    if (!d.ok() || *d <= 0) return std::cerr << "tidalctl sim: --sample-interval: expected a positive duration\n", 2;
    spec.sample_interval_s = *d;
    if (const std::string why = TooManySamples(si, *d, sim::TraceSpan(jobs)); !why.empty()) return std::cerr << why << "\n", 2;
  }

  nlohmann::json input;
  input["trace"] = trace->file + " (" + trace->format + ")";
  input["jobs"] = static_cast<int64_t>(jobs.size());
  input["rows"] = trace->rows;
  input["malformed_rows"] = static_cast<int64_t>(trace->bad_rows.size());
  input["outside_window"] = trace->outside_window;
  if (!skipped.empty()) input["skipped_rows"] = skipped;  // sacct: steps, never started, ...
  if (!ignored.empty()) input["ignored_columns"] = ignored;
  if (trace->format == "philly") input["gpu_time_corrected"] = trace->gpu_time_corrected;  // within rounding/tolerance
  if (const std::string qn = sim::DescribeQueueNames(*trace); !qn.empty()) {
    input["queue_names"] = qn;
    std::cerr << "tidalctl sim: queue names normalised: " << qn << "\n";
  }
  if (!trace->origin.empty()) input["trace_start"] = trace->origin;
  if (!to.from.empty() || !to.to.empty()) input["window"] = sim::AsUtf8("[" + to.from + ", " + to.to + ")");
  if (to.max_jobs > 0) input["max_jobs"] = to.max_jobs;
  input["load_scale"] = to.load_scale;
  input["checkpoint"] = flags.Get("--checkpoint", "none") +
                        (two_pools ? " (slurm trace: " + flags.Get("--slurm-checkpoint", "none") + ")" : "");
  input["runtime_estimate"] = "declared limit = actual duration x " + flags.Get("--limit-factor", "2") +
                              " (rounded up) unless the row declares one";
  input["fabric"] = fabric_desc;
  const QueueConfig queues = sim::EffectiveQueues(spec);
  input["queues"] = cfg.queues.queues.empty()
                        ? std::to_string(queues.queues.size()) + " (one per trace queue, weight 1, no quota limits)"
                        : std::to_string(queues.queues.size()) + " (from " + sim::AsUtf8(flags.Get("--config")) + ")";
  std::string plugins;
  for (const auto& p : cfg.profile.plugins) plugins += (plugins.empty() ? "" : ", ") + p.name;
  input["tidal_profile"] = cfg.profile.name + " (" + plugins + "; backfill depth " +
                           std::to_string(cfg.profile.backfill.depth) + ")";

  if (two_pools) {
    std::string lending;
    for (const auto& l : spec.lending) {
      lending += std::string(lending.empty() ? "" : "; ") + l.pool + (l.lend ? " lends" : " keeps") +
                 " to " + (l.preemptible_only ? "preemptible" : "any") + " work, keep " + std::to_string(l.keep_nodes) +
                 ", idle " + std::to_string(l.idle_s) + " s, grace cap " + std::to_string(l.grace_cap_s) + " s";
    }
    pools_input["lending"] = lending + (cfg.pools.empty() ? " (default)" : " (from " + sim::AsUtf8(flags.Get("--config")) + ")");
    input["pools"] = pools_input;
  }
  nlohmann::json doc;
  doc["input"] = input;
  doc["policies"] = nlohmann::json::array();
  sim::MetricsOptions mopts;
  mopts.timing = timing == "on";
  mopts.series = spec.series;
  for (const auto& p : *policies) {
    std::cerr << "tidalctl sim: replaying " << jobs.size() << " jobs under " << p << " ...\n";
    auto m = sim::RunPolicy(spec, p, mopts);
    if (!m.ok()) return std::cerr << "tidalctl sim: " << p << ": " << m.status().Message() << "\n", 1;
    if (const auto& rj = (*m)["rejections"]; !rj.empty()) {  // never only a count: say why
      std::cerr << "tidalctl sim: " << p << ": " << (*m)["jobs"]["rejected"].get<int64_t>() << " job(s) rejected:\n";
      for (const auto& r : rj) {
        std::cerr << "  " << r["jobs"].get<int64_t>() << " x " << r["reason"].get<std::string>()
                  << (r["first"].get<std::string>().empty() ? "" : " (first: " + r["first"].get<std::string>() + ")") << "\n";
      }
    }
    if (mopts.timing) {
      std::cerr << "tidalctl sim: " << p << ": " << (*m)["sim"]["wall_s"].get<double>() << " s wall, "
                << (*m)["sim"]["jobs_per_s"].get<double>() << " jobs/s\n";
    }
    doc["policies"].push_back(std::move(m).value());
  }

  nlohmann::json printable = doc;
  for (auto& p : printable["policies"]) {
    p.erase("series");
    p.erase("queueing_delay_quantiles");
  }
  std::cout << sim::MarkdownReport(printable);
  if (const std::string out = flags.Get("--out"); !out.empty()) {
    if (Status s = sim::WriteTextFile(out, sim::DumpJson(printable, 1) + "\n"); !s.ok()) {
      return std::cerr << "tidalctl sim: --out: " << s.Message() << "\n", 1;
    }
  }
  if (const std::string dir = flags.Get("--report"); !dir.empty()) {
    if (Status s = sim::WriteReport(dir, doc); !s.ok()) return std::cerr << "tidalctl sim: --report: " << s.Message() << "\n", 1;
    const std::string script = FindPlotScript(flags.Get("--plot-script"));
    if (script.empty()) {
      std::cerr << "tidalctl sim: plots not drawn: tools/plot/sim_report.py not found (give --plot-script)\n";
      return 1;
    }
    // Debian's interpreter first: python3-matplotlib (make deps) installs there, and PATH may
    // lead to another python3 without it. TIDAL_PYTHON overrides.
    std::string python = "python3";
    if (const char* env = std::getenv("TIDAL_PYTHON"); env != nullptr && *env != 0) {
      python = env;
    } else if (std::error_code ec; std::filesystem::exists("/usr/bin/python3", ec)) {
      python = "/usr/bin/python3";
    }
    const std::string cmd = Quote(python) + " " + Quote(script) + " " + Quote(dir + "/metrics.json") + " " + Quote(dir);
    if (std::system(cmd.c_str()) != 0) {
      std::cerr << "tidalctl sim: plots not drawn: `" << cmd << "` failed (needs python3-matplotlib); "
                << dir << "/report.md and metrics.json are written\n";
      return 1;
    }
    std::cerr << "tidalctl sim: report in " << dir << "/report.md\n";
  }
  return 0;
}

}  // namespace tidal::cli
