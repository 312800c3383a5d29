// Checkpoints of a cluster: restore into other server counts, and damaged checkpoints refused.
#include "ps/client/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include "local/local_cluster.h"
#include "common/hash.h"
#include "common/wire.h"
#include "ps/client/checkpoint_export.h"
#include "tests/test_util.h"

namespace ember {
namespace {

constexpr Millis kTimeout{20'000};
constexpr uint32_t kDim = 4;

std::vector<TableSpec> Tables() {
  TableSpec spec;
  spec.name = "items";
  spec.dim = kDim;
  spec.seed = HashName("items");
  spec.optimizer.kind = OptimizerKind::kAdam;
  spec.optimizer.learning_rate = 0.05f;
  spec.initializer.stddev = 0.1f;
  return {spec};
}

std::vector<uint64_t> Keys() {
  std::vector<uint64_t> keys(300);
  std::iota(keys.begin(), keys.end(), 5000);
  return keys;
}

// One pseudo-random gradient push of every key at `step` (the same on every cluster).
void PushStep(ps::Client& client, uint64_t step) {
  std::mt19937 rng(static_cast<uint32_t>(step));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> grads(Keys().size() * kDim);
  for (float& g : grads) g = normal(rng);
  ASSERT_TRUE(client.Push("items", Keys(), grads, step).Wait().ok());
}

std::vector<float> PullAll(ps::Client& client) {
  std::vector<float> rows(Keys().size() * kDim);
  Status pulled = client.Pull("items", Keys(), rows).Wait();
  EXPECT_TRUE(pulled.ok()) << pulled.ToString();
  return rows;
}

// A figure of the table's stats, summed over the servers.
uint64_t SumOverServers(ps::Client& client, uint64_t TableStats::*figure) {
  auto stats = client.Stats();
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  uint64_t sum = 0;
  for (const auto& server : *stats) sum += server.tables.at(0).*figure;
  return sum;
}

uint64_t RowsStored(ps::Client& client) { return SumOverServers(client, &TableStats::rows); }

// A cluster of two servers trained three steps and checkpointed into `dir`; returns its rows.
std::vector<float> TrainAndCheckpoint(const std::string& dir) {
  local::LocalCluster cluster(Tables(), {.num_servers = 2});
  EXPECT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  auto client = cluster.Connect();
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  for (uint64_t step = 0; step < 3; ++step) PushStep(**client, step);
  auto manifest = ps::CheckpointServers(**client, dir, 3, kTimeout);
  EXPECT_TRUE(manifest.ok()) << manifest.status().ToString();
  Status written = WriteManifest(dir, *manifest);
  EXPECT_TRUE(written.ok()) << written.ToString();
  return PullAll(**client);
}

uint64_t TrackedChangeKeys(ps::Client& client) {
  return SumOverServers(client, &TableStats::tracked_change_keys);
}

size_t DeltaFilesIn(const std::string& dir) {
  size_t deltas = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    deltas += IsDeltaFilePath(entry.path().string());
  }
  return deltas;
}

TEST(CheckpointTest, ServersTrackTheKeysChangedSinceAChainedCutAndWriteThemAsDeltas) {
  testing::TempDir dir;
  local::LocalCluster cluster(Tables(), {.num_servers = 2});
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  auto client = cluster.Connect();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  PushStep(**client, 0);
  EXPECT_EQ(TrackedChangeKeys(**client), 0u);  // nothing tracked before a chained cut

  // A base, then 3 of the keys changed.
  auto cut = [&](const std::string& into, std::optional<ChainLink> after) {
    ps::CheckpointChaining chaining{.chained = true, .predecessor = std::move(after)};
    auto manifest = ps::CheckpointServers(**client, into, 1, kTimeout, chaining);
    EXPECT_TRUE(manifest.ok()) << manifest.status().ToString();
    EXPECT_TRUE(WriteManifest(into, *manifest).ok());
    auto written = ReadManifest(into);
    EXPECT_TRUE(written.ok());
    return ChainLink{into, *written};
  };
  const ChainLink base = cut(dir.path() + "/base", std::nullopt);
  const std::vector<uint64_t> changed = {Keys()[0], Keys()[1], Keys()[2]};
  ASSERT_TRUE(
      (*client)->Push("items", changed, std::vector<float>(changed.size() * kDim, 0.5f)).Wait().ok());
  EXPECT_EQ(TrackedChangeKeys(**client), 3u);

  // The increment holds those rows alone; their keys stay held until a cut names it, in case it
  // never completes.
  const ChainLink increment = cut(dir.path() + "/increment", base);
  EXPECT_EQ(increment.manifest.chain.sequence, 1u);
  EXPECT_GE(DeltaFilesIn(increment.dir), 1u);
  EXPECT_EQ(TrackedChangeKeys(**client), 3u);
  cut(dir.path() + "/next", increment);
  EXPECT_EQ(TrackedChangeKeys(**client), 0u);

  // The chain restores the rows as they are.
  const std::vector<float> rows = PullAll(**client);
  PushStep(**client, 7);
  auto restored = ps::RestoreServers(**client, increment.dir, kTimeout);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(PullAll(**client), rows);
}

TEST(CheckpointTest, RestoreIntoOneAndThreeServersGivesSameRowsAndSameNextStep) {
  testing::TempDir dir;
  const std::vector<float> saved = TrainAndCheckpoint(dir.path());
  std::vector<float> next_step;
  for (uint32_t servers : {1u, 3u}) {
    local::LocalCluster cluster(Tables(), {.num_servers = servers});
    ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
    auto client = cluster.Connect();
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    PushStep(**client, 99);  // rows the checkpoint must replace
    auto manifest = ps::RestoreServers(**client, dir.path(), kTimeout);
    ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
    EXPECT_EQ(manifest->step, 3u);
    EXPECT_EQ(manifest->servers, 2u);
    EXPECT_EQ(RowsStored(**client), Keys().size()) << servers << " servers";
    EXPECT_EQ(PullAll(**client), saved) << servers << " servers";  // bit for bit
    // The optimizer state came along: the next step lands on the same rows.
    PushStep(**client, 3);
    const std::vector<float> after = PullAll(**client);
    if (next_step.empty()) next_step = after;
    EXPECT_EQ(after, next_step) << servers << " servers";
  }
}

// The values of a .npy file written by WriteNpy (header length at bytes 8-9), as T.
template <typename T>
std::vector<T> NpyValues(const std::string& path, std::string* header) {
  const std::string bytes = testing::ReadFile(path);
  EXPECT_GT(bytes.size(), 10u) << path;
  if (bytes.size() <= 10) return {};
  const size_t header_bytes = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8;
  *header = bytes.substr(10, header_bytes);
  std::vector<T> values((bytes.size() - 10 - header_bytes) / sizeof(T));
  std::memcpy(values.data(), bytes.data() + 10 + header_bytes, values.size() * sizeof(T));
  return values;
}

TEST(CheckpointTest, ExportWritesSortedKeysAndTheirRowsAsNpy) {
  testing::TempDir dir, out;
  const std::vector<float> saved = TrainAndCheckpoint(dir.path());
  ASSERT_TRUE(ps::ExportCheckpointTables(dir.path(), out.path()).ok());
  std::string keys_header, rows_header;
  const auto keys = NpyValues<uint64_t>(out.path() + "/items.keys.npy", &keys_header);
  const auto rows = NpyValues<float>(out.path() + "/items.rows.npy", &rows_header);
  EXPECT_NE(keys_header.find("'descr': '<u8'"), std::string::npos) << keys_header;
  EXPECT_NE(keys_header.find("'shape': (300,)"), std::string::npos) << keys_header;
  EXPECT_NE(rows_header.find("'descr': '<f4'"), std::string::npos) << rows_header;
  EXPECT_NE(rows_header.find("'shape': (300,4)"), std::string::npos) << rows_header;
  EXPECT_EQ(keys, Keys());  // Keys() is ascending
  EXPECT_EQ(rows, saved);
}

TEST(CheckpointTest, ExportOfADamagedCheckpointWritesNothing) {
  testing::TempDir dir, out;
  TrainAndCheckpoint(dir.path());
  std::filesystem::remove(PartitionFilePath(dir.path(), "items", 5));
  Status exported = ps::ExportCheckpointTables(dir.path(), out.path() + "/export");
  EXPECT_EQ(exported.code(), StatusCode::kNotFound) << exported.ToString();
  EXPECT_FALSE(std::filesystem::exists(out.path() + "/export"));
}

// A cluster with some trained rows, for the damaged-checkpoint tests.
class DamagedCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TrainAndCheckpoint(dir_.path());
    ASSERT_TRUE(cluster_.status().ok()) << cluster_.status().ToString();
    auto client = cluster_.Connect();
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
    PushStep(*client_, 42);
    before_ = PullAll(*client_);
  }

