// MetricsEndpoint: the HTTP endpoint a process serves its Prometheus metrics on (text format,
// `GET /metrics`), for `--metrics-bind` and the config's `metrics:` section. It keeps the
// collectors a role adds (prometheus-cpp's Collectable); each snapshots that role's own counters
// when scraped (ps/server/server_metrics.h, scheduler/scheduler_metrics.h,
// trainer/trainer_metrics.h), so serving metrics adds no second bookkeeping. Every scrape also
// carries ember_process_info{role="..."} 1.
//
// The exposition format is prometheus-cpp's (core: TextSerializer). Its HTTP server (pull's
// Exposer, on civetweb) cannot start in ember: civetweb creates its threads with fixed 100 KiB
// stacks, and glibc carves a process's static TLS out of every thread's stack, which in ember
// (OpenBLAS, cuBLAS) is larger than that, so pthread_create fails. The HTTP side here is
// deliberately small instead: one thread polls a listening socket and up to kMaxClients
// connections at once, one request per connection, GET (or HEAD) of /metrics answered, anything
// else 404 or 405. Each connection has one deadline (kClientDeadline from its accept) for its
// whole request and answer, not one per read, so neither an idle client nor one that trickles
// bytes holds the endpoint: it is dropped at its deadline while others are served. A connection
// beyond kMaxClients is answered 503 at once, saying when room frees.
//
// Only the command line (app/) starts one; the roles' libraries depend on prometheus-cpp's core
// alone. Collectors are called on the endpoint's thread: they must be thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/metrics_address.h"
#include "common/status.h"

namespace prometheus {
class Collectable;
}  // namespace prometheus

namespace ember {

// The URL path metrics are served at (Kubernetes probes and Prometheus scrape it).
inline constexpr std::string_view kMetricsPath = "/metrics";

class MetricsEndpoint {
 public:
  // Binds `address` and starts serving; Unavailable naming the address when it cannot be bound
  // (in use, not an address of this machine). `role` labels ember_process_info.
  static Result<std::unique_ptr<MetricsEndpoint>> Start(const MetricsAddress& address,
                                                        std::string_view role);
  // Connections served at once, and how long one may take from accept to its answer's last byte.
  static constexpr size_t kMaxClients = 64;
  static constexpr std::chrono::seconds kClientDeadline{5};
  // Stops serving (a scrape under way completes first) and closes the socket.
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // Serves `collectable`'s metrics from now on; kept alive until this endpoint stops.
  void Add(std::shared_ptr<prometheus::Collectable> collectable);

  // The port bound (the one picked for port 0).
  uint32_t port() const { return port_; }
  // http://HOST:PORT/metrics
  std::string url() const;

  // The text every collector gives now (what a scrape returns).
  std::string Scrape() const;

  // The whole HTTP response to `request` (what arrived of the request line and headers, at most
  // 8 KiB): the metrics for GET or HEAD of /metrics, else 404 or 405; empty (the connection is
  // closed unanswered) when no method arrived.
  std::string Respond(std::string_view request) const;

 private:
  MetricsEndpoint(std::string host, uint32_t port, int listener);
  struct Connection;
  void Serve();  // the endpoint's thread: accepts and answers until stopped
  // Accepts the connections waiting (a 503 for each beyond kMaxClients).
  void Accept(std::vector<Connection>& connections) const;
  // Reads what arrived, or writes what the answer has left; false once it is done with.
  bool Progress(Connection& connection, short events) const;

  const std::string host_;
  const uint32_t port_;
  const int listener_;  // listening socket, owned
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;  // guarded by mu_
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ember
