// EchoPeer implementation: receive [identity, payload], send [identity, fixed-size reply].
#include "ps/server/echo_peer.h"

#include <spdlog/spdlog.h>

namespace ember::ps {
namespace {

constexpr Millis kPollInterval{100};

}  // namespace

EchoPeer::EchoPeer(EchoPeerOptions options)
    : options_(std::move(options)), context_(1, options_.security), reply_template_(options_.reply_bytes, '\x5a') {}

EchoPeer::~EchoPeer() { Stop(); }

Status EchoPeer::Start() {
  if (thread_.joinable()) return FailedPrecondition("echo peer: already started");
  ASSIGN_OR_RETURN(socket_, MakeSocket(context_, SocketKind::kRouter));
  ASSIGN_OR_RETURN(endpoint_, BindSocket(socket_, options_.bind));
  stop_requested_.store(false, std::memory_order_relaxed);
  thread_ = std::thread([this] { AnswerLoop(); });
  return Status::Ok();
}

void EchoPeer::Stop() {
  stop_requested_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
  socket_.Close();
}

void EchoPeer::AnswerLoop() {
  while (!stop_requested_.load(std::memory_order_relaxed)) {
    auto frames = ReceiveFrames(socket_, kPollInterval);
    if (!frames.ok()) continue;  // timeout: check the stop flag
    if (frames->size() < 2) continue;  // a ROUTER message always starts with the identity
    request_bytes_received_.fetch_add(frames->back().size(), std::memory_order_relaxed);
    std::vector<Frame> reply;
    reply.push_back(std::move(frames->front()));
    reply.emplace_back(reply_template_.data(), reply_template_.size());
    Status sent = SendFrames(socket_, reply);
    if (!sent.ok()) {
      spdlog::warn("echo peer: reply dropped: {}", sent.ToString());
      continue;
    }
    requests_answered_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace ember::ps
