// Tests for InteractionSource: full batches, one pass per epoch, seeded reshuffles.
#include "trainer/interaction_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "common/hash.h"
#include "tests/test_util.h"

namespace ember::trainer {
namespace {

std::shared_ptr<InteractionDataset> LoadSmall(const testing::TempDir& dir) {
  const std::string path = dir.path() + "/u.data";
  std::ofstream out(path);
  for (int u = 0; u < 10; ++u) {
    for (int i = 0; i < 4; ++i) out << 'u' << u << "\ti" << (u + i) % 20 << "\t5\t" << i << '\n';
  }
  out.close();
  InteractionOptions options;
  options.path = path;
  options.negatives = 5;
  Result<std::shared_ptr<InteractionDataset>> data = InteractionDataset::Load(options);
  EXPECT_TRUE(data.ok()) << data.status().ToString();
  return *data;
}

TEST(InteractionSourceTest, EachEpochVisitsEveryTrainingPairOnce) {
  testing::TempDir dir;
  auto data = LoadSmall(dir);
  ASSERT_EQ(data->num_train(), 30u);  // 40 rows, 10 held out
  InteractionSource source(data, 1);
  EXPECT_EQ(source.user_slots(), 1u);
  EXPECT_EQ(source.item_slots(), 1u);

  std::map<std::pair<uint64_t, uint64_t>, int> expected;
  for (const TrainPair& pair : data->train()) {
    ++expected[{data->users().keys(pair.user, 0)[0], data->items().keys(pair.item, 0)[0]}];
  }
  std::map<std::pair<uint64_t, uint64_t>, int> seen;
  Batch batch;
  for (int step = 0; step < 3; ++step) {  // 3 x 10 = one epoch exactly
    ASSERT_TRUE(source.Next(10, &batch).ok());
    ASSERT_EQ(batch.size, 10u);
    for (uint32_t b = 0; b < 10; ++b) ++seen[{batch.user_keys[0][b], batch.item_keys[0][b]}];
  }
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(source.epochs_completed(), 1u);

  ASSERT_TRUE(source.Next(45, &batch).ok());  // wraps through the next epoch into a third
  EXPECT_EQ(batch.user_keys[0].size(), 45u);
  EXPECT_EQ(source.epochs_completed(), 2u);
  EXPECT_EQ(source.position(), 15u);
}

TEST(InteractionSourceTest, OrderIsSeededAndChangesPerEpoch) {
  testing::TempDir dir;
  auto data = LoadSmall(dir);
  InteractionSource a(data, 1), b(data, 1), c(data, 2);
  Batch first_a, first_b, first_c, second_a;
  ASSERT_TRUE(a.Next(30, &first_a).ok());
  ASSERT_TRUE(b.Next(30, &first_b).ok());
  ASSERT_TRUE(c.Next(30, &first_c).ok());
  ASSERT_TRUE(a.Next(30, &second_a).ok());
  EXPECT_EQ(first_a.item_keys, first_b.item_keys);
  EXPECT_NE(first_a.item_keys, first_c.item_keys);
  EXPECT_NE(first_a.item_keys, second_a.item_keys);
}

TEST(InteractionSourceTest, ASavedPositionResumesWithTheSameBatches) {
  testing::TempDir dir;
  auto data = LoadSmall(dir);
  InteractionSource source(data, 4, 1, 2), resumed(data, 4, 1, 2);
  Batch batch, expected;
  ASSERT_TRUE(source.Next(9, &batch).ok());  // crosses into the second epoch (15 per share)
  ASSERT_TRUE(source.Next(9, &batch).ok());
  auto position = source.SavePosition();
  ASSERT_TRUE(position.ok()) << position.status().ToString();
  ASSERT_TRUE(resumed.RestorePosition(*position).ok());
  for (int step = 0; step < 4; ++step) {
    ASSERT_TRUE(source.Next(7, &expected).ok());
    ASSERT_TRUE(resumed.Next(7, &batch).ok());
    EXPECT_EQ(batch.user_keys, expected.user_keys) << step;
    EXPECT_EQ(batch.item_keys, expected.item_keys) << step;
  }

  InteractionSource other_share(data, 4, 0, 2);
  Status refused = other_share.RestorePosition(*position);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.ToString().find("share 1/2"), std::string::npos) << refused.ToString();
  EXPECT_EQ(resumed.RestorePosition("interactions epoch x").code(), StatusCode::kInvalidArgument);
}

// Restores `resumed` at `source`'s position; both then draw the same item samples.
void ExpectResumesWithTheSameItems(InteractionSource& source, InteractionSource& resumed) {
  ASSERT_TRUE(resumed.RestorePosition(*source.SavePosition()).ok());
  Batch expected, batch;
  for (int step = 0; step < 5; ++step) {
    ASSERT_TRUE(source.Next(7, &expected).ok());
    ASSERT_TRUE(resumed.Next(7, &batch).ok());
    EXPECT_EQ(batch.item_keys, expected.item_keys) << step;
  }
}

TEST(InteractionSourceTest, SampledNegativesFollowThePositivesAndResume) {
  testing::TempDir dir;
  auto data = LoadSmall(dir);
  constexpr uint32_t kNegatives = 3;
  InteractionSource source(data, 4, 0, 1, kNegatives), resumed(data, 4, 0, 1, kNegatives);
  InteractionSource plain(data, 4);
  Batch batch, without;
  ASSERT_TRUE(source.Next(8, &batch).ok());
  ASSERT_TRUE(plain.Next(8, &without).ok());
  ASSERT_EQ(batch.item_keys[0].size(), 8u * (1 + kNegatives));
  EXPECT_EQ(batch.user_keys[0].size(), 8u);
  // The positives are those of a source without negatives; each positive's negatives are
  // catalogue items other than itself, and not all the same.
  EXPECT_TRUE(std::equal(without.item_keys[0].begin(), without.item_keys[0].end(),
                         batch.item_keys[0].begin()));
  std::set<uint64_t> catalogue, drawn;
  for (uint32_t i = 0; i < data->num_items(); ++i) catalogue.insert(data->items().keys(i, 0)[0]);
  for (uint32_t b = 0; b < 8; ++b) {
    for (uint32_t n = 0; n < kNegatives; ++n) {
      const uint64_t negative = batch.item_keys[0][8 + b * kNegatives + n];
      EXPECT_NE(negative, batch.item_keys[0][b]);
      EXPECT_TRUE(catalogue.count(negative));
      drawn.insert(negative);
    }
  }
  EXPECT_GT(drawn.size(), 5u);
  // A restored position draws the same negatives.
  ExpectResumesWithTheSameItems(source, resumed);
}

TEST(InteractionSourceTest, SharedNegativesFollowThePositivesWithTheirCorrection) {
  testing::TempDir dir;
  auto data = LoadSmall(dir);
  constexpr uint32_t kNegatives = 6;
  InteractionSource source(data, 4, 0, 1, kNegatives, /*shared_negatives=*/true);
  InteractionSource resumed(data, 4, 0, 1, kNegatives, true);
  InteractionSource plain(data, 4);
  Batch batch, without;
  ASSERT_TRUE(source.Next(8, &batch).ok());
  ASSERT_TRUE(plain.Next(8, &without).ok());
  ASSERT_EQ(batch.item_keys[0].size(), 8u + kNegatives);
  EXPECT_EQ(batch.user_keys[0].size(), 8u);
  EXPECT_TRUE(std::equal(without.item_keys[0].begin(), without.item_keys[0].end(),
                         batch.item_keys[0].begin()));
  // The positives keep their log frequencies; each negative's is log(N / (B * catalogue)).
  ASSERT_EQ(batch.item_log_frequency.size(), 8u + kNegatives);
  EXPECT_TRUE(std::equal(without.item_log_frequency.begin(), without.item_log_frequency.end(),
                         batch.item_log_frequency.begin()));
  const float expected_log_q =
      static_cast<float>(std::log(static_cast<double>(kNegatives) / (8.0 * data->num_items())));
  std::set<uint64_t> catalogue, drawn;
  for (uint32_t i = 0; i < data->num_items(); ++i) catalogue.insert(data->items().keys(i, 0)[0]);
  for (uint32_t n = 0; n < kNegatives; ++n) {
    EXPECT_FLOAT_EQ(batch.item_log_frequency[8 + n], expected_log_q);
    EXPECT_TRUE(catalogue.count(batch.item_keys[0][8 + n]));
    drawn.insert(batch.item_keys[0][8 + n]);
  }
  EXPECT_GT(drawn.size(), 2u);
  // The next batch draws others; a restored position draws the same ones.
  Batch next;
  ASSERT_TRUE(source.Next(8, &next).ok());
  EXPECT_FALSE(std::equal(next.item_keys[0].begin() + 8, next.item_keys[0].end(),
                          batch.item_keys[0].begin() + 8));
  ExpectResumesWithTheSameItems(source, resumed);
}

// The user and item ids behind a batch's id keys (slot 0 of each tower).
struct SampleNames {
  explicit SampleNames(const InteractionDataset& data) {
    for (uint32_t i = 0; i < data.num_items(); ++i) {
      item[HashName(data.item_id(i))] = data.item_id(i);
    }
    for (uint32_t u = 0; u < data.num_users(); ++u) {
      user[HashName(data.user_id(u))] = data.user_id(u);
    }
  }
  std::map<uint64_t, std::string> user, item;
};

TEST(InteractionSourceTest, ASampleLeavesItsOwnPositiveOutOfItsUsersHistory) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/u.data";
  std::ofstream out(path);
  // u0 trains on one item, u1 on two, u2 on five (each user's last line is its test item); u3,
  // not evaluated, on its only one.
  std::map<std::string, std::vector<std::string>> trained;
  for (int u = 0; u < 3; ++u) {
    const int items = u == 0 ? 2 : u == 1 ? 3 : 6;
    for (int i = 0; i < items; ++i) {
      out << 'u' << u << "\ti" << i << "\t5\t" << i << '\n';
      if (i + 1 < items) trained["u" + std::to_string(u)].push_back("i" + std::to_string(i));
    }
  }
  out << "u3\ti7\t5\t0\n";
  trained["u3"] = {"i7"};
  out.close();
  InteractionOptions options;
  options.path = path;
  options.negatives = 1;
  options.user_history = 100;
  auto loaded = InteractionDataset::Load(options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  std::shared_ptr<InteractionDataset> data = *loaded;
  ASSERT_EQ(data->num_train(), 9u);
  const SampleNames names(*data);

  InteractionSource source(data, 3);
  Batch batch;
  ASSERT_TRUE(source.Next(9, &batch).ok());  // one epoch
  ASSERT_EQ(batch.user_offsets.size(), 2u);
  ASSERT_EQ(batch.user_offsets[1].size(), 10u);
  std::set<std::string> samples;
  for (uint32_t b = 0; b < 9; ++b) {
    const std::string user = names.user.at(batch.user_keys[0][b]);
    const std::string item = names.item.at(batch.item_keys[0][b]);
    samples.insert(user + ":" + item);
    std::set<uint64_t> history(batch.user_keys[1].begin() + batch.user_offsets[1][b],
                               batch.user_keys[1].begin() + batch.user_offsets[1][b + 1]);
    // The user's training items but this one.
    std::set<uint64_t> expected;
    for (const std::string& other : trained.at(user)) {
      if (other != item) expected.insert(InteractionDataset::HistoryKey(other));
    }
    if (expected.empty()) expected.insert(InteractionDataset::EmptyHistoryKey());
    EXPECT_EQ(history, expected) << user << ":" << item;
  }
  EXPECT_EQ(samples.size(), 9u);
}

// A dataset of `path` whose training samples see their user's latest `history` items before
// them (nullptr, with a failure, if it does not load).
std::shared_ptr<InteractionDataset> LoadWithCausalHistory(const std::string& path,
                                                          uint32_t history) {
  InteractionOptions options;
  options.path = path;
  options.negatives = 1;
  options.user_history = history;
  options.causal_history = true;
  auto loaded = InteractionDataset::Load(options);
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  return loaded.ok() ? *loaded : nullptr;
}

// The history slot (slot 1) of every sample of one epoch, by "user:item".
std::map<std::string, std::multiset<std::vector<uint64_t>>> HistoriesOfAnEpoch(
    std::shared_ptr<InteractionDataset> data) {
  const SampleNames names(*data);
  const uint32_t samples = static_cast<uint32_t>(data->num_train());
  InteractionSource source(data, 3);
  Batch batch;
  EXPECT_TRUE(source.Next(samples, &batch).ok());
  std::map<std::string, std::multiset<std::vector<uint64_t>>> histories;
  for (uint32_t b = 0; b < samples; ++b) {
    histories[names.user.at(batch.user_keys[0][b]) + ":" + names.item.at(batch.item_keys[0][b])]
        .insert(std::vector<uint64_t>(batch.user_keys[1].begin() + batch.user_offsets[1][b],
                                      batch.user_keys[1].begin() + batch.user_offsets[1][b + 1]));
  }
  return histories;
}

TEST(InteractionSourceTest, ACausalHistoryHoldsOnlyTheLatestItemsBeforeTheSample) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/u.data";
  std::ofstream out(path);
  // u0, in timestamp order: i0, i1, i2, i1 again, i3, i4, then its test item i5; the lines are
  // out of order. u1 trains on i0 alone; u2, not evaluated, on its only item i9.
  out << "u0\ti2\t5\t2\nu0\ti4\t5\t5\nu0\ti0\t5\t0\nu0\ti1\t5\t3\nu0\ti5\t5\t6\n"
         "u0\ti3\t5\t4\nu0\ti1\t5\t1\nu1\ti0\t5\t0\nu1\ti1\t5\t1\nu2\ti9\t5\t0\n";
  out.close();
  std::shared_ptr<InteractionDataset> data = LoadWithCausalHistory(path, 2);
  ASSERT_NE(data, nullptr);
  ASSERT_EQ(data->num_train(), 8u);
  const auto keys = [](std::initializer_list<const char*> items) {
    std::vector<uint64_t> out;
    for (const char* item : items) out.push_back(InteractionDataset::HistoryKey(item));
    if (out.empty()) out.push_back(InteractionDataset::EmptyHistoryKey());
    return out;
  };
  // The latest 2 distinct items before each sample, oldest first, never the sample's own item.
  std::map<std::string, std::multiset<std::vector<uint64_t>>> expected = {
      {"u0:i0", {keys({})}},           {"u0:i1", {keys({"i0"}), keys({"i0", "i2"})}},
      {"u0:i2", {keys({"i0", "i1"})}}, {"u0:i3", {keys({"i2", "i1"})}},
      {"u0:i4", {keys({"i1", "i3"})}}, {"u1:i0", {keys({})}},
      {"u2:i9", {keys({})}},
  };
  EXPECT_EQ(HistoriesOfAnEpoch(data), expected);
  // Evaluation sees the latest 2 distinct training items, as without causal_history.
  for (uint32_t u = 0; u < data->num_users(); ++u) {
    const std::span<const uint64_t> history = data->users().keys(u, 1);
    EXPECT_EQ(std::vector<uint64_t>(history.begin(), history.end()),
              data->user_id(u) == "u0"   ? keys({"i3", "i4"})
              : data->user_id(u) == "u1" ? keys({"i0"})
                                         : keys({"i9"}))
        << data->user_id(u);
  }
}

