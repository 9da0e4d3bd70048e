// UTF-8 hygiene for strings that come from users (label values, names) and go to consumers that
// refuse invalid UTF-8 (Prometheus refuses a whole scrape with one invalid label value).
// Threading: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace tidal {

// Overlong forms, surrogates and code points above U+10FFFF are invalid, as in Go's utf8 package.
bool IsValidUtf8(std::string_view s);
// `s` with every invalid UTF-8 sequence replaced by U+FFFD (valid input is returned unchanged).
std::string SanitizeUtf8(std::string_view s);

}  // namespace tidal
