// Reaper: see reaper.h.
#include "engine/reaper.h"

#include <system_error>
#include <utility>

namespace tidal {

Reaper::~Reaper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  queue_.clear();  // none left unless the worker never started (then nothing was dropped)
}

void Reaper::Drop(std::shared_ptr<void> garbage) {
  if (garbage == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!worker_.joinable() && !no_thread_) {
      try {
        worker_ = std::thread([this] { Run(); });
      } catch (const std::system_error&) {
        no_thread_ = true;  // no thread to be had: every Drop frees inline
      }
    }
    if (worker_.joinable() && queue_.size() < kMaxQueued) queue_.push_back(std::move(garbage));
  }
  cv_.notify_one();
  garbage.reset();  // not queued (full, or no worker): freed here, after the lock
}

void Reaper::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

void Reaper::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and everything was freed
    std::shared_ptr<void> next = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    next.reset();  // its destructor runs here, without the lock
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace tidal
