// PushLedger implementation: the per-sender records, their keys on disk, and loading them back.
#include "ps/server/push_ledger.h"

#include <spdlog/spdlog.h>

#include <array>
#include <cstring>
#include <string_view>

namespace ember::ps {
namespace {

constexpr std::string_view kPrefix = "pushes/";
constexpr char kAppliedKind = 'a';
constexpr char kFloorKind = 'f';
constexpr size_t kKeyBytes = 7 + 1 + 16;  // prefix, kind, sender, number
constexpr int64_t kSweepSeconds = 60;     // idle senders are looked for at most this often

void PutBigEndian(uint64_t value, char* out) {
  for (int i = 7; i >= 0; --i, value >>= 8) out[i] = static_cast<char>(value & 0xff);
}

uint64_t GetBigEndian(const char* in) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = (value << 8) | static_cast<unsigned char>(in[i]);
  return value;
}

// "pushes/" + kind + sender + number, big-endian so that a sender's records sort by number.
std::string RecordKey(char kind, uint64_t sender, uint64_t number) {
  std::string key(kKeyBytes, '\0');
  kPrefix.copy(key.data(), kPrefix.size());
  key[kPrefix.size()] = kind;
  PutBigEndian(sender, key.data() + kPrefix.size() + 1);
  PutBigEndian(number, key.data() + kPrefix.size() + 9);
  return key;
}

// A floor record's value: when the sender was last seen, and the key bound to it.
std::string FloorValue(int64_t seconds, const std::string& key) {
  std::string value(sizeof(seconds), '\0');
  std::memcpy(value.data(), &seconds, sizeof(seconds));
  return value + key;
}

}  // namespace

PushLedger::PushLedger(embedding::RocksStore* store, PushLedgerOptions options)
    : store_(store), options_(std::move(options)) {}

Result<std::unique_ptr<PushLedger>> PushLedger::Open(embedding::RocksStore* store,
                                                     PushLedgerOptions options) {
  std::unique_ptr<PushLedger> ledger(new PushLedger(store, std::move(options)));
  if (store != nullptr) RETURN_IF_ERROR(ledger->Load().WithContext("reading the push records"));
  return ledger;
}

