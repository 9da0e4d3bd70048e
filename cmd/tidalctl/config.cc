// tidalctl config validate FILE: checks an engine config (topology levels, profile, queues) the way
// tidal-engine loads it, and the rollout dry-run gate's failOn checks; prints every problem as
// "file:line: field: reason".
// tidalctl config diff FILE [--engine URL]: what the live engine runs against FILE (e.g. what git
// holds), field by field, from the engine's /config?format=json. Exit 0: the same config (the same
// version: core/io/document_diff.h), 1: they differ, 2: FILE is invalid, the engine cannot be
// asked, or bad usage.
#include <iostream>

#include "cmd/tidalctl/commands.h"
#include "core/io/document.h"
#include "core/io/document_diff.h"
#include "engine/engine.h"
#include "server/config_load.h"

namespace tidal::cli {
namespace {

constexpr const char* kConfigUsage =
    "usage: tidalctl config validate FILE\n"
    "       tidalctl config diff FILE [--engine http://127.0.0.1:8081] [--token-file FILE] [-o text|json]\n";

int Validate(const std::string& file) {
  auto cfg = LoadServedConfig(file);  // as tidal-engine loads it, the gate's failOn included
  if (!cfg.ok()) {
    for (const auto& r : cfg.status().reasons()) std::cerr << r << "\n";
    std::cerr << cfg.status().reasons().size() << " problem(s) in " << file << "\n";
    return 1;
  }
  std::cout << file << ": valid (" << cfg->queues.queues.size() << " queues, " << cfg->levels.size()
            << " topology levels, profile " << cfg->profile.name << ")\n";
  return 0;
}

std::string Show(const nlohmann::json& v, bool absent) { return absent ? "(absent)" : v.dump(); }

int Diff(const Args& args) {
  Flags flags(args);
  if (!flags.Parse({"--engine", "--token-file", "-o", "--output"}) || flags.positional().size() != 2) {
    std::cerr << kConfigUsage;
    return 2;
  }
  const std::string file = flags.positional()[1];
  const std::string out = flags.Get("-o", flags.Get("--output", "text"));
  if (out != "text" && out != "json") return std::cerr << "tidalctl config diff: -o: expected text or json\n", 2;
  // The file must be a config the engine would run: an invalid one is no answer to "what would run".
  // Read once, for both the check and the document compared.
  auto text = ReadFile(file);
  if (!text.ok()) return std::cerr << text.status().Message() << "\n", 2;
  auto cfg = ParseServedConfig(*text, file);
  if (!cfg.ok()) {
    for (const auto& r : cfg.status().reasons()) std::cerr << r << "\n";
    std::cerr << "tidalctl config diff: " << file << " is not a valid engine config (" << cfg.status().reasons().size()
              << " problem(s)); the engine would refuse it\n";
    return 2;
  }
  auto doc = ParseDocument(*text, file);
  if (!doc.ok()) return std::cerr << doc.status().Message() << "\n", 2;
  int code = 0;
  std::string body, err;
  const std::string engine = flags.Get("--engine", "http://127.0.0.1:8081");
  if (!HttpGet(engine, TokenFile(flags), "/config?format=json", &code, &body, &err)) {
    return std::cerr << "tidalctl config diff: " << err << "\n", 2;
  }
  if (code != 200) return std::cerr << "tidalctl config diff: " << engine << "/config: HTTP " << code << ": " << body, 2;
  nlohmann::json live;
  try {
    live = nlohmann::json::parse(body);
  } catch (const std::exception& e) {
    return std::cerr << "tidalctl config diff: " << engine << "/config: not JSON: " << e.what() << "\n", 2;
  }
  auto str = [&](const char* k) { return live.is_object() && live.contains(k) && live[k].is_string() ? live[k].get<std::string>() : std::string(); };
  const bool engine_drift = live.is_object() && live.contains("drift") && live["drift"].is_boolean() && live["drift"].get<bool>();
  if (str("version").empty()) {
    return std::cerr << "tidalctl config diff: " << engine << "/config: no version (an older engine?)\n", 2;
  }
  const nlohmann::json running = live.contains("config") && live["config"].is_object() ? live["config"] : nlohmann::json::object();
  const std::string live_version = str("version");
  const std::string file_version = DocumentVersion(doc->root);
  const auto diffs = DiffDocuments(running, doc->root);
  const bool same = live_version == file_version;
  if (out == "json") {
    nlohmann::json j{{"engine", engine},           {"engine_version", live_version}, {"file", file},
                     {"file_version", file_version}, {"drift", !same},               {"fields", nlohmann::json::array()}};
    j["engine_file_drift"] = engine_drift;
    for (const auto& d : diffs) {
      j["fields"].push_back({{"path", d.path}, {"engine", d.left_absent ? nlohmann::json(nullptr) : d.left},
                             {"file", d.right_absent ? nlohmann::json(nullptr) : d.right}});
    }
    std::cout << j.dump(2) << "\n";
    return same ? 0 : 1;
  }
  if (live_version == "builtin") std::cout << "the engine runs its built-in defaults (no --config)\n";
  if (same) {
    std::cout << file << ": the engine runs this config (version " << live_version << ")\n";
  } else {
    std::cout << file << " (version " << file_version << ") differs from what the engine runs (version " << live_version
              << "): " << diffs.size() << " field(s)\n";
    for (const auto& d : diffs) {
      std::cout << "  " << (d.path.empty() ? "(document)" : d.path) << ": engine " << Show(d.left, d.left_absent)
                << ", file " << Show(d.right, d.right_absent) << "\n";
    }
  }
  if (engine_drift) {
    std::cout << "note: the engine's own file " << str("file") << " differs from what it runs (the file is version "
              << (str("file_version").empty() ? std::string("unreadable") : str("file_version")) << "; last refused: "
              << str("last_error") << ")\n";
  }
  return same ? 0 : 1;
}

}  // namespace

int Config(const Args& args) {
  if (args.size() == 2 && args[0] == "validate") return Validate(args[1]);
  if (!args.empty() && args[0] == "diff") return Diff(args);
  std::cerr << kConfigUsage;
  return 2;
}

}  // namespace tidal::cli
