// Batch: the sparse keys of one training batch, per tower and slot, as a data source emits them.
#pragma once

#include <cstdint>
#include <vector>

namespace ember::trainer {

// Sample b's key in user-tower slot s is user_keys[s][b]; likewise for the item tower. Every user
// slot holds exactly `size` keys, every item slot ItemSamples(model, size): `size` positives (the
// first), then with a sampled loss each positive's negatives. Sample b's user and item form the
// positive pair of row b.
struct Batch {
  uint32_t size = 0;
  std::vector<std::vector<uint64_t>> user_keys;  // [slot][sample]
  std::vector<std::vector<uint64_t>> item_keys;  // [slot][sample]
  // [slot]: empty when each sample has one key in the slot. For a multi-valued slot, samples + 1
  // offsets: sample b's keys are keys[slot][offsets[b] .. offsets[b + 1]) and its input is the
  // mean of their rows.
  std::vector<std::vector<uint32_t>> user_offsets, item_offsets;
  // log of the probability that sample b's item is drawn as a positive, when the source knows
  // it (else empty). The in-batch softmax subtracts it from the item's logits (the logQ
  // correction), so frequent items are not over-penalised for appearing often as negatives.
  std::vector<float> item_log_frequency;  // [sample]
};

}  // namespace ember::trainer
