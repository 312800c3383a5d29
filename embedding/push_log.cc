// PushLog implementation: segment files, the group commit, and the retiring thread.
#include "embedding/push_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>

#include <spdlog/spdlog.h>

#include "common/crc32c.h"
#include "common/direct_file.h"
#include "common/file_io.h"

namespace ember::embedding {
namespace {

constexpr std::string_view kSuffix = ".pushlog";
// A spare file, ready to become a segment: NNN.recycle, numbered in the order spares were made.
constexpr std::string_view kSpareSuffix = ".recycle";
// Spares kept at most; retired segments beyond them are deleted.
constexpr size_t kMaxSpares = 2;
// A spare of zeros holds segment_bytes and a 1/kSpareSlackDivisor more: a segment also holds what
// was relogged into it, and the group write that fills it ends past segment_bytes.
constexpr uint64_t kSpareSlackDivisor = 4;
// A spare of zeros is wanted once 1/kSpareWantedDivisor of segment_bytes is pushed to a segment
// while there is no spare.
constexpr uint64_t kSpareWantedDivisor = 4;
// Zeros written to a spare per call (between checks for a retirement waiting or the log stopping).
constexpr uint64_t kSpareChunkBytes = uint64_t{4} << 20;
constexpr size_t kHeaderBytes = 8;
// A record bigger than this is corrupt (a push is bounded far below it by the message limits).
constexpr uint32_t kMaxPayloadBytes = uint32_t{1} << 30;
// The size field of the record that closes a segment before the next one starts.
constexpr uint32_t kEndOfSegment = ~uint32_t{0};

std::string NumberedPath(const std::string& dir, uint64_t number, std::string_view suffix) {
  char name[32];
  std::snprintf(name, sizeof(name), "%012llu", static_cast<unsigned long long>(number));
  return (std::filesystem::path(dir) / (std::string(name) + std::string(suffix))).string();
}

std::string SegmentPath(const std::string& dir, uint64_t number) {
  return NumberedPath(dir, number, kSuffix);
}

// The number in a file name of digits and `suffix`, or nothing.
std::optional<uint64_t> NumberOf(const std::filesystem::path& path, std::string_view suffix) {
  const std::string name = path.filename().string();
  if (name.size() <= suffix.size() || !name.ends_with(suffix)) return std::nullopt;
  const std::string digits = name.substr(0, name.size() - suffix.size());
  if (digits.size() > 19 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoull(digits);
}

// A record's checksum covers its segment's number, so that the records a reused segment file
// still holds from its previous life never pass for records of the new one.
uint32_t SegmentCrc(uint64_t segment) {
  char number[8];
  for (int i = 0; i < 8; ++i) number[i] = static_cast<char>((segment >> (8 * i)) & 0xff);
  return Crc32c(number, sizeof(number));
}

uint32_t RecordCrc(uint64_t segment, const char* payload, size_t size) {
  return Crc32c(payload, size, SegmentCrc(segment));
}

// The files of `dir` named NNN`suffix` (segments by default), by number.
Result<std::map<uint64_t, std::string>> ListSegments(const std::string& dir,
                                                     std::string_view suffix = kSuffix) {
  std::map<uint64_t, std::string> segments;
  std::error_code error;
  if (!std::filesystem::exists(dir, error)) return segments;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (const auto number = NumberOf(entry.path(), suffix)) {
      segments[*number] = entry.path().string();
    }
  }
  if (error) return Unavailable("listing push log '" + dir + "': " + error.message());
  return segments;
}

void PutLittleEndian(uint32_t value, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

uint32_t GetLittleEndian(const char* in) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(in[i]);
  return value;
}

Status Errno(const std::string& what) {
  return Unavailable(what + ": " + std::strerror(errno));
}

// Appends each payload of `records` as a record (its header, then the payload).
Status WriteRecords(DirectAppender& file, uint64_t segment,
                    const std::vector<PushLog::PendingRecord>& records) {
  std::vector<std::array<char, kHeaderBytes>> headers(records.size());
  std::vector<std::string_view> pieces;
  pieces.reserve(2 * records.size());
  const uint32_t segment_crc = SegmentCrc(segment);
  for (size_t r = 0; r < records.size(); ++r) {
    const std::string& payload = records[r].payload;
    PutLittleEndian(static_cast<uint32_t>(payload.size()), headers[r].data());
    PutLittleEndian(Crc32cCombine(segment_crc, records[r].crc, payload.size()),
                    headers[r].data() + 4);
    pieces.emplace_back(headers[r].data(), kHeaderBytes);
    pieces.emplace_back(payload);
  }
  return file.Append(pieces);
}

// Makes the entries of `dir` (a new segment) durable.
Status SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("opening push log directory '" + dir + "'");
  const int synced = ::fsync(fd);
  ::close(fd);
  return synced == 0 ? Status::Ok() : Errno("syncing push log directory '" + dir + "'");
}

// Closes a segment: the record after its last one says that it ends there (what follows in a
// reused file is its previous life's).
Status WriteEndOfSegment(DirectAppender& file, uint64_t segment) {
  char header[kHeaderBytes];
  PutLittleEndian(kEndOfSegment, header);
  PutLittleEndian(RecordCrc(segment, nullptr, 0), header + 4);
  const std::string_view piece(header, kHeaderBytes);
  return file.Append(std::span<const std::string_view>(&piece, 1));
}

// Reads the records of one segment: visit(payload) for each intact one. A segment ends cleanly at
// its end-of-segment record, at the end of the file, or, when it is the `last` (the one being
// written when the process stopped), at the zeros that pad the last block written; otherwise
// `offset` is where the records stop being intact: a torn write or, in a reused file, what the
// previous segment left there. (A full segment has its end record: zeros before it are damage.)
struct SegmentEnd {
  bool clean = true;
  uint64_t offset = 0;
};
Result<SegmentEnd> ScanSegment(const std::string& path, bool last,
                               const std::function<Status(std::string_view)>& visit) {
  const std::optional<uint64_t> segment = NumberOf(path, kSuffix);
  if (!segment) return InvalidArgument("'" + path + "' is not named as a push log segment");
  auto opened = DirectReader::Open(path);
  if (!opened.ok()) {
    return Unavailable("cannot open push log segment '" + path + "': " +
                       std::string(opened.status().message()));
  }
  DirectReader& in = **opened;
  // An empty record whose checksum is 0 could not be told from padding (it never is in
  // practice); then padding is not taken for the end.
  const bool zeros_end = last && RecordCrc(*segment, nullptr, 0) != 0;
  SegmentEnd end;
  std::string payload;
  char header[kHeaderBytes];
  while (true) {
    ASSIGN_OR_RETURN(const size_t got, in.Read(header, kHeaderBytes));
    if (got == 0) return end;
    if (got != kHeaderBytes) break;
    const uint32_t size = GetLittleEndian(header);
    const uint32_t crc = GetLittleEndian(header + 4);
    if (size == kEndOfSegment && crc == RecordCrc(*segment, nullptr, 0)) return end;
    if (size == 0 && crc == 0 && zeros_end) return end;
    if (size > kMaxPayloadBytes) break;
    payload.resize(size);
    ASSIGN_OR_RETURN(const size_t read, in.Read(payload.data(), size));
    if (read != size) break;
    if (RecordCrc(*segment, payload.data(), payload.size()) != crc) break;
    RETURN_IF_ERROR(visit(payload));
    end.offset += kHeaderBytes + size;
  }
  end.clean = false;
  return end;
}

}  // namespace

