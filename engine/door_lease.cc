// DoorLeases (see door_lease.h). Threading: every method takes mu_.
#include "engine/door_lease.h"

namespace tidal {

StatusOr<uint64_t> DoorLeases::Acquire(FrontDoor door, const std::string& holder, int64_t ttl_ms, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Lease& l = leases_[door];
  const bool open = l.token != 0;
  const bool lingering = !open && !l.holder.empty() && now_ms < l.until_ms;
  if (open || (lingering && l.holder != holder)) {
    std::string who = l.holder.empty() ? std::string("an anonymous holder") : "holder \"" + l.holder + "\"";
    return Status::Error("front door " + std::string(FrontDoorName(door)) + " is held by " + who +
                         (open ? " (its Sync stream is open)"
                               : " (its stream closed; the lease lapses in " + std::to_string(l.until_ms - now_ms) + " ms)") +
                         "; refusing " + (holder.empty() ? std::string("an anonymous holder") : "\"" + holder + "\""));
  }
  l.holder = holder;
  l.token = next_token_++;
  l.ttl_ms = ttl_ms > 0 ? ttl_ms : 15000;
  l.until_ms = 0;
  return l.token;
}

void DoorLeases::Release(FrontDoor door, uint64_t token, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(door);
  if (it == leases_.end() || it->second.token != token) return;
  it->second.token = 0;
  it->second.until_ms = it->second.holder.empty() ? now_ms : now_ms + it->second.ttl_ms;
}

bool DoorLeases::Holds(FrontDoor door, const std::string& holder, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(door);
  if (it == leases_.end() || it->second.holder != holder) return false;
  return it->second.token != 0 || now_ms < it->second.until_ms;
}

}  // namespace tidal
