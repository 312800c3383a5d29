// Tests of common/metrics_address.h: --metrics-bind and the config's metrics: entries.
#include "common/metrics_address.h"

#include <gtest/gtest.h>

namespace ember {
namespace {

TEST(MetricsAddressTest, HostAndPortAreParsed) {
  auto address = ParseMetricsAddress("0.0.0.0:9400", "--metrics-bind");
  ASSERT_TRUE(address.ok()) << address.status().ToString();
  EXPECT_EQ(address->host, "0.0.0.0");
  EXPECT_EQ(address->port, 9400u);
  EXPECT_EQ(address->ToString(), "0.0.0.0:9400");
  auto local = ParseMetricsAddress("localhost:0", "--metrics-bind");
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->ToString(), "127.0.0.1:0");
}

TEST(MetricsAddressTest, MalformedValuesAreRefusedNamingTheFlagAndTheValue) {
  for (const char* bad : {"9400", "127.0.0.1", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:65536",
                          "127.0.0.1:-1", ":9400", "example.com:9400", "127.0.0.1:94 00"}) {
    auto address = ParseMetricsAddress(bad, "--metrics-bind");
    ASSERT_FALSE(address.ok()) << bad;
    EXPECT_EQ(address.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(address.status().message().find("--metrics-bind"), std::string::npos) << bad;
    EXPECT_NE(address.status().message().find(bad), std::string::npos) << bad;
  }
}

TEST(MetricsAddressTest, OffsetMovesThePortButKeepsPortZero) {
  auto base = ParseMetricsAddress("127.0.0.1:9401", "metrics.servers");
  ASSERT_TRUE(base.ok());
  auto third = base->Offset(2);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->port, 9403u);
  auto any = ParseMetricsAddress("127.0.0.1:0", "metrics.servers");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->Offset(5)->port, 0u);
  auto last = ParseMetricsAddress("127.0.0.1:65535", "metrics.servers");
  ASSERT_TRUE(last.ok());
  EXPECT_FALSE(last->Offset(1).ok());
}

}  // namespace
}  // namespace ember
