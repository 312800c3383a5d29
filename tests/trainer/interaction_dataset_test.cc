// Tests for InteractionDataset: the leave-one-out split, negative sampling, side features and
// the validation split and the users' training histories.
#include "trainer/interaction_dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <set>

#include "common/hash.h"
#include "tests/test_util.h"

namespace ember::trainer {
namespace {

std::string WriteFile(const testing::TempDir& dir, const std::string& name,
                      const std::string& text) {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// u1: i2 is latest by timestamp although not last in the file; i3 has a low rating.
// u2: two positives tie on timestamp; the later line (i5) wins.
// u3: a single positive: trained on, not evaluated.
// u4: 25 low-rated items with equal timestamps, so the file's last one is latest.
std::string SmallInteractions() {
  std::string text =
      "u1\ti1\t5\t100\n"
      "u1\ti2\t4\t300\n"
      "u1\ti3\t2\t200\n"
      "u2\ti4\t5\t50\n"
      "u2\ti5\t5\t50\n"
      "u3\ti1\t5\t10\n";
  for (int i = 6; i <= 30; ++i) text += "u4\ti" + std::to_string(i) + "\t1\t1\n";
  return text;
}

InteractionOptions SmallOptions(const std::string& path) {
  InteractionOptions options;
  options.path = path;
  options.negatives = 3;
  return options;
}

std::shared_ptr<InteractionDataset> MustLoad(const InteractionOptions& options) {
  Result<std::shared_ptr<InteractionDataset>> data = InteractionDataset::Load(options);
  EXPECT_TRUE(data.ok()) << data.status().ToString();
  return data.ok() ? *data : nullptr;
}

std::vector<std::string> TestItems(const InteractionDataset& data) {
  std::vector<std::string> items;
  for (const EvalCase& eval : data.eval_cases()) {
    items.push_back(eval.user_id + ":" + eval.test_item_id);
  }
  return items;
}

std::multiset<std::string> TrainPairs(const InteractionDataset& data) {
  std::multiset<std::string> pairs;
  for (const TrainPair& pair : data.train()) {
    pairs.insert(data.user_id(pair.user) + ":" + data.item_id(pair.item));
  }
  return pairs;
}

TEST(InteractionDatasetTest, HoldsOutTheLatestPositiveByTimestamp) {
  testing::TempDir dir;
  auto data = MustLoad(SmallOptions(WriteFile(dir, "u.data", SmallInteractions())));
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->num_users(), 4u);
  EXPECT_EQ(data->num_items(), 30u);
  EXPECT_EQ(TestItems(*data), (std::vector<std::string>{"u1:i2", "u2:i5", "u4:i30"}));
  EXPECT_EQ(data->num_train(), 31u - 3u);
  const auto train = TrainPairs(*data);
  EXPECT_EQ(train.count("u1:i1"), 1u);
  EXPECT_EQ(train.count("u1:i3"), 1u);
  EXPECT_EQ(train.count("u1:i2"), 0u);
  EXPECT_EQ(train.count("u3:i1"), 1u);  // single-positive users keep it for training
  EXPECT_EQ(data->TrainCount("i1"), 2u);
  EXPECT_EQ(data->TrainCount("i2"), 0u);
  EXPECT_EQ(data->TrainCount("no such item"), 0u);
  EXPECT_EQ(data->user_slots(), 1u);
  EXPECT_EQ(data->item_slots(), 1u);
}

TEST(InteractionDatasetTest, WithoutTimestampsTheLastLineIsLatest) {
  testing::TempDir dir;
  InteractionOptions options = SmallOptions(WriteFile(dir, "u.data", SmallInteractions()));
  options.timestamp = ColumnRef();
  auto data = MustLoad(options);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(TestItems(*data), (std::vector<std::string>{"u1:i3", "u2:i5", "u4:i30"}));
}

TEST(InteractionDatasetTest, RatingThresholdSelectsPositives) {
  testing::TempDir dir;
  InteractionOptions options = SmallOptions(WriteFile(dir, "u.data", SmallInteractions()));
  options.min_rating = 4;
  auto data = MustLoad(options);
  ASSERT_NE(data, nullptr);
  // u4 has no positives left; u1's i3 (rating 2) is neither test nor training item.
  EXPECT_EQ(TestItems(*data), (std::vector<std::string>{"u1:i2", "u2:i5"}));
  EXPECT_EQ(TrainPairs(*data), (std::multiset<std::string>{"u1:i1", "u2:i4", "u3:i1"}));
  EXPECT_EQ(data->num_items(), 30u);  // the catalogue still has every item in the file
  // The low-rated interaction still rules i3 out as a negative for u1.
  for (const std::string& id : data->eval_cases()[0].candidate_ids) EXPECT_NE(id, "i3");

  options.rating = ColumnRef();  // no rating column: every row is a positive
  data = MustLoad(options);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->eval_cases().size(), 3u);
}

TEST(InteractionDatasetTest, EveryCopyOfTheTestPairLeavesTraining) {
  testing::TempDir dir;
  std::string text = "u5\ti7\t5\t10\nu5\ti8\t5\t15\nu5\ti7\t5\t20\n";
  for (int i = 0; i < 10; ++i) {
    text += "w" + std::to_string(i) + "\tj" + std::to_string(i) + "\t5\t1\n";  // single positives
  }
  auto data = MustLoad(SmallOptions(WriteFile(dir, "dup.tsv", text)));
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->eval_cases()[0].test_item_id, "i7");
  EXPECT_EQ(TrainPairs(*data).count("u5:i7"), 0u);
  EXPECT_EQ(TrainPairs(*data).count("u5:i8"), 1u);
}

