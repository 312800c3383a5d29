// EntityKeys: the sparse keys of every user (or every item) of a dataset, per slot, in one flat
// array. A single-valued slot holds one key per entity; a multi-valued slot (a side feature such
// as "Action|Comedy") holds one or more, which a batch lays out with offsets (trainer/batch.h)
// and the backend averages.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ember::trainer {

class EntityKeys {
 public:
  EntityKeys() = default;
  // keys[entity * multi_valued.size() + slot] are that slot's keys (exactly one for a slot not
  // marked multi-valued).
  EntityKeys(const std::vector<std::vector<uint64_t>>& keys, std::vector<bool> multi_valued);

  uint32_t slots() const { return static_cast<uint32_t>(multi_valued_.size()); }
  bool multi_valued(uint32_t slot) const { return multi_valued_[slot]; }
  bool any_multi_valued() const;
  std::span<const uint64_t> keys(uint32_t entity, uint32_t slot) const;

  // Empties a batch's keys[slot][...] and offsets[slot] for this many slots, with offsets {0}
  // for the multi-valued slots and none for the others.
  void StartBatch(std::vector<std::vector<uint64_t>>* keys,
                  std::vector<std::vector<uint32_t>>* offsets) const;
  // Appends `entity` as the batch's next sample.
  void AppendSample(uint32_t entity, std::vector<std::vector<uint64_t>>* keys,
                    std::vector<std::vector<uint32_t>>* offsets) const;
  // Appends `entity` with `key` left out of the multi-valued `slot`; `instead` stands in when
  // no other key is left there.
  void AppendSampleWithout(uint32_t entity, uint32_t slot, uint64_t key, uint64_t instead,
                           std::vector<std::vector<uint64_t>>* keys,
                           std::vector<std::vector<uint32_t>>* offsets) const;
  // Appends `entity` with `slot_keys` in the multi-valued `slot` instead of its own keys there.
  void AppendSampleWith(uint32_t entity, uint32_t slot, std::span<const uint64_t> slot_keys,
                        std::vector<std::vector<uint64_t>>* keys,
                        std::vector<std::vector<uint32_t>>* offsets) const;

 private:
  std::vector<bool> multi_valued_;
  std::vector<uint64_t> values_;
  std::vector<size_t> starts_;  // [entity * slots + slot], and one past the end
};

}  // namespace ember::trainer
