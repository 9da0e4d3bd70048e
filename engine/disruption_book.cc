// DisruptionBook (disruption_book.h). Threading: under Engine::mu_.
#include "engine/disruption_book.h"

#include <algorithm>

namespace tidal {

std::string_view DisruptionCauseName(DisruptionCause c) {
  const auto i = static_cast<size_t>(c);
  return i < std::size(kDisruptionCauses) ? kDisruptionCauses[i] : "unknown";
}

double DisruptionRecord::LostGpuSeconds() const {
  if (evicted_s <= 0) return 0;
  return static_cast<double>(gpus) * static_cast<double>(std::max<int64_t>(0, evicted_s - at_risk_since_s));
}

bool DisruptionBook::Open(DisruptionRecord r) {
  if (r.id.empty() || open_.count(r.id) > 0) return false;
  r.deadline_s = r.opened_s + std::max<int64_t>(0, r.notice_s);
  r.pods_at_open = r.pods.size();
  for (const auto& p : r.pods) {
    // A pod in another open disruption stays there (one disruption per workload, and a pod
    // belongs to one workload; this guards a regrouped pod).
    if (!by_pod_.count(p.uid)) by_pod_[p.uid] = r.id;
  }
  std::string id = r.id;
  open_.emplace(std::move(id), std::move(r));
  return true;
}

bool DisruptionBook::Checkpointed(const std::string& uid, int64_t at_s, int64_t now_s) {
  if (at_s > now_s + kCheckpointSkewS) return false;
  auto p = by_pod_.find(uid);
  if (p == by_pod_.end()) return true;
  auto r = open_.find(p->second);
  if (r == open_.end()) return true;
  DisruptionRecord& d = r->second;
  if (d.evicted_s > 0 && at_s > d.evicted_s) return true;  // after the eviction: saves nothing of this run
  if (at_s > d.at_risk_since_s) d.at_risk_since_s = at_s;
  if (at_s >= d.opened_s && d.notice_s > 0) d.acknowledged = true;
  return true;
}

std::vector<DisruptionAction> DisruptionBook::Due(FrontDoor door, int64_t now_s) {
  std::vector<DisruptionAction> out;
  for (auto& [id, d] : open_) {
    if (d.door != door || d.pods.empty()) continue;
    DisruptionAction a;
    a.id = id;
    a.cause = std::string(DisruptionCauseName(d.cause));
    a.pods = d.pods;
    a.reason = d.reason;
    if (d.notice_s > 0 && !d.acknowledged && now_s < d.deadline_s && d.evicted_s == 0) {
      a.kind = DisruptionAction::Kind::kNotice;
      a.deadline_unix = d.deadline_s;
    } else {
      a.kind = DisruptionAction::Kind::kEvict;
      if (d.evicted_s == 0) d.evicted_s = now_s;
    }
    out.push_back(std::move(a));
  }
  return out;
}

void DisruptionBook::Evicted(const std::string& uid, int64_t now_s) {
  auto p = by_pod_.find(uid);
  if (p == by_pod_.end()) return;
  auto r = open_.find(p->second);
  if (r != open_.end() && r->second.evicted_s == 0) r->second.evicted_s = now_s;
}

std::optional<DisruptionRecord> DisruptionBook::PodGone(const std::string& uid) {
  auto p = by_pod_.find(uid);
  if (p == by_pod_.end()) return std::nullopt;
  auto r = open_.find(p->second);
  by_pod_.erase(p);
  if (r == open_.end()) return std::nullopt;
  auto& pods = r->second.pods;
  pods.erase(std::remove_if(pods.begin(), pods.end(), [&](const PodRefInfo& x) { return x.uid == uid; }), pods.end());
  if (!pods.empty()) return std::nullopt;
  DisruptionRecord done = std::move(r->second);
  open_.erase(r);
  return done;
}

bool DisruptionBook::Cancel(const std::string& id) {
  auto r = open_.find(id);
  if (r == open_.end()) return false;
  for (const auto& p : r->second.pods) {
    if (auto b = by_pod_.find(p.uid); b != by_pod_.end() && b->second == id) by_pod_.erase(b);
  }
  open_.erase(r);
  return true;
}

std::vector<const DisruptionRecord*> DisruptionBook::All() const {
  std::vector<const DisruptionRecord*> out;
  out.reserve(open_.size());
  for (const auto& [id, r] : open_) out.push_back(&r);
  return out;
}

const DisruptionRecord* DisruptionBook::Find(const std::string& id) const {
  auto r = open_.find(id);
  return r == open_.end() ? nullptr : &r->second;
}

const DisruptionRecord* DisruptionBook::ForPod(const std::string& uid) const {
  auto p = by_pod_.find(uid);
  return p == by_pod_.end() ? nullptr : Find(p->second);
}

}  // namespace tidal
