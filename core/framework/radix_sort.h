// RadixSortHiLo: a stable sort of records by a 128-bit unsigned key, the record's `hi` word first
// and its `lo` word second (LSD radix, one byte per pass). The queue sort's packed keys
// (Scheduler::SortQueue) use it: a comparison sort of 100,000 keys made a quarter of a full cycle;
// this takes one pass to find the byte positions whose byte differs between records, one pass to
// count those and one scatter pass per such position (queue ranks, priorities and submit times
// vary in a few bytes only).
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
  // The byte positions where some record differs from the first (one OR pass): only those are
  // counted and scattered (a position where every record has the same byte keeps the order).
  // Least significant first: the varying bytes of lo, then those of hi.
  uint64_t vary_lo = 0, vary_hi = 0;
  for (const T& r : v) {
    vary_lo |= r.lo ^ v[0].lo;
    vary_hi |= r.hi ^ v[0].hi;
  }
  std::array<int, 8> lo_shift{}, hi_shift{};
  size_t n_lo = 0, n_hi = 0;
  for (int b = 0; b < 8; ++b) {
    if ((vary_lo >> (8 * b)) & 0xFF) lo_shift[n_lo++] = 8 * b;
    if ((vary_hi >> (8 * b)) & 0xFF) hi_shift[n_hi++] = 8 * b;
  }
  const size_t used = n_lo + n_hi;
  if (used == 0) return;  // every key equal: already in order
  // One counting pass for the varying positions: a scatter keeps the multiset of bytes at each.
  std::vector<std::array<size_t, 256>> count(used);
  for (auto& c : count) c.fill(0);
  for (const T& r : v) {
    for (size_t k = 0; k < n_lo; ++k) ++count[k][(r.lo >> lo_shift[k]) & 0xFF];
    for (size_t k = 0; k < n_hi; ++k) ++count[n_lo + k][(r.hi >> hi_shift[k]) & 0xFF];
  }
  std::vector<T> buffer(n);
  T* src = v.data();
  T* dst = buffer.data();
  for (size_t k = 0; k < used; ++k) {
    std::array<size_t, 256> at;
    size_t sum = 0;
    for (size_t b = 0; b < 256; ++b) {
      at[b] = sum;
      sum += count[k][b];
    }
    if (k < n_lo) {
      const int shift = lo_shift[k];
      for (size_t i = 0; i < n; ++i) dst[at[(src[i].lo >> shift) & 0xFF]++] = src[i];
    } else {
      const int shift = hi_shift[k - n_lo];
      for (size_t i = 0; i < n; ++i) dst[at[(src[i].hi >> shift) & 0xFF]++] = src[i];
    }
    std::swap(src, dst);
  }
  if (src != v.data()) std::copy(src, src + n, v.data());
}

}  // namespace tidal
