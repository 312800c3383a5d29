// Private to ps/client: Operation, one pull, lookup, push or hint of a Client, as its I/O thread
// carries it out in sub-requests to the servers that own its keys (client_io.cc): what it asks,
// its ticket and deadline, and how many of its sub-requests are in flight.
//
// A pull may ask for several tables at once (one request per server for all of them); every
// other kind is of one table. The keys of all of an operation's tables are numbered one after
// the other: a sub-request names its keys by those positions.
//
// Thread-safety: the caller's thread fills it in; once submitted the I/O thread alone touches it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/missing_rows.h"
#include "common/status.h"
#include "common/table_spec.h"
#include "common/wire.h"
#include "ps/client/client.h"
#include "ps/client/ticket.h"

namespace ember::ps {

struct Operation {
  using Clock = std::chrono::steady_clock;
  enum class Kind { kPull, kLookup, kPush, kHint };

  // One table's share of the operation.
  struct Part {
    const TableSpec* table = nullptr;
    uint64_t table_id = 0;
    std::span<const uint64_t> keys;
    std::span<float> rows;  // pull and lookup destination
    uint32_t first = 0;     // the position of keys[0] among the operation's keys
  };

  // The operation of a lookup (rows), push (gradients) or hint (no values) of `keys` of
  // `client`'s table `table`, or the error naming why it cannot be: an unknown table, or `values`
  // not keys.size() rows of the table's dim.
  static Result<std::shared_ptr<Operation>> New(const Client& client, Kind kind,
                                                std::string_view table,
                                                std::span<const uint64_t> keys, size_t values);
  // A pull of one or more tables, each into its `out`; checked as New checks a pull.
  static Result<std::shared_ptr<Operation>> NewPull(const Client& client,
                                                    std::span<const TablePull> tables);

  // "pull", "lookup", "push" or "hint", for errors.
  std::string_view name() const;
  // The keys of all parts.
  size_t key_count() const;
  // The part holding the key at `position`: inline for the usual operation of one table.
  const Part& PartOf(uint32_t position) const {
    return parts.size() == 1 ? parts.front() : PartAmongSeveral(position);
  }
  // The names of the operation's tables, quoted, for errors: "'user'" or "'user', 'item'".
  std::string TableNames() const;
  // Copies the rows (and a lookup's found flags) of server `server`'s reply to a pull or lookup of
  // the keys at `positions` (empty: all of them) to their places in the parts' rows (and `found`);
  // DataLoss naming the server when the reply does not hold what was asked for.
  Status TakeRows(uint32_t server, std::span<const uint32_t> positions,
                  const wire::ResponseBody& body);

  Kind kind = Kind::kPull;
  std::vector<Part> parts;                      // one, but for a pull of several tables
  std::span<uint8_t> found;                     // lookup: a found flag per key, or empty
  MissingRows missing = MissingRows::kInitial;  // lookup
  std::span<const float> gradients;             // push source
  uint64_t clock = 0;
  bool deferred = false;    // bsp push held by the servers until its clock is applied
  float learning_rate = 0;  // a push's: > 0 in place of the table's
  // A hint: its id; a push: the hint it releases (0: none).
  uint64_t hint = 0;
  uint32_t hint_ttl_ms = 0;          // a hint's lifetime on the servers
  std::vector<uint64_t> owned_keys;  // a hint's copy of its keys (its part points into it)
  Ticket ticket = Ticket::Pending();
  Clock::time_point deadline;
  uint32_t outstanding = 0;  // sub-requests in flight
  uint32_t routing_retries = 0;
  bool finished = false;

 private:
  const Part& PartAmongSeveral(uint32_t position) const;
};

}  // namespace ember::ps
