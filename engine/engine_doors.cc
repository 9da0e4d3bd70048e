// Engine: the front doors' nodes across engine restarts, and the gate on them until each door has
// resynced since the start.
//
// Why. A restarted engine knows nothing until each door's snapshot is in, and the doors do not
// resync at once (the shim's snapshot came 0.3-0.9 s before tidal-slurm's in the e2e case
// slurm-chaos). A node both doors report is one node: planned from one door's snapshot alone, it
// looks free where the other door's work runs, and pods were bound onto GPUs Slurm jobs held
// (docs/benchmarks-resilience.md, "Soak and chaos"). Unknown is never free:
//   - the engine remembers, per door, the nodes that door reported (door_memory_), and writes
//     them into the state file beside the ledger ("doorNodes": {"kubernetes": [...], "slurm": [...]});
//     main.cc saves within about a second of a change (DoorMemoryVersion);
//   - after a start, until door D completes its first resync, every node remembered as D's takes
//     no new work (no plan, Admit, reservation or preemption: ToNode makes it kDraining), and a
//     gang that does not fit says why (DoorGateNoteLocked);
//   - a door the config expects (frontDoors) whose nodes the state file does not name gates every
//     node: nothing is known of where its work runs;
//   - when D's snapshot ends its gate lifts (state_ rebuilt; Kubernetes pods refused meanwhile are
//     handed back through TakeActivations when Slurm's gate lifts);
//   - a replica that stands by does not serve the Slurm door (server/DoorLeases, SetDoorServed): what
//     it knew of Slurm's work goes stale, so its Slurm nodes are gated again until the door resyncs
//     here, and the door is not reported as awaited meanwhile (nothing is wrong on a standby).
// The cost: after an engine restart, scheduling on a door's nodes waits for that door's adapter;
// one that stays down keeps them gated (docs/operations.md, "After an engine restart").
//
// Threading: every *Locked function runs under mu_; DoorMemoryVersion reads an atomic.
#include <optional>
#include <set>
#include <string>

#include "core/api/limits.h"
#include "engine/engine.h"

