// Queue-name normalisation for the trace readers (declared in sim/trace_fields.h): a trace's team
// name, in any case, separator or script, becomes a valid queue name ([a-z0-9-], 1-63 characters)
// without losing letters.
//
// Text is read as UTF-8; a byte that is not part of valid UTF-8 is read as Latin-1 (exports from
// older tools: 0xC9 is "É"). Then, per code point:
//   - ASCII letters and digits: lower-cased;
//   - `-`, `_`, `.`, `/`, `:`, space, and non-ASCII spaces and punctuation (U+00A0-U+00BF, U+00D7,
//     U+00F7, U+2000-U+206F, U+3000-U+303F): a separator `-`;
//   - Latin letters with diacritics and ligatures (U+00C0-U+017F): their ASCII letters
//     ("É" -> "e", "ß" -> "ss", "Æ" -> "ae", "ł" -> "l");
//   - any other non-ASCII code point (other scripts, symbols): "u" and its hex code, set apart by
//     `-` ("日本" -> "u65e5-u672c"), so that a name in another script keeps a queue of its own;
//   - any other ASCII character is dropped.
// Runs of `-` collapse and are trimmed; at most 63 characters.
// Threading: plain functions; QueueNamer is a plain value owned by one reader.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "sim/trace_fields.h"

namespace tidal::sim::trace_fields {
namespace {

// The next code point of `s` at `*i` (advanced past it): UTF-8, or one Latin-1 byte where the
// bytes are not valid UTF-8 (overlong forms and surrogates included).
uint32_t NextCodePoint(std::string_view s, size_t* i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(*i);
  if (c < 0x80) return static_cast<unsigned char>(s[(*i)++]);
  int n = 0;
  uint32_t cp = 0, min = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 1, cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 2, cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 3, cp = c & 0x07, min = 0x10000;
  }
  bool ok = n > 0;
  for (int k = 1; ok && k <= n; ++k) {
    if (*i + static_cast<size_t>(k) >= s.size() || (b(*i + static_cast<size_t>(k)) & 0xC0) != 0x80) {
      ok = false;
      break;
    }
    cp = (cp << 6) | (b(*i + static_cast<size_t>(k)) & 0x3F);
  }
  if (!ok || cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++*i;
    return c;  // Latin-1
  }
  *i += static_cast<size_t>(n) + 1;
  return cp;
}

// The ASCII spelling of a Latin letter U+00C0-U+017F (lower case), or nullptr when it is not one.
const char* FoldLatin(uint32_t cp) {
  // U+00C0-U+00FF; "" marks the two symbols (x and /), handled as separators before this.
  static const char* const kLatin1[64] = {
      "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",   // C0-CF
      "d", "n", "o", "o", "o", "o", "o",  "",  "o", "u", "u", "u", "u", "y", "th", "ss", // D0-DF
      "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",   // E0-EF
      "d", "n", "o", "o", "o", "o", "o",  "",  "o", "u", "u", "u", "u", "y", "th", "y",  // F0-FF
  };
  // U+0100-U+017F (Latin Extended-A), in code point order.
  static const char* const kExtA[128] = {
      "a", "a", "a", "a", "a", "a", "c", "c", "c", "c", "c", "c", "c", "c", "d", "d",    // 100-10F
      "d", "d", "e", "e", "e", "e", "e", "e", "e", "e", "e", "e", "g", "g", "g", "g",    // 110-11F
      "g", "g", "g", "g", "h", "h", "h", "h", "i", "i", "i", "i", "i", "i", "i", "i",    // 120-12F
      "i", "i", "ij", "ij", "j", "j", "k", "k", "k", "l", "l", "l", "l", "l", "l", "l",  // 130-13F
      "l", "l", "l", "n", "n", "n", "n", "n", "n", "n", "n", "n", "o", "o", "o", "o",    // 140-14F
      "o", "o", "oe", "oe", "r", "r", "r", "r", "r", "r", "s", "s", "s", "s", "s", "s",  // 150-15F
      "s", "s", "t", "t", "t", "t", "t", "t", "u", "u", "u", "u", "u", "u", "u", "u",    // 160-16F
      "u", "u", "u", "u", "w", "w", "y", "y", "y", "z", "z", "z", "z", "z", "z", "s",    // 170-17F
  };
  if (cp >= 0xC0 && cp <= 0xFF) return *kLatin1[cp - 0xC0] ? kLatin1[cp - 0xC0] : nullptr;
  if (cp >= 0x100 && cp <= 0x17F) return kExtA[cp - 0x100];
  return nullptr;
}

bool IsSeparator(uint32_t cp) {
  return cp == '-' || cp == '_' || cp == '.' || cp == '/' || cp == ':' || cp == ' ' || (cp >= 0xA0 && cp <= 0xBF) ||
         cp == 0xD7 || cp == 0xF7 || (cp >= 0x2000 && cp <= 0x206F) || (cp >= 0x3000 && cp <= 0x303F);
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::string ToUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) AppendUtf8(NextCodePoint(text, &i), &out);
  return out;
}

std::string NormaliseQueueName(const std::string& raw) {
  std::string out;
  auto dash = [&] {
    if (!out.empty() && out.back() != '-') out += '-';  // no leading or doubled '-'
  };
  for (size_t i = 0; i < raw.size();) {
    const uint32_t cp = NextCodePoint(raw, &i);
    if (cp < 0x80 && std::isalnum(static_cast<int>(cp))) {
      out += static_cast<char>(std::tolower(static_cast<int>(cp)));
    } else if (IsSeparator(cp)) {
      dash();
    } else if (const char* latin = FoldLatin(cp); latin != nullptr) {
      out += latin;
    } else if (cp >= 0x80) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "u%x", static_cast<unsigned>(cp));
      dash();
      out += hex;
      out += '-';
    }  // any other ASCII character is dropped
  }
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string QueueNamer::Map(const std::string& raw) {
  std::string q = NormaliseQueueName(raw);
  if (q.empty()) return q;
  sources_[q].insert(raw);
  if (q != raw) renames_.emplace(raw, q);
  return q;
}

std::vector<std::string> QueueNamer::Merges() const {
  std::vector<std::string> out;
  for (const auto& [q, raws] : sources_) {
    if (raws.size() < 2) continue;
    std::string s = q + " <- ";
    bool first = true;
    for (const auto& r : raws) {
      s += (first ? "" : ", ") + r;
      first = false;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tidal::sim::trace_fields
