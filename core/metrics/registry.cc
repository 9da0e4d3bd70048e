#include "core/metrics/registry.h"

#include <prometheus/check_names.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <sstream>

#include "core/api/utf8.h"

namespace tidal::metrics {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::vector<std::string> SeriesNames(const std::string& name, MetricType type) {
  if (type == MetricType::kHistogram) return {name + "_bucket", name + "_sum", name + "_count"};
  return {name};
}

// prometheus::CheckMetricName allows colons; they are reserved for recording rules.
bool ValidMetricName(const std::string& name) {
  return name.find(':') == std::string::npos && prometheus::CheckMetricName(name);
}

// The label map for positional values, with invalid UTF-8 replaced.
prometheus::Labels LabelsFor(const std::vector<std::string>& names, const std::vector<std::string>& values) {
  prometheus::Labels out;
  for (size_t i = 0; i < names.size(); ++i) out.emplace(names[i], SanitizeUtf8(values[i]));
  return out;
}

// prometheus-cpp 1.0.1's TextSerializer writes HELP text as given (it escapes label values only), so
// a HELP with a line feed would end the comment line and break the scrape: escape it here, as the
// text format wants (backslash and line feed), with invalid UTF-8 replaced.
std::string EscapedHelp(const std::string& help) {
  std::string out;
  for (char c : SanitizeUtf8(help)) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

Status BoundsError(const std::string& name, const std::vector<double>& bounds) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) return Status::Error("metric \"" + name + "\": bucket bounds must be finite");
    if (i > 0 && !(bounds[i] > bounds[i - 1])) {
      return Status::Error("metric \"" + name + "\": bucket bounds must be strictly increasing");
    }
  }
  return Status::Ok();
}

template <typename T>
T& AddChild(prometheus::Family<T>& f, const prometheus::Labels& labels, const std::vector<double>&) {
  return f.Add(labels);
}
template <>
Histogram& AddChild(prometheus::Family<Histogram>& f, const prometheus::Labels& labels,
                    const std::vector<double>& bounds) {
  return f.Add(labels, bounds);
}

}  // namespace

std::vector<double> DefaultBuckets() { return {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}; }

std::vector<double> WaitBuckets() {
  return {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400};
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  std::vector<double> out;
  if (!(width > 0)) return out;
  for (int i = 0; i < count; ++i) out.push_back(start + width * i);
  return out;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  if (!(start > 0) || !(factor > 1)) return out;
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) out.push_back(v);
  return out;
}

std::string SanitizeLabelValue(std::string_view s) { return SanitizeUtf8(s); }

HistogramTotals Totals(const Histogram& h) {
  const prometheus::ClientMetric m = h.Collect();
  return {m.histogram.sample_count, m.histogram.sample_sum};
}

// ---- Family -------------------------------------------------------------------------------------

template <typename T>
Family<T>::Family(std::string name, std::vector<std::string> label_names, prometheus::Family<T>* family,
                  std::vector<double> bounds)
    : name_(std::move(name)), label_names_(std::move(label_names)), family_(family), bounds_(std::move(bounds)) {
  discard_ = NewDetached();
}

template <typename T>
std::unique_ptr<T> Family<T>::NewDetached() const {
  if constexpr (std::is_same_v<T, Histogram>) {
    // A family refused for its bounds keeps usable children, with no buckets but +Inf.
    return std::make_unique<T>(BoundsError(name_, bounds_).ok() ? bounds_ : std::vector<double>{});
  } else {
    return std::make_unique<T>();
  }
}

template <typename T>
StatusOr<T*> Family<T>::TryWith(const std::vector<std::string>& label_values) {
  if (label_values.size() != label_names_.size()) {
    return Status::Error("metric " + name_ + ": got " + std::to_string(label_values.size()) + " label values, want " +
                         std::to_string(label_names_.size()));
  }
  if (family_ != nullptr) return &AddChild(*family_, LabelsFor(label_names_, label_values), bounds_);
  std::lock_guard<std::mutex> lock(detached_mu_);
  auto& child = detached_[label_values];
  if (!child) child = NewDetached();
  return child.get();
}

