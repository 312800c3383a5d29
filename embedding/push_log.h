// PushLog: the write-ahead log of a tiered server's pushes, with group commit.
//
// With durability ack or sync, a push is acknowledged only once its rows (with the records of the
// layers above, such as which request it was) are in this log. A push appends its batch while it
// holds the stripe locks of its rows (a move of its buffer, so the log orders the writes of a key
// as memory does), releases them, and waits until the log is written: pushes that arrive together
// share one writev() and, under sync, one fdatasync. The first waiter finds no write in progress
// and writes everything appended so far; the others wait for it, and each returns only once the
// write holding its own record has returned.
//
// The log is a directory of segment files NNN.pushlog, each a sequence of records:
//   payload bytes (u32, little-endian) | CRC-32C of the segment number (u64, little-endian) and
//   the payload (u32, common/crc32c.h) | payload
// where a payload is one batch of row and record writes (RowWrites::LogPayload), and a full
// segment ends with a record of size 0xffffffff and no payload. Logged rows are not written to
// RocksDB at push time: they stay changed in memory and reach RocksDB when evicted, which writes
// each hot row once however often it was pushed. Once segment_bytes of pushes went into the active
// segment, a new one starts and a background thread retires the old once the new one holds half
// a segment of pushes (or kMaxRetireDelay passed): every table appends to the new segment its
// changed rows held in memory whose last record is in the old one (the relog callbacks registered
// here: sequential writes, far cheaper than writing them to RocksDB; rows pushed meanwhile have
// newer records, which is what the delay is for), the store persists the records of the
// retired segments, and then they go. The log keeps those records in memory beside each segment
// (what an append names as `kept`), so that retiring does not read the segment back, unless they
// outgrow kept_bytes_limit. Every row a retired segment logged is then either logged
// again or in RocksDB (clean, or evicted and written back). Segments are written and read around
// the page cache (common/direct_file.h: a log is written once and read back only to retire or
// replay it, and appending through the page cache cost more CPU than the pushes themselves); the
// zeros that pad the last block written end a segment like the end of its file.
//
// New segments are spare files where there are any (NNN.recycle, numbered in the order they were
// made): their blocks are overwritten, where a direct write that allocates blocks took about
// twice as long (ext4, 0.7 MB writes: 0.81 ms against 0.44). The last two retired segments are
// kept as spares, and while the first segment fills (a quarter of it pushed, no spare and no
// retirement under way) the retiring thread writes a spare of zeros, so that a log writes at the
// speed of reused files from its second segment on, not from its fourth. What a reused file held
// before never passes for records of its new segment, whose number their checksums do not cover.
// RocksStore::Open replays the segments left by a killed process, in order, stopping where the
// records of the last segment stop being intact (a write that never returned, so its push was
// never acknowledged, or the old contents of a reused file), and then removes them with the
// spares.
//
// Thread-safety: every method may be called from many threads at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/direct_file.h"
#include "common/status.h"

namespace ember::embedding {

struct PushLogOptions {
  std::string dir;               // created when missing
  bool sync = false;             // fdatasync each group write (survives a machine crash)
  uint64_t segment_bytes = uint64_t{1} << 30;  // of pushes: then the segment is retired
  // Bytes of appends' `kept` held in memory per segment; beyond it the segment's are dropped and
  // its retirement reads it back instead.
  uint64_t kept_bytes_limit = uint64_t{64} << 20;
};

// A full segment handed to PushLog::Retire: its file, and the `kept` of its records in log order
// (complete, unless it outgrew PushLogOptions::kept_bytes_limit: then empty, and the file must be
// read for them).
struct RetiredSegment {
  uint64_t number = 0;
  std::string path;
  std::string kept;
  bool kept_complete = true;
};

class PushLog {
 public:
  // Where a record ends in the log: WaitDurable(ticket) returns once everything up to it is
  // written.
  using Ticket = uint64_t;
  // Persists what the segments hold that no table flush covers (the store's records, which their
  // appends kept); called by the retiring thread, oldest segment first, after the reloggers ran.
  using Retire = std::function<Status(const std::vector<RetiredSegment>& segments)>;

