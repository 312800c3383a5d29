// `ember replica`: runs a serving replica of a training cluster until SIGINT or SIGTERM.
#include "app/commands.h"
#include "app/config_flags.h"
#include "app/logging.h"
#include "app/process_setup.h"
#include "common/file_io.h"
#include "ps/replica/replica.h"

namespace ember::app {
namespace {

constexpr CommandText kReplicaCommand = {
    .name = "replica",
    .summary = "serve lookups from a copy of a training cluster's tables, kept fresh",
    .usage = "ember replica --scheduler ENDPOINT [--data-dir DIR] [--checkpoint DIR] [options]",
    .description =
        "Registers with a training cluster as a reader, copies its tables (weights only) and "
        "follows the stream of rows the training servers change, applying it in rounds every "
        "--poll-ms. Clients look rows up from it as from a cluster: `ember lookup --scheduler "
        "REPLICA_ENDPOINT`, or a read-only client. With --data-dir it saves its rows there and "
        "starts from them after a restart; --checkpoint starts from a training checkpoint.",
};

void AddReplicaFlags(CLI::App* command, ReplicaFlags* flags) {
  command->add_option("--scheduler", flags->scheduler, "the training cluster's scheduler")
      ->required()
      ->type_name("ENDPOINT");
  AddConfigFlags(command, &flags->config, /*required=*/false);
  AddValue(command, "--bind", &flags->bind, "ENDPOINT",
           "the socket clients connect to (default: tcp://127.0.0.1:*)");
  AddValue(command, "--advertise", &flags->advertise, "HOST[:PORT]",
           "what clients connect to, when not the bind address");
  AddValue(command, "--data-dir", &flags->data_dir, "DIR",
           "save the rows here (every --save-s and at exit) and start from them after a restart");
  AddValue(command, "--checkpoint", &flags->checkpoint, "DIR",
           "start from this training checkpoint when --data-dir holds no rows yet");
  AddCount(command, "--poll-ms", &flags->poll_ms, "MS",
           "how often to ask the training servers for changed rows when none were waiting "
           "(default 20)");
  AddCount(command, "--save-s", &flags->save_s, "SECONDS",
           "how often to save the rows into --data-dir (default 60)");
  command->add_option("--endpoint-file", flags->endpoint_file,
                      "write the endpoint clients connect to into FILE once serving");
  AddSecurityFlags(command, &flags->security, /*can_bind=*/true);
}

}  // namespace

Command MakeReplicaCommand(CLI::App& ember) {
  return MakeCommand(ember, kReplicaCommand, AddReplicaFlags, RunReplica);
}

int RunReplica(const ReplicaFlags& flags) {
  SetUpLogging("replica");
  local::SecurityConfig security_config;
  ps::ReplicaOptions options;
  if (!flags.config.path.empty()) {
    auto config = LoadConfig(flags.config);
    if (!config.ok()) return PrintError("replica", config.status(), 2);
    security_config = config->security;
    options.limits = config->limits;
  }
  options.scheduler_endpoint = flags.scheduler;
  options.bind = flags.bind;
  options.advertise = flags.advertise;
  options.checkpoint = flags.checkpoint;
  options.feed.poll_interval = Millis(flags.poll_ms);
  options.save_interval = Millis(int64_t{flags.save_s} * 1000);
  if (!flags.data_dir.empty()) {
    if (Status made = MakeDirectories(flags.data_dir); !made.ok()) {
      return PrintError("replica", made, 2);
    }
    auto data_dir = CanonicalDirectory(flags.data_dir, "--data-dir");
    if (!data_dir.ok()) return PrintError("replica", data_dir.status(), 2);
    options.data_dir = std::move(*data_dir);
  }
  auto security = ResolveSecurity(flags.security, security_config);
  if (!security.ok()) return PrintError("replica", security.status(), 2);
  options.security = std::move(*security);
  ps::Replica replica(std::move(options));
  return ServeUntilStopped("replica", replica, [&]() -> Status {
    if (flags.endpoint_file.empty()) return Status::Ok();
    return WriteFileAtomically(flags.endpoint_file, replica.endpoint() + "\n");
  });
}

}  // namespace ember::app
