// CatchExceptions turns whatever a request handler throws into an Internal status.
#include "common/catch_exceptions.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace ember {
namespace {

TEST(CatchExceptionsTest, PassesTheValueThrough) {
  auto value = CatchExceptions([] { return std::string("rows"); });
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, "rows");
  EXPECT_TRUE(CatchExceptions([] {}).ok());
}

TEST(CatchExceptionsTest, StdExceptionBecomesInternalWithItsMessage) {
  auto value = CatchExceptions([]() -> int { throw std::length_error("blob too long"); });
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().code(), StatusCode::kInternal);
  EXPECT_NE(value.status().message().find("blob too long"), std::string::npos);
}

TEST(CatchExceptionsTest, AnythingElseThrownBecomesInternal) {
  Status status = CatchExceptions([] { throw 42; });
  EXPECT_EQ(status.code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace ember