  // Starts a log in `options.dir`, whose segments must have been replayed and removed (see
  // Replay); new segments are numbered from `first_segment`.
  static Result<std::unique_ptr<PushLog>> Create(const PushLogOptions& options,
                                                 uint64_t first_segment, Retire retire);
  ~PushLog();  // stops the retiring thread; segments stay for the next Replay
  PushLog(const PushLog&) = delete;
  PushLog& operator=(const PushLog&) = delete;

  // Appends one record and returns its ticket. Cheap: call it under the locks that order the
  // writes (the payload is moved in, or copied from a view, and checksummed before the log's own
  // lock is taken; the group write joins that to its segment's checksum without reading the
  // payload again). A kRelog record (rows logged again while a segment retires) does not count
  // toward segment_bytes, so re-logging cannot retire segments by itself. `kept` is the part of
  // the payload that outlives the segment (see Retire), in the payload's encoding: the log hands
  // it to Retire with the segment the record was written to.
  enum class Origin { kPush, kRelog };
  Ticket Append(std::string&& payload, Origin origin = Origin::kPush, std::string kept = {});
  Ticket Append(std::string_view payload, Origin origin = Origin::kPush,
                std::string_view kept = {});
  // Blocks until the record of `ticket` is written (and fdatasynced under sync). An error of the
  // write is returned to every waiter of that write, and to every later one: a log that failed
  // to write stays failed.
  Status WaitDurable(Ticket ticket);
  // Blocks while kMaxRetiring full segments wait to be retired (pushes faster than the retiring
  // thread can relog and persist would otherwise grow the log, and the replay after a kill,
  // without bound); each wait is counted in Stats::stalls. Call it before taking the locks a
  // push appends under: retiring takes them. Returns Unavailable naming the error once retiring
  // failed and the log is full, and at once when segments are no longer retired (a table closed
  // with changed rows).
  static constexpr size_t kMaxRetiring = 2;
  Status WaitForRoom();
  // WaitDurable for everything appended so far. A row logged here must not reach RocksDB before
  // its record is written (a kill between would leave the row changed by a push that was never
  // acknowledged, which its client sends again): write-backs call this first.
  Status WaitAllAppended();

  // The number of the segment appends go to now (a record appended later goes to it or a later
  // one); tables note it with each row they log, for their reloggers.
  uint64_t active_segment() const { return active_segment_.load(std::memory_order_acquire); }

  // Registers a table's re-logging of its changed rows held in memory whose last record may be in
  // a segment numbered `through` or lower (Append with kRelog, then WaitDurable), run before
  // segments up to `through` are deleted; returns a handle for RemoveRelogger, which
  // waits for a run of it in progress. A table closing with changed rows that may be only in the
  // log (`changed_rows_left`) ends retiring: no segment goes any more, they stay for the next
  // start's replay. One closing with none (all written to RocksDB, or never pushed) leaves
  // retiring going for the other tables.
  using Relog = std::function<Status(uint64_t through)>;
  uint64_t AddRelogger(Relog relog);
  // A full segment waits to be retired until the active one holds 1/kRetireDelayDivisor of
  // segment_bytes of pushes, kMaxRetiring full segments wait, or kMaxRetireDelay passed.
  static constexpr uint64_t kRetireDelayDivisor = 2;
  static constexpr std::chrono::seconds kMaxRetireDelay{2};
  void RemoveRelogger(uint64_t handle, bool changed_rows_left);

  // Bytes written, group writes done, and records appended so far (for reports and tests).
  struct Stats {
    uint64_t bytes = 0;
    uint64_t writes = 0;
    uint64_t records = 0;
    uint64_t relogged_bytes = 0;  // of bytes, appended by reloggers
    uint64_t segments_retired = 0;
    uint64_t stalls = 0;  // WaitForRoom calls that waited for a retirement
    uint64_t spares_filled = 0;  // spare files of zeros written
    double write_seconds = 0;  // in group writes (with their fdatasync under sync)
    uint64_t waits = 0;        // WaitDurable calls that found their record not yet written
    double wait_seconds = 0;   // ... and how long they waited, together
  };
  Stats stats() const;

