// ChangeTracker: segments of changed keys per partition, cut by cut.
#include "embedding/change_tracker.h"

#include <algorithm>

namespace ember::embedding {
ChangeTracker::ChangeTracker(uint32_t partitions,
                             std::function<uint64_t(uint32_t partition)> rows_of)
    : partitions_(partitions), rows_of_(std::move(rows_of)) {}

void ChangeTracker::Append(uint32_t partition, uint64_t key) {
  ChangedKeys& keys = partitions_[partition].segments.back().keys;
  if (!keys.Add(key)) return;
  if (keys.size() > ChangedKeys::kFirstCompaction && keys.size() > rows_of_(partition) / 2) {
    // Most of the partition changed: writing it whole costs about as much, and needs no keys.
    Forget(partition);
  }
}

std::optional<std::vector<uint64_t>> ChangeTracker::Cut(uint32_t partition, uint64_t previous,
                                                        uint64_t cut, bool track) {
  std::vector<Segment>& segments = partitions_[partition].segments;
  auto since_previous =
      previous == 0 ? segments.end()
                    : std::find_if(segments.begin(), segments.end(),
                                   [&](const Segment& s) { return s.since == previous; });
  std::optional<std::vector<uint64_t>> changed;
  if (since_previous != segments.end()) {
    changed.emplace();
    for (auto it = since_previous; it != segments.end(); ++it) {
      it->keys.AppendTo(*changed);
    }
    ChangedKeys::SortUnique(*changed);
    segments.erase(segments.begin(), since_previous);
  } else {
    segments.clear();
  }
  if (!track) {
    segments.clear();
  } else {
    segments.push_back(Segment{.since = cut, .keys = {}});
  }
  return changed;
}

void ChangeTracker::Reset(uint32_t partition, uint64_t cut) {
  std::vector<Segment>& segments = partitions_[partition].segments;
  segments.clear();
  segments.push_back(Segment{.since = cut, .keys = {}});
}

void ChangeTracker::NoteForFollowers(uint32_t partition, uint64_t key) {
  // Unlike a cut's, a follower's keys never turn into "whole": sending the partition whole would
  // send its unchanged rows too, and the keys, deduplicated, are at most the partition's own.
  for (Follower& follower : partitions_[partition].followers) {
    if (!follower.whole) follower.keys.Add(key);
  }
}

void ChangeTracker::Follow(uint32_t partition, uint64_t follower) {
  Unfollow(partition, follower);
  partitions_[partition].followers.push_back(Follower{.id = follower, .whole = true, .keys = {}});
}

void ChangeTracker::Unfollow(uint32_t partition, uint64_t follower) {
  std::erase_if(partitions_[partition].followers,
                [&](const Follower& f) { return f.id == follower; });
}

ChangeTracker::FollowerTake ChangeTracker::TakeFollowed(uint32_t partition, uint64_t follower) {
  FollowerTake take;
  for (Follower& f : partitions_[partition].followers) {
    if (f.id != follower) continue;
    take.following = true;
    take.whole = f.whole;
    take.keys = f.keys.TakeSorted();  // none when whole: NoteForFollowers skips it
    f.whole = false;
    break;
  }
  return take;
}

std::vector<uint64_t> ChangeTracker::MoveChanges(uint32_t partition) const {
  const std::optional<ChangedKeys>& move = partitions_[partition].move;
  return move ? move->Sorted() : std::vector<uint64_t>{};
}

uint64_t ChangeTracker::keys_held(uint32_t partition) const {
  const Partition& held = partitions_[partition];
  uint64_t total = held.move ? held.move->size() : 0;
  for (const Segment& segment : held.segments) total += segment.keys.size();
  for (const Follower& follower : held.followers) total += follower.keys.size();
  return total;
}

}  // namespace ember::embedding
