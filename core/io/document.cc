#include "core/io/document.h"

#include <cctype>
#include <charconv>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace tidal {
namespace {

nlohmann::json Scalar(const YAML::Node& n) {
  const std::string& v = n.Scalar();
  if (n.Tag() == "!") return v;  // quoted: always a string
  if (v == "~" || v == "null" || v == "Null" || v == "NULL") return nullptr;
  if (v == "true" || v == "True" || v == "TRUE") return true;
  if (v == "false" || v == "False" || v == "FALSE") return false;
  if (!v.empty()) {
    size_t i = (v[0] == '-' || v[0] == '+') ? 1 : 0;
    bool digits = i < v.size();
    for (size_t k = i; k < v.size(); ++k) digits = digits && std::isdigit(static_cast<unsigned char>(v[k]));
    if (digits) {  // an integer if it fits int64_t; a longer one is read as a (large) float
      int64_t x = 0;
      const char* b = v.data() + (v[0] == '+' ? 1 : 0);
      if (auto r = std::from_chars(b, v.data() + v.size(), x); r.ec == std::errc() && r.ptr == v.data() + v.size()) return x;
    }
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (end != nullptr && *end == '\0' && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.')) return d;
  }
  return v;
}

// A plain `<<` key: YAML's merge key (`<<: *defaults`, `<<: [*a, *b]`).
bool IsMergeKey(const YAML::Node& key) { return key.IsScalar() && key.Scalar() == "<<" && key.Tag() != "!"; }

Status Convert(const YAML::Node& n, const std::string& path, Document& doc, nlohmann::json& out, int depth);

// Merges the mapping(s) a merge key names into `out`: a key the mapping gives itself wins, and
// among several merged mappings the first that gives a key wins (YAML 1.1 merge key semantics).
Status MergeInto(const YAML::Node& merged, const std::string& path, Document& doc, nlohmann::json& out, int depth) {
  const std::string at = path.empty() ? "<<" : path + ".<<";
  std::vector<YAML::Node> sources;
  if (merged.IsMap()) {
    sources.push_back(merged);
  } else if (merged.IsSequence()) {
    for (const auto& e : merged) sources.push_back(e);
  }
  if (sources.empty() || std::any_of(sources.begin(), sources.end(), [](const YAML::Node& e) { return !e.IsMap(); })) {
    doc.lines.emplace(at, merged.Mark().line + 1);
    return Status::Error(at + ": a merge key takes a mapping or a list of mappings (e.g. <<: *defaults)");
  }
  for (const auto& src : sources) {
    nlohmann::json part;
    if (Status s = Convert(src, path, doc, part, depth + 1); !s.ok()) return s;
    for (auto& [k, v] : part.items()) {
      if (!out.contains(k)) out[k] = std::move(v);
    }
  }
  return Status::Ok();
}

Status ConvertMap(const YAML::Node& n, const std::string& path, Document& doc, nlohmann::json& out, int depth) {
  out = nlohmann::json::object();
  std::vector<YAML::Node> merges;
  for (const auto& kv : n) {
    if (!kv.first.IsScalar()) return Status::Error((path.empty() ? "document" : path) + ": keys must be scalars");
    if (IsMergeKey(kv.first)) {
      if (!merges.empty()) {
        doc.lines[path.empty() ? "<<" : path + ".<<"] = kv.first.Mark().line + 1;
        return Status::Error((path.empty() ? "<<" : path + ".<<") + ": duplicate key (give one merge key a list: <<: [*a, *b])");
      }
      merges.push_back(kv.second);
      continue;
    }
    const std::string key = kv.first.Scalar();
    const std::string child_path = path.empty() ? key : path + "." + key;
    // A field's line is its key's: an empty value's mark is on a later line, and a block value
    // starts on the next one.
    if (out.contains(key)) {
      doc.lines[child_path] = kv.first.Mark().line + 1;  // report the duplicate, not the first
      return Status::Error(child_path + ": duplicate key");
    }
    doc.lines.emplace(child_path, kv.first.Mark().line + 1);
    nlohmann::json child;
    if (Status s = Convert(kv.second, child_path, doc, child, depth + 1); !s.ok()) return s;
    out[key] = std::move(child);
  }
  for (const auto& m : merges) {
    if (Status s = MergeInto(m, path, doc, out, depth); !s.ok()) return s;
  }
  return Status::Ok();
}

// Values a document may expand to: 100,000 plus one per byte of its text (a document without
// aliases has fewer). Aliases (and merge keys) are expanded where they are used, so a few lines of
// nested aliases could name billions of values ("billion laughs"); each expanded value is one
// conversion, merged ones too, so the conversions are counted. Set by ParseDocument for its
// thread's conversion.
thread_local size_t max_document_values = 100'000;
thread_local size_t document_values = 0;

Status Convert(const YAML::Node& n, const std::string& path, Document& doc, nlohmann::json& out, int depth) {
  if (depth > 64) return Status::Error(path + ": nested too deeply");
  if (++document_values > max_document_values) {
    return Status::Error(path + ": the document expands to more than " + std::to_string(max_document_values) +
                         " values (aliases or merge keys used over and over)");
  }
  doc.lines.emplace(path, n.Mark().line + 1);
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      out = nullptr;
      return Status::Ok();
    case YAML::NodeType::Scalar:
      out = Scalar(n);
      return Status::Ok();
    case YAML::NodeType::Sequence: {
      out = nlohmann::json::array();
      size_t i = 0;
      for (const auto& e : n) {
        nlohmann::json child;
        if (Status s = Convert(e, path + "[" + std::to_string(i++) + "]", doc, child, depth + 1); !s.ok()) return s;
        out.push_back(std::move(child));
      }
      return Status::Ok();
    }
    case YAML::NodeType::Map:
      return ConvertMap(n, path, doc, out, depth);
  }
  return Status::Ok();
}

// The 1-based line of a --- that starts a second document (one after a line of content other
// than comments), 0 when there is none: a leading or trailing lone --- starts no second document.
int SecondDocumentLine(const std::string& text) {
  bool content = false;
  int line = 0, sep = 0;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    ++line;
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (l == "---" || l.rfind("--- ", 0) == 0) {
      if (content && sep == 0) sep = line;
      continue;
    }
    const size_t first = l.find_first_not_of(" \t");
    if (first == std::string::npos || l[first] == '#' || l == "...") continue;
    if (sep > 0) return sep;  // content after a --- that followed content
    content = true;
  }
  return 0;
}

}  // namespace

