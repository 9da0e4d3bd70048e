// RefreshWorker: a thread that runs one piece of work each time it is asked; requests made while
// the work runs are folded into one more run after it. The engine's refresher thread
// (EngineConfig::refresh_in_background, engine_refresh.cc) is one.
//
// Threading: Request, WaitIdle and Stop may be called from any thread, Request also while the
// caller holds locks the work takes (it only takes the worker's own mutex, which the worker never
// holds while running the work). Start and Stop are called by the owner (not concurrently).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace tidal {

class RefreshWorker {
 public:
  RefreshWorker() = default;
  RefreshWorker(const RefreshWorker&) = delete;
  RefreshWorker& operator=(const RefreshWorker&) = delete;
  ~RefreshWorker() { Stop(); }

  void Start(std::function<void()> work);
  // Lets the work in progress finish, then joins the thread (a no-op when not started).
  void Stop();
  bool started() const { return thread_.joinable(); }
  void Request();
  // Until nothing is asked for or running (returns at once when not started).
  void WaitIdle();

 private:
  void Loop();
  std::function<void()> work_;
  std::thread thread_;
  std::mutex mu_;  // guards the three below
  std::condition_variable cv_;
  bool wanted_ = false, busy_ = false, stop_ = false;
};

}  // namespace tidal
