// SyntheticSource: endless Zipf-distributed batches with planted user-item structure, so a
// two-tower model has something to learn without any data files.
//
// Every sample draws a hidden cluster c. With probability `signal` all of its keys, in both
// towers, come from c's share of each slot's vocabulary; otherwise each key is drawn from the
// whole vocabulary, unrelated to c. A slot's vocabulary is split by rank: cluster c owns the
// ranks r with r % num_clusters == c, and its i-th most popular key has global rank
// i * num_clusters + c, so every cluster has a Zipf head of hot keys of its own. A model that
// learns which cluster a key belongs to can tell a sample's item from the other items of an
// in-batch softmax roughly num_clusters times better than chance.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/data_source.h"
#include "trainer/zipf.h"

namespace ember::trainer {

struct SyntheticOptions {
  uint32_t user_slots = 3;
  uint32_t item_slots = 3;
  uint64_t vocabulary = 10'000'000;  // distinct keys per slot
  double exponent = 1.05;            // Zipf exponent of key popularity
  uint64_t seed = 7;                 // the draws; key ids themselves do not depend on it
  uint32_t num_clusters = 64;        // hidden user-item clusters
  float signal = 0.9f;               // fraction of samples whose keys follow their cluster
};

// InvalidArgument naming the offending field ("<path>.vocabulary: ...").
Status ValidateSyntheticOptions(const SyntheticOptions& options, std::string_view path);

class SyntheticSource : public DataSource {
 public:
  // `options` must pass ValidateSyntheticOptions.
  explicit SyntheticSource(const SyntheticOptions& options);

  Status Next(uint32_t batch_size, Batch* out) override;
  uint32_t user_slots() const override { return options_.user_slots; }
  uint32_t item_slots() const override { return options_.item_slots; }
  std::string Describe() const override;
  // Every random stream's state (the keys drawn next depend on nothing else).
  Result<std::string> SavePosition() const override;
  Status RestorePosition(std::string_view position) override;

  const SyntheticOptions& options() const { return options_; }

 private:
  // One slot of one tower: its own random stream and key salt.
  struct Slot {
    std::mt19937_64 rng;
    ZipfSampler whole;    // global ranks over the slot's vocabulary
    ZipfSampler cluster;  // within-cluster ranks over vocabulary / num_clusters
    uint64_t salt;
  };

  uint64_t DrawKey(Slot& slot, bool follows_cluster, uint32_t cluster);
  void FillTower(std::vector<Slot>& slots, const std::vector<uint32_t>& clusters,
                 const std::vector<uint8_t>& follows, uint32_t batch_size,
                 std::vector<std::vector<uint64_t>>* keys);

  SyntheticOptions options_;
  std::mt19937_64 sample_rng_;  // clusters and signal coins
  std::vector<Slot> user_;
  std::vector<Slot> item_;
  std::vector<uint32_t> clusters_;
  std::vector<uint8_t> follows_;
};

}  // namespace ember::trainer