  // Calls apply(payload) for each record of the segments in `dir` (files named NNN.pushlog), in
  // order. A torn or corrupt record ends the last segment (logged as a warning); in any other
  // segment it is DataLoss naming the file and offset. Returns the number after the highest
  // segment found (1 for none).
  static Result<uint64_t> Replay(const std::string& dir,
                                 const std::function<Status(std::string_view payload)>& apply);
  // Deletes the segments of `dir` (after a replay made them redundant) and the files kept for reuse.
  static Status RemoveSegments(const std::string& dir);
  // The checksum a record of `payload` carries in segment `segment` (see the format above).
  static uint32_t RecordChecksum(uint64_t segment, std::string_view payload);
  // Calls visit(payload) for each intact record of one segment file.
  static Status ReadSegment(const std::string& path,
                            const std::function<Status(std::string_view payload)>& visit);

  // A record appended, not yet written: its payload, the payload's Crc32c, and what it keeps.
  struct PendingRecord {
    std::string payload;
    uint32_t crc = 0;
    std::string kept;
  };

 private:
  explicit PushLog(PushLogOptions options, Retire retire);
  Status OpenSegment(uint64_t number);  // under mu_
  // WaitDurable's loop, under `lock` (of mu_), which leading a group write unlocks meanwhile.
  Status WaitDurableLocked(Ticket ticket, std::unique_lock<std::mutex>& lock);
  void RetireLoop();
  // Whether the full segments are due to be retired (see kRetireDelayDivisor), under mu_.
  bool RetirementDue() const;
  // Adds the `kept` of records just written to the active segment's (by the writer, which alone
  // changes it: OpenSegment also runs only in a group write).
  void KeepForSegment(const std::vector<PendingRecord>& written);
  // Renames a retired segment into a spare when there is room, else deletes it.
  void KeepForReuseOrRemove(const std::string& path);
  // The path of the next spare file (under mu_).
  std::string NextSparePath();
  // Writes the spare of zeros that spare_wanted_ asks for, on the retiring thread, a chunk at a
  // time, under `lock` (of mu_), which it unlocks while writing; returns early, to go on later,
  // when a retirement is waiting or the log stops.
  void FillSpare(std::unique_lock<std::mutex>& lock);

  const PushLogOptions options_;
  const Retire retire_;

  mutable std::mutex mu_;
  std::condition_variable written_;
  std::vector<PendingRecord> pending_;  // appended since the last write began
  Ticket appended_ = 0;          // bytes appended, ever
  Ticket durable_ = 0;           // bytes written, ever
  bool writing_ = false;         // a waiter is writing
  Status failed_;                // the first write error, sticky
  std::unique_ptr<DirectAppender> file_;  // the active segment
  uint64_t segment_number_ = 0;
  std::atomic<uint64_t> active_segment_{0};  // segment_number_, read without the lock
  std::chrono::steady_clock::time_point switched_at_;  // when segment_number_ began, under mu_
  uint64_t segment_pushed_ = 0;   // push bytes appended to the active segment
  uint64_t pending_pushed_ = 0;   // push bytes in pending_
  // The `kept` of the records written to the active segment, in order; changed by the writer.
  std::string segment_kept_;
  bool segment_kept_complete_ = true;
  Stats stats_;

  std::vector<RetiredSegment> retired_;  // under mu_
  std::vector<std::string> spares_;  // files ready to become segments, under mu_
  uint64_t next_spare_ = 1;          // under mu_
  bool spare_wanted_ = false;        // under mu_: the retiring thread is to fill a spare
  bool spare_failed_ = false;        // under mu_: filling one failed, none is tried again
  std::unique_ptr<DirectAppender> filling_;  // the spare being filled, by the retiring thread
  std::condition_variable room_;       // a segment was retired, or retiring failed or ended
  Status retire_error_;                // of the last retirement tried, under mu_
  bool retiring_ended_ = false;        // under mu_
  bool stopping_ = false;
  std::condition_variable retire_wanted_;
  std::thread retirer_;

  std::mutex reloggers_mu_;  // held while reloggers run
  std::map<uint64_t, Relog> reloggers_;
  bool retiring_stopped_ = false;  // under reloggers_mu_
  uint64_t next_relogger_ = 1;
};

}  // namespace ember::embedding
