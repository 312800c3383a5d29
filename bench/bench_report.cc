// Bench report rendering: the printed table and the JSON record.
#include "bench/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/string_printf.h"

namespace ember::bench {
namespace {

std::string OptionalFigure(const std::optional<double>& value, const char* format) {
  return value ? StringPrintf(format, *value) : std::string("n/a");
}

using Json = nlohmann::ordered_json;  // keys in the order written

// An optional figure: null when unknown (non-finite numbers are written as null by the library).
Json Figure(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

// CPU seconds per million keys over the gather's nanoseconds per row (both are ns per key).
std::optional<double> ToGather(const std::optional<double>& cpu_per_million_keys,
                               const std::optional<GatherFigures>& gather) {
  if (!cpu_per_million_keys || !gather || gather->ns_per_row <= 0) return std::nullopt;
  return *cpu_per_million_keys * 1e3 / gather->ns_per_row;
}

// The least CPU per key any server over ZeroMQ spends: the table's own memory work (its rows
// copied for a pull, updated for a push; found beforehand, or found through the table's index) and
// what ZeroMQ's I/O thread spends carrying the key's bytes (the echo peers'); and the most keys/s
// the process's cores can move with such a server and a client that only moves the bytes (the raw
// clients').
struct Floor {
  double table_ns = 0;
  std::optional<double> server_ns;
  std::optional<double> server_to_gather;
  std::optional<double> keys_per_second;
};

// The floor of `op` over `table_ns` of the table's work per key.
Floor FloorOver(double table_ns, const OperationFigures& op, const BenchReport& report) {
  Floor floor{.table_ns = table_ns};
  if (table_ns <= 0 || !op.raw_io_cpu_seconds_per_million_keys) return floor;
  floor.server_ns = table_ns + *op.raw_io_cpu_seconds_per_million_keys * 1e3;
  if (report.gather && report.gather->ns_per_row > 0) {
    floor.server_to_gather = *floor.server_ns / report.gather->ns_per_row;
  }
  if (op.raw_client_cpu_seconds_per_million_keys && report.cores > 0) {
    floor.keys_per_second =
        report.cores * 1e9 / (*floor.server_ns + *op.raw_client_cpu_seconds_per_million_keys * 1e3);
  }
  return floor;
}

// The floor with the rows found beforehand, and with each found through the index.
struct Floors {
  Floor rows;
  Floor indexed;
};

Floors FloorsOf(const OperationFigures& op, const BenchReport& report, bool push) {
  if (!report.table_rows) return {};
  const TableRowsFigures& t = *report.table_rows;
  return {FloorOver(push ? t.ns_per_update : t.ns_per_copy, op, report),
          FloorOver(push ? t.ns_per_indexed_update : t.ns_per_indexed_copy, op, report)};
}

Json OperationJson(const OperationFigures& op, const std::optional<GatherFigures>& gather,
                   const Floors& floors) {
  return {
      {"requests", op.requests},
      {"keys", op.keys},
      {"seconds", op.seconds},
      {"keys_per_second", op.keys_per_second},
      {"gb_per_second", op.gb_per_second},
      {"latency_ms",
       {{"p50", op.latency_p50_ms}, {"p99", op.latency_p99_ms}, {"p999", op.latency_p999_ms}}},
      {"server_cpu_seconds_per_million_keys", Figure(op.server_cpu_seconds_per_million_keys)},
      {"server_cpu_to_gather", Figure(ToGather(op.server_cpu_seconds_per_million_keys, gather))},
      {"client_cpu_seconds_per_million_keys", Figure(op.client_cpu_seconds_per_million_keys)},
      {"client_cpu_to_gather", Figure(ToGather(op.client_cpu_seconds_per_million_keys, gather))},
      {"server_worker_cpu_seconds_per_million_keys",
       Figure(op.server_worker_cpu_seconds_per_million_keys)},
      {"raw_server_cpu_seconds_per_million_keys",
       Figure(op.raw_server_cpu_seconds_per_million_keys)},
      {"raw_io_cpu_seconds_per_million_keys", Figure(op.raw_io_cpu_seconds_per_million_keys)},
      {"raw_client_cpu_seconds_per_million_keys",
       Figure(op.raw_client_cpu_seconds_per_million_keys)},
      {"server_floor_ns", Figure(floors.rows.server_ns)},
      {"server_floor_to_gather", Figure(floors.rows.server_to_gather)},
      {"keys_per_second_bound", Figure(floors.rows.keys_per_second)},
      {"server_floor_indexed_ns", Figure(floors.indexed.server_ns)},
      {"server_floor_indexed_to_gather", Figure(floors.indexed.server_to_gather)},
      {"keys_per_second_bound_indexed", Figure(floors.indexed.keys_per_second)},
      {"raw_keys_per_second", op.raw_keys_per_second},
      {"raw_gb_per_second", op.raw_gb_per_second},
      {"ratio_to_raw", op.ratio_to_raw},
      {"ratio_rounds", op.ratio_rounds},
      {"lookup_keys_per_second", Figure(op.lookup_keys_per_second)}};
}

std::string OperationLine(const char* name, const OperationFigures& op) {
  char line[512];
  std::snprintf(
      line, sizeof(line), "  %-5s %12.0f %8.3f %9.2f %9.2f %9.2f %14s %12.0f %8.3f %7.2fx\n", name,
      op.keys_per_second, op.gb_per_second, op.latency_p50_ms, op.latency_p99_ms,
      op.latency_p999_ms, OptionalFigure(op.server_cpu_seconds_per_million_keys, "%.3f").c_str(),
      op.raw_keys_per_second, op.raw_gb_per_second, op.ratio_to_raw);
  return line;
}

// "0.55x of raw ZeroMQ (median of 5 interleaved rounds, range 0.48-0.61x)".
std::string RatioText(const OperationFigures& op) {
  std::string text = StringPrintf("%.2f", op.ratio_to_raw) + "x of raw ZeroMQ";
  const std::vector<double>& rounds = op.ratio_rounds;
  if (rounds.empty()) return text;
  if (rounds.size() == 1) return text + " (one round)";
  const auto [lowest, highest] = std::minmax_element(rounds.begin(), rounds.end());
  return text + " (median of " + std::to_string(rounds.size()) + " interleaved rounds, range " +
         StringPrintf("%.2f", *lowest) + "-" + StringPrintf("%.2f", *highest) + "x)";
}

// Nanoseconds per key of seconds per million keys, or n/a.
std::string Nanoseconds(const std::optional<double>& cpu_per_million_keys) {
  return OptionalFigure(
      cpu_per_million_keys ? std::optional(*cpu_per_million_keys * 1e3) : std::nullopt, "%.0f");
}

// "159 ns (2.48x)": CPU per key and its ratio to the gather.
std::string CpuPerKey(const std::optional<double>& cpu_per_million_keys,
                      const std::optional<GatherFigures>& gather) {
  const std::string ns = Nanoseconds(cpu_per_million_keys);
  return (cpu_per_million_keys ? ns + " ns" : ns) + " (" +
         OptionalFigure(ToGather(cpu_per_million_keys, gather), "%.2fx") + ")";
}

// The lookups alone, one thread: seconds per million keys.
std::optional<double> TableSecondsPerMillionKeys(const OperationFigures& op) {
  if (!op.lookup_keys_per_second || *op.lookup_keys_per_second <= 0) return std::nullopt;
  return 1e6 / *op.lookup_keys_per_second;
}

// "pull: server 139 ns (3.61x), workers 85 ns + transport 54 ns (a raw ZeroMQ peer: 22 ns);
// client 66 ns (1.70x); the table alone 85 ns (2.20x)".
std::string OperationCpuLine(const char* name, const OperationFigures& op,
                             const std::optional<GatherFigures>& gather) {
  std::optional<double> transport;
  if (op.server_cpu_seconds_per_million_keys && op.server_worker_cpu_seconds_per_million_keys) {
    transport =
        *op.server_cpu_seconds_per_million_keys - *op.server_worker_cpu_seconds_per_million_keys;
  }
  return std::string(name) + ": server " +
         CpuPerKey(op.server_cpu_seconds_per_million_keys, gather) + ", workers " +
         Nanoseconds(op.server_worker_cpu_seconds_per_million_keys) + " ns + transport " +
         Nanoseconds(transport) +
         " ns (a raw ZeroMQ peer: " + Nanoseconds(op.raw_server_cpu_seconds_per_million_keys) +
         " ns); client " + CpuPerKey(op.client_cpu_seconds_per_million_keys, gather) +
         "; the table alone " + CpuPerKey(TableSecondsPerMillionKeys(op), gather) + "\n";
}

// "pull: server 100 ns (2.00x) = the table's rows 50 + ZeroMQ's I/O thread 50; with a raw
// client's 100 ns, 2 cores move at most 10.00M keys/s", then the same with the index on a line of
// its own: "with the index: server 130 ns (2.60x) = 80 + 50; at most 8.70M keys/s".
std::string OperationFloorLines(const char* name, const OperationFigures& op, const Floors& floors,
                                uint32_t cores) {
  const auto millions = [](const Floor& floor) {
    return OptionalFigure(
        floor.keys_per_second ? std::optional(*floor.keys_per_second / 1e6) : std::nullopt,
        "%.2fM");
  };
  const auto server = [](const Floor& floor) {
    return "server " + StringPrintf("%.0f", *floor.server_ns) + " ns (" +
           OptionalFigure(floor.server_to_gather, "%.2fx") + ")";
  };
  const std::string io = Nanoseconds(op.raw_io_cpu_seconds_per_million_keys);
  if (!floors.rows.server_ns) return std::string(name) + ": n/a\n";
  std::string lines =
      std::string(name) + ": " + server(floors.rows) + " = the table's rows " +
      StringPrintf("%.0f", floors.rows.table_ns) + " + ZeroMQ's I/O thread " + io +
      "; with a raw client's " + Nanoseconds(op.raw_client_cpu_seconds_per_million_keys) + " ns, " +
      std::to_string(cores) + " cores move at most " + millions(floors.rows) + " keys/s\n";
  if (!floors.indexed.server_ns) return lines;
  return lines + "                  with the index: " + server(floors.indexed) + " = " +
         StringPrintf("%.0f", floors.indexed.table_ns) + " + " + io + "; at most " +
         millions(floors.indexed) + " keys/s\n";
}

// The table's own rows and the floors under the server.
std::string FloorLines(const BenchReport& report) {
  if (!report.table_rows) return "";
  const TableRowsFigures& rows = *report.table_rows;
  return "  table rows    " + std::to_string(rows.rows) +
         " rows laid out as the table lays them out, each found beforehand (no index, no lock), "
         "one thread: a pull's copy " +
         StringPrintf("%.1f", rows.ns_per_copy) + " ns/row, an update by the optimizer " +
         StringPrintf("%.1f", rows.ns_per_update) + " ns/row; each found through the table's " +
         "index (no lock): " + StringPrintf("%.1f", rows.ns_per_indexed_copy) + " and " +
         StringPrintf("%.1f", rows.ns_per_indexed_update) + " ns/row\n" + "  floor         " +
         OperationFloorLines("pull", report.pull, FloorsOf(report.pull, report, false),
                             report.cores) +
         "                " +
         OperationFloorLines("push", report.push, FloorsOf(report.push, report, true),
                             report.cores) +
         "                (the least a server over ZeroMQ spends per key; x: of the gather)\n";
}

// The memory limit and each side's CPU per key against it.
std::string GatherLines(const BenchReport& report) {
  if (!report.gather) return "";
  const GatherFigures& g = *report.gather;
  return "  memory limit  a random gather of " + std::to_string(g.copy_bytes) + " B from " +
         std::to_string(g.rows) + " rows " + std::to_string(g.row_bytes) +
         " B apart, one thread: " + StringPrintf("%.1f", g.ns_per_row) + " ns/row with prefetch (" +
         StringPrintf("%.1f", g.ns_per_row_plain) + " without)\n" + "  CPU per key   " +
         OperationCpuLine("pull", report.pull, report.gather) + "                " +
         OperationCpuLine("push", report.push, report.gather) +
         "                (x: of the gather with prefetch)\n";
}

}  // namespace

std::string FormatBenchTable(const BenchReport& report) {
  const BenchOptions& c = report.config;
  std::ostringstream t;
  t << "ember bench: " << (c.scheduler.empty() ? "in-process cluster" : "cluster at " + c.scheduler)
    << ", " << c.servers << " servers x " << c.server_threads << " threads, table '" << c.table
    << "' dim " << c.dim << " " << c.optimizer << "\n"
    << "             " << c.clients << " clients, " << c.keys_per_request
    << " keys/request (messages of up to " << c.max_keys_per_message << "), Zipf("
    << StringPrintf("%g", c.exponent) << ") over " << c.vocabulary << " keys (" << c.populate
    << " rows created first), seed " << c.seed << ", up to " << c.requests
    << " requests per client or " << StringPrintf("%g", c.seconds) << " s per operation, in "
    << c.rounds << " rounds of ember then raw ZeroMQ" << (c.curve ? ", both over CurveZMQ" : "")
    << "\n\n";
  const PopulateFigures& p = report.populate;
  t << "  populate  " << p.rows << " rows in " << StringPrintf("%.2f", p.seconds) << " s ("
    << StringPrintf("%.0f", p.rows_per_second) << " rows/s)\n\n";
  t << "  op          keys/s     GB/s   p50 ms    p99 ms   p999 ms  srv CPU s/Mkey"
       "   raw keys/s  raw GB/s  vs raw\n";
  t << OperationLine("pull", report.pull) << OperationLine("push", report.push);
  for (const auto& [name, op] :
       {std::pair{"pull", &report.pull}, std::pair{"push", &report.push}}) {
    t << "  " << name << " " << RatioText(*op) << "; " << op->requests << " requests, " << op->keys
      << " keys in " << StringPrintf("%.2f", op->seconds) << " s";
    if (op->lookup_keys_per_second) {
      t << "; the lookups alone (one thread, no network): "
        << StringPrintf("%.0f", *op->lookup_keys_per_second) << " keys/s";
    }
    t << "\n";
  }
  const MemoryFigures& m = report.memory;
  t << "\n  memory  " << m.rows << " rows stored, " << StringPrintf("%.1f", m.bytes_per_row)
    << " bytes/row by the servers' account (row and optimizer state alone "
    << StringPrintf("%.0f", m.raw_bytes_per_row) << "), "
    << OptionalFigure(m.rss_bytes_per_row, "%.1f") << " bytes/row of resident memory\n";
  if (report.gather) t << "\n" << GatherLines(report);
  t << FloorLines(report);
  return t.str();
}

std::string BenchReportJson(const BenchReport& report) {
  const BenchOptions& c = report.config;
  const PopulateFigures& p = report.populate;
  const MemoryFigures& m = report.memory;
  const Json json = {
      {"config",
       {{"scheduler", c.scheduler},
        {"table", c.table},
        {"servers", c.servers},
        {"server_threads", c.server_threads},
        {"clients", c.clients},
        {"keys_per_request", c.keys_per_request},
        {"max_keys_per_message", c.max_keys_per_message},
        {"dim", c.dim},
        {"optimizer", c.optimizer},
        {"learning_rate", c.learning_rate},
        {"exponent", c.exponent},
        {"vocabulary", c.vocabulary},
        {"populate", c.populate},
        {"seed", c.seed},
        {"requests", c.requests},
        {"seconds", c.seconds},
        {"rounds", c.rounds},
        {"curve", c.curve}}},
      {"populate",
       {{"rows", p.rows}, {"seconds", p.seconds}, {"rows_per_second", p.rows_per_second}}},
      {"pull", OperationJson(report.pull, report.gather, FloorsOf(report.pull, report, false))},
      {"push", OperationJson(report.push, report.gather, FloorsOf(report.push, report, true))},
      {"memory",
       {{"rows", m.rows},
        {"bytes_per_row", m.bytes_per_row},
        {"raw_bytes_per_row", m.raw_bytes_per_row},
        {"rss_bytes_per_row", Figure(m.rss_bytes_per_row)}}},
      {"gather", report.gather ? Json{{"rows", report.gather->rows},
                                      {"row_bytes", report.gather->row_bytes},
                                      {"copy_bytes", report.gather->copy_bytes},
                                      {"ns_per_row", report.gather->ns_per_row},
                                      {"ns_per_row_plain", report.gather->ns_per_row_plain}}
                               : Json(nullptr)},
      {"table_rows", report.table_rows
                         ? Json{{"rows", report.table_rows->rows},
                                {"ns_per_copy", report.table_rows->ns_per_copy},
                                {"ns_per_update", report.table_rows->ns_per_update},
                                {"ns_per_indexed_copy", report.table_rows->ns_per_indexed_copy},
                                {"ns_per_indexed_update", report.table_rows->ns_per_indexed_update}}
                         : Json(nullptr)},
      {"cores", report.cores},
  };
  // Invalid UTF-8 in a string (a table name, say) is replaced rather than thrown about.
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace ember::bench
