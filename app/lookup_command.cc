// `ember lookup`: reads rows of a running cluster without changing them (Client::Lookup), for
// serving and for inspecting a model while it trains. Keys come from a file or stdin, one uint64
// per line; rows go to stdout as TSV (key, found, the row's values) or to a .npy file.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "app/commands.h"
#include "common/key_list.h"
#include "common/npy.h"
#include "ps/client/client.h"

namespace ember::app {
namespace {

constexpr CommandText kLookupCommand = {
    .name = "lookup",
    .summary = "read rows of a running cluster without creating or changing any",
    .usage = "ember lookup --scheduler ENDPOINT --table T --keys FILE|- [--out FILE.npy]",
    .description =
        "Reads the rows of the keys in FILE (one unsigned 64-bit integer per line; - reads "
        "stdin) as the servers hold them, for serving. Nothing changes on the servers: no row is "
        "created, no optimizer state touched. A key without a row gets the table's initial row "
        "(--missing initial, computed, not stored) or zeros (--missing flag); either way its "
        "found flag is 0. Prints key<TAB>found<TAB>values, or writes FILE.npy (float32, [n, "
        "dim]) and FILE.found.npy (uint8, [n]).",
};

void AddLookupFlags(CLI::App* command, LookupFlags* flags) {
  AddSchedulerEndpointFlag(command, &flags->scheduler)
      ->required();
  AddValue(command, "--table", &flags->table, "T", "the table to read")->required();
  AddValue(command, "--keys", &flags->keys, "FILE", "one key per line; - reads stdin")->required();
  AddValue(command, "--missing", &flags->missing, "MODE",
           "initial (default): a key without a row gets its initial row; flag: zeros")
      ->check(CLI::IsMember({"initial", "flag"}));
  AddValue(command, "--out", &flags->out, "FILE.npy",
           "write the rows (and FILE.found.npy) instead of printing TSV");
  AddCount(command, "--timeout-s", &flags->timeout_s, "S", "give up after S seconds (default 30)");
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
}

}  // namespace

Command MakeLookupCommand(CLI::App& ember) {
  return MakeCommand(ember, kLookupCommand, AddLookupFlags, RunLookup);
}

namespace {

int Fail(const Status& status, int exit_code = 1) {
  return PrintError("lookup", status, exit_code);
}

Result<std::vector<uint64_t>> ReadKeysFrom(const std::string& path) {
  if (path == "-") return ReadKeyList(std::cin, "stdin");
  std::ifstream file(path);
  if (!file) return NotFound("cannot open key file '" + path + "'");
  return ReadKeyList(file, "'" + path + "'");
}

// FILE.npy -> FILE.found.npy, beside the rows.
std::string FoundPath(const std::string& rows_path) {
  const std::string suffix = ".npy";
  const bool has_suffix =
      rows_path.size() > suffix.size() &&
      rows_path.compare(rows_path.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (has_suffix ? rows_path.substr(0, rows_path.size() - suffix.size()) : rows_path) +
         ".found.npy";
}

void PrintTsv(std::span<const uint64_t> keys, std::span<const float> rows,
              std::span<const uint8_t> found, uint32_t dim) {
  for (size_t i = 0; i < keys.size(); ++i) {
    std::printf("%llu\t%u\t", static_cast<unsigned long long>(keys[i]), unsigned{found[i]});
    for (uint32_t d = 0; d < dim; ++d) {
      std::printf(d == 0 ? "%.9g" : " %.9g", static_cast<double>(rows[i * dim + d]));
    }
    std::printf("\n");
  }
}

}  // namespace

int RunLookup(const LookupFlags& flags) {
  MissingRows missing = MissingRows::kInitial;
  if (flags.missing == "flag") {
    missing = MissingRows::kFlag;
  } else if (flags.missing != "initial") {
    return Fail(
        InvalidArgument("--missing must be 'initial' or 'flag', not '" + flags.missing + "'"), 2);
  }
  auto keys = ReadKeysFrom(flags.keys);
  if (!keys.ok()) return Fail(keys.status(), 2);
  auto security = ResolveSecurity(flags.security);
  if (!security.ok()) return Fail(security.status(), 2);

  ps::ClientOptions options;
  options.scheduler_endpoint = flags.scheduler;
  options.name = "lookup";
  options.request_timeout = Millis(static_cast<int64_t>(flags.timeout_s) * 1000);
  options.register_timeout = options.request_timeout;
  options.security = *security;
  // A reader: no trainer slot, nothing for the scheduler to track or wait for.
  options.read_only = true;
  auto client = ps::Client::Connect(std::move(options));
  if (!client.ok()) return Fail(client.status());
  auto table = (*client)->FindTable(flags.table);
  if (!table.ok()) return Fail(table.status(), 2);
  const uint32_t dim = (*table)->dim;

  std::vector<float> rows(keys->size() * dim);
  std::vector<uint8_t> found(keys->size());
  if (Status looked_up = (*client)->Lookup(flags.table, *keys, rows, missing, found).Wait();
      !looked_up.ok()) {
    return Fail(looked_up);
  }
  if (flags.out.empty()) {
    PrintTsv(*keys, rows, found, dim);
    return std::fflush(stdout) == 0 ? 0 : Fail(Unavailable("writing the rows to stdout failed"));
  }
  if (Status written = WriteNpy(flags.out, rows, {keys->size(), dim}); !written.ok()) {
    return Fail(written);
  }
  if (Status written = WriteNpy(FoundPath(flags.out), found, {keys->size()}); !written.ok()) {
    return Fail(written);
  }
  std::fprintf(stderr, "%zu rows (%zu found) written to %s and %s\n", keys->size(),
               static_cast<size_t>(std::count(found.begin(), found.end(), 1)), flags.out.c_str(),
               FoundPath(flags.out).c_str());
  return 0;
}

}  // namespace ember::app
