// PushGate: what a push must pass on a server before its table applies it, in this order: the
// ownership check (are the partitions of all its keys served here? PartitionOwnership), then the
// ledger's claim (was this push applied before? PushLedger), then, for a deferred (bsp) push,
// being held for its clock (PushAccumulator) in place of being applied. A push the ledger has no
// room for, or the accumulator cannot hold, is refused with the limit's error (refused_by()).
//
// ShardService hands it to EmbeddingTable::Push as the push's check, so the table hashes each key
// to its partition once, for this check and for the rows; when the table logs its pushes, the
// gate adds the claim's records to the batch that logs the push's rows. After Push returns, the
// server reads the outcome() and Finish()es a passed push with the table's answer.
//
// One gate per push, used on the thread that handles it; the objects it is given are borrowed
// and must outlive it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/limits.h"
#include "common/status.h"
#include "common/wire.h"
#include "embedding/embedding_table.h"
#include "ps/server/partition_ownership.h"
#include "ps/server/push_accumulator.h"
#include "ps/server/push_ledger.h"

namespace ember::ps {

class PushGate final : public embedding::EmbeddingTable::PushCheck {
 public:
  enum class Outcome {
    kStopped,    // did not pass (ownership, or a copy still being applied): nothing claimed or
                 // applied; answer the table's error as it is
    kDuplicate,  // a copy of a push applied before: answer OK, nothing applied
    kPassed,     // claimed (when it names its sender): applied by the table, or held; Finish()
  };

  // `request_id` and `push` are the request's, `sender_key` the public key of the peer that sent
  // it (empty without authentication).
  PushGate(const PartitionOwnership& ownership, PushLedger& ledger, PushAccumulator& deferred,
           uint64_t request_id, const wire::PushRequest& push, const std::string& sender_key)
      : ownership_(ownership),
        ledger_(ledger),
        deferred_(deferred),
        request_id_(request_id),
        push_(push),
        sender_key_(sender_key) {}

  Result<Verdict> Check(std::span<const uint64_t> keys,
                        std::span<const uint32_t> partitions) override;
  void AppendWrites(embedding::RowWrites& batch) override;

  Outcome outcome() const { return outcome_; }
  // Ends the claim of a passed push with the table's answer: OK records it as applied (on disk
  // too when its records were logged); otherwise a later copy may apply it.
  void Finish(const Status& applied);
  // The limit that refused the push (the ledger's senders, the held bsp pushes), if one did.
  std::optional<Limit> refused_by() const { return refused_by_; }

 private:
  const PartitionOwnership& ownership_;
  PushLedger& ledger_;
  PushAccumulator& deferred_;
  const uint64_t request_id_;
  const wire::PushRequest& push_;
  const std::string& sender_key_;

  Outcome outcome_ = Outcome::kStopped;
  std::optional<PushLedger::Claim> claim_;  // when the push names its sender
  bool logged_ = false;                     // the claim's records went into the rows' batch
  std::optional<Limit> refused_by_;
};

}  // namespace ember::ps
