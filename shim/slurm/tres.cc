// Parsers for Slurm's TRES / GRES strings (see tres.h).
//
// Threading: pure functions; no shared state.
#include "shim/slurm/tres.h"

#include <cstdint>
#include <utility>

namespace tidal::slurm {
namespace {

constexpr size_t kMaxDigits = 18;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

std::string Quote(std::string_view s) {
  constexpr size_t kShown = 120;
  if (s.size() <= kShown) return "'" + std::string(s) + "'";
  return "'" + std::string(s.substr(0, kShown)) + "...'";
}

Status Fail(std::string_view field, const std::string& what) {
  return Status::Error(std::string(field) + ": " + what);
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Powers of 1024 for Slurm's unit suffixes; 0 = not a suffix.
int SuffixPower(char c) {
  switch (c) {
    case 'k': case 'K': return 1;
    case 'm': case 'M': return 2;
    case 'g': case 'G': return 3;
    case 't': case 'T': return 4;
    case 'p': case 'P': return 5;
    default: return 0;
  }
}

Status CountImpl(std::string_view field, std::string_view what, std::string_view text, int64_t max,
                 int64_t* out) {
  std::string_view s = Trim(text);
  if (s.empty()) return Fail(field, std::string(what) + " is empty");
  if (s.front() == '-') return Fail(field, std::string(what) + " " + Quote(s) + " is negative");
  size_t digits = 0;
  while (digits < s.size() && IsDigit(s[digits])) ++digits;
  int power = 0;
  if (digits + 1 == s.size()) power = SuffixPower(s.back());
  if (digits == 0 || (digits != s.size() && power == 0)) {
    return Fail(field, std::string(what) + " " + Quote(s) + " is not a number");
  }
  if (digits > kMaxDigits) return Fail(field, std::string(what) + " " + Quote(s) + " overflows");
  int64_t v = 0;
  for (size_t i = 0; i < digits; ++i) v = v * 10 + (s[i] - '0');
  for (int i = 0; i < power; ++i) {
    if (__builtin_mul_overflow(v, int64_t{1024}, &v)) {
      return Fail(field, std::string(what) + " " + Quote(s) + " overflows");
    }
  }
  if (v > max) {
    return Fail(field, std::string(what) + " " + Quote(s) + " is over the limit of " + std::to_string(max));
  }
  *out = v;
  return Status::Ok();
}

// Splits at `seps` outside parentheses; empty pieces dropped. Returns false on unbalanced parens.
bool SplitTop(std::string_view s, std::string_view seps, std::vector<std::string_view>* out) {
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    char c = i < s.size() ? s[i] : seps[0];
    if (c == '(') ++depth;
    if (c == ')' && --depth < 0) return false;
    if (depth == 0 && seps.find(c) != std::string_view::npos) {
      std::string_view piece = Trim(s.substr(start, i - start));
      if (!piece.empty()) out->push_back(piece);
      start = i + 1;
    }
  }
  return depth == 0;
}

// "4", "-4", "+4", "4k": a count (maybe a bad one), not a GPU model name.
bool LooksNumeric(std::string_view t) { return IsDigit(t[0]) || t[0] == '-' || t[0] == '+'; }

bool ValidModel(std::string_view m) {
  if (m.empty() || m.size() > 64) return false;
  for (char c : m) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '_' || c == '-' ||
              c == '.';
    if (!ok) return false;
  }
  return true;
}

std::vector<std::string_view> SplitColons(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ':') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// One "gpu..." entry, its "gres:"/"gres/" prefix already removed: "gpu:a100:4", "gpu=4",
// "gpu:a100=4", "gpu:4", "gpu". Sets *is_gpu false (and succeeds) for other gres names.
Status ParseGpuEntry(std::string_view field, std::string_view entry, bool* is_gpu, std::string* model,
                     int64_t* count) {
  size_t name_end = entry.find_first_of(":=");
  std::string_view name = entry.substr(0, name_end);
  *is_gpu = name == "gpu";
  if (!*is_gpu) return Status::Ok();
  model->clear();
  *count = 1;
  std::string_view rest = name_end == std::string_view::npos ? "" : entry.substr(name_end);
  std::string_view count_s;
  std::string_view model_s;
  if (size_t eq = rest.find('='); eq != std::string_view::npos) {
    count_s = rest.substr(eq + 1);
    std::string_view left = rest.substr(0, eq);  // "" or ":a100"
    if (!left.empty()) model_s = left.substr(1);
    if (!left.empty() && (left[0] != ':' || model_s.find(':') != std::string_view::npos)) {
      return Fail(field, "cannot read GPU entry " + Quote(entry));
    }
  } else if (!rest.empty()) {
    std::vector<std::string_view> tokens = SplitColons(rest.substr(1));
    if (tokens.size() == 1) {
      if (tokens[0].empty()) return Fail(field, "cannot read GPU entry " + Quote(entry));
      if (LooksNumeric(tokens[0])) {
        count_s = tokens[0];
      } else {
        model_s = tokens[0];
      }
    } else if (tokens.size() == 2) {
      model_s = tokens[0];
      count_s = tokens[1];
    } else {
      return Fail(field, "cannot read GPU entry " + Quote(entry));
    }
  }
  if (!model_s.empty() || rest.find("::") != std::string_view::npos) {
    if (!ValidModel(model_s)) return Fail(field, "GPU model " + Quote(model_s) + " is not a name");
    *model = std::string(model_s);
  }
  if (rest.find('=') != std::string_view::npos || !count_s.empty()) {
    Status st = CountImpl(field, "gpu count", count_s, kMaxGpuCount, count);
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

}  // namespace

Status ParseCount(std::string_view field, std::string_view text, int64_t max, int64_t* out) {
  return CountImpl(field, "count", text, max, out);
}

Status ParseMemoryMb(std::string_view field, std::string_view text, int64_t* mb) {
  std::string_view s = Trim(text);
  std::string bad = "memory " + Quote(s);
  if (s.empty()) return Fail(field, "memory is empty");
  if (s.front() == '-') return Fail(field, bad + " is negative");
  size_t i = 0;
  while (i < s.size() && IsDigit(s[i])) ++i;
  size_t int_digits = i;
  std::string_view frac;
  if (i < s.size() && s[i] == '.') {
    size_t f = ++i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    frac = s.substr(f, i - f);
  }
  int power = 2;  // MiB
  if (i + 1 == s.size() && SuffixPower(s[i])) {
    power = SuffixPower(s[i]);
    ++i;
  }
  if (int_digits == 0 || i != s.size()) return Fail(field, bad + " is not a number");
  if (int_digits > kMaxDigits || frac.size() > 6) return Fail(field, bad + " overflows");
  // Exact arithmetic in KiB: int * 1024^(power-1) + frac * 1024^(power-1) / 10^digits.
  int64_t unit_kib = 1;
  for (int p = 1; p < power; ++p) unit_kib *= 1024;
  int64_t whole = 0, f = 0, scale = 1;
  for (size_t k = 0; k < int_digits; ++k) whole = whole * 10 + (s[k] - '0');
  for (char c : frac) {
    f = f * 10 + (c - '0');
    scale *= 10;
  }
  int64_t kib = 0, frac_kib = 0;
  if (__builtin_mul_overflow(whole, unit_kib, &kib) || __builtin_mul_overflow(f, unit_kib, &frac_kib)) {
    return Fail(field, bad + " overflows");
  }
  frac_kib = (frac_kib + scale - 1) / scale;
  if (__builtin_add_overflow(kib, frac_kib, &kib)) return Fail(field, bad + " overflows");
  int64_t v = kib / 1024 + (kib % 1024 != 0 ? 1 : 0);
  if (v > kMaxMemoryMb) return Fail(field, bad + " is over the limit of " + std::to_string(kMaxMemoryMb) + " MiB");
  *mb = v;
  return Status::Ok();
}

Status ParseTresGpus(std::string_view field, std::string_view text, GpuRequest* out) {
  GpuRequest r;
  std::vector<std::string_view> entries;
  if (!SplitTop(text, ",;", &entries)) return Fail(field, "unbalanced '(' in " + Quote(text));
  for (std::string_view e : entries) {
    if (e.substr(0, 5) == "gres:" || e.substr(0, 5) == "gres/") {
      e.remove_prefix(5);
    } else if (e.substr(0, 3) != "gpu") {
      continue;  // cpu=4, mem=..., license/..., not a gres
    }
    bool is_gpu = false;
    std::string model;
    int64_t count = 0;
    Status st = ParseGpuEntry(field, e, &is_gpu, &model, &count);
    if (!st.ok()) return st;
    if (!is_gpu) continue;
    if (r.found && model != r.model) {
      return Fail(field, "more than one GPU model ('" + r.model + "', '" + model + "') in " + Quote(text));
    }
    r.found = true;
    r.model = model;
    r.count += count;
    if (r.count > kMaxGpuCount) {
      return Fail(field, "gpu count over the limit of " + std::to_string(kMaxGpuCount) + " in " + Quote(text));
    }
  }
  *out = std::move(r);
  return Status::Ok();
}

Status ParseTresCounts(std::string_view field, std::string_view text, TresCounts* out) {
  TresCounts t;
  std::vector<std::string_view> entries;
  if (!SplitTop(text, ",", &entries)) return Fail(field, "unbalanced '(' in " + Quote(text));
  int64_t typed = 0;
  int models = 0;
  for (std::string_view e : entries) {
    size_t eq = e.find('=');
    if (eq == std::string_view::npos) return Fail(field, "entry " + Quote(e) + " is not KEY=VALUE");
    std::string_view key = e.substr(0, eq), value = e.substr(eq + 1);
    Status st;
    if (key == "cpu") {
      st = ParseCount(field, value, kMaxCount, &t.cpus);
    } else if (key == "mem") {
      st = ParseMemoryMb(field, value, &t.memory_mb);
    } else if (key == "node") {
      st = ParseCount(field, value, kMaxCount, &t.nodes);
    } else if (key == "gres/gpu") {
      st = CountImpl(field, "gpu count", value, kMaxGpuCount, &t.gpus);
    } else if (key.substr(0, 9) == "gres/gpu:") {
      int64_t n = 0;
      st = CountImpl(field, "gpu count", value, kMaxGpuCount, &n);
      if (st.ok()) {
        typed += n;
        if (typed > kMaxGpuCount) return Fail(field, "gpu count over the limit in " + Quote(text));
        std::string_view m = key.substr(9);
        if (!ValidModel(m)) return Fail(field, "GPU model " + Quote(m) + " is not a name");
        if (models++ == 0) t.gpu_model = std::string(m);
        else if (t.gpu_model != m) t.gpu_model.clear();
      }
    }
    if (!st.ok()) return st;
  }
  if (t.gpus < 0 && models > 0) t.gpus = typed;
  *out = std::move(t);
  return Status::Ok();
}

Status ParseNodeGres(std::string_view field, std::string_view text, NodeGpus* out) {
  NodeGpus g;
  std::string_view s = Trim(text);
  if (s.empty() || s == "(null)" || s == "N/A") {
    *out = std::move(g);
    return Status::Ok();
  }
  std::vector<std::string_view> entries;
  if (!SplitTop(s, ",", &entries)) return Fail(field, "unbalanced '(' in " + Quote(text));
  for (std::string_view e : entries) {
    if (e.substr(0, 5) == "gres:" || e.substr(0, 5) == "gres/") e.remove_prefix(5);
    if (size_t paren = e.find('('); paren != std::string_view::npos) {
      if (e.back() != ')') return Fail(field, "cannot read gres entry " + Quote(e));
      e = e.substr(0, paren);  // (S:0-1), (IDX:0-1,4)
    }
    std::vector<std::string_view> tokens = SplitColons(e);
    if (tokens[0] != "gpu") continue;
    std::vector<std::string_view> rest;
    for (size_t i = 1; i < tokens.size(); ++i) {
      if (tokens[i] != "no_consume") rest.push_back(tokens[i]);
    }
    std::string model;
    int64_t count = 1;
    std::string_view count_s;
    if (rest.size() == 1) {
      if (rest[0].empty()) return Fail(field, "cannot read gres entry " + Quote(e));
      if (LooksNumeric(rest[0])) {
        count_s = rest[0];
      } else {
        model = std::string(rest[0]);
      }
    } else if (rest.size() == 2) {
      model = std::string(rest[0]);
      count_s = rest[1];
    } else if (rest.size() > 2) {
      return Fail(field, "cannot read gres entry " + Quote(e));
    }
    if (!model.empty() && !ValidModel(model)) return Fail(field, "GPU model " + Quote(model) + " is not a name");
    if (!count_s.empty()) {
      Status st = CountImpl(field, "gpu count", count_s, kMaxGpuCount, &count);
      if (!st.ok()) return st;
    }
    g.count += count;
    if (g.count > kMaxGpuCount) return Fail(field, "gpu count over the limit in " + Quote(text));
    bool merged = false;
    for (auto& [m, n] : g.types) {
      if (m == model) {
        n += count;
        merged = true;
      }
    }
    if (!merged) g.types.emplace_back(model, count);
  }
  *out = std::move(g);
  return Status::Ok();
}

}  // namespace tidal::slurm
