// Two-tower retrieval (trainer/retrieval/): the HNSW index finds what exact search finds (recall@10
// of at least 0.95 on random unit vectors), never returns an excluded item, and refuses vectors
// that are not whole; a Recommender's exact answers are the brute-force ranking of its towers'
// outputs, its served recall agrees with the trainer's full-catalogue evaluation, and a refresh
// picks up rows that changed.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "tests/test_util.h"
#include "trainer/interaction_dataset.h"
#include "trainer/retrieval/item_index.h"
#include "trainer/retrieval/recommender.h"
#include "trainer/retrieval/retrieval_eval.h"

namespace ember::trainer {
namespace {

std::vector<float> UnitVectors(size_t n, uint32_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> vectors(n * dim);
  for (size_t i = 0; i < n; ++i) {
    float norm = 0;
    for (uint32_t d = 0; d < dim; ++d) norm += std::pow(vectors[i * dim + d] = normal(rng), 2.f);
    for (uint32_t d = 0; d < dim; ++d) vectors[i * dim + d] /= std::sqrt(norm);
  }
  return vectors;
}

TEST(ItemIndexTest, TheApproximateSearchFindsWhatTheExactOneFinds) {
  constexpr uint32_t kDim = 32, kItems = 5000, kQueries = 200;
  auto index = ItemIndex::Build(UnitVectors(kItems, kDim, 1), kDim, {});
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  const std::vector<float> queries = UnitVectors(kQueries, kDim, 2);
  double recall = 0;
  for (uint32_t q = 0; q < kQueries; ++q) {
    const std::span<const float> query(queries.data() + q * kDim, kDim);
    const ItemHits approximate = (*index)->Search(query, 10);
    const ItemHits exact = (*index)->ExactSearch(query, 10);
    ASSERT_EQ(exact.items.size(), 10u);
    EXPECT_TRUE(std::is_sorted(exact.scores.rbegin(), exact.scores.rend()));
    const std::set<uint32_t> truth(exact.items.begin(), exact.items.end());
    for (uint32_t item : approximate.items) recall += truth.count(item) / 10.0;
  }
  EXPECT_GE(recall / kQueries, 0.95);
}

TEST(ItemIndexTest, ExcludedItemsAreNeverReturnedAndBadShapesAreRefused) {
  constexpr uint32_t kDim = 8;
  auto index = ItemIndex::Build(UnitVectors(300, kDim, 3), kDim, {});
  ASSERT_TRUE(index.ok());
  const std::vector<float> query = UnitVectors(1, kDim, 4);
  const ItemHits best = (*index)->ExactSearch(query, 5);
  std::vector<uint32_t> excluded(best.items.begin(), best.items.end());
  std::sort(excluded.begin(), excluded.end());
  for (const ItemHits& hits :
       {(*index)->Search(query, 5, excluded), (*index)->ExactSearch(query, 5, excluded)}) {
    EXPECT_EQ(hits.items.size(), 5u);
    for (uint32_t item : hits.items) {
      EXPECT_FALSE(std::binary_search(excluded.begin(), excluded.end(), item));
    }
  }
  EXPECT_EQ(ItemIndex::Build(std::vector<float>(10), 3, {}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ItemIndex::Build({}, 3, {}).status().code(), StatusCode::kInvalidArgument);
}

// Rows that tests can change: a key's row is its own until set otherwise.
class Rows {
 public:
  explicit Rows(uint32_t dim) : dim_(dim) {}
  Status Read(std::span<const uint64_t> keys, std::span<float> out) {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = set_.find(keys[i]);
      for (uint32_t d = 0; d < dim_; ++d) {
        out[i * dim_ + d] = it != set_.end() ? it->second[d]
                                             : std::sin(0.37f * float(keys[i] % 9973) + d);
      }
    }
    return Status::Ok();
  }
  void Set(uint64_t key, std::vector<float> row) {
    std::lock_guard lock(mutex_);
    set_[key] = std::move(row);
  }

 private:
  const uint32_t dim_;
  std::mutex mutex_;
  std::map<uint64_t, std::vector<float>> set_;
};

class RecommenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = dir_.path() + "/interactions.tsv";
    std::ofstream out(path);
    std::mt19937 rng(5);
    for (int u = 0; u < 60; ++u) {
      for (int t = 0; t < 8; ++t) {
        out << "u" << u << "\ti" << (u % 6) * 10 + int(rng() % 12) << "\t5\t" << t << "\n";
      }
    }
    out.close();
    InteractionOptions options;
    options.path = path;
    options.negatives = 5;
    auto data = InteractionDataset::Load(options);
    ASSERT_TRUE(data.ok()) << data.status().ToString();
    dataset_ = *data;
    model_.embedding_dim = 8;
    model_.user_slots = 1;
    model_.item_slots = 1;
    model_.hidden = {16};
    model_.output_dim = 8;
    train_.user_tables = {"user"};
    train_.item_tables = {"item"};
    auto backend = MakeBackend("cpu", model_);
    ASSERT_TRUE(backend.ok());
    auto recommender = Recommender::Create(
        [this](const std::string&, std::span<const uint64_t> keys, std::span<float> out) {
          return rows_.Read(keys, out);
        },
        std::move(*backend), *dataset_, model_, train_, {});
    ASSERT_TRUE(recommender.ok()) << recommender.status().ToString();
    recommender_ = std::move(*recommender);
  }

