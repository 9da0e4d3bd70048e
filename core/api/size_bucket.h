// Job size buckets by total GPUs, one definition for the engine's metrics (the size_bucket label of
// tidal_time_to_start_seconds and tidal_admission_wait_seconds) and the simulator's reports
// (by_size): "0" (CPU-only work), "1", "2-8", "9-64", "65+".
// Thread-safety: constants and a pure function.
#pragma once

#include <array>
#include <cstdint>

namespace tidal {

inline constexpr std::array<const char*, 5> kSizeBuckets = {"0", "1", "2-8", "9-64", "65+"};

inline const char* SizeBucket(int64_t gpus) {
  if (gpus <= 0) return kSizeBuckets[0];
  if (gpus == 1) return kSizeBuckets[1];
  if (gpus <= 8) return kSizeBuckets[2];
  if (gpus <= 64) return kSizeBuckets[3];
  return kSizeBuckets[4];
}

}  // namespace tidal
