// Seeds of the file and text decoders: partition files, checkpoints, manifests, configs, keys,
// key lists, metrics requests, push logs and delimited data (corpus_writer.h).
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
#include "scheduler/scheduler_state.h"
#include "trainer/dense_weights.h"
#include "trainer/trainer_checkpoint.h"
#include "fuzz/corpus_writer.h"

namespace ember::fuzz {

namespace fs = std::filesystem;
using wire::RequestHeader;

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

// A scheduler's saved state mid-run: two servers, one draining with a move in flight, two
// trainers, a requested cut and one under way; as a payload (mode 0) and as the file (1, 2).
void WriteSchedulerStates(CorpusWriter& out, const std::string& scratch) {
  scheduler::SchedulerState state;
  state.endpoint = "tcp://127.0.0.1:7000";
  state.num_partitions = 4;
  state.tables_fingerprint = scheduler::TablesFingerprint(FuzzTables());
  state.servers = {{0, "tcp://127.0.0.1:7001", ""}, {1, "tcp://127.0.0.1:7002", ""}};
  state.epoch = 3;
  state.owners = {0, 0, 1, 1};
  state.moves.states = {scheduler::ServerState::kLive, scheduler::ServerState::kDraining};
  state.moves.in_flight = {{2, 1, 0}};
  state.trainers = {{"trainer-0", 0, ""}, {"trainer-1", 1, ""}};
  state.clocks.members = {{0, "trainer-0", scheduler::TrainerClocks::State::kLive, 1, 12, true},
                          {1, "trainer-1", scheduler::TrainerClocks::State::kLeft, 1, 9, true}};
  state.clocks.joined = 2;
  state.clocks.highest_clock = 12;
  state.cuts.requested = wire::CutInfo{14, "/ckpt/now", 0, false, 0, ""};
  state.cuts.active = wire::CutInfo{12, "/ckpt/step-000000012", 3, false, 0, ""};
  state.cuts.arrived = {0};
  const std::string payload = scheduler::EncodeSchedulerState(state);
  out.Write("scheduler_state", "mid-run", 0, payload);
  out.Write("scheduler_state", "edge-truncated", 0, payload.substr(0, payload.size() / 2));
  const std::string dir = scratch + "/scheduler-state";
  EMBER_CHECK(MakeDirectories(dir).ok());
  EMBER_CHECK(scheduler::SaveSchedulerState(dir, payload, Flush::kLater).ok());
  auto file = ReadWholeFile(scheduler::SchedulerStatePath(dir));
  EMBER_CHECK(file.ok());
  out.Write("scheduler_state", "mid-run-file", 2, *file);
  out.Write("scheduler_state", "mid-run-file-sealed", 1, *file);
}

}  // namespace ember::fuzz