  testing::TempDir dir_;
  std::shared_ptr<InteractionDataset> dataset_;
  ModelConfig model_;
  TrainOptions train_;
  Rows rows_{8};
  std::unique_ptr<Recommender> recommender_;
};

TEST_F(RecommenderTest, ExactAnswersAreTheBruteForceRankingOfTheTowersOutputs) {
  const uint32_t user = 3;
  const uint32_t users[] = {user};
  auto query = recommender_->EncodeUsers(users);
  ASSERT_TRUE(query.ok());
  const auto index = recommender_->index();
  const auto trained = recommender_->TrainedItems(user);
  std::vector<std::pair<float, uint32_t>> scored;
  for (uint32_t item = 0; item < index->size(); ++item) {
    if (std::binary_search(trained.begin(), trained.end(), item)) continue;
    float dot = 0;
    for (uint32_t d = 0; d < 8; ++d) dot += (*query)[d] * index->vectors()[item * 8 + d];
    scored.push_back({-dot, item});
  }
  std::sort(scored.begin(), scored.end());
  auto hits = recommender_->Recommend(user, 5, /*exclude_trained=*/true, /*exact=*/true);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->items.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(hits->items[i], scored[i].second) << i;
  EXPECT_EQ(recommender_->Recommend(user, 5, true)->items.size(), 5u);
  EXPECT_EQ(recommender_->Recommend(100000, 5, true).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(RecommenderTest, ServedRecallAgreesWithTheTrainersEvaluation) {
  auto quality = EvaluateRetrievalQuality(*recommender_, 10);
  ASSERT_TRUE(quality.ok()) << quality.status().ToString();
  EXPECT_EQ(quality->cases, dataset_->eval_cases().size());
  EXPECT_GE(quality->ann_recall, 0.95);
  EXPECT_DOUBLE_EQ(quality->exact_recall, quality->trainer_recall);
  EXPECT_NEAR(quality->served_recall, quality->exact_recall, 0.05);
  auto speed = MeasureRetrievalSpeed(*recommender_, 10, 50);
  ASSERT_TRUE(speed.ok());
  EXPECT_GT(speed->queries_per_second, 0);
  EXPECT_LE(speed->p50_ms, speed->p99_ms);
}

TEST_F(RecommenderTest, ARefreshPicksUpChangedRows) {
  const std::vector<float> before(recommender_->index()->vectors().begin(),
                                  recommender_->index()->vectors().end());
  // Every item's row changes: the refreshed index holds the new outputs.
  for (uint32_t item = 0; item < dataset_->num_items(); ++item) {
    for (uint64_t key : dataset_->items().keys(item, 0)) {
      rows_.Set(key, std::vector<float>(8, 0.5f + float(item)));
    }
  }
  const auto unchanged = recommender_->index()->vectors();
  EXPECT_TRUE(std::equal(unchanged.begin(), unchanged.end(), before.begin()));  // until a refresh
  recommender_->StartRefreshing(std::chrono::milliseconds(10));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (recommender_->refreshes() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  recommender_->StopRefreshing();
  ASSERT_GE(recommender_->refreshes(), 3u);
  const auto after = recommender_->index()->vectors();
  EXPECT_FALSE(std::equal(after.begin(), after.end(), before.begin()));
}

}  // namespace
}  // namespace ember::trainer
