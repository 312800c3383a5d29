// Recommender: the catalogue's index, user queries and refreshes (recommender.h).
#include "trainer/retrieval/recommender.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>

#include "trainer/ranking_metrics.h"

namespace ember::trainer {
namespace {

constexpr size_t kEntitiesPerEncode = 4096;

std::vector<std::vector<uint32_t>> SortedTrainItems(const InteractionDataset& dataset) {
  std::vector<std::vector<uint32_t>> trained = TrainItemsByUser(dataset);
  for (auto& items : trained) {
    std::sort(items.begin(), items.end());
    items.erase(std::unique(items.begin(), items.end()), items.end());
  }
  return trained;
}

}  // namespace

Recommender::Recommender(TowerBatch::RowReader reader, std::unique_ptr<Backend> backend,
                         const InteractionDataset& dataset, const ModelConfig& model,
                         const TrainOptions& options, const IndexOptions& index)
    : reader_(std::move(reader)),
      backend_(std::move(backend)),
      dataset_(dataset),
      model_(model),
      options_(options),
      index_options_(index),
      trained_(SortedTrainItems(dataset)) {}

Recommender::~Recommender() { StopRefreshing(); }

Result<std::unique_ptr<Recommender>> Recommender::Create(
    TowerBatch::RowReader reader, std::unique_ptr<Backend> backend,
    const InteractionDataset& dataset, const ModelConfig& model, const TrainOptions& options,
    const IndexOptions& index) {
  if (dataset.num_items() == 0) return InvalidArgument("recommender: the catalogue is empty");
  std::unique_ptr<Recommender> recommender(new Recommender(
      std::move(reader), std::move(backend), dataset, model, options, index));
  RETURN_IF_ERROR(recommender->Refresh());
  return recommender;
}

Result<std::vector<float>> Recommender::Encode(Tower tower, std::span<const uint32_t> entities) {
  const bool users = tower == Tower::kUser;
  const EntityKeys& keys = users ? dataset_.users() : dataset_.items();
  const std::vector<std::string>& tables = users ? options_.user_tables : options_.item_tables;
  std::vector<float> out(entities.size() * model_.output_dim), encoded;
  std::lock_guard lock(encode_mutex_);
  for (size_t first = 0; first < entities.size(); first += kEntitiesPerEncode) {
    const size_t count = std::min(kEntitiesPerEncode, entities.size() - first);
    RETURN_IF_ERROR(EncodeEntities(
        *backend_, tower, keys, entities.subspan(first, count), model_,
        [&](TowerBatch& batch) { return batch.ReadRows(reader_, tables); }, &encoded));
    std::copy(encoded.begin(), encoded.end(), out.begin() + first * model_.output_dim);
  }
  return out;
}

Result<std::vector<float>> Recommender::EncodeUsers(std::span<const uint32_t> users) {
  for (uint32_t user : users) {
    if (user >= dataset_.num_users()) {
      return InvalidArgument("recommender: user " + std::to_string(user) + " of " +
                             std::to_string(dataset_.num_users()));
    }
  }
  return Encode(Tower::kUser, users);
}

Result<ItemHits> Recommender::Recommend(uint32_t user, uint32_t k, bool exclude_trained,
                                        bool exact) {
  const uint32_t users[] = {user};
  ASSIGN_OR_RETURN(std::vector<float> query, EncodeUsers(users));
  const std::shared_ptr<const ItemIndex> current = index();
  const std::span<const uint32_t> excluded =
      exclude_trained ? TrainedItems(user) : std::span<const uint32_t>();
  return exact ? current->ExactSearch(query, k, excluded) : current->Search(query, k, excluded);
}

Status Recommender::Refresh() {
  std::vector<uint32_t> items(dataset_.num_items());
  std::iota(items.begin(), items.end(), 0u);
  ASSIGN_OR_RETURN(std::vector<float> vectors, Encode(Tower::kItem, items));
  ASSIGN_OR_RETURN(std::unique_ptr<ItemIndex> built,
                   ItemIndex::Build(std::move(vectors), model_.output_dim, index_options_));
  std::shared_ptr<const ItemIndex> fresh(std::move(built));
  {
    std::lock_guard lock(index_mutex_);
    index_ = std::move(fresh);
  }
  refreshes_.fetch_add(1);
  return Status::Ok();
}

std::shared_ptr<const ItemIndex> Recommender::index() const {
  std::lock_guard lock(index_mutex_);
  return index_;
}

void Recommender::StartRefreshing(std::chrono::milliseconds interval) {
  StopRefreshing();
  stop_refreshing_ = false;
  refresher_ = std::thread([this, interval] {
    std::unique_lock lock(refresh_mutex_);
    while (!refresh_wake_.wait_for(lock, interval, [this] { return stop_refreshing_; })) {
      lock.unlock();
      if (Status refreshed = Refresh(); !refreshed.ok()) {
        spdlog::warn("recommender: refreshing the item index: {}", refreshed.ToString());
      }
      lock.lock();
    }
  });
}

void Recommender::StopRefreshing() {
  {
    std::lock_guard lock(refresh_mutex_);
    stop_refreshing_ = true;
  }
  refresh_wake_.notify_all();
  if (refresher_.joinable()) refresher_.join();
}

}  // namespace ember::trainer
