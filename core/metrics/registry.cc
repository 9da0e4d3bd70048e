#include "core/metrics/registry.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace tidal::metrics {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The series names a family of this type emits.
std::vector<std::string> SeriesNames(const std::string& name, MetricType type) {
  if (type == MetricType::kHistogram) return {name + "_bucket", name + "_sum", name + "_count"};
  return {name};
}

// The label values with invalid UTF-8 replaced, or nullopt when they are all valid already.
std::optional<std::vector<std::string>> SanitizedValues(const std::vector<std::string>& values) {
  if (std::all_of(values.begin(), values.end(), [](const std::string& v) { return IsValidUtf8(v); })) {
    return std::nullopt;
  }
  std::vector<std::string> out;
  out.reserve(values.size());
  for (const auto& v : values) out.push_back(SanitizeUtf8(v));
  return out;
}

// Validates histogram bounds in place: a trailing +Inf is dropped (it is implicit).
Status NormalizeBounds(std::vector<double>& bounds) {
  if (!bounds.empty() && std::isinf(bounds.back()) && bounds.back() > 0) bounds.pop_back();
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      return Status::Error("bucket bound " + std::to_string(i) + " is " + FormatValue(bounds[i]) +
                           ": bounds must be finite (+Inf is implicit)");
    }
    if (i > 0 && !(bounds[i] > bounds[i - 1])) {
      return Status::Error("bucket bounds must be strictly increasing: " + FormatValue(bounds[i - 1]) +
                           " then " + FormatValue(bounds[i]));
    }
  }
  return Status::Ok();
}

}  // namespace

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

// ---- Counter, Histogram -------------------------------------------------------------------------

void Counter::Inc(double amount) {
  if (!(amount >= 0)) {  // negative or NaN
    if (errors_ != nullptr) errors_->fetch_add(1, std::memory_order_relaxed);
    return;
  }
  value_.fetch_add(amount, std::memory_order_relaxed);
}

Histogram::Histogram(std::shared_ptr<const std::vector<double>> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_->size() + 1]) {
  for (size_t i = 0; i <= bounds_->size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  if (std::isnan(v)) return;
  // First bound >= v: Prometheus buckets are "less than or equal".
  const auto it = std::lower_bound(bounds_->begin(), bounds_->end(), v);
  counts_[static_cast<size_t>(it - bounds_->begin())].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.cumulative.resize(bounds_->size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_->size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = running;
  }
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

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

// ---- FamilyBase, CallbackFamily -----------------------------------------------------------------

namespace internal {

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type, std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), type_(type), label_names_(std::move(label_names)) {}

void FamilyBase::AppendLine(std::string& out, std::string_view suffix, const std::vector<std::string>& values,
                            std::string_view extra_label, std::string_view extra_value, double value) const {
  out += name_;
  out += suffix;
  if (!values.empty() || !extra_label.empty()) {
    out += '{';
    bool first = true;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!first) out += ',';
      first = false;
      out += label_names_[i];
      out += "=\"";
      AppendEscapedLabelValue(out, values[i]);
      out += '"';
    }
    if (!extra_label.empty()) {
      if (!first) out += ',';
      out += extra_label;
      out += "=\"";
      out += extra_value;  // a formatted number: nothing to escape
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += FormatValue(value);
  out += '\n';
}

Status FamilyBase::CheckLabelCount(const std::vector<std::string>& values) const {
  if (values.size() == label_names_.size()) return Status::Ok();
  std::string names;
  for (const auto& n : label_names_) names += (names.empty() ? "" : ", ") + n;
  return Status::Error(name_ + ": got " + std::to_string(values.size()) + " label values, want " +
                       std::to_string(label_names_.size()) + " (" + names + ")");
}

CallbackFamily::CallbackFamily(std::string name, std::string help, MetricType type,
                               std::vector<std::string> label_names, Collector collect)
    : FamilyBase(std::move(name), std::move(help), type, std::move(label_names)), collect_(std::move(collect)) {}

void CallbackFamily::AppendSamples(std::string& out) const {
  std::vector<Sample> samples;
  try {
    samples = collect_();
  } catch (const std::exception&) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::vector<const Sample*> ok;
  ok.reserve(samples.size());
  for (auto& s : samples) {
    if (s.label_values.size() != label_names().size()) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (auto sanitized = SanitizedValues(s.label_values)) s.label_values = std::move(*sanitized);
    ok.push_back(&s);
  }
  std::stable_sort(ok.begin(), ok.end(),
                   [](const Sample* a, const Sample* b) { return a->label_values < b->label_values; });
  for (size_t i = 0; i < ok.size(); ++i) {
    if (i > 0 && ok[i]->label_values == ok[i - 1]->label_values) {
      errors_.fetch_add(1, std::memory_order_relaxed);  // a repeated series: keep the first
      continue;
    }
    AppendLine(out, "", ok[i]->label_values, "", "", ok[i]->value);
  }
}

}  // namespace internal

// ---- Family<T> ----------------------------------------------------------------------------------

template <typename T>
Family<T>::Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
                  std::shared_ptr<const std::vector<double>> bounds)
    : internal::FamilyBase(std::move(name), std::move(help), type, std::move(label_names)),
      bounds_(bounds ? std::move(bounds) : std::make_shared<const std::vector<double>>()) {
  discard_ = NewChild();
  if (this->label_names().empty()) children_.emplace(std::vector<std::string>{}, NewChild());
}

