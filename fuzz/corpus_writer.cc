// Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/) with ember's own encoders
// and writers, so that every seed is a valid input of today's formats, plus a few edge cases.
// scripts/fuzz.sh --write-corpus runs it:
//   ember_fuzz_corpus OUT_DIR SOURCE_DIR
// writes OUT_DIR/<target>/<seed> (replacing files of the same name) and takes the example job
// configs from SOURCE_DIR/configs.
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

namespace ember::fuzz {
namespace {

namespace fs = std::filesystem;
using wire::RequestHeader;

std::string Bytes(const Frame& frame) { return std::string(frame.view()); }

class CorpusWriter {
 public:
  explicit CorpusWriter(fs::path root) : root_(std::move(root)) {}

  void Write(const std::string& target, const std::string& name, std::string_view bytes) {
    const fs::path dir = root_ / target;
    fs::create_directories(dir);
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EMBER_CHECK(out.good(), "cannot write", (dir / name).string());
    ++written_;
  }
  // A seed that starts with a mode byte.
  void Write(const std::string& target, const std::string& name, uint8_t mode,
             std::string_view bytes) {
    Write(target, name, std::string(1, static_cast<char>(mode)) + std::string(bytes));
  }
  int written() const { return written_; }

 private:
  fs::path root_;
  int written_ = 0;
};

// ---- Wire messages ----

// Keys of the first table: some owned by server 0 of FuzzRouting, some not.
const std::vector<uint64_t> kKeys = {1, 2, 3, 42, 1000, 123456789};

std::vector<float> Gradients(size_t keys, uint32_t dim) {
  std::vector<float> grads(keys * dim);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.01f * static_cast<float>(i % 7) - 0.03f;
  return grads;
}

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
  const std::vector<uint32_t> some = {4, 0};
  const wire::KeysToSend several[] = {{tables[0].name, kKeys, {}},
                                      {tables[1].name, kKeys, some},
                                      {tables[0].name, {}, {}}};
  add("pull-tables", wire::EncodePullTables(h, several, RowFormat::kF16));
  add("lookup", wire::EncodeLookupSubset(h, tables[0].name, kKeys, {}, RowFormat::kF32,
                                         MissingRows::kInitial));
  const std::vector<uint32_t> looked_up = {5, 1};
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

ServerStats Stats() {
  ServerStats stats;
  stats.server_id = 1;
  stats.partitions_owned = 8;
  stats.pull_requests = 10;
  stats.tables.push_back(TableStats{"user"});
  stats.tables.back().rows = 5;
  return stats;
}

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
}

// ---- Conversations with the handlers ----

std::string Record(PeerRole role, const Frame& frame) {
  return std::string(1, static_cast<char>(ByteForRole(role))) + Bytes(frame);
}

// A record from `role` holding its key number `key` (PeerFromByte), as connection `sender`.
std::string Record(PeerRole role, uint8_t sender, const Frame& frame, uint8_t key = 0) {
  return std::string(1, static_cast<char>(ByteForRole(role) + 4 * key)) +
         std::string(1, static_cast<char>(sender)) + Bytes(frame);
}

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
  out.Write(target, "edge-extra-frame", Record(PeerRole::kInsecure, 0xff, wire::EncodePing(h)));
}

// ---- Files ----

