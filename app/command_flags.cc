// The list of `ember` subcommands; each one's help text and flags are in its own file, beside what
// it does (app/commands.h).
#include "app/command_flags.h"

#include "app/commands.h"

namespace ember::app {

std::vector<Command> AddCommands(CLI::App& ember) {
  return {
      MakeClusterCommand(ember),
      MakeTuneCommand(ember),
      MakeSchedulerCommand(ember),
      MakeServerCommand(ember),
      MakeReplicaCommand(ember),
      MakeTrainCommand(ember),
      MakeBenchCommand(ember),
      MakeDenseBenchCommand(ember),
      MakeTierBenchCommand(ember),
      MakeCheckpointBenchCommand(ember),
      MakeReplicaBenchCommand(ember),
      MakePlanCommand(ember),
      MakeCheckpointCommand(ember),
      MakeStatusCommand(ember),
      MakeDrainCommand(ember),
      MakeExportCommand(ember),
      MakeLookupCommand(ember),
#ifdef EMBER_HAVE_RETRIEVAL
      MakeRecommendCommand(ember),
#endif
      MakePlotCommand(ember),
      MakeKeygenCommand(ember),
  };
}

}  // namespace ember::app
