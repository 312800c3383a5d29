// Bench report rendering: the printed table and the JSON record.
#include "app/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace ember::app {
namespace {

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

std::string OptionalFigure(const std::optional<double>& value, const char* format) {
  return value ? Format(format, *value) : std::string("n/a");
}

// A JSON number (finite doubles only; anything else becomes null).
std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  std::ostringstream out;
  out.precision(8);
  out << value;
  return out.str();
}

std::string JsonNumber(const std::optional<double>& value) {
  return value ? JsonNumber(*value) : "null";
}

std::string JsonArray(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    out += (i > 0 ? ", " : "") + JsonNumber(values[i]);
  }
  return out + "]";
}

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string OperationJson(const OperationFigures& op) {
  std::ostringstream j;
  j << "{\"requests\": " << op.requests << ", \"keys\": " << op.keys
    << ", \"seconds\": " << JsonNumber(op.seconds)
    << ", \"keys_per_second\": " << JsonNumber(op.keys_per_second)
    << ", \"gb_per_second\": " << JsonNumber(op.gb_per_second)
    << ", \"latency_ms\": {\"p50\": " << JsonNumber(op.latency_p50_ms)
    << ", \"p99\": " << JsonNumber(op.latency_p99_ms)
    << ", \"p999\": " << JsonNumber(op.latency_p999_ms) << "}"
    << ", \"server_cpu_seconds_per_million_keys\": "
    << JsonNumber(op.server_cpu_seconds_per_million_keys)
    << ", \"raw_keys_per_second\": " << JsonNumber(op.raw_keys_per_second)
    << ", \"raw_gb_per_second\": " << JsonNumber(op.raw_gb_per_second)
    << ", \"ratio_to_raw\": " << JsonNumber(op.ratio_to_raw)
    << ", \"ratio_rounds\": " << JsonArray(op.ratio_rounds)
    << ", \"lookup_keys_per_second\": " << JsonNumber(op.lookup_keys_per_second) << "}";
  return j.str();
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
  std::string text = Format("%.2f", op.ratio_to_raw) + "x of raw ZeroMQ";
  const std::vector<double>& rounds = op.ratio_rounds;
  if (rounds.empty()) return text;
  if (rounds.size() == 1) return text + " (one round)";
  const auto [lowest, highest] = std::minmax_element(rounds.begin(), rounds.end());
  return text + " (median of " + std::to_string(rounds.size()) + " interleaved rounds, range " +
         Format("%.2f", *lowest) + "-" + Format("%.2f", *highest) + "x)";
}

}  // namespace

std::string FormatBenchTable(const BenchReport& report) {
  const BenchConfig& c = report.config;
  std::ostringstream t;
  t << "ember bench: " << (c.scheduler.empty() ? "in-process cluster" : "cluster at " + c.scheduler)
    << ", " << c.servers << " servers x " << c.server_threads << " threads, table '" << c.table
    << "' dim " << c.dim << " " << c.optimizer << "\n"
    << "             " << c.clients << " clients, " << c.keys_per_request
    << " keys/request (messages of up to " << c.max_keys_per_message << "), Zipf("
    << Format("%g", c.exponent) << ") over " << c.vocabulary << " keys (" << c.populate
    << " rows created first), seed " << c.seed << ", up to " << c.requests
    << " requests per client or " << Format("%g", c.seconds) << " s per operation, in " << c.rounds
    << " rounds of ember then raw ZeroMQ\n\n";
  const PopulateFigures& p = report.populate;
  t << "  populate  " << p.rows << " rows in " << Format("%.2f", p.seconds) << " s ("
    << Format("%.0f", p.rows_per_second) << " rows/s)\n\n";
  t << "  op          keys/s     GB/s   p50 ms    p99 ms   p999 ms  srv CPU s/Mkey"
       "   raw keys/s  raw GB/s  vs raw\n";
  t << OperationLine("pull", report.pull) << OperationLine("push", report.push);
  for (const auto& [name, op] :
       {std::pair{"pull", &report.pull}, std::pair{"push", &report.push}}) {
    t << "  " << name << " " << RatioText(*op) << "; " << op->requests << " requests, " << op->keys
      << " keys in " << Format("%.2f", op->seconds) << " s";
    if (op->lookup_keys_per_second) {
      t << "; the lookups alone (one thread, no network): "
        << Format("%.0f", *op->lookup_keys_per_second) << " keys/s";
    }
    t << "\n";
  }
  const MemoryFigures& m = report.memory;
  t << "\n  memory  " << m.rows << " rows stored, " << Format("%.1f", m.bytes_per_row)
    << " bytes/row by the servers' account (row and optimizer state alone "
    << Format("%.0f", m.raw_bytes_per_row) << "), " << OptionalFigure(m.rss_bytes_per_row, "%.1f")
    << " bytes/row of resident memory\n";
  return t.str();
}

std::string BenchReportJson(const BenchReport& report) {
  const BenchConfig& c = report.config;
  std::ostringstream j;
  j << "{\n  \"config\": {\"scheduler\": " << JsonString(c.scheduler)
    << ", \"table\": " << JsonString(c.table) << ", \"servers\": " << c.servers
    << ", \"server_threads\": " << c.server_threads << ", \"clients\": " << c.clients
    << ", \"keys_per_request\": " << c.keys_per_request
    << ", \"max_keys_per_message\": " << c.max_keys_per_message << ", \"dim\": " << c.dim
    << ", \"optimizer\": " << JsonString(c.optimizer)
    << ", \"learning_rate\": " << JsonNumber(c.learning_rate)
    << ", \"exponent\": " << JsonNumber(c.exponent) << ", \"vocabulary\": " << c.vocabulary
    << ", \"populate\": " << c.populate << ", \"seed\": " << c.seed
    << ", \"requests\": " << c.requests << ", \"seconds\": " << JsonNumber(c.seconds)
    << ", \"rounds\": " << c.rounds << "},\n";
  const PopulateFigures& p = report.populate;
  j << "  \"populate\": {\"rows\": " << p.rows << ", \"seconds\": " << JsonNumber(p.seconds)
    << ", \"rows_per_second\": " << JsonNumber(p.rows_per_second) << "},\n";
  j << "  \"pull\": " << OperationJson(report.pull) << ",\n";
  j << "  \"push\": " << OperationJson(report.push) << ",\n";
  const MemoryFigures& m = report.memory;
  j << "  \"memory\": {\"rows\": " << m.rows
    << ", \"bytes_per_row\": " << JsonNumber(m.bytes_per_row)
    << ", \"raw_bytes_per_row\": " << JsonNumber(m.raw_bytes_per_row)
    << ", \"rss_bytes_per_row\": " << JsonNumber(m.rss_bytes_per_row) << "}\n}\n";
  return j.str();
}

}  // namespace ember::app
