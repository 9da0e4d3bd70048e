#include "core/io/queue_config.h"

#include <cmath>
#include <map>
#include <set>

#include "core/api/limits.h"
#include "core/api/node.h"
#include "core/io/fields.h"

namespace tidal {
namespace {

bool ValidQueueName(const std::string& n) {
  if (n.empty() || n.size() > 63) return false;
  for (char c : n) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-')) return false;
  }
  return std::isalnum(static_cast<unsigned char>(n.front())) && std::isalnum(static_cast<unsigned char>(n.back()));
}

// Reads headroom: {gpus: N, fromHPA: B, graceCapSeconds: S} (core/state/headroom.h).
void ReadHeadroom(const Document& doc, const nlohmann::json& j, const std::string& field, QueueSpec* q,
                  std::vector<std::string>* errors) {
  auto err = [&](const std::string& f, const std::string& why) {
    errors->push_back(doc.Locate(Status::Error(f + ": " + why)).Message());
  };
  if (!j.is_object()) return err(field, "must be a mapping {gpus: N, fromHPA: true|false, graceCapSeconds: S}");
  for (const auto& [k, v] : j.items()) {
    const std::string f = field + "." + k.substr(0, 64);
    const bool integer = v.is_number_integer();
    if (k == "gpus") {
      if (!integer || v.get<int64_t>() < 0 || v.get<int64_t>() > limits::kMaxGpusPerNode * int64_t{100000}) {
        err(f, "must be an integer >= 0 (the GPUs the queue may grow to at any time)");
      } else {
        q->headroom_gpus = v.get<int64_t>();
      }
    } else if (k == "fromHPA") {
      if (!v.is_boolean()) err(f, "must be true or false (derive the GPUs from the HPAs of the queue's pods)");
      else q->headroom_from_hpa = v.get<bool>();
    } else if (k == "graceCapSeconds") {
      if (!integer || v.get<int64_t>() < 0 || v.get<int64_t>() > 86400) err(f, "must be an integer in [0, 86400]");
      else q->headroom_grace_s = v.get<int64_t>();
    } else {
      err(f, "unknown field (accepted: gpus, fromHPA, graceCapSeconds)");
    }
  }
}

// Reads {resource: quantity} into a vector; unknown names and negative values are errors.
void ReadResVec(const Document& doc, const nlohmann::json& j, const std::string& field, const QueueConfig& cfg,
                int64_t unset, ResVec* out, std::vector<std::string>* errors) {
  out->assign(cfg.resources.size(), unset);
  if (!j.is_object()) {
    errors->push_back(doc.Locate(Status::Error(field + ": must be a mapping of resource: quantity")).Message());
    return;
  }
  for (const auto& [name, v] : j.items()) {
    const std::string f = field + "." + name;
    const int r = cfg.ResourceIndex(name);
    if (r < 0) {
      std::string known;
      for (const auto& x : cfg.resources) known += (known.empty() ? "" : ", ") + x;
      errors->push_back(doc.Locate(Status::Error(f + ": unknown resource (accepted: " + known + ")")).Message());
      continue;
    }
    if (v.is_number_integer() && v.get<int64_t>() < 0) {
      errors->push_back(doc.Locate(Status::Error(f + ": must not be negative, got " + std::to_string(v.get<int64_t>()))).Message());
      continue;
    }
    if (v.is_string() && !v.get<std::string>().empty() && v.get<std::string>()[0] == '-') {
      errors->push_back(doc.Locate(Status::Error(f + ": must not be negative, got " + v.get<std::string>())).Message());
      continue;
    }
    if (!v.is_number() && !v.is_string()) {
      errors->push_back(doc.Locate(Status::Error(f + ": must be a quantity")).Message());
      continue;
    }
    // GPUs (gpus, gpus.<model>) are whole devices; cpu is in thousandths.
    const bool gpus = name == "gpus" || name.rfind("gpus.", 0) == 0;
    auto q = DecodeQuantity(v, f, name == "cpu", gpus);
    if (!q.ok()) {
      errors->push_back(doc.Locate(q.status()).Message());
      continue;
    }
    (*out)[static_cast<size_t>(r)] = *q;
  }
}

}  // namespace

