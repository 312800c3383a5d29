// Limits: the bounds on what peers may make a process hold (keys per message, tables, held bsp
// pushes, push-ledger senders, trainers, barriers, waiters, queued messages, hints and
// followers), read from the job config's `limits:` section, and how a process refuses and counts
// a request that would pass one.
//
// A request over a limit is answered ResourceExhausted by LimitExceeded (naming the limit, its
// value and the config key that raises it), changes nothing, and is counted in a LimitCounters
// that the process reports (a server's stats, the scheduler's cluster status, `ember status`).
// docs/limits.md lists every limit with its default and what it bounds.
//
// Thread-safety: Limits is a plain value; LimitCounters may be counted from many threads at once.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace YAML {
class Node;
}  // namespace YAML

namespace ember {

struct Limits {
  // Keys in one pull or push request a server accepts (a client's max_keys_per_message must not
  // exceed it).
  uint32_t keys_per_message = 1u << 20;
  // Tables the scheduler accepts in a config and a server accepts in its registration.
  uint32_t tables_per_server = 256;
  // bsp pushes a server holds until their clock is applied, over all its tables and trainers.
  uint32_t deferred_pushes_per_clock = 65'536;
  // Senders a server's push ledger remembers (for exactly-once resends). When full, senders idle
  // longer than push_ledger_idle_seconds are forgotten to make room; if none is, a push from a
  // new sender is refused.
  uint32_t push_ledger_senders = 4096;
  uint32_t push_ledger_idle_seconds = 600;
  // Trainers active at once on the scheduler (registered, not left, heard from within
  // sync.trainer_timeout), and the participants a barrier may wait for; the names registered
  // over a run are bounded at 4x this.
  uint32_t trainers = 1024;
  // Barriers open at once on the scheduler, and the bytes of a barrier's name.
  uint32_t open_barriers = 256;
  uint32_t barrier_name_bytes = 256;
  // Requests the scheduler holds unanswered: barrier participants and clock reports waiting.
  uint32_t waiters = 16'384;
  // Messages ZeroMQ queues per connection and direction (its send and receive high-water marks),
  // on every socket of a server, the scheduler and a client.
  uint32_t socket_queue = 10'000;
  // Look-ahead hints a server holds waiting for its prefetch thread, over all its tables and
  // trainers; a hint beyond them is refused (and costs only speed).
  uint32_t queued_hints = 1024;
  // Followers a server streams changed rows to at once (a serving replica is one per table it
  // follows); one idle for a minute is forgotten.
  uint32_t followers = 64;
};

// Each limit, for counting and naming.
enum class Limit : uint8_t {
  kKeysPerMessage,
  kTablesPerServer,
  kDeferredPushesPerClock,
  kPushLedgerSenders,
  kTrainers,
  kOpenBarriers,
  kBarrierNameBytes,
  kWaiters,
  kSocketQueue,
  kQueuedHints,
  kFollowers,
};
inline constexpr size_t kLimitCount = 11;

// The limit's key in the `limits:` section, e.g. "keys_per_message".
std::string_view LimitName(Limit limit);

// ResourceExhausted: "`what`: over the limit of `value` (limits.NAME; raise it in the config's
// limits: section)".
Status LimitExceeded(Limit limit, uint64_t value, const std::string& what);

// How often one limit refused something, as the stats carry it.
struct LimitHit {
  std::string limit;  // LimitName()
  uint64_t count = 0;
};

// Refusals per limit, counted with relaxed atomics.
class LimitCounters {
 public:
  void Count(Limit limit, uint64_t times = 1) {
    counts_[static_cast<size_t>(limit)].fetch_add(times, std::memory_order_relaxed);
  }
  uint64_t count(Limit limit) const {
    return counts_[static_cast<size_t>(limit)].load(std::memory_order_relaxed);
  }
  // The limits hit at least once, in enum order.
  std::vector<LimitHit> Hits() const;

 private:
  std::array<std::atomic<uint64_t>, kLimitCount> counts_{};
};

// The count of `limit` in `hits` (0 when absent).
uint64_t HitsOf(const std::vector<LimitHit>& hits, Limit limit);

// Reads the `limits:` section (absent or null: the defaults); InvalidArgument names the key of a
// value that is unknown, unreadable or 0.
Result<Limits> LimitsFromYaml(const YAML::Node& node, std::string_view path = "limits");

}  // namespace ember
