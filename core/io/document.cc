#include "core/io/document.h"

#include <cctype>
#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>

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
    if (digits && v.size() < 19) return std::stoll(v);
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (end != nullptr && *end == '\0' && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.')) return d;
  }
  return v;
}

Status Convert(const YAML::Node& n, const std::string& path, Document& doc, nlohmann::json& out, int depth) {
  if (depth > 64) return Status::Error(path + ": nested too deeply");
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
    case YAML::NodeType::Map: {
      out = nlohmann::json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) return Status::Error((path.empty() ? "document" : path) + ": keys must be scalars");
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
      return Status::Ok();
    }
  }
  return Status::Ok();
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
    YAML::Node n = YAML::Load(text);
    if (Status s = Convert(n, "", doc, doc.root, 0); !s.ok()) return doc.Locate(s);
  } catch (const YAML::Exception& e) {
    return Status::Error(file + ":" + std::to_string(e.mark.line + 1) + ": syntax error: " + e.msg);
  }
  return doc;
}

StatusOr<std::string> ReadFile(const std::string& path) {
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
