// Flag parsing.
#include "app/flags.h"

#include <algorithm>
#include <charconv>

namespace ember::app {

Result<Flags> Flags::Parse(int argc, char** argv, int first, const std::vector<FlagSpec>& known) {
  Flags flags;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      flags.help_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) return InvalidArgument("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    auto spec = std::find_if(known.begin(), known.end(),
                             [&](const FlagSpec& f) { return f.name == name; });
    if (spec == known.end()) return InvalidArgument("unknown flag '--" + name + "'");
    if (spec->value_name.empty()) {
      if (value) return InvalidArgument("flag '--" + name + "' takes no value");
      flags.values_[name] = "true";
      continue;
    }
    if (!value) {
      if (i + 1 >= argc) return InvalidArgument("flag '--" + name + "' needs a value");
      value = argv[++i];
    }
    flags.values_[name] = *value;
  }
  return flags;
}

std::string Flags::Get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

Result<std::optional<uint64_t>> Flags::GetUint(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::optional<uint64_t>();
  uint64_t value = 0;
  const std::string& text = it->second;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return InvalidArgument("flag '--" + name + "': '" + text + "' is not a non-negative integer");
  }
  return std::optional<uint64_t>(value);
}

std::string UsageText(const std::string& usage, const std::string& summary,
                      const std::vector<FlagSpec>& known) {
  std::string text = "usage: " + usage + "\n\n" + summary + "\n\noptions:\n";
  size_t width = 6;  // "--help"
  std::vector<std::string> left;
  for (const FlagSpec& f : known) {
    left.push_back("--" + f.name + (f.value_name.empty() ? "" : " " + f.value_name));
    width = std::max(width, left.back().size());
  }
  for (size_t i = 0; i < known.size(); ++i) {
    text += "  " + left[i] + std::string(width - left[i].size() + 2, ' ') + known[i].help + "\n";
  }
  text += "  --help" + std::string(width - 6 + 2, ' ') + "show this text\n";
  return text;
}

}  // namespace ember::app