namespace tidal {

namespace {

constexpr const char* kDoorNodesKey = "doorNodes";
constexpr size_t kNoteNodes = 3;  // nodes a note names before "and N more"

std::optional<FrontDoor> DoorNamed(const std::string& name) {
  for (FrontDoor d : {FrontDoor::kKubernetes, FrontDoor::kSlurm}) {
    if (FrontDoorName(d) == name) return d;
  }
  return std::nullopt;
}

std::string WaitingFor(FrontDoor d, bool stood_by) {
  return "waiting for the " + std::string(FrontDoorName(d)) + " door's first sync since " +
         (stood_by ? "this replica stood by (only the leading replica serves it)" : "the engine started");
}

}  // namespace

bool Engine::DoorAwaitedLocked(int door) const {
  const DoorMemory& m = door_memory_[static_cast<size_t>(door)];
  if (m.resynced) return false;
  return m.known ? !m.nodes.empty() : m.expected;
}

int Engine::GatingDoorLocked(const std::string& node) const {
  for (int d = 0; d < 2; ++d) {
    if (!DoorAwaitedLocked(d)) continue;
    const DoorMemory& m = door_memory_[static_cast<size_t>(d)];
    if (!m.known || m.nodes.count(node)) return d;
  }
  return -1;
}

std::string Engine::DoorGateNoteLocked() const {
  std::string out;
  for (int d = 0; d < 2; ++d) {
    if (!DoorAwaitedLocked(d)) continue;
    const DoorMemory& m = door_memory_[static_cast<size_t>(d)];
    const FrontDoor door = static_cast<FrontDoor>(d);
    std::string part;
    if (!m.known) {
      part = "every node: " + WaitingFor(door, m.stood_by) + " (frontDoors expects it; where its work runs is unknown)";
    } else {
      // Only the nodes the engine sees now (the others take no work anyway).
      size_t gated = 0;
      for (const auto& name : m.nodes) {
        if (!nodes_.count(name)) continue;
        if (gated++ < kNoteNodes) part += (part.empty() ? "" : ", ") + name;
      }
      if (gated == 0) continue;
      if (gated > kNoteNodes) part += " and " + std::to_string(gated - kNoteNodes) + " more";
      part += ": " + WaitingFor(door, m.stood_by) + " (its work there is unknown)";
    }
    out += (out.empty() ? "" : "; ") + part;
  }
  return out;
}

void Engine::RememberDoorNodeLocked(FrontDoor door, const std::string& node, bool reported) {
  DoorMemory& m = door_memory_[static_cast<size_t>(door)];
  const bool changed = reported ? m.nodes.insert(node).second : m.nodes.erase(node) > 0;
  if (!changed) return;
  door_memory_version_.fetch_add(1, std::memory_order_relaxed);
  if (!m.resynced) state_.reset();  // the node's gate may have changed
}

void Engine::DoorResyncedLocked(FrontDoor door) {
  const int d = static_cast<int>(door);
  DoorMemory& m = door_memory_[static_cast<size_t>(d)];
  const bool was_awaited = DoorAwaitedLocked(d);
  std::set<std::string> now;
  for (const auto& [name, recs] : node_doors_) {
    if (recs[static_cast<size_t>(d)]) now.insert(name);
  }
  if (!m.known || now != m.nodes) {
    m.nodes = std::move(now);
    m.known = true;
    door_memory_version_.fetch_add(1, std::memory_order_relaxed);
  }
  m.resynced = true;
  m.stood_by = false;
  if (was_awaited) LiftDoorGateLocked(door);
}

void Engine::LiftDoorGateLocked(FrontDoor door) {
  state_.reset();      // the gated nodes take work again
  book_stale_ = true;  // reservations were made without them
  if (door == FrontDoor::kKubernetes) return;
  // Kubernetes pods refused while the gate held are handed back for another try (the shim
  // activates them), as the shim retries its backlog after its own resync.
  ActivateKubernetesPendingLocked();
}

void Engine::ActivateKubernetesPendingLocked() {
  for (const auto& [queue, heads] : pending_by_queue_) {
    for (const auto& h : heads) {
      if (h.ptr->door == FrontDoor::kKubernetes) ActivatePendingLocked(*h.ptr);
    }
  }
}

void Engine::ActivatePendingLocked(const Gang& g) {
  auto& out = activations_[static_cast<int>(FrontDoor::kKubernetes)];
  for (const auto& uid : g.pods) {
    const PodInfo& p = pods_.at(uid);
    if (p.node_name.empty() && !p.terminating && p.phase == PodPhase::kPending) out.push_back({p.uid, p.ns, p.name});
  }
}

std::vector<std::string> Engine::AwaitedDoorNamesLocked() const {
  std::vector<std::string> out;
  for (int d = 0; d < 2; ++d) {
    if (DoorReportedAwaitedLocked(d)) out.emplace_back(FrontDoorName(static_cast<FrontDoor>(d)));
  }
  return out;
}

bool Engine::DoorReportedAwaitedLocked(int door) const {
  return door_memory_[static_cast<size_t>(door)].served && DoorAwaitedLocked(door);
}

void Engine::SetDoorServed(FrontDoor door, bool served) {
  std::lock_guard<std::mutex> lock(mu_);
  DoorMemory& m = door_memory_[static_cast<size_t>(door)];
  if (m.served == served) return;
  m.served = served;
  if (served || !m.resynced) return;
  // What this replica knew of the door's work is stale from now on (the leading replica admits
  // its jobs): its nodes take no new work here until the door resyncs here again.
  m.resynced = false;
  m.stood_by = true;
  state_.reset();
}

void Engine::SaveDoorMemoryLocked(nlohmann::json& state) const {
  nlohmann::json doors = nlohmann::json::object();
  for (int d = 0; d < 2; ++d) {
    const DoorMemory& m = door_memory_[static_cast<size_t>(d)];
    // A door never heard from is left out: unknown, not "no nodes".
    if (m.known || !m.nodes.empty()) doors[std::string(FrontDoorName(static_cast<FrontDoor>(d)))] = m.nodes;
  }
  state[kDoorNodesKey] = std::move(doors);
}

Status Engine::LoadDoorMemoryLocked(const nlohmann::json& state) {
  auto it = state.find(kDoorNodesKey);
  if (it == state.end()) return Status::Ok();  // an older engine's file: nothing remembered
  if (!it->is_object()) return Status::Error(std::string(kDoorNodesKey) + ": expected {door: [node, ...]}; ignored");
  Status out;
  auto problem = [&out](std::string why) {
    if (out.ok()) {
      out = Status::Error(std::move(why));
    } else {
      out.AddReason(std::move(why));
    }
  };
  for (const auto& [name, nodes] : it->items()) {
    const std::string at = std::string(kDoorNodesKey) + "." + name.substr(0, 64);
    const auto door = DoorNamed(name);
    if (!door) {
      problem(at + ": unknown front door (accepted: kubernetes, slurm); ignored");
      continue;
    }
    if (!nodes.is_array()) {
      problem(at + ": expected a list of node names; ignored");
      continue;
    }
    DoorMemory& m = door_memory_[static_cast<size_t>(*door)];
    size_t skipped = 0;
    for (const auto& n : nodes) {
      const std::string* node = n.is_string() ? &n.get_ref<const std::string&>() : nullptr;
      if (node != nullptr && !node->empty() && node->size() <= limits::kMaxNameBytes) {
        m.nodes.insert(*node);
      } else {
        ++skipped;
      }
    }
    // The names that are valid are kept: gating a node too many is safe, one too few is not.
    if (skipped > 0) problem(at + ": " + std::to_string(skipped) + " entries that are not node names skipped");
    m.known = true;
  }
  state_.reset();  // the loaded nodes are gated until their doors resync
  return out;
}

}  // namespace tidal
