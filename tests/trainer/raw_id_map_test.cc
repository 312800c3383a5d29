// Raw-id maps (trainer/raw_id_map.h): built from an interaction file's ids in file order with the
// dataset's own id keys, written and read back unchanged, and bad files refused naming the line.
#include "trainer/raw_id_map.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/hash.h"
#include "tests/test_util.h"

namespace ember::trainer {
namespace {

TEST(RawIdMapTest, MapsEveryIdOfTheFileToItsKeyAndRoundTrips) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/interactions.tsv";
  std::ofstream(path) << "carol\tx9\t5\t1\n"
                         "alice\tx1\t4\t2\n"
                         "carol\tx1\t1\t3\n"
                         "bob\tx7\t3\t4\n";
  InteractionOptions options;
  options.path = path;
  options.negatives = 1;
  auto data = InteractionDataset::Load(options);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  TrainOptions train;
  train.user_tables = {"user_id", "user_age"};
  train.item_tables = {"item_id"};

  const std::vector<RawIdMap> maps = RawIdMaps(**data, train);
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(maps[0].table, "user_id");
  EXPECT_EQ(maps[0].ids, (std::vector<std::string>{"carol", "alice", "bob"}));
  EXPECT_EQ(maps[1].table, "item_id");
  EXPECT_EQ(maps[1].ids, (std::vector<std::string>{"x9", "x1", "x7"}));
  for (const RawIdMap& map : maps) {
    ASSERT_EQ(map.keys.size(), map.ids.size());
    for (size_t i = 0; i < map.ids.size(); ++i) EXPECT_EQ(map.keys[i], HashName(map.ids[i]));
  }

  for (const RawIdMap& map : maps) {
    ASSERT_TRUE(WriteRawIdMap(map, dir.path()).ok());
    auto read = ReadRawIdMap(RawIdMapPath(dir.path(), map.table), map.table);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(read->ids, map.ids);
    EXPECT_EQ(read->keys, map.keys);
  }
  EXPECT_EQ(testing::ReadFile(RawIdMapPath(dir.path(), "item_id")),
            "x9\t" + std::to_string(HashName("x9")) + "\nx1\t" + std::to_string(HashName("x1")) +
                "\nx7\t" + std::to_string(HashName("x7")) + "\n");
}

TEST(RawIdMapTest, AnIdWithATabIsRefusedNamingIt) {
  testing::TempDir dir;
  const Status written = WriteRawIdMap({"user_id", {"ok", "a\tb"}, {1, 2}}, dir.path());
  EXPECT_EQ(written.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(written.message().find("'a\tb'"), std::string::npos) << written.ToString();
}

TEST(RawIdMapTest, ABadLineIsRefusedNamingItsNumber) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/user_id.ids.tsv";
  std::ofstream(path) << "alice\t12\nbob\t-3\n";
  auto read = ReadRawIdMap(path, "user_id");
  EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument);
  // The line is quoted as errors quote peer text: bounded, the tab shown as '?'.
  EXPECT_NE(read.status().message().find("line 2: 'bob?-3' is not raw_id<TAB>key"),
            std::string::npos)
      << read.status().ToString();
  std::ofstream(path) << "alice\t12\n" << std::string(5000, 'x') << "\n";
  read = ReadRawIdMap(path, "user_id");
  EXPECT_NE(read.status().message().find("line 2: 'xxxx"), std::string::npos);
  EXPECT_LT(read.status().message().size(), 300u) << read.status().ToString();
  EXPECT_EQ(ReadRawIdMap(dir.path() + "/missing.tsv", "x").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ember::trainer