void WritePartitionFiles(CorpusWriter& out, const std::string& scratch) {
  const std::string target = "partition_file";
  const auto tables = FuzzTables();
  // A chunk of a partition transfer: the next chunk's offset (0: the last), the table count and
  // each table's rows.
  std::string transfer;
  const uint64_t next_chunk = 0;
  const uint32_t table_count = static_cast<uint32_t>(tables.size());
  transfer.append(reinterpret_cast<const char*>(&next_chunk), sizeof(next_chunk));
  transfer.append(reinterpret_cast<const char*>(&table_count), sizeof(table_count));
  for (const TableSpec& spec : tables) {
    auto table = std::make_unique<embedding::EmbeddingTable>(spec, kFuzzPartitions);
    // Keys of the last partition, where the fuzzer's transfers go, and of partition 0.
    std::vector<uint64_t> keys;
    for (uint64_t key = 0; keys.size() < 4 && key < 100000; ++key) {
      const uint32_t p = table->PartitionOf(key);
      if (p == kFuzzPartitions - 1 || (p == 0 && keys.size() < 2)) keys.push_back(key);
    }
    EMBER_CHECK(table->Push(keys, Gradients(keys.size(), spec.dim)).ok());
    // Partition 1 holds no rows: its file reads empty arrays.
    for (uint32_t p : {0u, 1u, kFuzzPartitions - 1}) {
      const std::string path = scratch + "/part-" + spec.name + std::to_string(p) + ".bin";
      EMBER_CHECK(embedding::WritePartitionFile(*table, p, path, Flush::kLater).ok());
      auto file = ReadWholeFile(path);
      EMBER_CHECK(file.ok());
      if (spec.name == tables[0].name) {
        out.Write(target, "file-" + std::to_string(p), 0, *file);
        out.Write(target, "file-sealed-" + std::to_string(p), 1, *file);
      }
    }
    PayloadWriter rows;
    EMBER_CHECK(embedding::AppendPartitionRows(*table, kFuzzPartitions - 1, nullptr, rows).ok());
    transfer += rows.bytes();
    if (spec.name == tables[0].name) {
      // An incremental cut of partition 0: a base (cut 1), one row changed, then the delta.
      const std::string whole = scratch + "/cut-whole.bin";
      const std::string delta = scratch + "/cut-delta.bin";
      EMBER_CHECK(embedding::WritePartitionCut(*table, 0, 0, 1, true, whole, delta, Flush::kLater)
                      .ok());
      EMBER_CHECK(table->Push(std::span(keys).first(1), Gradients(1, spec.dim)).ok());
      auto cut = embedding::WritePartitionCut(*table, 0, 1, 2, true, whole, delta, Flush::kLater);
      EMBER_CHECK(cut.ok() && !cut->whole);
      auto file = ReadWholeFile(delta);
      EMBER_CHECK(file.ok());
      out.Write(target, "delta", 4, *file);
      out.Write(target, "delta-sealed", 5, *file);
      // The same with the second key deleted since (sealed: the checksum is fixed by the mode).
      std::string deleted = file->substr(0, file->size() - 4 - 8);  // less the count and checksum
      const uint64_t one = 1;
      deleted.append(reinterpret_cast<const char*>(&one), sizeof(one));
      deleted.append(reinterpret_cast<const char*>(&keys[1]), sizeof(keys[1]));
      deleted.append(4, '\0');  // the checksum's place
      out.Write(target, "delta-deleted-sealed", 5, deleted);
    }
  }
  out.Write(target, "transfer-first", 2, transfer);
  out.Write(target, "transfer-next", 3, transfer);
  std::string more = transfer;
  more[0] = 7;  // another chunk follows at offset 7
  out.Write(target, "transfer-more", 2, more);
  out.Write(target, "edge-transfer-huge-count", 2,
            std::string(8, '\0') + std::string("\xff\xff\xff\xff", 4));
}

void WriteTrainerCheckpoints(CorpusWriter& out, const std::string& scratch) {
  trainer::TrainerCheckpoint checkpoint;
  checkpoint.step = 12;
  checkpoint.rank = 0;
  checkpoint.trainers = 2;
  checkpoint.data_position = "epoch 1 offset 34";
  checkpoint.dense.weights = trainer::InitDenseWeights(FuzzModel());
  const std::string path = scratch + "/trainer-0.bin";
  EMBER_CHECK(trainer::WriteTrainerCheckpoint(path, checkpoint).ok());
  auto weights_only = ReadWholeFile(path);
  checkpoint.has_optimizer_state = true;
  checkpoint.dense.first_moment = checkpoint.dense.weights;
  checkpoint.dense.second_moment = checkpoint.dense.weights;
  checkpoint.dense.adam_steps = 12;
  EMBER_CHECK(trainer::WriteTrainerCheckpoint(path, checkpoint).ok());
  auto with_state = ReadWholeFile(path);
  EMBER_CHECK(weights_only.ok() && with_state.ok());
  out.Write("trainer_checkpoint", "weights", 0, *weights_only);
  out.Write("trainer_checkpoint", "weights-sealed", 1, *weights_only);
  out.Write("trainer_checkpoint", "adam-state", 0, *with_state);
  out.Write("trainer_checkpoint", "adam-state-sealed", 1, *with_state);
}

