// Config flags: --config, --set and the shorthands.
#include "app/config_flags.h"

#include <yaml-cpp/yaml.h>

#include <functional>

namespace ember::app {
namespace {

// A YAML double-quoted scalar, so that a flag's text stays one string whatever it holds.
std::string Quoted(const std::string& text) {
  YAML::Emitter out;
  out << YAML::DoubleQuoted << text;
  return out.c_str();
}

// --NAME VALUE, standing for the overrides `expand` makes of VALUE.
CLI::Option* AddShorthand(
    CLI::App* command, ConfigFlags* flags, const std::string& name, const std::string& value_name,
    const std::string& help,
    std::function<std::vector<config::Override>(const std::string& value)> expand) {
  return command
      ->add_option_function<std::string>(
          "--" + name,
          [flags, expand](const std::string& value) {
            for (config::Override& override_ : expand(value)) {
              flags->shorthands.push_back(std::move(override_));
            }
          },
          help)
      ->type_name(value_name);
}

// --NAME N for one numeric key.
CLI::Option* AddCountFlag(CLI::App* command, ConfigFlags* flags, const std::string& name,
                          const std::string& value_name, const std::string& key,
                          const std::string& help) {
  return AddShorthand(command, flags, name, value_name, help,
                      [key](const std::string& value) {
                        return std::vector<config::Override>{{key, value}};
                      })
      ->check(Digits());
}

// --[no-]NAME for one boolean key.
void AddKeySwitch(CLI::App* command, ConfigFlags* flags, const std::string& name,
                  const std::string& key, const std::string& help, const std::string& group) {
  AddSwitch(
      command, name,
      [flags, key](bool on) {
        flags->shorthands.push_back({key, on ? "true" : "false"});
      },
      help)
      ->group(group);
}

}  // namespace

std::vector<config::Override> ConfigFlags::overrides() const {
  std::vector<config::Override> all = implied;
  all.insert(all.end(), set.begin(), set.end());
  all.insert(all.end(), shorthands.begin(), shorthands.end());
  return all;
}

CLI::Option* AddConfigFlags(CLI::App* command, ConfigFlags* flags, bool required) {
  CLI::Option* config =
      AddValue(command, "--config", &flags->path, "FILE",
               required ? "job config (YAML): cluster shape, tables, model, data, train"
                        : "job config (YAML) for the defaults below")
          ->group("config");
  if (required) config->required();
  static const CLI::Validator override_text(
      [](std::string& text) -> std::string {
        auto parsed = config::ParseOverride(text);
        return parsed.ok() ? "" : std::string(parsed.status().message());
      },
      "", "override");
  CLI::Option* set =
      command
          ->add_option_function<std::vector<std::string>>(
              "--set",
              [flags](const std::vector<std::string>& texts) {
                for (const std::string& text : texts) {
                  flags->set.push_back(*config::ParseOverride(text));  // checked above
                }
              },
              "override any config key (repeatable): cluster.servers=3, train.mode=bsp, "
              "tables.item_id.dim=32, model.hidden=[128,64]")
          ->type_name("KEY=VALUE")
          ->check(override_text)
          ->allow_extra_args(false)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
          ->group("config");
  if (!required) set->needs(config);
  return config;
}

void AddDataRootFlag(CLI::App* command, ConfigFlags* flags) {
  AddValue(command, "--data-root", &flags->data_root, "DIR",
           "folder that relative data paths resolve against (default: the config's)")
      ->group("config");
}

void AddTrainingFlags(CLI::App* command, ConfigFlags* flags) {
  const std::string group = "training";
  AddShorthand(
      command, flags, "steps", "N", "override train.steps (and count the run in steps)",
      [](const std::string& value) {
        return std::vector<config::Override>{{"train.steps", value}, {"train.epochs", "0"}};
      })
      ->check(Digits())
      ->group(group);
  AddCountFlag(command, flags, "epochs", "N", "train.epochs",
               "override train.epochs (interaction data)")
      ->group(group);
  AddCountFlag(command, flags, "batch-size", "N", "train.batch_size", "override train.batch_size")
      ->group(group);
  AddShorthand(command, flags, "backend", "KIND", "override train.backend: cpu, cuda or auto",
               [](const std::string& value) {
                 return std::vector<config::Override>{{"train.backend", value}};
               })
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->group(group);
  AddKeySwitch(command, flags, "wire-fp16", "train.wire_fp16",
               "rows and gradients travel as fp16 (train.wire_fp16)", group);
  AddKeySwitch(command, flags, "pipeline", "train.pipeline",
               "pull the next step's rows while this step computes (train.pipeline)", group);
}

void AddSyncFlags(CLI::App* command, ConfigFlags* flags) {
  const std::string group = "many trainers";
  AddCountFlag(command, flags, "trainers", "N", "cluster.trainers",
               "override cluster.trainers (each trainer reads its own share of the data)")
      ->check(CLI::Range(1, 1'000'000))
      ->group(group);
  AddShorthand(command, flags, "mode", "MODE",
               "override train.mode: asp, bsp or ssp (bsp and ssp turn train.pipeline off)",
               [flags](const std::string& value) {
                 if (value != "asp") flags->implied.push_back({"train.pipeline", "false"});
                 return std::vector<config::Override>{{"train.mode", value}};
               })
      ->check(CLI::IsMember({"asp", "bsp", "ssp"}))
      ->group(group);
  AddCountFlag(command, flags, "staleness", "S", "train.staleness",
               "override train.staleness (ssp)")
      ->group(group);
}

void AddCheckpointFlags(CLI::App* command, ConfigFlags* flags) {
  const std::string group = "checkpoints";
  AddCountFlag(command, flags, "checkpoint-every", "N", "cluster.checkpoint_every",
               "override cluster.checkpoint_every: a checkpoint every N steps")
      ->group(group);
  AddShorthand(command, flags, "checkpoint-dir", "DIR",
               "override cluster.checkpoint_dir: where periodic checkpoints go",
               [](const std::string& value) {
                 return std::vector<config::Override>{{"cluster.checkpoint_dir", Quoted(value)}};
               })
      ->group(group);
}

void AddMemoryBudgetFlag(CLI::App* command, ConfigFlags* flags) {
  AddCountFlag(command, flags, "memory-budget", "BYTES", "cluster.server_memory_budget",
               "override cluster.server_memory_budget (needs --data-dir)")
      ->group("servers");
}

Result<local::ClusterConfig> LoadConfig(const ConfigFlags& flags) {
  return local::LoadClusterConfig(flags.path, flags.data_root, flags.overrides());
}

std::vector<std::string> ConfigArgs(const ConfigFlags& flags) {
  std::vector<std::string> args = {"--config", flags.path};
  for (const config::Override& override_ : flags.overrides()) {
    args.insert(args.end(), {"--set", override_.ToString()});
  }
  return args;
}

}  // namespace ember::app