TEST(InteractionDatasetTest, NegativesAreDistinctNeverSeenAndDeterministic) {
  testing::TempDir dir;
  std::string text;
  // 40 users with a few items each over a 200-item catalogue, plus one user who saw most of it
  // (exercising the dense sampling path).
  for (int u = 0; u < 40; ++u) {
    for (int j = 0; j < 5; ++j) {
      text += "u" + std::to_string(u) + "\ti" + std::to_string((u * 7 + j * 13) % 200) + "\t" +
              std::to_string(1 + j % 5) + "\t" + std::to_string(j) + "\n";
    }
  }
  for (int i = 0; i < 200; ++i) {
    if (i % 5 != 0) text += "heavy\ti" + std::to_string(i) + "\t3\t" + std::to_string(i) + "\n";
  }
  const std::string path = WriteFile(dir, "neg.tsv", text);
  InteractionOptions options = SmallOptions(path);
  options.negatives = 19;
  auto data = MustLoad(options);
  ASSERT_NE(data, nullptr);
  ASSERT_EQ(data->eval_cases().size(), 41u);

  std::map<std::string, std::set<std::string>> seen;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    const std::string row = text.substr(start, end - start);
    const size_t tab1 = row.find('\t'), tab2 = row.find('\t', tab1 + 1);
    seen[row.substr(0, tab1)].insert(row.substr(tab1 + 1, tab2 - tab1 - 1));
    start = end + 1;
  }

  for (const EvalCase& eval : data->eval_cases()) {
    ASSERT_EQ(eval.candidate_ids.size(), 20u);
    EXPECT_EQ(eval.candidate_ids[0], eval.test_item_id);
    const std::set<std::string> distinct(eval.candidate_ids.begin(), eval.candidate_ids.end());
    EXPECT_EQ(distinct.size(), 20u) << eval.user_id;
    for (size_t c = 1; c < eval.candidate_ids.size(); ++c) {
      EXPECT_EQ(seen[eval.user_id].count(eval.candidate_ids[c]), 0u)
          << eval.user_id << " saw " << eval.candidate_ids[c];
    }
  }

  auto again = MustLoad(options);
  ASSERT_NE(again, nullptr);
  options.seed = 43;
  auto reseeded = MustLoad(options);
  ASSERT_NE(reseeded, nullptr);
  size_t differing = 0;
  for (size_t c = 0; c < data->eval_cases().size(); ++c) {
    EXPECT_EQ(data->eval_cases()[c].candidate_ids, again->eval_cases()[c].candidate_ids);
    differing += data->eval_cases()[c].candidate_ids != reseeded->eval_cases()[c].candidate_ids;
  }
  EXPECT_GT(differing, 30u);
}

