// Stable 64-bit hashing for keys, table names, partitions and deterministic initialisers.
//
// These functions define on-disk and cross-process behaviour (which partition a key lives in, a
// row's initial value): they must never change for a given input.
#pragma once

#include <cstdint>
#include <string_view>

namespace ember {

// SplitMix64 finaliser: a bijective, well-mixed 64-bit permutation.
constexpr uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Combines two 64-bit values into one well-mixed hash (order matters).
constexpr uint64_t HashCombine(uint64_t a, uint64_t b) {
  return Mix64(a ^ (Mix64(b) + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2)));
}

// FNV-1a over the bytes of a name, then mixed: the stable id of a table name.
constexpr uint64_t HashName(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : name) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ULL;
  }
  return Mix64(h);
}

// The virtual partition of `key` in the table whose id is `table_id`. A power-of-two count (the
// usual case) takes a mask instead of a division: the same result, a few nanoseconds less per key.
constexpr uint32_t PartitionOf(uint64_t table_id, uint64_t key, uint32_t num_partitions) {
  const uint64_t hash = HashCombine(table_id, key);
  const bool power_of_two = (num_partitions & (num_partitions - 1)) == 0;
  return static_cast<uint32_t>(power_of_two ? hash & (num_partitions - 1) : hash % num_partitions);
}

}  // namespace ember
