// The generator's spec documents and named mixes (sim/generator.h). Threading: plain functions.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/api/duration.h"
#include "core/io/document.h"
#include "sim/generator.h"
#include "sim/trace_fields.h"

namespace tidal::sim {

std::string MixList();

namespace {

constexpr const char* kSizeMedianRange = "must be a duration from 1 s to 1e15 s (leave it out for duration.median x gpus^growth)";

// Each mix is a spec document, so `tidalctl gen --print MIX` shows exactly what runs and a user's
// spec can start from one (`base: llm-gangs`).
const std::map<std::string, std::string>& Mixes() {
  static const std::map<std::string, std::string> kMixes = {
      {"philly-like",
       "# Philly-like (Microsoft's 2017 DL cluster): mostly 1-GPU jobs, heavy-tailed durations, no declared limits.\n"
       "name: philly-like\ngpus: 2048\nload: 0.7\ndays: 7\nseed: 1\n"
       "sizes:\n"
       "  - {gpus: 1, weight: 77}\n  - {gpus: 2, weight: 8}\n  - {gpus: 4, weight: 8}\n  - {gpus: 8, weight: 5}\n"
       "  - {gpus: 16, weight: 1.2}\n  - {gpus: 32, weight: 0.5}\n  - {gpus: 64, weight: 0.2}\n  - {gpus: 128, weight: 0.1}\n"
       "duration: {median: 15m, growth: 0.25, sigma: 2.0, max: 14d}\n"
       "arrivals: {diurnal: 0.25, peakHour: 14, burstsPerDay: 1, burstLength: 1h, burstFactor: 4}\n"
       "teams: {count: 14, skew: 1.0, prefix: vc}\n"
       "declared: {none: 1}\n"},
      {"llm-gangs",
       "# LLM-style gangs: most GPU-hours in gangs of 64-512 GPUs, a third of jobs single-GPU, durations growing\n"
       "# with size, skewed teams.\n"
       "name: llm-gangs\ngpus: 3072\nload: 0.8\ndays: 7\nseed: 1\n"
       "sizes:\n"
       "  - {gpus: 1, weight: 33}\n  - {gpus: 2, weight: 6}\n  - {gpus: 4, weight: 8}\n  - {gpus: 8, weight: 20}\n"
       "  - {gpus: 16, weight: 10}\n  - {gpus: 32, weight: 8}\n  - {gpus: 64, weight: 7}\n  - {gpus: 128, weight: 4.5}\n"
       "  - {gpus: 256, weight: 2.5}\n  - {gpus: 512, weight: 1}\n"
       "duration: {median: 20m, growth: 0.35, sigma: 1.2, max: 7d}\n"
       "arrivals: {diurnal: 0.3, peakHour: 14, burstsPerDay: 0.5, burstLength: 3h, burstFactor: 3}\n"
       "teams: {count: 12, skew: 1.2, prefix: team}\n"
       "declared: {none: 0.3, median: 2, sigma: 0.5, min: 1, max: 10}\n"},
      {"inference-heavy",
       "# Inference-heavy: long-running 1-8 GPU inference services following daytime traffic, some training.\n"
       "name: inference-heavy\ngpus: 2048\nload: 0.75\ndays: 7\nseed: 1\n"
       "sizes:\n"
       "  - {gpus: 1, weight: 40, median: 4h, class: inference}\n  - {gpus: 2, weight: 15, median: 4h, class: inference}\n"
       "  - {gpus: 4, weight: 10, median: 6h, class: inference}\n  - {gpus: 8, weight: 5, median: 6h, class: inference}\n"
       "  - {gpus: 1, weight: 15}\n  - {gpus: 8, weight: 10}\n  - {gpus: 32, weight: 4}\n  - {gpus: 64, weight: 1}\n"
       "duration: {median: 30m, growth: 0.3, sigma: 1.0, max: 3d}\n"
       "arrivals: {diurnal: 0.5, peakHour: 15, burstsPerDay: 2, burstLength: 30m, burstFactor: 3}\n"
       "teams: {count: 6, skew: 0.8, prefix: svc}\n"
       "declared: {none: 0.1, median: 1.5, sigma: 0.3, min: 1, max: 4}\n"},
  };
  return kMixes;
}

// Reads typed fields of one mapping, naming the field on errors; unknown keys are errors.
class Fields {
 public:
  Fields(const nlohmann::json& j, std::string path, Status* err) : j_(j), path_(std::move(path)), err_(err) {}
  std::string Path(const std::string& k) const { return path_.empty() ? k : path_ + "." + k; }
  bool Has(const std::string& k) const { return j_.contains(k); }
  void Known(const std::set<std::string>& keys) {
    for (const auto& [k, v] : j_.items()) {
      if (!keys.count(k)) Fail(Path(k), "unknown field");
    }
  }
  void Number(const std::string& k, double* out) {
    if (!Has(k)) return;
    const auto& v = j_.at(k);
    if (v.is_number()) {
      *out = v.get<double>();
    } else if (v.is_string() && !v.get<std::string>().empty() && v.get<std::string>().back() == '%') {
      std::string s = v.get<std::string>();
      s.pop_back();
      try {
        size_t pos = 0;
        *out = std::stod(s, &pos) / 100;
        if (pos != s.size()) throw std::invalid_argument("");
      } catch (const std::exception&) {
        Fail(Path(k), "expected a number or a percentage, got \"" + v.get<std::string>() + "\"");
      }
    } else {
      Fail(Path(k), "expected a number");
    }
  }
  void Int(const std::string& k, int64_t* out) {
    if (!Has(k)) return;
    const auto& v = j_.at(k);
    if (v.is_number_integer()) {
      *out = v.get<int64_t>();
    } else {
      Fail(Path(k), "expected a whole number");
    }
  }
  void Seconds(const std::string& k, double* out) {
    if (!Has(k)) return;
    const auto& v = j_.at(k);
    if (v.is_number()) {
      *out = v.get<double>();
    } else if (v.is_string()) {
      // The trace reader's durations (sim/trace_fields.h): not capped at the config's 365 days.
      int64_t d = 0;
      if (!trace_fields::ParseSeconds(v.get<std::string>(), &d)) {
        return Fail(Path(k), "expected seconds or a duration such as 20m (at most 1e15 s), got \"" + v.get<std::string>() + "\"");
      }
      *out = static_cast<double>(d);
    } else {
      Fail(Path(k), "expected seconds or a duration such as 20m");
    }
  }
  void String(const std::string& k, std::string* out) {
    if (!Has(k)) return;
    if (!j_.at(k).is_string()) return Fail(Path(k), "expected a string");
    *out = j_.at(k).get<std::string>();
  }
  // The sub-mapping at k (or an empty one), failing when it is not a mapping.
  const nlohmann::json& Map(const std::string& k) {
    static const nlohmann::json kEmpty = nlohmann::json::object();
    if (!Has(k)) return kEmpty;
    if (!j_.at(k).is_object()) {
      Fail(Path(k), "expected a mapping");
      return kEmpty;
    }
    return j_.at(k);
  }
  void Fail(const std::string& field, const std::string& why) {
    if (err_->ok()) *err_ = Status::Error(field + ": " + why);
  }

