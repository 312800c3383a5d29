// Tests the payload reader of checksummed files (common/checksummed_file.h).
#include "common/checksummed_file.h"

#include <gtest/gtest.h>

#include <span>
#include <vector>

namespace ember {
namespace {

// An empty array (a table's rows when a file holds none) is a read of nothing, even at the end
// of the payload, and the reader goes on. Its data pointer is null: the reader must not hand it
// to memcpy (undefined behaviour, which the fuzz build's sanitizer reports).
TEST(PayloadReaderTest, EmptyArrayReadsNothingAndReadingGoesOn) {
  PayloadWriter writer;
  writer.Put<uint32_t>(7);
  PayloadReader reader(writer.bytes());
  std::vector<float> none;
  EXPECT_TRUE(reader.GetArray(std::span<float>(none)));
  uint32_t value = 0;
  EXPECT_TRUE(reader.Get(value));
  EXPECT_EQ(value, 7u);
  EXPECT_TRUE(reader.GetArray(std::span<float>(none)));
  EXPECT_TRUE(reader.ok());
  EXPECT_EQ(reader.remaining(), 0u);
  EXPECT_FALSE(reader.Get(value));
  EXPECT_FALSE(reader.ok());
}

}  // namespace
}  // namespace ember
