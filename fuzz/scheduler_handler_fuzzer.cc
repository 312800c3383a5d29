// Fuzzes the scheduler's request handler, scheduler::Scheduler::HandleMessage, on a live
// in-process scheduler (two servers, FuzzTables, bsp with two trainers), bound to an in-process
// endpoint nobody connects to, so its answers go nowhere.
//
// An input is a conversation: records (fuzz/fuzz_support.h), each a byte choosing the Peer (role
// and key: several identities of a role talk in one conversation), a byte
// naming the sender (its identity frame; 0xff also sends one extra frame, which must be refused)
// and then one request frame, handled in order by a fresh scheduler, so that registrations,
// barriers, clocks, cuts and moves are reached. Corpus: fuzz/corpus/scheduler_handler/.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/check.h"
#include "fuzz/fuzz_support.h"
#include "scheduler/scheduler.h"

namespace ember::fuzz {
namespace {

scheduler::SchedulerOptions FuzzOptions() {
  scheduler::SchedulerOptions options;
  options.bind = "inproc://ember-fuzz-scheduler";
  options.num_servers = 2;
  options.num_partitions = kFuzzPartitions;
  options.tables = FuzzTables();
  options.sync.mode = SyncMode::kBsp;
  options.sync.trainers = 2;
  return options;
}

void Converse(std::string_view input) {
  scheduler::Scheduler scheduler(FuzzOptions());
  Status started = scheduler.Start();
  EMBER_CHECK(started.ok(), started.ToString());
  for (std::string_view record : SplitRecords(input)) {
    if (record.size() < 2) continue;
    const Peer peer = PeerFromByte(static_cast<uint8_t>(record[0]));
    const uint8_t sender = static_cast<uint8_t>(record[1]);
    std::vector<Frame> frames;
    frames.emplace_back(std::string("sender-") + std::to_string(sender));
    frames.emplace_back(record.substr(2));
    if (sender == 0xff) frames.emplace_back(std::string_view("extra"));
    scheduler.HandleMessage(std::move(frames), peer);
  }
}

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET(ember::fuzz::Converse)
