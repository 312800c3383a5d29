// ChangeTracker: which keys of each partition of a table changed since the last checkpoint cuts,
// so that an incremental cut writes only those rows (and names the keys deleted since), and since
// the partition began moving out of the server, so that its hand-over sends those rows again.
//
// A partition is tracked from the cut that wrote it (or the checkpoint it was restored from):
// each cut opens a new segment, named by the cut's id, that collects the keys changed after it
// (a row created, updated, restored or deleted). Cutting `cut` after `previous` returns the keys
// of every segment from `previous` on, when the partition has them, and keeps those segments:
// if `cut` never completes, the next cut names `previous` again and still finds every change.
// Segments older than `previous` are dropped. A partition whose changes cannot be known (never
// cut, erased, moved in, or with more changed keys than half its rows) is untracked: its next cut
// writes it whole. An untracked partition costs one branch per change.
//
// A partition moving out of the server has a move mark besides (BeginMove): every key changed
// after it, whatever the cuts do, until EndMove. It is never dropped for its size: a move is
// short, and its hand-over needs the keys.
//
// Followers (serving replicas, ps/server/followers.h) have marks of their own: each follower of a
// partition collects the keys changed since it last took them (TakeFollowed), or, when it just
// started, is due every row ("whole"). Its keys stay within about two per row of the partition
// (plus the keys deleted since), however long it takes them to come.
//
// A segment's keys, a move's and a follower's are ChangedKeys (changed_keys.h): memory stays
// within about two keys per changed row.
//
// Not thread-safe: the owner (EmbeddingTable) guards each partition with its stripe lock.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "embedding/changed_keys.h"

namespace ember::embedding {

class ChangeTracker {
 public:
  // `rows_of` gives the rows a partition holds now (for the half-the-rows bound).
  ChangeTracker(uint32_t partitions, std::function<uint64_t(uint32_t partition)> rows_of);

  bool tracked(uint32_t partition) const { return !partitions_[partition].segments.empty(); }
  // Notes that the row of `key` in `partition` changed (no-op when the partition is untracked and
  // not moving).
  void Note(uint32_t partition, uint64_t key) {
    if (tracked(partition)) Append(partition, key);
    if (partitions_[partition].move) partitions_[partition].move->Add(key);
    if (!partitions_[partition].followers.empty()) NoteForFollowers(partition, key);
  }
  // Forgets the partition's changes since its cuts: its next cut writes it whole. (A move's
  // changes stay.)
  void Forget(uint32_t partition) { partitions_[partition].segments.clear(); }
  // Cut `cut` of `partition`, taken after `previous` (0: none): the keys changed since
  // `previous`, ascending, when they are known; nullopt when the cut must write the partition
  // whole. Either way the partition is tracked from `cut` on (when `track`; untracked otherwise).
  std::optional<std::vector<uint64_t>> Cut(uint32_t partition, uint64_t previous, uint64_t cut,
                                           bool track);
  // The partition now holds exactly the rows of checkpoint `cut` (just restored from it):
  // tracked from `cut` on with nothing changed.
  void Reset(uint32_t partition, uint64_t cut);

  // The partition begins moving out (again): its changes are noted from now on, for the move.
  void BeginMove(uint32_t partition) { partitions_[partition].move.emplace(); }
  // The keys changed since BeginMove, ascending (none when no move is under way).
  std::vector<uint64_t> MoveChanges(uint32_t partition) const;
  // The move ended (handed over and released, or aborted): its changes are dropped.
  void EndMove(uint32_t partition) { partitions_[partition].move.reset(); }

  // `follower` follows `partition` from now on (again), due every row first.
  void Follow(uint32_t partition, uint64_t follower);
  void Unfollow(uint32_t partition, uint64_t follower);
  // The partition is gone from this server (erased): nobody follows it here any more.
  void DropFollowers(uint32_t partition) { partitions_[partition].followers.clear(); }
  struct FollowerTake {
    bool following = false;  // false: `follower` does not follow the partition
    bool whole = false;      // due every row of the partition (keys empty)
    std::vector<uint64_t> keys;  // else the keys changed since its last take, ascending
  };
  // What `follower` is due of `partition`; its mark starts empty again.
  FollowerTake TakeFollowed(uint32_t partition, uint64_t follower);

  // Keys the partition's segments, move and followers hold (for tests and memory accounting).
  uint64_t keys_held(uint32_t partition) const;

 private:
  struct Follower {
    uint64_t id = 0;
    bool whole = true;
    ChangedKeys keys;
  };
  struct Segment {
    uint64_t since = 0;  // the cut the segment's changes follow
    ChangedKeys keys;
  };
  struct Partition {
    std::vector<Segment> segments;     // oldest first; the last one collects new changes
    std::optional<ChangedKeys> move;  // since BeginMove, while the partition moves out
    std::vector<Follower> followers;  // a few at most (limits.followers per server)
  };

  void Append(uint32_t partition, uint64_t key);
  void NoteForFollowers(uint32_t partition, uint64_t key);

  std::vector<Partition> partitions_;
  const std::function<uint64_t(uint32_t)> rows_of_;
};

}  // namespace ember::embedding
