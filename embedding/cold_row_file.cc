// ColdRowFile: the mapped file of buckets, and finding, storing and forgetting rows in it.
#include "embedding/cold_row_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/hash.h"

namespace ember::embedding {
namespace {

// A bucket's slots fit about one page, tags first: a lookup reads the tags' few cache lines and
// then one row.
constexpr uint64_t kBucketTargetBytes = 4096;
constexpr uint32_t kMinSlotsPerBucket = 4;
constexpr uint32_t kMaxSlotsPerBucket = 255;  // next_replaced_ is a byte
// Zeros are written a chunk of about this many bytes at a time (whole buckets), and this many
// before Create returns.
constexpr uint64_t kZeroChunkBytes = uint64_t{1} << 20;
constexpr uint64_t kZeroedAtCreateBytes = uint64_t{64} << 20;

std::string ErrnoText(int error) { return std::strerror(error); }

}  // namespace

uint32_t ColdRowFile::SlotsPerBucket(uint32_t floats_per_row) {
  const uint64_t slot_bytes = kTagBytes + uint64_t{floats_per_row} * sizeof(float);
  return static_cast<uint32_t>(std::clamp<uint64_t>(kBucketTargetBytes / slot_bytes,
                                                    kMinSlotsPerBucket, kMaxSlotsPerBucket));
}

uint64_t ColdRowFile::BucketBytes(uint32_t floats_per_row) {
  const uint64_t slots = SlotsPerBucket(floats_per_row);
  const uint64_t bytes = slots * (kTagBytes + uint64_t{floats_per_row} * sizeof(float));
  return (bytes + 63) / 64 * 64;
}

ColdRowFile::ColdRowFile(uint32_t floats_per_row, uint32_t num_partitions, uint64_t capacity_bytes)
    : floats_per_row_(floats_per_row),
      num_partitions_(num_partitions),
      slots_per_bucket_(SlotsPerBucket(floats_per_row)),
      bucket_bytes_(BucketBytes(floats_per_row)),
      num_buckets_(std::max<uint64_t>(1, capacity_bytes / BucketBytes(floats_per_row))),
      file_bytes_(num_buckets_ * bucket_bytes_),
      buckets_per_chunk_(std::max<uint64_t>(1, kZeroChunkBytes / bucket_bytes_)),
      num_chunks_((num_buckets_ + buckets_per_chunk_ - 1) / buckets_per_chunk_),
      generations_(std::make_unique<std::atomic<uint32_t>[]>(num_partitions)),
      next_replaced_(std::make_unique<uint8_t[]>(num_buckets_)),
      locks_(std::make_unique<BucketLock[]>(kLocks)),
      chunk_ready_(std::make_unique<std::atomic<bool>[]>(num_chunks_)) {
  for (uint32_t p = 0; p < num_partitions; ++p) generations_[p].store(1);
}

Result<std::unique_ptr<ColdRowFile>> ColdRowFile::Create(const std::string& dir,
                                                         uint32_t floats_per_row,
                                                         uint32_t num_partitions,
                                                         uint64_t capacity_bytes) {
  if (floats_per_row == 0 || num_partitions == 0) {
    return InvalidArgument("a cold row file needs rows of at least one float and a partition");
  }
  std::unique_ptr<ColdRowFile> file(
      new ColdRowFile(floats_per_row, num_partitions, capacity_bytes));
  const std::string path = (std::filesystem::path(dir) / "ember-cold-rows").string();
  file->fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (file->fd_ < 0 && errno == EEXIST) {
    // Left by a process that died between creating and unlinking it: no one else uses it.
    unlink(path.c_str());
    file->fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  }
  if (file->fd_ < 0) {
    return Unavailable("cannot create cold row file '" + path + "': " + ErrnoText(errno));
  }
  unlink(path.c_str());
  const int reserved = posix_fallocate(file->fd_, 0, static_cast<off_t>(file->file_bytes_));
  if (reserved != 0) {
    return Unavailable("cannot reserve " + std::to_string(file->file_bytes_) +
                       " bytes for cold row file '" + path + "': " + ErrnoText(reserved));
  }
  void* mapped = mmap(nullptr, file->file_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, file->fd_, 0);
  if (mapped == MAP_FAILED) {
    return Unavailable("cannot map cold row file '" + path + "': " + ErrnoText(errno));
  }
  file->base_ = static_cast<char*>(mapped);
  // Buckets are read at random: read-ahead would only bring in pages no one asked for.
  madvise(mapped, file->file_bytes_, MADV_RANDOM);
  RETURN_IF_ERROR(file->ZeroChunks().WithContext("zeroing cold row file '" + path + "'"));
  return file;
}

Status ColdRowFile::ZeroChunk(uint64_t chunk) {
  static const std::vector<char> zeros(kZeroChunkBytes, 0);
  const uint64_t begin = chunk * buckets_per_chunk_ * bucket_bytes_;
  const uint64_t end = std::min(file_bytes_, begin + buckets_per_chunk_ * bucket_bytes_);
  for (uint64_t at = begin; at < end;) {
    const ssize_t written = pwrite(fd_, zeros.data(), std::min<uint64_t>(end - at, zeros.size()),
                                   static_cast<off_t>(at));
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return Unavailable(written < 0 ? ErrnoText(errno) : "nothing written");
    at += static_cast<uint64_t>(written);
  }
  chunk_ready_[chunk].store(true, std::memory_order_release);
  return Status::Ok();
}

Status ColdRowFile::ZeroChunks() {
  const uint64_t chunk_bytes = buckets_per_chunk_ * bucket_bytes_;
  uint64_t chunk = 0;
  for (; chunk < num_chunks_ && chunk * chunk_bytes < kZeroedAtCreateBytes; ++chunk) {
    RETURN_IF_ERROR(ZeroChunk(chunk));
  }
  if (chunk == num_chunks_) return Status::Ok();
  // The rest beside the table's work. A chunk that cannot be zeroed (and those after it) stays
  // without rows: its keys are read from RocksDB.
  zeroer_ = std::thread([this, chunk] {
    for (uint64_t c = chunk; c < num_chunks_ && !stop_zeroing_.load(); ++c) {
      if (!ZeroChunk(c).ok()) return;
    }
  });
  return Status::Ok();
}

ColdRowFile::~ColdRowFile() {
  stop_zeroing_.store(true);
  if (zeroer_.joinable()) zeroer_.join();
  if (base_ != nullptr) munmap(base_, file_bytes_);
  if (fd_ >= 0) close(fd_);
}

uint64_t ColdRowFile::BucketOf(uint64_t key) const {
  // A hash of its own, independent of the one that chose the key's partition.
  const unsigned __int128 wide =
      static_cast<unsigned __int128>(Mix64(key ^ 0x5bd1e9955bd1e995ULL)) * num_buckets_;
  return static_cast<uint64_t>(wide >> 64);
}

ColdRowFile::Tag* ColdRowFile::TagsOf(uint64_t bucket) const {
  return reinterpret_cast<Tag*>(base_ + bucket * bucket_bytes_);
}

float* ColdRowFile::RowOf(uint64_t bucket, uint32_t slot) const {
  char* rows = base_ + bucket * bucket_bytes_ + uint64_t{slots_per_bucket_} * sizeof(Tag);
  return reinterpret_cast<float*>(rows) + uint64_t{slot} * floats_per_row_;
}

void ColdRowFile::Prefetch(uint64_t key) const {
  const char* tags = reinterpret_cast<const char*>(TagsOf(BucketOf(key)));
  for (uint64_t offset = 0; offset < uint64_t{slots_per_bucket_} * sizeof(Tag); offset += 64) {
    __builtin_prefetch(tags + offset);
  }
}

uint32_t ColdRowFile::SlotOf(uint64_t bucket, uint32_t partition, uint64_t key) const {
  const uint32_t generation = Generation(partition);
  const Tag* tags = TagsOf(bucket);
  for (uint32_t slot = 0; slot < slots_per_bucket_; ++slot) {
    const Tag& tag = tags[slot];
    if (tag.key != key || tag.partition != partition || tag.generation == 0) continue;
    return (tag.generation & kGenerationMask) == generation ? slot : slots_per_bucket_;
  }
  return slots_per_bucket_;
}

bool ColdRowFile::Find(uint32_t partition, uint64_t key, float* out, bool* changed) const {
  if (partition >= num_partitions_) return false;
  const uint64_t bucket = BucketOf(key);
  if (!Ready(bucket)) return false;
  std::lock_guard<std::mutex> lock(LockOf(bucket));
  const uint32_t slot = SlotOf(bucket, partition, key);
  if (slot == slots_per_bucket_) return false;
  std::memcpy(out, RowOf(bucket, slot), uint64_t{floats_per_row_} * sizeof(float));
  *changed = (TagsOf(bucket)[slot].generation & kChangedBit) != 0;
  return true;
}

void ColdRowFile::MarkUnchanged(uint32_t partition, uint64_t key) {
  if (partition >= num_partitions_) return;
  const uint64_t bucket = BucketOf(key);
  if (!Ready(bucket)) return;
  std::lock_guard<std::mutex> lock(LockOf(bucket));
  const uint32_t slot = SlotOf(bucket, partition, key);
  if (slot != slots_per_bucket_) TagsOf(bucket)[slot].generation &= ~kChangedBit;
}

bool ColdRowFile::HoldsChanged(uint32_t partition, uint64_t key) const {
  if (partition >= num_partitions_) return false;
  const uint64_t bucket = BucketOf(key);
  if (!Ready(bucket)) return false;
  std::lock_guard<std::mutex> lock(LockOf(bucket));
  const uint32_t slot = SlotOf(bucket, partition, key);
  return slot != slots_per_bucket_ && (TagsOf(bucket)[slot].generation & kChangedBit) != 0;
}

uint32_t ColdRowFile::SlotFor(uint64_t bucket, uint32_t partition, uint64_t key) {
  const Tag* tags = TagsOf(bucket);
  uint32_t empty = slots_per_bucket_;
  uint32_t stale = slots_per_bucket_;
  for (uint32_t slot = 0; slot < slots_per_bucket_; ++slot) {
    const Tag& tag = tags[slot];
    if (tag.key == key && tag.partition == partition && tag.generation != 0) return slot;
    if (tag.generation == 0) {
      empty = std::min(empty, slot);
    } else if (tag.partition >= num_partitions_ ||
               (tag.generation & kGenerationMask) != Generation(tag.partition)) {
      stale = std::min(stale, slot);
    }
  }
  if (empty < slots_per_bucket_) return empty;
  if (stale < slots_per_bucket_) return stale;
  // The next unchanged slot in turn: a changed row is newer than RocksDB, and only here.
  uint8_t& next = next_replaced_[bucket];
  for (uint32_t step = 0; step < slots_per_bucket_; ++step) {
    const uint32_t slot = (next + step) % slots_per_bucket_;
    if (tags[slot].generation & kChangedBit) continue;
    next = static_cast<uint8_t>((slot + 1) % slots_per_bucket_);
    return slot;
  }
  return slots_per_bucket_;
}

bool ColdRowFile::Store(uint32_t partition, uint64_t key, std::span<const float> row,
                        bool changed) {
  if (partition >= num_partitions_ || row.size() != floats_per_row_) return false;
  const uint64_t bucket = BucketOf(key);
  if (!Ready(bucket)) return false;
  std::lock_guard<std::mutex> lock(LockOf(bucket));
  const uint32_t slot = SlotFor(bucket, partition, key);
  if (slot == slots_per_bucket_) return false;
  std::memcpy(RowOf(bucket, slot), row.data(), row.size_bytes());
  TagsOf(bucket)[slot] = Tag{key, partition, Generation(partition) | (changed ? kChangedBit : 0)};
  return true;
}

void ColdRowFile::ForgetPartition(uint32_t partition) {
  if (partition >= num_partitions_) return;
  uint32_t next = (generations_[partition].load(std::memory_order_relaxed) + 1) & kGenerationMask;
  if (next == 0) next = 1;  // 0 marks an empty slot
  generations_[partition].store(next, std::memory_order_release);
}

}  // namespace ember::embedding
