// The floor under any cold store kept in plain files on this machine: what the kernel costs to move
// one row between a file in the page cache and memory, one system call per row. `ember bench-tier`
// prints it beside RocksDB's cold path (tier_cold_path.h): a store that reads and writes its cold
// rows one by one in files pays at least this per row, whatever it does around the calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace ember::bench {

// Rows the file holds at most: enough to leave the caches, small enough to write in a second.
constexpr uint64_t kFilePathMaxRows = uint64_t{1} << 23;

struct FilePathFigures {
  double read_us = 0;     // this thread's CPU per pread of one random row
  double write_us = 0;    // per pwrite of one random row, in place (into the page cache)
  double syscall_us = 0;  // per empty system call (getppid): the part of each that any call costs
};

// Writes a file of min(rows, kFilePathMaxRows) rows of `row_bytes` zero bytes in `directory`
// (which must exist), reads it through once so that the page cache holds it, times each of the
// three for about `seconds`, and removes the file. Its writes write zeros: the file stays as it
// was. Errors of the file system name the file.
Result<FilePathFigures> MeasureFilePath(const std::string& directory, uint64_t rows,
                                        size_t row_bytes, double seconds);

}  // namespace ember::bench