 private:
  const nlohmann::json& j_;
  std::string path_;
  Status* err_;
};

Status Decode(const nlohmann::json& root, GenSpec* s) {
  Status err;
  if (!root.is_object()) return Status::Error("spec: expected a mapping (name, gpus, load, days, sizes, ...)");
  Fields top(root, "", &err);
  top.Known({"name", "base", "gpus", "load", "days", "seed", "sizes", "duration", "arrivals", "teams", "declared"});
  top.String("name", &s->name);
  top.Int("gpus", &s->gpus);
  top.Number("load", &s->load);
  // 90 as a fraction is 9000%: almost surely meant as 90%. A bare number above kMaxBareLoad is
  // refused; a percentage says any load.
  if (top.Has("load") && root.at("load").is_number() && s->load > kMaxBareLoad) {
    top.Fail("load", "a bare number is a fraction of the GPUs (" + root.at("load").dump() + " = " +
                         std::to_string(static_cast<long long>(s->load * 100)) + "%); write \"" + root.at("load").dump() +
                         "%\" or " + std::to_string(s->load / 100).substr(0, 4) + " (bare numbers above 2 are refused)");
  }
  top.Number("days", &s->days);
  if (top.Has("seed")) {
    int64_t seed = 0;
    top.Int("seed", &seed);
    if (seed < 0) top.Fail("seed", "must be >= 0");
    s->seed = static_cast<uint64_t>(seed);
  }
  if (top.Has("sizes")) {
    const auto& list = root.at("sizes");
    if (!list.is_array()) {
      top.Fail("sizes", "expected a list of {gpus, weight[, median][, class]}");
    } else {
      s->sizes.clear();
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string p = "sizes[" + std::to_string(i) + "]";
        if (!list[i].is_object()) {
          top.Fail(p, "expected a mapping {gpus, weight[, median][, class]}");
          continue;
        }
        Fields f(list[i], p, &err);
        f.Known({"gpus", "weight", "median", "class"});
        GenSize z;
        if (!f.Has("gpus")) f.Fail(p + ".gpus", "required");
        f.Int("gpus", &z.gpus);
        f.Number("weight", &z.weight);
        f.Seconds("median", &z.median_s);
        // 0 is GenSize's "no median of its own"; written in a spec it is a median out of range.
        if (f.Has("median") && z.median_s == 0) f.Fail(p + ".median", kSizeMedianRange);
        std::string cls;
        f.String("class", &cls);
        if (!cls.empty()) {
          auto c = ParseWorkloadClass(cls, p + ".class");
          if (!c.ok()) f.Fail(p + ".class", "expected training, inference, batch or interactive, got \"" + cls + "\"");
          if (c.ok()) z.workload_class = *c;
        }
        s->sizes.push_back(z);
      }
    }
  }
  Fields d(top.Map("duration"), "duration", &err);
  d.Known({"median", "growth", "sigma", "max"});
  d.Seconds("median", &s->median_s);
  d.Number("growth", &s->growth);
  d.Number("sigma", &s->sigma);
  d.Seconds("max", &s->max_s);
  Fields a(top.Map("arrivals"), "arrivals", &err);
  a.Known({"diurnal", "peakHour", "burstsPerDay", "burstLength", "burstFactor"});
  a.Number("diurnal", &s->diurnal);
  a.Number("peakHour", &s->peak_hour);
  a.Number("burstsPerDay", &s->bursts_per_day);
  a.Seconds("burstLength", &s->burst_s);
  a.Number("burstFactor", &s->burst_factor);
  Fields t(top.Map("teams"), "teams", &err);
  t.Known({"count", "skew", "prefix"});
  t.Int("count", &s->teams);
  t.Number("skew", &s->team_skew);
  t.String("prefix", &s->team_prefix);
  Fields r(top.Map("declared"), "declared", &err);
  r.Known({"none", "median", "sigma", "min", "max"});
  r.Number("none", &s->declared_none);
  r.Number("median", &s->declared_median);
  r.Number("sigma", &s->declared_sigma);
  r.Number("min", &s->declared_min);
  r.Number("max", &s->declared_max);
  return err;
}

bool ValidPrefix(const std::string& p) {
  if (p.empty() || p.size() > 40 || !std::isalnum(static_cast<unsigned char>(p.front()))) return false;
  for (char c : p) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-')) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> GenMixNames() {
  std::vector<std::string> out;
  for (const auto& [k, v] : Mixes()) out.push_back(k);
  return out;
}

std::string MixList() {
  std::string names;
  for (const auto& n : GenMixNames()) names += (names.empty() ? "" : ", ") + n;
  return names;
}

StatusOr<std::string> GenMixText(const std::string& name) {
  auto it = Mixes().find(name);
  if (it != Mixes().end()) return it->second;
  return Status::Error("no mix \"" + name + "\" (mixes: " + MixList() + ")");
}

namespace {
Status ValidateGenFields(const GenSpec& s);
}  // namespace

StatusOr<GenSpec> ParseGenSpec(const std::string& text, const std::string& file) {
  auto doc = ParseDocument(text, file);
  if (!doc.ok()) return doc.status();
  GenSpec s;
  if (doc->root.is_object() && doc->root.contains("base")) {
    const auto& b = doc->root.at("base");
    if (!b.is_string()) return doc->Locate(Status::Error("base: expected a mix name"));
    auto mix = GenMixText(b.get<std::string>());
    if (!mix.ok()) return doc->Locate(Status::Error("base: " + mix.status().Message()));
    auto base = ParseGenSpec(*mix, b.get<std::string>());
    if (!base.ok()) return base.status();
    s = *base;
  }
  if (Status st = Decode(doc->root, &s); !st.ok()) return doc->Locate(st);
  if (Status st = ValidateGenFields(s); !st.ok()) return doc->Locate(st);
  return s;
}

StatusOr<GenSpec> LoadGenSpec(const std::string& mix_or_path) {
  if (auto mix = GenMixText(mix_or_path); mix.ok()) return ParseGenSpec(*mix, mix_or_path);
  auto text = ReadFile(mix_or_path);
  if (!text.ok()) return Status::Error(mix_or_path + ": neither a mix (" + MixList() + ") nor a readable spec file");
  return ParseGenSpec(*text, mix_or_path);
}

namespace {

// Every field within its range (ValidateGenSpec less the job count, which the command line's
// overrides may still change).
Status ValidateGenFields(const GenSpec& s) {
  constexpr double kMaxGenSeconds = 1e15;  // trace_fields::kMaxTraceSeconds: what the replay reads
  auto bad = [](const std::string& field, const std::string& why) { return Status::Error(field + ": " + why); };
  // The name goes into the trace's first line, a comment: a line break in it made the rest a
  // header tidalctl sim refused.
  for (unsigned char c : s.name) {
    if (c < 0x20 || c == 0x7f) return bad("name", "must be one line of text, without control characters");
  }
  if (s.gpus < 1 || s.gpus > (int64_t{1} << 30)) return bad("gpus", "must be 1..2^30");
  if (!(s.load > 0) || s.load > 100) return bad("load", "must be in (0, 100] (offered load: 0.8 = 80% of the GPUs; at most 10000%)");
  if (!(s.days > 0) || s.days > 3650) return bad("days", "must be > 0 and at most 3650");
  if (s.sizes.empty()) return bad("sizes", "at least one {gpus, weight}");
  // Weights are relative; bounded so that their sum stays finite (1e308 + 1e308 is inf, and the
  // expected rate was then NaN: no jobs, with exit 0).
  constexpr double kMaxWeight = 1e12;
  for (size_t i = 0; i < s.sizes.size(); ++i) {
    const auto& z = s.sizes[i];
    const std::string p = "sizes[" + std::to_string(i) + "]";
    if (z.gpus < 1) return bad(p + ".gpus", "must be >= 1");
    if (z.gpus > s.gpus) {
      return bad(p + ".gpus", std::to_string(z.gpus) + " is more than the cluster's gpus (" + std::to_string(s.gpus) + ")");
    }
    if (!(z.weight > 0) || z.weight > kMaxWeight) return bad(p + ".weight", "must be > 0 and at most 1e12 (weights are relative)");
    // Below 1 s every duration is rounded up to 1 s: a median of 0.01 s offered 100 x the load.
    if (z.median_s != 0 && !(z.median_s >= 1 && z.median_s <= kMaxGenSeconds)) return bad(p + ".median", kSizeMedianRange);
  }
  if (!(s.median_s >= 1) || !(s.median_s <= kMaxGenSeconds)) return bad("duration.median", "must be 1 s to 1e15 s");
  if (!(s.growth >= 0 && s.growth <= 2)) return bad("duration.growth", "must be 0..2 (median x gpus^growth)");
  if (!(s.sigma >= 0 && s.sigma <= 5)) return bad("duration.sigma", "must be 0..5");
  // Durations and the declared limits drawn from them must stay within what `tidalctl sim` reads
  // (1e15 s): a larger one overflowed the int64 seconds, or wrote limits the replay refused.
  if (!(s.max_s >= 1) || !(s.max_s <= kMaxGenSeconds)) return bad("duration.max", "must be 1 s to 1e15 s");
  if (!(s.diurnal >= 0 && s.diurnal < 1)) return bad("arrivals.diurnal", "must be in [0, 1) (the sine's amplitude)");
  if (!(s.peak_hour >= 0 && s.peak_hour < 24)) return bad("arrivals.peakHour", "must be in [0, 24)");
  if (!(s.bursts_per_day >= 0 && s.bursts_per_day <= 1000)) return bad("arrivals.burstsPerDay", "must be 0..1000");
  if (!(s.burst_s > 0) || s.burst_s > 30 * 86400.0) return bad("arrivals.burstLength", "must be a duration from 1 s to 30 days");
  if (!(s.burst_factor >= 1 && s.burst_factor <= 100)) return bad("arrivals.burstFactor", "must be 1..100");
  if (s.teams < 1 || s.teams > 100000) return bad("teams.count", "must be 1..100000");
  if (!(s.team_skew >= 0 && s.team_skew <= 10)) return bad("teams.skew", "must be 0..10 (weight 1/i^skew)");
  if (!ValidPrefix(s.team_prefix)) return bad("teams.prefix", "must be 1-40 of [a-z0-9-], starting alphanumeric");
  if (!(s.declared_none >= 0 && s.declared_none <= 1)) return bad("declared.none", "must be a share in [0, 1]");
  if (!(s.declared_median > 0) || s.declared_median > 1000) return bad("declared.median", "must be in (0, 1000]");
  if (!(s.declared_sigma >= 0 && s.declared_sigma <= 5)) return bad("declared.sigma", "must be 0..5");
  if (!(s.declared_min > 0)) return bad("declared.min", "must be > 0");
  if (!(s.declared_max >= s.declared_min) || s.declared_max > 1000) return bad("declared.max", "must be >= declared.min and <= 1000");
  if (s.declared_none < 1 && s.max_s * s.declared_max > kMaxGenSeconds) {
    char why[160];
    std::snprintf(why, sizeof why, "times declared.max (%g) must be at most 1e15 s, the longest declared limit tidalctl sim reads",
                  s.declared_max);
    return bad("duration.max", why);
  }
  return Status::Ok();
}

}  // namespace

Status ValidateGenSpec(const GenSpec& s) {
  if (Status st = ValidateGenFields(s); !st.ok()) return st;
  // A trace holds its jobs in memory (about 300 bytes each, more as text): beyond the cap a run
  // exhausts memory instead of finishing.
  const double expected = Expected(s).jobs_per_day * s.days;
  if (!(expected <= static_cast<double>(kMaxGenJobs))) {
    char why[320];
    std::snprintf(why, sizeof why,
                  "load %g, days %g and gpus %lld give %.3g jobs in expectation; at most %lld (lower the load, days or gpus)",
                  s.load, s.days, static_cast<long long>(s.gpus), expected, static_cast<long long>(kMaxGenJobs));
    return Status::Error(std::string("jobs: ") + why);
  }
  return Status::Ok();
}

}  // namespace tidal::sim