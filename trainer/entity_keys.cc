// EntityKeys implementation.
#include "trainer/entity_keys.h"

#include <algorithm>

namespace ember::trainer {

EntityKeys::EntityKeys(const std::vector<std::vector<uint64_t>>& keys,
                       std::vector<bool> multi_valued)
    : multi_valued_(std::move(multi_valued)) {
  starts_.reserve(keys.size() + 1);
  for (const std::vector<uint64_t>& slot_keys : keys) {
    starts_.push_back(values_.size());
    values_.insert(values_.end(), slot_keys.begin(), slot_keys.end());
  }
  starts_.push_back(values_.size());
}

bool EntityKeys::any_multi_valued() const {
  return std::find(multi_valued_.begin(), multi_valued_.end(), true) != multi_valued_.end();
}

std::span<const uint64_t> EntityKeys::keys(uint32_t entity, uint32_t slot) const {
  const size_t index = size_t{entity} * slots() + slot;
  return std::span<const uint64_t>(values_).subspan(starts_[index],
                                                    starts_[index + 1] - starts_[index]);
}

void EntityKeys::StartBatch(std::vector<std::vector<uint64_t>>* keys,
                            std::vector<std::vector<uint32_t>>* offsets) const {
  keys->resize(slots());
  offsets->resize(slots());
  for (uint32_t s = 0; s < slots(); ++s) {
    (*keys)[s].clear();
    (*offsets)[s].clear();
    if (multi_valued_[s]) (*offsets)[s].push_back(0);
  }
}

void EntityKeys::AppendSample(uint32_t entity, std::vector<std::vector<uint64_t>>* keys,
                              std::vector<std::vector<uint32_t>>* offsets) const {
  for (uint32_t s = 0; s < slots(); ++s) {
    const std::span<const uint64_t> slot_keys = this->keys(entity, s);
    std::vector<uint64_t>& out = (*keys)[s];
    out.insert(out.end(), slot_keys.begin(), slot_keys.end());
    if (multi_valued_[s]) (*offsets)[s].push_back(static_cast<uint32_t>(out.size()));
  }
}

void EntityKeys::AppendSampleWithout(uint32_t entity, uint32_t slot, uint64_t key,
                                     uint64_t instead, std::vector<std::vector<uint64_t>>* keys,
                                     std::vector<std::vector<uint32_t>>* offsets) const {
  AppendSample(entity, keys, offsets);
  std::vector<uint64_t>& out = (*keys)[slot];
  std::vector<uint32_t>& ends = (*offsets)[slot];
  const auto begin = out.begin() + ends[ends.size() - 2];
  out.erase(std::remove(begin, out.end(), key), out.end());
  if (out.begin() + ends[ends.size() - 2] == out.end()) out.push_back(instead);
  ends.back() = static_cast<uint32_t>(out.size());
}

void EntityKeys::AppendSampleWith(uint32_t entity, uint32_t slot,
                                  std::span<const uint64_t> slot_keys,
                                  std::vector<std::vector<uint64_t>>* keys,
                                  std::vector<std::vector<uint32_t>>* offsets) const {
  AppendSample(entity, keys, offsets);
  std::vector<uint64_t>& out = (*keys)[slot];
  std::vector<uint32_t>& ends = (*offsets)[slot];
  out.resize(ends[ends.size() - 2]);
  out.insert(out.end(), slot_keys.begin(), slot_keys.end());
  ends.back() = static_cast<uint32_t>(out.size());
}

}  // namespace ember::trainer