TEST(InteractionDatasetTest, TooFewUnseenItemsIsAnError) {
  testing::TempDir dir;
  InteractionOptions options = SmallOptions(WriteFile(dir, "u.data", SmallInteractions()));
  options.negatives = 10;  // u4 saw 25 of the 30 items
  Result<std::shared_ptr<InteractionDataset>> data = InteractionDataset::Load(options);
  ASSERT_FALSE(data.ok());
  EXPECT_NE(data.status().message().find("'u4'"), std::string_view::npos)
      << data.status().ToString();
}

TEST(InteractionDatasetTest, MaxEvalUsersPicksASeededSubset) {
  testing::TempDir dir;
  InteractionOptions options = SmallOptions(WriteFile(dir, "u.data", SmallInteractions()));
  options.max_eval_users = 2;
  auto data = MustLoad(options);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->eval_cases().size(), 2u);
  EXPECT_EQ(data->num_train(), 31u - 2u);  // the user left out keeps its latest for training
}

TEST(InteractionDatasetTest, JoinsSideFeaturesAndMarksMissingIds) {
  testing::TempDir dir;
  InteractionOptions options = SmallOptions(WriteFile(dir, "u.data", SmallInteractions()));
  SideFeatureFile users;
  users.path = WriteFile(dir, "u.user",
                         "u1|24|M|technician|85711\nu2|53|F|technician|94043\n"
                         "u3|23|M|writer|32067\n");
  users.format.delimiter = "|";
  users.features = {{{3}}, {{2}}};  // occupation, gender
  options.user_features = users;
  SideFeatureFile items;
  items.path = WriteFile(dir, "u.item", "i1|A|0|1|0\ni2|B|0|1|0\ni3|C|1|0|0\n");
  items.format.delimiter = "|";
  items.features = {{{2, 3, 4}}};  // the flag combination is one key
  options.item_features = items;
  auto data = MustLoad(options);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->user_slots(), 3u);
  EXPECT_EQ(data->item_slots(), 2u);

  // Each slot's one key.
  auto slot_keys = [](const EntityKeys& keys, uint32_t entity) {
    std::vector<uint64_t> out;
    for (uint32_t s = 0; s < keys.slots(); ++s) {
      EXPECT_EQ(keys.keys(entity, s).size(), 1u);
      out.push_back(keys.keys(entity, s)[0]);
    }
    return out;
  };
  auto user = [&](const std::string& id) {
    for (uint32_t u = 0; u < data->num_users(); ++u) {
      if (data->user_id(u) == id) return slot_keys(data->users(), u);
    }
    ADD_FAILURE() << "no user " << id;
    return std::vector<uint64_t>(3);
  };
  auto item = [&](const std::string& id) {
    return slot_keys(data->items(), *data->FindItem(id));
  };

  EXPECT_EQ(user("u1")[0], HashName("u1"));
  EXPECT_EQ(user("u1")[1], user("u2")[1]);  // both technicians
  EXPECT_NE(user("u1")[1], user("u3")[1]);
  EXPECT_NE(user("u1")[2], user("u2")[2]);  // M vs F
  EXPECT_EQ(user("u1")[2], user("u3")[2]);
  EXPECT_EQ(user("u1")[1], HashCombine(HashName("3"), HashName("technician")));
  // u4 is not in the side file: a "missing" key per feature, unlike any real value.
  for (int f = 1; f <= 2; ++f) {
    for (const char* id : {"u1", "u2", "u3"}) EXPECT_NE(user("u4")[f], user(id)[f]);
  }
  EXPECT_NE(user("u4")[1], user("u4")[2]);

  EXPECT_EQ(item("i1")[0], HashName("i1"));
  EXPECT_EQ(item("i1")[1], item("i2")[1]);
  EXPECT_NE(item("i1")[1], item("i3")[1]);
  EXPECT_EQ(item("i10")[1], item("i20")[1]);  // both missing
  EXPECT_NE(item("i10")[1], item("i1")[1]);

  const EvalCase& eval = data->eval_cases()[0];
  EXPECT_EQ(eval.user_id, "u1");
  EXPECT_EQ(data->user_id(eval.user), "u1");
  ASSERT_EQ(eval.candidate_items.size(), 4u);
  EXPECT_EQ(data->item_id(eval.candidate_items[0]), "i2");
  EXPECT_FALSE(data->items().any_multi_valued());
  EXPECT_NE(data->Describe().find("1 users without features"), std::string::npos)
      << data->Describe();
}

