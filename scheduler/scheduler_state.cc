// SchedulerState's file: encoding, checked decoding, saving and loading.
#include "scheduler/scheduler_state.h"

#include <set>

#include "common/checksummed_file.h"
#include "common/hash.h"

namespace ember::scheduler {
namespace {

constexpr char kMagic[] = "EMBSCHED";
constexpr uint32_t kVersion = 1;
constexpr char kFileName[] = "scheduler.state";
// The smallest encoding of one element of each list: a count larger than the bytes left could
// hold is damage, refused before anything is allocated for it.
constexpr size_t kMinServerBytes = 8;    // two empty strings
constexpr size_t kMinMoveBytes = 12;     // partition, from, to
constexpr size_t kMinTrainerBytes = 12;  // empty name and key, id
constexpr size_t kMinMemberBytes = 26;   // id, empty name, state, first clock, clock, reported

void PutCut(PayloadWriter& out, const wire::CutInfo& cut) {
  out.Put<uint64_t>(cut.clock);
  out.PutString(cut.dir);
  out.Put<uint32_t>(cut.keep);
  out.Put<uint32_t>(cut.chain);
  out.PutString(cut.after);
}

void PutOptionalCut(PayloadWriter& out, const std::optional<wire::CutInfo>& cut) {
  out.Put<uint8_t>(cut.has_value());
  if (cut) PutCut(out, *cut);
}

void PutMoves(PayloadWriter& out, const ShardMoves::Saved& moves) {
  out.Put<uint32_t>(static_cast<uint32_t>(moves.states.size()));
  for (ServerState state : moves.states) out.Put<uint8_t>(static_cast<uint8_t>(state));
  out.Put<uint32_t>(static_cast<uint32_t>(moves.in_flight.size()));
  for (const PartitionMove& move : moves.in_flight) {
    out.Put<uint32_t>(move.partition);
    out.Put<uint32_t>(move.from);
    out.Put<uint32_t>(move.to);
  }
  out.Put<uint64_t>(moves.done);
}

void PutClocks(PayloadWriter& out, const TrainerClocks::Saved& clocks, bool with_clocks) {
  out.Put<uint32_t>(static_cast<uint32_t>(clocks.members.size()));
  for (const TrainerClocks::SavedMember& member : clocks.members) {
    out.Put<uint32_t>(member.id);
    out.PutString(member.name);
    out.Put<uint8_t>(static_cast<uint8_t>(member.state));
    out.Put<uint64_t>(member.first_clock);
    out.Put<uint64_t>(with_clocks ? member.clock : 0);
    out.Put<uint8_t>(member.reported);
  }
  out.Put<uint32_t>(clocks.joined);
  out.Put<uint64_t>(with_clocks ? clocks.highest_clock : 0);
  out.PutString(clocks.failure);
}

void PutCuts(PayloadWriter& out, const CheckpointCuts::Saved& cuts) {
  PutOptionalCut(out, cuts.requested);
  PutOptionalCut(out, cuts.active);
  out.Put<uint8_t>(cuts.active_requested);
  out.Put<uint8_t>(cuts.coordinating);
  out.Put<uint32_t>(static_cast<uint32_t>(cuts.arrived.size()));
  out.PutArray<uint32_t>(cuts.arrived);
}

// Reads what the Put functions wrote; the first problem found is kept, later reads do nothing.
class StateReader {
 public:
  explicit StateReader(std::string_view bytes) : in_(bytes) {}