void WriteManifests(CorpusWriter& out, const std::string& scratch) {
  const std::string dir = scratch + "/checkpoint";
  EMBER_CHECK(MakeDirectories(dir + "/tables/user").ok());
  EMBER_CHECK(WriteFileAtomically(PartitionFilePath(dir, "user", 0), "rows", Flush::kLater).ok());
  EMBER_CHECK(WriteFileAtomically(TrainerFilePath(dir, 0), "trainer", Flush::kLater).ok());
  Manifest manifest{.step = 6, .servers = 2, .partitions = 1, .trainers = 1,
                    .tables = {{"user", 8}}};
  EMBER_CHECK(WriteManifest(dir, manifest).ok());
  auto text = ReadWholeFile(dir + "/" + kManifestName);
  EMBER_CHECK(text.ok());
  out.Write("checkpoint_manifest", "complete", 0, *text);
  out.Write("checkpoint_manifest", "complete-sealed", 1, *text);
  out.Write("checkpoint_manifest", "edge-header-only", 1, "ember-checkpoint 1\npartitions 4\n");
  // An increment of a chain, whose predecessor the fuzzer writes as the same manifest (mode 3).
  EMBER_CHECK(
      WriteFileAtomically(DeltaFilePath(dir, "user", 0), "delta", Flush::kLater).ok());
  EMBER_CHECK(std::filesystem::remove(PartitionFilePath(dir, "user", 0)));
  manifest.chain = ChainPlace{.cut = 0x2a, .sequence = 1, .previous = "../previous",
                              .previous_cut = 0x29, .previous_crc = 0x12345678};
  EMBER_CHECK(WriteManifest(dir, manifest).ok());
  auto increment = ReadWholeFile(dir + "/" + kManifestName);
  EMBER_CHECK(increment.ok());
  out.Write("checkpoint_manifest", "increment", 0, *increment);
  out.Write("checkpoint_manifest", "increment-with-previous", 3, *increment);
}