TEST(InteractionDatasetTest, MultiValuedFeatureHasAKeyPerValue) {
  testing::TempDir dir;
  InteractionOptions options = SmallOptions(WriteFile(dir, "u.data", SmallInteractions()));
  SideFeatureFile items;
  items.path = WriteFile(dir, "items.csv",
                         "id,title,genres\ni1,A,Action|Comedy\ni2,B,\" Comedy |\"\n"
                         "i3,\"C, the sequel\",\n");
  items.format.delimiter = ",";
  items.format.header = true;
  items.features = {{{ColumnRef("genres")}, "|"}, {{ColumnRef("title")}}};
  options.item_features = items;
  auto data = MustLoad(options);
  ASSERT_NE(data, nullptr);
  const EntityKeys& keys = data->items();
  ASSERT_EQ(keys.slots(), 3u);
  EXPECT_TRUE(keys.multi_valued(1));
  EXPECT_FALSE(keys.multi_valued(2));
  const uint64_t action = HashCombine(HashName("'genres'"), HashName("Action"));
  const uint64_t comedy = HashCombine(HashName("'genres'"), HashName("Comedy"));
  auto genres = [&](const char* id) {
    const auto span = keys.keys(*data->FindItem(id), 1);
    return std::vector<uint64_t>(span.begin(), span.end());
  };
  EXPECT_EQ(genres("i1"), (std::vector<uint64_t>{action, comedy}));
  EXPECT_EQ(genres("i2"), (std::vector<uint64_t>{comedy}));  // spaces and empty values dropped
  EXPECT_EQ(genres("i3"), (std::vector<uint64_t>{HashCombine(HashName("'genres'"), HashName(""))}));
  EXPECT_EQ(genres("i10").size(), 1u);  // not in the file: the missing key
  EXPECT_NE(genres("i10")[0], genres("i3")[0]);

  // A batch lays the values out with offsets.
  std::vector<std::vector<uint64_t>> batch_keys;
  std::vector<std::vector<uint32_t>> offsets;
  keys.StartBatch(&batch_keys, &offsets);
  for (const char* id : {"i1", "i2", "i1"}) keys.AppendSample(*data->FindItem(id), &batch_keys, &offsets);
  EXPECT_EQ(batch_keys[1], (std::vector<uint64_t>{action, comedy, comedy, action, comedy}));
  EXPECT_EQ(offsets[1], (std::vector<uint32_t>{0, 2, 3, 5}));
  EXPECT_TRUE(offsets[0].empty());
  EXPECT_EQ(batch_keys[0].size(), 3u);

  // A separator goes with one column.
  items.features = {{{ColumnRef("genres"), ColumnRef("title")}, "|"}};
  options.item_features = items;
  auto refused = InteractionDataset::Load(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().ToString().find("a multi-valued feature (with a separator) has one "
                                             "column"),
            std::string::npos)
      << refused.status().ToString();
}

TEST(InteractionDatasetTest, ColumnsByHeaderName) {
  testing::TempDir dir;
  InteractionOptions options;
  options.path = WriteFile(dir, "ratings.csv",
                           "timestamp,rating,movieId,userId\r\n"
                           "9,5,m1,a\r\n8,5,m2,a\r\n1,5,m3,b\r\n2,5,m4,b\r\n3,1,m5,c\r\n");
  options.format = DelimitedOptions{",", true};
  options.user = ColumnRef("userId");
  options.item = ColumnRef("movieId");
  options.rating = ColumnRef("rating");
  options.timestamp = ColumnRef("timestamp");
  options.negatives = 1;
  auto data = MustLoad(options);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(TestItems(*data), (std::vector<std::string>{"a:m1", "b:m4"}));
}

