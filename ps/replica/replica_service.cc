// ReplicaService: a serving replica's answers (replica_service.h).
#include "ps/replica/replica_service.h"

#include <spdlog/spdlog.h>

#include "common/catch_exceptions.h"
#include "common/overloaded.h"
#include "common/quote_for_error.h"

namespace ember::ps {
namespace {

constexpr uint64_t kEpoch = 1;  // the replica's routing table never changes

}  // namespace

ReplicaService::ReplicaService(ReplicaStore& store, const std::string& endpoint,
                               const std::string& public_key, std::function<bool()> ready,
                               uint32_t keys_per_message)
    : store_(store), ready_(std::move(ready)), keys_per_message_(keys_per_message) {
  routing_ = MakeBalancedRouting(store.num_partitions(), {ServerInfo{0, endpoint, public_key}},
                                 kEpoch);
}

Frame ReplicaService::Error(uint64_t request_id, const Status& status) const {
  return wire::EncodeStatusResponse(request_id, kEpoch, status);
}

Frame ReplicaService::Handle(Frame request, const Peer& peer) {
  uint64_t request_id = 0;
  auto handled = CatchExceptions([&]() -> Frame {
    auto decoded = wire::DecodeRequest(std::move(request), &request_id);
    if (!decoded.ok()) return Error(request_id, decoded.status());
    request_id = decoded->header.request_id;
    return HandleDecoded(*decoded, peer);
  });
  if (handled.ok()) return std::move(handled).value();
  spdlog::error("replica: request {}: {}", request_id, handled.status().ToString());
  return Error(request_id, handled.status());
}

Frame ReplicaService::HandleDecoded(const wire::DecodedRequest& request, const Peer& peer) {
  const uint64_t id = request.header.request_id;
  if (Status allowed = wire::CheckSender(peer, request.body); !allowed.ok()) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return Error(id, allowed);
  }
  return std::visit(
      Overloaded{
          [&](const wire::LookupRequest& lookup) { return HandleLookup(id, lookup); },
          [&](const wire::RegisterReaderRequest&) {
            wire::Registration registration{wire::kReaderId, store_.tables(), routing_};
            return wire::EncodeRegistrationResponse(id, registration);
          },
          [&](const wire::GetRoutingRequest&) { return wire::EncodeRoutingResponse(id, routing_); },
          [&](const wire::ClusterStatusRequest&) {
            ClusterStatus status;
            status.routing = routing_;
            status.servers.push_back(ServerStatus{0, routing_.servers[0].endpoint,
                                                  ready_() ? "live" : "catching up",
                                                  routing_.num_partitions});
            return wire::EncodeClusterStatusResponse(id, status);
          },
          [&](const wire::StatsRequest&) {
            wire::ServerStats stats;
            stats.tables = store_.Stats();
            stats.pull_requests = lookups();
            stats.errors = errors_.load(std::memory_order_relaxed);
            stats.partitions_owned = routing_.num_partitions;
            return wire::EncodeStatsResponse(id, kEpoch, stats);
          },
          [&](const wire::PingRequest&) { return Error(id, Status::Ok()); },
          [&](const auto& other) {
            errors_.fetch_add(1, std::memory_order_relaxed);
            return Error(id, InvalidArgument("a serving replica does not handle '" +
                                             std::string(other.kName) +
                                             "' requests (it answers lookups)"));
          },
      },
      request.body);
}

Frame ReplicaService::HandleLookup(uint64_t request_id, const wire::LookupRequest& lookup) {
  if (!ready_()) {
    return Error(request_id, Unavailable("the replica is catching up (it has no whole copy of "
                                         "the tables yet); ask again"));
  }
  if (lookup.keys.size() > keys_per_message_) {
    return Error(request_id, LimitExceeded(Limit::kKeysPerMessage, keys_per_message_,
                                           "a lookup of " + std::to_string(lookup.keys.size()) +
                                               " keys"));
  }
  auto spec = store_.FindTable(lookup.table);
  if (!spec.ok()) return Error(request_id, spec.status().WithContext("lookup"));
  const size_t num_floats = lookup.keys.size() * (*spec)->dim;
  if (Status fits = wire::CheckPullReplySize(num_floats, lookup.row_format); !fits.ok()) {
    return Error(request_id, fits.WithContext("lookup of table " + QuoteForError(lookup.table)));
  }
  lookups_.fetch_add(1, std::memory_order_relaxed);
  wire::PullReply reply(request_id, kEpoch, num_floats, lookup.row_format,
                        wire::PullReply::Lookup{lookup.keys.size()});
  Status status =
      store_.Lookup(lookup.table, lookup.keys, reply.rows(), lookup.missing, reply.found());
  if (!status.ok()) return Error(request_id, status.WithContext("lookup"));
  return reply.Finish();
}

}  // namespace ember::ps
