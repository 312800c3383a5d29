// Test fixture for backend tests: a random sparse batch for both towers (rows, inverse indices
// with duplicate keys, gradient buffers) and the TowerInput views a Backend consumes, and the
// check that a backend resumed from GetState continues exactly.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <random>
#include <vector>

#include "trainer/backend.h"
#include "trainer/model_config.h"

namespace ember::trainer::testing {

struct RandomSlot {
  std::vector<float> rows;  // U x D
  std::vector<uint32_t> inverse;
  std::vector<float> grads;  // U x D
  std::vector<uint32_t> offsets;  // a multi-valued slot's (empty: one row per sample)

  // Makes this a multi-valued slot: sample b gets 0 to 3 of the unique rows.
  void MakeMultiValued(uint32_t samples, std::mt19937& rng) {
    // Every unique row is used by the single-valued layout, so the largest index is the last.
    const uint32_t unique = *std::max_element(inverse.begin(), inverse.end()) + 1;
    std::uniform_int_distribution<uint32_t> count(0, 3), pick(0, unique - 1);
    inverse.clear();
    offsets.assign(1, 0);
    for (uint32_t b = 0; b < samples; ++b) {
      const uint32_t n = count(rng);
      for (uint32_t j = 0; j < n; ++j) inverse.push_back(pick(rng));
      offsets.push_back(static_cast<uint32_t>(inverse.size()));
    }
  }
};

// One tower's slots for a batch. Every slot has about batch/2 unique rows (at least one), so
// most rows are used by several samples.
struct RandomTower {
  std::vector<RandomSlot> slots;

  RandomTower(uint32_t slot_count, uint32_t dim, uint32_t batch, float scale, std::mt19937& rng) {
    std::uniform_real_distribution<float> value(-scale, scale);
    for (uint32_t s = 0; s < slot_count; ++s) {
      RandomSlot slot;
      const uint32_t unique = std::max<uint32_t>(1, batch / 2 + s);
      slot.rows.resize(size_t{unique} * dim);
      for (float& v : slot.rows) v = value(rng);
      std::uniform_int_distribution<uint32_t> pick(0, unique - 1);
      slot.inverse.resize(batch);
      for (uint32_t b = 0; b < batch; ++b) slot.inverse[b] = b < unique ? b : pick(rng);
      std::shuffle(slot.inverse.begin(), slot.inverse.end(), rng);
      slot.grads.assign(slot.rows.size(), 0.0f);
      slots.push_back(std::move(slot));
    }
  }

  TowerInput Input() {
    TowerInput input;
    for (RandomSlot& slot : slots) {
      input.slots.push_back({slot.rows, slot.inverse, slot.grads, slot.offsets});
    }
    return input;
  }
};

struct RandomBatch {
  std::mt19937 rng;  // declared first: the towers below draw from it as they are built
  uint32_t batch;
  RandomTower user, item;  // item: ItemSamples(config, batch) samples (negatives with a sampled loss)

  RandomBatch(const ModelConfig& config, uint32_t batch_size, uint32_t seed, float scale = 0.5f)
      : rng(seed),
        batch(batch_size),
        user(config.user_slots, config.embedding_dim, batch_size, scale, rng),
        item(config.item_slots, config.embedding_dim, ItemSamples(config, batch_size), scale,
             rng) {}
};

// `trained` takes three steps; a `fresh` backend of the same model given trained's state must
// take the next two steps exactly as trained does (same losses, weights and Adam state, bit for
// bit). A backend that restarted Adam (SetWeights) would differ at once.
inline void ExpectStateResumesExactly(const ModelConfig& config, Backend& trained, Backend& fresh) {
  RandomBatch batch(config, 12, 21);
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(trained.TrainStep(12, batch.user.Input(), batch.item.Input()).ok());
  }
  auto state = trained.GetState();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->adam_steps, 3u);
  ASSERT_TRUE(fresh.SetState(*state).ok());
  for (int step = 0; step < 2; ++step) {
    auto expected = trained.TrainStep(12, batch.user.Input(), batch.item.Input());
    auto resumed = fresh.TrainStep(12, batch.user.Input(), batch.item.Input());
    ASSERT_TRUE(expected.ok() && resumed.ok());
    EXPECT_EQ(expected->loss, resumed->loss) << step;
  }
  auto a = trained.GetState(), b = fresh.GetState();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->adam_steps, b->adam_steps);
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    for (size_t l = 0; l < a->weights.tower(tower).size(); ++l) {
      EXPECT_EQ(a->weights.tower(tower)[l].weight, b->weights.tower(tower)[l].weight);
      EXPECT_EQ(a->first_moment.tower(tower)[l].weight, b->first_moment.tower(tower)[l].weight);
      EXPECT_EQ(a->second_moment.tower(tower)[l].bias, b->second_moment.tower(tower)[l].bias);
    }
  }
  DenseState misshapen = *state;
  misshapen.second_moment.item[0].bias.pop_back();
  Status refused = fresh.SetState(misshapen);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.ToString().find("second moment"), std::string::npos) << refused.ToString();
}

}  // namespace ember::trainer::testing
