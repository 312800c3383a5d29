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

// A bucket's slots fit one page, hints first: a lookup reads the hints' cache line and then one
// tag and one row.
constexpr uint64_t kBucketTargetBytes = 4096;
// How many keys ahead a bucket's hints are brought into the cache, and then (half as many ahead)
// the row they point to.
constexpr size_t kHintPrefetchDistance = 8;
constexpr size_t kRowPrefetchDistance = 4;
// Seeds of the bucket's hash and of the fingerprint's.
constexpr uint64_t kBucketSeed = 0x5bd1e9955bd1e995ULL;
constexpr uint64_t kFingerprintSeed = 0x9e3779b97f4a7c15ULL;

void PrefetchLines(const void* at, uint64_t bytes, bool for_write) {
  const char* begin = static_cast<const char*>(at);
  const char* first = reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(begin) & ~63ULL);
  for (const char* line = first; line < begin + bytes; line += 64) {
    if (for_write) {
      __builtin_prefetch(line, 1);
    } else {
      __builtin_prefetch(line, 0);
    }
  }
}
constexpr uint32_t kMinSlotsPerBucket = 4;
constexpr uint32_t kMaxSlotsPerBucket = 255;  // next_replaced_ is a byte
// Zeros are written a chunk of about this many bytes at a time (whole buckets), and this many
// before Create returns.
constexpr uint64_t kZeroChunkBytes = uint64_t{1} << 20;
constexpr uint64_t kZeroedAtCreateBytes = uint64_t{64} << 20;
// Each write of zeros is this long: the page cache keeps the file in folios of at most this size.
// Once the kernel has written a folio back, the first store into each of its pages through the
// mapping faults, and the fault walks the whole folio's blocks: about 11 us a fault with
// folios of 1 MiB, 5 with 64 KiB ones, no less with 4 KiB ones.
constexpr uint64_t kZeroWriteBytes = uint64_t{64} << 10;

std::string ErrnoText(int error) { return std::strerror(error); }

}  // namespace

uint32_t ColdRowFile::SlotsPerBucket(uint32_t floats_per_row) {
  const uint64_t slot_bytes = kTagBytes + uint64_t{floats_per_row} * sizeof(float);
  uint64_t slots = std::clamp<uint64_t>(kBucketTargetBytes / (sizeof(uint16_t) + slot_bytes),
                                        kMinSlotsPerBucket, kMaxSlotsPerBucket);
  // The hints' cache lines too within the target, where that leaves enough slots.
  while (slots > kMinSlotsPerBucket &&
         HintBytes(static_cast<uint32_t>(slots)) + slots * slot_bytes > kBucketTargetBytes) {
    --slots;
  }
  return static_cast<uint32_t>(slots);
}

uint64_t ColdRowFile::HintBytes(uint32_t slots) {
  return (uint64_t{slots} * sizeof(uint16_t) + 63) / 64 * 64;
}

uint64_t ColdRowFile::BucketBytes(uint32_t floats_per_row) {
  const uint32_t slots = SlotsPerBucket(floats_per_row);
  const uint64_t bytes =
      HintBytes(slots) + uint64_t{slots} * (kTagBytes + uint64_t{floats_per_row} * sizeof(float));
  // A bucket within a page takes all of one page: a store dirties one page, and a lookup needs
  // one page's translation.
  return bytes <= kBucketTargetBytes ? kBucketTargetBytes : (bytes + 63) / 64 * 64;
}

ColdRowFile::ColdRowFile(uint32_t floats_per_row, uint32_t num_partitions, uint64_t capacity_bytes)
    : floats_per_row_(floats_per_row),
      num_partitions_(num_partitions),
      slots_per_bucket_(SlotsPerBucket(floats_per_row)),
      hint_bytes_(HintBytes(slots_per_bucket_)),
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
  static const std::vector<char> zeros(kZeroWriteBytes, 0);
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

ColdRowFile::Place ColdRowFile::PlaceOf(uint32_t partition, uint64_t key) const {
  // Hashes of their own, independent of the one that chose the key's partition.
  const unsigned __int128 wide =
      static_cast<unsigned __int128>(Mix64(key ^ kBucketSeed)) * num_buckets_;
  const uint64_t mixed = Mix64((key ^ kFingerprintSeed) + partition);
  const uint16_t fingerprint = static_cast<uint16_t>(mixed & kFingerprintMask);
  return Place{static_cast<uint64_t>(wide >> 64), fingerprint == 0 ? uint16_t{1} : fingerprint};
}

uint16_t* ColdRowFile::HintsOf(uint64_t bucket) const {
  return reinterpret_cast<uint16_t*>(base_ + bucket * bucket_bytes_);
}

ColdRowFile::Tag* ColdRowFile::TagsOf(uint64_t bucket) const {
  return reinterpret_cast<Tag*>(base_ + bucket * bucket_bytes_ + hint_bytes_);
}

