// Reaper: frees what a caller no longer needs on a thread of its own, off the caller's path.
//
// The reservation book's refresh (engine_reservations.cc) runs a dry cycle on a copy of the
// cluster with every bound pod as a timed allocation and a copy of the ledger; at 10,000 nodes
// and 15,000 bound pods freeing those copies took about 34 ms of the PlanPod call that refreshed
// (docs/benchmarks.md, "Event-driven PlanPod"). The caller hands them here instead and returns.
// Nothing decided depends on when they are freed.
//
// Threading: Drop may be called from any thread (the engine calls it under its mutex). One
// worker thread, started on the first Drop, destroys what was handed over, oldest first, at the
// default priority (a lower one would leave the engine's thread waiting on a malloc arena lock the
// worker holds while preempted). At most kMaxQueued wait: past that, Drop frees inline, so a host
// too busy to free in the background does not pile up copies. The
// objects handed over must be referenced by nothing else (the worker runs their destructors
// without any lock of the caller's). The destructor waits for everything handed over to be freed
// and joins the worker: Drain() does the same without stopping it (tests).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace tidal {

class Reaper {
 public:
  Reaper() = default;
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;
  ~Reaper();

  static constexpr size_t kMaxQueued = 2;

  // Takes the last reference to `garbage` and frees it on the worker thread.
  void Drop(std::shared_ptr<void> garbage);
  // Returns once everything dropped before the call was freed.
  void Drain();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;       // work arrived, or stop_
  std::condition_variable idle_cv_;  // the queue emptied and the worker holds nothing
  std::deque<std::shared_ptr<void>> queue_;
  bool busy_ = false;  // the worker is freeing one it took off the queue
  bool stop_ = false;
  bool no_thread_ = false;  // the worker could not be started
  std::thread worker_;
};

}  // namespace tidal
