// Chains of incremental checkpoints as files (common/checkpoint_layout.h): a chain is read back
// base first, each partition restores from its newest whole file and the deltas after it, links
// that do not match (another cut, checksum or place) are refused naming them, pruning keeps the
// chains of the checkpoints it keeps, and a new cut extends the newest chain while it has room.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "common/checkpoint_layout.h"
#include "common/crc32.h"
#include "common/file_io.h"
#include "tests/test_util.h"

namespace ember {
namespace {

std::string Step(const std::string& parent, int step) {
  char name[32];
  std::snprintf(name, sizeof(name), "/step-%09d", step);
  return parent + name;
}

// Writes a checkpoint of table "t" (2 partitions) into `dir` after `previous` (empty: a base):
// partition p's file is a delta where deltas[p], else whole.
void WriteLink(const std::string& dir, uint64_t cut, const std::string& previous,
               std::vector<bool> deltas = {false, false}) {
  ASSERT_TRUE(MakeDirectories(dir + "/tables/t").ok());
  for (uint32_t p = 0; p < 2; ++p) {
    const std::string path =
        deltas[p] ? DeltaFilePath(dir, "t", p) : PartitionFilePath(dir, "t", p);
    ASSERT_TRUE(WriteFileAtomically(path, "rows " + std::to_string(cut), Flush::kLater).ok());
  }
  std::optional<ChainLink> predecessor;
  if (!previous.empty()) {
    auto manifest = ReadManifest(previous);
    ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
    predecessor = ChainLink{previous, *manifest};
  }
  Manifest manifest{.step = cut, .servers = 1, .partitions = 2, .trainers = 0,
                    .tables = {{"t", 4}}};
  manifest.chain = NextChainPlace(dir, cut, predecessor);
  ASSERT_TRUE(WriteManifest(dir, manifest).ok());
}

TEST(CheckpointChainTest, ReadsBaseFirstAndRestoresEachPartitionFromItsNewestWholeFile) {
  testing::TempDir dir;
  WriteLink(Step(dir.path(), 2), 2, "");
  WriteLink(Step(dir.path(), 4), 4, Step(dir.path(), 2), {true, false});
  WriteLink(Step(dir.path(), 6), 6, Step(dir.path(), 4), {true, true});
  auto manifest = ReadManifest(Step(dir.path(), 6));
  ASSERT_TRUE(manifest.ok());
  EXPECT_EQ(manifest->chain.sequence, 2u);
  EXPECT_EQ(manifest->chain.previous, "../step-000000004");
  EXPECT_EQ(manifest->chain.previous_cut, 4u);

  auto chain = ReadCheckpointChain(Step(dir.path(), 6), VerifyFiles::kYes);
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  ASSERT_EQ(chain->size(), 3u);
  EXPECT_EQ((*chain)[0].dir, Step(dir.path(), 2));
  EXPECT_EQ((*chain)[2].dir, Step(dir.path(), 6));

  auto first = PartitionChainFiles(*chain, "t", 0);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, (std::vector<std::string>{PartitionFilePath(Step(dir.path(), 2), "t", 0),
                                              DeltaFilePath(Step(dir.path(), 4), "t", 0),
                                              DeltaFilePath(Step(dir.path(), 6), "t", 0)}));
  auto second = PartitionChainFiles(*chain, "t", 1);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, (std::vector<std::string>{PartitionFilePath(Step(dir.path(), 4), "t", 1),
                                               DeltaFilePath(Step(dir.path(), 6), "t", 1)}));
  // A full checkpoint outside any chain is a chain of one.
  WriteLink(dir.path() + "/plain", 0, "");
  auto plain = ReadCheckpointChain(dir.path() + "/plain", VerifyFiles::kYes);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->size(), 1u);
}

TEST(CheckpointChainTest, LinksThatDoNotMatchAreRefusedNamingThem) {
  testing::TempDir dir;
  WriteLink(Step(dir.path(), 2), 2, "");
  WriteLink(Step(dir.path(), 4), 4, Step(dir.path(), 2), {true, true});
  WriteLink(Step(dir.path(), 6), 6, Step(dir.path(), 4), {true, true});
  auto refusal = [&](const std::string& tip) {
    auto chain = ReadCheckpointChain(tip, VerifyFiles::kNo);
    EXPECT_FALSE(chain.ok());
    return chain.ok() ? std::string() : chain.status().ToString();
  };

  // Out of order: a link claiming another place, with the cut and checksum its successor names.
  auto middle = ReadManifest(Step(dir.path(), 4));
  ASSERT_TRUE(middle.ok());
  middle->chain.sequence = 5;
  ASSERT_TRUE(WriteManifest(Step(dir.path(), 4), *middle).ok());
  auto forged = ReadManifest(Step(dir.path(), 4));
  ASSERT_TRUE(forged.ok());
  auto tip = ReadManifest(Step(dir.path(), 6));
  ASSERT_TRUE(tip.ok());
  tip->chain.previous_crc = forged->crc;
  ASSERT_TRUE(WriteManifest(Step(dir.path(), 6), *tip).ok());
  std::string error = refusal(Step(dir.path(), 6));
  EXPECT_NE(error.find("out of order"), std::string::npos) << error;
  EXPECT_NE(error.find(Step(dir.path(), 4)), std::string::npos) << error;

  // Changed since its successor was written: another checksum.
  middle->chain.sequence = 1;
  middle->step = 5;
  ASSERT_TRUE(WriteManifest(Step(dir.path(), 4), *middle).ok());
  error = refusal(Step(dir.path(), 6));
  EXPECT_NE(error.find("manifest changed since"), std::string::npos) << error;

  // Missing.
  std::filesystem::remove_all(Step(dir.path(), 4));
  error = refusal(Step(dir.path(), 6));
  EXPECT_NE(error.find("follows '" + Step(dir.path(), 4) + "'"), std::string::npos) << error;

  // A base may not hold deltas.
  WriteLink(dir.path() + "/bad-base", 9, "", {true, false});
  EXPECT_NE(refusal(dir.path() + "/bad-base").find("not an increment"), std::string::npos);
  auto verified = ReadAndVerifyCheckpoint(dir.path() + "/bad-base");
  EXPECT_EQ(verified.status().code(), StatusCode::kDataLoss);
}

