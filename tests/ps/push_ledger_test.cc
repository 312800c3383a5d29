// PushLedger: duplicates by (sender, request id), the floor that bounds the records, copies that
// race, forgotten senders, records read back from disk, and sender ids bound to the key that
// pushes as them.
#include "ps/server/push_ledger.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "tests/test_util.h"

namespace ember::ps {
namespace {

using Verdict = PushLedger::Verdict;
constexpr uint64_t kSender = 0xA11CE;
constexpr Millis kNoWait{0};

// Begin, then Finish as applied (in memory only); the verdict of Begin.
Verdict ApplyOnce(PushLedger& ledger, uint64_t request_id, uint64_t acked_below,
                  uint64_t sender = kSender) {
  const PushLedger::Claim claim = ledger.Begin({sender, acked_below}, request_id, kNoWait);
  if (claim.verdict == Verdict::kApply) ledger.Finish(claim, true, false);
  return claim.verdict;
}

// Begins push `request_id` of kSender, which must get to be applied.
PushLedger::Claim StartApplying(PushLedger& ledger, uint64_t request_id) {
  const PushLedger::Claim claim = ledger.Begin({kSender, 1}, request_id, kNoWait);
  EXPECT_EQ(claim.verdict, Verdict::kApply);
  return claim;
}

std::unique_ptr<PushLedger> MemoryLedger(PushLedgerOptions options = {}) {
  auto ledger = PushLedger::Open(nullptr, std::move(options));
  EXPECT_TRUE(ledger.ok()) << ledger.status().ToString();
  return std::move(*ledger);
}

TEST(PushLedgerTest, CopyOfAnAppliedPushIsADuplicateForItsSenderOnly) {
  auto ledger = MemoryLedger();
  EXPECT_EQ(ApplyOnce(*ledger, 5, 5), Verdict::kApply);
  EXPECT_EQ(ApplyOnce(*ledger, 5, 5), Verdict::kDuplicate);
  EXPECT_EQ(ApplyOnce(*ledger, 5, 5, kSender + 1), Verdict::kApply);
  EXPECT_EQ(ApplyOnce(*ledger, 6, 5), Verdict::kApply);
  EXPECT_EQ(ledger->senders(), 2u);
  EXPECT_EQ(ledger->records(), 3u);
}

TEST(PushLedgerTest, RecordsBelowTheFloorAreForgottenAndPushesBelowItAreDuplicates) {
  auto ledger = MemoryLedger();
  for (uint64_t id = 1; id <= 10; ++id) EXPECT_EQ(ApplyOnce(*ledger, id, 1), Verdict::kApply);
  EXPECT_EQ(ledger->records(), 10u);
  // Everything below 9 was answered: only 9 and 10 (and the new 11) are kept.
  EXPECT_EQ(ApplyOnce(*ledger, 11, 9), Verdict::kApply);
  EXPECT_EQ(ledger->records(), 3u);
  EXPECT_EQ(ApplyOnce(*ledger, 3, 1), Verdict::kDuplicate);  // a stale copy with an old floor
  EXPECT_EQ(ApplyOnce(*ledger, 10, 9), Verdict::kDuplicate);
  EXPECT_EQ(ApplyOnce(*ledger, 12, 9), Verdict::kApply);
}

TEST(PushLedgerTest, CopyOfAFailedPushIsApplied) {
  auto ledger = MemoryLedger();
  ledger->Finish(StartApplying(*ledger, 1), /*applied=*/false, false);
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1), Verdict::kApply);
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1), Verdict::kDuplicate);
}

TEST(PushLedgerTest, CopyArrivingWhileTheFirstIsAppliedWaitsForIt) {
  auto ledger = MemoryLedger();
  const PushLedger::Claim first = StartApplying(*ledger, 1);
  EXPECT_EQ(ledger->Begin({kSender, 1}, 1, Millis(20)).verdict, Verdict::kBusy);
  std::atomic<bool> finished{false};
  auto second = std::async(std::launch::async, [&] {
    const Verdict verdict = ledger->Begin({kSender, 1}, 1, Millis(30'000)).verdict;
    EXPECT_TRUE(finished.load()) << "the copy did not wait for the first one";
    return verdict;
  });
  std::this_thread::sleep_for(Millis(50));
  finished.store(true);
  ledger->Finish(first, true, false);
  EXPECT_EQ(second.get(), Verdict::kDuplicate);
}

TEST(PushLedgerTest, SendersIdleForLongAreForgotten) {
  int64_t now = 1'000'000;
  PushLedgerOptions options;
  options.forget_idle_sender = std::chrono::seconds(600);
  options.now_seconds = [&now] { return now; };
  auto ledger = MemoryLedger(options);
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1, 1), Verdict::kApply);
  now += 300;
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1, 2), Verdict::kApply);
  now += 400;  // sender 1 idle for 700 s, sender 2 for 400 s
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1, 3), Verdict::kApply);
  EXPECT_EQ(ledger->senders(), 2u);
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1, 2), Verdict::kDuplicate);
}