PushLog::PushLog(PushLogOptions options, Retire retire)
    : options_(std::move(options)), retire_(std::move(retire)) {}

Result<std::unique_ptr<PushLog>> PushLog::Create(const PushLogOptions& options,
                                                 uint64_t first_segment, Retire retire) {
  RETURN_IF_ERROR(MakeDirectories(options.dir));
  std::unique_ptr<PushLog> log(new PushLog(options, std::move(retire)));
  {
    std::lock_guard<std::mutex> lock(log->mu_);
    RETURN_IF_ERROR(log->OpenSegment(first_segment));
  }
  log->retirer_ = std::thread([raw = log.get()] { raw->RetireLoop(); });
  return log;
}

PushLog::~PushLog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  retire_wanted_.notify_all();
  room_.notify_all();
  if (retirer_.joinable()) retirer_.join();
  std::unique_lock<std::mutex> lock(mu_);
  written_.wait(lock, [&] { return !writing_; });
}

Status PushLog::OpenSegment(uint64_t number) {
  if (file_) {
    // The full segment says where it ends before the next one exists (durably under sync): a
    // replay must not read past its last record into what a reused file held before.
    RETURN_IF_ERROR(WriteEndOfSegment(*file_, segment_number_));
    if (options_.sync) RETURN_IF_ERROR(file_->Sync());
  }
  const std::string path = SegmentPath(options_.dir, number);
  bool reused = false;
  if (!spares_.empty()) {
    // Overwriting a file's blocks spares the filesystem allocating new ones.
    const std::string spare = std::move(spares_.back());
    spares_.pop_back();
    if (::rename(spare.c_str(), path.c_str()) == 0) {
      reused = true;
    } else {
      spdlog::warn("push log: cannot reuse '{}': {}", spare, std::strerror(errno));
      std::error_code ignored;
      std::filesystem::remove(spare, ignored);
    }
  }
  auto opened = DirectAppender::Open(path, /*truncate=*/!reused);
  if (!opened.ok()) {
    return Unavailable("creating push log segment: " + std::string(opened.status().message()));
  }
  if (options_.sync) RETURN_IF_ERROR(SyncDirectory(options_.dir));
  if (file_) {
    retired_.push_back(
        {segment_number_, file_->path(), std::move(segment_kept_), segment_kept_complete_});
    retire_wanted_.notify_all();
  }
  segment_kept_.clear();
  segment_kept_complete_ = true;
  file_ = std::move(*opened);
  segment_number_ = number;
  active_segment_.store(number, std::memory_order_release);
  switched_at_ = std::chrono::steady_clock::now();
  segment_pushed_ = 0;
  return Status::Ok();
}