int Document::LineOf(const std::string& field) const {
  std::string f = field;
  while (true) {
    auto it = lines.find(f);
    if (it != lines.end()) return it->second;
    const size_t cut = f.find_last_of(".[");
    if (cut == std::string::npos || cut == 0) break;
    f.resize(cut);
  }
  auto it = lines.find("");
  return it == lines.end() ? 0 : it->second;
}

Status Document::Locate(const Status& s) const {
  if (s.ok()) return s;
  Status out(s.code(), "", s.plugin());
  for (const auto& r : s.reasons()) {
    const size_t colon = r.find(": ");
    const std::string field = colon == std::string::npos ? "" : r.substr(0, colon);
    const int line = field.find(' ') == std::string::npos ? LineOf(field) : 0;
    out.AddReason(file + (line > 0 ? ":" + std::to_string(line) : "") + ": " + r);
  }
  return out;
}

StatusOr<Document> ParseDocument(const std::string& text, const std::string& file) {
  Document doc;
  doc.file = file;
  try {
    // YAML::Load, not LoadAll: yaml-cpp's LoadAll loops without end on some malformed input (the
    // config fuzzer: a hot reload would hang). A second document is found from the text: a ---
    // line after content (SecondDocumentLine).
    if (const int second = SecondDocumentLine(text); second > 0) {
      return Status::Error(file + ":" + std::to_string(second) +
                           ": more than one YAML document (a --- line starts another; give one document per file)");
    }
    const YAML::Node n = YAML::Load(text);
    max_document_values = 100'000 + text.size();
    document_values = 0;
    if (Status s = Convert(n, "", doc, doc.root, 0); !s.ok()) return doc.Locate(s);
  } catch (const YAML::Exception& e) {
    return Status::Error(file + ":" + std::to_string(e.mark.line + 1) + ": syntax error: " + e.msg);
  }
  return doc;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Status::Error(path + ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(path + ": cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

StatusOr<Document> LoadDocument(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseDocument(*text, path);
}


}  // namespace tidal
