// The floor under a cold store kept in a plain file on this machine: what the kernel costs to read
// one row from a file in the page cache (one system call per row), and to write rows in sequential
// batches (as a store that appends its evicted rows would). `ember bench-tier` prints it beside
// RocksDB's cold path (tier_cold_path.h): such a store pays at least this per row, whatever it
// does around the calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace ember::bench {

// Rows the file holds at most: enough to leave the caches, small enough to write in a second.
constexpr uint64_t kFilePathMaxRows = uint64_t{1} << 23;
// Rows written by one call (as many as RocksDB's write-backs batch: kColdWriteBatch).
constexpr uint32_t kFileWriteBatch = 256;

struct FilePathFigures {
  double read_us = 0;     // this thread's CPU per pread of one random row
  double write_us = 0;    // per row of a pwrite of kFileWriteBatch rows, at the file's next place
  double syscall_us = 0;  // per empty system call (getppid): the part of each that any call costs
};

// Writes a file of min(rows, kFilePathMaxRows) rows of `row_bytes` zero bytes in `directory`
// (which must exist) and syncs it, reads it through once so that the page cache holds it, times
// each of the three for about `seconds`, and removes the file. Its writes write zeros: the file
// stays as it was. Errors of the file system name the file.
Result<FilePathFigures> MeasureFilePath(const std::string& directory, uint64_t rows,
                                        size_t row_bytes, double seconds);

}  // namespace ember::bench