float* ColdRowFile::RowOf(uint64_t bucket, uint32_t slot) const {
  char* rows =
      base_ + bucket * bucket_bytes_ + hint_bytes_ + uint64_t{slots_per_bucket_} * sizeof(Tag);
  return reinterpret_cast<float*>(rows) + uint64_t{slot} * floats_per_row_;
}

uint32_t ColdRowFile::HeldSlot(Place place, uint32_t partition, uint64_t key) const {
  const uint16_t* hints = HintsOf(place.bucket);
  const Tag* tags = TagsOf(place.bucket);
  for (uint32_t slot = 0; slot < slots_per_bucket_; ++slot) {
    if ((hints[slot] & kFingerprintMask) != place.fingerprint) continue;
    const Tag& tag = tags[slot];
    if (tag.key == key && tag.partition == partition && tag.generation != 0) return slot;
  }
  return slots_per_bucket_;
}

uint32_t ColdRowFile::SlotOf(Place place, uint32_t partition, uint64_t key) const {
  const uint32_t slot = HeldSlot(place, partition, key);
  if (slot == slots_per_bucket_) return slot;
  const uint32_t generation = TagsOf(place.bucket)[slot].generation & kGenerationMask;
  return generation == Generation(partition) ? slot : slots_per_bucket_;
}

template <typename PlaceOfIndex, typename Visit>
void ColdRowFile::VisitPrefetched(size_t n, const PlaceOfIndex& place_of, bool for_store,
                                  const Visit& visit) const {
  const auto prefetch_hints = [&](size_t i) {
    const Place place = place_of(i);
    if (Ready(place.bucket)) PrefetchLines(HintsOf(place.bucket), hint_bytes_, false);
  };
  // Read without the bucket's lock, only to choose what to prefetch: a hint changed meanwhile
  // costs a miss later, nothing else.
  const auto prefetch_row = [&](size_t i) {
    const Place place = place_of(i);
    if (!Ready(place.bucket)) return;
    const uint16_t* hints = HintsOf(place.bucket);
    uint32_t target = slots_per_bucket_;
    for (uint32_t slot = 0; slot < slots_per_bucket_; ++slot) {
      const uint16_t hint = __atomic_load_n(&hints[slot], __ATOMIC_RELAXED);
      if ((hint & kFingerprintMask) == place.fingerprint) {
        target = slot;
        break;
      }
      if (hint == 0 && for_store && target == slots_per_bucket_) target = slot;
    }
    if (target == slots_per_bucket_) return;
    PrefetchLines(&TagsOf(place.bucket)[target], sizeof(Tag), for_store);
    PrefetchLines(RowOf(place.bucket, target), uint64_t{floats_per_row_} * sizeof(float),
                  for_store);
  };
  for (size_t i = 0; i < std::min(n, kHintPrefetchDistance); ++i) prefetch_hints(i);
  for (size_t i = 0; i < std::min(n, kRowPrefetchDistance); ++i) prefetch_row(i);
  for (size_t i = 0; i < n; ++i) {
    if (i + kHintPrefetchDistance < n) prefetch_hints(i + kHintPrefetchDistance);
    if (i + kRowPrefetchDistance < n) prefetch_row(i + kRowPrefetchDistance);
    visit(i, place_of(i));
  }
}

bool ColdRowFile::Find(uint32_t partition, uint64_t key, float* out, bool* changed) const {
  bool held = false;
  const uint32_t partitions[] = {partition};
  const uint64_t keys[] = {key};
  FindEach(
      partitions, keys,
      [&](size_t, const float* row, bool row_changed) {
        std::memcpy(out, row, uint64_t{floats_per_row_} * sizeof(float));
        *changed = row_changed;
        held = true;
      },
      [](size_t) {});
  return held;
}

void ColdRowFile::FindEach(std::span<const uint32_t> partitions, std::span<const uint64_t> keys,
                           const FoundRow& found,
                           const std::function<void(size_t i)>& missed) const {
  thread_local std::vector<Place> places;
  places.resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) places[i] = PlaceOf(partitions[i], keys[i]);
  VisitPrefetched(
      keys.size(), [&](size_t i) { return places[i]; }, /*for_store=*/false,
      [&](size_t i, Place place) {
        if (partitions[i] >= num_partitions_ || !Ready(place.bucket)) return missed(i);
        std::lock_guard<std::mutex> lock(LockOf(place.bucket));
        const uint32_t slot = SlotOf(place, partitions[i], keys[i]);
        if (slot == slots_per_bucket_) return missed(i);
        found(i, RowOf(place.bucket, slot),
              (TagsOf(place.bucket)[slot].generation & kChangedBit) != 0);
      });
}

