// What each `ember` subcommand does with its parsed flags (app/command_flags.h), one file per
// command. Each returns the process exit code: 0 success, 1 runtime failure, 2 bad usage or
// config.
#pragma once

#include "app/command_flags.h"

namespace ember::app {

int RunCluster(const ClusterFlags& flags);
int RunTune(const TuneFlags& flags);
int RunScheduler(const SchedulerFlags& flags);
int RunServer(const ServerFlags& flags);
int RunTrain(const TrainFlags& flags);
int RunBench(const BenchFlags& flags);
int RunDenseBench(const DenseBenchFlags& flags);
int RunTierBench(const TierBenchFlags& flags);
int RunCheckpointBench(const CheckpointBenchFlags& flags);
int RunCheckpoint(const CheckpointFlags& flags);
int RunStatus(const StatusFlags& flags);
int RunDrain(const DrainFlags& flags);
int RunExport(const ExportFlags& flags);
int RunLookup(const LookupFlags& flags);
int RunKeygen(const KeygenFlags& flags);
int RunPlot(const PlotFlags& flags);
int RunPlan(const PlanFlags& flags);

}  // namespace ember::app
