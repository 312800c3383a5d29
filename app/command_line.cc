// The command line: help layout, parse errors, and the shared flag kinds.
#include "app/command_line.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "app/logging.h"

namespace ember::app {
namespace {

constexpr size_t kWidth = 100;      // help text wraps before this column
constexpr size_t kFlagColumn = 28;  // where a flag's description starts

// Appends `text` word-wrapped to kWidth, continuing on column `column`, later lines indented by
// `indent` spaces; newlines in `text` start new lines.
void AppendWrapped(std::string_view text, size_t column, size_t indent, std::string* out) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find_first_of(" \n", start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    if (column > indent && column + 1 + word.size() > kWidth) {
      *out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (column > indent) {
      *out += ' ';
      ++column;
    }
    *out += word;
    column += word.size();
    if (end < text.size() && text[end] == '\n') {
      *out += "\n" + std::string(indent, ' ');
      column = indent;
    }
    start = end + 1;
  }
}

// Help for a subcommand: "usage: ...", what it does, then its flags by group (in the order the
// groups first appear), --help last in "options". Hidden flags (group "") are left out.
class CommandFormatter : public CLI::Formatter {
 public:
  CommandFormatter(std::string usage, std::string description)
      : usage_(std::move(usage)), description_(std::move(description)) {}

  std::string make_help(const CLI::App* app, std::string, CLI::AppFormatMode) const override {
    std::string out = "usage: " + usage_ + "\n\n";
    AppendWrapped(description_, 0, 0, &out);
    out += "\n";
    const CLI::Option* help = app->get_help_ptr();
    std::vector<std::pair<std::string, std::vector<const CLI::Option*>>> groups;
    for (const std::string& group : app->get_groups()) {
      if (group.empty()) continue;
      auto options = app->get_options([&](const CLI::Option* option) {
        return option->get_group() == group && option != help;
      });
      if (!options.empty()) groups.emplace_back(group, std::move(options));
    }
    if (help != nullptr) {  // last in "options", which comes last when there is none yet
      auto options = std::find_if(groups.begin(), groups.end(),
                                  [](const auto& group) { return group.first == "options"; });
      if (options == groups.end()) {
        options = groups.emplace(groups.end(), "options", std::vector<const CLI::Option*>{});
      }
      options->second.push_back(help);
    }
    for (const auto& [group, options] : groups) out += make_group(group, false, options);
    return out;
  }

  std::string make_option(const CLI::Option* option, bool positional) const override {
    std::string out = "  " + make_option_name(option, positional) + make_option_opts(option);
    if (out.size() + 2 > kFlagColumn) {
      out += "\n" + std::string(kFlagColumn, ' ');
    } else {
      out += std::string(kFlagColumn - out.size(), ' ');
    }
    AppendWrapped(make_option_desc(option), kFlagColumn, kFlagColumn, &out);
    return out + "\n";
  }

  // "--[no-]pipeline" for a switch, "-h, --help" for more than one name.
  std::string make_option_name(const CLI::Option* option, bool) const override {
    const std::vector<std::string>& long_names = option->get_lnames();
    if (long_names.size() == 2 && long_names[1] == "no-" + long_names[0]) {
      return "--[no-]" + long_names[0];
    }
    std::string names;
    for (const std::string& name : option->get_snames())
      names += (names.empty() ? "-" : ", -") + name;
    for (const std::string& name : long_names) names += (names.empty() ? "--" : ", --") + name;
    return names;
  }

  // The value's name, without the validator's description that CLI11 appends after a ':' (the
  // flag's help says what it accepts); a ':' inside brackets is the name's own (HOST[:PORT]).
  // Switches take none.
  std::string make_option_opts(const CLI::Option* option) const override {
    if (option->get_type_size() == 0) return "";
    const std::string name = option->get_type_name();
    int depth = 0;
    size_t end = 0;
    for (; end < name.size() && !(name[end] == ':' && depth == 0); ++end) {
      depth += name[end] == '[' ? 1 : name[end] == ']' ? -1 : 0;
    }
    return " " + name.substr(0, end);
  }

