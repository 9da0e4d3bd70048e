// tidalctl gen: writes a synthetic job trace from a named mix or a spec file (sim/generator.h) in a
// format `tidalctl sim` reads, and prints what it generated against what the spec asks for.
// Threading: single-threaded.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cmd/tidalctl/commands.h"
#include "sim/generator.h"
#include "sim/report.h"

namespace tidal::cli {
namespace {

constexpr const char* kGenUsage = R"(usage: tidalctl gen MIX|SPEC -o FILE [options]
       tidalctl gen --list | --print MIX

Writes a synthetic job trace for `tidalctl sim --trace FILE`. MIX is a named mix (philly-like,
llm-gangs, inference-heavy); SPEC a YAML/JSON spec file (`base: MIX` starts from a mix).
Reference: docs/simulator.md, "Generating workloads".

  -o FILE            the trace (- for stdout)
  --format F         csv (default: id,submit,duration,gpus,queue,limit,class) | philly
  --seed N           overrides the spec's seed (same seed, same bytes)
  --days D           overrides the horizon (arrivals in [0, D days))
  --load X           overrides the offered load (0.8 or 80%; a bare number above 2 is refused)
  --gpus N           overrides the cluster size the load is offered to
  --list             the named mixes
  --print MIX        a mix's spec document (a starting point for your own)
)";

bool Number(const std::string& flag, const std::string& given, double* out) {
  std::string v = given;
  const bool pct = !v.empty() && v.back() == '%';
  if (pct) v.pop_back();
  try {
    size_t pos = 0;
    *out = std::stod(v, &pos) / (pct ? 100 : 1);
    if (pos != v.size()) throw std::invalid_argument("");
    return true;
  } catch (const std::exception&) {
    std::cerr << "tidalctl gen: " << flag << ": expected a number, got \"" << given << "\"\n";
    return false;
  }
}

// A flag's value, or nullopt when it is not given. Flags::Get returns "" both for a flag not given
// and for one given empty (--load "$UNSET"); the latter is an error, not the spec's value.
constexpr const char* kNotGiven = "\x01not given";
bool Given(const Flags& flags, const std::string& flag, std::string* value) {
  *value = flags.Get(flag, kNotGiven);
  return *value != kNotGiven;
}

// Writes the trace to `out` (- for stdout), checking that all of it got there (a full disk, a
// closed pipe): the message names the file and the reason, or is empty.
std::string WriteOut(const std::string& out, const std::string& text) {
  if (out != "-") {
    Status st = sim::WriteTextFile(out, text);
    return st.ok() ? "" : st.Message();
  }
  errno = 0;
  std::cout << text;
  std::cout.flush();
  if (std::cout) return "";
  return std::string("cannot write the trace to stdout: ") + (errno != 0 ? std::strerror(errno) : "write failed");
}

bool Whole(const std::string& flag, const std::string& v, int64_t* out) {
  try {
    size_t pos = 0;
    *out = std::stoll(v, &pos);
    if (pos != v.size() || *out < 0) throw std::invalid_argument("");
    return true;
  } catch (const std::exception&) {
    std::cerr << "tidalctl gen: " << flag << ": expected a whole number >= 0, got \"" << v << "\"\n";
    return false;
  }
}

std::string Pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * x);
  return b;
}

}  // namespace

