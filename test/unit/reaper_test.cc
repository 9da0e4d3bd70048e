// Reaper (engine/reaper.h): what is dropped is freed, on the worker thread, by Drain or at the
// latest by the reaper's destruction; nothing is freed twice or leaked.
#include "engine/reaper.h"

#include <atomic>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

namespace tidal {
namespace {

struct Counted {
  Counted(std::atomic<int>* freed, std::atomic<bool>* on_caller) : freed(freed), on_caller(on_caller) {}
  ~Counted() {
    if (std::this_thread::get_id() == caller) on_caller->store(true);
    freed->fetch_add(1);
  }
  std::atomic<int>* freed;
  std::atomic<bool>* on_caller;
  std::thread::id caller = std::this_thread::get_id();
};

TEST(ReaperTest, FreesWhatIsDroppedOnItsOwnThread) {
  std::atomic<int> freed{0};
  std::atomic<bool> on_caller{false};
  Reaper r;
  for (int i = 0; i < 100; ++i) {
    r.Drop(std::make_shared<Counted>(&freed, &on_caller));
    r.Drain();  // one at a time: the queue is never full
  }
  EXPECT_EQ(freed.load(), 100);
  EXPECT_FALSE(on_caller.load());  // not in the caller's Drop
}

TEST(ReaperTest, AFullQueueFreesInline) {
  std::atomic<int> freed{0};
  std::atomic<bool> on_caller{false};
  Reaper r;
  for (int i = 0; i < 1000; ++i) r.Drop(std::make_shared<Counted>(&freed, &on_caller));
  r.Drain();
  EXPECT_EQ(freed.load(), 1000);  // every one, once: queued or inline
}

TEST(ReaperTest, DestructionFreesWhatIsLeft) {
  std::atomic<int> freed{0};
  std::atomic<bool> on_caller{false};
  {
    Reaper r;
    for (int i = 0; i < 1000; ++i) r.Drop(std::make_shared<Counted>(&freed, &on_caller));
  }
  EXPECT_EQ(freed.load(), 1000);
  Reaper unused;  // never dropped into: no thread, nothing to join
  unused.Drop(nullptr);
  unused.Drain();
}

}  // namespace
}  // namespace tidal
