// Crc32 against values the byte-at-a-time implementation it replaced computed, and files that
// implementation wrote: a checksummed file and a checkpoint manifest must still verify.
#include "common/crc32.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/checkpoint_layout.h"
#include "common/checksummed_file.h"
#include "tests/test_util.h"

namespace ember {
namespace {

// 100000 bytes of a fixed pattern.
std::vector<unsigned char> PatternBytes() {
  std::vector<unsigned char> bytes(100000);
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<unsigned char>((i * 131 + 7) ^ (i >> 8));
  }
  return bytes;
}

// A checksummed file ("EMBRTEST", version 3; payload: uint64 42, the string "embedding rows",
// floats 1.5, -2.25, 0.125) as the earlier implementation wrote it.
const unsigned char kOldChecksummedFile[] = {
    0x45, 0x4d, 0x42, 0x52, 0x54, 0x45, 0x53, 0x54, 0x03, 0x00, 0x00, 0x00, 0x26, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0e, 0x00, 0x00, 0x00,
    0x65, 0x6d, 0x62, 0x65, 0x64, 0x64, 0x69, 0x6e, 0x67, 0x20, 0x72, 0x6f, 0x77, 0x73, 0x00, 0x00,
    0xc0, 0x3f, 0x00, 0x00, 0x10, 0xc0, 0x00, 0x00, 0x00, 0x3e, 0x0d, 0x83, 0xb5, 0x46};

// The manifest the earlier implementation wrote for a checkpoint holding only that file as
// trainer-0.bin.
constexpr char kOldManifest[] =
    "ember-checkpoint 1\n"
    "step 7\n"
    "servers 1\n"
    "partitions 4\n"
    "trainers 1\n"
    "file trainer-0.bin 62 2144df1c\n"
    "crc 31cb4a67\n";

void WriteBytes(const std::string& path, const void* data, size_t size) {
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(data), size);
}

TEST(Crc32Test, KnownAnswersOfTheEarlierImplementation) {
  EXPECT_EQ(Crc32("123456789", 9), 0xCBF43926u);  // the CRC-32 check value
  EXPECT_EQ(Crc32("", 0), 0u);
  const std::string fox = "The quick brown fox jumps over the lazy dog";
  EXPECT_EQ(Crc32(fox.data(), fox.size()), 0x414FA339u);
  const std::vector<unsigned char> bytes = PatternBytes();
  EXPECT_EQ(Crc32(bytes.data(), bytes.size()), 0x25E0216Cu);
}

TEST(Crc32Test, ContinuingGivesTheChecksumOfTheWhole) {
  const std::vector<unsigned char> bytes = PatternBytes();
  for (size_t split : {size_t{0}, size_t{1}, size_t{33333}, bytes.size()}) {
    const uint32_t head = Crc32(bytes.data(), split);
    EXPECT_EQ(Crc32(bytes.data() + split, bytes.size() - split, head), 0x25E0216Cu) << split;
  }
  EXPECT_EQ(Crc32(nullptr, 0, 0x12345678u), 0x12345678u);
}

TEST(Crc32Test, ChecksummedFileWrittenBeforeStillVerifies) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/old.bin";
  WriteBytes(path, kOldChecksummedFile, sizeof(kOldChecksummedFile));
  auto payload = ReadChecksummedFile(path, "EMBRTEST", 3);
  ASSERT_TRUE(payload.ok()) << payload.status().ToString();
  PayloadReader reader(*payload);
  uint64_t number = 0;
  std::string text;
  float floats[3] = {};
  ASSERT_TRUE(reader.Get(number) && reader.GetString(text) &&
              reader.GetArray(std::span<float>(floats, 3)));
  EXPECT_EQ(number, 42u);
  EXPECT_EQ(text, "embedding rows");
  EXPECT_EQ(floats[1], -2.25f);

  // And a file written now is byte for byte the same.
  PayloadWriter writer;
  writer.Put<uint64_t>(42);
  writer.PutString("embedding rows");
  const float values[3] = {1.5f, -2.25f, 0.125f};
  writer.PutArray(std::span<const float>(values, 3));
  const std::string again = dir.path() + "/new.bin";
  ASSERT_TRUE(WriteChecksummedFile(again, "EMBRTEST", 3, writer.bytes()).ok());
  EXPECT_EQ(
      testing::ReadFile(again),
      std::string(reinterpret_cast<const char*>(kOldChecksummedFile), sizeof(kOldChecksummedFile)));
}

TEST(Crc32Test, CheckpointWrittenBeforeStillVerifies) {
  testing::TempDir dir;
  WriteBytes(TrainerFilePath(dir.path(), 0), kOldChecksummedFile, sizeof(kOldChecksummedFile));
  WriteBytes(dir.path() + "/" + kManifestName, kOldManifest, sizeof(kOldManifest) - 1);
  auto manifest = ReadAndVerifyCheckpoint(dir.path());
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->step, 7u);
  ASSERT_EQ(manifest->files.size(), 1u);
  EXPECT_EQ(manifest->files[0].crc32, 0x2144DF1Cu);

  // A flipped payload byte is still caught.
  unsigned char damaged[sizeof(kOldChecksummedFile)];
  std::copy(std::begin(kOldChecksummedFile), std::end(kOldChecksummedFile), damaged);
  damaged[40] ^= 1;
  WriteBytes(TrainerFilePath(dir.path(), 0), damaged, sizeof(damaged));
  EXPECT_EQ(ReadAndVerifyCheckpoint(dir.path()).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ember
