// Checkpoint files whose counts overflow the size computations (with a valid envelope and
// checksum) are refused naming the file, before anything is allocated for them.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/checksummed_file.h"
#include "embedding/partition_file.h"
#include "tests/test_util.h"
#include "trainer/trainer_checkpoint.h"

namespace ember {
namespace {

TEST(OversizedFileTest, PartitionFileWhoseRowCountOverflowsIsRefused) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/part";
  PayloadWriter payload;
  payload.PutString("rows");
  payload.Put<uint64_t>(0);           // shape hash
  payload.Put<uint32_t>(4);           // partitions
  payload.Put<uint32_t>(0);           // partition
  payload.Put<uint32_t>(1);           // dim
  payload.Put<uint32_t>(1);           // state floats: 16 bytes a row
  payload.Put<uint64_t>(uint64_t{1} << 62);  // rows: 2^62 * 16 wraps to 0
  ASSERT_TRUE(WriteChecksummedFile(path, "EMBRPART", 1, payload.bytes()).ok());
  auto rows = embedding::ReadPartitionFile(path);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(rows.status().message().find(path), std::string::npos) << rows.status().ToString();
}

TEST(OversizedFileTest, TrainerCheckpointWhoseLayerSizeOverflowsIsRefused) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/trainer";
  PayloadWriter payload;
  payload.Put<uint64_t>(1);  // step
  payload.Put<uint32_t>(0);  // rank
  payload.Put<uint32_t>(1);  // trainers
  payload.PutString("");     // data position
  payload.Put<uint8_t>(0);   // no optimizer state
  payload.Put<uint64_t>(0);  // adam steps
  payload.Put<uint32_t>(1);  // one user-tower layer ...
  payload.Put<uint32_t>((uint32_t{1} << 31) - 1);  // ... whose (in * out + out) floats
  payload.Put<uint32_t>(uint32_t{1} << 31);        // take 2^64 bytes, which wraps to 0
  ASSERT_TRUE(WriteChecksummedFile(path, "EMBTRNR1", 1, payload.bytes()).ok());
  auto checkpoint = trainer::ReadTrainerCheckpoint(path);
  ASSERT_FALSE(checkpoint.ok());
  EXPECT_EQ(checkpoint.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(checkpoint.status().message().find(path), std::string::npos)
      << checkpoint.status().ToString();
}

}  // namespace
}  // namespace ember
