// RefreshWorker (engine/refresh_worker.h): one run per request, requests made while a run is in
// progress folded into one more run, WaitIdle until nothing is asked for or running, Stop joins.
// Threading: the test's thread and the worker's; the work blocks on a promise the test keeps.
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "engine/refresh_worker.h"

namespace tidal {
namespace {

TEST(RefreshWorkerTest, RequestsDuringARunFoldIntoOneMoreRun) {
  std::atomic<int> runs{0};
  std::promise<void> first_started, release_first;
  std::shared_future<void> released = release_first.get_future().share();
  RefreshWorker w;
  w.WaitIdle();  // not started: returns at once
  w.Start([&] {
    if (runs.fetch_add(1) == 0) {
      first_started.set_value();
      released.wait();
    }
  });
  ASSERT_TRUE(w.started());
  w.Request();
  first_started.get_future().wait();  // the first run is in progress
  for (int i = 0; i < 3; ++i) w.Request();
  release_first.set_value();
  w.WaitIdle();
  EXPECT_EQ(runs.load(), 2) << "three requests during the first run make one more run";
  w.Request();
  w.WaitIdle();
  EXPECT_EQ(runs.load(), 3);
  w.Stop();
  EXPECT_FALSE(w.started());
  w.Request();  // stopped: nothing runs
  w.WaitIdle();
  EXPECT_EQ(runs.load(), 3);
}

TEST(RefreshWorkerTest, StopLetsTheRunInProgressFinish) {
  std::atomic<bool> finished{false};
  std::promise<void> started;
  RefreshWorker w;
  w.Start([&] {
    started.set_value();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    finished = true;
  });
  w.Request();
  started.get_future().wait();
  w.Stop();
  EXPECT_TRUE(finished.load());
}

}  // namespace
}  // namespace tidal
