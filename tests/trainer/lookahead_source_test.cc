// LookaheadSource: the batches, their order and the data positions are those of its inner
// source; every batch is announced once, with increasing ids, as it is drawn ahead.
#include "trainer/lookahead_source.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ember::trainer {
namespace {

// Batch n holds keys n*size .. (n+1)*size - 1 in its one user and one item slot.
class CountingSource final : public DataSource {
 public:
  Status Next(uint32_t batch_size, Batch* out) override {
    out->size = batch_size;
    out->user_keys.assign(1, std::vector<uint64_t>(batch_size));
    out->item_keys.assign(1, std::vector<uint64_t>(batch_size));
    for (uint32_t b = 0; b < batch_size; ++b) {
      out->user_keys[0][b] = out->item_keys[0][b] = drawn_ * batch_size + b;
    }
    ++drawn_;
    return Status::Ok();
  }
  uint32_t user_slots() const override { return 1; }
  uint32_t item_slots() const override { return 1; }
  std::string Describe() const override { return "counting"; }
  Result<std::string> SavePosition() const override { return std::to_string(drawn_); }
  Status RestorePosition(std::string_view position) override {
    drawn_ = std::stoull(std::string(position));
    return Status::Ok();
  }

 private:
  uint64_t drawn_ = 0;
};

uint64_t FirstKey(const Batch& batch) { return batch.user_keys.at(0).at(0); }

TEST(LookaheadSourceTest, HandsOutTheInnerBatchesInOrderAndAnnouncesEachOnceAhead) {
  CountingSource inner;
  std::vector<std::pair<uint64_t, uint64_t>> announced;  // (id, first key)
  LookaheadSource ahead(&inner, 3, [&](const Batch& batch, uint64_t id) {
    announced.emplace_back(id, FirstKey(batch));
  });
  Batch batch;
  for (uint64_t n = 0; n < 6; ++n) {
    ASSERT_TRUE(ahead.Next(4, &batch).ok());
    EXPECT_EQ(FirstKey(batch), n * 4);
    EXPECT_EQ(ahead.last_id(), n + 1);
    EXPECT_EQ(ahead.waiting(), 3u);
    // Drawn three ahead: batch n + 3 was announced before batch n was handed out.
    ASSERT_EQ(announced.size(), n + 4);
    EXPECT_EQ(announced.back(), std::make_pair(n + 4, (n + 3) * 4));
  }
}

TEST(LookaheadSourceTest, DrawsNothingBeyondTheBatchesExpected) {
  CountingSource inner;
  uint64_t announced = 0;
  LookaheadSource ahead(&inner, 4, [&](const Batch&, uint64_t) { ++announced; });
  ahead.ExpectOnly(3);
  Batch batch;
  for (int n = 0; n < 3; ++n) ASSERT_TRUE(ahead.Next(2, &batch).ok());
  EXPECT_EQ(announced, 3u);
  EXPECT_EQ(ahead.waiting(), 0u);
}

TEST(LookaheadSourceTest, ItsPositionIsTheInnerOneAsIfNothingWereDrawnAhead) {
  CountingSource plain_inner, inner;
  LookaheadSource ahead(&inner, 4, nullptr);
  Batch a, b;
  for (int n = 0; n < 5; ++n) {
    ASSERT_TRUE(plain_inner.Next(2, &a).ok());
    ASSERT_TRUE(ahead.Next(2, &b).ok());
    EXPECT_EQ(*ahead.SavePosition(), *plain_inner.SavePosition()) << "after batch " << n;
  }
  // Restoring drops what was drawn ahead and goes on from the position; ids are not reused.
  const uint64_t last_id = ahead.last_id();
  ASSERT_TRUE(ahead.RestorePosition("1").ok());
  EXPECT_EQ(ahead.waiting(), 0u);
  ASSERT_TRUE(ahead.Next(2, &b).ok());
  EXPECT_EQ(FirstKey(b), 2u);
  EXPECT_GT(ahead.last_id(), last_id);
}

}  // namespace
}  // namespace ember::trainer