void ColdRowFile::MarkUnchanged(uint32_t partition, uint64_t key) {
  if (partition >= num_partitions_) return;
  const Place place = PlaceOf(partition, key);
  if (!Ready(place.bucket)) return;
  std::lock_guard<std::mutex> lock(LockOf(place.bucket));
  const uint32_t slot = SlotOf(place, partition, key);
  if (slot == slots_per_bucket_) return;
  TagsOf(place.bucket)[slot].generation &= ~kChangedBit;
  uint16_t* hint = &HintsOf(place.bucket)[slot];
  __atomic_store_n(hint, static_cast<uint16_t>(*hint & ~kChangedHint), __ATOMIC_RELAXED);
}

bool ColdRowFile::HoldsChanged(uint32_t partition, uint64_t key) const {
  if (partition >= num_partitions_) return false;
  const Place place = PlaceOf(partition, key);
  if (!Ready(place.bucket)) return false;
  std::lock_guard<std::mutex> lock(LockOf(place.bucket));
  const uint32_t slot = SlotOf(place, partition, key);
  return slot != slots_per_bucket_ && (TagsOf(place.bucket)[slot].generation & kChangedBit) != 0;
}

uint32_t ColdRowFile::SlotFor(Place place, uint32_t partition, uint64_t key) {
  if (const uint32_t own = HeldSlot(place, partition, key); own != slots_per_bucket_) return own;
  const uint16_t* hints = HintsOf(place.bucket);
  for (uint32_t slot = 0; slot < slots_per_bucket_; ++slot) {
    if (hints[slot] == 0) return slot;
  }
  // A slot is stale only once a partition was forgotten: then the tags say which.
  if (any_forgotten_.load(std::memory_order_acquire)) {
    const Tag* tags = TagsOf(place.bucket);
    for (uint32_t slot = 0; slot < slots_per_bucket_; ++slot) {
      const Tag& tag = tags[slot];
      if (tag.partition >= num_partitions_ ||
          (tag.generation & kGenerationMask) != Generation(tag.partition)) {
        return slot;
      }
    }
  }
  // The next unchanged slot in turn: a changed row is newer than RocksDB, and only here.
  uint8_t& next = next_replaced_[place.bucket];
  for (uint32_t step = 0; step < slots_per_bucket_; ++step) {
    const uint32_t slot = (next + step) % slots_per_bucket_;
    if (hints[slot] & kChangedHint) continue;
    next = static_cast<uint8_t>((slot + 1) % slots_per_bucket_);
    return slot;
  }
  return slots_per_bucket_;
}

void ColdRowFile::StoreInSlot(Place place, uint32_t slot, uint32_t partition, uint64_t key,
                              const float* row, bool changed) {
  std::memcpy(RowOf(place.bucket, slot), row, uint64_t{floats_per_row_} * sizeof(float));
  TagsOf(place.bucket)[slot] =
      Tag{key, partition, Generation(partition) | (changed ? kChangedBit : 0)};
  __atomic_store_n(&HintsOf(place.bucket)[slot],
                   static_cast<uint16_t>(place.fingerprint | (changed ? kChangedHint : 0)),
                   __ATOMIC_RELAXED);
}

bool ColdRowFile::Store(uint32_t partition, uint64_t key, std::span<const float> row,
                        bool changed) {
  if (row.size() != floats_per_row_) return false;
  const RowToStore rows[] = {{partition, key, row.data()}};
  bool stored = true;
  StoreEach(rows, changed, [&](size_t) { stored = false; });
  return stored;
}

void ColdRowFile::StoreEach(std::span<const RowToStore> rows, bool changed,
                            const std::function<void(size_t i)>& refused) {
  thread_local std::vector<Place> places;
  places.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) places[i] = PlaceOf(rows[i].partition, rows[i].key);
  VisitPrefetched(
      rows.size(), [&](size_t i) { return places[i]; }, /*for_store=*/true,
      [&](size_t i, Place place) {
        const RowToStore& row = rows[i];
        if (row.partition < num_partitions_ && Ready(place.bucket)) {
          std::lock_guard<std::mutex> lock(LockOf(place.bucket));
          const uint32_t slot = SlotFor(place, row.partition, row.key);
          if (slot != slots_per_bucket_) {
            StoreInSlot(place, slot, row.partition, row.key, row.row, changed);
            return;
          }
        }
        if (refused) refused(i);
      });
}

void ColdRowFile::ForgetPartition(uint32_t partition) {
  if (partition >= num_partitions_) return;
  uint32_t next = (generations_[partition].load(std::memory_order_relaxed) + 1) & kGenerationMask;
  if (next == 0) next = 1;  // 0 marks an empty slot
  generations_[partition].store(next, std::memory_order_release);
  any_forgotten_.store(true, std::memory_order_release);
}

}  // namespace ember::embedding
