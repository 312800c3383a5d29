// Partition moves and checkpoints on the wire: server heartbeats and orders, move decisions,
// partition transfers and their data, checkpoint requests, cuts and cut info, encoded and read.
// A partition's data is built in place (BuildInPlace); the rest are small messages.
#include "common/wire_moves.h"

#include "common/wire_internal.h"

namespace ember::wire {
namespace {

void WriteMove(schema::PartitionMove::Builder out, const MoveOrder& move) {
  out.setPartition(move.partition);
  out.setFrom(move.from);
  out.setTo(move.to);
}

void WriteMoves(capnp::List<schema::PartitionMove>::Builder out,
                const std::vector<MoveOrder>& moves) {
  for (size_t i = 0; i < moves.size(); ++i) WriteMove(out[i], moves[i]);
}

MoveOrder ReadMove(schema::PartitionMove::Reader in) {
  return MoveOrder{in.getPartition(), in.getFrom(), in.getTo()};
}

std::vector<MoveOrder> ReadMoves(capnp::List<schema::PartitionMove>::Reader in) {
  std::vector<MoveOrder> moves;
  moves.reserve(in.size());
  for (auto move : in) moves.push_back(ReadMove(move));
  return moves;
}

void WriteServerOrders(schema::ServerOrders::Builder out, const ServerOrders& orders) {
  WriteRouting(out.initRouting(), orders.routing);
  WriteMoves(out.initMoves(static_cast<unsigned>(orders.moves.size())), orders.moves);
  out.setExit(orders.exit);
  WriteMoves(out.initMovesOut(static_cast<unsigned>(orders.moves_out.size())), orders.moves_out);
  WriteMoves(out.initPlannedOut(static_cast<unsigned>(orders.planned_out.size())),
             orders.planned_out);
}

Result<ServerOrders> ReadServerOrders(schema::ServerOrders::Reader in) {
  ServerOrders orders;
  ASSIGN_OR_RETURN(orders.routing, ReadRouting(in.getRouting()));
  orders.moves = ReadMoves(in.getMoves());
  orders.exit = in.getExit();
  orders.moves_out = ReadMoves(in.getMovesOut());
  orders.planned_out = ReadMoves(in.getPlannedOut());
  return orders;
}

Result<PartitionTransferRequest> ReadTransfer(schema::PartitionTransfer::Reader in) {
  const auto phase = FromSchema(in.getPhase(), TransferPhase::kResume);
  if (!phase) return InvalidArgument("partition-transfer names an unknown phase");
  return PartitionTransferRequest{in.getPartition(), *phase, in.getOffset()};
}

Result<CheckpointRequest> ReadCheckpoint(schema::Checkpoint::Reader in) {
  const auto action = FromSchema(in.getAction(), CheckpointAction::kVerify);
  if (!action) return InvalidArgument("checkpoint names an unknown action");
  if (in.getCut() == 0 && (in.getPreviousCut() != 0 || in.getTrack())) {
    return InvalidArgument("checkpoint names a previous cut or tracking without a cut id");
  }
  return CheckpointRequest{ToString(in.getDir()), *action, in.getCut(), in.getPreviousCut(),
                           in.getTrack()};
}

Result<CheckpointCutRequest> ReadCut(schema::CheckpointCut::Reader in) {
  using Phase = schema::CheckpointCut::Phase;
  const auto phase = FromSchema(in.getPhase(), Phase::DONE);
  if (!phase) return InvalidArgument("checkpoint-cut names an unknown phase");
  return CheckpointCutRequest{in.getTrainer(), in.getClock(), *phase == Phase::DONE,
                              ToString(in.getError())};
}

Result<PartitionData> ReadPartitionData(::capnp::Data::Reader in) {
  ASSIGN_OR_RETURN(auto bytes, DataAs<uint8_t>(in, "partition data"));
  return PartitionData{bytes};
}

}  // namespace

std::optional<Result<RequestBody>> ReadMovesRequest(schema::Request::Reader request,
                                                    FrameStorage&) {
  switch (request.which()) {
    case schema::Request::SERVER_HEARTBEAT:
      return AsBody<RequestBody>(ServerHeartbeatRequest{request.getServerHeartbeat()});
    case schema::Request::MOVE_DECISION: {
      auto in = request.getMoveDecision();
      return AsBody<RequestBody>(
          MoveDecisionRequest{ReadMove(in.getMove()), in.getCommit(), ToString(in.getReason())});
    }
    case schema::Request::PARTITION_TRANSFER:
      return AsBody<RequestBody>(ReadTransfer(request.getPartitionTransfer()));
    case schema::Request::CHECKPOINT:
      return AsBody<RequestBody>(ReadCheckpoint(request.getCheckpoint()));
    case schema::Request::CHECKPOINT_CUT:
      return AsBody<RequestBody>(ReadCut(request.getCheckpointCut()));
    case schema::Request::CHECKPOINT_NOW: {
      auto in = request.getCheckpointNow();
      return AsBody<RequestBody>(
          CheckpointNowRequest{{ToString(in.getDir()), ToString(in.getAfter()), in.getChain()}});
    }
    default:
      return std::nullopt;
  }
}

std::optional<Result<ResponseBody>> ReadMovesResponse(schema::Response::Reader response,
                                                      FrameStorage&) {
  switch (response.which()) {
    case schema::Response::SERVER_ORDERS:
      return AsBody<ResponseBody>(ReadServerOrders(response.getServerOrders()));
    case schema::Response::CUT_INFO: {
      auto in = response.getCutInfo();
      return AsBody<ResponseBody>(CutInfo{in.getClock(), ToString(in.getDir()), in.getKeep(),
                                          in.getCoordinate(), in.getChain(),
                                          ToString(in.getAfter())});
    }
    case schema::Response::PARTITION_DATA:
      return AsBody<ResponseBody>(ReadPartitionData(response.getPartitionData()));
    default:
      return std::nullopt;
  }
}

// ---- Encoders ----

Frame EncodeServerHeartbeat(const RequestHeader& header, uint32_t server) {
  return BuildMessage(
      header, 0, [&](schema::Request::Builder request) { request.setServerHeartbeat(server); });
}

Frame EncodeMoveDecision(const RequestHeader& header, const MoveDecisionRequest& decision) {
  return BuildMessage(header, decision.reason.size(), [&](schema::Request::Builder request) {
    auto out = request.initMoveDecision();
    WriteMove(out.initMove(), decision.move);
    out.setCommit(decision.commit);
    out.setReason(decision.reason);
  });
}

Frame EncodePartitionTransfer(const RequestHeader& header,
                              const PartitionTransferRequest& transfer) {
  return BuildMessage(header, 0, [&](schema::Request::Builder request) {
    auto out = request.initPartitionTransfer();
    out.setPartition(transfer.partition);
    out.setPhase(ToSchema<schema::PartitionTransfer::Phase>(transfer.phase));
    out.setOffset(transfer.offset);
  });
}

Frame EncodeCheckpoint(const RequestHeader& header, const CheckpointRequest& checkpoint) {
  return BuildMessage(header, checkpoint.dir.size(), [&](schema::Request::Builder request) {
    auto out = request.initCheckpoint();
    out.setDir(checkpoint.dir);
    out.setAction(ToSchema<schema::Checkpoint::Action>(checkpoint.action));
    out.setCut(checkpoint.cut);
    out.setPreviousCut(checkpoint.previous_cut);
    out.setTrack(checkpoint.track);
  });
}

Frame EncodeCheckpointCut(const RequestHeader& header, const CheckpointCutRequest& cut) {
  return BuildMessage(header, cut.error.size(), [&](schema::Request::Builder request) {
    auto out = request.initCheckpointCut();
    out.setTrainer(cut.trainer);
    out.setClock(cut.clock);
    out.setPhase(cut.done ? schema::CheckpointCut::Phase::DONE
                          : schema::CheckpointCut::Phase::ARRIVE);
    out.setError(cut.error);
  });
}

Frame EncodeCheckpointNow(const RequestHeader& header, const CheckpointNowRequest& now) {
  return BuildMessage(header, now.dir.size() + now.after.size(),
                      [&](schema::Request::Builder request) {
                        auto out = request.initCheckpointNow();
                        out.setDir(now.dir);
                        out.setAfter(now.after);
                        out.setChain(now.chain);
                      });
}

Frame EncodeServerOrdersResponse(uint64_t request_id, const ServerOrders& orders) {
  // A move takes two words.
  return BuildMessage(ResponseHead{request_id, orders.routing.epoch},
                      RoutingBytes(orders.routing) + (orders.moves.size() + orders.moves_out.size() + orders.planned_out.size()) * 16,
                      [&](schema::Response::Builder response) {
                        WriteServerOrders(response.initServerOrders(), orders);
                      });
}

Frame EncodeCutInfoResponse(uint64_t request_id, uint64_t epoch, const CutInfo& cut) {
  return BuildMessage(ResponseHead{request_id, epoch}, cut.dir.size() + cut.after.size(),
                      [&](schema::Response::Builder response) {
                        auto out = response.initCutInfo();
                        out.setClock(cut.clock);
                        out.setDir(cut.dir);
                        out.setKeep(cut.keep);
                        out.setCoordinate(cut.coordinate);
                        out.setChain(cut.chain);
                        out.setAfter(cut.after);
                      });
}

Frame EncodePartitionDataResponse(uint64_t request_id, uint64_t epoch, size_t bytes,
                                  const std::function<void(std::span<uint8_t>)>& fill) {
  return BuildInPlace(ResponseHead{request_id, epoch}, bytes, 0,
                      [&](schema::Response::Builder response, FrameBuilder& builder) {
                        kj::byte* data = builder.InitBulk(
                            bytes, [&](unsigned b) { return response.initPartitionData(b); });
                        fill(std::span<uint8_t>(data, bytes));
                      });
}

}  // namespace ember::wire
