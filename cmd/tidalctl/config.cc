// tidalctl config validate FILE: checks an engine config (topology levels, profile, queues) the way
// tidal-engine loads it, and the rollout dry-run gate's failOn checks; prints every problem as
// "file:line: field: reason".
// tidalctl config diff FILE [--engine URL]: what the live engine runs against FILE (e.g. what git
// holds), field by field, from the engine's /config?format=json. The comparison is by document,
// not by effective setting: a field FILE spells out with its default value, or a number written as
// a string, differs. Exit 0: the same config (the same version: core/io/document_diff.h; against
// an engine without --config, version "builtin", no field differs from the built-in document {}),
// 1: they differ, 2: FILE is invalid, the engine cannot be asked, or bad usage.
#include <iostream>
#include <optional>
#include <vector>

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

// What the engine's /config?format=json says it runs.
struct LiveConfig {
  std::string version, file, file_version, last_error;
  bool file_drift = false;  // the engine's own file differs from what it runs
  bool builtin = false;     // no --config: the built-in defaults
  bool has_document = false;
  nlohmann::json document = nlohmann::json::object();
};

// FILE as the engine would run it: its document, or the exit code 2 with the reasons printed.
std::optional<Document> ReadValidConfig(const std::string& file) {
  // The file must be a config the engine would run: an invalid one is no answer to "what would run".
  // Read once, for both the check and the document compared.
  auto text = ReadFile(file);
  if (!text.ok()) return std::cerr << text.status().Message() << "\n", std::nullopt;
  auto cfg = ParseServedConfig(*text, file);
  if (!cfg.ok()) {
    for (const auto& r : cfg.status().reasons()) std::cerr << r << "\n";
    std::cerr << "tidalctl config diff: " << file << " is not a valid engine config (" << cfg.status().reasons().size()
              << " problem(s)); the engine would refuse it\n";
    return std::nullopt;
  }
  auto doc = ParseDocument(*text, file);
  if (!doc.ok()) return std::cerr << doc.status().Message() << "\n", std::nullopt;
  return std::move(doc).value();
}

// The engine's /config, or an error naming the engine.
StatusOr<LiveConfig> FetchLiveConfig(const std::string& engine, const std::string& token_file) {
  int code = 0;
  std::string body, err;
  if (!HttpGet(engine, token_file, "/config?format=json", &code, &body, &err)) return Status::Error(err);
  if (code != 200) return Status::Error(engine + "/config: HTTP " + std::to_string(code) + ": " + body);
  nlohmann::json live;
  try {
    live = nlohmann::json::parse(body);
  } catch (const std::exception& e) {
    return Status::Error(engine + "/config: not JSON: " + e.what());
  }
  if (!live.is_object()) return Status::Error(engine + "/config: not a JSON object");
  auto str = [&](const char* k) { return live.contains(k) && live[k].is_string() ? live[k].get<std::string>() : std::string(); };
  LiveConfig out;
  out.version = str("version");
  if (out.version.empty()) return Status::Error(engine + "/config: no version (an older engine?)");
  out.file = str("file");
  out.file_version = str("file_version");
  out.last_error = str("last_error");
  out.file_drift = live.contains("drift") && live["drift"].is_boolean() && live["drift"].get<bool>();
  out.builtin = out.version == "builtin";
  // Without --config the engine runs the built-in defaults: as a document, the empty one (every
  // field its default).
  out.has_document = live.contains("config") && live["config"].is_object();
  if (out.has_document) out.document = live["config"];
  return out;
}

// The same config: the same version, or, against the built-in defaults (whose version is no
// document's hash), no field that differs from the built-in document.
bool SameConfig(const LiveConfig& live, const std::string& file_version, const std::vector<FieldDiff>& diffs) {
  return live.version == file_version || (live.builtin && diffs.empty());
}

void PrintJson(const std::string& engine, const LiveConfig& live, const std::string& file, const std::string& file_version,
               const std::vector<FieldDiff>& diffs, bool same) {
  nlohmann::json j{{"engine", engine},           {"engine_version", live.version}, {"file", file},
                   {"file_version", file_version}, {"drift", !same},               {"fields", nlohmann::json::array()}};
  j["engine_file_drift"] = live.file_drift;
  for (const auto& d : diffs) {
    j["fields"].push_back({{"path", d.path}, {"engine", d.left_absent ? nlohmann::json(nullptr) : d.left},
                           {"file", d.right_absent ? nlohmann::json(nullptr) : d.right}});
  }
  std::cout << j.dump(2) << "\n";
}

void PrintText(const LiveConfig& live, const std::string& file, const std::string& file_version,
               const std::vector<FieldDiff>& diffs, bool same) {
  if (live.builtin) {
    std::cout << "the engine runs its built-in defaults (no --config); " << file
              << " is compared with them as a document, {}: every field it sets differs, even one that spells out "
                 "a default\n";
  }
  if (same) {
    std::cout << file << ": the engine runs this config (version " << live.version << ")\n";
  } else if (diffs.empty()) {  // the versions differ but the engine sent no document to compare
    std::cout << file << " (version " << file_version << ") differs from what the engine runs (version " << live.version
              << "); the engine sent no config document to compare field by field\n";
  } else {
    std::cout << file << " (version " << file_version << ") differs from what the engine runs (version " << live.version
              << "): " << diffs.size() << " field(s)\n";
    for (const auto& d : diffs) {
      std::cout << "  " << (d.path.empty() ? "(document)" : d.path) << ": engine " << Show(d.left, d.left_absent)
                << ", file " << Show(d.right, d.right_absent) << "\n";
    }
  }
  if (live.file_drift) {
    std::cout << "note: the engine's own file " << live.file << " differs from what it runs (the file is version "
              << (live.file_version.empty() ? std::string("unreadable") : live.file_version)
              << "; last refused: " << live.last_error << ")\n";
  }
}

int Diff(const Args& args) {
  Flags flags(args);
  if (!flags.Parse({"--engine", "--token-file", "-o", "--output"}) || flags.positional().size() != 2) {
    std::cerr << kConfigUsage;
    return 2;
  }
  const std::string file = flags.positional()[1];
  const std::string out = flags.Get("-o", flags.Get("--output", "text"));
  if (out != "text" && out != "json") return std::cerr << "tidalctl config diff: -o: expected text or json\n", 2;
  const auto doc = ReadValidConfig(file);
  if (!doc) return 2;
  const std::string engine = flags.Get("--engine", "http://127.0.0.1:8081");
  auto live = FetchLiveConfig(engine, TokenFile(flags));
  if (!live.ok()) return std::cerr << "tidalctl config diff: " << live.status().Message() << "\n", 2;
  const std::string file_version = DocumentVersion(doc->root);
  const auto diffs = live->has_document || live->builtin ? DiffDocuments(live->document, doc->root) : std::vector<FieldDiff>{};
  const bool same = SameConfig(*live, file_version, diffs);
  if (out == "json") {
    PrintJson(engine, *live, file, file_version, diffs, same);
  } else {
    PrintText(*live, file, file_version, diffs, same);
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
