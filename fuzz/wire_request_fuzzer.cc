// Fuzzes wire::DecodeRequest, the decoder of every request a server or the scheduler receives,
// with every request kind; what decodes is re-encoded and checked by a second round trip
// (fuzz/round_trip.h). Corpus: fuzz/corpus/wire_request/.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "common/wire.h"
#include "fuzz/fuzz_support.h"
#include "fuzz/round_trip.h"

namespace ember::fuzz {
namespace {

// The frame ember's encoder makes of `request`: one encoder per kind.
std::optional<Frame> Encode(const wire::DecodedRequest& request) {
  const wire::RequestHeader& h = request.header;
  using namespace wire;
  return std::visit(
      Overloaded{
          [&](const PingRequest&) { return EncodePing(h); },
          [&](const StatsRequest&) { return EncodeStatsRequest(h); },
          [&](const PullRequest& pull) {
            std::vector<KeysToSend> tables;
            for (const TableKeys& t : pull.tables) tables.push_back({t.table, t.keys, {}});
            return EncodePullTables(h, tables, pull.row_format);
          },
          [&](const LookupRequest& lookup) {
            return EncodeLookupSubset(h, lookup.table, lookup.keys, {}, lookup.row_format,
                                      lookup.missing);
          },
          [&](const PushRequest& push) {
            // Widened fp16 gradients travel back as fp32: the second trip compares fp32 frames.
            return EncodePushSubset(h, push.table, push.keys, push.gradients, 0, {}, push.clock,
                                    RowFormat::kF32, push.trainer, push.deferred, push.sender,
                                    push.release_hint, push.learning_rate);
          },
          [&](const HintRequest& hint) {
            return EncodeHintSubset(h, hint.table, hint.keys, {}, {hint.hint, hint.sender},
                                    hint.ttl_ms);
          },
          [&](const RegisterServerRequest& r) {
            return EncodeRegisterServer(h, r.endpoint, r.join);
          },
          [&](const RegisterTrainerRequest& r) { return EncodeRegisterTrainer(h, r.name); },
          [&](const RegisterReaderRequest& r) { return EncodeRegisterReader(h, r.name); },
          [&](const FollowRequest& follow) { return EncodeFollow(h, follow); },
          [&](const GetRoutingRequest&) { return EncodeGetRouting(h); },
          [&](const BarrierRequest& b) { return EncodeBarrier(h, b.name, b.count); },
          [&](const ApplyClockRequest& apply) { return EncodeApplyClock(h, apply); },
          [&](const TrainerClockRequest& clock) { return EncodeTrainerClock(h, clock); },
          [&](const HeartbeatRequest& beat) { return EncodeHeartbeat(h, beat.trainer); },
          [&](const CheckpointRequest& c) { return EncodeCheckpoint(h, c); },
          [&](const CheckpointCutRequest& cut) { return EncodeCheckpointCut(h, cut); },
          [&](const CheckpointNowRequest& now) { return EncodeCheckpointNow(h, now); },
          [&](const ServerHeartbeatRequest& beat) { return EncodeServerHeartbeat(h, beat.server); },
          [&](const MoveDecisionRequest& decision) { return EncodeMoveDecision(h, decision); },
          [&](const DrainRequest& drain) { return EncodeDrain(h, drain.server); },
          [&](const ClusterStatusRequest&) { return EncodeClusterStatusRequest(h); },
          [&](const PartitionTransferRequest& t) { return EncodePartitionTransfer(h, t); },
      },
      request.body);
}

void Fuzz(std::string_view input) {
  const bool data_plane = wire::IsDataPlaneRequest(Frame(input.data(), input.size()));
  auto decoded = wire::DecodeRequest(Frame(input.data(), input.size()));
  if (!decoded.ok()) return;
  const std::string_view kind = wire::RequestKindName(decoded->body);
  // A request that decodes is served on the socket's thread exactly when it is of the data plane.
  const bool expected = kind == "pull" || kind == "push" || kind == "lookup" || kind == "hint";
  if (data_plane != expected) std::abort();
  CheckRoundTrip(
      *decoded, [](Frame frame) { return wire::DecodeRequest(std::move(frame)); }, Encode);
}

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET(ember::fuzz::Fuzz)
