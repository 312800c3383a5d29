// The cluster plan's arithmetic, its JSON and its text.
#include "local/cluster_plan.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/human_format.h"
#include "common/string_printf.h"
#include "embedding/cold_row_file.h"
#include "embedding/embedding_table.h"
#include "embedding/row_store.h"
#include "embedding/slab_arena.h"
#include "embedding/table_config.h"

namespace ember::local {
namespace {

using Json = nlohmann::ordered_json;  // keys in the order written

// RowStore's layout (embedding/row_store.{h,cc}): a 16-byte index entry (key, row pointer), at
// least 16 entries, doubled when an insert would fill more than 70% of them; rows in chunks
// of about as many rows as the partition holds, at least 16 and at most kMaxChunkBytes.
constexpr double kIndexEntryBytes = 16;
constexpr uint64_t kMinIndexEntries = 16;
constexpr uint64_t kMinRowsPerChunk = 16;
// The key of a row in a partition file and a move (uint64), and in RocksDB (partition + key).
constexpr double kCheckpointKeyBytes = 8;
constexpr double kDiskKeyBytes = 12;
// A key on the wire: 8 bytes in the pull request and again in the push.
constexpr double kWireKeyBytes = 8;
// A tiered table keeps the row's resident key in its CLOCK ring (embedding/clock_ring.h).
constexpr double kClockRingBytesPerRow = 8;
// The most rows a plan takes (10^15): keeps every count far from uint64 overflow.
constexpr uint64_t kMaxRows = 1'000'000'000'000'000;

double Ceil(double x) { return std::ceil(x - 1e-9); }

// "1.23 GiB"; binary units for memory and disk.
std::string Bytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? StringPrintf("%.1f B", bytes) : StringPrintf("%.2f %s", bytes, kUnits[unit]);
}

// "12.34 Gbit/s"; decimal units for network rates.
std::string Rate(double bytes_per_second) {
  return StringPrintf("%.2f Gbit/s", bytes_per_second * 8 / 1e9);
}

uint32_t StateFloats(const PlanInputs& in) {
  TableSpec spec;
  spec.dim = in.dim;
  spec.optimizer.kind = in.optimizer;
  return embedding::EmbeddingTable::PersistedFloatsPerRow(spec) - in.dim;
}

double WireValueBytes(RowFormat format) { return format == RowFormat::kF16 ? 2 : 4; }

Status ValidateInputs(const PlanInputs& in) {
  if (in.rows == 0 || in.rows > kMaxRows) {
    return InvalidArgument("--rows must be in 1.." + std::to_string(kMaxRows));
  }
  if (in.dim == 0 || in.dim > embedding::kMaxTableDim) {
    return InvalidArgument("--dim must be in 1.." + std::to_string(embedding::kMaxTableDim) +
                           " (got " + std::to_string(in.dim) + ")");
  }
  if (!std::isfinite(in.keys_per_second) || in.keys_per_second < 0) {
    return InvalidArgument("--keys-per-second must be a finite number >= 0");
  }
  if (in.server_memory_bytes == 0) return InvalidArgument("--server-memory must be above 0");
  if (in.server_cores == 0) return InvalidArgument("--server-cores must be at least 1");
  if (!(in.server_network_bytes_per_second > 0) ||
      !std::isfinite(in.server_network_bytes_per_second)) {
    return InvalidArgument("--server-network-gbits must be above 0");
  }
  if (!(in.hot_fraction > 0 && in.hot_fraction <= 1)) {
    return InvalidArgument("--hot-fraction must be in (0, 1]");
  }
  if (in.partitions == 0) return InvalidArgument("--partitions must be at least 1");
  if (embedding::OptimizerKindName(in.optimizer) == "unknown") {
    return InvalidArgument("unknown optimizer");
  }
  return Status::Ok();
}

// Server CPU seconds to pull one key and to push one, from memory.
double PullCpuSeconds(uint32_t dim) {
  return (kPullCpuNanosPerKey + kPullCpuNanosPerRowByte * dim * 4.0) * 1e-9;
}
double PushCpuSeconds(uint32_t row_floats) {
  return (kPushCpuNanosPerKey + kPushCpuNanosPerStateByte * row_floats * 4.0) * 1e-9;
}

}  // namespace

