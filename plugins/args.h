// Helpers for plugin factories: typed, validated plugin arguments with errors naming the field.
#pragma once

#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

#include "core/api/status.h"

namespace tidal::plugin_args {

// Refuses keys outside `accepted`.
inline Status OnlyKeys(const nlohmann::json& args, std::initializer_list<const char*> accepted) {
  if (args.is_null()) return Status::Ok();
  if (!args.is_object()) return Status::Error("args must be a mapping");
  for (const auto& [k, v] : args.items()) {
    bool ok = false;
    std::string list;
    for (const char* a : accepted) {
      ok = ok || k == a;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    if (!ok) return Status::Error(k + ": unknown argument (accepted: " + (list.empty() ? "none" : list) + ")");
  }
  return Status::Ok();
}

// Reads an integer argument in [lo, hi]; keeps *out when absent.
inline Status Int(const nlohmann::json& args, const char* key, int64_t lo, int64_t hi, int64_t* out) {
  if (!args.is_object() || !args.contains(key)) return Status::Ok();
  const auto& v = args.at(key);
  if (!v.is_number_integer()) return Status::Error(std::string(key) + ": must be an integer");
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) {
    return Status::Error(std::string(key) + ": must be " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
                         std::to_string(x));
  }
  *out = x;
  return Status::Ok();
}

}  // namespace tidal::plugin_args
