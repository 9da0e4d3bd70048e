// DoorLeases: one holder per front door. The first message of a Sync stream claims its door's
// lease for the stream's holder; a second claimant of the same door is refused while the lease is
// held, so two shims or two adapters on one door can never wipe each other's objects with their
// resyncs. A lease is held while its stream is open, and for ttl after the stream closes when the
// holder is named (the same holder may come back at once: an adapter restarting on its host; a
// different one waits until the old holder's fence has surely lapsed). Admit is fenced by it.
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
  // Is `holder` the door's current holder (stream open, or closed under ttl ago)?
  bool Holds(FrontDoor door, const std::string& holder, int64_t now_ms);

 private:
  struct Lease {
    std::string holder;
    uint64_t token = 0;   // the open stream's token; 0 = no stream open
    int64_t until_ms = 0; // after the stream closed: held until then
    int64_t ttl_ms = 0;
  };
  std::mutex mu_;
  std::map<FrontDoor, Lease> leases_;
  uint64_t next_token_ = 1;
};

}  // namespace tidal
