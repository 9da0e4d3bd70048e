#include "core/io/fields.h"

#include "core/api/limits.h"
#include "core/io/document.h"

namespace tidal {

Fields::Fields(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {
  if (!j_.is_object()) {
    is_object_ = false;
    status_ = Status::Error((path_.empty() ? std::string("document") : path_) + ": must be a mapping");
  }
}

bool Fields::Has(const std::string& key) { return is_object_ && j_.contains(key); }

const nlohmann::json* Fields::Get(const std::string& key) {
  if (!is_object_) return nullptr;
  used_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end() || it->is_null()) return nullptr;
  return &*it;
}

void Fields::Str(const std::string& key, std::string* out, bool required) {
  const auto* v = Get(key);
  if (v == nullptr) {
    if (required) FailField(key, "required");
    return;
  }
  if (v->is_string()) {
    *out = v->get<std::string>();
  } else if (v->is_number_integer()) {
    *out = std::to_string(v->get<int64_t>());
  } else {
    FailField(key, "must be a string");
  }
}

void Fields::Int(const std::string& key, int64_t* out, int64_t lo, int64_t hi, bool required) {
  const auto* v = Get(key);
  if (v == nullptr) {
    if (required) FailField(key, "required");
    return;
  }
  if (!v->is_number_integer()) return FailField(key, "must be an integer");
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi) {
    return FailField(key, "must be " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + std::to_string(x));
  }
  *out = x;
}

void Fields::Int(const std::string& key, int32_t* out, int32_t lo, int32_t hi, bool required) {
  int64_t x = *out;
  Int(key, &x, lo, hi, required);
  *out = static_cast<int32_t>(x);
}

void Fields::Bool(const std::string& key, bool* out) {
  const auto* v = Get(key);
  if (v == nullptr) return;
  if (!v->is_boolean()) return FailField(key, "must be true or false");
  *out = v->get<bool>();
}

StatusOr<int64_t> DecodeQuantity(const nlohmann::json& v, const std::string& field, bool milli, bool gpus) {
  if (v.is_number_integer() || v.is_number_unsigned()) {
    if (v.is_number_integer() && v.get<int64_t>() < 0) return Status::Error(field + ": must not be negative");
    const std::string text = v.is_number_unsigned() ? std::to_string(v.get<uint64_t>()) : std::to_string(v.get<int64_t>());
    return gpus ? ParseGpuQuantity(text, field) : ParseQuantity(text, milli, field);
  }
  if (v.is_number_float()) {
    if (v.get<double>() < 0) return Status::Error(field + ": must not be negative");
    return QuantityFromNumber(v.get<double>(), milli, gpus, field);
  }
  if (!v.is_string()) return Status::Error(field + ": must be a quantity such as 8, 500m or 512Gi");
  return gpus ? ParseGpuQuantity(v.get<std::string>(), field) : ParseQuantity(v.get<std::string>(), milli, field);
}

void Fields::Quantity(const std::string& key, int64_t* out, bool milli) {
  const auto* v = Get(key);
  if (v == nullptr) return;
  auto q = DecodeQuantity(*v, Sub(key), milli, /*gpus=*/false);
  if (!q.ok()) return Fail(q.status());
  *out = *q;
}

void Fields::GpuQuantity(const std::string& key, int64_t* out) {
  const auto* v = Get(key);
  if (v == nullptr) return;
  auto q = DecodeQuantity(*v, Sub(key), /*milli=*/false, /*gpus=*/true);
  if (!q.ok()) return Fail(q.status());
  *out = *q;
}

void Fields::Duration(const std::string& key, int64_t* out_seconds) {
  const auto* v = Get(key);
  if (v == nullptr) return;
  if (v->is_number_integer()) {
    if (v->get<int64_t>() < 0) return FailField(key, "must not be negative");
    if (Status s = limits::CheckDuration(v->get<int64_t>(), Sub(key)); !s.ok()) return Fail(s);
    *out_seconds = v->get<int64_t>();
    return;
  }
  if (!v->is_string()) return FailField(key, "must be a duration such as 90s, 30m or 12h");
  auto d = ParseDurationSeconds(v->get<std::string>(), Sub(key));
  if (!d.ok()) return Fail(d.status());
  *out_seconds = *d;
}

void Fields::ResourcesField(const std::string& key, Resources* out, bool required) {
  const auto* v = Get(key);
  if (v == nullptr) {
    if (required) FailField(key, "required");
    return;
  }
  Fields r(*v, Sub(key));
  int64_t gpus = -1, nvidia = -1;  // -1: not given
  r.GpuQuantity("gpus", &gpus);
  r.GpuQuantity("nvidia.com/gpu", &nvidia);
  if (gpus >= 0 && nvidia >= 0 && gpus != nvidia) {
    r.FailField("nvidia.com/gpu", std::to_string(nvidia) + " differs from gpus (" + std::to_string(gpus) +
                                      "): they name the same GPUs; give one of them");
  }
  if (gpus >= 0 || nvidia >= 0) out->gpus = gpus >= 0 ? gpus : nvidia;
  r.Quantity("cpu", &out->cpu_milli, true);
  r.Quantity("memory", &out->memory_bytes, false);
  if (Status s = r.Done(); !s.ok()) Fail(s);
}

void Fields::StringMap(const std::string& key, std::map<std::string, std::string>* out) {
  const auto* v = Get(key);
  if (v == nullptr) return;
  if (!v->is_object()) return FailField(key, "must be a mapping of strings");
  for (const auto& [k, val] : v->items()) {
    if (val.is_string()) {
      (*out)[k] = val.get<std::string>();
    } else if (val.is_number_integer()) {
      (*out)[k] = std::to_string(val.get<int64_t>());
    } else {
      return FailField(key + "." + k, "must be a string");
    }
  }
}

void AddReasons(Status* into, const Status& s) {
  if (s.ok()) return;
  if (into->ok()) {
    *into = s;
    return;
  }
  for (const auto& r : s.reasons()) into->AddReason(r);
}

void Fields::Fail(const Status& s) {
  if (is_object_) AddReasons(&status_, s);  // not a mapping: that alone is the problem
}

Status Fields::Done() const {
  Status out = status_;
  if (!is_object_) return out;
  for (const auto& [k, v] : j_.items()) {
    if (!used_.count(k)) AddReasons(&out, Status::Error(Sub(k) + ": unknown field"));
  }
  return out;
}

}  // namespace tidal