TEST(PushLedgerTest, AFullLedgerForgetsQuietSendersForANewOneAndRefusesItWhenAllAreActive) {
  int64_t now = 1'000'000;
  PushLedgerOptions options;
  options.max_senders = 2;
  options.prune_idle_sender = std::chrono::seconds(10);
  options.now_seconds = [&now] { return now; };
  auto ledger = MemoryLedger(options);
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1, 1), Verdict::kApply);
  now += 5;
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1, 2), Verdict::kApply);
  now += 7;  // sender 1 quiet for 12 s: forgotten to make room for sender 3
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1, 3), Verdict::kApply);
  EXPECT_EQ(ledger->senders(), 2u);
  now += 1;  // senders 2 and 3 quiet for 8 s and 1 s: no room for sender 4
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1, 4), Verdict::kFull);
  EXPECT_EQ(ledger->senders(), 2u);
  // The active senders keep their records: a copy of an applied push is still a duplicate.
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1, 2), Verdict::kDuplicate);
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1, 3), Verdict::kDuplicate);
  // A sender being applied is not forgotten however long it is quiet.
  const PushLedger::Claim slow = ledger->Begin({2, 1}, 2, kNoWait);
  ASSERT_EQ(slow.verdict, Verdict::kApply);
  now += 100;
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1, 4), Verdict::kApply);  // sender 3 made room
  EXPECT_EQ(ApplyOnce(*ledger, 1, 1, 5), Verdict::kFull);
  ledger->Finish(slow, true, false);
}

// Runs one push through the ledger as the server does with a data directory: its records go
// into the batch that would carry its rows, which is then written.
Verdict ApplyLogged(PushLedger& ledger, embedding::RocksStore& store, uint64_t request_id,
                    uint64_t acked_below, const std::string& key = "") {
  const PushLedger::Claim claim = ledger.Begin({kSender, acked_below}, request_id, kNoWait, key);
  if (claim.verdict != Verdict::kApply) return claim.verdict;
  embedding::RowWrites batch(store);
  ledger.AppendWrites(claim, batch);
  const Status written = store.Write(batch);
  EXPECT_TRUE(written.ok()) << written.ToString();
  ledger.Finish(claim, written.ok(), true);
  return claim.verdict;
}

// A ledger over a RocksStore in `path`, with what the store holds read back.
struct DiskLedger {
  explicit DiskLedger(const std::string& path) {
    auto opened = embedding::RocksStore::Open({path}, {});
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    store = std::move(*opened);
    auto read = PushLedger::Open(store.get());
    EXPECT_TRUE(read.ok()) << read.status().ToString();
    ledger = std::move(*read);
  }
  Verdict Apply(uint64_t request_id, uint64_t acked_below, const std::string& key = "") {
    return ApplyLogged(*ledger, *store, request_id, acked_below, key);
  }
  std::unique_ptr<embedding::RocksStore> store;
  std::unique_ptr<PushLedger> ledger;
};

size_t RecordsOnDisk(const embedding::RocksStore& store) {
  size_t count = 0;
  EXPECT_TRUE(
      store.ForEachRecord("pushes/", [&](std::string_view, std::string_view) { ++count; }).ok());
  return count;
}

