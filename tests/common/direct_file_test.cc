// DirectAppender and DirectReader: appends of any size read back byte for byte, the zeros that
// pad the last block, overwriting a file from its start, and reading files written otherwise.
#include "common/direct_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace ember {
namespace {

std::string RandomBytes(size_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  return bytes;
}

std::string ReadAll(const std::string& path, size_t step) {
  auto reader = DirectReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return {};
  std::string all, part(step, '\0');
  while (true) {
    auto got = (*reader)->Read(part.data(), step);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok() || *got == 0) break;
    all.append(part.data(), *got);
    if (*got < step) {
      EXPECT_EQ(*(*reader)->Read(part.data(), step), 0u) << "bytes after a short read";
      break;
    }
  }
  return all;
}

// Zeros appended are written bytes between what came before and after, across the write buffer.
TEST(DirectFileTest, ZerosAppendedSitBetweenTheBytesAroundThem) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/spare";
  auto appender = DirectAppender::Open(path, /*truncate=*/true);
  ASSERT_TRUE(appender.ok()) << appender.status().ToString();
  const std::string before = RandomBytes(5000, 1), after = RandomBytes(300, 2);
  const size_t zeros = (size_t{4} << 20) + 12345;
  std::string_view piece = before;
  ASSERT_TRUE((*appender)->Append(std::span<const std::string_view>(&piece, 1)).ok());
  ASSERT_TRUE((*appender)->AppendZeros(zeros).ok());
  piece = after;
  ASSERT_TRUE((*appender)->Append(std::span<const std::string_view>(&piece, 1)).ok());
  ASSERT_EQ((*appender)->size(), before.size() + zeros + after.size());
  const std::string expected = before + std::string(zeros, '\0') + after;
  const std::string read = ReadAll(path, 65536);
  ASSERT_GE(read.size(), expected.size());
  EXPECT_TRUE(read.substr(0, expected.size()) == expected);
}

TEST(DirectFileTest, AppendsOfEverySizeReadBackExactlyFollowedByZeros) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/log";
  auto appender = DirectAppender::Open(path, /*truncate=*/true);
  ASSERT_TRUE(appender.ok()) << appender.status().ToString();
  std::string expected;
  // Within a block, exactly a block, across blocks, and across the 4 MiB write buffer.
  const std::vector<size_t> sizes = {1, 7, 4088, 4096, 3, 10000, (size_t{4} << 20) + 5, 0, 12};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string first = RandomBytes(sizes[i], i), second = RandomBytes(i, 100 + i);
    const std::vector<std::string_view> pieces = {first, second};
    ASSERT_TRUE((*appender)->Append(pieces).ok());
    expected += first + second;
    ASSERT_EQ((*appender)->size(), expected.size());
    // Everything appended is in the file after each append, whatever the buffering.
    const std::string read = ReadAll(path, 65536);
    ASSERT_GE(read.size(), expected.size());
    ASSERT_TRUE(read.substr(0, expected.size()) == expected) << "after append " << i;
    EXPECT_EQ(read.find_first_not_of('\0', expected.size()), std::string::npos);
    if ((*appender)->direct()) EXPECT_EQ(read.size() % DirectAppender::kBlockBytes, 0u);
  }
  EXPECT_TRUE((*appender)->Sync().ok());
  // Odd read sizes see the same bytes.
  EXPECT_TRUE(ReadAll(path, 4097).substr(0, expected.size()) == expected);
}

TEST(DirectFileTest, ReopeningWithoutTruncatingOverwritesFromTheStart) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/log";
  const std::string old_bytes = RandomBytes(20000, 1), new_bytes = RandomBytes(5000, 2);
  {
    auto appender = DirectAppender::Open(path, true);
    ASSERT_TRUE(appender.ok());
    const std::string_view piece = old_bytes;
    ASSERT_TRUE((*appender)->Append({&piece, 1}).ok());
  }
  {
    auto appender = DirectAppender::Open(path, /*truncate=*/false);
    ASSERT_TRUE(appender.ok());
    const std::string_view piece = new_bytes;
    ASSERT_TRUE((*appender)->Append({&piece, 1}).ok());
  }
  const std::string read = ReadAll(path, 1000);
  ASSERT_GE(read.size(), old_bytes.size());
  EXPECT_TRUE(read.substr(0, new_bytes.size()) == new_bytes);
  // The rest of the last block written is zeros (when padded), then the old file's bytes.
  const size_t padded_end = std::max<size_t>(
      new_bytes.size(), (new_bytes.size() + DirectAppender::kBlockBytes - 1) /
                            DirectAppender::kBlockBytes * DirectAppender::kBlockBytes);
  EXPECT_TRUE(read.substr(padded_end, old_bytes.size() - padded_end) ==
              old_bytes.substr(padded_end));
}

TEST(DirectFileTest, ReadsFilesOfAnySizeWrittenOtherwiseAndNamesAMissingOne) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/plain";
  const std::string bytes = RandomBytes(12345, 3);
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_TRUE(ReadAll(path, 100) == bytes);
  EXPECT_TRUE(ReadAll(path, 1 << 20) == bytes);
  auto missing = DirectReader::Open(dir.path() + "/missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing"), std::string_view::npos);
}

}  // namespace
}  // namespace ember
