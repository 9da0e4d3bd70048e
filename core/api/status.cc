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

const Status::Rep& Status::Empty() {
  static const Rep kEmpty;
  return kEmpty;
}

Status::Rep& Status::Own() {
  if (!rep_) {
    rep_ = std::make_shared<Rep>();
  } else if (rep_.use_count() > 1) {
    rep_ = std::make_shared<Rep>(*rep_);
  }
  // Not shared (just made or copied, or held by this Status alone): writing it is safe.
  return const_cast<Rep&>(*rep_);
}

std::string Status::Message() const {
  const auto& rs = reasons();
  if (rs.size() == 1) return rs.front();
  std::string out;
  for (const auto& r : rs) {
    if (!out.empty()) out += "; ";
    out += r;
  }
  return out;
}

std::string Status::ToString() const {
  std::string out(StatusCodeName(code_));
  if (!plugin().empty()) out += " [" + plugin() + "]";
  if (!reasons().empty()) out += ": " + Message();
  return out;
}

}  // namespace tidal
