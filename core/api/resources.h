// Resources: the per-node capacity / allocation and per-member request vector (GPUs, CPU, memory).
//
// Units: GPUs are whole devices, CPU is in millicores, memory in bytes. Quantities in files and
// annotations use Kubernetes notation ("8", "500m", "512Gi", "1.5G") and are parsed by ParseQuantity.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/api/status.h"

namespace tidal {

struct Resources {
  int64_t gpus = 0;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;

  Resources& operator+=(const Resources& o) {
    gpus += o.gpus;
    cpu_milli += o.cpu_milli;
    memory_bytes += o.memory_bytes;
    return *this;
  }
  Resources& operator-=(const Resources& o) {
    gpus -= o.gpus;
    cpu_milli -= o.cpu_milli;
    memory_bytes -= o.memory_bytes;
    return *this;
  }
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  friend Resources operator*(Resources a, int64_t k) {
    a.gpus *= k;
    a.cpu_milli *= k;
    a.memory_bytes *= k;
    return a;
  }
  friend bool operator==(const Resources&, const Resources&) = default;

  bool IsZero() const { return gpus == 0 && cpu_milli == 0 && memory_bytes == 0; }
  bool AnyNegative() const { return gpus < 0 || cpu_milli < 0 || memory_bytes < 0; }
  // True if every component of `req` fits in *this.
  bool Covers(const Resources& req) const {
    return req.gpus <= gpus && req.cpu_milli <= cpu_milli && req.memory_bytes <= memory_bytes;
  }
  // How many copies of `req` fit in *this (a large number when req is all zero).
  int64_t CopiesOf(const Resources& req) const;
  // "8 GPU, 32 CPU, 256Gi"
  std::string ToString() const;
};

// Parses a Kubernetes-style quantity. `milli` selects the unit of the result: true returns
// thousandths (CPU), false returns whole units rounded up (memory).
// Errors name `field` so callers can report "workloads[2].request.cpu: ...". Values above 9e18
// (in the result's unit) are "too large".
StatusOr<int64_t> ParseQuantity(std::string_view text, bool milli, std::string_view field);
// A GPU count: a quantity that is a whole number of devices ("8", "2k", "3000m"); a fraction
// ("0.5", "1.5", "100m") is an error naming `field`, never rounded.
StatusOr<int64_t> ParseGpuQuantity(std::string_view text, std::string_view field);
// A quantity given as a number (YAML's plain 8, 0.5 or 1e3) rather than text: the same rules and
// errors as ParseQuantity / ParseGpuQuantity, without going through text (1e20 is "too large").
StatusOr<int64_t> QuantityFromNumber(double value, bool milli, bool gpus, std::string_view field);

std::string FormatBytes(int64_t bytes);
std::string FormatMilli(int64_t milli);

}  // namespace tidal
