// QuoteForError keeps a peer's name whole when short, and cuts a long one with its length.
#include "common/quote_for_error.h"

#include <gtest/gtest.h>

namespace ember {
namespace {

TEST(QuoteForErrorTest, ShortNamesAreQuotedWhole) {
  EXPECT_EQ(QuoteForError("rows"), "'rows'");
  EXPECT_EQ(QuoteForError(std::string(64, 'x')), "'" + std::string(64, 'x') + "'");
}

TEST(QuoteForErrorTest, LongNamesAreCutAndCarryTheirLength) {
  EXPECT_EQ(QuoteForError(std::string(1 << 20, 'x')),
            "'" + std::string(64, 'x') + "...' (1048576 bytes)");
  EXPECT_EQ(QuoteForError("abcdef", 3), "'abc...' (6 bytes)");
}

TEST(QuoteForErrorTest, UnprintableBytesAreShownAsQuestionMarks) {
  EXPECT_EQ(QuoteForError(std::string("a\nb\0c\xff", 6)), "'a?b?c?'");
}

}  // namespace
}  // namespace ember
