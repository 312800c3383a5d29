// The figures of one `ember bench` run and their two renderings: the table printed for people and
// the JSON record written for scripts. Both come from the same struct, so every printed figure is
// also in the JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_options.h"

namespace ember::bench {

// One operation (pull or push) against ember, and the same traffic against raw ZeroMQ, measured in
// rounds that alternate between the two; totals are over all rounds.
struct OperationFigures {
  uint64_t requests = 0;  // timed requests, all clients
  uint64_t keys = 0;
  double seconds = 0;
  double keys_per_second = 0;
  double gb_per_second = 0;  // payload: rows (or gradients) plus keys, 1e9 bytes
  double latency_p50_ms = 0;
  double latency_p99_ms = 0;
  double latency_p999_ms = 0;
  // CPU time of the server threads, and of the rest of the process (the clients: splitting,
  // encoding, copying out, and the threads that wait on them); only known when the cluster runs
  // in this process.
  std::optional<double> server_cpu_seconds_per_million_keys;
  std::optional<double> client_cpu_seconds_per_million_keys;
  // Of the server's: its worker threads' (decoding, the table, encoding; the rest is transport).
  std::optional<double> server_worker_cpu_seconds_per_million_keys;
  // The echo peers' threads over the raw traffic: what a server that only moves the bytes spends.
  std::optional<double> raw_server_cpu_seconds_per_million_keys;
  // Of the echo peers': their ZeroMQ I/O threads' alone (sending and receiving the bytes over TCP),
  // what any server over ZeroMQ spends on them; and the rest of the process over the raw traffic
  // (the raw clients: what a client that only moves the bytes spends).
  std::optional<double> raw_io_cpu_seconds_per_million_keys;
  std::optional<double> raw_client_cpu_seconds_per_million_keys;
  double raw_keys_per_second = 0;  // the echo peer under the same traffic
  double raw_gb_per_second = 0;
  // ember keys/s over raw keys/s in each round, in order; each round's two halves ran back to back.
  std::vector<double> ratio_rounds;
  double ratio_to_raw = 0;  // the median of ratio_rounds
  // The same requests against a table of the same rows in this process, one thread, no network:
  // what the lookups and updates alone allow. Only for an in-process cluster.
  std::optional<double> lookup_keys_per_second;
};

struct MemoryFigures {
  uint64_t rows = 0;             // rows stored in the table, all servers
  double bytes_per_row = 0;      // the servers' own account (rows, optimizer state, index)
  double raw_bytes_per_row = 0;  // the row values and optimizer state alone, 4 bytes a float
  // Growth of this process's resident memory over the run per row; in-process cluster only.
  std::optional<double> rss_bytes_per_row;
};

// The memory limit: a random gather of rows from an array as large as the table, one thread, with
// the benchmark's keys (bench/internal/row_gather.h). In-process cluster only.
struct GatherFigures {
  uint64_t rows = 0;            // rows of the array
  uint32_t row_bytes = 0;       // distance between rows (a stored row: weights and optimizer state)
  uint32_t copy_bytes = 0;      // bytes copied out of each row (a pull's row)
  double ns_per_row = 0;        // with software prefetch: the median of the rounds
  double ns_per_row_plain = 0;  // without
};

// The table's own rows without the table (bench/internal/table_rows.h): laid out as the table
// lays them out, each found before the clock starts, one thread, with prefetch; medians of the
// rounds. The floor under a server's table work: a pull copies each row out at least, a push
// updates each row (weights and state) by the optimizer at least. In-process cluster only.
struct TableRowsFigures {
  uint64_t rows = 0;
  double ns_per_copy = 0;    // a pull's share of each row copied to an output in request order
  double ns_per_update = 0;  // each row updated in place with a gradient read in request order
  // The same two, each key's row found through the table's index (no lock).
  double ns_per_indexed_copy = 0;
  double ns_per_indexed_update = 0;
};

// Creating the rows before the timed phases.
struct PopulateFigures {
  uint64_t rows = 0;
  double seconds = 0;
  double rows_per_second = 0;
};

struct BenchReport {
  BenchOptions config;  // as used: defaults filled in, and a running cluster's table and servers
  PopulateFigures populate;
  OperationFigures pull;
  OperationFigures push;
  MemoryFigures memory;
  std::optional<GatherFigures> gather;
  std::optional<TableRowsFigures> table_rows;
  uint32_t cores = 0;  // the cores this process may run on (for the floors' keys/s)
};

// The human-readable table, several lines ending in a newline.
std::string FormatBenchTable(const BenchReport& report);
// The JSON record: {"config": {...}, "populate": {...}, "pull": {...}, "push": {...},
// "memory": {...}}. Figures that are not known (see the optionals) and those that are not finite
// are null.
std::string BenchReportJson(const BenchReport& report);

}  // namespace ember::bench
