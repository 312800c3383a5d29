// Echo traffic: the peers and the raw ZeroMQ driver.
#include "bench/internal/echo_traffic.h"

#include <cstring>
#include <set>
#include <string>

#include "bench/internal/key_batches.h"
#include "common/thread_name.h"
#include "common/transport.h"

namespace ember::bench {
namespace {

constexpr size_t kPushReplyBytes = 32;  // about the size of ember's status-only reply

// Sends each request to every echo peer at once (a share of the keys each, as a client splits a
// batch over servers) from DEALER sockets set up like the client's, and waits for all replies.
class EchoDriver : public RequestDriver {
 public:
  using Mode = EchoOperation;

  EchoDriver(Mode mode, uint32_t keys, uint32_t dim, std::vector<size_t> reply_bytes,
             TransportSecurity security)
      : mode_(mode),
        dim_(dim),
        reply_bytes_(std::move(reply_bytes)),
        context_(1, std::move(security)),
        gradients_(mode == Mode::kPush ? size_t{keys} * dim : 0, 1e-3f) {}

  // The peers' endpoints, and their public key when they authenticate.
  Status Connect(const std::vector<std::string>& endpoints, const std::string& peer_key) {
    for (const std::string& endpoint : endpoints) {
      ASSIGN_OR_RETURN(Socket socket, MakeSocket(context_, SocketKind::kDealer));
      RETURN_IF_ERROR(ConnectSocket(socket, endpoint, peer_key));
      sockets_.push_back(std::move(socket));
    }
    return Status::Ok();
  }

  Status Request(std::span<const uint64_t> keys) override {
    const size_t row_bytes = mode_ == Mode::kPush ? size_t{dim_} * sizeof(float) : 0;
    size_t first = 0;
    for (size_t peer = 0; peer < sockets_.size(); ++peer) {
      const size_t share = ShareOf(keys.size(), peer, sockets_.size());
      std::vector<Frame> request;
      request.emplace_back(share * (sizeof(uint64_t) + row_bytes));
      char* out = static_cast<char*>(request.back().data());
      std::memcpy(out, keys.data() + first, share * sizeof(uint64_t));
      if (row_bytes > 0) {
        std::memcpy(out + share * sizeof(uint64_t), gradients_.data() + first * dim_,
                    share * row_bytes);
      }
      first += share;
      RETURN_IF_ERROR(SendFrames(sockets_[peer], request));
    }
    for (size_t peer = 0; peer < sockets_.size(); ++peer) {
      ASSIGN_OR_RETURN(auto reply, ReceiveFrames(sockets_[peer], kRequestTimeout));
      if (reply.size() != 1 || reply.front().size() != reply_bytes_[peer]) {
        return Internal("echo peer answered with an unexpected reply");
      }
    }
    return Status::Ok();
  }

 private:
  const Mode mode_;
  const uint32_t dim_;
  const std::vector<size_t> reply_bytes_;
  Context context_;
  std::vector<Socket> sockets_;
  std::vector<float> gradients_;
};

}  // namespace

Result<EchoTraffic> StartEchoTraffic(const BenchOptions& config, EchoOperation mode) {
  EchoTraffic echo;
  // With --curve, the peers and drivers authenticate and encrypt as ember's processes do.
  TransportSecurity peer_security, driver_security;
  if (config.curve) {
    ASSIGN_OR_RETURN(KeyPair peer_keys, GenerateKeyPair());
    ASSIGN_OR_RETURN(KeyPair driver_keys, GenerateKeyPair());
    peer_security = {peer_keys, "", {{"driver", driver_keys.public_key, PeerRole::kTrainer}}, false};
    driver_security = {driver_keys, peer_keys.public_key, {}, false};
  }
  std::vector<std::string> endpoints;
  std::vector<size_t> reply_bytes;
  const std::set<pid_t> threads_before = ThreadIdsOfThisProcess();
  for (uint32_t i = 0; i < config.servers; ++i) {
    const size_t share = ShareOf(config.keys_per_request, i, config.servers);
    reply_bytes.push_back(mode == EchoDriver::Mode::kPull ? share * config.dim * sizeof(float)
                                                          : kPushReplyBytes);
    echo.peers.push_back(std::make_unique<ps::EchoPeer>(
        ps::EchoPeerOptions{.bind = "tcp://127.0.0.1:*",
                            .reply_bytes = reply_bytes.back(),
                            .security = peer_security}));
    RETURN_IF_ERROR(echo.peers.back()->Start().WithContext("starting an echo peer"));
    endpoints.push_back(echo.peers.back()->endpoint());
  }
  for (pid_t id : ThreadIdsOfThisProcess()) {
    if (!threads_before.count(id)) echo.peer_thread_ids.push_back(id);
  }
  for (uint32_t c = 0; c < config.clients; ++c) {
    auto driver = std::make_unique<EchoDriver>(mode, config.keys_per_request, config.dim,
                                               reply_bytes, driver_security);
    RETURN_IF_ERROR(driver->Connect(endpoints, peer_security.own.public_key));
    echo.drivers.push_back(std::move(driver));
  }
  return echo;
}

}  // namespace ember::bench