void WriteConfigs(CorpusWriter& out, const fs::path& source) {
  for (const auto& entry : fs::directory_iterator(source / "configs")) {
    if (entry.path().extension() != ".yaml") continue;
    auto text = ReadWholeFile(entry.path().string());
    EMBER_CHECK(text.ok());
    out.Write("config_yaml", "job-" + entry.path().stem().string(), 0, *text);
  }
  out.Write("config_yaml", "tables", 1,
            "- name: user_id\n  dim: 16\n  seed: 11\n"
            "  initializer: {kind: uniform, low: -0.1, high: 0.1}\n"
            "  optimizer: {kind: ftrl, learning_rate: 0.05, ftrl_beta: 1, l1: 0.1, l2: 0.1}\n"
            "  admit_after: 2\n  ttl_seconds: 3600\n"
            "- name: item_id\n  dim: 8\n  optimizer: adam\n  initializer: zeros\n"
            "- name: genre\n  dim: 8\n"
            "  optimizer: {kind: adagrad, learning_rate: 0.05, weight_decay: 0.01}\n");
  out.Write("config_yaml", "security", 0,
            "cluster: {servers: 1}\ntables: [{name: a, dim: 4}]\n"
            "security:\n  scheduler_key: \"rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7\"\n"
            "  keyring: keys\n"
            "  trusted:\n    - {name: alice, role: admin, key: \"Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID\"}\n"
            "    - {name: bob, role: trainer, key: bob.pub}\n");
  out.Write("config_yaml", "early-stopping-bpr", 0,
            "cluster: {servers: 1}\ntables: [{name: u, dim: 4}, {name: i, dim: 4}]\n"
            "model: {embedding_dim: 4, user_slots: 1, item_slots: 2, hidden: [4], output_dim: 4,"
            " loss: bpr, negatives: 4}\n"
            "data:\n  kind: interactions\n"
            "  interactions: {path: u.data, validation: true, negatives: 9,\n"
            "    item_features: {path: i.csv, id: 0, features: [{column: 2, separator: \"|\"}]}}\n"
            "train:\n  epochs: 20\n  user_tables: [u]\n  item_tables: [i, i]\n"
            "  early_stopping: {every_epochs: 2, patience: 3, then: retrain, dir: best}\n");
  // A serving cluster's config: no train section; servers on every interface, advertised.
  out.Write("config_yaml", "serving", 0,
            "cluster: {servers: 2, server_bind: \"tcp://0.0.0.0:*\", server_advertise: "
            "\"node7:9000\"}\ntables: [{name: a, dim: 4}]\n");
  out.Write("config_yaml", "metrics", 0,
            "cluster: {servers: 2}\ntables: [{name: a, dim: 4}]\n"
            "metrics: {scheduler: \"0.0.0.0:9400\", servers: \"localhost:0\", "
            "trainers: \"127.0.0.1:9410\"}\n");
  out.Write("config_yaml", "edge-anchors", 0,
            "cluster: &c {servers: 2}\ntables: [{name: a, dim: 4}]\nmodel: *c\n");
}

// Key files as `ember keygen` writes them (a throwaway pair made for the corpus), and broken ones.
void WriteKeyFiles(CorpusWriter& out, const std::string& dir) {
  auto pair = ember::WriteKeyFiles(dir, "corpus");
  EMBER_CHECK(pair.ok());
  auto key_file = ReadWholeFile(dir + "/corpus.key");
  auto pub_file = ReadWholeFile(dir + "/corpus.pub");
  EMBER_CHECK(key_file.ok() && pub_file.ok());
  out.Write("key_file", "pair", 0, *key_file);
  out.Write("key_file", "public", 1, *pub_file);
  out.Write("key_file", "edge-public-as-pair", 0, *pub_file);
  out.Write("key_file", "edge-mismatched", 0,
            "public-key = " + std::string(40, 'a') + "\nsecret-key = " + pair->secret_key + "\n");
  out.Write("key_file", "edge-repeated", 1,
            "public-key = x\npublic-key = " + pair->public_key + "\n#\n");
}

// Key lists for `ember lookup --keys` (even mode) and raw-id maps of `ember export` (odd).
void WriteKeyLists(CorpusWriter& out) {
  out.Write("key_list", "keys", 0, "1\n 42 \r\n\n18446744073709551615\n");
  out.Write("key_list", "edge-not-a-key", 0, "7\n-3\n0x10\n18446744073709551616\n");
  out.Write("key_list", "raw-id-map", 1, "u1\t1311768467294899695\nitem 7\t42\n\t0\n");
  out.Write("key_list", "edge-raw-id-map", 1, "no tab\nid\t\nid\t12x\n");
}

