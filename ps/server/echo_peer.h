// EchoPeer: a bare ZeroMQ ROUTER on its own thread that answers every request with a reply frame
// of a fixed size, with no decoding and no table behind it. The benchmark drives it exactly like
// a parameter server to measure what the transport alone can carry.
//
// Thread-safety: Start, Stop and the destructor belong to one owning thread; the counters may be
// read from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/transport.h"

namespace ember::ps {

struct EchoPeerOptions {
  std::string bind = "tcp://127.0.0.1:*";
  size_t reply_bytes = 0;  // size of the payload frame sent back for every request
  TransportSecurity security;  // with keys: CurveZMQ, admitting the keys it trusts
};

class EchoPeer {
 public:
  explicit EchoPeer(EchoPeerOptions options);
  ~EchoPeer();  // stops the peer if it is running
  EchoPeer(const EchoPeer&) = delete;
  EchoPeer& operator=(const EchoPeer&) = delete;

  // Binds and starts the answering thread.
  Status Start();
  // Stops the thread and closes the socket; safe to call more than once.
  void Stop();

  const std::string& endpoint() const { return endpoint_; }
  uint64_t requests_answered() const { return requests_answered_.load(std::memory_order_relaxed); }
  uint64_t request_bytes_received() const {
    return request_bytes_received_.load(std::memory_order_relaxed);
  }

 private:
  void AnswerLoop();

  const EchoPeerOptions options_;
  Context context_;
  Socket socket_;  // ROUTER, owned by the answering thread once started
  std::string endpoint_;
  // The reply contents, copied into every reply frame as a server copies rows into its reply.
  std::vector<char> reply_template_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<uint64_t> requests_answered_{0};
  std::atomic<uint64_t> request_bytes_received_{0};
  std::thread thread_;
};

}  // namespace ember::ps
