// RadixSortHiLo: a stable sort of records by a 128-bit unsigned key, the record's `hi` word first
// and its `lo` word second (LSD radix, one byte per pass). The queue sort's packed keys
// (Scheduler::SortQueue) use it: a comparison sort of 100,000 keys made a quarter of a full cycle;
// this takes one pass to count every byte position and one scatter pass per byte position whose
// byte differs between records (queue ranks, priorities and submit times vary in a few bytes only).
// Small inputs go to std::stable_sort (the same order). Threading: a pure function of its argument.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tidal {

inline constexpr size_t kRadixSortMin = 256;  // below this std::stable_sort is as quick

template <typename T>
void RadixSortHiLo(std::vector<T>& v) {
  const size_t n = v.size();
  if (n < kRadixSortMin) {
    std::stable_sort(v.begin(), v.end(), [](const T& a, const T& b) { return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo; });
    return;
  }
  // Byte d of the key, least significant first: bytes 0-7 of lo, then bytes 0-7 of hi.
  auto digit = [](const T& r, int d) -> size_t {
    const uint64_t word = d < 8 ? r.lo : r.hi;
    return static_cast<size_t>((word >> (8 * (d % 8))) & 0xFF);
  };
  // One counting pass for every position: a scatter keeps the multiset of bytes at each position.
  std::vector<std::array<size_t, 256>> count(16);
  for (auto& c : count) c.fill(0);
  for (const T& r : v) {
    for (int d = 0; d < 16; ++d) ++count[static_cast<size_t>(d)][digit(r, d)];
  }
  std::vector<T> buffer(n);
  T* src = v.data();
  T* dst = buffer.data();
  for (int d = 0; d < 16; ++d) {
    auto& c = count[static_cast<size_t>(d)];
    if (c[digit(src[0], d)] == n) continue;  // every record has the same byte here
    std::array<size_t, 256> at;
    size_t sum = 0;
    for (size_t b = 0; b < 256; ++b) {
      at[b] = sum;
      sum += c[b];
    }
    for (size_t i = 0; i < n; ++i) dst[at[digit(src[i], d)]++] = src[i];
    std::swap(src, dst);
  }
  if (src != v.data()) std::copy(src, src + n, v.data());
}

}  // namespace tidal
