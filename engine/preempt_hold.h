// PreemptHold: what capacity freed for a preemptor waits for. Its reservation is the engine's
// book_[plan id] (start = when the victims were chosen); the hold records the victims and how far
// their eviction got. Dropped with the reservation (planned, gang gone, plan_ttl_s).
//
// Threading: plain data owned by Engine and guarded by Engine::mu_ (engine.h); no locking here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tidal {

struct PreemptHold {
  struct Victim {
    std::string id;
    std::vector<std::string> uids;
    double lost_gpu_seconds = 0;
    bool counted = false;  // reported evicted (metrics count each victim once)
  };
  std::vector<Victim> victims;
  std::string reason;
  int64_t created_s = 0;
  bool evicted = false;  // a front door reported evictions for it
  // The longest notice a victim got (checkpoint on notice): the gang waits for it, and the hold
  // lasts plan_ttl_s beyond it.
  int64_t notice_s = 0;
  // Some victims are Slurm jobs: tidal-slurm requeues them from its Disruptions poll, not the
  // preemptor's PostFilter, so the gang waits for them even before any eviction is reported.
  bool handed_off = false;
  // The preemptor's pending pods were handed to TakeActivations once every victim had gone (a
  // Slurm job's requeue gives kube-scheduler no event to retry them on, and a pod retried while
  // its victims had notice may sit in kube-scheduler's backoff for up to 10 s after they left).
  bool activated = false;
};

}  // namespace tidal
