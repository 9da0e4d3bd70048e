// Status: the value every plugin and every RPC boundary returns instead of throwing.
//
// A Status carries a code, human-readable reasons and the name of the plugin that produced it.
// What the cycle runner does with each code:
//   kSuccess                       - go on to the next step.
//   kUnschedulable                 - the workload does not fit now; preemption (PostFilter) may help,
//                                    otherwise it stays pending and is retried next cycle.
//   kUnschedulableAndUnresolvable  - the workload can never fit as specified (e.g. a required
//                                    topology level larger than any domain); PostFilter is skipped.
//   kWait                          - (Permit) hold the placement until the condition clears.
//   kError                         - an internal or input error; the workload stays pending, nothing
//                                    is bound, and the error is reported.
// Thread-safety: a value type. Copies share the reasons and plugin name (an immutable, reference-
// counted block: copying a Status, e.g. a memoised refusal into each of 100,000 decisions, copies
// no strings); AddReason/WithPlugin copy the block first when it is shared. Copies may live on
// different threads: the block is never written while shared.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tidal {

enum class StatusCode { kSuccess, kUnschedulable, kUnschedulableAndUnresolvable, kWait, kError };

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // Success.
  Status(StatusCode code, std::string reason, std::string plugin = {}) : code_(code) {
    if (!reason.empty() || !plugin.empty()) {
      auto rep = std::make_shared<Rep>();
      if (!reason.empty()) rep->reasons.push_back(std::move(reason));
      rep->plugin = std::move(plugin);
      rep_ = std::move(rep);
    }
  }

  static Status Ok() { return {}; }
  static Status Unschedulable(std::string reason, std::string plugin = {}) {
    return {StatusCode::kUnschedulable, std::move(reason), std::move(plugin)};
  }
  static Status Unresolvable(std::string reason, std::string plugin = {}) {
    return {StatusCode::kUnschedulableAndUnresolvable, std::move(reason), std::move(plugin)};
  }
  static Status Wait(std::string reason, std::string plugin = {}) {
    return {StatusCode::kWait, std::move(reason), std::move(plugin)};
  }
  static Status Error(std::string reason, std::string plugin = {}) {
    return {StatusCode::kError, std::move(reason), std::move(plugin)};
  }

  bool ok() const { return code_ == StatusCode::kSuccess; }
  StatusCode code() const { return code_; }
  const std::vector<std::string>& reasons() const { return rep_ ? rep_->reasons : Empty().reasons; }
  const std::string& plugin() const { return rep_ ? rep_->plugin : Empty().plugin; }

  Status& AddReason(std::string reason) {
    Own().reasons.push_back(std::move(reason));
    return *this;
  }
  Status& WithPlugin(std::string plugin) {
    if (this->plugin().empty() && !plugin.empty()) Own().plugin = std::move(plugin);
    return *this;
  }
  // "Unschedulable [topology]: reason1; reason2"
  std::string ToString() const;
  // Reasons joined with "; ".
  std::string Message() const;

 private:
  struct Rep {
    std::vector<std::string> reasons;
    std::string plugin;
  };
  static const Rep& Empty();
  // The block, made this Status's own (copied when shared) before a change.
  Rep& Own();

  StatusCode code_ = StatusCode::kSuccess;
  std::shared_ptr<const Rep> rep_;  // nullptr: no reasons, no plugin
};

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tidal
