// HintPins: the look-ahead hints a tiered table holds and the pins they put on its rows.
//
// A hint holds the keys whose rows it pinned until it is released or expires. A row's pins are
// counted in its flags word (the high 16 bits, tier_row_flags.h), which its table guards
// with the row's stripe lock; HintPins accounts for the rows pinned at least once against the pin
// budget (in bytes of memory rows) and in the table's figures (pinned_rows, pinned_bytes). At
// most kMaxHints hints are held at once: a peer that never releases its hints is bounded by that
// and by their expiry.
//
// Thread-safety: the hints are guarded by a mutex of their own, the accounting is atomic; Pin and
// Unpin must be called under the lock that guards the flags word they change.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "common/table_stats.h"

namespace ember::embedding {

class HintPins {
 public:
  static constexpr size_t kMaxHints = 4096;

  // Rows of `row_bytes` (as the memory budget counts them) may be pinned up to `budget_bytes`;
  // `counters` (borrowed, the table's) gets the pinned rows and bytes.
  HintPins(uint64_t budget_bytes, uint64_t row_bytes, TableStatCounters& counters)
      : budget_bytes_(budget_bytes), row_bytes_(row_bytes), counters_(counters) {}

  // Pins the row whose flags word is `flags_word`; false (and nothing changed) when the row was
  // not pinned yet and the budget has no room for it.
  bool Pin(float* flags_word);
  // Undoes one pin (no-op for a row with none: erased and created again since it was pinned).
  void Unpin(float* flags_word);
  // Accounts for a pinned row being dropped from memory.
  void ForgetPinnedRow();
  // Rows that can still be pinned within the budget.
  uint64_t room_rows() const;

  // ResourceExhausted (counted) when kMaxHints hints are held; `table` names the table in it.
  Status CheckRoomForHint(const std::string& table);
  // Holds `hint` with the keys it pinned until `expires` (replacing one of that id).
  void Hold(uint64_t hint, std::vector<uint64_t> pinned,
            std::chrono::steady_clock::time_point expires);
  // Drops `hint` and returns the keys it pinned, for the table to unpin; nullopt when not held.
  std::optional<std::vector<uint64_t>> Release(uint64_t hint);
  // Drops the hints expired at `now` and returns the keys they pinned; `*expired` gets how many.
  std::vector<uint64_t> ReleaseExpired(std::chrono::steady_clock::time_point now, size_t* expired);

  size_t hints_held() const;
  uint64_t hints_refused() const { return hints_refused_.load(std::memory_order_relaxed); }
  uint64_t hints_expired() const { return hints_expired_.load(std::memory_order_relaxed); }

 private:
  struct Hint {
    std::chrono::steady_clock::time_point expires;
    std::vector<uint64_t> pinned;  // keys pinned by the hint
  };

  const uint64_t budget_bytes_;
  const uint64_t row_bytes_;
  TableStatCounters& counters_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Hint> hints_;  // guarded by mu_
  std::atomic<uint64_t> hints_refused_{0};
  std::atomic<uint64_t> hints_expired_{0};
};

}  // namespace ember::embedding
