// The cold row file alone (embedding/cold_row_file.h), as a tiered table uses it: the CPU of a
// row found or stored in batches of random keys, and what the first store into each page costs
// once the kernel has written the file back (a write fault per page). `ember bench-tier` prints it
// beside the cold path's floor (tier_cold_path.h, tier_file_path.h).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ember::bench {

// Keys a timed batch of finds or stores holds: about a stripe's share of a request's misses.
constexpr uint32_t kColdFileBatch = 64;

struct ColdFileFigures {
  double find_ns = 0;   // this thread's CPU per row found, in batches of kColdFileBatch
  double store_ns = 0;  // per row stored (unchanged, replacing its own slot), likewise
  // Per page of the file, the CPU its first store costs beyond a store's after the file was
  // written back (syncfs): the kernel's write fault.
  double fault_us = 0;
};

// Creates a cold row file of `file_bytes` (at most 512 MiB) for rows of `floats_per_row` floats in
// `directory`, stores `rows` rows in it (at most its slots), times finds and stores of random keys
// for about `seconds` each, then writes the file system back and times four stores a page. The
// file leaves nothing behind.
Result<ColdFileFigures> MeasureColdFile(const std::string& directory, uint64_t rows,
                                        uint32_t floats_per_row, uint64_t file_bytes,
                                        double seconds);

}  // namespace ember::bench