TEST(PushLedgerTest, RecordsAreReadBackAfterReopeningAndStaleOnesDeleted) {
  testing::TempDir dir;
  {
    DiskLedger disk(dir.path());
    for (uint64_t id = 1; id <= 4; ++id) {
      EXPECT_EQ(disk.Apply(id, 1), Verdict::kApply);
    }
    // Records of 1..4 and one floor.
    EXPECT_EQ(RecordsOnDisk(*disk.store), 5u);
    EXPECT_EQ(disk.Apply(5, 3), Verdict::kApply);
    // 1 and 2 fell below the floor and were deleted with push 5.
    EXPECT_EQ(RecordsOnDisk(*disk.store), 4u);
  }
  DiskLedger disk(dir.path());
  EXPECT_EQ(disk.ledger->records(), 3u);
  for (uint64_t id = 1; id <= 5; ++id) {
    EXPECT_EQ(disk.Apply(id, 1), Verdict::kDuplicate) << "push " << id;
  }
  EXPECT_EQ(disk.Apply(6, 6), Verdict::kApply);
  EXPECT_EQ(RecordsOnDisk(*disk.store), 2u);  // push 6 and the floor
}

TEST(PushLedgerTest, ReopeningKeepsTheHighestFloorAndDropsSendersWithoutOne) {
  testing::TempDir dir;
  {
    DiskLedger disk(dir.path());
    EXPECT_EQ(disk.Apply(8, 8), Verdict::kApply);
    // What batches written out of order leave behind: an older floor next to the newer one,
    // a record below the floor, and a record of a sender without any floor.
    embedding::RowWrites leftovers(*disk.store);
    Status read =
        disk.store->ForEachRecord("pushes/", [&](std::string_view key, std::string_view value) {
          std::string changed(key);
          changed.back() = '\x02';
          if (key[7] == 'f') {
            leftovers.PutRecord(changed, value);
          } else {
            leftovers.PutRecord(changed, "");
            changed[8] = '\x7f';
            leftovers.PutRecord(changed, "");
          }
        });
    ASSERT_TRUE(read.ok()) << read.ToString();
    ASSERT_TRUE(disk.store->Write(leftovers).ok());
    EXPECT_EQ(RecordsOnDisk(*disk.store), 5u);
  }
  DiskLedger disk(dir.path());
  EXPECT_EQ(disk.ledger->senders(), 1u);
  EXPECT_EQ(disk.ledger->records(), 1u);
  EXPECT_EQ(RecordsOnDisk(*disk.store), 2u);
  EXPECT_EQ(disk.Apply(7, 2), Verdict::kDuplicate);  // below floor 8
  EXPECT_EQ(disk.Apply(8, 2), Verdict::kDuplicate);
}

constexpr char kVictimKey[] = "victim-key-victim-key-victim-key-victim1";
constexpr char kOtherKey[] = "other-key-other-key-other-key-other-key1";

TEST(PushLedgerTest, ASenderIdIsBoundToTheKeyThatPushesAsIt) {
  auto ledger = MemoryLedger();
  auto begin = [&](uint64_t request_id, uint64_t acked_below, const std::string& key) {
    const PushLedger::Claim claim =
        ledger->Begin({kSender, acked_below}, request_id, kNoWait, key);
    if (claim.verdict == Verdict::kApply) ledger->Finish(claim, true, false);
    return claim.verdict;
  };
  EXPECT_EQ(begin(5, 5, kVictimKey), Verdict::kApply);
  // Another key naming the victim's sender id can neither raise its floor (which would make the
  // victim's next pushes duplicates, answered OK and never applied) nor claim its requests.
  EXPECT_EQ(begin(6, ~uint64_t{0}, kOtherKey), Verdict::kForeign);
  EXPECT_EQ(begin(6, 5, kOtherKey), Verdict::kForeign);
  EXPECT_EQ(begin(6, 5, ""), Verdict::kForeign);
  EXPECT_EQ(begin(6, 6, kVictimKey), Verdict::kApply);
  EXPECT_EQ(begin(7, 7, kVictimKey), Verdict::kApply);
  EXPECT_EQ(ledger->records(), 1u);  // 7, at the victim's own floor
}

TEST(PushLedgerTest, ASendersKeyIsReadBackWithItsRecords) {
  testing::TempDir dir;
  {
    DiskLedger disk(dir.path());
    EXPECT_EQ(disk.Apply(1, 1, kVictimKey), Verdict::kApply);
  }
  DiskLedger disk(dir.path());
  EXPECT_EQ(disk.Apply(2, ~uint64_t{0}, kOtherKey), Verdict::kForeign);
  EXPECT_EQ(disk.Apply(1, 1, kVictimKey), Verdict::kDuplicate);
  EXPECT_EQ(disk.Apply(2, 2, kVictimKey), Verdict::kApply);
}

}  // namespace
}  // namespace ember::ps