template <typename T>
std::unique_ptr<T> Family<T>::NewChild() {
  if constexpr (std::is_same_v<T, metrics::Histogram>) {
    return std::make_unique<T>(bounds_);
  } else if constexpr (std::is_same_v<T, metrics::Counter>) {
    auto c = std::make_unique<T>();
    c->errors_ = &errors_;
    return c;
  } else {
    return std::make_unique<T>();
  }
}

template <typename T>
T& Family<T>::With(const std::vector<std::string>& label_values) {
  auto child = TryWith(label_values);
  if (!child.ok()) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return *discard_;
  }
  return **child;
}

template <typename T>
StatusOr<T*> Family<T>::TryWith(const std::vector<std::string>& label_values) {
  if (auto s = CheckLabelCount(label_values); !s.ok()) return s;
  // Keyed by the values as rendered, so two values that differ only in invalid UTF-8 bytes are one
  // series rather than two identical lines in the exposition.
  std::optional<std::vector<std::string>> sanitized = SanitizedValues(label_values);
  const auto& key = sanitized ? *sanitized : label_values;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = children_.find(key);
  if (it == children_.end()) it = children_.emplace(key, NewChild()).first;
  return it->second.get();
}

template <typename T>
void Family<T>::AppendSamples(std::string& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [values, child] : children_) {
    if constexpr (std::is_same_v<T, metrics::Histogram>) {
      const auto snap = child->Read();
      const auto& bounds = child->bounds();
      for (size_t i = 0; i < bounds.size(); ++i) {
        AppendLine(out, "_bucket", values, "le", FormatValue(bounds[i]), static_cast<double>(snap.cumulative[i]));
      }
      AppendLine(out, "_bucket", values, "le", "+Inf", static_cast<double>(snap.count));
      AppendLine(out, "_sum", values, "", "", snap.sum);
      AppendLine(out, "_count", values, "", "", static_cast<double>(snap.count));
    } else {
      AppendLine(out, "", values, "", "", child->Value());
    }
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

// ---- Registry -----------------------------------------------------------------------------------

Status Registry::CheckNew(const std::string& name, const std::string& help, MetricType type,
                          const std::vector<std::string>& label_names) const {
  const std::string what = "metric \"" + SanitizeUtf8(name) + "\": ";
  if (!IsValidMetricName(name)) return Status::Error(what + "invalid name (want [a-zA-Z_][a-zA-Z0-9_]*)");
  if (help.empty()) return Status::Error(what + "empty HELP text");
  const bool total = EndsWith(name, "_total");
  if (type == MetricType::kCounter && !total) return Status::Error(what + "counter names must end in \"_total\"");
  if (type != MetricType::kCounter && total) {
    return Status::Error(what + "only counter names may end in \"_total\"");
  }
  if (type != MetricType::kHistogram) {
    for (std::string_view s : {"_bucket", "_sum", "_count"}) {
      if (EndsWith(name, s)) return Status::Error(what + "suffix \"" + std::string(s) + "\" is reserved for histograms");
    }
  }
  std::set<std::string_view> seen;
  for (const auto& l : label_names) {
    if (!IsValidLabelName(l)) {
      return Status::Error(what + "invalid label name \"" + SanitizeUtf8(l) +
                           "\" (want [a-zA-Z_][a-zA-Z0-9_]*, not starting with \"__\")");
    }
    if (l == "le" || l == "quantile") return Status::Error(what + "label name \"" + l + "\" is reserved");
    if (!seen.insert(l).second) return Status::Error(what + "duplicate label name \"" + l + "\"");
  }
  if (families_.count(name) != 0) return Status::Error(what + "already registered");
  for (const auto& s : SeriesNames(name, type)) {
    if (series_names_.count(s) != 0 || families_.count(s) != 0) {
      return Status::Error(what + "series \"" + s + "\" collides with another metric");
    }
  }
  if (series_names_.count(name) != 0) return Status::Error(what + "collides with a series of another metric");
  return Status::Ok();
}

Status Registry::Insert(const std::shared_ptr<internal::FamilyBase>& family) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto s = CheckNew(family->name(), family->help(), family->type(), family->label_names()); !s.ok()) return s;
  for (const auto& s : SeriesNames(family->name(), family->type())) series_names_.insert(s);
  families_.emplace(family->name(), family);
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

