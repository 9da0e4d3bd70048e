// tidalctl place: one scheduling cycle of the engine's core over a fabric and a workload list.
// --profile FILE: a bare profile mapping (name, maxCandidates, plugins, backfill: the engine
// config's `profile:` section on its own), or a whole engine config, whose `profile:` is used (its
// built-in default profile when it has none); errors read "file:line: field: reason".
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cmd/tidalctl/commands.h"
#include "core/framework/scheduler.h"
#include "core/io/cluster_file.h"
#include "core/io/fields.h"
#include "core/io/sample.h"
#include "core/io/workload_file.h"
#include "engine/engine.h"
#include "plugins/registry.h"

namespace tidal::cli {
namespace {

std::string NodeList(const ClusterState& st, const Candidate& c, size_t max_names) {
  std::string out;
  for (size_t i = 0; i < c.assignments.size() && i < max_names; ++i) {
    if (!out.empty()) out += ",";
    out += st.node(c.assignments[i].node).name;
    if (c.assignments[i].members > 1) out += "x" + std::to_string(c.assignments[i].members);
  }
  if (c.assignments.size() > max_names) out += ",... (" + std::to_string(c.assignments.size()) + " nodes)";
  return out;
}

void PrintTable(const ClusterState& st, const std::vector<Workload>& ws, const CycleResult& r, std::ostream& os) {
  std::map<std::string, const Workload*> by_id;
  for (const auto& w : ws) by_id[w.id] = &w;
  os << std::left << std::setw(20) << "WORKLOAD" << std::setw(10) << "QUEUE" << std::setw(14) << "SHAPE"
     << std::setw(10) << "OUTCOME" << std::setw(36) << "DOMAIN" << "NODES\n";
  for (const auto& d : r.decisions) {
    const Workload& w = *by_id.at(d.workload_id);
    const bool placed = d.outcome == Outcome::kPlaced || d.outcome == Outcome::kWaiting;
    os << std::left << std::setw(20) << w.id << std::setw(10) << w.queue << std::setw(14) << w.ShapeString()
       << std::setw(10) << OutcomeName(d.outcome) << std::setw(36) << (placed ? d.placement.domain : "-")
       << (placed ? NodeList(st, d.placement, 4) : "-") << "\n";
    os << "    why: " << d.explanation;
    if (!placed && !d.status.plugin().empty()) os << " [" << d.status.plugin() << "]";
    os << "\n";
  }
}

nlohmann::json ToJson(const ClusterState& st, const CycleResult& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : r.decisions) {
    nlohmann::json j;
    j["workload"] = d.workload_id;
    j["outcome"] = OutcomeName(d.outcome);
    j["code"] = StatusCodeName(d.status.code());
    j["plugin"] = d.status.plugin();
    j["reasons"] = d.status.reasons();
    j["explanation"] = d.explanation;
    if (d.outcome == Outcome::kPlaced || d.outcome == Outcome::kWaiting) {
      j["domain"] = d.placement.domain;
      j["domainLevel"] = d.placement.domain_level < 0 ? "cluster" : st.levels().Name(d.placement.domain_level);
      j["score"] = d.placement.score;
      nlohmann::json nodes = nlohmann::json::array();
      for (const auto& a : d.placement.assignments) {
        nodes.push_back({{"node", st.node(a.node).name}, {"path", st.NodePath(a.node)}, {"members", a.members}});
      }
      j["nodes"] = nodes;
    }
    out.push_back(std::move(j));
  }
  return out;
}

// Prints every reason of `s`, one a line; returns 1 (place's exit code for bad input).
int PrintErrors(const Status& s) {
  for (const auto& r : s.reasons()) std::cerr << r << "\n";
  return 1;
}

// A bare profile has a profile's own fields; a mapping with `profile:` or with none of them is an
// engine config (a file that is no mapping is refused as a profile).
bool IsBareProfile(const nlohmann::json& root) {
  if (!root.is_object()) return true;
  if (root.contains("profile")) return false;
  for (const char* k : {"name", "maxCandidates", "plugins", "backfill"}) {
    if (root.contains(k)) return true;
  }
  return false;
}

// --profile FILE, built on `levels`; every error located in FILE.
StatusOr<std::unique_ptr<Profile>> LoadProfile(const std::string& file, const TopologyLevels& levels) {
  auto text = ReadFile(file);
  if (!text.ok()) return text.status();
  auto doc = ParseDocument(*text, file);
  if (!doc.ok()) return doc.status();
  ProfileSpec spec;
  std::string prefix;  // where the profile sits in the file
  if (IsBareProfile(doc->root)) {
    auto ps = ProfileSpec::FromJson(doc->root, "");
    if (!ps.ok()) return doc->Locate(ps.status());
    spec = *ps;
  } else {
    auto cfg = ParseEngineConfig(*text, file);  // the engine's own checks, its profile's included
    if (!cfg.ok()) return cfg.status();
    spec = cfg->profile;
    prefix = "profile";
  }
  auto profile = Profile::Build(spec, plugins::DefaultRegistry(), PluginContext{levels});
  if (profile.ok()) return profile;
  Status located;
  for (const auto& r : profile.status().reasons()) {
    const std::string field = ProfileErrorField(r);
    const int line = doc->LineOf(prefix.empty() || field.empty() ? prefix + field : prefix + "." + field);
    AddReasons(&located, Status::Error(file + (line > 0 ? ":" + std::to_string(line) : "") + ": " + r));
  }
  return located;
}

}  // namespace

