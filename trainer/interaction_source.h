// InteractionSource: training batches from an InteractionDataset's training positives, reshuffled
// every epoch; each batch row is one (user, item) positive with both towers' slot keys.
//
// A batch wraps across the epoch boundary when the epoch runs out, so every batch is full. The
// same item can appear twice in a batch (for an in-batch softmax it is then also its own
// "negative" in the other row, which is harmless at these batch sizes).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "trainer/data_source.h"
#include "trainer/interaction_dataset.h"

namespace ember::trainer {

// Training samples of `dataset` that trainer `share` of `shares` reads per epoch (every shares-th
// sample of each epoch's order, from its share on).
double EpochShare(const InteractionDataset& dataset, uint32_t share, uint32_t shares);

class InteractionSource : public DataSource {
 public:
  // Epoch e's order is a shuffle seeded by (seed, e): identical across runs. With `shares` > 1
  // (many trainers) this source yields only the samples at positions i of each epoch's order
  // with i % shares == share: trainers with the same seed read disjoint shares of every epoch.
  //
  // With `negatives` > 0 each batch's item slots also hold, after the batch_size positives, each
  // positive's `negatives` sampled negatives (ItemSamples' layout): catalogue items other than
  // its own, drawn uniformly by hashing (seed, epoch, position, n), so that a restored position
  // draws the same ones. With `shared_negatives` (SharesNegatives) the batch has `negatives` in
  // all, drawn uniformly from the whole catalogue by hashing (seed, epoch, the position of the
  // batch's first sample, n), and item_log_frequency covers them too: log(negatives /
  // (batch_size * catalogue)), so that the logQ correction of each column is the log of its
  // expected copies among the candidates, divided by batch_size like the positives' (log of the
  // item's share of the positives).
  InteractionSource(std::shared_ptr<const InteractionDataset> dataset, uint64_t seed,
                    uint32_t share = 0, uint32_t shares = 1, uint32_t negatives = 0,
                    bool shared_negatives = false);

  // FailedPrecondition when the dataset has no training positives.
  Status Next(uint32_t batch_size, Batch* out) override;
  uint32_t user_slots() const override { return dataset_->user_slots(); }
  uint32_t item_slots() const override { return dataset_->item_slots(); }
  std::string Describe() const override { return dataset_->Describe(); }
  // "epoch E position P share S/N": the order of epoch E is recomputed from the seed.
  Result<std::string> SavePosition() const override;
  Status RestorePosition(std::string_view position) override;

  const std::shared_ptr<const InteractionDataset>& dataset() const { return dataset_; }
  uint64_t epochs_completed() const { return epoch_; }
  // Samples handed out in the current epoch.
  size_t position() const { return position_; }

 private:
  void Reshuffle();

  std::shared_ptr<const InteractionDataset> dataset_;
  uint64_t seed_;
  uint32_t share_ = 0, shares_ = 1;
  uint32_t negatives_ = 0;
  bool shared_negatives_ = false;
  std::vector<uint32_t> positive_items_, negative_items_;  // the last batch's, reused
  std::vector<uint64_t> history_keys_;                      // one sample's causal history
  std::vector<uint32_t> order_;  // indices into dataset_->train()
  size_t position_ = 0;
  uint64_t epoch_ = 0;
};

}  // namespace ember::trainer
