// Each `ember` subcommand, one file per command: its help text and flags (Make*Command) and what
// it does with the flags parsed into its struct (Run*, app/command_flags.h). Each Run returns the
// process exit code: 0 success, 1 runtime failure, 2 bad usage or config.
#pragma once

#include "app/command_flags.h"

namespace ember::app {

// Each command's help text and flags, beside what it does: the command registered on `ember`.
Command MakeClusterCommand(CLI::App& ember);
Command MakeTuneCommand(CLI::App& ember);
Command MakeSchedulerCommand(CLI::App& ember);
Command MakeServerCommand(CLI::App& ember);
Command MakeReplicaCommand(CLI::App& ember);
Command MakeTrainCommand(CLI::App& ember);
Command MakeBenchCommand(CLI::App& ember);
Command MakeDenseBenchCommand(CLI::App& ember);
Command MakeTierBenchCommand(CLI::App& ember);
Command MakeCheckpointBenchCommand(CLI::App& ember);
Command MakeReplicaBenchCommand(CLI::App& ember);
Command MakePlanCommand(CLI::App& ember);
Command MakeCheckpointCommand(CLI::App& ember);
Command MakeStatusCommand(CLI::App& ember);
Command MakeDrainCommand(CLI::App& ember);
Command MakeExportCommand(CLI::App& ember);
Command MakeLookupCommand(CLI::App& ember);
Command MakeRecommendCommand(CLI::App& ember);
Command MakePlotCommand(CLI::App& ember);
Command MakeKeygenCommand(CLI::App& ember);

int RunCluster(const ClusterFlags& flags);
int RunTune(const TuneFlags& flags);
int RunScheduler(const SchedulerFlags& flags);
int RunServer(const ServerFlags& flags);
int RunReplica(const ReplicaFlags& flags);
int RunTrain(const TrainFlags& flags);
int RunBench(const BenchFlags& flags);
int RunDenseBench(const DenseBenchFlags& flags);
int RunTierBench(const TierBenchFlags& flags);
int RunCheckpointBench(const CheckpointBenchFlags& flags);
int RunReplicaBench(const ReplicaBenchFlags& flags);
int RunCheckpoint(const CheckpointFlags& flags);
int RunStatus(const StatusFlags& flags);
int RunDrain(const DrainFlags& flags);
int RunExport(const ExportFlags& flags);
int RunLookup(const LookupFlags& flags);
int RunRecommend(const RecommendFlags& flags);
int RunKeygen(const KeygenFlags& flags);
int RunPlot(const PlotFlags& flags);
int RunPlan(const PlanFlags& flags);

}  // namespace ember::app
