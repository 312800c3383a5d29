// HintPins: look-ahead hints and the pins they hold on a tiered table's rows.
#include "embedding/hint_pins.h"

#include "embedding/tier_row_flags.h"

namespace ember::embedding {


bool HintPins::Pin(float* flags_word) {
  const uint32_t flags = LoadFlags(flags_word);
  if (PinCount(flags) == 0) {
    std::atomic<uint64_t>& pinned_bytes = counters_.Value(TableStat::kPinnedBytes);
    uint64_t pinned = pinned_bytes.load(std::memory_order_relaxed);
    do {
      if (pinned + row_bytes_ > budget_bytes_) return false;
    } while (!pinned_bytes.compare_exchange_weak(pinned, pinned + row_bytes_,
                                                 std::memory_order_relaxed));
    counters_.Add(TableStat::kPinnedRows);
  }
  StoreFlags(flags_word, (flags + kPinOne) | kReferenced);
  return true;
}

void HintPins::Unpin(float* flags_word) {
  const uint32_t flags = LoadFlags(flags_word);
  if (PinCount(flags) == 0) return;
  StoreFlags(flags_word, flags - kPinOne);
  if (PinCount(flags) == 1) ForgetPinnedRow();
}

void HintPins::ForgetPinnedRow() {
  counters_.Subtract(TableStat::kPinnedBytes, row_bytes_);
  counters_.Subtract(TableStat::kPinnedRows);
}

uint64_t HintPins::room_rows() const {
  const uint64_t pinned = counters_.Get(TableStat::kPinnedBytes);
  return budget_bytes_ > pinned ? (budget_bytes_ - pinned) / row_bytes_ : 0;
}

Status HintPins::CheckRoomForHint(const std::string& table) {
  std::lock_guard<std::mutex> lock(mu_);
  if (hints_.size() < kMaxHints) return Status::Ok();
  hints_refused_.fetch_add(1, std::memory_order_relaxed);
  return ResourceExhausted("table '" + table + "' holds " + std::to_string(kMaxHints) +
                           " hints already");
}

void HintPins::Hold(uint64_t hint, std::vector<uint64_t> pinned,
                    std::chrono::steady_clock::time_point expires) {
  std::lock_guard<std::mutex> lock(mu_);
  hints_[hint] = Hint{expires, std::move(pinned)};
}

std::optional<std::vector<uint64_t>> HintPins::Release(uint64_t hint) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = hints_.find(hint);
  if (it == hints_.end()) return std::nullopt;
  std::vector<uint64_t> pinned = std::move(it->second.pinned);
  hints_.erase(it);
  return pinned;
}

std::vector<uint64_t> HintPins::ReleaseExpired(std::chrono::steady_clock::time_point now,
                                               size_t* expired) {
  std::vector<uint64_t> pinned;
  *expired = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = hints_.begin(); it != hints_.end();) {
      if (it->second.expires > now) {
        ++it;
        continue;
      }
      pinned.insert(pinned.end(), it->second.pinned.begin(), it->second.pinned.end());
      it = hints_.erase(it);
      ++*expired;
    }
  }
  hints_expired_.fetch_add(*expired, std::memory_order_relaxed);
  return pinned;
}

size_t HintPins::hints_held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hints_.size();
}

}  // namespace ember::embedding
