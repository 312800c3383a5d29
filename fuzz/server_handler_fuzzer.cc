// Fuzzes a parameter server's request handler, ps::ShardService::Handle, on a live in-process
// shard (memory only, the tables of FuzzTables, server 0 of FuzzRouting).
//
// An input is a conversation: records (fuzz/fuzz_support.h), each a byte choosing the Peer and
// then one request frame, handled in order by a fresh shard, so that sequences (push then pull,
// copy then hand-over then release, write then restore) are reached. Every reply must decode.
// A checkpoint request naming an absolute directory gets one in the scratch folder instead (others
// are refused as they are): the fuzzer writes nowhere else. Corpus: fuzz/corpus/server_handler/.
#include <cstddef>
#include <cstdint>

#include "common/check.h"
#include "common/wire.h"
#include "fuzz/fuzz_support.h"
#include "ps/server/shard_service.h"

namespace ember::fuzz {
namespace {

constexpr std::string_view kCheckpointFolder = "checkpoint";

// `frame`, or, for a checkpoint request on an absolute directory, the same request on the scratch
// checkpoint folder.
Frame Sandboxed(std::string_view frame, bool* used_checkpoint_folder) {
  auto decoded = wire::DecodeRequest(Frame(frame.data(), frame.size()));
  if (decoded.ok()) {
    auto* checkpoint = std::get_if<wire::CheckpointRequest>(&decoded->body);
    if (checkpoint != nullptr && checkpoint->dir.starts_with('/')) {
      *used_checkpoint_folder = true;
      wire::CheckpointRequest sandboxed = *checkpoint;
      sandboxed.dir = ScratchDir() + "/" + std::string(kCheckpointFolder);
      return wire::EncodeCheckpoint(decoded->header, sandboxed);
    }
  }
  return Frame(frame.data(), frame.size());
}

void Converse(std::string_view input) {
  auto service = ps::ShardService::Create(0, FuzzTables(), FuzzRouting());
  EMBER_CHECK(service.ok(), service.status().ToString());
  bool used_checkpoint_folder = false;
  for (std::string_view record : SplitRecords(input)) {
    if (record.empty()) continue;
    const Peer peer = PeerFromByte(static_cast<uint8_t>(record.front()));
    Frame reply = (*service)->Handle(Sandboxed(record.substr(1), &used_checkpoint_folder), peer);
    auto decoded = wire::DecodeResponse(std::move(reply));
    EMBER_CHECK(decoded.ok(), "a server's reply does not decode:", decoded.status().ToString());
  }
  if (used_checkpoint_folder) ClearScratch(kCheckpointFolder);
}

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET(ember::fuzz::Converse)
