// Minimal command-line flag reader shared by Tidal's binaries.
// Threading: plain value.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tidal::cli {

using Args = std::vector<std::string>;

// Minimal flag reader: "--name value", "--name=value", "-o value".
class Flags {
 public:
  explicit Flags(const Args& args) : args_(args) {}
  // Returns false and prints an error on an unknown flag or a missing value.
  bool Parse(const std::vector<std::string>& known);
  std::string Get(const std::string& name, const std::string& def = "") const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  const Args& args_;
  std::vector<std::pair<std::string, std::string>> values_;
  std::vector<std::string> positional_;
};

}  // namespace tidal::cli
