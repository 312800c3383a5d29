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

Json OperationJson(const OperationFigures& op) {
  return {{"requests", op.requests},
          {"keys", op.keys},
          {"seconds", op.seconds},
          {"keys_per_second", op.keys_per_second},
          {"gb_per_second", op.gb_per_second},
          {"latency_ms",
           {{"p50", op.latency_p50_ms}, {"p99", op.latency_p99_ms}, {"p999", op.latency_p999_ms}}},
          {"server_cpu_seconds_per_million_keys", Figure(op.server_cpu_seconds_per_million_keys)},
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
      {"pull", OperationJson(report.pull)},
      {"push", OperationJson(report.push)},
      {"memory",
       {{"rows", m.rows},
        {"bytes_per_row", m.bytes_per_row},
        {"raw_bytes_per_row", m.raw_bytes_per_row},
        {"rss_bytes_per_row", Figure(m.rss_bytes_per_row)}}},
  };
  // Invalid UTF-8 in a string (a table name, say) is replaced rather than thrown about.
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace ember::bench
