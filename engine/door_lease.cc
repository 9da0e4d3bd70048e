// DoorLeases (see door_lease.h). Threading: every method takes mu_.
#include "engine/door_lease.h"

namespace tidal {

StatusOr<uint64_t> DoorLeases::Acquire(FrontDoor door, const std::string& holder, int64_t ttl_ms, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::string why = NotServedLocked(door, now_ms); !why.empty()) return Status::Error(std::move(why));
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
  l.period = period_;
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
  if (it->second.token == 0 && now_ms >= it->second.until_ms) return false;
  return ServedSinceLocked(door, it->second.period, now_ms);
}

bool DoorLeases::StreamServed(FrontDoor door, uint64_t token, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(door);
  if (it == leases_.end() || it->second.token != token) return false;
  return ServedSinceLocked(door, it->second.period, now_ms);
}

void DoorLeases::SetLeadership(bool election, int64_t leading_until_ms, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  // A leading spell that lapsed unseen (the last news' deadline passed before this news) was a
  // break even if nobody looked meanwhile.
  if (leadership_known_ && election_ && leading_until_ms_ <= now_ms && served_) {
    served_ = false;
    ++period_;
  }
  leadership_known_ = true;
  election_ = election;
  leading_until_ms_ = leading_until_ms;
  (void)NotServedLocked(FrontDoor::kSlurm, now_ms);  // records a break now
}

void DoorLeases::ForgetLeadership() {
  std::lock_guard<std::mutex> lock(mu_);
  leadership_known_ = false;
  (void)NotServedLocked(FrontDoor::kSlurm, 0);  // records a break when unknown means not served
}

void DoorLeases::ExpectKubernetes(bool expected) {
  std::lock_guard<std::mutex> lock(mu_);
  kubernetes_expected_ = expected;
}

std::string DoorLeases::NotServed(FrontDoor door, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  return NotServedLocked(door, now_ms);
}

bool DoorLeases::Leading(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  // The same rule as the Slurm door's: an engine no scheduler will speak to (Slurm only) leads.
  return NotServedLocked(FrontDoor::kSlurm, now_ms).empty();
}

std::string DoorLeases::NotServedLocked(FrontDoor door, int64_t now_ms) {
  if (door == FrontDoor::kKubernetes) return "";
  std::string why;
  if (!leadership_known_) {
    // An engine whose scheduler never said (an older shim, or none at all) serves Slurm unless
    // frontDoors expects Kubernetes; one that stood by keeps waiting until it says again.
    if (kubernetes_expected_ || election_) {
      why = "this engine's tidal-scheduler has not said yet whether it leads (frontDoors expects the kubernetes door)";
    }
  } else if (election_ && leading_until_ms_ <= now_ms) {
    why = "this engine's tidal-scheduler stands by (another replica holds the scheduler lease)";
  }
  const bool served = why.empty();
  if (served_ && !served) ++period_;
  served_ = served;
  if (served) return "";
  return "front door " + std::string(FrontDoorName(door)) + " is not served by this engine: " + why +
         "; only the leading replica's engine serves it";
}

bool DoorLeases::ServedSinceLocked(FrontDoor door, uint64_t period, int64_t now_ms) {
  if (!NotServedLocked(door, now_ms).empty()) return false;
  return door == FrontDoor::kKubernetes || period == period_;
}

}  // namespace tidal
