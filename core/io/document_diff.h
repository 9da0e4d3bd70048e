// Config versions and field-by-field differences between two documents (GitOps drift: what the
// live engine runs against what git holds; tidalctl config diff, the engine's /config and
// tidal_config_drift).
//
// A version is the FNV-1a 64-bit hash of the document's canonical JSON (keys sorted, no
// whitespace) as 16 hex digits: the same configuration in YAML or JSON, reformatted or with
// comments changed, has the same version; any change of a value is a new one.
// Threading: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tidal {

std::string DocumentVersion(const nlohmann::json& doc);
// The same for bytes that are not a readable document (an invalid file still has a version).
std::string BytesVersion(const std::string& bytes);

struct FieldDiff {
  std::string path;               // "queues[2].weight", "pools.slurm" ("" = the whole document)
  nlohmann::json left, right;     // null where absent on that side
  bool left_absent = false, right_absent = false;
};
// Every field whose value differs (maps by key in sorted order, lists by index); equal
// subtrees are not listed, a field on one side only is (absent on the other).
std::vector<FieldDiff> DiffDocuments(const nlohmann::json& left, const nlohmann::json& right);

}  // namespace tidal
