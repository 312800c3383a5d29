// InteractionSource: epoch shuffling and batch filling.
#include "trainer/interaction_source.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "common/hash.h"
#include "trainer/zipf.h"

namespace ember::trainer {

double EpochShare(const InteractionDataset& dataset, uint32_t share, uint32_t shares) {
  return std::ceil(static_cast<double>(dataset.num_train() - share) / std::max(shares, 1u));
}

InteractionSource::InteractionSource(std::shared_ptr<const InteractionDataset> dataset,
                                     uint64_t seed, uint32_t share, uint32_t shares,
                                     uint32_t negatives, bool shared_negatives)
    : dataset_(std::move(dataset)), seed_(seed), share_(share), shares_(std::max(shares, 1u)),
      negatives_(negatives), shared_negatives_(shared_negatives) {
  Reshuffle();
}

void InteractionSource::Reshuffle() {
  order_.resize(dataset_->num_train());
  std::iota(order_.begin(), order_.end(), 0u);
  std::mt19937_64 rng(HashCombine(seed_, epoch_));
  for (size_t i = order_.size(); i > 1; --i) {
    std::swap(order_[i - 1], order_[UniformBelow(rng, i)]);
  }
  if (shares_ > 1) {
    size_t kept = 0;
    for (size_t i = share_; i < order_.size(); i += shares_) order_[kept++] = order_[i];
    order_.resize(kept);
  }
  position_ = 0;
}

Status InteractionSource::Next(uint32_t batch_size, Batch* out) {
  if (order_.empty()) {
    return FailedPrecondition("no training interactions in " + dataset_->Describe());
  }
  out->size = batch_size;
  const uint32_t shared = shared_negatives_ ? negatives_ : 0;
  const uint32_t per_positive = shared_negatives_ ? 0 : negatives_;
  out->item_log_frequency.resize(size_t{batch_size} + shared);
  const std::span<const TrainPair> train = dataset_->train();
  const std::span<const uint32_t> counts = dataset_->item_train_counts();
  const double log_total = std::log(static_cast<double>(train.size()));
  const uint32_t catalogue = static_cast<uint32_t>(dataset_->num_items());
  // The batch's positives, then each one's negatives or the batch's (ItemSamples' layout).
  positive_items_.resize(batch_size);
  negative_items_.resize(size_t{batch_size} * per_positive + shared);
  const uint64_t batch_id = HashCombine(HashCombine(seed_, epoch_), position_);
  const float shared_log_frequency = static_cast<float>(
      std::log(static_cast<double>(shared) / (static_cast<double>(batch_size) * catalogue)));
  for (uint32_t n = 0; n < shared; ++n) {
    negative_items_[n] = static_cast<uint32_t>(HashCombine(batch_id, ~uint64_t{n}) % catalogue);
    out->item_log_frequency[batch_size + n] = shared_log_frequency;
  }
  dataset_->users().StartBatch(&out->user_keys, &out->user_offsets);
  // A sample's own positive leaves its user's history (or, causally, it holds only what came
  // before).
  const std::optional<uint32_t> history_slot = dataset_->history_slot();
  const bool causal_history = dataset_->options().causal_history;
  for (uint32_t b = 0; b < batch_size; ++b) {
    const uint64_t sample_id = HashCombine(HashCombine(seed_, epoch_), position_);
    const uint32_t train_index = order_[position_++];
    const TrainPair& pair = train[train_index];
    if (position_ == order_.size()) {
      ++epoch_;
      Reshuffle();
    }
    if (history_slot && causal_history) {
      history_keys_.clear();
      dataset_->AppendHistoryBefore(train_index, &history_keys_);
      dataset_->users().AppendSampleWith(pair.user, *history_slot, history_keys_, &out->user_keys,
                                         &out->user_offsets);
    } else if (history_slot) {
      dataset_->users().AppendSampleWithout(
          pair.user, *history_slot, dataset_->history_key(pair.item),
          InteractionDataset::EmptyHistoryKey(), &out->user_keys, &out->user_offsets);
    } else {
      dataset_->users().AppendSample(pair.user, &out->user_keys, &out->user_offsets);
    }
    positive_items_[b] = pair.item;
    out->item_log_frequency[b] =
        static_cast<float>(std::log(static_cast<double>(counts[pair.item])) - log_total);
    for (uint32_t n = 0; n < per_positive; ++n) {
      uint64_t draw = HashCombine(sample_id, n + 1);
      uint32_t negative = static_cast<uint32_t>(draw % catalogue);
      while (negative == pair.item && catalogue > 1) {
        draw = HashCombine(draw, 0x9E3779B97F4A7C15ull);
        negative = static_cast<uint32_t>(draw % catalogue);
      }
      negative_items_[size_t{b} * per_positive + n] = negative;
    }
  }
  dataset_->items().StartBatch(&out->item_keys, &out->item_offsets);
  for (const auto* items : {&positive_items_, &negative_items_}) {
    for (const uint32_t item : *items) {
      dataset_->items().AppendSample(item, &out->item_keys, &out->item_offsets);
    }
  }
  return Status::Ok();
}

Result<std::string> InteractionSource::SavePosition() const {
  return "interactions epoch " + std::to_string(epoch_) + " position " +
         std::to_string(position_) + " share " + std::to_string(share_) + "/" +
         std::to_string(shares_) + " samples " + std::to_string(order_.size());
}

Status InteractionSource::RestorePosition(std::string_view position) {
  std::istringstream in{std::string(position)};
  std::string kind, epoch_word, position_word, share_word, samples_word;
  uint64_t epoch = 0;
  size_t offset = 0, samples = 0;
  uint32_t share = 0, shares = 0;
  char slash = 0;
  in >> kind >> epoch_word >> epoch >> position_word >> offset >> share_word >> share >> slash >>
      shares >> samples_word >> samples;
  if (in.fail() || kind != "interactions" || epoch_word != "epoch" ||
      position_word != "position" || share_word != "share" || slash != '/' ||
      samples_word != "samples") {
    return InvalidArgument("not an interaction data position: '" +
                           std::string(position.substr(0, 60)) + "'");
  }
  if (share != share_ || shares != shares_) {
    return InvalidArgument("the saved data position is share " + std::to_string(share) + "/" +
                           std::to_string(shares) + " but this trainer reads share " +
                           std::to_string(share_) + "/" + std::to_string(shares_));
  }
  const uint64_t saved_epoch = epoch_;
  const size_t saved_position = position_;
  epoch_ = epoch;
  Reshuffle();
  if (samples != order_.size() || offset >= order_.size()) {
    epoch_ = saved_epoch;
    Reshuffle();
    position_ = saved_position;
    return InvalidArgument("the saved data position (" + std::to_string(offset) + " of " +
                           std::to_string(samples) + " samples) does not fit this dataset's " +
                           std::to_string(order_.size()) + " samples per epoch");
  }
  position_ = offset;
  return Status::Ok();
}

}  // namespace ember::trainer
