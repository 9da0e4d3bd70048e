// Document: a YAML or JSON file read into nlohmann::json, remembering the line of every field so
// errors read "file:line: field: reason".
//
// Field paths are dotted with indices: "workloads[2].request.gpus". Scalars keep YAML's types:
// quoted scalars stay strings; plain ones become null, bool, integer (when it fits int64_t), float
// or string. A file holds one YAML document: a second one (after a `---` line) is an error at that
// line, not ignored (an empty one, a leading or trailing `---`, is no document). YAML merge keys
// (`<<: *anchor`, `<<: [*a, *b]`) merge the anchored mappings; keys the mapping gives itself win.
// Threading: plain value.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/api/duration.h"
#include "core/api/status.h"

namespace tidal {

struct Document {
  std::string file;                 // for messages; "<inline>" for strings
  nlohmann::json root;
  std::map<std::string, int> lines;  // field path -> 1-based line

  // The line of `field` or of its nearest enclosing field; 0 if unknown.
  int LineOf(const std::string& field) const;
  // Turns "field: reason" into "file:line: field: reason" (each reason of the status).
  Status Locate(const Status& s) const;
};

StatusOr<Document> ParseDocument(const std::string& text, const std::string& file = "<inline>");
StatusOr<Document> LoadDocument(const std::string& path);
// The whole file as bytes, or "PATH: cannot open file" / "PATH: is a directory, not a file".
StatusOr<std::string> ReadFile(const std::string& path);


}  // namespace tidal
