// RefreshWorker (refresh_worker.h has its threading).
#include "engine/refresh_worker.h"

#include <utility>

namespace tidal {

void RefreshWorker::Start(std::function<void()> work) {
  if (thread_.joinable()) return;
  work_ = std::move(work);
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void RefreshWorker::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void RefreshWorker::Request() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wanted_ = true;
  }
  cv_.notify_all();
}

void RefreshWorker::WaitIdle() {
  if (!thread_.joinable()) return;
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return stop_ || (!wanted_ && !busy_); });
}

void RefreshWorker::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || wanted_; });
    if (stop_) return;
    wanted_ = false;
    busy_ = true;
    lock.unlock();
    work_();  // never under mu_: the work may take locks whose holders call Request
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace tidal
