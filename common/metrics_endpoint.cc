// MetricsEndpoint: a listening socket, a thread, and prometheus-cpp's text serializer.
#include "common/metrics_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/metric_families.h"
#include "common/thread_name.h"

namespace ember {
namespace {

constexpr int kPollMillis = 100;           // how soon the thread sees a stop
constexpr int kClientTimeoutSeconds = 5;   // a client that sends or reads nothing this long
constexpr size_t kMaxRequestBytes = 8192;  // a request line and headers, at most

// ember_process_info{role="..."} 1: which role a scraped process plays.
class ProcessInfo : public prometheus::Collectable {
 public:
  explicit ProcessInfo(std::string role) : role_(std::move(role)) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    auto info = metrics::GaugeFamily("ember_process_info",
                                     "Always 1; the role label says which ember process this is.");
    metrics::AddSample(info, 1, {{"role", role_}});
    return {std::move(info)};
  }

 private:
  const std::string role_;
};

// Writes all of `bytes`; false when the client went away or timed out.
bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string Response(std::string_view status, std::string_view body, bool with_body) {
  std::string response = "HTTP/1.1 " + std::string(status) +
                         "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8"
                         "\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  if (with_body) response += body;
  return response;
}

}  // namespace

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(const MetricsAddress& address,
                                                                std::string_view role) {
  auto failed = [&](const std::string& what) {
    return Unavailable("cannot serve metrics on " + address.ToString() + ": " + what + ": " +
                       std::strerror(errno));
  };
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(address.port));
  if (inet_pton(AF_INET, address.host.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgument("cannot serve metrics on " + address.ToString() +
                           ": not an IPv4 address");
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return failed("socket");
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // restarts reuse the port
  socklen_t length = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 16) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    Status status = failed("bind");
    ::close(fd);
    return status;
  }
  std::unique_ptr<MetricsEndpoint> endpoint(
      new MetricsEndpoint(address.host, ntohs(addr.sin_port), fd));
  endpoint->Add(std::make_shared<ProcessInfo>(std::string(role)));
  endpoint->thread_ = std::thread([raw = endpoint.get()] {
    SetThreadName("metrics-http");
    raw->Serve();
  });
  return endpoint;
}

MetricsEndpoint::MetricsEndpoint(std::string host, uint32_t port, int listener)
    : host_(std::move(host)), port_(port), listener_(listener) {}

MetricsEndpoint::~MetricsEndpoint() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
  ::close(listener_);
}

void MetricsEndpoint::Add(std::shared_ptr<prometheus::Collectable> collectable) {
  std::lock_guard lock(mu_);
  collectables_.push_back(std::move(collectable));
}

std::string MetricsEndpoint::url() const {
  return "http://" + host_ + ":" + std::to_string(port_) + std::string(kMetricsPath);
}

std::string MetricsEndpoint::Scrape() const {
  std::vector<prometheus::MetricFamily> families;
  {
    std::lock_guard lock(mu_);
    for (const auto& collectable : collectables_) {
      for (auto& family : collectable->Collect()) families.push_back(std::move(family));
    }
  }
  return prometheus::TextSerializer().Serialize(families);
}

void MetricsEndpoint::Serve() {
  while (!stop_.load(std::memory_order_relaxed)) {
    pollfd ready{listener_, POLLIN, 0};
    if (::poll(&ready, 1, kPollMillis) <= 0) continue;
    const int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    const timeval timeout{kClientTimeoutSeconds, 0};
    ::setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    ::setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    Answer(connection);
    ::close(connection);
  }
}

void MetricsEndpoint::Answer(int connection) const {
  std::string request;
  char buffer[1024];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < kMaxRequestBytes) {
    const ssize_t n = ::recv(connection, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // closed, or silent for the timeout: answer what arrived, if anything
    request.append(buffer, static_cast<size_t>(n));
  }
  const std::string response = Respond(request);
  if (!response.empty()) WriteAll(connection, response);
}

std::string MetricsEndpoint::Respond(std::string_view request) const {
  // "METHOD PATH[?QUERY] HTTP/1.x"
  const size_t method_end = request.find(' ');
  if (method_end == std::string_view::npos || method_end == 0) return "";
  const std::string_view method = request.substr(0, method_end);
  const size_t path_end = request.find_first_of(" ?\r\n", method_end + 1);
  const std::string_view path = request.substr(method_end + 1, path_end - method_end - 1);
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    return Response("405 Method Not Allowed", "only GET and HEAD\n", true);
  }
  if (path != kMetricsPath) return Response("404 Not Found", "metrics are at /metrics\n", !head);
  return Response("200 OK", Scrape(), !head);
}

}  // namespace ember
