// Metrics registry: Counter, Gauge and Histogram families plus callback families, rendered in the
// Prometheus text exposition format 0.0.4 (hand-written; no prometheus-cpp).
//
//   metrics::Registry reg;
//   auto& preemptions = reg.Counter("tidal_preemptions_total", "Gangs preempted.", {"reason"});
//   preemptions.With({"quota"}).Inc();
//   auto& cycle = reg.Histogram("tidal_cycle_duration_seconds", "Cycle time.", {}, metrics::DefaultBuckets());
//   { metrics::ScopedTimer t(cycle.With({})); RunCycle(); }
//   reg.CallbackGauge("tidal_gpus", "GPUs by state.", {"state", "pool"}, [&] { return engine.GpuSamples(); });
//   if (!reg.status().ok()) { /* a registration was refused: fail start-up */ }
//   std::string body = reg.Render();   // serve with Content-Type metrics::kContentType
//
// Registration: label NAMES are fixed when a family is registered; each distinct list of label
// VALUES (in the same order) is one child series, created on first use by With(). Two ways in:
//   - AddCounter/AddGauge/AddHistogram/AddCallback return the Status of a refused registration;
//   - Counter/Gauge/Histogram/CallbackGauge/CallbackCounter always hand back something usable: on
//     refusal, a detached family that is never rendered, and the reason is kept in status().
// Refusals (never an abort): duplicate name (including a name that collides with another family's
// _bucket/_sum/_count series), invalid metric or label name, duplicate label name, the reserved
// label names "le" and "quantile", a counter not ending in "_total", a gauge or histogram ending in
// "_total" (or a non-histogram ending in _bucket/_sum/_count), empty HELP text, histogram bounds
// that are not finite and strictly increasing. These are the rules `promtool check metrics` lints,
// so whatever the registry accepts renders lint-clean.
// Label values may be any string; invalid UTF-8 is replaced by U+FFFD (Prometheus refuses a scrape
// with an invalid label value), and values equal after that replacement are one series.
// Wrong number of label values at With(): the update goes to a per-family discard child that is
// never rendered, and usage_errors() counts it; TryWith() returns the error instead.
// Children are never removed (a With() reference stays valid for the registry's lifetime); series
// that come and go with the state (queues, pools) belong in callback families.
//
// Output: families sorted by name, each "# HELP" + "# TYPE" then its series sorted by label values
// (labels in registration order; "le" last on buckets). Families without any series are omitted
// (an unlabeled family always has its one series, so it renders 0 from the start). Histograms
// render cumulative _bucket{le=...} series ending in le="+Inf", then _sum and _count.
//
// Threading model: every method is thread-safe; Render may run concurrently with updates and with
// other Renders.
//   - Counter/Gauge/Histogram updates are lock-free (relaxed std::atomic); hot paths should keep the
//     reference With() returned rather than look it up on each update.
//   - Each family has a mutex guarding its child map (taken by With/TryWith and by Render while
//     reading that family); the registry has a mutex guarding the family map (registration, and the
//     moment Render copies the family list). No lock is held while another is taken, except a
//     family's own lock inside the registry's during registration.
//   - Render calls callback functions with NO registry or family lock held, so a callback may take
//     its owner's lock (e.g. Engine::mu_) even if that owner updates metrics under the same lock.
//     Callbacks must be thread-safe with respect to what they read; an exception thrown by one
//     omits that family from that scrape.
//   - A histogram series is read bucket by bucket while observations continue; its _count is the
//     sum of the buckets read, so le="+Inf" always equals _count, while _sum may include or miss an
//     observation in flight.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/status.h"
#include "core/metrics/text_format.h"

namespace tidal::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };
// "counter", "gauge", "histogram" (the # TYPE spelling).
std::string_view MetricTypeName(MetricType type);

