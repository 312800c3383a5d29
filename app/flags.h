// Command-line flags of the `ember` subcommands: `--name value` or `--name=value`, a fixed set per
// subcommand, with generated --help text. Unknown flags and missing values are errors that name
// the flag.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ember::app {

struct FlagSpec {
  std::string name;        // without dashes
  std::string value_name;  // empty: a boolean switch
  std::string help;
};

class Flags {
 public:
  // Parses argv[first..argc). "--help" is always accepted and sets help().
  static Result<Flags> Parse(int argc, char** argv, int first, const std::vector<FlagSpec>& known);

  bool help() const { return help_; }
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  // The flag as an unsigned integer; InvalidArgument naming the flag if it is not one.
  Result<std::optional<uint64_t>> GetUint(const std::string& name) const;

 private:
  std::map<std::string, std::string> values_;
  bool help_ = false;
};

// "usage: <usage>\n\n<summary>\n\noptions:\n  --name VALUE  help..."
std::string UsageText(const std::string& usage, const std::string& summary,
                      const std::vector<FlagSpec>& known);

}  // namespace ember::app
