// PartitionOwnership: which partitions a server serves, at which routing epoch, and where the
// partitions moving in or out of it stand. Reads are lock-free (one atomic per partition) so the
// request path pays nothing; the mover changes states one partition at a time.
//
//   kNotOwned    requests for it are answered "not my partition" with the epoch
//   kOwned       served
//   kCopying     served, and its pushed keys are noted: a copy of it is on its way to the target
//   kHandedOver  held: requests are answered "moving, retry" until the move is decided
//   kIncoming    rows arriving from the source; not served until the move commits: answered
//                "arriving, retry" (the commit may be decided, its answer late)
//
// CheckServed is the ownership check of a pull or push, given the partitions its table hashed
// the keys to.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "common/routing_table.h"
#include "common/status.h"

namespace ember::ps {

enum class PartitionState : uint8_t { kNotOwned, kOwned, kCopying, kHandedOver, kIncoming };

class PartitionOwnership {
 public:
  PartitionOwnership(const RoutingTable& routing, uint32_t server)
      : server_(server),
        size_(routing.num_partitions),
        states_(std::make_unique<std::atomic<uint8_t>[]>(routing.num_partitions)),
        epoch_(routing.epoch) {
    for (uint32_t p = 0; p < size_; ++p) {
      states_[p].store(static_cast<uint8_t>(routing.owners[p] == server ? PartitionState::kOwned
                                                                        : PartitionState::kNotOwned));
    }
  }

  uint32_t size() const { return size_; }
  PartitionState state(uint32_t p) const {
    return static_cast<PartitionState>(states_[p].load(std::memory_order_acquire));
  }
  void set(uint32_t p, PartitionState state) {
    states_[p].store(static_cast<uint8_t>(state), std::memory_order_release);
  }
  // Served now: owned, or owned while a copy of it is made.
  bool serves(uint32_t p) const {
    const PartitionState s = state(p);
    return s == PartitionState::kOwned || s == PartitionState::kCopying;
  }
  uint32_t served_count() const {
    uint32_t count = 0;
    for (uint32_t p = 0; p < size_; ++p) count += serves(p);
    return count;
  }
  // OK when every partition of a request's keys (partitions[i] of keys[i], of table `table`) is
  // served; otherwise FailedPrecondition naming the first key whose partition this server does
  // not own (with the epoch), or Unavailable ("retry") when that partition is being handed over
  // or is arriving here.
  Status CheckServed(std::string_view table, std::span<const uint64_t> keys,
                     std::span<const uint32_t> partitions) const {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!serves(partitions[i])) return NotServed(table, keys[i], partitions[i]);
    }
    return Status::Ok();
  }

  // CheckServed for the keys of `table`, as the check a table runs on a request's keys. Borrows
  // this object and `table`.
  std::function<Status(std::span<const uint64_t>, std::span<const uint32_t>)> ServedCheck(
      std::string_view table) const {
    return [this, table](std::span<const uint64_t> keys, std::span<const uint32_t> partitions) {
      return CheckServed(table, keys, partitions);
    };
  }

  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  // Epochs only grow.
  void advance_epoch(uint64_t epoch) {
    uint64_t current = epoch_.load();
    while (epoch > current && !epoch_.compare_exchange_weak(current, epoch)) {
    }
  }

 private:
  // The error of CheckServed for `key` in `partition` (partition_ownership.cc).
  Status NotServed(std::string_view table, uint64_t key, uint32_t partition) const;

  const uint32_t server_;
  const uint32_t size_;
  std::unique_ptr<std::atomic<uint8_t>[]> states_;
  std::atomic<uint64_t> epoch_;
};

}  // namespace ember::ps