QueueConfig DecodeQueueConfig(const Document& doc, const nlohmann::json& root, std::vector<std::string>* errors) {
  QueueConfig cfg;
  auto err = [&](const std::string& field, const std::string& why) {
    errors->push_back(doc.Locate(Status::Error(field + ": " + why)).Message());
  };
  if (root.contains("resources")) {
    const auto& r = root.at("resources");
    Fields f(r, "resources");
    if (const auto* models = f.Get("gpuModels")) {
      if (!models->is_array()) {
        err("resources.gpuModels", "must be a list of GPU model names");
      } else {
        std::map<std::string, size_t> seen;
        for (size_t i = 0; i < models->size(); ++i) {
          const auto& m = (*models)[i];
          const std::string field = "resources.gpuModels[" + std::to_string(i) + "]";
          if (!m.is_string() || m.get<std::string>().empty()) {
            err(field, "must be a non-empty string");
          } else if (const std::string name = m.get<std::string>(); !IsValidLabelValue(name)) {
            err(field, "\"" + name + "\" is no GPU model a node label could carry (nvidia.com/gpu.product: at most 63 " +
                           "characters, letters, digits, '-', '_' and '.', beginning and ending with a letter or digit)");
          } else if (auto [at, fresh] = seen.emplace(name, i); !fresh) {
            err(field, "\"" + name + "\" is listed already (resources.gpuModels[" + std::to_string(at->second) + "])");
          } else {
            cfg.resources.push_back("gpus." + name);
          }
        }
      }
    }
    if (Status s = f.Done(); !s.ok()) errors->push_back(doc.Locate(s).Message());
  }
  if (root.contains("usageHalfLife")) {
    const auto& v = root.at("usageHalfLife");
    auto d = v.is_number_integer() ? StatusOr<int64_t>(v.get<int64_t>())
             : v.is_string()       ? ParseDurationSeconds(v.get<std::string>(), "usageHalfLife")
                                   : StatusOr<int64_t>(Status::Error("usageHalfLife: must be a duration"));
    if (!d.ok()) {
      errors->push_back(doc.Locate(d.status()).Message());
    } else if (*d <= 0) {
      err("usageHalfLife", "must be positive");
    } else if (Status s = limits::CheckDuration(*d, "usageHalfLife"); !s.ok()) {
      errors->push_back(doc.Locate(s).Message());
    } else {
      cfg.default_half_life_s = *d;
    }
  }
  if (!root.contains("queues")) return cfg;
  const auto& qs = root.at("queues");
  if (!qs.is_array()) {
    err("queues", "must be a list");
    return cfg;
  }
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < qs.size(); ++i) {
    const std::string p = "queues[" + std::to_string(i) + "]";
    const auto& j = qs[i];
    QueueSpec q;
    q.nominal.assign(cfg.resources.size(), kUnlimited);
    q.borrowing_limit.assign(cfg.resources.size(), kUnlimited);
    q.lending_limit.assign(cfg.resources.size(), kUnlimited);
    if (!j.is_object()) {
      err(p, "must be a mapping");
      cfg.queues.push_back(q);
      continue;
    }
    for (const auto& [k, v] : j.items()) {
      const std::string f = p + "." + k;
      if (k == "name") {
        if (!v.is_string() || !ValidQueueName(v.get<std::string>())) {
          err(f, "must be 1-63 characters of [a-z0-9-], starting and ending alphanumeric");
        } else {
          q.name = v.get<std::string>();
        }
      } else if (k == "parent") {
        if (!v.is_string()) err(f, "must be a queue name"); else q.parent = v.get<std::string>();
      } else if (k == "weight") {
        if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) err(f, "must be a finite number > 0"); else q.weight = v.get<double>();
      } else if (k == "nominal") {
        ReadResVec(doc, v, f, cfg, kUnlimited, &q.nominal, errors);
      } else if (k == "borrowingLimit") {
        ReadResVec(doc, v, f, cfg, kUnlimited, &q.borrowing_limit, errors);
      } else if (k == "lendingLimit") {
        ReadResVec(doc, v, f, cfg, kUnlimited, &q.lending_limit, errors);
      } else if (k == "halfLife") {
        auto d = v.is_string() ? ParseDurationSeconds(v.get<std::string>(), f)
                 : v.is_number_integer() ? StatusOr<int64_t>(v.get<int64_t>())
                                         : StatusOr<int64_t>(Status::Error(f + ": must be a duration"));
        if (!d.ok()) errors->push_back(doc.Locate(d.status()).Message());
        else if (*d <= 0) err(f, "must be positive");
        else if (Status s = limits::CheckDuration(*d, f); !s.ok()) errors->push_back(doc.Locate(s).Message());
        else q.half_life_s = *d;
      } else if (k == "headroom") {
        ReadHeadroom(doc, v, f, &q, errors);
      } else if (k == "formerNames") {
        if (!v.is_array()) err(f, "must be a list of queue names");
        for (size_t n = 0; v.is_array() && n < v.size(); ++n) {
          if (!v[n].is_string() || !ValidQueueName(v[n].get<std::string>())) {
            err(f + "[" + std::to_string(n) + "]", "must be 1-63 characters of [a-z0-9-], starting and ending alphanumeric");
          } else {
            q.former_names.push_back(v[n].get<std::string>());
          }
        }
      } else {
        err(f, "unknown field (accepted: name, parent, weight, nominal, borrowingLimit, lendingLimit, halfLife, headroom, formerNames)");
      }
    }
    if (!j.contains("name")) err(p + ".name", "required");
    if (!q.name.empty()) {
      if (index.count(q.name)) {
        err(p + ".name", "duplicate queue \"" + q.name + "\" (first at queues[" + std::to_string(index[q.name]) + "])");
      } else {
        index[q.name] = i;
      }
    }
    for (size_t r = 0; r < cfg.resources.size(); ++r) {
      if (q.nominal[r] >= kUnlimited && (q.lending_limit[r] < kUnlimited)) {
        err(p + ".lendingLimit." + cfg.resources[r], "set without a nominal quota for " + cfg.resources[r]);
      }
      if (q.nominal[r] < kUnlimited && q.lending_limit[r] < kUnlimited && q.lending_limit[r] > q.nominal[r]) {
        err(p + ".lendingLimit." + cfg.resources[r], "above the nominal quota (" + std::to_string(q.nominal[r]) + ")");
      }
    }
    cfg.queues.push_back(std::move(q));
  }
  // A former name is no queue's name and no other queue's former name (Find must be unambiguous).
  std::map<std::string, std::string> former;  // former name -> where it is first listed
  for (size_t i = 0; i < cfg.queues.size(); ++i) {
    for (size_t n = 0; n < cfg.queues[i].former_names.size(); ++n) {
      const std::string& name = cfg.queues[i].former_names[n];
      const std::string at = "queues[" + std::to_string(i) + "].formerNames[" + std::to_string(n) + "]";
      if (auto q = index.find(name); q != index.end()) {
        err(at, "\"" + name + "\" is the name of queues[" + std::to_string(q->second) + "]");
      } else if (auto [it, fresh] = former.emplace(name, at); !fresh) {
        err(at, "\"" + name + "\" is listed already (" + it->second + ")");
      }
    }
  }
  // Parents exist; no cycles; children's nominal fits in the parent's.
  for (size_t i = 0; i < cfg.queues.size(); ++i) {
    const auto& q = cfg.queues[i];
    if (q.parent.empty()) continue;
    const std::string p = "queues[" + std::to_string(i) + "].parent";
    if (!index.count(q.parent)) {
      err(p, "unknown parent \"" + q.parent + "\"");
      continue;
    }
    std::set<std::string> seen{q.name};
    std::string chain = q.name;
    for (std::string cur = q.parent; !cur.empty();) {
      chain += " -> " + cur;
      if (!seen.insert(cur).second) {
        err(p, "cycle: " + chain);
        break;
      }
      auto it = index.find(cur);
      if (it == index.end()) break;
      cur = cfg.queues[it->second].parent;
    }
  }
  for (size_t i = 0; i < cfg.queues.size(); ++i) {
    const auto& parent = cfg.queues[i];
    if (parent.name.empty()) continue;
    for (size_t r = 0; r < cfg.resources.size(); ++r) {
      if (parent.nominal[r] >= kUnlimited) continue;
      int64_t sum = 0;
      std::string kids;
      for (const auto& c : cfg.queues) {
        if (c.parent == parent.name && c.nominal[r] < kUnlimited) {
          sum += c.nominal[r];
          kids += (kids.empty() ? "" : ", ") + c.name;
        }
      }
      if (sum > parent.nominal[r]) {
        err("queues[" + std::to_string(i) + "].nominal." + cfg.resources[r],
            "children (" + kids + ") have " + std::to_string(sum) + " in total, above this queue's " +
                std::to_string(parent.nominal[r]));
      }
    }
  }
  return cfg;
}

}  // namespace tidal