double PartitionIndexBytes(uint64_t rows) {
  if (rows == 0) return 0;
  uint64_t entries = kMinIndexEntries;
  while (rows * 10 > entries * 7) entries *= 2;
  return kIndexEntryBytes * static_cast<double>(entries);
}

double PartitionChunkBytes(uint64_t rows, uint32_t floats_per_row) {
  const uint64_t row_bytes = uint64_t{floats_per_row} * sizeof(float);
  const uint64_t max_rows_per_chunk =
      std::max<uint64_t>(kMinRowsPerChunk, embedding::RowStore::kMaxChunkBytes / row_bytes);
  double bytes = 0;
  uint64_t stored = 0;
  while (stored < rows) {
    // A new chunk of about as many rows as are stored already, filling its arena block.
    const uint64_t wanted = std::clamp(stored, kMinRowsPerChunk, max_rows_per_chunk) * row_bytes;
    const uint64_t chunk_bytes = embedding::SlabArena::BlockBytes(wanted) / row_bytes * row_bytes;
    const uint64_t chunk_rows = chunk_bytes / row_bytes;
    if (stored >= max_rows_per_chunk) {
      // From here every chunk is the same size: the rest in one step.
      const uint64_t chunks = (rows - stored + chunk_rows - 1) / chunk_rows;
      return bytes + static_cast<double>(chunks) * static_cast<double>(chunk_bytes);
    }
    bytes += static_cast<double>(chunk_bytes);
    stored += chunk_rows;
  }
  return bytes;
}

Result<Plan> PlanCluster(const PlanInputs& in) {
  RETURN_IF_ERROR(ValidateInputs(in));
  Plan p;
  p.inputs = in;
  const bool tiered = in.hot_fraction < 1;
  const double rows = static_cast<double>(in.rows);

  p.row_floats = in.dim + StateFloats(in);
  p.row_bytes = p.row_floats * 4.0;

  // Memory: the resident rows of a partition, with a flags word and a CLOCK entry when tiered.
  const uint32_t stored_floats = p.row_floats + (tiered ? 1 : 0);
  const uint64_t resident_per_partition =
      static_cast<uint64_t>(Ceil(rows * in.hot_fraction / in.partitions));
  const double resident = static_cast<double>(resident_per_partition);
  p.index_bytes_per_row = PartitionIndexBytes(resident_per_partition) / resident;
  p.chunk_bytes_per_row = PartitionChunkBytes(resident_per_partition, stored_floats) / resident +
                          (tiered ? kClockRingBytesPerRow : 0);
  p.table_bytes_per_row = p.index_bytes_per_row + p.chunk_bytes_per_row;
  p.memory_bytes_per_row = p.table_bytes_per_row * kResidentOverTable;
  p.checkpoint_bytes_per_row = kCheckpointKeyBytes + p.row_bytes;
  p.disk_bytes_per_row = (kDiskKeyBytes + p.row_bytes) * kDiskOverKeyAndValue;
  p.wire_bytes_per_key = 2 * (kWireKeyBytes + in.dim * WireValueBytes(in.wire_format));

  p.memory_bytes = rows * in.hot_fraction * p.memory_bytes_per_row;
  // Beside RocksDB, each server reserves cold row files of a multiple of its memory budget.
  p.cold_file_bytes = tiered ? rows * in.hot_fraction * stored_floats * 4.0 *
                                   static_cast<double>(embedding::kColdFileTimesBudget)
                             : 0;
  p.disk_bytes = tiered ? rows * p.disk_bytes_per_row + p.cold_file_bytes : 0;
  p.checkpoint_bytes = rows * p.checkpoint_bytes_per_row;
  p.network_bytes_per_second = in.keys_per_second * p.wire_bytes_per_key;

  const double pull = PullCpuSeconds(in.dim);
  const double push = PushCpuSeconds(p.row_floats);
  p.server_cpu_seconds_per_key =
      tiered ? pull * kTierPullSlowdown + push * kTierPushSlowdown : pull + push;
  p.keys_per_second_per_core = 1 / p.server_cpu_seconds_per_key;

  // A tiered server also holds RocksDB's block cache beside its rows.
  const double usable = static_cast<double>(in.server_memory_bytes) * kUsableMemoryShare -
                        (tiered ? embedding::RocksStoreOptions().block_cache_bytes : 0);
  if (usable <= 0) return InvalidArgument("--server-memory leaves no room for rows");
  p.servers_for_memory = static_cast<uint32_t>(std::max(1.0, Ceil(p.memory_bytes / usable)));
  p.servers_for_throughput = static_cast<uint32_t>(Ceil(
      in.keys_per_second * p.server_cpu_seconds_per_key / (in.server_cores * kTargetCpuShare)));
  p.servers_for_network = static_cast<uint32_t>(Ceil(
      p.network_bytes_per_second / (in.server_network_bytes_per_second * kTargetNetworkShare)));
  p.servers = std::max({1u, p.servers_for_memory, p.servers_for_throughput, p.servers_for_network});
  if (p.servers > in.partitions) {
    return InvalidArgument("the plan needs " + std::to_string(p.servers) +
                           " servers, more than --partitions " + std::to_string(in.partitions) +
                           ": a partition is the unit a server holds");
  }

  const double share = rows / p.servers;
  p.memory_bytes_per_server = p.memory_bytes / p.servers;
  p.disk_bytes_per_server = p.disk_bytes / p.servers;
  p.network_bytes_per_second_per_server = p.network_bytes_per_second / p.servers;
  p.move_seconds = share * p.checkpoint_bytes_per_row / kMoveBytesPerSecond +
                   static_cast<double>(in.partitions) / p.servers * kMoveSecondsPerPartition;
  p.reopen_seconds = kReopenFixedSeconds + share * p.disk_bytes_per_row / kReopenScanBytesPerSecond;
  return p;
}