TEST(InteractionSourceTest, ALongCausalHistoryMatchesABruteForceOne) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/u.data";
  std::ofstream out(path);
  // u0 rates i0..i89, then i0..i39 again, then its test item i99; u1 rates i95, then i99.
  std::vector<std::string> sequence;
  for (int i = 0; i < 130; ++i) sequence.push_back("i" + std::to_string(i < 90 ? i : i - 90));
  for (size_t t = 0; t < sequence.size(); ++t) out << "u0\t" << sequence[t] << "\t5\t" << t << '\n';
  out << "u0\ti99\t5\t500\nu1\ti95\t5\t0\nu1\ti99\t5\t1\n";
  out.close();
  std::shared_ptr<InteractionDataset> data = LoadWithCausalHistory(path, 100);
  ASSERT_NE(data, nullptr);
  ASSERT_EQ(data->num_train(), 131u);
  // The reference: walk back from each sample, keeping the first 100 distinct other items.
  std::map<std::string, std::multiset<std::vector<uint64_t>>> expected;
  for (size_t t = 0; t < sequence.size(); ++t) {
    std::vector<uint64_t> history;
    std::set<std::string> taken;
    for (size_t i = t; i > 0 && taken.size() < 100; --i) {
      const std::string& item = sequence[i - 1];
      if (item == sequence[t] || !taken.insert(item).second) continue;
      history.insert(history.begin(), InteractionDataset::HistoryKey(item));
    }
    if (history.empty()) history.push_back(InteractionDataset::EmptyHistoryKey());
    expected["u0:" + sequence[t]].insert(history);
  }
  expected["u1:i95"].insert({InteractionDataset::EmptyHistoryKey()});
  EXPECT_EQ(HistoriesOfAnEpoch(data), expected);
}

}  // namespace
}  // namespace ember::trainer
