// ReadKeyList: the key lists of `ember lookup --keys`.
#include "common/key_list.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace ember {
namespace {

TEST(KeyListTest, OneKeyALineAroundSpacesAndBlankLines) {
  std::istringstream in("1\n 42 \r\n\n\t18446744073709551615\n");
  auto keys = ReadKeyList(in, "stdin");
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(*keys, (std::vector<uint64_t>{1, 42, 18446744073709551615ull}));
}

TEST(KeyListTest, AnythingElseNamesTheSourceAndLineInABoundedQuote) {
  for (const char* bad : {"-3", "0x10", "18446744073709551616", "4 5", "7a"}) {
    std::istringstream in(std::string("1\n") + bad + "\n");
    auto keys = ReadKeyList(in, "'keys.txt'");
    EXPECT_EQ(keys.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(keys.status().message(), std::string("'keys.txt' line 2: '") + bad +
                                           "' is not a key (an unsigned 64-bit integer)");
  }
  std::istringstream in(std::string(10'000, '9'));
  auto keys = ReadKeyList(in, "stdin");
  EXPECT_EQ(keys.status().code(), StatusCode::kInvalidArgument);
  EXPECT_LT(keys.status().message().size(), 200u) << keys.status().ToString();
}

}  // namespace
}  // namespace ember
