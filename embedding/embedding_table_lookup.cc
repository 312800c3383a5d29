// EmbeddingTable::Lookup: the read-only pull of the serving path (see embedding_table.h). It takes
// each stripe's lock once, like a pull, but only finds rows: memory first, then (tiered tables)
// the stripe's misses from disk in one MultiGet, copied out and not kept.
#include <algorithm>
#include <array>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "embedding/embedding_table.h"
#include "embedding/initializer.h"

namespace ember::embedding {
namespace {

Status SizesRefused(const std::string& table, size_t keys, size_t dim, size_t floats,
                    size_t flags) {
  return InvalidArgument("lookup in table '" + table + "': " + std::to_string(keys) +
                         " keys of dim " + std::to_string(dim) + " need " +
                         std::to_string(keys * dim) + " floats and " + std::to_string(keys) +
                         " or no found flags, got " + std::to_string(floats) + " and " +
                         std::to_string(flags));
}

}  // namespace

Status EmbeddingTable::Lookup(std::span<const uint64_t> keys, std::span<float> out,
                              MissingRows missing, std::span<uint8_t> found,
                              const RequestCheck& check) const {
  const size_t dim = spec_.dim;
  if (out.size() != keys.size() * dim || (!found.empty() && found.size() != keys.size())) {
    return SizesRefused(spec_.name, keys.size(), dim, out.size(), found.size());
  }
  RequestGroups& groups = GroupByStripe(keys, table_id_, memory_);
  if (check) RETURN_IF_ERROR(check(keys, groups.partition));
  thread_local std::vector<uint32_t> missed;  // positions in the request
  thread_local std::vector<uint32_t> missed_partitions;
  thread_local std::vector<uint64_t> missed_keys;
  thread_local std::vector<uint8_t> on_disk;
  const auto row_of = [&](uint32_t position) { return out.data() + size_t{position} * dim; };
  const auto set_found = [&](uint32_t position, bool has_row) {
    if (!found.empty()) found[position] = has_row ? 1 : 0;
  };
  const std::span<const RowStore> stores = memory_.stores();
  for (uint32_t s = 0; s < memory_.num_stripes(); ++s) {
    const uint32_t begin = groups.bounds[s];
    const uint32_t end = groups.bounds[s + 1];
    if (begin == end) continue;
    std::lock_guard<std::mutex> lock(memory_.StripeMutex(s));
    missed.clear();
    // Three stages kPrefetchDistance keys apart, as in a pull: a key's index entry is prefetched,
    // then its row found and prefetched, then copied out; so the misses of cold rows overlap.
    std::array<const float*, kPrefetchDistance> ahead{};
    const auto find = [&](uint32_t j) {
      const uint32_t at = groups.order[j];
      const float* row = memory_.store(groups.partition[at]).Find(keys[at]);
      if (row != nullptr) PrefetchRow(row, dim);
      ahead[j % kPrefetchDistance] = row;
    };
    groups.PrefetchEntriesBelow(begin + 2 * kPrefetchDistance, keys, stores);
    for (uint32_t j = begin; j < std::min(end, begin + kPrefetchDistance); ++j) find(j);
    for (uint32_t j = begin; j < end; ++j) {
      const float* row = ahead[j % kPrefetchDistance];
      groups.PrefetchEntriesBelow(j + 2 * kPrefetchDistance + 1, keys, stores);
      if (j + kPrefetchDistance < end) find(j + kPrefetchDistance);
      const uint32_t at = groups.order[j];
      if (row == nullptr) {
        missed.push_back(at);
        continue;
      }
      std::copy_n(row, dim, row_of(at));
      set_found(at, true);
    }
    if (missed.empty()) continue;
    on_disk.assign(missed.size(), 0);
    if (tier_ != nullptr) {
      // Rows evicted from memory were written back before being dropped (under this lock), so
      // the disk holds every row of the stripe that memory does not.
      missed_partitions.resize(missed.size());
      missed_keys.resize(missed.size());
      for (size_t m = 0; m < missed.size(); ++m) {
        missed_partitions[m] = groups.partition[missed[m]];
        missed_keys[m] = keys[missed[m]];
      }
      RETURN_IF_ERROR(tier_->ReadRows(
          missed_partitions, missed_keys, [&](size_t m, std::span<const float> stored) {
            std::copy_n(stored.data(), dim, row_of(missed[m]));
            on_disk[m] = 1;
          }));
    }
    for (size_t m = 0; m < missed.size(); ++m) {
      const uint32_t at = missed[m];
      set_found(at, on_disk[m] != 0);
      if (on_disk[m]) continue;
      std::span<float> row(row_of(at), dim);
      if (missing == MissingRows::kInitial) {
        InitializeRow(spec_, keys[at], row);
      } else {
        std::fill(row.begin(), row.end(), 0.0f);
      }
    }
  }
  return Status::Ok();
}

}  // namespace ember::embedding