  // Restoring fails with `code` and a message naming `names`, and no row changed.
  void ExpectRefused(StatusCode code, const std::string& names) {
    auto restored = ps::RestoreServers(*client_, dir_.path(), kTimeout);
    ASSERT_FALSE(restored.ok());
    EXPECT_EQ(restored.status().code(), code) << restored.status().ToString();
    EXPECT_NE(restored.status().message().find(names), std::string::npos)
        << restored.status().ToString();
    EXPECT_EQ(PullAll(*client_), before_);
  }

  std::string PartFile(uint32_t partition) const {
    return PartitionFilePath(dir_.path(), "items", partition);
  }

  testing::TempDir dir_;
  local::LocalCluster cluster_{Tables(), {.num_servers = 3}};
  std::unique_ptr<ps::Client> client_;
  std::vector<float> before_;
};

void FlipByte(const std::string& path, std::streamoff offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(offset);
  char byte = 0;
  file.read(&byte, 1);
  file.seekp(offset);
  byte = static_cast<char>(byte ^ 0x40);
  file.write(&byte, 1);
}

TEST_F(DamagedCheckpointTest, FlippedByteInAPartitionFileIsNamed) {
  FlipByte(PartFile(7), 40);
  ExpectRefused(StatusCode::kDataLoss, "part-7.bin");
}