PushLog::Ticket PushLog::Append(std::string_view payload, Origin origin, std::string_view kept) {
  return Append(std::string(payload), origin, std::string(kept));
}

PushLog::Ticket PushLog::Append(std::string&& payload, Origin origin, std::string kept) {
  const uint64_t bytes = kHeaderBytes + payload.size();
  // The payload's own checksum, before the lock: appenders compute theirs at once, and the group
  // write only joins each to its segment's (Crc32cCombine), without a pass over the bytes.
  const uint32_t crc = Crc32c(payload.data(), payload.size());
  std::lock_guard<std::mutex> lock(mu_);
  // A failed log writes nothing more: the ticket waits for nothing but the error.
  if (!failed_.ok()) return durable_ + 1;
  pending_.push_back({std::move(payload), crc, std::move(kept)});
  appended_ += bytes;
  ++stats_.records;
  if (origin == Origin::kPush) {
    pending_pushed_ += bytes;
  } else {
    stats_.relogged_bytes += bytes;
  }
  return appended_;
}

Status PushLog::WaitDurable(Ticket ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  if (durable_ >= ticket) return Status::Ok();
  const auto start = std::chrono::steady_clock::now();
  Status status = WaitDurableLocked(ticket, lock);
  ++stats_.waits;
  stats_.wait_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return status;
}

Status PushLog::WaitDurableLocked(Ticket ticket, std::unique_lock<std::mutex>& lock) {
  while (durable_ < ticket) {
    if (!failed_.ok()) return failed_;
    if (writing_) {
      written_.wait(lock);
      continue;
    }
    // Lead a group write of everything appended so far.
    writing_ = true;
    std::vector<PendingRecord> batch;
    batch.swap(pending_);
    const Ticket target = appended_;
    const uint64_t pushed = pending_pushed_;
    pending_pushed_ = 0;
    // The active segment changes only here, by the writer, so it stays while this one writes.
    DirectAppender& file = *file_;
    const uint64_t segment = segment_number_;
    const uint64_t bytes = target - durable_;
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    Status status = WriteRecords(file, segment, batch);
    if (status.ok() && options_.sync) status = file.Sync();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (status.ok()) KeepForSegment(batch);
    batch.clear();
    lock.lock();
    stats_.write_seconds += seconds;
    writing_ = false;
    if (status.ok()) {
      durable_ = target;
      segment_pushed_ += pushed;
      stats_.bytes += bytes;
      ++stats_.writes;
      if (segment_pushed_ >= options_.segment_bytes) {
        status = OpenSegment(segment_number_ + 1);
      } else if (!retired_.empty() &&
                 segment_pushed_ >= options_.segment_bytes / kRetireDelayDivisor) {
        retire_wanted_.notify_all();
      } else if (segment_pushed_ >= options_.segment_bytes / kSpareWantedDivisor &&
                 spares_.empty() && retired_.empty() && !spare_wanted_ && !spare_failed_ &&
                 file.direct()) {
        // No spare, and no retirement that will make one: the next segment would allocate.
        spare_wanted_ = true;
        retire_wanted_.notify_all();
      }
    }
    if (!status.ok() && failed_.ok()) {
      failed_ = status;
      pending_.clear();  // never written: the pushes appended meanwhile get the error
    }
    // Keep the list's capacity for the next group.
    if (pending_.empty()) pending_.swap(batch);
    written_.notify_all();
  }
  return Status::Ok();
}