int Gen(const Args& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") return std::cout << kGenUsage, 0;
    if (a == "--list") {
      for (const auto& n : sim::GenMixNames()) std::cout << n << "\n";
      return 0;
    }
  }
  Flags flags(args);
  if (!flags.Parse({"-o", "--output", "--format", "--seed", "--days", "--load", "--gpus", "--print"})) {
    std::cerr << kGenUsage;
    return 2;
  }
  if (const std::string mix = flags.Get("--print"); !mix.empty()) {
    auto text = sim::GenMixText(mix);
    if (!text.ok()) return std::cerr << "tidalctl gen: --print: " << text.status().Message() << "\n", 2;
    return std::cout << *text, 0;
  }
  if (flags.positional().size() != 1) {
    std::cerr << "tidalctl gen: expected one MIX or SPEC file\n" << kGenUsage;
    return 2;
  }
  const std::string out = flags.Get("-o", flags.Get("--output"));
  if (out.empty()) return std::cerr << "tidalctl gen: -o FILE is required (- for stdout)\n" << kGenUsage, 2;
  auto spec = sim::LoadGenSpec(flags.positional().front());
  if (!spec.ok()) return std::cerr << spec.status().Message() << "\n", 1;
  int64_t v = 0;
  std::string s;
  if (Given(flags, "--seed", &s)) {
    if (!Whole("--seed", s, &v)) return 2;
    spec->seed = static_cast<uint64_t>(v);
  }
  if (Given(flags, "--gpus", &s) && !Whole("--gpus", s, &spec->gpus)) return 2;
  if (Given(flags, "--days", &s) && !Number("--days", s, &spec->days)) return 2;
  if (Given(flags, "--load", &s)) {
    if (!Number("--load", s, &spec->load)) return 2;
    if (s.back() != '%' && spec->load > sim::kMaxBareLoad) {
      std::cerr << "tidalctl gen: --load " << s << ": a bare number is a fraction of the GPUs (" << s << " = " << Pct(spec->load)
                << "); write " << s << "% or " << spec->load / 100 << " (bare numbers above 2 are refused)\n";
      return 2;
    }
  }
  if (Status st = sim::ValidateGenSpec(*spec); !st.ok()) {
    return std::cerr << "tidalctl gen: " << st.Message() << " (after the command line's overrides)\n", 2;
  }
  auto jobs = sim::Generate(*spec);
  if (!jobs.ok()) return std::cerr << "tidalctl gen: " << jobs.status().Message() << "\n", 1;
  if (jobs->empty()) {  // a header-only trace, which tidalctl sim refuses: say so here, write nothing
    const double expected = sim::Expected(*spec).jobs_per_day * spec->days;
    std::fprintf(stderr, "tidalctl gen: no job drawn (%.2g expected over %.4g days at load %.3g): give more --days or a higher --load\n",
                 expected, spec->days, spec->load);
    return 1;
  }
  auto text = sim::WriteGenTrace(*spec, *jobs, flags.Get("--format", "csv"));
  if (!text.ok()) return std::cerr << "tidalctl gen: --" << text.status().Message() << "\n", 2;
  if (const std::string err = WriteOut(out, *text); !err.empty()) return std::cerr << "tidalctl gen: " << err << "\n", 1;
  const sim::GenExpectation e = sim::Expected(*spec);
  const sim::GenStats m = sim::Measure(*spec, *jobs);
  char line[512];
  std::snprintf(line, sizeof line,
                "tidalctl gen: %s, seed %llu: %lld jobs over %.4g days on %lld GPUs (expected %.0f)\n"
                "  offered load %s (target %s); mean job %.1f GPUs (expected %.1f); single-GPU jobs %s (expected %s);\n"
                "  GPU-time in gangs of 64+ GPUs %s (expected %s); jobs declaring a limit %s; %lld teams, busiest %s\n",
                spec->name.c_str(), static_cast<unsigned long long>(spec->seed), static_cast<long long>(m.jobs),
                spec->days, static_cast<long long>(spec->gpus), e.jobs_per_day * spec->days, Pct(m.offered_load).c_str(),
                Pct(spec->load).c_str(), m.mean_gpus, e.mean_gpus, Pct(m.single_share).c_str(),
                Pct(e.single_share).c_str(), Pct(m.gang64_gpu_share).c_str(), Pct(e.gang64_gpu_share).c_str(),
                Pct(m.declared_share).c_str(), static_cast<long long>(m.teams_used), Pct(m.top_team_share).c_str());
  std::cerr << line;
  return 0;
}

}  // namespace tidal::cli