// What clients send to a metrics endpoint.
void WriteMetricsRequests(CorpusWriter& out) {
  out.Write("metrics_request", "get", "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  out.Write("metrics_request", "head-query", "HEAD /metrics?x=1 HTTP/1.0\r\n\r\n");
  out.Write("metrics_request", "edge-other-path", "GET / HTTP/1.1\r\n\r\n");
  out.Write("metrics_request", "edge-post",
            "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  out.Write("metrics_request", "edge-no-method", " /metrics\r\n");
}

// A push log as a killed server leaves it: two logged pushes (one with a record) and the erasure
// of a partition, in the tables the fuzzer opens.
void WritePushLogs(CorpusWriter& out, const std::string& dir) {
  const TableSpec spec = FuzzTables()[0];
  std::string segment;
  {
    embedding::RocksStoreOptions options{dir};
    options.log_pushes = true;
    auto store = embedding::RocksStore::Open(
        options, {{spec.name, embedding::EmbeddingTable::PersistedFloatsPerRow(spec)}});
    EMBER_CHECK(store.ok(), store.status().ToString());
    auto table = embedding::EmbeddingTable::Create(spec, kFuzzPartitions,
                                                   {(*store)->Table(spec.name), nullptr});
    EMBER_CHECK(table.ok(), table.status().ToString());
    const std::vector<uint64_t> keys = {1, 2, 3};
    const std::vector<float> grads(keys.size() * spec.dim, 0.5f);
    EMBER_CHECK((*table)->Push(keys, grads, [](embedding::RowWrites& batch) {
      batch.PutRecord("fuzz/a", "1");
    }).ok());
    EMBER_CHECK((*table)->Push(keys, grads).ok());
    EMBER_CHECK((*table)->Erase((*table)->PartitionOf(2)).ok());
  }
  auto bytes = ReadWholeFile(dir + "/ember-pushlog/000000000001.pushlog");
  EMBER_CHECK(bytes.ok(), bytes.status().ToString());
  for (uint8_t mode : {0, 1}) {
    const std::string suffix = mode == 0 ? "-framing" : "-store";
    out.Write("push_log", "pushes" + suffix, mode, *bytes);
    out.Write("push_log", "edge-torn" + suffix, mode, bytes->substr(0, bytes->size() - 3));
  }
}

void WriteDelimited(CorpusWriter& out) {
  // Format byte: delimiter (0 tab, 1 comma, 2 "::"), 4 header, 8 also load as interactions,
  // 64 with the file as item side features too.
  out.Write("delimited_file", "tsv", 8, "1\t10\t5\t100\n1\t11\t3\t101\n2\t10\t4\t102\n2\t12\t5\t99\n");
  out.Write("delimited_file", "csv-header", 1 | 4 | 8,
            "user,item,rating,timestamp\r\nu1,i1,4.5,1\r\n\r\nu1,i2,2,2\r\nu2,i1,5,3\r\n");
  out.Write("delimited_file", "movielens", 2 | 8, "1::1193::5::978300760\n1::661::3::978302109\n");
  out.Write("delimited_file", "edge-short-rows", 0 | 8, "1\t2\n3\n\n4\t5\t6\t7\t8\n");
  out.Write("delimited_file", "csv-quoted", 1 | 4 | 8 | 32,
            "\xEF\xBB\xBFuser,item,rating,timestamp\n# a comment\n\"u,1\",\"i \"\"1\"\"\",4,1\n"
            "u2,\"two\nlines\",5,2\n");
  out.Write("delimited_file", "edge-unclosed-quote", 1 | 8, "u1,i1,4,1\nu2,\"i2,5,2\n");
  out.Write("delimited_file", "csv-multi-valued", 1 | 8 | 64,
            "u1,i1,\"a|b\",1\nu1,i2,b,2\nu2,i1,|,3\nu2,i3,\"a | |c\",4\n");
}

}  // namespace
}  // namespace ember::fuzz

int main(int argc, char** argv) {
  using namespace ember::fuzz;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s OUT_DIR SOURCE_DIR\n", argv[0]);
    return 2;
  }
  QuietLogs();
  CorpusWriter out{fs::path(argv[1])};
  WriteWireRequests(out);
  WriteWireResponses(out);
  WriteServerConversations(out);
  WriteSchedulerConversations(out);
  WritePartitionFiles(out, ScratchDir());
  WriteTrainerCheckpoints(out, ScratchDir());
  WriteManifests(out, ScratchDir());
  WriteConfigs(out, fs::path(argv[2]));
  WriteDelimited(out);
  WriteKeyLists(out);
  WriteMetricsRequests(out);
  WriteKeyFiles(out, ScratchDir() + "/keys");
  WritePushLogs(out, ScratchDir() + "/push-log");
  std::printf("wrote %d seeds under %s\n", out.written(), argv[1]);
  return 0;
}
