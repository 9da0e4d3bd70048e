// DoorLeases: one holder per front door. The first message of a Sync stream claims its door's
// lease for the stream's holder; a second claimant of the same door is refused while the lease is
// held, so two shims or two adapters on one door can never wipe each other's objects with their
// resyncs. A lease is held while its stream is open, and for ttl after the stream closes when the
// holder is named (the same holder may come back at once: an adapter restarting on its host; a
// different one waits until the old holder's fence has surely lapsed). Admit is fenced by it.
//
// Replicas. deploy/base runs two replicas, each a tidal-scheduler and its own engine, with one
// scheduler lease. Only the engine whose scheduler leads binds pods, so only it may admit Slurm
// jobs: on a standby's engine they would be unknown to the leader's (which could bind pods onto
// the same GPUs) and charged to a second ledger. The Kubernetes door says whether its scheduler
// leads (SetLeadership, from SyncRequest.leadership); the Slurm door is served while it does (or
// while leader election is off), and a Slurm lease taken in one leading period ends with it: a
// stream or an Admit of that lease is refused once the replica stood by, even for a moment
// (StreamServed), so the adapter resyncs wherever it goes next. While the Kubernetes door has not
// said (no stream yet, or its stream closed), the Slurm door waits when frontDoors expects
// Kubernetes (ExpectKubernetes): unknown is never "leading".
//
// Threading: internally locked; any gRPC thread may call. Times are caller-supplied (ms).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "core/api/status.h"
#include "core/api/workload.h"

namespace tidal {

class DoorLeases {
 public:
  // Claims `door` for `holder` on a new stream; returns a token for Release, or an error naming the
  // current holder and until when it holds the door.
  StatusOr<uint64_t> Acquire(FrontDoor door, const std::string& holder, int64_t ttl_ms, int64_t now_ms);
  // The stream with `token` closed: the lease lapses now (anonymous holder) or after its ttl.
  void Release(FrontDoor door, uint64_t token, int64_t now_ms);
  // Is `holder` the door's current holder (stream open, or closed under ttl ago), and is the door
  // served here?
  bool Holds(FrontDoor door, const std::string& holder, int64_t now_ms);

  // --- which doors this replica serves
  // The Kubernetes door's news: leader election on or off, leading until then (0: standing by).
  void SetLeadership(bool election, int64_t leading_until_ms, int64_t now_ms);
  void ForgetLeadership();  // the Kubernetes door's stream closed: unknown again
  // frontDoors names kubernetes: while its leadership is unknown, the Slurm door waits for it.
  void ExpectKubernetes(bool expected);
  // "" when `door` is served here now, else why not (for refusals and explain).
  std::string NotServed(FrontDoor door, int64_t now_ms);
  // This replica's scheduler leads now (or leader election is off; or no scheduler will ever say:
  // a Slurm-only engine without frontDoors naming kubernetes): tidal_engine_leading.
  bool Leading(int64_t now_ms);
  // The stream holding `token` may go on: the door has been served here without a break since
  // the stream took its lease.
  bool StreamServed(FrontDoor door, uint64_t token, int64_t now_ms);

 private:
  std::string NotServedLocked(FrontDoor door, int64_t now_ms);
  bool ServedSinceLocked(FrontDoor door, uint64_t period, int64_t now_ms);
  struct Lease {
    std::string holder;
    uint64_t token = 0;   // the open stream's token; 0 = no stream open
    int64_t until_ms = 0; // after the stream closed: held until then
    int64_t ttl_ms = 0;
    uint64_t period = 0;  // the leading period it was taken in
  };
  std::mutex mu_;
  std::map<FrontDoor, Lease> leases_;
  uint64_t next_token_ = 1;
  // The Kubernetes door's leadership: unknown until it says; `period` counts the breaks in
  // leading (each standby, expiry or unknown spell ends one), so a lease knows its own.
  bool leadership_known_ = false;
  bool election_ = false;
  int64_t leading_until_ms_ = 0;
  bool kubernetes_expected_ = false;
  bool served_ = true;   // the Slurm door at the last look (a false look ends the period)
  uint64_t period_ = 1;
};

}  // namespace tidal
