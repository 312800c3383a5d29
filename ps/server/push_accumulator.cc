// PushAccumulator implementation.
#include "ps/server/push_accumulator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_map>

namespace ember::ps {
namespace {

// Sums gradient rows per key, keeping the keys in first-seen order.
class RowSum {
 public:
  void Add(std::span<const uint64_t> keys, std::span<const float> gradients, size_t dim) {
    for (size_t i = 0; i < keys.size(); ++i) {
      auto [it, inserted] = index_.emplace(keys[i], keys_.size());
      if (inserted) {
        keys_.push_back(keys[i]);
        sums_.resize(sums_.size() + dim, 0.0f);
      }
      float* row = sums_.data() + it->second * dim;
      const float* grad = gradients.data() + i * dim;
      for (size_t d = 0; d < dim; ++d) row[d] += grad[d];
    }
  }
  void Scale(float factor) {
    for (float& value : sums_) value *= factor;
  }
  std::span<const uint64_t> keys() const { return keys_; }
  std::span<const float> sums() const { return sums_; }

 private:
  std::unordered_map<uint64_t, size_t> index_;
  std::vector<uint64_t> keys_;
  std::vector<float> sums_;
};

}  // namespace

Status PushAccumulator::Add(uint64_t clock, uint32_t trainer, const std::string& table,
                            std::span<const uint64_t> keys, std::span<const float> gradients,
                            float learning_rate) {
  std::lock_guard lock(mutex_);
  if (clock <= applied_clock_) {
    return FailedPrecondition("deferred push of trainer " + std::to_string(trainer) +
                              " for clock " + std::to_string(clock) +
                              " arrived after that clock was applied (applied through " +
                              std::to_string(applied_clock_) + ")");
  }
  // Once a clock was applied, a trainer may push only for the next one: it waits for every
  // server's answer to the apply before it pulls again, and the scheduler grants one clock at a
  // time. (After a restart nothing is known yet; the first apply drops what it cannot use.)
  if (applied_clock_ > 0 && clock - applied_clock_ > 1) {  // clock > applied: no overflow
    return InvalidArgument("deferred push of trainer " + std::to_string(trainer) + ": clock " +
                      std::to_string(clock) + " is ahead of what the scheduler granted; " +
                      "this server takes clock " + std::to_string(applied_clock_ + 1) +
                      " only (applied through " + std::to_string(applied_clock_) + ")");
  }
  if (pieces_ >= max_pushes_) {
    return LimitExceeded(Limit::kDeferredPushesPerClock, max_pushes_,
                         "deferred push of trainer " + std::to_string(trainer) + " for clock " +
                             std::to_string(clock) + ": " + std::to_string(pieces_) +
                             " pushes are held already");
  }
  if (auto same = held_.lower_bound(Slot{clock, table, 0});
      same != held_.end() && std::get<0>(same->first) == clock &&
      std::get<1>(same->first) == table && same->second.front().learning_rate != learning_rate) {
    return InvalidArgument("deferred push of trainer " + std::to_string(trainer) + " for clock " +
                           std::to_string(clock) + " to table '" + table + "' with learning rate " +
                           std::to_string(learning_rate) + ", but that clock's pushes so far use " +
                           std::to_string(same->second.front().learning_rate) +
                           " (0: the table's)");
  }
  held_[Slot{clock, table, trainer}].push_back(
      Piece{{keys.begin(), keys.end()}, {gradients.begin(), gradients.end()}, learning_rate});
  ++pieces_;
  return Status::Ok();
}

Status PushAccumulator::Apply(uint64_t clock, std::span<const uint32_t> trainers,
                              Combine combine, const ApplyFn& apply) {
  if (trainers.empty()) {
    return InvalidArgument("apply of clock " + std::to_string(clock) + " lists no trainers");
  }
  std::lock_guard lock(mutex_);
  if (clock <= applied_clock_) return Status::Ok();  // another trainer asked first
  std::vector<uint32_t> listed(trainers.begin(), trainers.end());
  std::sort(listed.begin(), listed.end());
  const float factor = combine == Combine::kMean ? 1.0f / static_cast<float>(listed.size()) : 1.0f;

  // held_ is ordered by (clock, table, trainer): one pass per table of this clock.
  Status first_error;
  auto it = held_.begin();
  while (it != held_.end() && std::get<0>(it->first) < clock) {
    spdlog::warn("dropping deferred pushes of clock {} (clock {} is applied first)",
                 std::get<0>(it->first), clock);
    pieces_ -= it->second.size();
    it = held_.erase(it);
  }
  while (it != held_.end() && std::get<0>(it->first) == clock) {
    const std::string table = std::get<1>(it->first);
    const float learning_rate = it->second.front().learning_rate;  // one per (clock, table)
    RowSum sum;
    for (; it != held_.end() && std::get<0>(it->first) == clock && std::get<1>(it->first) == table;
         pieces_ -= it->second.size(), it = held_.erase(it)) {
      if (!std::binary_search(listed.begin(), listed.end(), std::get<2>(it->first))) continue;
      for (const Piece& piece : it->second) {
        const size_t dim = piece.keys.empty() ? 0 : piece.gradients.size() / piece.keys.size();
        sum.Add(piece.keys, piece.gradients, dim);
      }
    }
    if (sum.keys().empty()) continue;
    sum.Scale(factor);
    Status applied = apply(table, sum.keys(), sum.sums(), learning_rate);
    if (!applied.ok() && first_error.ok()) first_error = applied;
  }
  // Pushes held for clocks beyond the next one (taken before any clock was applied, after a
  // restart) can never be granted from here: dropped, so that they hold no room.
  it = clock > UINT64_MAX - 2 ? held_.end() : held_.lower_bound(Slot{clock + 2, std::string(), 0});
  while (it != held_.end()) {
    spdlog::warn("dropping deferred pushes of clock {} (clock {} is applied; only {} may follow)",
                 std::get<0>(it->first), clock, clock + 1);
    pieces_ -= it->second.size();
    it = held_.erase(it);
  }
  applied_clock_ = clock;
  return first_error;
}

uint64_t PushAccumulator::applied_clock() const {
  std::lock_guard lock(mutex_);
  return applied_clock_;
}

size_t PushAccumulator::pending_pushes() const {
  std::lock_guard lock(mutex_);
  return pieces_;
}

bool PushAccumulator::Holds(
    const std::function<bool(const std::string& table, uint64_t key)>& belongs) const {
  std::lock_guard lock(mutex_);
  for (const auto& [slot, pieces] : held_) {
    const std::string& table = std::get<1>(slot);
    for (const Piece& piece : pieces) {
      for (uint64_t key : piece.keys) {
        if (belongs(table, key)) return true;
      }
    }
  }
  return false;
}

}  // namespace ember::ps
