// MovesOut: the source side's state of the partitions moving out of a server.
#include "ps/server/moves_out.h"

#include <algorithm>

namespace ember::ps {

void MovesOut::BeginCopy(uint32_t p, uint32_t target) {
  std::lock_guard lock(mu_);
  ownership_.set(p, PartitionState::kCopying);
  const auto now = std::chrono::steady_clock::now();
  moves_[p] = Move{target, now, now};
}

void MovesOut::SetCopyKeys(uint32_t p, TableKeys keys) {
  Outgoing rows{wire::TransferPhase::kCopy, std::move(keys), 0};
  for (const auto& [name, table_keys] : rows.tables) rows.total += table_keys.size();
  std::lock_guard lock(mu_);
  outgoing_[p] = std::move(rows);
}

void MovesOut::BeginHandOver(uint32_t p, TableKeys changed) {
  std::lock_guard lock(mu_);
  // A repeated hand-over (its answer lost) finds the partition handed over and sends the same
  // rows again.
  if (ownership_.state(p) == PartitionState::kCopying) {
    ownership_.set(p, PartitionState::kHandedOver);
    Outgoing rows{wire::TransferPhase::kHandover, {}, 0};
    for (auto& [name, keys] : changed) {
      if (keys.empty()) continue;
      rows.total += keys.size();
      rows.tables.emplace_back(name, std::move(keys));
    }
    outgoing_[p] = std::move(rows);
  }
  if (auto move = moves_.find(p); move != moves_.end()) {
    move->second.phase_began = std::chrono::steady_clock::now();
  }
}

Result<MovesOut::Chunk> MovesOut::NextChunk(
    uint32_t p, wire::TransferPhase phase, uint64_t offset,
    const std::function<uint64_t(const std::string&)>& rows_per_chunk,
    const std::string& what) const {
  std::lock_guard lock(mu_);
  auto rows = outgoing_.find(p);
  if (rows == outgoing_.end() || rows->second.phase != phase) {
    return FailedPrecondition(what + ": no such transfer is under way");
  }
  const uint64_t total = rows->second.total;
  if (offset > total || (offset == total && offset != 0)) {
    return InvalidArgument(what + ": the transfer has " + std::to_string(total) + " rows");
  }
  Chunk chunk;
  uint64_t skipped = 0;
  for (const auto& [name, table_keys] : rows->second.tables) {
    if (offset >= skipped + table_keys.size()) {
      skipped += table_keys.size();
      continue;
    }
    const uint64_t first = offset - skipped;
    const uint64_t last =
        std::min<uint64_t>(table_keys.size(), first + std::max<uint64_t>(1, rows_per_chunk(name)));
    chunk.table = name;
    chunk.keys.assign(table_keys.begin() + first, table_keys.begin() + last);
    chunk.next = skipped + last == total ? 0 : skipped + last;
    break;
  }
  return chunk;
}

std::optional<uint32_t> MovesOut::TargetOf(uint32_t p) const {
  std::lock_guard lock(mu_);
  auto it = moves_.find(p);
  if (it == moves_.end()) return std::nullopt;
  return it->second.target;
}

void MovesOut::End(uint32_t p, PartitionState to) {
  std::lock_guard lock(mu_);
  ownership_.set(p, to);
  moves_.erase(p);
  outgoing_.erase(p);
}

std::map<uint32_t, std::pair<uint32_t, std::chrono::steady_clock::time_point>> MovesOut::UnderWay()
    const {
  std::lock_guard lock(mu_);
  std::map<uint32_t, std::pair<uint32_t, std::chrono::steady_clock::time_point>> moves;
  for (const auto& [p, move] : moves_) moves[p] = {move.target, move.copy_began};
  return moves;
}

std::vector<uint32_t> MovesOut::Stalled(Millis copy_limit, Millis hold_limit) const {
  std::lock_guard lock(mu_);
  std::vector<uint32_t> stalled;
  const auto now = std::chrono::steady_clock::now();
  for (const auto& [p, move] : moves_) {
    const bool held = ownership_.state(p) == PartitionState::kHandedOver;
    if (now - move.phase_began > (held ? hold_limit : copy_limit)) stalled.push_back(p);
  }
  return stalled;
}

}  // namespace ember::ps
