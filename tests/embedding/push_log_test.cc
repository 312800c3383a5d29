// Tests for PushLog: group commit from many threads, replay in order, torn and damaged records,
// and segments retired once re-logged.
#include "embedding/push_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <initializer_list>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/direct_file.h"
#include "tests/test_util.h"

namespace ember::embedding {
namespace {

PushLog::Retire NoRecords() {
  return [](const std::vector<RetiredSegment>&) { return Status::Ok(); };
}

std::vector<std::string> ReplayAll(const std::string& dir, uint64_t* next = nullptr) {
  std::vector<std::string> payloads;
  auto replayed = PushLog::Replay(dir, [&](std::string_view payload) {
    payloads.emplace_back(payload);
    return Status::Ok();
  });
  EXPECT_TRUE(replayed.ok()) << replayed.status().ToString();
  if (next != nullptr && replayed.ok()) *next = *replayed;
  return payloads;
}

std::vector<std::filesystem::path> Segments(const std::string& dir) {
  std::vector<std::filesystem::path> segments;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    segments.push_back(entry.path());
  }
  std::sort(segments.begin(), segments.end());
  return segments;
}

TEST(PushLogTest, ConcurrentPushesAreWrittenInGroupsAndReplayInTheirOrder) {
  testing::TempDir dir;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 300;
  {
    auto log = PushLog::Create({dir.path()}, 1, NoRecords());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          const std::string payload = std::to_string(t) + ":" + std::to_string(i) +
                                      std::string(i % 97, 'x');
          if (!(*log)->WaitDurable((*log)->Append(payload)).ok()) ++failures;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(failures.load(), 0);
    const PushLog::Stats stats = (*log)->stats();
    EXPECT_EQ(stats.records, uint64_t{kThreads * kPerThread});
    EXPECT_LE(stats.writes, stats.records);
    // Each group write was timed, and so was each push that waited for one.
    EXPECT_GT(stats.write_seconds, 0.0);
    EXPECT_GE(stats.waits, stats.writes);
    EXPECT_LE(stats.waits, stats.records);
    EXPECT_GT(stats.wait_seconds, 0.0);
  }
  uint64_t next = 0;
  const std::vector<std::string> payloads = ReplayAll(dir.path(), &next);
  EXPECT_EQ(next, 2u);
  ASSERT_EQ(payloads.size(), size_t{kThreads * kPerThread});
  std::vector<int> seen(kThreads, 0);
  for (const std::string& payload : payloads) {
    const int t = std::stoi(payload.substr(0, payload.find(':')));
    const int i = std::stoi(payload.substr(payload.find(':') + 1));
    EXPECT_EQ(i, seen[t]++) << "thread " << t << "'s records out of order";
  }
}

// Writes a log of these payloads as segment `number` of `dir`, then closes it.
void WriteSegment(const std::string& dir, uint64_t number,
                  std::initializer_list<const char*> payloads) {
  auto log = PushLog::Create({dir}, number, NoRecords());
  ASSERT_TRUE(log.ok());
  for (const char* payload : payloads) {
    ASSERT_TRUE((*log)->WaitDurable((*log)->Append(std::string_view(payload))).ok());
  }
}

// Replaying `dir` is refused as data lost, naming `segment`.
void ExpectReplayRefusedNaming(const std::string& dir, const std::filesystem::path& segment) {
  auto replayed = PushLog::Replay(dir, [](std::string_view) { return Status::Ok(); });
  ASSERT_FALSE(replayed.ok());
  EXPECT_EQ(replayed.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(replayed.status().message().find(segment.filename().string()), std::string::npos)
      << replayed.status().ToString();
}

TEST(PushLogTest, ATornLastRecordEndsTheReplayAndDamageBeforeTheLastSegmentIsRefused) {
  testing::TempDir dir;
  WriteSegment(dir.path(), 7, {"one", "two", "three"});
  const std::filesystem::path segment = Segments(dir.path()).at(0);
  // The records' bytes (the file may be longer: zeros pad its last block).
  const uint64_t full = 3 * 8 + std::string_view("onetwothree").size();
  ASSERT_GE(std::filesystem::file_size(segment), full);
  // A write cut short: the last record loses its last byte.
  std::filesystem::resize_file(segment, full - 1);
  EXPECT_EQ(ReplayAll(dir.path()), (std::vector<std::string>{"one", "two"}));
  // A flipped byte in the middle record ends the replay before it.
  std::filesystem::resize_file(segment, full);
  {
    std::fstream file(segment, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(8 + 3 + 8 + 1);
    file.put('X');
  }
  EXPECT_EQ(ReplayAll(dir.path()), (std::vector<std::string>{"one"}));
  // The same damage in a segment followed by another is data lost, named.
  std::ofstream(std::filesystem::path(dir.path()) / "000000000009.pushlog");
  ExpectReplayRefusedNaming(dir.path(), segment);

  ASSERT_TRUE(PushLog::RemoveSegments(dir.path()).ok());
  EXPECT_TRUE(Segments(dir.path()).empty());
}

TEST(PushLogTest, ZerosEndTheLastSegmentButAreDamageInAFullOne) {
  testing::TempDir dir;
  WriteSegment(dir.path(), 7, {"one", "two"});
  const std::filesystem::path segment = Segments(dir.path()).at(0);
  // Zeros after the records, as a padded last block leaves them (written here whatever the
  // filesystem does), then bytes of an earlier life of the file.
  const uint64_t records = 2 * 8 + std::string_view("onetwo").size();
  std::filesystem::resize_file(segment, records + 4096);
  {
    std::fstream file(segment, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(records + 100));
    file << "stale bytes of a reused file";
  }
  EXPECT_EQ(ReplayAll(dir.path()), (std::vector<std::string>{"one", "two"}));
  // The same segment before another has no end record: the zeros are damage, named.
  std::ofstream(std::filesystem::path(dir.path()) / "000000000008.pushlog");
  ExpectReplayRefusedNaming(dir.path(), segment);
}

TEST(PushLogTest, AFullSegmentIsRetiredAfterTheReloggersRanWithWhatItsRecordsKept) {
  testing::TempDir dir;
  std::atomic<int> relogs{0};
  std::vector<RetiredSegment> retired;
  std::mutex retired_mu;
  PushLogOptions options{dir.path()};
  options.segment_bytes = 100;
  auto log = PushLog::Create(options, 1, [&](const std::vector<RetiredSegment>& segments) {
    std::lock_guard<std::mutex> lock(retired_mu);
    EXPECT_GT(relogs.load(), 0) << "retired before the rows were logged again";
    retired.insert(retired.end(), segments.begin(), segments.end());
    return Status::Ok();
  });
  ASSERT_TRUE(log.ok());
  PushLog& push_log = **log;
  PushLog* raw = &push_log;
  const uint64_t handle = push_log.AddRelogger([&relogs, raw](uint64_t) {
    ++relogs;
    // Relogged records do not count toward the segment size.
    return raw->WaitDurable(
        raw->Append(std::string(500, 'r'), PushLog::Origin::kRelog, "kept by the relogged"));
  });
  ASSERT_TRUE(push_log.WaitDurable(push_log.Append(std::string(40, 'p'), PushLog::Origin::kPush,
                                                   "first's"))
                  .ok());
  ASSERT_TRUE(push_log.WaitDurable(push_log.Append(std::string(110, 'p'), PushLog::Origin::kPush,
                                                   " and second's"))
                  .ok());
  for (int i = 0; i < 500 && push_log.stats().segments_retired == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  push_log.RemoveRelogger(handle, /*changed_rows_left=*/true);
  EXPECT_EQ(push_log.stats().segments_retired, 1u);
  EXPECT_EQ(relogs.load(), 1);
  {
    std::lock_guard<std::mutex> lock(retired_mu);
    ASSERT_EQ(retired.size(), 1u);
    EXPECT_FALSE(std::filesystem::exists(retired[0].path));
    // In the order written; the relogged record went to the next segment.
    EXPECT_TRUE(retired[0].kept_complete);
    EXPECT_EQ(retired[0].kept, "first's and second's");
  }
  // Only the relogged record is left.
  log->reset();
  EXPECT_EQ(ReplayAll(dir.path()), (std::vector<std::string>{std::string(500, 'r')}));
}

// A full segment is retired once the next holds half a segment of pushes, with its number.
TEST(PushLogTest, AFullSegmentIsRetiredOnceTheNextHoldsHalfASegment) {
  testing::TempDir dir;
  PushLogOptions options{dir.path()};
  options.segment_bytes = 1000;
  auto log = PushLog::Create(options, 1, NoRecords());
  ASSERT_TRUE(log.ok());
  PushLog& push_log = **log;
  std::atomic<uint64_t> through{0};
  const uint64_t handle = push_log.AddRelogger([&through](uint64_t segment) {
    through = segment;
    return Status::Ok();
  });
  const auto push = [&](size_t bytes) {
    ASSERT_TRUE(push_log.WaitDurable(push_log.Append(std::string(bytes, 'p'))).ok());
  };
  push(1000);
  EXPECT_EQ(push_log.active_segment(), 2u);
  push(300);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(push_log.stats().segments_retired, 0u) << "retired with the next segment 30% full";
  push(300);
  for (int i = 0; i < 500 && push_log.stats().segments_retired == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(push_log.stats().segments_retired, 1u);
  EXPECT_EQ(through.load(), 1u);
  push_log.RemoveRelogger(handle, /*changed_rows_left=*/false);
}

// Records whose `kept` outgrow the limit leave their segment to be read back when it retires.
TEST(PushLogTest, KeptBytesBeyondTheLimitAreDroppedAndTheSegmentIsReadBackInstead) {
  testing::TempDir dir;
  std::vector<RetiredSegment> retired;
  std::vector<std::string> read_back;
  std::mutex retired_mu;
  PushLogOptions options{dir.path()};
  options.segment_bytes = 100;
  options.kept_bytes_limit = 10;
  auto log = PushLog::Create(options, 1, [&](const std::vector<RetiredSegment>& segments) {
    std::lock_guard<std::mutex> lock(retired_mu);
    for (const RetiredSegment& segment : segments) {
      retired.push_back(segment);
      EXPECT_TRUE(PushLog::ReadSegment(segment.path, [&](std::string_view payload) {
        read_back.emplace_back(payload);
        return Status::Ok();
      }).ok());
    }
    return Status::Ok();
  });
  ASSERT_TRUE(log.ok());
  PushLog& push_log = **log;
  const uint64_t handle = push_log.AddRelogger([](uint64_t) { return Status::Ok(); });
  for (const auto& [payload, kept] : {std::pair{std::string(40, 'a'), "8 bytes!"},
                                      std::pair{std::string(80, 'b'), "3 more"}}) {
    ASSERT_TRUE(
        push_log.WaitDurable(push_log.Append(payload, PushLog::Origin::kPush, kept)).ok());
  }
  for (int i = 0; i < 500 && push_log.stats().segments_retired == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  push_log.RemoveRelogger(handle, /*changed_rows_left=*/false);
  std::lock_guard<std::mutex> lock(retired_mu);
  ASSERT_EQ(retired.size(), 1u);
  EXPECT_FALSE(retired[0].kept_complete);
  EXPECT_EQ(retired[0].kept, "");
  EXPECT_EQ(read_back, (std::vector<std::string>{std::string(40, 'a'), std::string(80, 'b')}));
}

// A relogger removed with no changed rows left (a table that closed with everything in RocksDB)
// leaves retiring going for the others; one removed with changed rows ends it.
TEST(PushLogTest, OnlyATableClosingWithChangedRowsEndsRetiring) {
  testing::TempDir dir;
  PushLogOptions options{dir.path()};
  options.segment_bytes = 100;
  auto log = PushLog::Create(options, 1, NoRecords());
  ASSERT_TRUE(log.ok());
  PushLog& push_log = **log;
  std::atomic<int> relogs{0};
  const uint64_t staying = push_log.AddRelogger([&relogs](uint64_t) {
    ++relogs;
    return Status::Ok();
  });
  const uint64_t clean = push_log.AddRelogger([](uint64_t) { return Status::Ok(); });
  push_log.RemoveRelogger(clean, /*changed_rows_left=*/false);
  const auto fill_and_wait_retired = [&](uint64_t retired) {
    ASSERT_TRUE(push_log.WaitDurable(push_log.Append(std::string(150, 'p'))).ok());
    for (int i = 0; i < 500 && push_log.stats().segments_retired < retired; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  fill_and_wait_retired(1);
  EXPECT_EQ(push_log.stats().segments_retired, 1u);
  EXPECT_EQ(relogs.load(), 1);

  const uint64_t dirty = push_log.AddRelogger([](uint64_t) { return Status::Ok(); });
  push_log.RemoveRelogger(dirty, /*changed_rows_left=*/true);
  ASSERT_TRUE(push_log.WaitDurable(push_log.Append(std::string(150, 'p'))).ok());
  ASSERT_TRUE(push_log.WaitDurable(push_log.Append(std::string(150, 'p'))).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(push_log.stats().segments_retired, 1u);
  EXPECT_TRUE(push_log.WaitForRoom().ok()) << "segments are no longer retired: nothing to wait for";
  EXPECT_EQ(push_log.stats().stalls, 0u) << "returning at once is not a wait";
  push_log.RemoveRelogger(staying, /*changed_rows_left=*/true);
}

TEST(PushLogTest, RetiredFilesAreReusedWithoutTheirOldRecordsPassingForNewOnes) {
  testing::TempDir dir;
  std::atomic<bool> retire_fails{false};
  PushLogOptions options{dir.path()};
  options.segment_bytes = 100;
  auto log = PushLog::Create(options, 1, [&](const std::vector<RetiredSegment>&) {
    return retire_fails ? Unavailable("kept for the test") : Status::Ok();
  });
  ASSERT_TRUE(log.ok());
  PushLog& push_log = **log;
  const uint64_t handle = push_log.AddRelogger([](uint64_t) { return Status::Ok(); });
  const auto push = [&](const std::string& payload) {
    ASSERT_TRUE(push_log.WaitDurable(push_log.Append(std::string_view(payload))).ok());
  };
  const auto wait_retired = [&](uint64_t segments) {
    for (int i = 0; i < 500 && push_log.stats().segments_retired < segments; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(push_log.stats().segments_retired, segments);
  };
  // Segment 1: a short record, then one that fills it; segment 2 starts, 1 is kept for reuse.
  push("x");
  push(std::string(150, 'a'));
  wait_retired(1);
  // Segment 2 likewise; segment 3 reuses segment 1's file, and segment 2 is kept for reuse.
  push("v");
  push(std::string(150, 'b'));
  wait_retired(2);
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir.path()) / "000000000002.recycle"));
  retire_fails = true;  // from now on every segment stays
  // In segment 3, "y" overwrites "x", then a record shorter than the 'a' one after it fills the
  // segment: the end-of-segment record keeps the replay from reading on into the rest of the 'a'
  // record, in a segment that is not the last.
  push("y");
  push(std::string(100, 'z'));
  // Segment 4 reuses segment 2's file: "w" overwrites "v", and segment 2's 'b' record after it
  // is intact, but must not be replayed as segment 4's.
  push("w");
  push_log.RemoveRelogger(handle, /*changed_rows_left=*/true);
  log->reset();

  const std::vector<std::string> expected = {"y", std::string(100, 'z'), "w"};
  EXPECT_EQ(ReplayAll(dir.path()), expected);
  ASSERT_TRUE(PushLog::RemoveSegments(dir.path()).ok());
  EXPECT_TRUE(Segments(dir.path()).empty()) << "the files kept for reuse go with the segments";
}

// While the first segment fills, a spare of zeros is written, and the second segment overwrites
// it: its records replay, and the zeros after them end it.
TEST(PushLogTest, TheSecondSegmentOverwritesASpareOfZerosWrittenWhileTheFirstFilled) {
  testing::TempDir dir;
  if (!DirectAppender::Open(dir.path() + "/probe", /*truncate=*/true).value()->direct()) {
    GTEST_SKIP() << "no direct I/O here: segments are written through the page cache, no spare";
  }
  std::filesystem::remove(dir.path() + "/probe");
  constexpr uint64_t kSegmentBytes = 1 << 20;
  PushLogOptions options{dir.path()};
  options.segment_bytes = kSegmentBytes;
  auto log = PushLog::Create(options, 1, NoRecords());
  ASSERT_TRUE(log.ok());
  PushLog& push_log = **log;
  const uint64_t handle = push_log.AddRelogger([](uint64_t) { return Status::Ok(); });
  std::vector<std::string> pushed;
  const auto push = [&](char fill, size_t bytes) {
    pushed.emplace_back(bytes, fill);
    ASSERT_TRUE(push_log.WaitDurable(push_log.Append(std::string_view(pushed.back()))).ok());
  };
  const std::filesystem::path spare = std::filesystem::path(dir.path()) / "000000000001.recycle";
  const uint64_t spare_bytes = kSegmentBytes + kSegmentBytes / 4;
  push('a', kSegmentBytes / 8);
  EXPECT_FALSE(std::filesystem::exists(spare)) << "an eighth of a segment asks for no spare";
  push('b', kSegmentBytes / 8);
  for (int i = 0; i < 500 && push_log.stats().spares_filled == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(push_log.stats().spares_filled, 1u);
  ASSERT_TRUE(std::filesystem::exists(spare));
  EXPECT_EQ(std::filesystem::file_size(spare), spare_bytes);
  // The rest of segment 1, then segment 2 in the spare's file.
  push('c', kSegmentBytes);
  EXPECT_FALSE(std::filesystem::exists(spare));
  const std::filesystem::path second = std::filesystem::path(dir.path()) / "000000000002.pushlog";
  ASSERT_TRUE(std::filesystem::exists(second));
  EXPECT_EQ(std::filesystem::file_size(second), spare_bytes) << "overwritten, not truncated";
  push('d', 1000);
  push('e', 3000);
  for (int i = 0; i < 500 && push_log.stats().segments_retired == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(push_log.stats().segments_retired, 1u);
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir.path()) / "000000000002.recycle"))
      << "segment 1 was kept as the next spare";
  EXPECT_EQ(push_log.stats().spares_filled, 1u);
  push_log.RemoveRelogger(handle, /*changed_rows_left=*/true);
  log->reset();
  // Segment 2 alone is left: its records, and none from the zeros after them.
  const std::vector<std::string> replayed = ReplayAll(dir.path());
  ASSERT_EQ(replayed.size(), 2u);
  EXPECT_TRUE(replayed[0] == pushed[3]) << "the first record of segment 2 differs";
  EXPECT_TRUE(replayed[1] == pushed[4]) << "the second record of segment 2 differs";
}

TEST(PushLogTest, PushesWaitWhileFullSegmentsWaitToBeRetiredAndFailOnceRetiringFailed) {
  testing::TempDir dir;
  std::mutex mu;
  std::condition_variable changed;
  bool release = false;
  bool fail = false;
  PushLogOptions options{dir.path()};
  options.segment_bytes = 100;
  auto log = PushLog::Create(options, 1, [&](const std::vector<RetiredSegment>&) {
    std::unique_lock<std::mutex> lock(mu);
    changed.wait_for(lock, std::chrono::seconds(20), [&] { return release || fail; });
    return fail ? Unavailable("disk full") : Status::Ok();
  });
  ASSERT_TRUE(log.ok());
  PushLog& push_log = **log;
  const uint64_t handle = push_log.AddRelogger([](uint64_t) { return Status::Ok(); });
  // Each push fills a segment; the first retirement is held up, so full segments pile up.
  for (size_t i = 0; i < PushLog::kMaxRetiring; ++i) {
    ASSERT_TRUE(push_log.WaitForRoom().ok());
    ASSERT_TRUE(push_log.WaitDurable(push_log.Append(std::string(150, 'p'))).ok());
  }
  std::atomic<bool> admitted{false};
  std::thread pusher([&] {
    EXPECT_TRUE(push_log.WaitForRoom().ok());
    admitted = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(admitted.load()) << "a push went on with the log full";
  EXPECT_EQ(push_log.stats().stalls, 1u);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  changed.notify_all();
  pusher.join();
  EXPECT_TRUE(admitted.load());
  // Retiring fails from now on: once the log is full again, pushes get the error.
  {
    std::lock_guard<std::mutex> lock(mu);
    release = false;
    fail = true;
  }
  changed.notify_all();
  Status waited;
  for (int i = 0; i < 4 * static_cast<int>(PushLog::kMaxRetiring) && waited.ok(); ++i) {
    waited = push_log.WaitForRoom();
    if (waited.ok()) waited = push_log.WaitDurable(push_log.Append(std::string(150, 'q')));
  }
  EXPECT_EQ(waited.code(), StatusCode::kUnavailable);
  EXPECT_NE(waited.message().find("disk full"), std::string::npos) << waited.ToString();
  push_log.RemoveRelogger(handle, /*changed_rows_left=*/true);
  EXPECT_TRUE(push_log.WaitForRoom().ok()) << "segments are no longer retired: nothing to wait for";
}

}  // namespace
}  // namespace ember::embedding
