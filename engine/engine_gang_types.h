// The Engine's records of a gang and its plan (engine.h: Engine::Gang, Engine::Plan, Engine::Slot,
// Engine::HeadKey). Plain data; owned by the Engine under its mu_ (engine.h has the threading model).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/api/resources.h"
#include "core/api/workload.h"
#include "engine/engine_types.h"
#include "engine/pod_spec.h"

namespace tidal {

struct EngineSlot {
  std::string node;
  std::string pod_uid;  // "" = not yet claimed by a pod
  bool reserved = false;
};
struct EnginePlan {
  std::vector<EngineSlot> slots;
  Resources per_member;
  std::string queue;
  std::string domain, explanation;
  int64_t created_s = 0;
};
struct EngineGang;
// Queue order of a queue's pending gangs: priority (higher first), submit time, key.
struct GangHeadKey {
  int64_t neg_priority = 0;
  int64_t submitted = 0;
  std::string gang;
  EngineGang* ptr = nullptr;  // the gang itself (gangs_ is node-based; unindexed before it is erased)
  auto operator<=>(const GangHeadKey&) const = default;
};
struct EngineGang {
  std::string key;
  FrontDoor door = FrontDoor::kKubernetes;  // its pods' door (a gang never mixes doors)
  bool start_observed = false;
  std::set<std::string> pods;  // uids of its pods (pending or bound)
  std::optional<EnginePlan> plan;
  std::string last_reason;
  std::string rejected_by;  // its last decision was Rejected: the refusing plugin ("" otherwise; engine/rollout.h)
  bool wants_room = false;  // its last try found no placement (room), not quota or never (lending)
  // Nodes the front door's own filters refused for this gang (NodeRefused): node -> excluded
  // until (engine clock, s). Planned around until then, so a refused node is never planned twice.
  std::map<std::string, int64_t> excluded;
  // Start times (by pod uid) of its members that ended Succeeded and left (the Kubernetes door
  // deletes a finished pod; a door's resync may name such a member again) that are of this run:
  // started no earlier than a still-pending member was created (Summary::finished).
  // ReindexGangLocked drops the others, and all of them once none is pending.
  std::map<std::string, int64_t> finished_starts;
  // Its entry in pending_by_queue_ (engine_plan.cc), while it has pending pods.
  std::optional<GangHeadKey> head;
  std::string head_queue;
  // What its pods make, kept by ReindexGangLocked on every change to them, so planning walks no
  // member: counts, the pending members' largest request, highest priority and earliest
  // submit, the nodes every pending member may use (their node constraints ANDed:
  // engine_gang_constraints.h), the exclusive topology of its first member not using capacity,
  // and the spec of its first pod (a gang's pods share a template).
  struct Summary {
    int32_t bound = 0, pending = 0;
    // Its pods that are no member of its run: being deleted before they succeeded, or Failed
    // (ReindexGangLocked). Neither bound nor pending; CheckPod does not count them as present.
    int32_t gone = 0;
    // Its pending pods held back by spec.schedulingGates (kSchedulingGates): not placeable yet,
    // neither pending nor present to CheckPod; the first one's name and gate, for its message.
    int32_t gated = 0;
    std::string gated_example;
    // Members of this run that already ended Succeeded, here or gone (finished_starts): bound,
    // and started no earlier than its earliest pending member was created (a gang that an earlier
    // scheduler bound in part, whose bound members finished before the rest were placed). They
    // count as started members: the rest is planned without them. Succeeded pods of an earlier run
    // of the same gang name started before this run's pods existed and do not count; Failed
    // members never do (they are replaced).
    int32_t finished = 0;
    Resources per_member;
    int32_t priority = INT32_MIN;
    int64_t submitted = INT64_MAX;
    std::shared_ptr<const NodeConstraints> constraints;
    std::string constraints_sig;
    std::shared_ptr<const StatusOr<PodSchedulingSpec>> spec;
    // Set when its running or pending members disagree on the gang's size, minimum or queue
    // (hand-made pods, an annotation edited on some of them): the field and the two values, for
    // CheckPod and PlanPod to refuse it with (plugin "podspec"); such a gang is never planned.
    std::string conflict;
    ExclusiveTopology exclusive;  // of its first pod not using capacity (engine_exclusive.cc)
    // Its workload and Admit's shape key, built with the summary when nothing makes them vary
    // between changes (no refused nodes, no exclusive topology, a valid spec): `cached`. Never
    // changed once built (a change builds a new one): the refresher thread may hold it.
    bool cached = false;
    std::shared_ptr<const Workload> workload;
    std::string shape;
  } summary;
};

// Why gang `key` (of `gang_min` members) is not complete yet: "gang KEY: N of MIN members exist",
// with the members held back by scheduling gates; "" once enough exist. For CheckPod's Wait and
// explain's last line while the gang has no other. g: nullptr when no pod of it is known.
std::string GangIncompleteWhy(const std::string& key, const EngineGang* g, int32_t gang_min);

}  // namespace tidal
