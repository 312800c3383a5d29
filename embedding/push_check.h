// PushCheck: what a caller of EmbeddingTable::Push decides about a push before any row changes
// (a server: does it own the keys' partitions, is the push a duplicate?), and the records it adds
// to the write that logs the push's rows.
#pragma once

#include <cstdint>
#include <span>

#include "common/status.h"

namespace ember::embedding {

class RowWrites;

class PushCheck {
 public:
  enum class Verdict {
    kApply,  // apply the push
    kSkip,   // apply nothing and return OK: the caller took care of the push
  };
  virtual ~PushCheck() = default;
  // Looks at the push's keys with the partition of each (partitions[i] of keys[i]) before any
  // row is read or changed, and before any stripe lock is taken (so it may wait). An error it
  // returns ends the push with that error, nothing done.
  virtual Result<Verdict> Check(std::span<const uint64_t> keys,
                                std::span<const uint32_t> partitions) = 0;
  // When the table logs pushes and Check said kApply: called once with the batch of the push's
  // rows, before it is written, under the request's stripe locks (it must not call the table).
  virtual void AppendWrites(RowWrites& batch) = 0;
};

}  // namespace ember::embedding