Status PushLog::WaitForRoom() {
  std::unique_lock<std::mutex> lock(mu_);
  const auto room = [&] { return retired_.size() < kMaxRetiring; };
  if (room() || stopping_ || retiring_ended_) return Status::Ok();
  ++stats_.stalls;
  room_.wait(lock, [&] { return room() || stopping_ || retiring_ended_ || !retire_error_.ok(); });
  if (room() || stopping_ || retiring_ended_) return Status::Ok();
  return Unavailable("push log '" + options_.dir + "': " + std::to_string(retired_.size()) +
                     " full segments wait to be retired, and retiring them failed: " +
                     retire_error_.ToString());
}

Status PushLog::WaitAllAppended() {
  Ticket ticket;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ticket = appended_;
  }
  return WaitDurable(ticket);
}

uint64_t PushLog::AddRelogger(Relog relog) {
  std::lock_guard<std::mutex> lock(reloggers_mu_);
  const uint64_t handle = next_relogger_++;
  reloggers_.emplace(handle, std::move(relog));
  return handle;
}

void PushLog::RemoveRelogger(uint64_t handle, bool changed_rows_left) {
  {
    std::lock_guard<std::mutex> lock(reloggers_mu_);
    reloggers_.erase(handle);
    if (!changed_rows_left) return;
    // The table's changed rows may now be only in the log: no segment may go any more.
    retiring_stopped_ = true;
  }
  std::lock_guard<std::mutex> lock(mu_);
  retiring_ended_ = true;
  room_.notify_all();
}

PushLog::Stats PushLog::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void PushLog::KeepForSegment(const std::vector<PendingRecord>& written) {
  if (!segment_kept_complete_) return;
  for (const PendingRecord& record : written) {
    if (segment_kept_.size() + record.kept.size() > options_.kept_bytes_limit) {
      // Retiring this segment reads it back for its records instead.
      segment_kept_complete_ = false;
      std::string().swap(segment_kept_);
      return;
    }
    segment_kept_ += record.kept;
  }
}

std::string PushLog::NextSparePath() {
  return NumberedPath(options_.dir, next_spare_++, kSpareSuffix);
}

void PushLog::KeepForReuseOrRemove(const std::string& path) {
  std::string spare;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (spares_.size() < kMaxSpares) spare = NextSparePath();
  }
  if (!spare.empty() && ::rename(path.c_str(), spare.c_str()) == 0) {
    std::lock_guard<std::mutex> lock(mu_);
    spares_.push_back(std::move(spare));
    return;
  }
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
}

void PushLog::FillSpare(std::unique_lock<std::mutex>& lock) {
  const uint64_t target = options_.segment_bytes + options_.segment_bytes / kSpareSlackDivisor;
  const std::string path = filling_ != nullptr ? filling_->path() : NextSparePath();
  lock.unlock();
  Status status;
  if (filling_ == nullptr) {
    auto opened = DirectAppender::Open(path, /*truncate=*/true);
    if (opened.ok()) {
      filling_ = std::move(*opened);
    } else {
      status = opened.status();
    }
  }
  while (status.ok() && filling_->size() < target) {
    status = filling_->AppendZeros(std::min(kSpareChunkBytes, target - filling_->size()));
    std::lock_guard<std::mutex> check(mu_);
    if (stopping_ || RetirementDue()) break;
  }
  const bool done = status.ok() && filling_->size() >= target;
  if (status.ok() && !done) {
    lock.lock();
    return;  // goes on after the retirement
  }
  filling_.reset();
  if (!status.ok()) {
    spdlog::warn("push log: no spare file, new segments allocate their blocks: {}",
                 status.ToString());
  }
  lock.lock();
  spare_wanted_ = false;
  if (done) {
    ++stats_.spares_filled;
    if (spares_.size() < kMaxSpares) {
      spares_.push_back(path);
      return;
    }
  } else {
    spare_failed_ = true;
  }
  lock.unlock();
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  lock.lock();
}

