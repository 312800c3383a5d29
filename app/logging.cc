// --log-level / --log-format and the log line layouts.
#include "app/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

namespace ember::app {
namespace {

constexpr const char* kLevelVariable = "EMBER_LOG_LEVEL";
constexpr const char* kFormatVariable = "EMBER_LOG_FORMAT";
constexpr std::array<const char*, 7> kLevels = {"trace", "debug",    "info", "warn",
                                                "error", "critical", "off"};
constexpr std::array<const char*, 2> kFormats = {"text", "json"};
// The name of the default logger once the format is json.
constexpr char kJsonLogger[] = "json";

// The values of the parsed subcommand's flags (empty: not given).
struct LoggingFlags {
  std::string level, format;
};
LoggingFlags& Flags() {
  static LoggingFlags flags;
  return flags;
}

template <size_t N>
bool IsOneOf(const std::string& value, const std::array<const char*, N>& names) {
  for (const char* name : names) {
    if (value == name) return true;
  }
  return false;
}

template <size_t N>
std::string Joined(const std::array<const char*, N>& names) {
  std::string joined;
  for (const char* name : names) joined += (joined.empty() ? "" : ", ") + std::string(name);
  return joined;
}

// The flag's value, else the variable's when it is one of `names`, else `fallback`.
template <size_t N>
std::string Resolve(const std::string& flag, const char* variable,
                    const std::array<const char*, N>& names, const std::string& fallback) {
  if (!flag.empty()) return flag;
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') return fallback;
  if (IsOneOf(value, names)) return value;
  std::fprintf(stderr, "ember: ignoring %s='%s' (not one of %s); using %s\n", variable, value,
               Joined(names).c_str(), fallback.c_str());
  return fallback;
}

// %* in a pattern: the message with JSON string escapes.
class JsonEscapedMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm&,
              spdlog::memory_buf_t& out) override {
    for (char c : message.payload) {
      switch (c) {
        case '"':
          Append(out, "\\\"");
          break;
        case '\\':
          Append(out, "\\\\");
          break;
        case '\n':
          Append(out, "\\n");
          break;
        case '\r':
          Append(out, "\\r");
          break;
        case '\t':
          Append(out, "\\t");
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
            Append(out, escaped);
          } else {
            out.push_back(c);
          }
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonEscapedMessage>();
  }

 private:
  static void Append(spdlog::memory_buf_t& out, std::string_view text) {
    out.append(text.data(), text.data() + text.size());
  }
};

// Role names are ember's own ("server", "trainer-1"): nothing in them needs escaping.
std::unique_ptr<spdlog::formatter> JsonLines(std::string_view role) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  formatter->add_flag<JsonEscapedMessage>('*');
  formatter->set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","role":")" + std::string(role) +
                         R"(","pid":)" + std::to_string(getpid()) +
                         R"(,"level":"%l","message":"%*"})");
  return formatter;
}

}  // namespace

void AddLoggingFlags(CLI::App* command) {
  LoggingFlags& flags = Flags();
  command
      ->add_option("--log-level", flags.level,
                   "trace, debug, info, warn, error, critical or off (default: $" +
                       std::string(kLevelVariable) + ", else info)")
      ->type_name("LEVEL")
      ->check(CLI::IsMember(std::vector<std::string>(kLevels.begin(), kLevels.end())))
      ->group("logging");
  command
      ->add_option("--log-format", flags.format,
                   "text or json: one JSON object a line (default: $" +
                       std::string(kFormatVariable) + ", else text)")
      ->type_name("FORMAT")
      ->check(CLI::IsMember(std::vector<std::string>(kFormats.begin(), kFormats.end())))
      ->group("logging");
}

void SetUpLogging(std::string_view role, spdlog::level::level_enum default_level) {
  const LoggingFlags& flags = Flags();
  const std::string default_name(spdlog::level::to_string_view(default_level).data(),
                                 spdlog::level::to_string_view(default_level).size());
  const std::string level = Resolve(flags.level, kLevelVariable, kLevels, default_name);
  const std::string format = Resolve(flags.format, kFormatVariable, kFormats, "text");
  if (format == "json") {
    // stderr, so that stdout keeps only the progress lines and summary.
    if (spdlog::default_logger()->name() != kJsonLogger) {
      spdlog::set_default_logger(std::make_shared<spdlog::logger>(
          kJsonLogger, std::make_shared<spdlog::sinks::stderr_sink_mt>()));
    }
    spdlog::set_formatter(JsonLines(role));
  } else {
    spdlog::set_pattern("%H:%M:%S.%e " + std::string(role) + " %^%l%$ %v");
  }
  spdlog::set_level(spdlog::level::from_str(level));
  // What a started child inherits. A default level is not passed on: each command has its own.
  if (!flags.level.empty()) setenv(kLevelVariable, level.c_str(), 1);
  setenv(kFormatVariable, format.c_str(), 1);
}

void LogFinalError(std::string_view line) {
  std::fflush(stdout);
  const std::shared_ptr<spdlog::logger> logger = spdlog::default_logger();
  if (logger->name() != kJsonLogger) {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
    return;
  }
  // Past the level check: --log-level off still reports why the command failed.
  const spdlog::details::log_msg message(logger->name(), spdlog::level::err,
                                         spdlog::string_view_t(line.data(), line.size()));
  for (const spdlog::sink_ptr& sink : logger->sinks()) sink->log(message);
  logger->flush();
}

}  // namespace ember::app