template <typename T>
T& Family<T>::With(const std::vector<std::string>& label_values) {
  auto child = TryWith(label_values);
  if (child.ok()) return **child;
  errors_.fetch_add(1, std::memory_order_relaxed);
  return *discard_;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

// ---- Callback families --------------------------------------------------------------------------

struct Registry::Callback {
  std::string name, help;
  MetricType type;
  std::vector<std::string> label_names;
  Collector collect;
  mutable std::atomic<uint64_t> errors{0};

  // The family as prometheus-cpp serialises it; nullopt when the collector threw.
  std::optional<prometheus::MetricFamily> Collect() const {
    std::vector<Sample> samples;
    try {
      samples = collect();
    } catch (const std::exception&) {
      return std::nullopt;
    } catch (...) {
      return std::nullopt;
    }
    prometheus::MetricFamily f;
    f.name = name;
    f.help = help;
    f.type = type == MetricType::kCounter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge;
    std::set<std::vector<std::string>> seen;
    for (auto& s : samples) {
      if (s.label_values.size() != label_names.size()) {
        errors.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      for (auto& v : s.label_values) v = SanitizeUtf8(v);
      if (!seen.insert(s.label_values).second) {
        errors.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (type == MetricType::kCounter && !(s.value >= 0)) {  // negative or NaN: not a counter value
        errors.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      prometheus::ClientMetric m;
      for (size_t i = 0; i < label_names.size(); ++i) m.label.push_back({label_names[i], s.label_values[i]});
      if (type == MetricType::kCounter) {
        m.counter.value = s.value;
      } else {
        m.gauge.value = s.value;
      }
      f.metric.push_back(std::move(m));
    }
    return f;  // Render sorts the series
  }
};

// ---- Registry -----------------------------------------------------------------------------------

Registry::Registry() : prom_(std::make_shared<prometheus::Registry>(prometheus::Registry::InsertBehavior::Throw)) {}
Registry::~Registry() = default;

Status Registry::CheckNew(const std::string& name, const std::string& help, MetricType type,
                          const std::vector<std::string>& label_names) const {
  const std::string what = "metric \"" + SanitizeUtf8(name) + "\": ";
  if (!ValidMetricName(name)) return Status::Error(what + "invalid name (want [a-zA-Z_][a-zA-Z0-9_]*)");
  if (help.empty()) return Status::Error(what + "empty HELP text");
  const bool total = EndsWith(name, "_total");
  if (type == MetricType::kCounter && !total) return Status::Error(what + "counter names must end in \"_total\"");
  if (type != MetricType::kCounter && total) return Status::Error(what + "only counter names may end in \"_total\"");
  if (type != MetricType::kHistogram) {
    for (std::string_view s : {"_bucket", "_sum", "_count"}) {
      if (EndsWith(name, s)) return Status::Error(what + "suffix \"" + std::string(s) + "\" is reserved for histograms");
    }
  }
  std::set<std::string_view> seen;
  for (const auto& l : label_names) {
    if (!prometheus::CheckLabelName(l) || l.find(':') != std::string::npos) {
      return Status::Error(what + "invalid label name \"" + SanitizeUtf8(l) +
                           "\" (want [a-zA-Z_][a-zA-Z0-9_]*, not starting with \"__\")");
    }
    if (l == "le" || l == "quantile") return Status::Error(what + "label name \"" + l + "\" is reserved");
    if (!seen.insert(l).second) return Status::Error(what + "duplicate label name \"" + l + "\"");
  }
  if (names_.count(name) != 0) return Status::Error(what + "already registered");
  for (const auto& s : SeriesNames(name, type)) {
    if (series_names_.count(s) != 0 || names_.count(s) != 0) {
      return Status::Error(what + "series \"" + s + "\" collides with another metric");
    }
  }
  if (series_names_.count(name) != 0) return Status::Error(what + "collides with a series of another metric");
  return Status::Ok();
}

void Registry::Claim(const std::string& name, MetricType type) {
  names_.insert(name);
  for (const auto& s : SeriesNames(name, type)) series_names_.insert(s);
}

template <typename T>
void Registry::Keep(std::unique_ptr<Family<T>> family) {
  if constexpr (std::is_same_v<T, metrics::Counter>) {
    counters_.push_back(std::move(family));
  } else if constexpr (std::is_same_v<T, metrics::Gauge>) {
    gauges_.push_back(std::move(family));
  } else {
    histograms_.push_back(std::move(family));
  }
}

template <typename T>
StatusOr<Family<T>*> Registry::AddFamily(const std::string& name, const std::string& help, MetricType type,
                                         const std::vector<std::string>& label_names, std::vector<double> bounds) {
  if (type == MetricType::kHistogram) {
    if (!bounds.empty() && bounds.back() == std::numeric_limits<double>::infinity()) bounds.pop_back();  // implicit
    if (auto s = BoundsError(name, bounds); !s.ok()) return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (auto s = CheckNew(name, help, type, label_names); !s.ok()) return s;
  prometheus::Family<T>* pf = nullptr;
  try {
    if constexpr (std::is_same_v<T, metrics::Counter>) {
      pf = &prometheus::BuildCounter().Name(name).Help(EscapedHelp(help)).Register(*prom_);
    } else if constexpr (std::is_same_v<T, metrics::Gauge>) {
      pf = &prometheus::BuildGauge().Name(name).Help(EscapedHelp(help)).Register(*prom_);
    } else {
      pf = &prometheus::BuildHistogram().Name(name).Help(EscapedHelp(help)).Register(*prom_);
    }
  } catch (const std::exception& e) {
    return Status::Error("metric \"" + name + "\": " + e.what());
  }
  Claim(name, type);
  auto family = std::unique_ptr<Family<T>>(new Family<T>(name, label_names, pf, std::move(bounds)));
  Family<T>* out = family.get();
  if (label_names.empty()) out->With({});  // an unlabeled family has its one series from the start (at 0)
  Keep(std::move(family));
  return out;
}

StatusOr<Family<Counter>*> Registry::AddCounter(const std::string& name, const std::string& help,
                                                const std::vector<std::string>& label_names) {
  return AddFamily<metrics::Counter>(name, help, MetricType::kCounter, label_names, {});
}

StatusOr<Family<Gauge>*> Registry::AddGauge(const std::string& name, const std::string& help,
                                            const std::vector<std::string>& label_names) {
  return AddFamily<metrics::Gauge>(name, help, MetricType::kGauge, label_names, {});
}

StatusOr<Family<Histogram>*> Registry::AddHistogram(const std::string& name, const std::string& help,
                                                    const std::vector<std::string>& label_names,
                                                    std::vector<double> bounds) {
  return AddFamily<metrics::Histogram>(name, help, MetricType::kHistogram, label_names, std::move(bounds));
}

Status Registry::AddCallback(MetricType type, const std::string& name, const std::string& help,
                             const std::vector<std::string>& label_names, Collector collect) {
  if (type == MetricType::kHistogram) return Status::Error("metric \"" + name + "\": callback histograms are not supported");
  if (!collect) return Status::Error("metric \"" + name + "\": no collector");
  std::lock_guard<std::mutex> lock(mu_);
  if (auto s = CheckNew(name, help, type, label_names); !s.ok()) return s;
  Claim(name, type);
  auto cb = std::make_shared<Callback>();
  cb->name = name;
  cb->help = EscapedHelp(help);
  cb->type = type;
  cb->label_names = label_names;
  cb->collect = std::move(collect);
  callbacks_.push_back(std::move(cb));
  return Status::Ok();
}

void Registry::Remember(const Status& s) {
  if (s.ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (status_.ok()) {
    status_ = s;
  } else {
    status_.AddReason(s.Message());
  }
}

template <typename T>
Family<T>& Registry::Detached(const std::string& name, const std::vector<std::string>& label_names,
                              std::vector<double> bounds, const Status& why) {
  Remember(why);
  auto family = std::unique_ptr<Family<T>>(new Family<T>(name, label_names, nullptr, std::move(bounds)));
  Family<T>& out = *family;
  std::lock_guard<std::mutex> lock(mu_);
  Keep(std::move(family));
  return out;
}

Family<Counter>& Registry::Counter(const std::string& name, const std::string& help,
                                   const std::vector<std::string>& label_names) {
  auto f = AddCounter(name, help, label_names);
  return f.ok() ? **f : Detached<metrics::Counter>(name, label_names, {}, f.status());
}

Family<Gauge>& Registry::Gauge(const std::string& name, const std::string& help,
                               const std::vector<std::string>& label_names) {
  auto f = AddGauge(name, help, label_names);
  return f.ok() ? **f : Detached<metrics::Gauge>(name, label_names, {}, f.status());
}

Family<Histogram>& Registry::Histogram(const std::string& name, const std::string& help,
                                       const std::vector<std::string>& label_names, std::vector<double> bounds) {
  auto f = AddHistogram(name, help, label_names, bounds);
  return f.ok() ? **f : Detached<metrics::Histogram>(name, label_names, std::move(bounds), f.status());
}

void Registry::CallbackGauge(const std::string& name, const std::string& help,
                             const std::vector<std::string>& label_names, Collector collect) {
  Remember(AddCallback(MetricType::kGauge, name, help, label_names, std::move(collect)));
}

void Registry::CallbackCounter(const std::string& name, const std::string& help,
                               const std::vector<std::string>& label_names, Collector collect) {
  Remember(AddCallback(MetricType::kCounter, name, help, label_names, std::move(collect)));
}

Status Registry::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

uint64_t Registry::usage_errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& f : counters_) n += f->usage_errors();
  for (const auto& f : gauges_) n += f->usage_errors();
  for (const auto& f : histograms_) n += f->usage_errors();
  for (const auto& c : callbacks_) n += c->errors.load(std::memory_order_relaxed);
  return n;
}

std::string Registry::Render() const {
  std::vector<std::shared_ptr<Callback>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    callbacks = callbacks_;
  }
  std::vector<prometheus::MetricFamily> families = prom_->Collect();
  for (const auto& cb : callbacks) {  // no registry lock held: a callback may take its owner's lock
    if (auto f = cb->Collect()) families.push_back(std::move(*f));
  }
  families.erase(std::remove_if(families.begin(), families.end(), [](const auto& f) { return f.metric.empty(); }),
                 families.end());
  std::sort(families.begin(), families.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (auto& f : families) {  // series by label values, as the families' hash maps do not keep an order
    std::sort(f.metric.begin(), f.metric.end(), [](const prometheus::ClientMetric& a, const prometheus::ClientMetric& b) {
      return std::lexicographical_compare(a.label.begin(), a.label.end(), b.label.begin(), b.label.end(),
                                          [](const auto& x, const auto& y) {
                                            return std::tie(x.name, x.value) < std::tie(y.name, y.value);
                                          });
    });
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

// ---- ScopedTimer --------------------------------------------------------------------------------

double ScopedTimer::Stop() {
  if (seconds_ >= 0) return seconds_;
  seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (h_ != nullptr) h_->Observe(seconds_);
  h_ = nullptr;
  return seconds_;
}

}  // namespace tidal::metrics
