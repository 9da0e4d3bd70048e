#include "core/api/status.h"

namespace tidal {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kSuccess: return "Success";
    case StatusCode::kUnschedulable: return "Unschedulable";
    case StatusCode::kUnschedulableAndUnresolvable: return "UnschedulableAndUnresolvable";
    case StatusCode::kWait: return "Wait";
    case StatusCode::kError: return "Error";
  }
  return "Unknown";
}

std::string Status::Message() const {
  std::string out;
  for (const auto& r : reasons_) {
    if (!out.empty()) out += "; ";
    out += r;
  }
  return out;
}

std::string Status::ToString() const {
  std::string out(StatusCodeName(code_));
  if (!plugin_.empty()) out += " [" + plugin_ + "]";
  if (!reasons_.empty()) out += ": " + Message();
  return out;
}

}  // namespace tidal
