// RequestMetrics implementation.
#include "ps/server/request_metrics.h"

namespace ember::ps {

RequestMetrics::Slot& RequestMetrics::SlotFor(std::string_view kind) {
  size_t used = used_.load(std::memory_order_acquire);
  for (size_t i = 0; i < used; ++i) {
    if (slots_[i].kind.data() == kind.data() || slots_[i].kind == kind) return slots_[i];
  }
  std::lock_guard lock(claim_mutex_);
  used = used_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < used; ++i) {
    if (slots_[i].kind == kind) return slots_[i];
  }
  if (used == kMaxKinds) return slots_[kMaxKinds - 1];
  slots_[used].kind = kind;
  used_.store(used + 1, std::memory_order_release);
  return slots_[used];
}

void RequestMetrics::Record(std::string_view kind, std::chrono::nanoseconds elapsed, bool failed) {
  Slot& slot = SlotFor(kind);
  const double seconds = std::chrono::duration<double>(elapsed).count();
  size_t bucket = 0;
  while (bucket < kBucketSeconds.size() && seconds > kBucketSeconds[bucket]) ++bucket;
  slot.requests.fetch_add(1, std::memory_order_relaxed);
  if (failed) slot.errors.fetch_add(1, std::memory_order_relaxed);
  slot.nanoseconds.fetch_add(static_cast<uint64_t>(elapsed.count()), std::memory_order_relaxed);
  slot.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
}

std::vector<RequestMetrics::KindFigures> RequestMetrics::Snapshot() const {
  std::vector<KindFigures> figures;
  const size_t used = used_.load(std::memory_order_acquire);
  for (size_t i = 0; i < used; ++i) {
    const Slot& slot = slots_[i];
    KindFigures kind{slot.kind};
    // Read one by one while requests go on: a histogram's count is the sum of its buckets.
    for (size_t b = 0; b < slot.buckets.size(); ++b) {
      kind.buckets[b] = slot.buckets[b].load(std::memory_order_relaxed);
    }
    kind.requests = slot.requests.load(std::memory_order_relaxed);
    kind.errors = slot.errors.load(std::memory_order_relaxed);
    kind.seconds = static_cast<double>(slot.nanoseconds.load(std::memory_order_relaxed)) * 1e-9;
    figures.push_back(kind);
  }
  return figures;
}

}  // namespace ember::ps