int Place(const Args& args) {
  Flags flags(args);
  if (!flags.Parse({"--topology", "--workloads", "--profile", "-o", "--output"})) return 2;
  const std::string output = flags.Get("-o", flags.Get("--output", "table"));
  if (output != "table" && output != "json") {
    std::cerr << "tidalctl place: -o: unknown format \"" << output << "\" (accepted: table, json)\n";
    return 2;
  }
  const std::string topo_file = flags.Get("--topology"), wl_file = flags.Get("--workloads");
  auto topo_doc = topo_file.empty() ? ParseDocument(kSampleFabricYaml, "<built-in sample fabric>") : LoadDocument(topo_file);
  if (!topo_doc.ok()) return PrintErrors(topo_doc.status());
  auto spec = DecodeClusterSpec(*topo_doc);
  if (!spec.ok()) return PrintErrors(spec.status());
  auto state = ClusterState::Build(spec->levels, std::move(spec->nodes));
  if (!state.ok()) return std::cerr << topo_doc->file << ": " << state.status().Message() << "\n", 1;

  auto wl_doc = wl_file.empty() ? ParseDocument(kSampleWorkloadsYaml, "<built-in sample workloads>") : LoadDocument(wl_file);
  if (!wl_doc.ok()) return PrintErrors(wl_doc.status());
  auto workloads = DecodeWorkloads(*wl_doc);
  if (!workloads.ok()) return PrintErrors(workloads.status());

  const std::string pf = flags.Get("--profile");
  auto profile = pf.empty() ? Profile::Build(ProfileSpec::Default(), plugins::DefaultRegistry(), PluginContext{state->levels()})
                            : LoadProfile(pf, state->levels());
  if (!profile.ok()) return PrintErrors(profile.status());
  Scheduler scheduler(std::move(profile).value());

  const int64_t free_before = state->FreeGpus(state->root());
  CycleResult r = scheduler.RunCycle(*state, *workloads, 0);
  if (output == "json") {
    std::cout << ToJson(*state, r).dump(2) << "\n";
    return 0;
  }
  std::cout << "Fabric: " << state->node_count() << " nodes, levels " << state->levels().Accepted() << "; "
            << free_before << " schedulable free GPUs before, " << state->FreeGpus(state->root()) << " after\n\n";
  PrintTable(*state, *workloads, r, std::cout);
  int placed = 0;
  for (const auto& d : r.decisions) placed += d.outcome == Outcome::kPlaced ? 1 : 0;
  std::cout << "\n" << placed << " of " << r.decisions.size() << " workloads placed (profile " << scheduler.profile().name()
            << ": ";
  const auto names = scheduler.profile().PluginNames();
  for (size_t i = 0; i < names.size(); ++i) std::cout << (i ? ", " : "") << names[i];
  std::cout << ")\n";
  return 0;
}

}  // namespace tidal::cli