std::string PlanJson(const Plan& p) {
  const PlanInputs& in = p.inputs;
  Json json = {
      {"inputs",
       {{"rows", in.rows},
        {"dim", in.dim},
        {"optimizer", std::string(embedding::OptimizerKindName(in.optimizer))},
        {"wire_format", in.wire_format == RowFormat::kF16 ? "f16" : "f32"},
        {"keys_per_second", in.keys_per_second},
        {"server_memory_bytes", in.server_memory_bytes},
        {"server_cores", in.server_cores},
        {"server_network_bytes_per_second", in.server_network_bytes_per_second},
        {"hot_fraction", in.hot_fraction},
        {"partitions", in.partitions}}},
      {"row_floats", p.row_floats},
      {"row_bytes", p.row_bytes},
      {"index_bytes_per_row", p.index_bytes_per_row},
      {"chunk_bytes_per_row", p.chunk_bytes_per_row},
      {"table_bytes_per_row", p.table_bytes_per_row},
      {"memory_bytes_per_row", p.memory_bytes_per_row},
      {"disk_bytes_per_row", p.disk_bytes_per_row},
      {"checkpoint_bytes_per_row", p.checkpoint_bytes_per_row},
      {"wire_bytes_per_key", p.wire_bytes_per_key},
      {"memory_bytes", p.memory_bytes},
      {"disk_bytes", p.disk_bytes},
      {"cold_file_bytes", p.cold_file_bytes},
      {"checkpoint_bytes", p.checkpoint_bytes},
      {"network_bytes_per_second", p.network_bytes_per_second},
      {"server_cpu_seconds_per_key", p.server_cpu_seconds_per_key},
      {"keys_per_second_per_core", p.keys_per_second_per_core},
      {"servers_for_memory", p.servers_for_memory},
      {"servers_for_throughput", p.servers_for_throughput},
      {"servers_for_network", p.servers_for_network},
      {"servers", p.servers},
      {"memory_bytes_per_server", p.memory_bytes_per_server},
      {"disk_bytes_per_server", p.disk_bytes_per_server},
      {"network_bytes_per_second_per_server", p.network_bytes_per_second_per_server},
      {"move_seconds", p.move_seconds},
      {"reopen_seconds", p.reopen_seconds},
  };
  return json.dump(2);
}