  template <typename T>
  T Get() {
    T value{};
    if (!in_.Get(value)) Fail("the file ends early");
    return value;
  }
  std::string GetString() {
    std::string text;
    if (!in_.GetString(text)) Fail("the file ends early");
    return text;
  }
  bool GetFlag() {
    const uint8_t flag = Get<uint8_t>();
    if (flag > 1) Fail("a flag holds " + std::to_string(flag));
    return flag == 1;
  }
  // A count of elements of at least `min_bytes` each, refused when the bytes left cannot hold it.
  uint32_t GetCount(size_t min_bytes, std::string_view what) {
    const uint32_t count = Get<uint32_t>();
    if (ok() && static_cast<uint64_t>(count) * min_bytes > in_.remaining()) {
      Fail("a list of " + std::to_string(count) + " " + std::string(what) + " is longer than " +
           "the file");
      return 0;
    }
    return ok() ? count : 0;
  }
  void Check(bool holds, const std::string& what) {
    if (!holds) Fail(what);
  }
  void Fail(const std::string& what) {
    if (error_.empty()) error_ = what;
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  size_t remaining() const { return in_.remaining(); }

 private:
  PayloadReader in_;
  std::string error_;
};

wire::CutInfo GetCut(StateReader& in) {
  wire::CutInfo cut;
  cut.clock = in.Get<uint64_t>();
  cut.dir = in.GetString();
  cut.keep = in.Get<uint32_t>();
  cut.chain = in.Get<uint32_t>();
  cut.after = in.GetString();
  in.Check(cut.clock > 0, "a checkpoint cut at clock 0");
  return cut;
}

std::optional<wire::CutInfo> GetOptionalCut(StateReader& in) {
  if (!in.GetFlag()) return std::nullopt;
  return GetCut(in);
}

void GetServersAndRouting(StateReader& in, SchedulerState& state) {
  state.endpoint = in.GetString();
  state.num_partitions = in.Get<uint32_t>();
  state.tables_fingerprint = in.Get<uint64_t>();
  const uint32_t servers = in.GetCount(kMinServerBytes, "servers");
  for (uint32_t id = 0; id < servers; ++id) {
    std::string endpoint = in.GetString();
    std::string key = in.GetString();
    state.servers.push_back(ServerInfo{id, std::move(endpoint), std::move(key)});
  }
  state.epoch = in.Get<uint64_t>();
  const uint32_t owners = in.GetCount(sizeof(uint32_t), "partition owners");
  state.owners.resize(owners);
  for (uint32_t& owner : state.owners) {
    owner = in.Get<uint32_t>();
    in.Check(owner < servers, "partition owner " + std::to_string(owner) + " is no server");
  }
  in.Check(state.num_partitions > 0, "no partitions");
  in.Check(owners == 0 || owners == state.num_partitions,
           std::to_string(owners) + " partition owners for " +
               std::to_string(state.num_partitions) + " partitions");
  in.Check((state.epoch == 0) == (owners == 0), "a routing epoch without owners, or owners "
                                                "without an epoch");
}

void GetMoves(StateReader& in, SchedulerState& state) {
  const uint32_t servers = static_cast<uint32_t>(state.servers.size());
  const uint32_t states = in.GetCount(1, "server states");
  in.Check(states == 0 || states == servers, std::to_string(states) + " server states for " +
                                                 std::to_string(servers) + " servers");
  for (uint32_t i = 0; i < states; ++i) {
    const uint8_t value = in.Get<uint8_t>();
    in.Check(value <= static_cast<uint8_t>(ServerState::kDead),
             "server state " + std::to_string(value));
    state.moves.states.push_back(static_cast<ServerState>(value));
  }
  const uint32_t moves = in.GetCount(kMinMoveBytes, "moves");
  std::set<uint32_t> partitions;
  for (uint32_t i = 0; i < moves; ++i) {
    PartitionMove move;
    move.partition = in.Get<uint32_t>();
    move.from = in.Get<uint32_t>();
    move.to = in.Get<uint32_t>();
    in.Check(move.partition < state.owners.size() && move.from < servers && move.to < servers &&
                 move.from != move.to && partitions.insert(move.partition).second,
             "a move of partition " + std::to_string(move.partition) + " from server " +
                 std::to_string(move.from) + " to " + std::to_string(move.to) +
                 " that cannot be in flight");
    state.moves.in_flight.push_back(move);
  }
  state.moves.done = in.Get<uint64_t>();
}

void GetTrainers(StateReader& in, SchedulerState& state) {
  const uint32_t trainers = in.GetCount(kMinTrainerBytes, "trainers");
  std::set<uint32_t> ids;
  std::set<std::string> names;
  for (uint32_t i = 0; i < trainers; ++i) {
    SchedulerState::Trainer trainer;
    trainer.name = in.GetString();
    trainer.id = in.Get<uint32_t>();
    trainer.key = in.GetString();
    in.Check(trainer.id < trainers && ids.insert(trainer.id).second &&
                 names.insert(trainer.name).second,
             "trainer id " + std::to_string(trainer.id) + " or its name is not unique");
    state.trainers.push_back(std::move(trainer));
  }
  const uint32_t members = in.GetCount(kMinMemberBytes, "trainer clocks");
  std::set<uint32_t> member_ids;
  for (uint32_t i = 0; i < members; ++i) {
    TrainerClocks::SavedMember member;
    member.id = in.Get<uint32_t>();
    member.name = in.GetString();
    const uint8_t member_state = in.Get<uint8_t>();
    member.first_clock = in.Get<uint64_t>();
    member.clock = in.Get<uint64_t>();
    member.reported = in.GetFlag();
    in.Check(ids.count(member.id) && member_ids.insert(member.id).second &&
                 member_state <= static_cast<uint8_t>(TrainerClocks::State::kDead),
             "the clock of trainer " + std::to_string(member.id) + " names no trainer, or twice");
    member.state = static_cast<TrainerClocks::State>(member_state);
    state.clocks.members.push_back(std::move(member));
  }
  state.clocks.joined = in.Get<uint32_t>();
  state.clocks.highest_clock = in.Get<uint64_t>();
  state.clocks.failure = in.GetString();
}

void GetCuts(StateReader& in, SchedulerState& state) {
  state.cuts.requested = GetOptionalCut(in);
  state.cuts.active = GetOptionalCut(in);
  state.cuts.active_requested = in.GetFlag();
  state.cuts.coordinating = in.GetFlag();
  const uint32_t arrived = in.GetCount(sizeof(uint32_t), "arrivals");
  for (uint32_t i = 0; i < arrived; ++i) state.cuts.arrived.push_back(in.Get<uint32_t>());
  in.Check(state.cuts.active.has_value() || (arrived == 0 && !state.cuts.coordinating),
           "arrivals at a cut that is not under way");
  state.cut_coordinator = in.Get<uint32_t>();
  state.cuts_completed = in.Get<uint64_t>();
  state.cuts_failed = in.Get<uint64_t>();
  state.last_cut_clock = in.Get<uint64_t>();
  state.last_cut_error = in.GetString();
}

}  // namespace

uint64_t TablesFingerprint(const std::vector<TableSpec>& tables) {
  uint64_t fingerprint = HashName("tables");
  for (const TableSpec& table : tables) {
    fingerprint = HashCombine(fingerprint, HashName(table.name));
    fingerprint = HashCombine(fingerprint, table.dim);
    fingerprint = HashCombine(fingerprint, table.seed);
    fingerprint = HashCombine(fingerprint, static_cast<uint64_t>(table.optimizer.kind));
  }
  return fingerprint;
}

std::string EncodeSchedulerState(const SchedulerState& state, bool with_clocks) {
  PayloadWriter out;
  out.PutString(state.endpoint);
  out.Put<uint32_t>(state.num_partitions);
  out.Put<uint64_t>(state.tables_fingerprint);
  out.Put<uint32_t>(static_cast<uint32_t>(state.servers.size()));
  for (const ServerInfo& server : state.servers) {
    out.PutString(server.endpoint);
    out.PutString(server.public_key);
  }
  out.Put<uint64_t>(state.epoch);
  out.Put<uint32_t>(static_cast<uint32_t>(state.owners.size()));
  out.PutArray<uint32_t>(state.owners);
  PutMoves(out, state.moves);
  out.Put<uint32_t>(static_cast<uint32_t>(state.trainers.size()));
  for (const SchedulerState::Trainer& trainer : state.trainers) {
    out.PutString(trainer.name);
    out.Put<uint32_t>(trainer.id);
    out.PutString(trainer.key);
  }
  PutClocks(out, state.clocks, with_clocks);
  PutCuts(out, state.cuts);
  out.Put<uint32_t>(state.cut_coordinator);
  out.Put<uint64_t>(state.cuts_completed);
  out.Put<uint64_t>(state.cuts_failed);
  out.Put<uint64_t>(state.last_cut_clock);
  out.PutString(state.last_cut_error);
  return out.Take();
}

Result<SchedulerState> DecodeSchedulerState(std::string_view payload) {
  StateReader in(payload);
  SchedulerState state;
  GetServersAndRouting(in, state);
  if (in.ok()) GetMoves(in, state);
  if (in.ok()) GetTrainers(in, state);
  if (in.ok()) GetCuts(in, state);
  if (in.ok() && in.remaining() != 0) {
    in.Fail(std::to_string(in.remaining()) + " bytes after the end");
  }
  if (!in.ok()) return DataLoss("scheduler state: " + in.error());
  return state;
}

std::string SchedulerStatePath(const std::string& dir) { return dir + "/" + kFileName; }

Status SaveSchedulerState(const std::string& dir, std::string_view payload, Flush flush) {
  return WriteChecksummedFile(SchedulerStatePath(dir), kMagic, kVersion, payload, flush);
}

Result<std::optional<SchedulerState>> LoadSchedulerState(const std::string& dir) {
  const std::string path = SchedulerStatePath(dir);
  auto payload = ReadChecksummedFile(path, kMagic, kVersion);
  if (payload.status().code() == StatusCode::kNotFound) return std::optional<SchedulerState>();
  if (!payload.ok()) return payload.status();
  auto state = DecodeSchedulerState(*payload);
  if (!state.ok()) return state.status().WithContext(path);
  return std::optional<SchedulerState>(std::move(*state));
}

}  // namespace ember::scheduler