int64_t PushLedger::NowSeconds() const {
  if (options_.now_seconds) return options_.now_seconds();
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status PushLedger::Load() {
  struct Found {
    std::vector<uint64_t> floors;
    std::vector<uint64_t> applied;
    int64_t seen = 0;  // with the highest floor
    std::string key;   // bound to the sender, with the highest floor
  };
  std::unordered_map<uint64_t, Found> found;
  embedding::RowWrites deletes(*store_);
  RETURN_IF_ERROR(store_->ForEachRecord(kPrefix, [&](std::string_view key, std::string_view value) {
    const char kind = key.size() == kKeyBytes ? key[kPrefix.size()] : '\0';
    if (kind != kAppliedKind && kind != kFloorKind) {
      spdlog::warn("push records: dropping a record with a malformed key of {} bytes", key.size());
      deletes.DeleteRecord(key);
      return;
    }
    Found& sender = found[GetBigEndian(key.data() + kPrefix.size() + 1)];
    const uint64_t number = GetBigEndian(key.data() + kPrefix.size() + 9);
    if (kind == kAppliedKind) {
      sender.applied.push_back(number);
      return;
    }
    // Floors come in ascending order: the last one is the highest.
    sender.floors.push_back(number);
    sender.seen = 0;
    sender.key.clear();
    if (value.size() >= sizeof(int64_t)) {
      std::memcpy(&sender.seen, value.data(), sizeof(int64_t));
      sender.key = std::string(value.substr(sizeof(int64_t)));
    }
  }));
  const int64_t forget_before = NowSeconds() - options_.forget_idle_sender.count();
  for (const auto& [id, record] : found) {
    const bool keep = !record.floors.empty() && record.seen >= forget_before;
    const uint64_t floor = keep ? record.floors.back() : 0;
    for (uint64_t old : record.floors) {
      if (!keep || old != floor) deletes.DeleteRecord(RecordKey(kFloorKind, id, old));
    }
    Sender* sender = keep ? &senders_[id] : nullptr;
    for (uint64_t request : record.applied) {
      if (keep && request >= floor) {
        sender->applied.emplace(request, true);
      } else {
        deletes.DeleteRecord(RecordKey(kAppliedKind, id, request));
      }
    }
    if (!keep) continue;
    sender->floor = floor;
    sender->written_floor = floor;
    sender->last_seen = record.seen;
    sender->key = record.key;
  }
  if (!found.empty()) {
    spdlog::info("push records: {} senders with {} applied pushes at or above their floor",
                 senders_.size(), records());
  }
  return store_->Write(deletes);
}

void PushLedger::ForgetIdleSenders(int64_t now) {
  if (now < next_sweep_) return;
  next_sweep_ = now + kSweepSeconds;
  ForgetSendersSeenBefore(now - options_.forget_idle_sender.count());
}

bool PushLedger::MakeRoom(int64_t now) {
  if (senders_.size() < options_.max_senders) return true;
  ForgetSendersSeenBefore(now - options_.prune_idle_sender.count());
  return senders_.size() < options_.max_senders;
}

void PushLedger::ForgetSendersSeenBefore(int64_t before) {
  for (auto it = senders_.begin(); it != senders_.end();) {
    if (it->second.last_seen >= before || !it->second.in_progress.empty()) {
      ++it;
      continue;
    }
    Orphan(it->first, it->second);
    it = senders_.erase(it);
  }
}

void PushLedger::Orphan(uint64_t id, Sender& sender) {
  if (store_ == nullptr) return;
  for (const auto& [request, on_disk] : sender.applied) {
    if (on_disk) orphans_.push_back(RecordKey(kAppliedKind, id, request));
  }
  for (uint64_t request : sender.stale) orphans_.push_back(RecordKey(kAppliedKind, id, request));
  if (sender.written_floor) orphans_.push_back(RecordKey(kFloorKind, id, *sender.written_floor));
}

PushLedger::Claim PushLedger::Begin(const wire::PushSender& from, uint64_t request_id,
                                    Millis wait, const std::string& key) {
  Claim claim{Verdict::kApply, from.id, request_id};
  std::unique_lock lock(mutex_);
  const int64_t now = NowSeconds();
  ForgetIdleSenders(now);
  auto known = senders_.find(from.id);
  if (known == senders_.end() && !MakeRoom(now)) {
    claim.verdict = Verdict::kFull;
    return claim;
  }
  // (A sender known without a key, from before authentication was on, takes the first one.)
  if (known != senders_.end() && !known->second.key.empty() && known->second.key != key) {
    claim.verdict = Verdict::kForeign;
    return claim;
  }
  {
    Sender& sender = senders_[from.id];
    if (sender.key.empty()) sender.key = key;  // (only ever set once: not on every push)
    sender.last_seen = now;
    if (from.acked_below > sender.floor) {
      sender.floor = from.acked_below;
      auto below = sender.applied.lower_bound(sender.floor);
      for (auto it = sender.applied.begin(); it != below; ++it) {
        if (it->second) sender.stale.push_back(it->first);
      }
      sender.applied.erase(sender.applied.begin(), below);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    // Looked up again after each wait: the entry may have been forgotten and made anew.
    Sender& sender = senders_[from.id];
    if (request_id < sender.floor || sender.applied.count(request_id)) {
      claim.verdict = Verdict::kDuplicate;
      return claim;
    }
    if (sender.in_progress.insert(request_id).second) return claim;
    if (finished_.wait_until(lock, deadline) == std::cv_status::timeout &&
        senders_[from.id].in_progress.count(request_id)) {
      claim.verdict = Verdict::kBusy;
      return claim;
    }
  }
}

void PushLedger::AppendWrites(const Claim& claim, embedding::RowWrites& batch) {
  std::lock_guard lock(mutex_);
  for (const std::string& key : orphans_) batch.DeleteRecord(key);
  orphans_.clear();
  auto it = senders_.find(claim.sender);
  if (it == senders_.end()) return;
  Sender& sender = it->second;
  for (uint64_t request : sender.stale) {
    batch.DeleteRecord(RecordKey(kAppliedKind, claim.sender, request));
  }
  sender.stale.clear();
  if (claim.request_id >= sender.floor) {
    batch.PutRecord(RecordKey(kAppliedKind, claim.sender, claim.request_id), "");
  }
  if (sender.written_floor && *sender.written_floor != sender.floor) {
    batch.DeleteRecord(RecordKey(kFloorKind, claim.sender, *sender.written_floor));
  }
  batch.PutRecord(RecordKey(kFloorKind, claim.sender, sender.floor),
                  FloorValue(sender.last_seen, sender.key));
  sender.written_floor = sender.floor;
}

void PushLedger::Finish(const Claim& claim, bool applied, bool logged) {
  {
    std::lock_guard lock(mutex_);
    auto it = senders_.find(claim.sender);
    if (it != senders_.end()) {
      Sender& sender = it->second;
      sender.in_progress.erase(claim.request_id);
      if (applied && claim.request_id >= sender.floor) {
        sender.applied.emplace(claim.request_id, logged);
      } else if (applied && logged) {
        sender.stale.push_back(claim.request_id);  // answered meanwhile: only the disk record
      }
    }
  }
  finished_.notify_all();
}

size_t PushLedger::senders() const {
  std::lock_guard lock(mutex_);
  return senders_.size();
}

size_t PushLedger::records() const {
  std::lock_guard lock(mutex_);
  size_t count = 0;
  for (const auto& [id, sender] : senders_) count += sender.applied.size();
  return count;
}

}  // namespace ember::ps