// A monotonically increasing value. Inc() with a negative or NaN amount is ignored (and counted in
// the registry's usage_errors() when the counter belongs to a family).
class Counter {
 public:
  void Inc(double amount = 1.0);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  template <typename T>
  friend class Family;
  std::atomic<double> value_{0.0};
  std::atomic<uint64_t>* errors_ = nullptr;  // the family's usage error count
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Inc(double amount = 1.0) { value_.fetch_add(amount, std::memory_order_relaxed); }
  void Dec(double amount = 1.0) { value_.fetch_sub(amount, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Observations counted into fixed buckets (upper bounds inclusive, as Prometheus' "le").
class Histogram {
 public:
  // `bounds`: finite, strictly increasing (validated by the Registry; +Inf is implicit).
  explicit Histogram(std::shared_ptr<const std::vector<double>> bounds);
  // NaN observations are dropped (they would turn _sum into NaN for good).
  void Observe(double v);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;  // == cumulative.back()
  };
  Snapshot Read() const;
  const std::vector<double>& bounds() const { return *bounds_; }

 private:
  std::shared_ptr<const std::vector<double>> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket (not cumulative), last = +Inf
  std::atomic<double> sum_{0.0};
};

// Bucket layouts (upper bounds, seconds where it applies).
std::vector<double> DefaultBuckets();  // Prometheus' defaults: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10
// Waits and times to start, 0.1 s .. 4 h; contains the bounds the SLO rules in
// deploy/prometheus/tidal-rules.yaml rely on (5 s, and headroom well past 1800 s).
std::vector<double> WaitBuckets();
// start, start+width, ...; `count` bounds (count < 1 or width <= 0 gives none).
std::vector<double> LinearBuckets(double start, double width, int count);
// start, start*factor, ...; `count` bounds (count < 1, start <= 0 or factor <= 1 gives none).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// One series produced by a callback family.
struct Sample {
  std::vector<std::string> label_values;  // in the family's label name order
  double value = 0;
};
// Sampled at every Render. Samples with the wrong number of label values are dropped (and counted
// in usage_errors()); repeated label values keep the first sample only.
using Collector = std::function<std::vector<Sample>()>;

namespace internal {

class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, MetricType type, std::vector<std::string> label_names);
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // With() calls with the wrong label count, refused counter decrements, dropped callback samples.
  uint64_t usage_errors() const { return errors_.load(std::memory_order_relaxed); }

  // Appends this family's series lines (no HELP/TYPE) to `out`.
  virtual void AppendSamples(std::string& out) const = 0;

 protected:
  // `name``suffix`{labels[,extra_label="extra_value"]} value\n
  void AppendLine(std::string& out, std::string_view suffix, const std::vector<std::string>& values,
                  std::string_view extra_label, std::string_view extra_value, double value) const;
  Status CheckLabelCount(const std::vector<std::string>& values) const;

  mutable std::atomic<uint64_t> errors_{0};

 private:
  std::string name_, help_;
  MetricType type_;
  std::vector<std::string> label_names_;
};

class CallbackFamily final : public FamilyBase {
 public:
  CallbackFamily(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
                 Collector collect);
  void AppendSamples(std::string& out) const override;

 private:
  Collector collect_;
};

}  // namespace internal

// The children of one metric, one per distinct list of label values. Built by the Registry.
template <typename T>
class Family final : public internal::FamilyBase {
 public:
  // `bounds` is used by histogram families only.
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
         std::shared_ptr<const std::vector<double>> bounds);

  // The child for these label values (created on first use). Wrong count: the discard child.
  T& With(const std::vector<std::string>& label_values);
  // Same, but a wrong count is an error instead.
  StatusOr<T*> TryWith(const std::vector<std::string>& label_values);

  void AppendSamples(std::string& out) const override;

 private:
  std::unique_ptr<T> NewChild();

  std::shared_ptr<const std::vector<double>> bounds_;
  mutable std::mutex mu_;  // guards children_ (the map, not the children's atomics)
  std::map<std::vector<std::string>, std::unique_ptr<T>> children_;
  std::unique_ptr<T> discard_;
};

extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Registration reporting refusals.
  StatusOr<Family<metrics::Counter>*> AddCounter(const std::string& name, const std::string& help,
                                                 const std::vector<std::string>& label_names);
  StatusOr<Family<metrics::Gauge>*> AddGauge(const std::string& name, const std::string& help,
                                             const std::vector<std::string>& label_names);
  StatusOr<Family<metrics::Histogram>*> AddHistogram(const std::string& name, const std::string& help,
                                                     const std::vector<std::string>& label_names,
                                                     std::vector<double> bounds);
  // A counter or gauge family whose series come from `collect` at each Render.
  Status AddCallback(MetricType type, const std::string& name, const std::string& help,
                     const std::vector<std::string>& label_names, Collector collect);

  // Convenience registration: always returns a usable family; a refusal returns a detached one
  // (updates work, nothing is rendered) and adds the reason to status().
  Family<metrics::Counter>& Counter(const std::string& name, const std::string& help,
                                    const std::vector<std::string>& label_names = {});
  Family<metrics::Gauge>& Gauge(const std::string& name, const std::string& help,
                                const std::vector<std::string>& label_names = {});
  Family<metrics::Histogram>& Histogram(const std::string& name, const std::string& help,
                                        const std::vector<std::string>& label_names, std::vector<double> bounds);
  void CallbackGauge(const std::string& name, const std::string& help, const std::vector<std::string>& label_names,
                     Collector collect);
  void CallbackCounter(const std::string& name, const std::string& help,
                       const std::vector<std::string>& label_names, Collector collect);
  // Ok, or an Error listing every refused convenience registration.
  Status status() const;

  // The whole exposition (text format 0.0.4).
  std::string Render() const;
  // Sum of usage_errors() over the registered families.
  uint64_t usage_errors() const;

 private:
  Status CheckNew(const std::string& name, const std::string& help, MetricType type,
                  const std::vector<std::string>& label_names) const;  // mu_ held
  Status Insert(const std::shared_ptr<internal::FamilyBase>& family);
  void Remember(const Status& s);

  mutable std::mutex mu_;  // guards everything below
  std::map<std::string, std::shared_ptr<internal::FamilyBase>> families_;
  std::set<std::string> series_names_;  // every series name the families emit (name, name_bucket, ...)
  std::vector<std::shared_ptr<internal::FamilyBase>> detached_;
  Status status_;
};

// Observes the seconds between construction and destruction (or Stop()) into a histogram.
// A null histogram makes it a no-op. Not thread-safe (one scope, one thread).
class ScopedTimer {
 public:
  explicit ScopedTimer(Histogram& h) : h_(&h) {}
  explicit ScopedTimer(Histogram* h) : h_(h) {}
  ~ScopedTimer() { Stop(); }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

  // Observes now (first call only) and returns the seconds observed; later calls return the same.
  double Stop();
  // Nothing will be observed.
  void Cancel() { h_ = nullptr; }

 private:
  Histogram* h_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double seconds_ = -1;
};

}  // namespace tidal::metrics
