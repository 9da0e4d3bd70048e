// Fields: reads one mapping of a Document with errors that name the field path, and refuses keys
// it was not asked about (typos in config are errors, not silently ignored).
//
//   Fields f(j, "workloads[2]");
//   f.Str("name", &w.id, /*required=*/true);
//   f.Int("members", &w.members, 1, 100000);
//   if (Status s = f.Done(); !s.ok()) return s;   // every error, and every unknown key
//
// Every problem is kept (one reason each, in the order found), so a file with three bad fields
// reports three errors, not the first.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/api/resources.h"
#include "core/api/status.h"

namespace tidal {

class Fields {
 public:
  Fields(const nlohmann::json& j, std::string path);

  const std::string& path() const { return path_; }
  std::string Sub(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  bool Has(const std::string& key);
  // Returns the raw value (marks the key used) or nullptr when absent.
  const nlohmann::json* Get(const std::string& key);

  void Str(const std::string& key, std::string* out, bool required = false);
  void Int(const std::string& key, int64_t* out, int64_t lo, int64_t hi, bool required = false);
  void Int(const std::string& key, int32_t* out, int32_t lo, int32_t hi, bool required = false);
  void Bool(const std::string& key, bool* out);
  // A Kubernetes quantity as a string or a number; milli for CPU.
  void Quantity(const std::string& key, int64_t* out, bool milli);
  // A GPU count: a quantity that is a whole number (0.5, 1.5 and 100m are errors).
  void GpuQuantity(const std::string& key, int64_t* out);
  void Duration(const std::string& key, int64_t* out_seconds);
  // {gpus, cpu, memory}; nvidia.com/gpu is another name for gpus (both given: an error unless equal).
  void ResourcesField(const std::string& key, Resources* out, bool required = false);
  void StringMap(const std::string& key, std::map<std::string, std::string>* out);

  // Keeps every reason of `s` (after those already kept).
  void Fail(const Status& s);
  void FailField(const std::string& key, const std::string& reason) { Fail(Status::Error(Sub(key) + ": " + reason)); }
  // Every error so far, then one for each unknown key; Ok if none.
  Status Done() const;
  const Status& status() const { return status_; }

 private:
  const nlohmann::json& j_;
  std::string path_;
  std::set<std::string> used_;
  Status status_;
  bool is_object_ = true;
};

// A quantity field's value, a string ("500m", "512Gi") or a number (8, 0.5, 1e3), in the unit of
// ParseQuantity (milli: thousandths) or, for gpus, whole devices (a fraction is an error).
// Errors name `field`; a negative number is "must not be negative".
StatusOr<int64_t> DecodeQuantity(const nlohmann::json& v, const std::string& field, bool milli, bool gpus);

// Appends every reason of `s` to `*into` (Ok `into` takes `s` as it is).
void AddReasons(Status* into, const Status& s);

}  // namespace tidal
