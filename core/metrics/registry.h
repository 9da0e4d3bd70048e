// Metrics registry: Tidal's metric families on prometheus-cpp (Debian's prometheus-cpp-dev 1.0.1).
// prometheus-cpp owns the metric types (prometheus::Counter, Gauge, Histogram), the families'
// children and the text exposition format (prometheus::TextSerializer). This file adds what
// Tidal needs around it, and nothing that renders text:
//   - registration that refuses what `promtool check metrics` lints (so whatever registers renders
//     lint-clean) with a Status instead of prometheus-cpp's exceptions;
//   - label NAMES fixed per family and values passed positionally (With({"a", "b"})), with a
//     wrong count sent to a discard child instead of a throw;
//   - callback families (series sampled from the owner's state at each scrape), as a
//     prometheus::Collectable;
//   - invalid UTF-8 in label values replaced by U+FFFD (Prometheus refuses a scrape with an invalid
//     label value, and one bad name must not take /metrics down);
//   - a deterministic exposition: families sorted by name, empty families left out.
//
//   metrics::Registry reg;
//   auto& preemptions = reg.Counter("tidal_preemptions_total", "Gangs preempted.", {"reason"});
//   preemptions.With({"quota"}).Increment();
//   auto& cycle = reg.Histogram("tidal_cycle_duration_seconds", "Cycle time.", {}, metrics::DefaultBuckets());
//   { metrics::ScopedTimer t(cycle.With({})); RunCycle(); }
//   reg.CallbackGauge("tidal_gpus", "GPUs by state.", {"state", "pool"}, [&] { return engine.GpuSamples(); });
//   if (!reg.status().ok()) { /* a registration was refused: fail start-up */ }
//   std::string body = reg.Render();   // serve with Content-Type metrics::kContentType
//
// Refusals (never an abort): duplicate name (including a name that collides with another family's
// _bucket/_sum/_count series), invalid metric or label name (prometheus::CheckMetricName /
// CheckLabelName; colons are refused too, they are for recording rules), duplicate label name, the
// reserved label names "le" and "quantile", a counter not ending in "_total", a gauge or histogram
// ending in "_total" (or a non-histogram ending in _bucket/_sum/_count), empty HELP text,
// histogram bounds that are not finite and strictly increasing.
//   - AddCounter/AddGauge/AddHistogram/AddCallback return the Status of a refused registration;
//   - Counter/Gauge/Histogram/CallbackGauge/CallbackCounter always hand back something usable: on
//     refusal, a detached family that is never rendered, and the reason is kept in status().
// Children are never removed (a With() reference stays valid for the registry's lifetime); series
// that come and go with the state (queues, pools) belong in callback families. Label values that
// come from users (queue names) must be bounded by the caller (see engine/observability.h).
//
// Threading model: every method is thread-safe; Render may run concurrently with updates, with
// registrations and with other Renders. prometheus-cpp's counters and gauges are atomics, its
// histograms and families take their own mutexes. The registry's mutex guards the family tables;
// Render calls callback functions with NO registry lock held, so a callback may take its owner's
// lock (e.g. Engine::mu_) even if that owner updates metrics under the same lock. Callbacks must be
// thread-safe with respect to what they read; one that throws omits its family from that scrape.
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

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "core/api/status.h"

namespace tidal::metrics {

// The Content-Type header a /metrics response must carry (text format 0.0.4).
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

using Counter = prometheus::Counter;
using Gauge = prometheus::Gauge;
using Histogram = prometheus::Histogram;

enum class MetricType { kCounter, kGauge, kHistogram };

// Bucket layouts (upper bounds, seconds where it applies).
std::vector<double> DefaultBuckets();  // Prometheus' defaults: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10
// Waits and times to start, 0.1 s .. 4 h; contains the bounds the SLO rules in
// deploy/prometheus/tidal-rules.yaml rely on (5 s, and headroom well past 1800 s).
std::vector<double> WaitBuckets();
// start, start+width, ...; `count` bounds (count < 1 or width <= 0 gives none).
std::vector<double> LinearBuckets(double start, double width, int count);
// start, start*factor, ...; `count` bounds (count < 1, start <= 0 or factor <= 1 gives none).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// `s` with every invalid UTF-8 sequence replaced by U+FFFD (valid input is returned unchanged).
std::string SanitizeLabelValue(std::string_view s);

// One series produced by a callback family.
struct Sample {
  std::vector<std::string> label_values;  // in the family's label name order
  double value = 0;
};
// Sampled at every Render. Samples with the wrong number of label values are dropped (and counted
// in usage_errors()); repeated label values keep the first sample only.
using Collector = std::function<std::vector<Sample>()>;

class Registry;

// The children of one metric, one per distinct list of label values. Built by the Registry.
template <typename T>
class Family {
 public:
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  // The child for these label values (created on first use; prometheus-cpp keeps it). Wrong
  // count: the discard child, never rendered, counted in usage_errors().
  T& With(const std::vector<std::string>& label_values);
  // Same, but a wrong count is an error instead.
  StatusOr<T*> TryWith(const std::vector<std::string>& label_values);