StatusOr<Family<Counter>*> Registry::AddCounter(const std::string& name, const std::string& help,
                                                const std::vector<std::string>& label_names) {
  auto f = std::make_shared<Family<metrics::Counter>>(name, help, MetricType::kCounter, label_names, nullptr);
  if (auto s = Insert(f); !s.ok()) return s;
  return f.get();
}

StatusOr<Family<Gauge>*> Registry::AddGauge(const std::string& name, const std::string& help,
                                            const std::vector<std::string>& label_names) {
  auto f = std::make_shared<Family<metrics::Gauge>>(name, help, MetricType::kGauge, label_names, nullptr);
  if (auto s = Insert(f); !s.ok()) return s;
  return f.get();
}

StatusOr<Family<Histogram>*> Registry::AddHistogram(const std::string& name, const std::string& help,
                                                    const std::vector<std::string>& label_names,
                                                    std::vector<double> bounds) {
  if (auto s = NormalizeBounds(bounds); !s.ok()) {
    return Status::Error("metric \"" + SanitizeUtf8(name) + "\": " + s.Message());
  }
  auto f = std::make_shared<Family<metrics::Histogram>>(
      name, help, MetricType::kHistogram, label_names, std::make_shared<const std::vector<double>>(std::move(bounds)));
  if (auto s = Insert(f); !s.ok()) return s;
  return f.get();
}

Status Registry::AddCallback(MetricType type, const std::string& name, const std::string& help,
                             const std::vector<std::string>& label_names, Collector collect) {
  const std::string what = "metric \"" + SanitizeUtf8(name) + "\": ";
  if (type == MetricType::kHistogram) return Status::Error(what + "callback families are counters or gauges");
  if (!collect) return Status::Error(what + "no callback function");
  return Insert(std::make_shared<internal::CallbackFamily>(name, help, type, label_names, std::move(collect)));
}

Family<Counter>& Registry::Counter(const std::string& name, const std::string& help,
                                   const std::vector<std::string>& label_names) {
  auto r = AddCounter(name, help, label_names);
  if (r.ok()) return **r;
  Remember(r.status());
  auto f = std::make_shared<Family<metrics::Counter>>(name, help, MetricType::kCounter, label_names, nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  detached_.push_back(f);
  return *f;
}

Family<Gauge>& Registry::Gauge(const std::string& name, const std::string& help,
                               const std::vector<std::string>& label_names) {
  auto r = AddGauge(name, help, label_names);
  if (r.ok()) return **r;
  Remember(r.status());
  auto f = std::make_shared<Family<metrics::Gauge>>(name, help, MetricType::kGauge, label_names, nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  detached_.push_back(f);
  return *f;
}

Family<Histogram>& Registry::Histogram(const std::string& name, const std::string& help,
                                       const std::vector<std::string>& label_names, std::vector<double> bounds) {
  auto r = AddHistogram(name, help, label_names, bounds);
  if (r.ok()) return **r;
  Remember(r.status());
  // Detached: keep the bounds when they were valid, so observations still land somewhere sane.
  if (!NormalizeBounds(bounds).ok()) bounds.clear();
  auto f = std::make_shared<Family<metrics::Histogram>>(
      name, help, MetricType::kHistogram, label_names, std::make_shared<const std::vector<double>>(std::move(bounds)));
  std::lock_guard<std::mutex> lock(mu_);
  detached_.push_back(f);
  return *f;
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

std::string Registry::Render() const {
  std::vector<std::shared_ptr<internal::FamilyBase>> families;
  {
    std::lock_guard<std::mutex> lock(mu_);
    families.reserve(families_.size());
    for (const auto& [name, f] : families_) families.push_back(f);
  }
  std::string out, body;
  for (const auto& f : families) {
    body.clear();
    f->AppendSamples(body);  // callbacks run here, with no registry lock held
    if (body.empty()) continue;
    out += "# HELP ";
    out += f->name();
    out += ' ';
    AppendEscapedHelp(out, f->help());
    out += "\n# TYPE ";
    out += f->name();
    out += ' ';
    out += MetricTypeName(f->type());
    out += '\n';
    out += body;
  }
  return out;
}

uint64_t Registry::usage_errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [name, f] : families_) n += f->usage_errors();
  return n;
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
