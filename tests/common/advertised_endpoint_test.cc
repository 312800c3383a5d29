// AdvertisedEndpoint: what a process bound at one endpoint tells its peers.
#include "common/advertised_endpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace ember {
namespace {

std::string Advertised(const std::string& bound, const std::string& advertise) {
  auto endpoint = AdvertisedEndpoint(bound, advertise);
  EXPECT_TRUE(endpoint.ok()) << bound << " / " << advertise << ": " << endpoint.status().ToString();
  return endpoint.ok() ? *endpoint : "";
}

TEST(AdvertisedEndpointTest, WithoutAdvertiseASpecificAddressIsKept) {
  EXPECT_EQ(Advertised("tcp://127.0.0.1:7000", ""), "tcp://127.0.0.1:7000");
  EXPECT_EQ(Advertised("tcp://10.1.2.3:41234", ""), "tcp://10.1.2.3:41234");
  EXPECT_EQ(Advertised("ipc:///tmp/socket", ""), "ipc:///tmp/socket");
}

TEST(AdvertisedEndpointTest, AWildcardBindAdvertisesTheHostName) {
  char name[256] = {0};
  ASSERT_EQ(::gethostname(name, sizeof(name) - 1), 0);
  EXPECT_EQ(Advertised("tcp://0.0.0.0:7001", ""), "tcp://" + std::string(name) + ":7001");
  EXPECT_EQ(Advertised("tcp://[::]:7002", ""), "tcp://" + std::string(name) + ":7002");
}

TEST(AdvertisedEndpointTest, AHostTakesTheBoundPortAndAPortReplacesIt) {
  EXPECT_EQ(Advertised("tcp://0.0.0.0:7003", "10.213.0.2"), "tcp://10.213.0.2:7003");
  EXPECT_EQ(Advertised("tcp://0.0.0.0:7003", "tcp://ember-server-1.ember"),
            "tcp://ember-server-1.ember:7003");
  EXPECT_EQ(Advertised("tcp://0.0.0.0:7003", "node7:9000"), "tcp://node7:9000");
  EXPECT_EQ(Advertised("tcp://[::]:7004", "[fd00::5]"), "tcp://[fd00::5]:7004");
  EXPECT_EQ(Advertised("tcp://[::]:7004", "[fd00::5]:80"), "tcp://[fd00::5]:80");
}

TEST(AdvertisedEndpointTest, MalformedValuesAreRefusedNamingThem) {
  for (const char* bad : {":7000", "0.0.0.0", "*", "host:0", "host:70000", "host:http", "two words",
                          "host/path", "[fd00::5", "[fd00::5]x"}) {
    auto endpoint = AdvertisedEndpoint("tcp://0.0.0.0:7005", bad);
    ASSERT_FALSE(endpoint.ok()) << bad;
    EXPECT_EQ(endpoint.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(endpoint.status().message().find(std::string("'") + bad), std::string::npos)
        << endpoint.status().ToString();
  }
  auto not_tcp = AdvertisedEndpoint("ipc:///tmp/socket", "host");
  ASSERT_FALSE(not_tcp.ok());
  EXPECT_NE(not_tcp.status().message().find("only a tcp://"), std::string::npos);
}

}  // namespace
}  // namespace ember