 private:
  const std::string usage_;
  const std::string description_;
};

// `ember --help`: the commands with their one-line summaries.
class EmberFormatter : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string, CLI::AppFormatMode) const override {
    std::string out = "usage: ember <command> [options]\n\ncommands:\n";
    for (const CLI::App* command : app->get_subcommands([](const CLI::App*) { return true; })) {
      std::string line = "  " + command->get_name();
      line += std::string(line.size() < 15 ? 15 - line.size() : 1, ' ');
      AppendWrapped(command->get_description(), line.size(), 15, &line);
      out += line + "\n";
    }
    return out + "\n'ember <command> --help' describes a command's options.\n";
  }
};

// What went wrong, naming the flag. An argument no flag takes comes first: CLI11 checks required
// flags before it reports those, and a misspelt flag is the likelier cause of either.
std::string ErrorText(const CLI::ParseError& error, const CLI::App& command) {
  const std::vector<std::string> extras = command.remaining();
  for (const std::string& extra : extras) {
    if (extra.size() > 1 && extra[0] == '-') {
      return "unknown flag '" + extra.substr(0, extra.find('=')) + "'";
    }
  }
  if (!extras.empty()) return "unexpected argument '" + extras.front() + "'";
  return error.what();
}

}  // namespace

std::unique_ptr<CLI::App> MakeEmberApp() {
  auto ember = std::make_unique<CLI::App>("ember", "ember");
  ember->formatter(std::make_shared<EmberFormatter>());
  ember->set_help_flag("-h,--help", "show this text");
  ember->require_subcommand(1);
  // Inherited by every subcommand: ungrouped flags are listed under "options", and a flag given
  // twice keeps its last value (as `--steps 5 --steps 7` always did).
  ember->option_defaults()->group("options")->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  return ember;
}

CLI::App* AddCommand(CLI::App& ember, const CommandText& text) {
  CLI::App* command = ember.add_subcommand(text.name, text.summary);
  command->formatter(std::make_shared<CommandFormatter>(text.usage, text.description));
  return command;
}

int RunCommandLine(CLI::App& ember, const std::vector<Command>& commands, int argc, char** argv) {
  for (const Command& command : commands) AddLoggingFlags(command.app);  // last in each help
  if (argc < 2) {
    std::fputs(ember.help().c_str(), stderr);
    return 2;
  }
  const std::string first = argv[1];
  bool known = first.empty() || first[0] == '-';
  for (const Command& command : commands) known = known || command.app->get_name() == first;
  if (!known) {
    std::fprintf(stderr, "ember: unknown command '%s'\n\n%s", first.c_str(), ember.help().c_str());
    return 2;
  }
  try {
    ember.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(ember.help().c_str(), stdout);  // the chosen subcommand's, when there is one
    return 0;
  } catch (const CLI::ParseError& error) {
    const std::vector<CLI::App*> chosen = ember.get_subcommands();
    const CLI::App& command = chosen.empty() ? ember : *chosen.front();
    const std::string name = chosen.empty() ? "ember" : "ember " + command.get_name();
    std::fprintf(stderr, "%s: %s\n\n%s", name.c_str(), ErrorText(error, command).c_str(),
                 ember.help().c_str());
    return 2;
  }
  for (const Command& command : commands) {
    if (!command.app->parsed()) continue;
    SetUpLogging(command.app->get_name());  // a command that names its role differently redoes it
    return command.run();
  }
  return 2;  // unreachable: parsing requires one subcommand
}

const CLI::Validator& Digits() {
  static const CLI::Validator digits(
      [](std::string& text) -> std::string {
        if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) return "";
        return "'" + text + "' is not a non-negative integer";
      },
      "", "digits");
  return digits;
}

CLI::Option* AddSwitch(CLI::App* command, const std::string& name, std::function<void(bool)> set,
                       const std::string& help) {
  return command
      ->add_flag_function(
          "--" + name + ",!--no-" + name, [set](int64_t count) { set(count > 0); }, help)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

int PrintError(std::string_view command, const Status& status, int exit_code) {
  LogFinalError("ember " + std::string(command) + ": " + status.ToString());
  return exit_code;
}

}  // namespace ember::app
