// Hostlist expansion and compression (see hostlist.h for the grammar).
//
// Threading: pure functions; no shared state.
#include "shim/slurm/hostlist.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <utility>

namespace tidal::slurm {
namespace {

constexpr size_t kMaxDigits = 18;  // fits uint64_t with room for hi - lo + 1

std::string Quote(std::string_view s) {
  constexpr size_t kShown = 200;
  if (s.size() <= kShown) return "'" + std::string(s) + "'";
  return "'" + std::string(s.substr(0, kShown)) + "...' (" + std::to_string(s.size()) + " chars)";
}

Status Fail(std::string_view field, std::string_view what, std::string_view expr) {
  return Status::Error(std::string(field) + ": " + std::string(what) + " in " + Quote(expr));
}

bool IsSep(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

struct Range {
  uint64_t lo = 0, hi = 0;
  size_t width = 0;  // digits of lo: the zero padding of every number of the range
};
// One piece of an item: literal text, or a bracket of ranges.
struct Piece {
  std::string text;
  std::vector<Range> ranges;  // empty = literal
  uint64_t count = 1;
};

bool ParseNumber(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > kMaxDigits) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

// Parses the inside of one bracket ("01-03,07") into *piece.
Status ParseBracket(std::string_view body, std::string_view field, std::string_view expr,
                    size_t max_names, Piece* piece) {
  if (body.empty()) return Fail(field, "empty '[]'", expr);
  piece->count = 0;
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    if (comma == std::string_view::npos) comma = body.size();
    std::string_view r = body.substr(start, comma - start);
    size_t dash = r.find('-');
    std::string_view lo_s = dash == std::string_view::npos ? r : r.substr(0, dash);
    std::string_view hi_s = dash == std::string_view::npos ? r : r.substr(dash + 1);
    Range range;
    if (!ParseNumber(lo_s, &range.lo) || !ParseNumber(hi_s, &range.hi)) {
      return Fail(field, "bad range '" + std::string(r) + "' (want N or LO-HI, up to 18 digits)", expr);
    }
    if (range.hi < range.lo) return Fail(field, "range '" + std::string(r) + "' runs backwards", expr);
    range.width = lo_s.size();
    uint64_t n = range.hi - range.lo + 1;
    if (n > max_names || piece->count + n > max_names) {
      return Fail(field, "expands to more than " + std::to_string(max_names) + " names", expr);
    }
    piece->count += n;
    piece->ranges.push_back(range);
    start = comma + 1;
  }
  return Status::Ok();
}

std::string Pad(uint64_t v, size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

void Emit(const std::vector<Piece>& pieces, size_t i, std::string& prefix, std::vector<std::string>* out) {
  if (i == pieces.size()) {
    out->push_back(prefix);
    return;
  }
  const Piece& p = pieces[i];
  size_t keep = prefix.size();
  if (p.ranges.empty()) {
    prefix += p.text;
    Emit(pieces, i + 1, prefix, out);
  } else {
    for (const Range& r : p.ranges) {
      for (uint64_t v = r.lo;; ++v) {
        prefix += Pad(v, r.width);
        Emit(pieces, i + 1, prefix, out);
        prefix.resize(keep);
        if (v == r.hi) break;
      }
    }
  }
  prefix.resize(keep);
}

}  // namespace

Status ExpandHostlist(std::string_view expr, std::vector<std::string>* out, std::string_view field,
                      size_t max_names) {
  // Split into items at separators outside brackets, checking the brackets on the way.
  std::vector<std::string_view> items;
  int depth = 0;
  size_t item_start = 0;
  for (size_t i = 0; i < expr.size(); ++i) {
    char c = expr[i];
    if (c == '[') {
      if (++depth > 1) return Fail(field, "nested '['", expr);
    } else if (c == ']') {
      if (--depth < 0) return Fail(field, "unbalanced ']'", expr);
    } else if (depth == 0 && IsSep(c)) {
      if (i > item_start) items.push_back(expr.substr(item_start, i - item_start));
      item_start = i + 1;
    }
  }
  if (depth != 0) return Fail(field, "unbalanced '['", expr);
  if (expr.size() > item_start) items.push_back(expr.substr(item_start));

  std::vector<std::vector<Piece>> parsed;
  uint64_t total = 0;
  for (std::string_view item : items) {
    std::vector<Piece> pieces;
    uint64_t count = 1;
    size_t pos = 0;
    while (pos < item.size()) {
      size_t open = item.find('[', pos);
      if (open == std::string_view::npos) open = item.size();
      if (open > pos) pieces.push_back(Piece{std::string(item.substr(pos, open - pos)), {}, 1});
      if (open == item.size()) break;
      size_t close = item.find(']', open);  // balanced: checked above
      Piece bracket;
      Status st = ParseBracket(item.substr(open + 1, close - open - 1), field, expr, max_names, &bracket);
      if (!st.ok()) return st;
      count *= bracket.count;  // both <= max_names: no overflow in 64 bits
      if (count > max_names) {
        return Fail(field, "expands to more than " + std::to_string(max_names) + " names", expr);
      }
      pieces.push_back(std::move(bracket));
      pos = close + 1;
    }
    total += count;
    if (total + out->size() > max_names) {
      return Fail(field, "expands to more than " + std::to_string(max_names) + " names", expr);
    }
    parsed.push_back(std::move(pieces));
  }
  out->reserve(out->size() + total);
  std::string prefix;
  for (const auto& pieces : parsed) Emit(pieces, 0, prefix, out);
  return Status::Ok();
}

namespace {

struct Split {
  std::string prefix;
  std::string digits;  // "" = no numeric suffix
};

Split SplitName(const std::string& name) {
  size_t i = name.size();
  while (i > 0 && IsDigit(name[i - 1])) --i;
  return {name.substr(0, i), name.substr(i)};
}

bool Literal(const std::string& name, const Split& s) {
  return s.digits.empty() || s.prefix.empty() || s.digits.size() > kMaxDigits ||
         name.find_first_of("[],") != std::string::npos;
}

bool Padded(const std::string& digits) { return digits.size() > 1 && digits[0] == '0'; }

}  // namespace

std::string CompressHostlist(const std::vector<std::string>& names) {
  // Widths used with zero padding, per prefix: an unpadded number of that many digits joins them.
  std::map<std::string, std::vector<size_t>> padded_widths;
  for (const std::string& n : names) {
    Split s = SplitName(n);
    if (!Literal(n, s) && Padded(s.digits)) padded_widths[s.prefix].push_back(s.digits.size());
  }
  using Key = std::pair<std::string, size_t>;  // prefix, width (0 = unpadded)
  std::vector<std::pair<bool, Key>> order;     // (is group, key); literals carry their name
  std::map<Key, std::vector<uint64_t>> groups;
  std::map<std::string, bool> seen_literal;
  for (const std::string& n : names) {
    Split s = SplitName(n);
    if (Literal(n, s)) {
      if (!seen_literal[n]) order.push_back({false, {n, 0}});
      seen_literal[n] = true;
      continue;
    }
    size_t width = 0;
    if (Padded(s.digits)) {
      width = s.digits.size();
    } else if (auto it = padded_widths.find(s.prefix); it != padded_widths.end()) {
      if (std::find(it->second.begin(), it->second.end(), s.digits.size()) != it->second.end()) {
        width = s.digits.size();
      }
    }
    Key key{s.prefix, width};
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back({true, key});
    uint64_t v = 0;
    ParseNumber(s.digits, &v);
    it->second.push_back(v);
  }
  std::string out;
  for (const auto& [is_group, key] : order) {
    if (!out.empty()) out += ',';
    if (!is_group) {
      out += key.first;
      continue;
    }
    std::vector<uint64_t>& v = groups[key];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    out += key.first;
    if (v.size() == 1) {
      out += Pad(v[0], key.second);
      continue;
    }
    out += '[';
    for (size_t i = 0; i < v.size();) {
      size_t j = i;
      while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
      if (i > 0) out += ',';
      out += Pad(v[i], key.second);
      if (j > i) out += '-' + Pad(v[j], key.second);
      i = j + 1;
    }
    out += ']';
  }
  return out;
}

}  // namespace tidal::slurm
