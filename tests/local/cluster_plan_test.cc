// The cluster plan (local/cluster_plan.h): its arithmetic on hand-computed cases, its bytes per
// row against real tables (so docs/sizing.md cannot drift from the code), and `ember plan`
// printing the library's figures and refusing bad input.
#include "local/cluster_plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/child_process.h"
#include "embedding/embedding_table.h"
#include "tests/test_util.h"

namespace ember {
namespace {

using local::PlanCluster;
using local::PlanInputs;
using std::chrono::seconds;

PlanInputs BillionRowsDim64Adagrad() {
  PlanInputs in;
  in.rows = 1'000'000'000;
  in.dim = 64;
  in.optimizer = OptimizerKind::kAdagrad;
  in.keys_per_second = 10e6;
  in.server_memory_bytes = uint64_t{256} << 30;
  in.server_cores = 16;
  in.partitions = 1024;
  return in;
}

TEST(ClusterPlanTest, IndexDoublesPastSeventyPercentFromSixteenEntries) {
  EXPECT_EQ(local::PartitionIndexBytes(0), 0);
  EXPECT_EQ(local::PartitionIndexBytes(1), 16 * 16);
  EXPECT_EQ(local::PartitionIndexBytes(11), 16 * 16);  // 11 of 16 is 69%
  EXPECT_EQ(local::PartitionIndexBytes(12), 16 * 32);  // 12 of 16 would be 75%
  EXPECT_EQ(local::PartitionIndexBytes(1000), 16 * 2048);
}

TEST(ClusterPlanTest, ChunksGrowWithThePartitionUpTo256KiB) {
  // 512-byte rows (dim 64 + Adagrad): chunks of 16, 16, 32, 64, 128, 256 rows, then 512.
  EXPECT_EQ(local::PartitionChunkBytes(1, 128), 16 * 512);
  EXPECT_EQ(local::PartitionChunkBytes(17, 128), 32 * 512);
  EXPECT_EQ(local::PartitionChunkBytes(33, 128), 64 * 512);
  EXPECT_EQ(local::PartitionChunkBytes(512, 128), 512 * 512);
  EXPECT_EQ(local::PartitionChunkBytes(513, 128), 2 * 256 * 1024);
  EXPECT_EQ(local::PartitionChunkBytes(10'000, 128), 20 * 256 * 1024);
}

TEST(ClusterPlanTest, BillionRowsOfDim64AdagradByHand) {
  auto plan = PlanCluster(BillionRowsDim64Adagrad());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->row_floats, 128u);  // 64 weights + 64 accumulators
  EXPECT_EQ(plan->row_bytes, 512);
  // 976563 rows per partition: 2^21 index entries (976563 / 0.7 = 1395090 needed).
  const double per_partition = 976563;
  EXPECT_DOUBLE_EQ(plan->index_bytes_per_row, 16.0 * (1 << 21) / per_partition);
  // 512 rows in the first six chunks (256 KiB), then ceil(976051 / 512) = 1907 chunks of 512.
  EXPECT_DOUBLE_EQ(plan->chunk_bytes_per_row, (1 + 1907) * 262144.0 / per_partition);
  EXPECT_DOUBLE_EQ(plan->table_bytes_per_row,
                   plan->index_bytes_per_row + plan->chunk_bytes_per_row);
  EXPECT_NEAR(plan->table_bytes_per_row, 546.53, 0.01);
  EXPECT_DOUBLE_EQ(plan->memory_bytes_per_row,
                   plan->table_bytes_per_row * local::kResidentOverTable);
  EXPECT_EQ(plan->checkpoint_bytes_per_row, 8 + 512);
  EXPECT_DOUBLE_EQ(plan->disk_bytes_per_row, (12 + 512) * local::kDiskOverKeyAndValue);
  EXPECT_EQ(plan->wire_bytes_per_key, 2 * (8 + 64 * 4));
  EXPECT_EQ(plan->disk_bytes, 0);  // no tier
  EXPECT_DOUBLE_EQ(plan->memory_bytes, 1e9 * plan->memory_bytes_per_row);
  EXPECT_DOUBLE_EQ(plan->network_bytes_per_second, 10e6 * 528);

  // Pull: the 256 bytes of weights copied out; push: the 512 bytes of weights and state.
  EXPECT_NEAR(plan->server_cpu_seconds_per_key,
              (local::kPullCpuNanosPerKey + local::kPullCpuNanosPerRowByte * 256 +
               local::kPushCpuNanosPerKey + local::kPushCpuNanosPerStateByte * 512) *
                  1e-9,
              1e-15);
  const double usable = 256.0 * (1 << 30) * local::kUsableMemoryShare;
  EXPECT_EQ(plan->servers_for_memory,
            static_cast<uint32_t>(std::ceil(plan->memory_bytes / usable)));
  EXPECT_EQ(plan->servers_for_throughput,
            static_cast<uint32_t>(std::ceil(10e6 * plan->server_cpu_seconds_per_key /
                                            (16 * local::kTargetCpuShare))));
  // 10M keys/s x 528 B = 42.2 Gbit/s over 25 Gbit/s x 0.7 per server.
  EXPECT_EQ(plan->servers_for_network, 3u);
  EXPECT_EQ(plan->servers, std::max({plan->servers_for_memory, plan->servers_for_throughput,
                                     plan->servers_for_network}));
  const double share = 1e9 / plan->servers;
  EXPECT_DOUBLE_EQ(plan->move_seconds,
                   share * 520 / local::kMoveBytesPerSecond +
                       1024.0 / plan->servers * local::kMoveSecondsPerPartition);
  EXPECT_DOUBLE_EQ(plan->reopen_seconds,
                   local::kReopenFixedSeconds +
                       share * plan->disk_bytes_per_row / local::kReopenScanBytesPerSecond);
}

TEST(ClusterPlanTest, OptimizerStateAndWireFormatSetTheBytes) {
  PlanInputs in = BillionRowsDim64Adagrad();
  in.optimizer = OptimizerKind::kAdam;  // m, v and a step count
  in.wire_format = RowFormat::kF16;
  auto adam = PlanCluster(in);
  ASSERT_TRUE(adam.ok());
  EXPECT_EQ(adam->row_floats, 64u + 129u);
  EXPECT_EQ(adam->checkpoint_bytes_per_row, 8 + 193 * 4);
  EXPECT_EQ(adam->wire_bytes_per_key, 2 * (8 + 64 * 2));
  in.optimizer = OptimizerKind::kSgd;
  EXPECT_EQ(PlanCluster(in)->row_floats, 64u);
  in.optimizer = OptimizerKind::kFtrl;
  EXPECT_EQ(PlanCluster(in)->row_floats, 64u + 128u);
}

TEST(ClusterPlanTest, TierKeepsTheHotShareInMemoryAndEveryRowOnDisk) {
  PlanInputs in = BillionRowsDim64Adagrad();
  in.hot_fraction = 0.25;
  auto plan = PlanCluster(in);
  ASSERT_TRUE(plan.ok());
  // 244141 resident rows per partition of 129 floats (a flags word), plus a CLOCK entry.
  const double resident = 244141;
  EXPECT_DOUBLE_EQ(plan->index_bytes_per_row, 16.0 * (1 << 19) / resident);
  EXPECT_DOUBLE_EQ(plan->chunk_bytes_per_row,
                   local::PartitionChunkBytes(244141, 129) / resident + 8);
  EXPECT_DOUBLE_EQ(plan->memory_bytes, 0.25e9 * plan->memory_bytes_per_row);
  // Every row in RocksDB, and cold row files of four times the rows in memory (with flags words).
  EXPECT_DOUBLE_EQ(plan->cold_file_bytes, 4 * 0.25e9 * 129 * 4);
  EXPECT_DOUBLE_EQ(plan->disk_bytes, 1e9 * plan->disk_bytes_per_row + plan->cold_file_bytes);
  auto in_memory = PlanCluster(BillionRowsDim64Adagrad());
  EXPECT_GT(plan->server_cpu_seconds_per_key, in_memory->server_cpu_seconds_per_key);
}

TEST(ClusterPlanTest, OutOfRangeInputsAreInvalidArguments) {
  auto invalid = [](void (*change)(PlanInputs&)) {
    PlanInputs in = BillionRowsDim64Adagrad();
    change(in);
    auto plan = PlanCluster(in);
    return !plan.ok() && plan.status().code() == StatusCode::kInvalidArgument;
  };
  EXPECT_TRUE(invalid([](PlanInputs& in) { in.rows = 0; }));
  EXPECT_TRUE(invalid([](PlanInputs& in) { in.rows = UINT64_MAX; }));
  EXPECT_TRUE(invalid([](PlanInputs& in) { in.dim = 0; }));
  EXPECT_TRUE(invalid([](PlanInputs& in) { in.dim = 5000; }));
  EXPECT_TRUE(invalid([](PlanInputs& in) { in.hot_fraction = 0; }));
  EXPECT_TRUE(invalid([](PlanInputs& in) { in.hot_fraction = 1.5; }));
  EXPECT_TRUE(invalid([](PlanInputs& in) { in.partitions = 0; }));
  EXPECT_TRUE(invalid([](PlanInputs& in) { in.server_cores = 0; }));
  EXPECT_TRUE(invalid([](PlanInputs& in) { in.server_memory_bytes = 0; }));
  EXPECT_TRUE(invalid([](PlanInputs& in) { in.server_network_bytes_per_second = 0; }));
  EXPECT_TRUE(invalid([](PlanInputs& in) { in.keys_per_second = -1; }));
  EXPECT_TRUE(invalid([](PlanInputs& in) { in.keys_per_second = std::nan(""); }));
  EXPECT_TRUE(invalid([](PlanInputs& in) { in.partitions = 2; }));  // needs more servers
}

uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// A real table of each optimizer, populated: its own account of its bytes matches the plan's
// table bytes per row; and (for the first, in a fresh arena) the growth of this process's
// resident memory matches the plan's, with its measured overhead, within 25%.
TEST(ClusterPlanTest, PlannedBytesPerRowMatchAPopulatedTable) {
  constexpr uint32_t kPartitions = 64;
  constexpr uint64_t kRows = kPartitions * 4000;
  std::vector<uint64_t> keys(4096);
  std::vector<float> rows(keys.size() * 64);
  bool first = true;
  for (OptimizerKind kind :
       {OptimizerKind::kAdagrad, OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kFtrl}) {
    TableSpec spec;
    spec.name = "plan";
    spec.dim = 64;
    spec.optimizer.kind = kind;
    PlanInputs in;
    in.rows = kRows;
    in.dim = spec.dim;
    in.optimizer = kind;
    in.partitions = kPartitions;
    auto plan = PlanCluster(in);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();

    const uint64_t resident_before = ResidentBytes();
    embedding::EmbeddingTable table(spec, kPartitions);
    for (uint64_t done = 0; done < kRows; done += keys.size()) {
      const size_t n = std::min<uint64_t>(keys.size(), kRows - done);
      for (size_t i = 0; i < n; ++i) keys[i] = (done + i) * 7919;
      ASSERT_TRUE(table.Pull(std::span(keys).first(n), std::span(rows).first(n * spec.dim)).ok());
    }
    ASSERT_EQ(table.rows(), kRows);
    const double table_per_row = static_cast<double>(table.bytes()) / kRows;
    EXPECT_NEAR(table_per_row / plan->table_bytes_per_row, 1.0, 0.05)
        << "optimizer " << static_cast<int>(kind) << ": table " << table_per_row << " B/row, plan "
        << plan->table_bytes_per_row;
    if (first) {
      const double resident_per_row =
          static_cast<double>(ResidentBytes() - resident_before) / kRows;
      EXPECT_NEAR(resident_per_row / plan->memory_bytes_per_row, 1.0, 0.25)
          << "resident " << resident_per_row << " B/row, plan " << plan->memory_bytes_per_row;
      first = false;
    }
  }
}

// Runs `ember plan` with `args`; its exit code, and its output in *output.
int RunPlan(const std::vector<std::string>& args, std::string* output) {
  testing::TempDir dir;
  const std::string log = dir.path() + "/plan.log";
  std::vector<std::string> argv = {EMBER_BINARY, "plan"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess plan(argv, log);
  const int code = plan.WaitExit(seconds(30));
  *output = testing::ReadFile(log);
  return code;
}

TEST(PlanCommandTest, JsonIsTheLibrarysPlan) {
  std::string output;
  ASSERT_EQ(
      RunPlan({"--rows", "10000000000", "--dim", "128", "--optimizer", "adam", "--keys-per-second",
               "2e7", "--wire", "f16", "--server-memory-gib", "512", "--server-cores", "32",
               "--server-network-gbits", "100", "--hot-fraction", "0.5", "--json"},
              &output),
      0)
      << output;
  PlanInputs in;
  in.rows = 10'000'000'000;
  in.dim = 128;
  in.optimizer = OptimizerKind::kAdam;
  in.keys_per_second = 2e7;
  in.wire_format = RowFormat::kF16;
  in.server_memory_bytes = uint64_t{512} << 30;
  in.server_cores = 32;
  in.server_network_bytes_per_second = 100e9 / 8;
  in.hot_fraction = 0.5;
  auto plan = PlanCluster(in);
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(nlohmann::json::accept(output)) << output;
  const nlohmann::json printed = nlohmann::json::parse(output);
  EXPECT_EQ(printed, nlohmann::json::parse(local::PlanJson(*plan)));
  EXPECT_EQ(printed["servers"], plan->servers);
  EXPECT_EQ(printed["memory_bytes_per_row"], plan->memory_bytes_per_row);
}

TEST(PlanCommandTest, TableShowsTheArithmetic) {
  std::string output;
  ASSERT_EQ(RunPlan({"--rows", "1000000000", "--dim", "64"}, &output), 0) << output;
  EXPECT_NE(output.find("(64 + 64) floats x 4"), std::string::npos) << output;
  EXPECT_NE(output.find("for memory"), std::string::npos) << output;
}

TEST(PlanCommandTest, BadInputIsAUsageError) {
  std::string output;
  EXPECT_EQ(RunPlan({"--rows", "0", "--dim", "64"}, &output), 2);
  EXPECT_NE(output.find("--rows"), std::string::npos) << output;
  EXPECT_EQ(RunPlan({"--rows", "10", "--dim", "64", "--optimizer", "lbfgs"}, &output), 2);
  EXPECT_NE(output.find("sgd, adagrad, adam, ftrl"), std::string::npos) << output;
  EXPECT_EQ(RunPlan({"--rows", "10"}, &output), 2);  // --dim is required
  EXPECT_EQ(RunPlan({"--rows", "10", "--dim", "64", "--hot-fraction", "2"}, &output), 2);
  EXPECT_EQ(RunPlan({"--rows", "10", "--dim", "64", "--wire", "f8"}, &output), 2);
  EXPECT_EQ(RunPlan({"--rows", "10", "--dim", "64", "--server-memory-gib", "1e30"}, &output), 2);
}

}  // namespace
}  // namespace ember
