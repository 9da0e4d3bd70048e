// Scheduler::SortQueue over workload pointers (the cycle's queue order): the plugin's SortKey
// packed into two words when every key fits, the keys as they are when one does not, Less when
// the plugin has no key; always the same total order as (Less, then id).
// Threading: single-threaded.
#include <algorithm>
#include <climits>
#include <random>

#include <gtest/gtest.h>

#include "core/framework/radix_sort.h"
#include "plugins/registry.h"
#include "test/support/builders.h"

namespace tidal {
namespace {

using testing::MakeGang;

// Orders by (priority, -members, submit time): keys as wide as int64 can go, so some do not pack.
class WideKeySort final : public QueueSortPlugin {
 public:
  explicit WideKeySort(bool keyed) : keyed_(keyed) {}
  std::string_view Name() const override { return "widekey"; }
  bool Less(const Workload& a, const Workload& b) const override { return Key(a) < Key(b); }
  bool SortKey(const Workload& w, std::array<int64_t, 3>* key) const override {
    if (!keyed_) return false;
    *key = Key(w);
    return true;
  }

 private:
  static std::array<int64_t, 3> Key(const Workload& w) {
    return {static_cast<int64_t>(w.priority) * (w.members > 4 ? int64_t{1} << 20 : 1), -static_cast<int64_t>(w.members),
            w.submit_time_s};
  }
  bool keyed_;
};

Scheduler WideKeyScheduler(bool keyed) {
  Registry r = plugins::DefaultRegistry();
  EXPECT_TRUE(r.Register("widekey", [keyed](const nlohmann::json&, const PluginContext&) {
                 return StatusOr<std::unique_ptr<Plugin>>(std::make_unique<WideKeySort>(keyed));
               }).ok());
  ProfileSpec spec;
  spec.plugins = {{"widekey", 0, nlohmann::json::object()}, {"gang", 0, nlohmann::json::object()},
                  {"topology", 1, nlohmann::json::object()}};
  return Scheduler(std::move(Profile::Build(spec, r, PluginContext{TopologyLevels::Default()})).value());
}

// `wide`: priorities up to INT32_MAX, so that keys times 2^20 leave int32 (the unpacked path).
std::vector<Workload> RandomQueue(std::mt19937& rng, bool wide, int max_size = 300) {
  std::vector<Workload> q;
  const int n = 1 + static_cast<int>(rng() % static_cast<uint32_t>(max_size));
  for (int i = 0; i < n; ++i) {
    const int32_t prio = wide && rng() % 8 == 0 ? static_cast<int32_t>(rng() % 2 ? INT32_MAX - rng() % 3 : INT32_MIN + rng() % 3)
                                                : static_cast<int32_t>(rng() % 5) - 2;
    const int64_t submit = static_cast<int64_t>(rng() % 7) - 3 + (rng() % 16 == 0 ? INT64_MIN / 2 : 0);
    q.push_back(MakeGang("w" + std::to_string(rng() % 1000) + "-" + std::to_string(i))
                    .Members(1 + static_cast<int32_t>(rng() % 8))
                    .Priority(prio)
                    .Submitted(submit)
                    .Obj());
  }
  return q;
}

TEST(QueueSortTest, PackedKeysWideKeysAndLessGiveTheOrderOfLessThenId) {
  std::mt19937 rng(17);
  const WideKeySort order(true);
  for (int round = 0; round < 200; ++round) {
    const bool wide = round % 2 == 1, keyed = round % 3 != 0;
    const Scheduler sched = WideKeyScheduler(keyed);
    // Every fifth queue is longer than kRadixSortMin: the packed keys' radix sort.
    std::vector<Workload> q = RandomQueue(rng, wide, round % 5 == 4 ? 5000 : 300);
    std::vector<const Workload*> got;
    for (const auto& w : q) got.push_back(&w);
    std::shuffle(got.begin(), got.end(), rng);
    sched.SortQueue(got);
    std::vector<const Workload*> want = got;
    std::sort(want.begin(), want.end(), [&](const Workload* a, const Workload* b) {
      if (order.Less(*a, *b)) return true;
      if (order.Less(*b, *a)) return false;
      return a->id < b->id;
    });
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i]->id, want[i]->id) << "round " << round << " (wide " << wide << ", keyed " << keyed << ") at " << i;
    }
  }
}

struct HiLo {
  uint64_t hi, lo;
  int seq;  // input position: equal keys keep it (stable)
};

// The radix sort against std::stable_sort, on keys that differ in a few bytes (the queue's case),
// in every byte, in one byte, and not at all; sizes on both sides of kRadixSortMin.
TEST(QueueSortTest, RadixSortHiLoIsAStableSortByHiThenLo) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 60; ++round) {
    const size_t n = round % 3 == 0 ? rng() % kRadixSortMin : kRadixSortMin + rng() % 20000;
    const int kind = round % 5;
    std::vector<HiLo> v;
    for (size_t i = 0; i < n; ++i) {
      HiLo r{rng(), rng(), static_cast<int>(i)};
      if (kind == 1) r = {(rng() % 12) << 32 | (rng() % 4), uint64_t{1} << 63 | (rng() % 5000), static_cast<int>(i)};
      if (kind == 2) r = {7, 9, static_cast<int>(i)};
      if (kind == 4) r = {5, rng() % 200, static_cast<int>(i)};  // one byte differs: an odd number of passes
      if (kind == 3) r = {rng() % 3 == 0 ? ~uint64_t{0} : 0, rng() % 2 == 0 ? ~uint64_t{0} - rng() % 300 : rng() % 300, static_cast<int>(i)};
      v.push_back(r);
    }
    std::vector<HiLo> want = v;
    std::stable_sort(want.begin(), want.end(), [](const HiLo& a, const HiLo& b) { return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo; });
    RadixSortHiLo(v);
    ASSERT_EQ(v.size(), want.size());
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_EQ(v[i].seq, want[i].seq) << "round " << round << " (kind " << kind << ", n " << n << ") at " << i;
    }
  }
}

}  // namespace
}  // namespace tidal
