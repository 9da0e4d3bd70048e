// Helpers for tests that check where in a text an error points.
#pragma once

#include <string>

#include <gtest/gtest.h>

namespace tidal::testing {

// 1-based line of the first line of `text` containing `needle` (0 if none).
inline int LineOfText(const std::string& text, const std::string& needle) {
  int line = 1;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find('\n', start);
    const std::string l = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (l.find(needle) != std::string::npos) return line;
    if (end == std::string::npos) break;
    start = end + 1;
    ++line;
  }
  ADD_FAILURE() << "no line contains " << needle;
  return 0;
}

}  // namespace tidal::testing
