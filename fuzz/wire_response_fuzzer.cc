// Fuzzes wire::DecodeResponse, the decoder of every reply a client, trainer, server or tool
// receives, with every reply kind; what decodes is re-encoded and checked by a second round trip
// (fuzz/round_trip.h). Corpus: fuzz/corpus/wire_response/.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <variant>

#include "common/wire.h"
#include "fuzz/fuzz_support.h"
#include "fuzz/round_trip.h"

namespace ember::fuzz {
namespace {

// The frame ember's encoder makes of `response`: one encoder per kind. A reply with both an
// error and a body has no encoder (servers send one or the other).
std::optional<Frame> Encode(const wire::DecodedResponse& response) {
  const uint64_t id = response.request_id;
  const uint64_t epoch = response.epoch;
  if (!std::holds_alternative<wire::NoPayload>(response.body) && !response.status.ok()) {
    return std::nullopt;
  }
  using namespace wire;
  return std::visit(
      Overloaded{
          [&](const NoPayload&) { return EncodeStatusResponse(id, epoch, response.status); },
          [&](const std::span<const float>& rows) {
            return EncodePullResponse(id, epoch, rows.size(), [&](std::span<float> out) {
              if (!rows.empty()) std::memcpy(out.data(), rows.data(), rows.size_bytes());
              return Status::Ok();
            });
          },
          [&](const LookupRows& lookup) {
            // Widened fp16 rows travel back as fp32, as a pull's do.
            return EncodeLookupResponse(
                id, epoch, lookup.rows.size(), lookup.found.size(),
                [&](std::span<float> rows, std::span<uint8_t> found) {
                  if (!rows.empty())
                    std::memcpy(rows.data(), lookup.rows.data(), rows.size_bytes());
                  if (!found.empty()) std::memcpy(found.data(), lookup.found.data(), found.size());
                  return Status::Ok();
                });
          },
          [&](const FollowedRows& followed) { return EncodeFollowResponse(id, epoch, followed); },
          [&](const ServerStats& stats) { return EncodeStatsResponse(id, epoch, stats); },
          [&](const Registration& r) { return EncodeRegistrationResponse(id, r); },
          [&](const RoutingTable& routing) { return EncodeRoutingResponse(id, routing); },
          [&](const ClockGrant& grant) { return EncodeClockGrantResponse(id, epoch, grant); },
          [&](const CutInfo& cut) { return EncodeCutInfoResponse(id, epoch, cut); },
          [&](const ServerOrders& orders) { return EncodeServerOrdersResponse(id, orders); },
          [&](const ClusterStatus& status) { return EncodeClusterStatusResponse(id, status); },
          [&](const PartitionData& data) {
            return EncodePartitionDataResponse(id, epoch, data.bytes.size(),
                                               [&](std::span<uint8_t> out) {
                                                 if (!out.empty()) {
                                                   std::memcpy(out.data(), data.bytes.data(),
                                                               out.size());
                                                 }
                                               });
          },
      },
      response.body);
}

void Fuzz(std::string_view input) {
  auto decoded = wire::DecodeResponse(Frame(input.data(), input.size()));
  if (!decoded.ok()) return;
  CheckRoundTrip(*decoded, wire::DecodeResponse, Encode);
}

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET(ember::fuzz::Fuzz)