TEST(InteractionDatasetTest, BadFilesGiveErrorsWithPlaces) {
  testing::TempDir dir;
  InteractionOptions options = SmallOptions(dir.path() + "/absent.data");
  Result<std::shared_ptr<InteractionDataset>> data = InteractionDataset::Load(options);
  ASSERT_FALSE(data.ok());
  EXPECT_NE(data.status().message().find("absent.data"), std::string_view::npos);

  options.path = WriteFile(dir, "bad.data", "u1\ti1\t5\t1\nu1\ti2\tfive\t2\n");
  data = InteractionDataset::Load(options);
  ASSERT_FALSE(data.ok());
  EXPECT_NE(data.status().message().find("line 2"), std::string_view::npos);
  EXPECT_NE(data.status().message().find("'five'"), std::string_view::npos);

  options.path = WriteFile(dir, "short.data", "u1\ti1\t5\t1\nu1\ti2\n");
  data = InteractionDataset::Load(options);
  ASSERT_FALSE(data.ok());
  EXPECT_NE(data.status().message().find("line 2"), std::string_view::npos)
      << data.status().ToString();
}

TEST(InteractionDatasetTest, ValidationItemIsNeverTheTestItemNorTrainedOn) {
  testing::TempDir dir;
  InteractionOptions options = SmallOptions(WriteFile(dir, "u.data", SmallInteractions()));
  options.validation = true;
  auto data = MustLoad(options);
  ASSERT_NE(data, nullptr);
  // u1 spares i3 (its latest after the test item i2) and keeps i1; u2 has nothing to spare.
  std::vector<std::string> validation;
  for (const EvalCase& eval : data->validation_cases()) {
    validation.push_back(eval.user_id + ":" + eval.test_item_id);
  }
  EXPECT_EQ(validation, (std::vector<std::string>{"u1:i3", "u4:i29"}));
  EXPECT_EQ(data->users_without_validation(), 1u);
  EXPECT_EQ(TestItems(*data), (std::vector<std::string>{"u1:i2", "u2:i5", "u4:i30"}));
  std::map<std::string, std::set<std::string>> trained;
  for (const TrainPair& pair : data->train()) {
    trained[data->user_id(pair.user)].insert(data->item_id(pair.item));
  }
  EXPECT_EQ(trained["u1"], (std::set<std::string>{"i1"}));
  EXPECT_EQ(trained["u2"], (std::set<std::string>{"i4"}));  // no validation item: keeps i4
  for (const EvalCase& eval : data->validation_cases()) {
    const std::set<std::string>& items = trained[eval.user_id];
    EXPECT_EQ(items.count(eval.test_item_id), 0u) << eval.user_id;
    // Its negatives are items the user never interacted with, the test item included.
    for (size_t c = 1; c < eval.candidate_ids.size(); ++c) {
      EXPECT_EQ(items.count(eval.candidate_ids[c]), 0u) << eval.user_id;
      EXPECT_NE(eval.candidate_ids[c], eval.user_id == "u1" ? "i2" : "i30");
    }
    EXPECT_EQ(eval.candidate_ids.size(), 1u + options.negatives);
  }
}

TEST(InteractionDatasetTest, TheTestSplitIsTheSameWithAndWithoutValidation) {
  std::string path = testing::SharedDataDir() + "/ml-100k/u.data";
  testing::TempDir dir;
  InteractionOptions options;
  if (!std::filesystem::exists(path)) {
    // Without MovieLens beside the checkout: the small file, with as many negatives as every
    // user of it leaves (u4 saw 25 of its 30 items).
    path = WriteFile(dir, "u.data", SmallInteractions());
    options.negatives = 3;
  }
  options.path = path;
  auto plain = MustLoad(options);
  options.validation = true;
  auto validated = MustLoad(options);
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(validated, nullptr);
  ASSERT_EQ(plain->eval_cases().size(), validated->eval_cases().size());
  for (size_t c = 0; c < plain->eval_cases().size(); ++c) {
    const EvalCase& a = plain->eval_cases()[c];
    const EvalCase& b = validated->eval_cases()[c];
    ASSERT_EQ(a.user_id, b.user_id);
    ASSERT_EQ(a.candidate_ids, b.candidate_ids) << a.user_id;
    ASSERT_EQ(a.candidate_items, b.candidate_items) << a.user_id;
    ASSERT_EQ(a.user, b.user) << a.user_id;
  }
  EXPECT_GT(validated->validation_cases().size(), 0u);
  EXPECT_LT(validated->num_train(), plain->num_train());
  // Validation negatives come from a stream of their own.
  EXPECT_NE(validated->validation_cases()[0].candidate_ids,
            plain->eval_cases()[0].candidate_ids);
}