bool PushLog::RetirementDue() const {
  if (retired_.empty()) return false;
  return retired_.size() >= kMaxRetiring ||
         segment_pushed_ >= options_.segment_bytes / kRetireDelayDivisor ||
         std::chrono::steady_clock::now() - switched_at_ >= kMaxRetireDelay;
}

void PushLog::RetireLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    const auto wanted = [&] { return stopping_ || RetirementDue() || spare_wanted_; };
    if (retired_.empty()) {
      // A full segment wakes it too, to wait for it with a deadline.
      retire_wanted_.wait(lock, [&] { return wanted() || !retired_.empty(); });
    } else {
      retire_wanted_.wait_until(lock, switched_at_ + kMaxRetireDelay, wanted);
    }
    if (stopping_) return;
    if (!RetirementDue()) {
      if (spare_wanted_) FillSpare(lock);
      continue;
    }
    // Moved out while they retire (appenders need the lock meanwhile), and back if that fails.
    std::vector<RetiredSegment> segments = std::move(retired_);
    retired_.assign(segments.size(), RetiredSegment{});
    lock.unlock();
    Status status;
    {
      std::lock_guard<std::mutex> relogging(reloggers_mu_);
      if (retiring_stopped_) {  // segments stay for the next start's replay
        std::lock_guard<std::mutex> restore(mu_);
        std::move(segments.begin(), segments.end(), retired_.begin());
        return;
      }
      for (const auto& [handle, relog] : reloggers_) {
        status = relog(segments.back().number);
        if (!status.ok()) break;
      }
    }
    if (status.ok()) status = retire_(segments);
    if (status.ok()) {
      for (const RetiredSegment& segment : segments) KeepForReuseOrRemove(segment.path);
    } else {
      spdlog::warn("push log: keeping {} full segments for now: {}", segments.size(),
                   status.ToString());
    }
    lock.lock();
    retire_error_ = status;
    room_.notify_all();
    if (status.ok()) {
      retired_.erase(retired_.begin(), retired_.begin() + segments.size());
      stats_.segments_retired += segments.size();
    } else {
      std::move(segments.begin(), segments.end(), retired_.begin());
      // Try again after the next segment fills, or at the next start-up's replay.
      retire_wanted_.wait_for(lock, std::chrono::seconds(5), [&] { return stopping_; });
      if (stopping_) return;
    }
  }
}

Result<uint64_t> PushLog::Replay(const std::string& dir,
                                 const std::function<Status(std::string_view payload)>& apply) {
  ASSIGN_OR_RETURN(auto segments, ListSegments(dir));
  uint64_t next = 1;
  for (auto it = segments.begin(); it != segments.end(); ++it) {
    const auto& [number, path] = *it;
    ASSIGN_OR_RETURN(SegmentEnd end, ScanSegment(path, std::next(it) == segments.end(), apply));
    next = number + 1;
    if (end.clean) continue;
    if (std::next(it) != segments.end()) {
      return DataLoss("push log segment '" + path + "' is damaged at byte " +
                      std::to_string(end.offset) + ", before the last segment");
    }
    spdlog::warn("push log: '{}' replayed up to byte {}, where its intact records end (what "
                 "follows is a torn write of a push never acknowledged, or what a reused file "
                 "held before)",
                 path, end.offset);
  }
  return next;
}

Status PushLog::RemoveSegments(const std::string& dir) {
  // Files kept for reuse too: the next log numbers its segments from 1 again if it finds none,
  // and a reused file must never hold records of a number it takes.
  for (std::string_view suffix : {kSuffix, kSpareSuffix}) {
    ASSIGN_OR_RETURN(auto files, ListSegments(dir, suffix));
    for (const auto& [number, path] : files) {
      std::error_code error;
      if (!std::filesystem::remove(path, error) && error) {
        return Unavailable("removing push log file '" + path + "': " + error.message());
      }
    }
  }
  return Status::Ok();
}

uint32_t PushLog::RecordChecksum(uint64_t segment, std::string_view payload) {
  return RecordCrc(segment, payload.data(), payload.size());
}

Status PushLog::ReadSegment(const std::string& path,
                            const std::function<Status(std::string_view payload)>& visit) {
  return ScanSegment(path, /*last=*/false, visit).status();
}

}  // namespace ember::embedding
