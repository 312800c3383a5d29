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

constexpr int kPollMillis = 100;           // how soon the thread sees a stop and a deadline
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
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);  // polled
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

// One client: what arrived of its request, then the answer and how much of it was written.
struct MetricsEndpoint::Connection {
  int fd = -1;
  std::chrono::steady_clock::time_point deadline;
  std::string request;
  std::string answer;
  size_t written = 0;
  bool answering = false;
};

void MetricsEndpoint::Serve() {
  std::vector<Connection> connections;
  std::vector<pollfd> ready;
  while (!stop_.load(std::memory_order_relaxed)) {
    ready.assign(1, pollfd{listener_, POLLIN, 0});
    for (const Connection& c : connections) {
      ready.push_back(pollfd{c.fd, static_cast<short>(c.answering ? POLLOUT : POLLIN), 0});
    }
    if (::poll(ready.data(), ready.size(), kPollMillis) < 0 && errno != EINTR) continue;
    const auto now = std::chrono::steady_clock::now();
    std::vector<Connection> kept;
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& c = connections[i];
      const bool open = now < c.deadline && Progress(c, ready[i + 1].revents);
      if (open) {
        kept.push_back(std::move(c));
      } else {
        ::close(c.fd);
      }
    }
    connections = std::move(kept);
    if (ready[0].revents & POLLIN) Accept(connections);
  }
  for (const Connection& c : connections) ::close(c.fd);
}

void MetricsEndpoint::Accept(std::vector<Connection>& connections) const {
  for (;;) {
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    if (connections.size() >= kMaxClients) {
      const std::string busy = Response(
          "503 Service Unavailable",
          std::to_string(kMaxClients) + " clients are connected; each is answered or dropped "
          "within " + std::to_string(kClientDeadline.count()) + " s: retry then\n", true);
      (void)::send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    Connection c;
    c.fd = fd;
    c.deadline = std::chrono::steady_clock::now() + kClientDeadline;
    connections.push_back(std::move(c));
  }
}

bool MetricsEndpoint::Progress(Connection& c, short events) const {
  if (events & (POLLERR | POLLNVAL)) return false;
  if (!c.answering) {
    if (!(events & (POLLIN | POLLHUP))) return true;
    char buffer[1024];
    const ssize_t n = ::recv(c.fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n < 0) return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK;
    if (n > 0) c.request.append(buffer, static_cast<size_t>(n));
    const bool complete = c.request.find("\r\n\r\n") != std::string::npos ||
                          c.request.size() >= kMaxRequestBytes;
    if (n > 0 && !complete) return true;
    // Complete, or closed by the client: answer what arrived, if anything.
    c.answer = Respond(std::string_view(c.request).substr(0, kMaxRequestBytes));
    c.answering = true;
    if (c.answer.empty()) return false;
  }
  const ssize_t n =
      ::send(c.fd, c.answer.data() + c.written, c.answer.size() - c.written, MSG_NOSIGNAL);
  if (n < 0) return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK;
  c.written += static_cast<size_t>(n);
  return c.written < c.answer.size();
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
