// The freshness benchmark behind `ember bench-replica`: a local cluster trained with the data
// plane's pull and push load while a serving replica (ps/replica) follows it, against the same
// load without one, alternated round by round.
//
// Each round measures pull and push keys/s with no replica, and again with a replica that first
// copies the tables (the copy's seconds are reported) and then follows; the side that goes first
// alternates. During both sides a probe pushes to keys of its own every `probe_ms`; with the
// replica it then reads the key from the replica until the row is the one the cluster
// acknowledged, and the time from the push's acknowledgement to then is one lag sample. The
// stream's bytes per changed row are the follow replies' payload over the rows they carried.
// Blocks until done.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ember::bench {

struct ReplicaBenchOptions {
  uint32_t servers = 2;
  uint32_t partitions = 64;
  uint32_t dim = 64;
  std::string optimizer = "adagrad";
  uint64_t vocabulary = 200'000;  // rows created before timing, and the keys the load draws
  uint32_t keys_per_request = 4096;
  double seconds = 4;             // per operation and side in each round
  uint32_t rounds = 3;
  uint32_t poll_ms = 20;          // the replica's poll interval
  uint32_t probe_ms = 20;         // between two lag probes
};

struct ReplicaBenchReport {
  struct Side {
    double pull_keys_per_second = 0;
    double push_keys_per_second = 0;
  };
  std::vector<Side> without, with;  // per round
  double pull_ratio = 0;            // median of the rounds' with / without
  double push_ratio = 0;
  std::vector<double> lag_ms;       // every probe's, sorted
  double lag_p50_ms = 0, lag_p99_ms = 0, lag_max_ms = 0;
  uint64_t probes_lost = 0;         // probes not seen on the replica within 10 s
  double copy_seconds = 0;          // median time from starting a replica to a whole copy
  double stream_bytes_per_row = 0;  // while following (after the copy)
  double stream_rows_per_second = 0;
};

// InvalidArgument naming the first option out of its range.
Status CheckReplicaBenchOptions(const ReplicaBenchOptions& options);

Result<ReplicaBenchReport> RunReplicaBench(const ReplicaBenchOptions& options,
                                           const std::function<void(const std::string&)>& progress);

// The report as JSON (one object).
std::string ReplicaBenchJson(const ReplicaBenchOptions& options, const ReplicaBenchReport& report);

}  // namespace ember::bench
