// End-to-end serving: a job trained on interaction data is checkpointed, `ember export --config`
// writes its rows with the raw-id maps of its id tables, and `ember lookup` against a cluster
// restored from the checkpoint finds, through those maps, exactly the exported rows, changing
// nothing on the servers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "common/checkpoint_layout.h"
#include "common/child_process.h"
#include "common/hash.h"
#include "local/cluster_config.h"
#include "local/local_cluster.h"
#include "ps/client/checkpoint.h"
#include "tests/integration/small_interactions.h"
#include "tests/test_util.h"
#include "trainer/raw_id_map.h"

namespace ember {
namespace {

using std::chrono::seconds;

// A .npy file of `ember export` or `ember lookup` (version 1.0, C order): its shape and values.
template <typename T>
struct Npy {
  std::vector<uint64_t> shape;
  std::vector<T> values;
};

template <typename T>
Npy<T> ReadNpy(const std::string& path) {
  const std::string bytes = testing::ReadFile(path);
  Npy<T> npy;
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    ADD_FAILURE() << path << " is not a .npy file";
    return npy;
  }
  const size_t header_size = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
  const std::string header = bytes.substr(10, header_size);
  std::smatch match;
  if (!std::regex_search(header, match, std::regex("'shape': \\(([0-9, ]*)\\)"))) {
    ADD_FAILURE() << path << ": no shape in " << header;
    return npy;
  }
  const std::string dims = match[1];
  const std::regex number("[0-9]+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    npy.shape.push_back(std::stoull(it->str()));
  }

