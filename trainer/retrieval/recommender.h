// Recommender: two-tower retrieval with a trained model. The item tower encodes the whole
// catalogue from the rows a RowReader reads (a serving replica's or a cluster's lookups, or a
// checkpoint's rows in this process) into an ItemIndex; a query encodes one user with the user
// tower from the same rows and searches the index.
//
// Refresh() encodes the catalogue again from the rows as they are now, builds a new index and
// swaps it in: queries under way keep the index they started with. StartRefreshing() does that
// every interval on a thread of its own, so that a replica's fresh rows reach the index.
//
// Thread-safety: every method may be called from any thread (encoding is serialised).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "common/status.h"
#include "trainer/backend.h"
#include "trainer/interaction_dataset.h"
#include "trainer/model_config.h"
#include "trainer/retrieval/item_index.h"
#include "trainer/tower_batch.h"
#include "trainer/train_options.h"

namespace ember::trainer {

class Recommender {
 public:
  // `backend` holds the trained dense weights; `dataset` (borrowed) gives each user's and item's
  // keys and each user's training items; options.user_tables and item_tables name the tables of
  // the towers' slots. Encodes the catalogue and builds the first index.
  static Result<std::unique_ptr<Recommender>> Create(TowerBatch::RowReader reader,
                                                     std::unique_ptr<Backend> backend,
                                                     const InteractionDataset& dataset,
                                                     const ModelConfig& model,
                                                     const TrainOptions& options,
                                                     const IndexOptions& index);
  ~Recommender();
  Recommender(const Recommender&) = delete;
  Recommender& operator=(const Recommender&) = delete;

  // The users' tower outputs (users.size() x output_dim) from the rows as they are now.
  Result<std::vector<float>> EncodeUsers(std::span<const uint32_t> users);
  // The `k` best items for `user` (a dense index), but those it trained on when `exclude_trained`;
  // searched approximately, or exactly when `exact`.
  Result<ItemHits> Recommend(uint32_t user, uint32_t k, bool exclude_trained, bool exact = false);
  // The items `user` trained on, ascending.
  std::span<const uint32_t> TrainedItems(uint32_t user) const { return trained_[user]; }

  // Encodes the catalogue from the rows as they are now and swaps the new index in.
  Status Refresh();
  void StartRefreshing(std::chrono::milliseconds interval);
  void StopRefreshing();
  std::shared_ptr<const ItemIndex> index() const;
  uint64_t refreshes() const { return refreshes_.load(); }
  const InteractionDataset& dataset() const { return dataset_; }

 private:
  Recommender(TowerBatch::RowReader reader, std::unique_ptr<Backend> backend,
              const InteractionDataset& dataset, const ModelConfig& model,
              const TrainOptions& options, const IndexOptions& index);
  Result<std::vector<float>> Encode(Tower tower, std::span<const uint32_t> entities);

  const TowerBatch::RowReader reader_;
  const std::unique_ptr<Backend> backend_;
  const InteractionDataset& dataset_;
  const ModelConfig model_;
  const TrainOptions options_;
  const IndexOptions index_options_;
  const std::vector<std::vector<uint32_t>> trained_;  // each user's training items, ascending
  std::mutex encode_mutex_;                           // the backend encodes one batch at a time
  mutable std::mutex index_mutex_;
  std::shared_ptr<const ItemIndex> index_;
  std::atomic<uint64_t> refreshes_{0};
  std::mutex refresh_mutex_;
  std::condition_variable refresh_wake_;
  bool stop_refreshing_ = false;
  std::thread refresher_;
};

}  // namespace ember::trainer
