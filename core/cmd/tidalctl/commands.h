// tidalctl subcommands. Each takes the arguments after its name and returns the exit code:
// 0 success, 1 the command ran but found a problem (e.g. an invalid file), 2 bad usage.
#pragma once

#include <string>
#include <vector>

namespace tidal::cli {

using Args = std::vector<std::string>;

int Place(const Args& args);

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