TEST(CheckpointChainTest, ManifestsWithAHalfChainPlaceAreDamaged) {
  testing::TempDir dir;
  const std::string header =
      "ember-checkpoint 1\nstep 1\nservers 1\npartitions 1\ntrainers 0\n";
  for (const std::string& lines : {std::string("chain 1\n"), std::string("cut 00000000000000a1\n"
                                                                         "chain 0\nprevious ../x "
                                                                         "0000000000000001 "
                                                                         "00000000\n"),
                                   std::string("chain 2\nprevious ../x 1 0\n")}) {
    // Sealed with its checksum, so the place itself is what is refused.
    std::string text = header + lines;
    char crc[16];
    std::snprintf(crc, sizeof(crc), "crc %08x\n", Crc32(text.data(), text.size()));
    ASSERT_TRUE(WriteFileAtomically(dir.path() + "/" + kManifestName, text + crc).ok());
    auto manifest = ReadManifest(dir.path());
    EXPECT_EQ(manifest.status().code(), StatusCode::kDataLoss) << lines;
  }
}

TEST(CheckpointChainTest, PruningKeepsTheChainsOfWhatItKeeps) {
  testing::TempDir dir;
  WriteLink(Step(dir.path(), 2), 2, "");
  WriteLink(Step(dir.path(), 4), 4, Step(dir.path(), 2), {true, true});
  WriteLink(Step(dir.path(), 6), 6, Step(dir.path(), 4), {true, true});
  WriteLink(Step(dir.path(), 8), 8, "");
  WriteLink(Step(dir.path(), 10), 10, Step(dir.path(), 8), {true, false});

  ASSERT_TRUE(PruneCheckpoints(dir.path(), 3).ok());  // 6, 8, 10 and 6's chain: all
  for (int step : {2, 4, 6, 8, 10}) EXPECT_TRUE(std::filesystem::exists(Step(dir.path(), step)));
  ASSERT_TRUE(PruneCheckpoints(dir.path(), 1).ok());  // 10 and its base 8
  for (int step : {2, 4, 6}) EXPECT_FALSE(std::filesystem::exists(Step(dir.path(), step)));
  for (int step : {8, 10}) EXPECT_TRUE(std::filesystem::exists(Step(dir.path(), step)));
}

TEST(CheckpointChainTest, ANewCutExtendsTheNewestChainWhileItHasRoom) {
  testing::TempDir dir;
  auto none = ChainPredecessor(Step(dir.path(), 2), 3, 2);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());  // nothing to extend yet
  WriteLink(Step(dir.path(), 2), 2, "");
  WriteLink(Step(dir.path(), 4), 4, Step(dir.path(), 2), {true, true});
  // The cut being written (files, no manifest yet) is passed over.
  ASSERT_TRUE(MakeDirectories(Step(dir.path(), 6)).ok());
  auto next = ChainPredecessor(Step(dir.path(), 6), 3, 2);
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE(next->has_value());
  EXPECT_EQ((*next)->dir, Step(dir.path(), 4));
  // A chain of 2 is full; so is one of other partitions.
  EXPECT_FALSE(ChainPredecessor(Step(dir.path(), 6), 2, 2)->has_value());
  EXPECT_FALSE(ChainPredecessor(Step(dir.path(), 6), 3, 4)->has_value());
  // A later step (left by a run that is now resumed from an earlier one) is passed over.
  WriteLink(Step(dir.path(), 9), 9, Step(dir.path(), 4), {true, true});
  next = ChainPredecessor(Step(dir.path(), 6), 3, 2);
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_EQ((*next)->dir, Step(dir.path(), 4));
  // A newest checkpoint outside any chain starts a new one.
  WriteLink(Step(dir.path(), 5), 0, "");
  EXPECT_FALSE(ChainPredecessor(Step(dir.path(), 6), 3, 2)->has_value());
}

}  // namespace
}  // namespace ember
