// Seeds of the wire decoders and of the server and scheduler handlers (corpus_writer.h).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/checkpoint_layout.h"
#include "common/file_io.h"
#include "common/transport_security.h"
#include "common/wire.h"
#include "embedding/partition_file.h"
#include "embedding/rocks_store.h"
#include "fuzz/fuzz_model.h"
#include "fuzz/fuzz_support.h"
#include "trainer/dense_weights.h"
#include "trainer/trainer_checkpoint.h"
#include "fuzz/corpus_writer.h"

namespace ember::fuzz {

namespace fs = std::filesystem;
using wire::RequestHeader;

// ---- Wire messages ----

namespace {

// Keys of the first table: some owned by server 0 of FuzzRouting, some not.
const std::vector<uint64_t> kKeys = {1, 2, 3, 42, 1000, 123456789};

// One frame of every request kind, by name.
std::vector<std::pair<std::string, Frame>> Requests() {
  const RequestHeader h{7, 1};
  const auto tables = FuzzTables();
  const uint32_t dim = tables[0].dim;
  const auto grads = Gradients(kKeys.size(), dim);
  std::vector<std::pair<std::string, Frame>> requests;
  auto add = [&](std::string name, Frame frame) {
    requests.emplace_back(std::move(name), std::move(frame));
  };
  add("ping", wire::EncodePing(h));
  add("stats", wire::EncodeStatsRequest(h));
  add("pull", wire::EncodePull(h, tables[0].name, kKeys));
  add("pull-f16", wire::EncodePullSubset(h, tables[1].name, kKeys, {}, RowFormat::kF16));
  add("pull-empty", wire::EncodePull(h, tables[2].name, {}));
  add("lookup", wire::EncodeLookupSubset(h, tables[0].name, kKeys, {}, RowFormat::kF32,
                                         MissingRows::kInitial));
  const std::vector<uint32_t> looked_up = {5, 1};
  const wire::KeysToSend several[] = {
      {tables[0].name, kKeys, {}}, {tables[1].name, kKeys, looked_up}, {tables[0].name, {}, {}}};
  add("pull-tables", wire::EncodePullTables(h, several, RowFormat::kF16));
  add("lookup-flag-f16", wire::EncodeLookupSubset(h, tables[1].name, kKeys, looked_up,
                                                  RowFormat::kF16, MissingRows::kFlag));
  add("push", wire::EncodePushSubset(h, tables[0].name, kKeys, grads, dim, {}, 3,
                                     RowFormat::kF32, 0, false, {5, 1}));
  add("push-release-hint", wire::EncodePushSubset(h, tables[0].name, kKeys, grads, dim, {}, 4,
                                                  RowFormat::kF32, 0, false, {5, 2}, 3));
  add("hint", wire::EncodeHintSubset(h, tables[0].name, kKeys, {}, {3, 5}, 10'000));
  add("hint-subset", wire::EncodeHintSubset(h, tables[1].name, kKeys, looked_up, {4, 5}, 0));
  const std::vector<uint32_t> positions = {0, 2};
  add("push-f16-subset", wire::EncodePushSubset(h, tables[0].name, kKeys, grads, dim, positions, 4,
                                                RowFormat::kF16, 1, false, {}));
  add("push-deferred", wire::EncodePushSubset(h, tables[2].name, {kKeys.data(), 2},
                                              Gradients(2, tables[2].dim), tables[2].dim, {}, 1,
                                              RowFormat::kF32, 1, true, {}));
  add("register-server", wire::EncodeRegisterServer(h, "tcp://127.0.0.1:5000"));
  add("register-server-join", wire::EncodeRegisterServer(h, "tcp://127.0.0.1:5002", true));
  add("register-trainer", wire::EncodeRegisterTrainer(h, "trainer-a"));
  add("register-reader", wire::EncodeRegisterReader(h, "lookup"));
  add("follow-start", wire::EncodeFollow(h, {.follower = 77, .table = tables[0].name,
                                             .start = {0, 1, 5}, .max_rows = 100}));
  add("follow", wire::EncodeFollow(h, {.follower = 77, .table = tables[0].name}));
  add("follow-leave",
      wire::EncodeFollow(h, {.follower = 77, .table = tables[1].name, .leave = true}));
  add("get-routing", wire::EncodeGetRouting(h));
  add("barrier", wire::EncodeBarrier(h, "start", 2));
  add("apply-clock", wire::EncodeApplyClock(h, {.clock = 1, .trainers = {0, 1}}));
  add("trainer-clock", wire::EncodeTrainerClock(h, {.trainer = 0, .clock = 1}));
  add("trainer-leave", wire::EncodeTrainerClock(h, {.trainer = 1, .clock = 2, .leave = true}));
  add("heartbeat", wire::EncodeHeartbeat(h, 0));
  add("drain", wire::EncodeDrain(h, 1));
  add("cluster-status", wire::EncodeClusterStatusRequest(h));
  add("server-heartbeat", wire::EncodeServerHeartbeat(h, 0));
  add("move-commit", wire::EncodeMoveDecision(h, {.move = {3, 0, 1}, .commit = true}));
  add("move-abort", wire::EncodeMoveDecision(h, {.move = {3, 0, 1}, .reason = "target gone"}));
  for (auto phase : {wire::TransferPhase::kCopy, wire::TransferPhase::kHandover,
                     wire::TransferPhase::kRelease, wire::TransferPhase::kResume}) {
    add("transfer-" + std::to_string(static_cast<int>(phase)),
        wire::EncodePartitionTransfer(h, {.partition = 0, .phase = phase}));
  }
  add("checkpoint-write", wire::EncodeCheckpoint(h, {"/tmp/ckpt", CheckpointAction::kWrite}));
  add("checkpoint-verify", wire::EncodeCheckpoint(h, {"/tmp/ckpt", CheckpointAction::kVerify}));
  add("checkpoint-restore", wire::EncodeCheckpoint(h, {"/tmp/ckpt", CheckpointAction::kRestore}));
  add("checkpoint-write-increment",
      wire::EncodeCheckpoint(h, {"/tmp/ckpt", CheckpointAction::kWrite, 0x2a, 0x29, true}));
  add("checkpoint-cut", wire::EncodeCheckpointCut(h, {.trainer = 0, .clock = 2}));
  add("checkpoint-cut-done", wire::EncodeCheckpointCut(h, {.trainer = 0, .clock = 2, .done = true,
                                                            .error = "disk full"}));
  add("checkpoint-now", wire::EncodeCheckpointNow(h, {{"/tmp/ckpt", "", false}}));
  add("checkpoint-now-incremental", wire::EncodeCheckpointNow(h, {{"/tmp/ckpt/b", "/tmp/ckpt/a", false}}));
  return requests;
}

}  // namespace

void WriteWireRequests(CorpusWriter& out) {
  for (auto& [name, frame] : Requests()) out.Write("wire_request", name, Bytes(frame));
  const std::string pull = Bytes(wire::EncodePull({1, 1}, "user", kKeys));
  out.Write("wire_request", "edge-truncated-pull", pull.substr(0, pull.size() / 2 / 8 * 8));
  out.Write("wire_request", "edge-odd-size", pull.substr(0, pull.size() - 3));
  out.Write("wire_request", "edge-zero-words", std::string(16, '\0'));
  // A segment table claiming more segments and words than the frame holds.
  out.Write("wire_request", "edge-segment-table", std::string("\xff\xff\x00\x00\xff\xff\xff\x7f"
                                                              "\x00\x00\x00\x00\x00\x00\x00\x00",
                                                              16));
}

namespace {

ServerStats Stats() {
  ServerStats stats;
  stats.server_id = 1;
  stats.partitions_owned = 8;
  stats.pull_requests = 10;
  stats.tables.push_back(TableStats{"user"});
  stats.tables.back().rows = 5;
  return stats;
}

}  // namespace

void WriteWireResponses(CorpusWriter& out) {
  const RoutingTable routing = FuzzRouting();
  const std::vector<float> rows = Gradients(3, 4);
  auto fill_rows = [&](std::span<float> dst) {
    std::copy(rows.begin(), rows.end(), dst.begin());
    return Status::Ok();
  };
  const std::string target = "wire_response";
  out.Write(target, "ok", Bytes(wire::EncodeStatusResponse(1, 1, Status::Ok())));
  out.Write(target, "error", Bytes(wire::EncodeStatusResponse(
                                 2, 1, FailedPrecondition("partition 3 is not served here"))));
  out.Write(target, "pull",
            Bytes(wire::EncodePullResponse(3, 1, rows.size(), fill_rows, RowFormat::kF32)));
  out.Write(target, "pull-f16",
            Bytes(wire::EncodePullResponse(3, 1, rows.size(), fill_rows, RowFormat::kF16)));
  const std::vector<uint8_t> found = {1, 0, 1};
  auto fill_lookup = [&](std::span<float> dst, std::span<uint8_t> flags) {
    std::copy(rows.begin(), rows.end(), dst.begin());
    std::copy(found.begin(), found.end(), flags.begin());
    return Status::Ok();
  };
  out.Write(target, "lookup",
            Bytes(wire::EncodeLookupResponse(3, 1, rows.size(), found.size(), fill_lookup,
                                             RowFormat::kF32)));
  out.Write(target, "lookup-f16",
            Bytes(wire::EncodeLookupResponse(3, 1, rows.size(), found.size(), fill_lookup,
                                             RowFormat::kF16)));
  out.Write(target, "stats", Bytes(wire::EncodeStatsResponse(4, 1, Stats())));
  out.Write(target, "registration",
            Bytes(wire::EncodeRegistrationResponse(5, {0, FuzzTables(), routing, 3})));
  out.Write(target, "routing", Bytes(wire::EncodeRoutingResponse(6, routing)));
  ClockGrant grant{.clock = 4, .trainers = {0, 1}, .min_clock = 3,
                   .cut = {.clock = 6, .dir = "/tmp/ckpt/step-6", .keep = 2}};
  out.Write(target, "clock-grant", Bytes(wire::EncodeClockGrantResponse(7, 1, grant)));
  out.Write(target, "cut-info", Bytes(wire::EncodeCutInfoResponse(
                                    8, 1, {.clock = 6, .dir = "/tmp/ckpt", .coordinate = true})));
  out.Write(target, "server-orders", Bytes(wire::EncodeServerOrdersResponse(
                                         9, {routing, {{3, 0, 1}, {4, 0, 1}}, false})));
  ClusterStatus status{routing, {{0, "tcp://127.0.0.1:1", "live", 8}, {1, "tcp://127.0.0.1:2",
                                                                        "draining", 8}},
                       1, 2, 3};
  out.Write(target, "cluster-status", Bytes(wire::EncodeClusterStatusResponse(10, status)));
  const std::string data = "partition rows";
  out.Write(target, "partition-data",
            Bytes(wire::EncodePartitionDataResponse(11, 1, data.size(), [&](std::span<uint8_t> d) {
              std::copy(data.begin(), data.end(), d.begin());
            })));
  const std::vector<uint64_t> changed = {3, 7, 11};
  const std::vector<uint64_t> deleted = {5};
  out.Write(target, "follow-reply",
            Bytes(wire::EncodeFollowResponse(
                12, 2, {.keys = changed, .rows = rows, .deleted = deleted,
                        .following = {0, 1, 2}, .lost = {3}, .more = true})));
}

// ---- Conversations with the handlers ----

namespace {

std::string Record(PeerRole role, const Frame& frame) {
  return std::string(1, static_cast<char>(ByteForRole(role))) + Bytes(frame);
}

// A record from `role` holding its key number `key` (PeerFromByte), as connection `sender`.
std::string Record(PeerRole role, uint8_t sender, const Frame& frame, uint8_t key = 0) {
  return std::string(1, static_cast<char>(ByteForRole(role) + 4 * key)) +
         std::string(1, static_cast<char>(sender)) + Bytes(frame);
}

}  // namespace

void WriteServerConversations(CorpusWriter& out) {
  const std::string target = "server_handler";
  const auto tables = FuzzTables();
  const RequestHeader h{1, 1};
  const auto grads = Gradients(kKeys.size(), tables[0].dim);
  const Frame push = wire::EncodePushSubset(h, "user", kKeys, grads, tables[0].dim, {}, 0,
                                            RowFormat::kF32, 0, false, {9, 1});
  const Frame pull = wire::EncodePull(h, "user", kKeys);
  // Every request kind alone, from an insecure peer and from a trainer.
  for (auto& [name, frame] : Requests()) {
    out.Write(target, "one-" + name, Record(PeerRole::kInsecure, frame));
  }
  out.Write(target, "push-pull-stats",
            JoinRecords({Record(PeerRole::kTrainer, push), Record(PeerRole::kTrainer, push),
                         Record(PeerRole::kTrainer, pull),
                         Record(PeerRole::kAdmin, wire::EncodeStatsRequest(h))}));
  // A lookup between a push and a pull, flagging missing keys, and one a server may not send.
  const Frame lookup =
      wire::EncodeLookupSubset(h, "user", kKeys, {}, RowFormat::kF32, MissingRows::kFlag);
  out.Write(target, "push-lookup-pull",
            JoinRecords({Record(PeerRole::kTrainer, push), Record(PeerRole::kTrainer, lookup),
                         Record(PeerRole::kServer, lookup), Record(PeerRole::kTrainer, pull),
                         Record(PeerRole::kAdmin, wire::EncodeStatsRequest(h))}));
  // A reader looks up, asks for stats, and tries a pull and a push it may not send.
  out.Write(target, "reader-lookup-refused-push",
            JoinRecords({Record(PeerRole::kReader, lookup), Record(PeerRole::kReader, pull),
                         Record(PeerRole::kReader, push),
                         Record(PeerRole::kReader, wire::EncodeStatsRequest(h))}));
  // A hint, the pull and the push that releases it; and a hint a server may not send.
  const Frame hint = wire::EncodeHintSubset(h, "user", kKeys, {}, {1, 9}, 1000);
  const Frame releasing = wire::EncodePushSubset(h, "user", kKeys, grads, tables[0].dim, {}, 0,
                                                 RowFormat::kF32, 0, false, {9, 1}, 1);
  out.Write(target, "hint-pull-push",
            JoinRecords({Record(PeerRole::kTrainer, hint), Record(PeerRole::kServer, hint),
                         Record(PeerRole::kTrainer, pull), Record(PeerRole::kTrainer, releasing),
                         Record(PeerRole::kAdmin, wire::EncodeStatsRequest(h))}));
  const Frame deferred = wire::EncodePushSubset(h, "ftrl", {kKeys.data(), 2},
                                                Gradients(2, tables[2].dim), tables[2].dim, {}, 1,
                                                RowFormat::kF32, 1, true, {});
  out.Write(target, "bsp-apply",
            JoinRecords({Record(PeerRole::kTrainer, deferred),
                         Record(PeerRole::kServer, wire::EncodeApplyClock(
                                                       h, {.clock = 1, .trainers = {1}}))}));
  std::vector<std::string> move;
  move.push_back(Record(PeerRole::kTrainer, push));
  for (auto phase : {wire::TransferPhase::kCopy, wire::TransferPhase::kHandover,
                     wire::TransferPhase::kRelease}) {
    move.push_back(
        Record(PeerRole::kServer, wire::EncodePartitionTransfer(h, {.partition = 0, .phase = phase})));
  }
  move.push_back(Record(PeerRole::kTrainer, pull));
  out.Write(target, "move-out", JoinRecords(move));
  move[3] = Record(PeerRole::kServer, wire::EncodePartitionTransfer(
                                          h, {.partition = 0, .phase = wire::TransferPhase::kResume}));
  out.Write(target, "move-out-resumed", JoinRecords(move));
  std::vector<std::string> checkpoint = {Record(PeerRole::kTrainer, push)};
  for (auto action : {CheckpointAction::kWrite, CheckpointAction::kVerify, CheckpointAction::kRestore}) {
    checkpoint.push_back(
        Record(PeerRole::kAdmin, wire::EncodeCheckpoint(h, {"/tmp/ckpt", action})));
  }
  checkpoint.push_back(Record(PeerRole::kTrainer, pull));
  out.Write(target, "checkpoint-write-restore", JoinRecords(checkpoint));
  // A base of a chain, a push, then an increment after it; the base restored.
  std::vector<std::string> chain = {
      Record(PeerRole::kTrainer, push),
      Record(PeerRole::kTrainer,
             wire::EncodeCheckpoint(h, {"/tmp/ckpt", CheckpointAction::kWrite, 1, 0, true})),
      Record(PeerRole::kTrainer, push),
      Record(PeerRole::kTrainer,
             wire::EncodeCheckpoint(h, {"/tmp/ckpt/next", CheckpointAction::kWrite, 2, 1, true})),
      Record(PeerRole::kAdmin, wire::EncodeCheckpoint(h, {"/tmp/ckpt", CheckpointAction::kRestore})),
      Record(PeerRole::kTrainer, pull)};
  out.Write(target, "checkpoint-chain", JoinRecords(chain));
  out.Write(target, "edge-garbage-then-ping",
            JoinRecords({std::string("\x00garbage!", 9), Record(PeerRole::kAdmin, wire::EncodePing(h))}));
}

void WriteSchedulerConversations(CorpusWriter& out) {
  const std::string target = "scheduler_handler";
  const RequestHeader h{1, 0};
  for (auto& [name, frame] : Requests()) {
    out.Write(target, "one-" + name, Record(PeerRole::kInsecure, 1, frame));
  }
  const RequestHeader formed{2, 1};
  std::vector<std::string> run = {
      Record(PeerRole::kServer, 1, wire::EncodeRegisterServer(h, "tcp://127.0.0.1:5000")),
      Record(PeerRole::kServer, 2, wire::EncodeRegisterServer(h, "tcp://127.0.0.1:5001")),
      Record(PeerRole::kTrainer, 3, wire::EncodeRegisterTrainer(h, "trainer-a")),
      Record(PeerRole::kTrainer, 4, wire::EncodeRegisterTrainer(h, "trainer-b")),
      Record(PeerRole::kTrainer, 3, wire::EncodeBarrier(formed, "start", 2)),
      Record(PeerRole::kTrainer, 4, wire::EncodeBarrier(formed, "start", 2)),
      Record(PeerRole::kTrainer, 3, wire::EncodeTrainerClock(formed, {.trainer = 0, .clock = 1})),
      Record(PeerRole::kTrainer, 4, wire::EncodeTrainerClock(formed, {.trainer = 1, .clock = 1})),
      Record(PeerRole::kTrainer, 3, wire::EncodeHeartbeat(formed, 0)),
      Record(PeerRole::kServer, 1, wire::EncodeServerHeartbeat(formed, 0)),
      Record(PeerRole::kServer, 2, wire::EncodeServerHeartbeat(formed, 1)),
      Record(PeerRole::kAdmin, 5, wire::EncodeClusterStatusRequest(formed)),
      Record(PeerRole::kAdmin, 5, wire::EncodeCheckpointNow(formed, {{"/tmp/ckpt", "", false}})),
      Record(PeerRole::kTrainer, 3, wire::EncodeCheckpointCut(formed, {.trainer = 0, .clock = 1})),
  };
  out.Write(target, "form-train-checkpoint", JoinRecords(run));
  std::vector<std::string> drain(run.begin(), run.begin() + 2);
  drain.push_back(Record(PeerRole::kServer, 6,
                         wire::EncodeRegisterServer(formed, "tcp://127.0.0.1:5002", true)));
  drain.push_back(Record(PeerRole::kAdmin, 5, wire::EncodeDrain(formed, 1)));
  drain.push_back(Record(PeerRole::kServer, 1, wire::EncodeServerHeartbeat(formed, 0)));
  drain.push_back(Record(PeerRole::kServer, 6, wire::EncodeMoveDecision(
                                                   formed, {.move = {8, 1, 2}, .commit = true})));
  drain.push_back(Record(PeerRole::kAdmin, 5, wire::EncodeClusterStatusRequest(formed)));
  out.Write(target, "join-drain-move", JoinRecords(drain));
  // Another trainer key speaks for trainer 0 and takes its name; another server key decides.
  std::vector<std::string> impostors(run.begin(), run.begin() + 4);
  impostors.push_back(Record(PeerRole::kTrainer, 7, wire::EncodeHeartbeat(formed, 0), 1));
  impostors.push_back(
      Record(PeerRole::kTrainer, 7, wire::EncodeRegisterTrainer(h, "trainer-a"), 1));
  impostors.push_back(Record(
      PeerRole::kServer, 8, wire::EncodeMoveDecision(formed, {.move = {8, 1, 0}, .commit = true}),
      2));
  out.Write(target, "other-identities", JoinRecords(impostors));
  // A reader registers, reads the routing table and status, and tries what it may not.
  std::vector<std::string> reader(run.begin(), run.begin() + 2);
  reader.push_back(Record(PeerRole::kReader, 9, wire::EncodeRegisterReader(h, "lookup")));
  reader.push_back(Record(PeerRole::kReader, 9, wire::EncodeGetRouting(formed)));
  reader.push_back(Record(PeerRole::kReader, 9, wire::EncodeClusterStatusRequest(formed)));
  reader.push_back(Record(PeerRole::kReader, 9, wire::EncodeRegisterTrainer(h, "trainer-a")));
  reader.push_back(Record(PeerRole::kReader, 9, wire::EncodeHeartbeat(formed, 0)));
  reader.push_back(Record(PeerRole::kReader, 9, wire::EncodeDrain(formed, 1)));
  out.Write(target, "reader-reads-and-is-refused", JoinRecords(reader));
  out.Write(target, "edge-extra-frame", Record(PeerRole::kInsecure, 0xff, wire::EncodePing(h)));
}

}  // namespace ember::fuzz
