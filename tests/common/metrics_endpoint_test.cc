// The metrics endpoint's HTTP side with hostile clients on loopback: idle and trickling
// connections do not hold it, each request has one deadline however it trickles, and a
// connection beyond the limit is answered 503 saying when room frees.
#include "common/metrics_endpoint.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace ember {
namespace {

// A connection to 127.0.0.1:port whose reads give up after 30 s; -1 on failure.
int Connect(uint32_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  const timeval timeout{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return fd;
}

// Everything the server sends until it closes the connection (or 30 s of silence).
std::string ReadAll(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) return text;
    text.append(buffer, static_cast<size_t>(n));
  }
}

std::string Scrape(uint32_t port) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string answer = ReadAll(fd);
  ::close(fd);
  return answer;
}

// Whether the server still holds `fd` open: nothing to read yet, and not closed.
bool StillOpen(int fd) {
  char byte;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

std::unique_ptr<MetricsEndpoint> StartEndpoint() {
  auto endpoint = MetricsEndpoint::Start(MetricsAddress{"127.0.0.1", 0}, "test");
  EXPECT_TRUE(endpoint.ok()) << endpoint.status().ToString();
  return endpoint.ok() ? std::move(*endpoint) : nullptr;
}

TEST(MetricsEndpointTest, IdleAndTricklingClientsDoNotHoldTheEndpoint) {
  auto endpoint = StartEndpoint();
  ASSERT_NE(endpoint, nullptr);
  std::vector<int> idle;
  for (int i = 0; i < 3; ++i) idle.push_back(Connect(endpoint->port()));
  const int trickling = Connect(endpoint->port());
  ASSERT_EQ(::send(trickling, "GE", 2, MSG_NOSIGNAL), 2);
  for (int i = 0; i < 2; ++i) {  // two scrapes in a row, both answered while the others wait
    const std::string answer = Scrape(endpoint->port());
    EXPECT_NE(answer.find("HTTP/1.1 200 OK"), std::string::npos) << answer.substr(0, 200);
    EXPECT_NE(answer.find("ember_process_info{role=\"test\"} 1"), std::string::npos);
  }
  for (int fd : idle) EXPECT_TRUE(StillOpen(fd));  // served alongside, not one after another
  for (int fd : idle) ::close(fd);
  ::close(trickling);
}

TEST(MetricsEndpointTest, ARequestHasOneDeadlineHoweverSlowlyItTrickles) {
  auto endpoint = StartEndpoint();
  ASSERT_NE(endpoint, nullptr);
  const int fd = Connect(endpoint->port());
  ASSERT_GE(fd, 0);
  // One byte every 200 ms never completes a request; the server drops the connection at its
  // deadline. Bounded: at most four deadlines of bytes.
  const std::string request = "GET /metrics HTTP/1.1\r\nX-Padding: " + std::string(200, 'a');
  bool dropped = false;
  const int steps =
      static_cast<int>(4 * MetricsEndpoint::kClientDeadline / std::chrono::milliseconds(200));
  for (int i = 0; i < steps && !dropped; ++i) {
    const ssize_t sent = ::send(fd, &request[i % request.size()], 1, MSG_NOSIGNAL);
    char byte;
    const ssize_t got = ::recv(fd, &byte, 1, MSG_DONTWAIT);
    dropped = sent <= 0 || got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    if (!dropped) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(dropped);
  ::close(fd);
  EXPECT_NE(Scrape(endpoint->port()).find("200 OK"), std::string::npos);
}

TEST(MetricsEndpointTest, AConnectionBeyondTheLimitIsAnswered503) {
  auto endpoint = StartEndpoint();
  ASSERT_NE(endpoint, nullptr);
  std::vector<int> idle;
  for (size_t i = 0; i < MetricsEndpoint::kMaxClients; ++i) {
    idle.push_back(Connect(endpoint->port()));
  }
  // Every idle connection was accepted before the next one comes (the endpoint polls often).
  std::string busy;
  for (int attempt = 0; attempt < 50 && busy.find("503") == std::string::npos; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    busy = Scrape(endpoint->port());
  }
  EXPECT_NE(busy.find("503 Service Unavailable"), std::string::npos) << busy.substr(0, 200);
  EXPECT_NE(busy.find("retry"), std::string::npos) << busy;
  for (int fd : idle) ::close(fd);
  std::string answer;
  for (int attempt = 0; attempt < 50 && answer.find("200 OK") == std::string::npos; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    answer = Scrape(endpoint->port());
  }
  EXPECT_NE(answer.find("200 OK"), std::string::npos);  // room again once they left
}

}  // namespace
}  // namespace ember