  const std::string& name() const { return name_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  uint64_t usage_errors() const { return errors_.load(std::memory_order_relaxed); }

 private:
  friend class Registry;
  // `family` null: detached (refused at registration; nothing is rendered).
  Family(std::string name, std::vector<std::string> label_names, prometheus::Family<T>* family,
         std::vector<double> bounds);
  std::unique_ptr<T> NewDetached() const;

  std::string name_;
  std::vector<std::string> label_names_;
  prometheus::Family<T>* family_;  // owned by the Registry's prometheus::Registry
  std::vector<double> bounds_;     // histograms only
  std::unique_ptr<T> discard_;
  mutable std::mutex detached_mu_;  // guards detached_ (children of a detached family)
  std::map<std::vector<std::string>, std::unique_ptr<T>> detached_;
  std::atomic<uint64_t> errors_{0};
};

class Registry {
 public:
  Registry();
  ~Registry();
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

  // The whole exposition (text format 0.0.4, prometheus::TextSerializer).
  std::string Render() const;
  // Sum of usage_errors() over the registered families.
  uint64_t usage_errors() const;

 private:
  struct Callback;
  class CallbackCollectable;
  Status CheckNew(const std::string& name, const std::string& help, MetricType type,
                  const std::vector<std::string>& label_names) const;  // mu_ held
  void Claim(const std::string& name, MetricType type);                 // mu_ held
  template <typename T>
  void Keep(std::unique_ptr<Family<T>> family);  // mu_ held: into counters_, gauges_ or histograms_
  template <typename T>
  StatusOr<Family<T>*> AddFamily(const std::string& name, const std::string& help, MetricType type,
                                 const std::vector<std::string>& label_names, std::vector<double> bounds);
  template <typename T>
  Family<T>& Detached(const std::string& name, const std::vector<std::string>& label_names, std::vector<double> bounds,
                      const Status& why);
  void Remember(const Status& s);

  mutable std::mutex mu_;  // guards everything below (prom_ is thread-safe on its own)
  std::shared_ptr<prometheus::Registry> prom_;
  std::vector<std::unique_ptr<Family<metrics::Counter>>> counters_;
  std::vector<std::unique_ptr<Family<metrics::Gauge>>> gauges_;
  std::vector<std::unique_ptr<Family<metrics::Histogram>>> histograms_;
  std::vector<std::shared_ptr<Callback>> callbacks_;
  std::set<std::string> names_;         // registered family names
  std::set<std::string> series_names_;  // every series name the families emit (name, name_bucket, ...)
  Status status_;
};

// Observes the seconds between construction and destruction (or Stop()) into a histogram.
// A null histogram makes it a no-op. Not thread-safe (one scope, one thread).
class ScopedTimer {
 public:
  explicit ScopedTimer(metrics::Histogram& h) : h_(&h) {}
  explicit ScopedTimer(metrics::Histogram* h) : h_(h) {}
  ~ScopedTimer() { Stop(); }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

  // Observes now (first call only) and returns the seconds observed; later calls return the same.
  double Stop();
  // Nothing will be observed.
  void Cancel() { h_ = nullptr; }

 private:
  metrics::Histogram* h_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double seconds_ = -1;
};

// Count and sum of a histogram child (tests and tools read these).
struct HistogramTotals {
  uint64_t count = 0;
  double sum = 0;
};
HistogramTotals Totals(const metrics::Histogram& h);

extern template class Family<metrics::Counter>;
extern template class Family<metrics::Gauge>;
extern template class Family<metrics::Histogram>;

}  // namespace tidal::metrics