std::vector<uint64_t> HistoryKeys(std::initializer_list<const char*> items) {
  std::vector<uint64_t> keys;
  for (const char* item : items) keys.push_back(InteractionDataset::HistoryKey(item));
  return keys;
}

TEST(InteractionDatasetTest, UserHistoryHoldsTheLatestTrainingItemsAndNoHeldOutOne) {
  testing::TempDir dir;
  InteractionOptions options = SmallOptions(WriteFile(dir, "u.data", SmallInteractions()));
  options.user_history = 3;
  auto data = MustLoad(options);
  ASSERT_NE(data, nullptr);
  ASSERT_EQ(data->user_slots(), 2u);
  ASSERT_EQ(data->history_slot(), std::optional<uint32_t>(1));
  EXPECT_TRUE(data->users().multi_valued(1));
  auto history = [&](const InteractionDataset& dataset, const std::string& user_id) {
    for (uint32_t u = 0; u < dataset.num_users(); ++u) {
      if (dataset.user_id(u) == user_id) {
        const std::span<const uint64_t> keys = dataset.users().keys(u, 1);
        return std::vector<uint64_t>(keys.begin(), keys.end());
      }
    }
    ADD_FAILURE() << "no user " << user_id;
    return std::vector<uint64_t>{};
  };
  // Oldest first, by timestamp: u1's i3 (200) after i1 (100); its test item i2 is left out.
  EXPECT_EQ(history(*data, "u1"), HistoryKeys({"i1", "i3"}));
  EXPECT_EQ(history(*data, "u2"), HistoryKeys({"i4"}));
  EXPECT_EQ(history(*data, "u3"), HistoryKeys({"i1"}));  // not evaluated: trains on its one item
  // Equal timestamps: the file's order; the latest 3 of i6..i29 (i30 is the test item).
  EXPECT_EQ(history(*data, "u4"), HistoryKeys({"i27", "i28", "i29"}));

  options.validation = true;  // u1 spares i3, u4 spares i29: neither may be in a history
  auto validated = MustLoad(options);
  ASSERT_NE(validated, nullptr);
  EXPECT_EQ(history(*validated, "u1"), HistoryKeys({"i1"}));
  EXPECT_EQ(history(*validated, "u4"), HistoryKeys({"i26", "i27", "i28"}));
  // The history slot adds no key to the item tower nor changes the test split.
  EXPECT_EQ(validated->item_slots(), 1u);
  EXPECT_EQ(TestItems(*validated), TestItems(*data));
}

TEST(InteractionDatasetTest, AUserWithoutTrainingItemsHasTheEmptyHistory) {
  testing::TempDir dir;
  // u2 has two positives, both of its test item: it trains on nothing.
  InteractionOptions options = SmallOptions(WriteFile(
      dir, "u.data",
      "u1\ti1\t5\t1\nu1\ti2\t5\t2\nu2\ti3\t5\t1\nu2\ti3\t5\t2\n"
      "u3\ti4\t5\t1\nu3\ti5\t5\t1\nu3\ti6\t5\t1\nu3\ti7\t5\t1\n"));
  options.user_history = 10;
  options.negatives = 1;
  auto data = MustLoad(options);
  ASSERT_NE(data, nullptr);
  for (uint32_t u = 0; u < data->num_users(); ++u) {
    const std::span<const uint64_t> keys = data->users().keys(u, 1);
    const std::vector<uint64_t> history(keys.begin(), keys.end());
    if (data->user_id(u) == "u1") EXPECT_EQ(history, HistoryKeys({"i1"}));
    if (data->user_id(u) == "u2") {
      EXPECT_EQ(history, std::vector<uint64_t>{InteractionDataset::EmptyHistoryKey()});
    }
    if (data->user_id(u) == "u3") EXPECT_EQ(history, HistoryKeys({"i4", "i5", "i6"}));
  }
}

}  // namespace
}  // namespace ember::trainer
