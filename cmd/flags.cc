#include <algorithm>
#include <iostream>

#include "cmd/flags.h"

namespace tidal::cli {

bool Flags::Parse(const std::vector<std::string>& known) {
  for (size_t i = 0; i < args_.size(); ++i) {
    const std::string& a = args_[i];
    if (a.size() < 2 || a[0] != '-') {
      positional_.push_back(a);
      continue;
    }
    std::string name = a, value;
    bool has_value = false;
    if (auto eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      has_value = true;
    }
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::cerr << "unknown flag " << name << "\n";
      return false;
    }
    if (!has_value) {
      if (i + 1 >= args_.size()) {
        std::cerr << "flag " << name << " needs a value\n";
        return false;
      }
      value = args_[++i];
    }
    values_.emplace_back(name, value);
  }
  return true;
}

std::string Flags::Get(const std::string& name, const std::string& def) const {
  for (auto it = values_.rbegin(); it != values_.rend(); ++it) {
    if (it->first == name) return it->second;
  }
  return def;
}

}  // namespace tidal::cli