TEST_F(DamagedCheckpointTest, MissingPartitionFileIsNamed) {
  std::filesystem::remove(PartFile(11));
  ExpectRefused(StatusCode::kNotFound, "part-11.bin");
}

TEST_F(DamagedCheckpointTest, TruncatedManifestIsNamed) {
  const std::string manifest = dir_.path() + "/" + kManifestName;
  std::filesystem::resize_file(manifest, std::filesystem::file_size(manifest) / 2);
  ExpectRefused(StatusCode::kDataLoss, "MANIFEST");
}

TEST_F(DamagedCheckpointTest, MissingManifestIsNamed) {
  std::filesystem::remove(dir_.path() + "/" + kManifestName);
  ExpectRefused(StatusCode::kNotFound, "MANIFEST");
}

TEST_F(DamagedCheckpointTest, ServerVerifiesItsFilesBeforeLoadingAny) {
  // Past the manifest's check (asked directly), a server still refuses a corrupt file and keeps
  // its rows (servers whose own files are fine may load theirs: RestoreServers verifies on every
  // server first, see FlippedByteInAPartitionFileIsNamed).
  FlipByte(PartFile(63), 60);
  const uint32_t owner = client_->routing().owners[63];
  std::vector<uint64_t> owned_keys;
  for (uint64_t key : Keys()) {
    if (client_->routing().owners[PartitionOf(HashName("items"), key, 64)] == owner) {
      owned_keys.push_back(key);
    }
  }
  std::vector<float> owned_before(owned_keys.size() * kDim);
  ASSERT_TRUE(client_->Pull("items", owned_keys, owned_before).Wait().ok());
  Status restored = client_->Checkpoint(std::filesystem::absolute(dir_.path()).string(),
                                        wire::CheckpointAction::kRestore, kTimeout);
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(restored.code(), StatusCode::kDataLoss) << restored.ToString();
  EXPECT_NE(restored.message().find("part-63.bin"), std::string::npos) << restored.ToString();
  std::vector<float> owned_after(owned_keys.size() * kDim);
  ASSERT_TRUE(client_->Pull("items", owned_keys, owned_after).Wait().ok());
  EXPECT_EQ(owned_after, owned_before);
}

TEST_F(DamagedCheckpointTest, RelativeDirectoryIsRejectedAndServersKeepServing) {
  Status restored =
      client_->Checkpoint("relative/dir", wire::CheckpointAction::kRestore, kTimeout);
  EXPECT_EQ(restored.code(), StatusCode::kInvalidArgument) << restored.ToString();
  EXPECT_EQ(PullAll(*client_), before_);
}

}  // namespace
}  // namespace ember