  const size_t data = 10 + header_size;
  npy.values.resize((bytes.size() - data) / sizeof(T));
  std::memcpy(npy.values.data(), bytes.data() + data, npy.values.size() * sizeof(T));
  return npy;
}

class LookupExportProcessTest : public testing::SmallInteractionsTest {};

TEST_F(LookupExportProcessTest, RawIdMapsRoundTripAndLookupsFindTheExportedRows) {
  const std::string log = dir_.path() + "/run.log";
  const std::string checkpoints = dir_.path() + "/checkpoints";
  ChildProcess train({EMBER_BINARY, "cluster", "--config", config_, "--steps", "20",
                      "--checkpoint-every", "10", "--checkpoint-dir", checkpoints},
                     log);
  ASSERT_EQ(train.WaitExit(seconds(300)), 0) << testing::ReadFile(log);

  const std::string out = dir_.path() + "/export";
  ChildProcess exporter(
      {EMBER_BINARY, "export", "--checkpoint", checkpoints, "--out", out, "--config", config_},
      log);
  ASSERT_EQ(exporter.WaitExit(seconds(120)), 0) << testing::ReadFile(log);

  // The maps read back: every user and item of the file, each with its id's key.
  auto users = trainer::ReadRawIdMap(trainer::RawIdMapPath(out, "user"), "user");
  auto items = trainer::ReadRawIdMap(trainer::RawIdMapPath(out, "item"), "item");
  ASSERT_TRUE(users.ok()) << users.status().ToString();
  ASSERT_TRUE(items.ok()) << items.status().ToString();
  EXPECT_EQ(users->ids.size(), 150u);
  EXPECT_EQ(items->ids.size(), 60u);
  for (const trainer::RawIdMap* map : {&*users, &*items}) {
    for (size_t i = 0; i < map->ids.size(); ++i) {
      EXPECT_EQ(map->keys[i], HashName(map->ids[i])) << map->table << " id " << map->ids[i];
    }
  }

  // Every mapped user has an exported row.
  const auto keys = ReadNpy<uint64_t>(out + "/user.keys.npy");
  const auto rows = ReadNpy<float>(out + "/user.rows.npy");
  ASSERT_EQ(rows.shape, (std::vector<uint64_t>{keys.values.size(), 8}));
  std::map<uint64_t, size_t> exported;
  for (size_t i = 0; i < keys.values.size(); ++i) exported[keys.values[i]] = i;
  std::vector<size_t> exported_at;
  for (uint64_t key : users->keys) {
    auto it = exported.find(key);
    ASSERT_NE(it, exported.end()) << "key " << key << " was not exported";
    exported_at.push_back(it->second);
  }

  // A cluster restored from the checkpoint, asked by `ember lookup` for the mapped keys and one
  // never trained.
  auto job = local::LoadClusterConfig(config_);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  local::LocalCluster cluster(job->tables, {.num_partitions = job->cluster.partitions});
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  auto client = cluster.Connect("restorer");
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto newest = FindCheckpoint(checkpoints);
  ASSERT_TRUE(newest.ok()) << newest.status().ToString();
  auto restored = ps::RestoreServers(**client, *newest, Millis(60'000));
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  auto rows_before = (*client)->Stats();
  ASSERT_TRUE(rows_before.ok());

  const std::string key_file = dir_.path() + "/keys.txt";
  {
    std::ofstream file(key_file);
    for (uint64_t key : users->keys) file << key << "\n";
    file << "\n  " << HashName("a user nobody saw") << "  \n";
  }
  const std::string looked_up = dir_.path() + "/looked_up.npy";
  const std::string lookup_log = dir_.path() + "/lookup.log";
  ChildProcess lookup(
      {EMBER_BINARY, "lookup", "--scheduler", cluster.scheduler_endpoint(), "--table", "user",
       "--keys", key_file, "--missing", "flag", "--out", looked_up},
      lookup_log);
  ASSERT_EQ(lookup.WaitExit(seconds(60)), 0) << testing::ReadFile(lookup_log);
  const auto served = ReadNpy<float>(looked_up);
  const auto found = ReadNpy<uint8_t>(dir_.path() + "/looked_up.found.npy");
  const size_t n = users->keys.size();
  ASSERT_EQ(served.shape, (std::vector<uint64_t>{n + 1, 8}));
  ASSERT_EQ(found.values.size(), n + 1);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(found.values[i], 1) << users->ids[i];
    for (size_t d = 0; d < 8; ++d) {
      ASSERT_EQ(served.values[i * 8 + d], rows.values[exported_at[i] * 8 + d]) << users->ids[i];
    }
  }
  EXPECT_EQ(found.values[n], 0);
  for (size_t d = 0; d < 8; ++d) EXPECT_EQ(served.values[n * 8 + d], 0.0f);

  // Nothing was created: the servers hold the rows they were restored with.
  auto rows_after = (*client)->Stats();
  ASSERT_TRUE(rows_after.ok());
  for (size_t s = 0; s < rows_after->size(); ++s) {
    for (size_t t = 0; t < (*rows_after)[s].tables.size(); ++t) {
      EXPECT_EQ((*rows_after)[s].tables[t].rows, (*rows_before)[s].tables[t].rows);
    }
  }

  // TSV to stdout, and a key file with a bad line named by its number.
  const std::string tsv_log = dir_.path() + "/tsv.log";
  { std::ofstream(dir_.path() + "/one.txt") << users->keys[0] << "\n"; }
  ChildProcess tsv({EMBER_BINARY, "lookup", "--scheduler", cluster.scheduler_endpoint(), "--table",
                    "user", "--keys", dir_.path() + "/one.txt"},
                   tsv_log);
  ASSERT_EQ(tsv.WaitExit(seconds(60)), 0) << testing::ReadFile(tsv_log);
  const std::string line = testing::ReadFile(tsv_log);
  EXPECT_EQ(line.rfind(std::to_string(users->keys[0]) + "\t1\t", 0), 0u) << line;
  EXPECT_EQ(std::count(line.begin(), line.end(), ' '), 7) << line;  // 8 values

  { std::ofstream(dir_.path() + "/bad.txt") << "12\n-3\n"; }
  const std::string bad_log = dir_.path() + "/bad.log";
  ChildProcess bad({EMBER_BINARY, "lookup", "--scheduler", cluster.scheduler_endpoint(), "--table",
                    "user", "--keys", dir_.path() + "/bad.txt"},
                   bad_log);
  EXPECT_EQ(bad.WaitExit(seconds(60)), 2);
  EXPECT_NE(testing::ReadFile(bad_log).find("line 2: '-3' is not a key"), std::string::npos)
      << testing::ReadFile(bad_log);
}

}  // namespace
}  // namespace ember
