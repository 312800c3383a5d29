// Tests the file helpers (common/file_io.h): atomic writes never go through a planted file or
// symlink and leave no temporary file behind, reads have a size limit, and directories are made
// absolute and canonical.
#include "common/file_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/test_util.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

TEST(FileIoTest, AtomicWriteIgnoresAPlantedTemporaryFileAndLeavesNoneBehind) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/part-0.bin";
  const std::string target = dir.path() + "/elsewhere";
  std::ofstream(target) << "keep me";
  // What the old fixed temporary name was, as a symlink to another file.
  fs::create_symlink(target, path + ".tmp");
  ASSERT_TRUE(WriteFileAtomically(path, "rows").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "rows again").ok());
  EXPECT_EQ(testing::ReadFile(path), "rows again");
  EXPECT_EQ(testing::ReadFile(target), "keep me");
  int temporaries = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    temporaries += IsTemporaryFileName(entry.path().filename().string());
  }
  EXPECT_EQ(temporaries, 0);
  EXPECT_FALSE(IsTemporaryFileName("part-0.bin"));
  EXPECT_TRUE(IsTemporaryFileName("part-0.bin.tmp.123.0"));
}

TEST(FileIoTest, ReadsRefuseFilesOverTheirLimitAndWhatIsNotAFile) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/config.yaml";
  std::ofstream(path) << std::string(1000, 'x');
  auto whole = ReadWholeFile(path, 1000);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->size(), 1000u);
  auto over = ReadWholeFile(path, 999);
  ASSERT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("has 1000 bytes, more than the 999"), std::string::npos)
      << over.status().ToString();
  EXPECT_EQ(ReadWholeFile(dir.path()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadWholeFile(dir.path() + "/missing").status().code(), StatusCode::kNotFound);
}

TEST(FileIoTest, DirectoriesBecomeAbsoluteAndCanonical) {
  testing::TempDir dir;
  const std::string root = fs::canonical(dir.path()).string();
  fs::create_directories(root + "/a/b");
  fs::create_symlink(root + "/a/b", root + "/link");
  auto resolved = CanonicalDirectory(root + "/a/./b/../b/", "--dir");
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(*resolved, root + "/a/b");
  EXPECT_EQ(*CanonicalDirectory(root + "/link/new", "--dir"), root + "/a/b/new");
  const std::string cwd = fs::current_path().string();
  EXPECT_EQ(*CanonicalDirectory("relative/x", "--dir"),
            fs::weakly_canonical(cwd + "/relative/x").string());
  EXPECT_EQ(CanonicalDirectory("", "--dir").status().code(), StatusCode::kInvalidArgument);

  EXPECT_TRUE(IsAbsoluteNormalPath("/"));
  EXPECT_TRUE(IsAbsoluteNormalPath("/ckpt/step-1"));
  for (const char* bad : {"", "ckpt", "/ckpt/", "/ckpt/../etc", "/ckpt/./x", "//ckpt"}) {
    EXPECT_FALSE(IsAbsoluteNormalPath(bad)) << bad;
  }
  EXPECT_FALSE(IsAbsoluteNormalPath(std::string_view("/ckpt\0x", 7)));
}

}  // namespace
}  // namespace ember