namespace {

// The plan as text, line by line: a figure with the arithmetic behind it.
struct PlanLines {
  std::string text;
  void Line(const std::string& what, const std::string& figure, const std::string& arithmetic) {
    text += StringPrintf("  %-30s %14s   %s\n", what.c_str(), figure.c_str(), arithmetic.c_str());
  }
};

// What was planned for.
void AddHeaderLines(const Plan& p, PlanLines& t) {
  const PlanInputs& in = p.inputs;
  const bool tiered = in.hot_fraction < 1;
  const double rows = static_cast<double>(in.rows);
  t.text += StringPrintf(
      "ember plan: %s rows, dim %u, %s, %s on the wire, %s keys/s pulled and pushed\n",
      FormatCount(rows).c_str(), in.dim,
      std::string(embedding::OptimizerKindName(in.optimizer)).c_str(),
      in.wire_format == RowFormat::kF16 ? "f16" : "f32", FormatCount(in.keys_per_second).c_str());
  t.text += StringPrintf(
      "            servers of %s, %u cores and %s, %s, %u partitions\n\n",
      Bytes(static_cast<double>(in.server_memory_bytes)).c_str(), in.server_cores,
      Rate(in.server_network_bytes_per_second).c_str(),
      tiered ? StringPrintf("%.0f%% of rows in memory, the rest in RocksDB", in.hot_fraction * 100)
                   .c_str()
             : "every row in memory",
      in.partitions);

}

// Bytes a row takes in memory, in a checkpoint and on disk; what a key costs.
void AddPerRowLines(const Plan& p, PlanLines& t) {
  const PlanInputs& in = p.inputs;
  const bool tiered = in.hot_fraction < 1;
  const double rows = static_cast<double>(in.rows);
  const double resident_rows = Ceil(rows * in.hot_fraction / in.partitions);
  const double value_bytes = WireValueBytes(in.wire_format);
  t.text += "per row\n";
  t.Line("values (weights + state)", StringPrintf("%.0f B", p.row_bytes),
       StringPrintf("(%u + %u) floats x 4", in.dim, p.row_floats - in.dim));
  t.Line("hash index", StringPrintf("%.1f B", p.index_bytes_per_row),
       StringPrintf("16 B x %.0f entries / %s rows per partition",
                    PartitionIndexBytes(static_cast<uint64_t>(resident_rows)) / kIndexEntryBytes,
                    FormatCount(resident_rows).c_str()));
  t.Line("row chunks", StringPrintf("%.1f B", p.chunk_bytes_per_row),
       StringPrintf("%.0f B%s + unused chunk tails%s", p.row_bytes, tiered ? " + 4 B flags" : "",
                    tiered ? " + 8 B CLOCK entry" : ""));
  t.Line("table's account", StringPrintf("%.1f B", p.table_bytes_per_row), "index + chunks");
  t.Line("resident memory", StringPrintf("%.1f B", p.memory_bytes_per_row),
       StringPrintf("x %.2f measured (resident over the table's account)", kResidentOverTable));
  t.Line("checkpoint or move", StringPrintf("%.0f B", p.checkpoint_bytes_per_row),
       StringPrintf("8 B key + %.0f B", p.row_bytes));
  t.Line("on disk (RocksDB tier)", StringPrintf("%.0f B", p.disk_bytes_per_row),
       StringPrintf("(12 B key + %.0f B) x %.2f measured", p.row_bytes, kDiskOverKeyAndValue));
  t.text += "per key, pulled and pushed once\n";
  t.Line("on the wire", StringPrintf("%.0f B", p.wire_bytes_per_key),
       StringPrintf("2 x (8 B key + %u x %.0f B)", in.dim, value_bytes));
  const double pull_ns = PullCpuSeconds(in.dim) * 1e9, push_ns = PushCpuSeconds(p.row_floats) * 1e9;
  t.Line("server CPU", StringPrintf("%.0f ns", p.server_cpu_seconds_per_key * 1e9),
       StringPrintf(
           "pull %.0f + %.2f x %u B = %.0f, push %.0f + %.2f x %.0f B = %.0f%s",
           kPullCpuNanosPerKey, kPullCpuNanosPerRowByte, in.dim * 4, pull_ns, kPushCpuNanosPerKey,
           kPushCpuNanosPerStateByte, p.row_bytes, push_ns,
           tiered ? StringPrintf("; tier: x %.1f and x %.1f", kTierPullSlowdown, kTierPushSlowdown)
                        .c_str()
                  : ""));
  t.Line("keys/s per core", FormatCount(p.keys_per_second_per_core), "1 / server CPU");

}

// The whole cluster's memory, disk, checkpoint and network.
void AddClusterLines(const Plan& p, PlanLines& t) {
  const PlanInputs& in = p.inputs;
  const bool tiered = in.hot_fraction < 1;
  const double rows = static_cast<double>(in.rows);
  t.text += "cluster\n";
  t.Line("memory", Bytes(p.memory_bytes),
       StringPrintf("%s rows x %.1f B", FormatCount(rows * in.hot_fraction).c_str(),
                    p.memory_bytes_per_row));
  if (tiered) {
    t.Line("disk (tier)", Bytes(p.disk_bytes),
           StringPrintf("%s rows x %.0f B + cold row files %s (%llux the rows in memory)",
                        FormatCount(rows).c_str(), p.disk_bytes_per_row,
                        Bytes(p.cold_file_bytes).c_str(),
                        static_cast<unsigned long long>(embedding::kColdFileTimesBudget)));
  }
  t.Line("one checkpoint", Bytes(p.checkpoint_bytes),
       StringPrintf("%s rows x %.0f B", FormatCount(rows).c_str(), p.checkpoint_bytes_per_row));
  t.Line("network", Rate(p.network_bytes_per_second),
       StringPrintf("%s keys/s x %.0f B x 8 bits", FormatCount(in.keys_per_second).c_str(),
                    p.wire_bytes_per_key));

}

// Servers needed for memory, CPU and network, and what each holds and takes.
void AddServerLines(const Plan& p, PlanLines& t) {
  const PlanInputs& in = p.inputs;
  const bool tiered = in.hot_fraction < 1;
  const double rows = static_cast<double>(in.rows);
  t.text += "servers\n";
  t.Line("for memory", std::to_string(p.servers_for_memory),
       StringPrintf("%s / (%s x %.1f%s)", Bytes(p.memory_bytes).c_str(),
                    Bytes(static_cast<double>(in.server_memory_bytes)).c_str(), kUsableMemoryShare,
                    tiered ? " - 32 MiB block cache" : ""));
  t.Line("for CPU", std::to_string(p.servers_for_throughput),
       StringPrintf("%s keys/s x %.0f ns / (%u cores x %.1f)",
                    FormatCount(in.keys_per_second).c_str(), p.server_cpu_seconds_per_key * 1e9,
                    in.server_cores, kTargetCpuShare));
  t.Line("for network", std::to_string(p.servers_for_network),
       StringPrintf("%s / (%s x %.1f)", Rate(p.network_bytes_per_second).c_str(),
                    Rate(in.server_network_bytes_per_second).c_str(), kTargetNetworkShare));
  t.Line("servers", std::to_string(p.servers), "the largest, at least 1");

  t.text += "per server\n";
  t.Line("memory", Bytes(p.memory_bytes_per_server), StringPrintf("/ %u servers", p.servers));
  if (tiered) t.Line("disk", Bytes(p.disk_bytes_per_server), StringPrintf("/ %u servers", p.servers));
  t.Line("network", Rate(p.network_bytes_per_second_per_server),
       StringPrintf("/ %u servers", p.servers));
  t.Line("move its rows", FormatDuration(p.move_seconds),
       StringPrintf("%s rows x %.0f B / %.0f MB/s + %.0f partitions x %.3f s, measured",
                    FormatCount(rows / p.servers).c_str(), p.checkpoint_bytes_per_row,
                    kMoveBytesPerSecond / 1e6, static_cast<double>(in.partitions) / p.servers,
                    kMoveSecondsPerPartition));
  t.Line("reopen its data directory", FormatDuration(p.reopen_seconds),
       StringPrintf("%.1f s + %s rows x %.0f B / %.0f MB/s measured", kReopenFixedSeconds,
                    FormatCount(rows / p.servers).c_str(), p.disk_bytes_per_row,
                    kReopenScanBytesPerSecond / 1e6));
}

}  // namespace

std::string PlanText(const Plan& p) {
  PlanLines t;
  AddHeaderLines(p, t);
  AddPerRowLines(p, t);
  AddClusterLines(p, t);
  AddServerLines(p, t);
  return t.text;
}

}  // namespace ember::local
