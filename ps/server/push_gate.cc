// PushGate implementation.
#include "ps/server/push_gate.h"

#include <string>

namespace ember::ps {
namespace {

// How long a copy of a push waits for another copy of it that is being applied.
constexpr Millis kDuplicateWait{60'000};

}  // namespace

Result<PushGate::Verdict> PushGate::Check(std::span<const uint64_t> keys,
                                          std::span<const uint32_t> partitions) {
  RETURN_IF_ERROR(ownership_.CheckServed(push_.table, keys, partitions));
  if (push_.sender.id != 0) {
    claim_ = ledger_.Begin(push_.sender, request_id_, kDuplicateWait, sender_key_);
    if (claim_->verdict == PushLedger::Verdict::kForeign) {
      claim_.reset();
      return PermissionDenied("push " + std::to_string(request_id_) + " names a sender id that "
                              "another key pushes as; refused, nothing changed");
    }
    if (claim_->verdict == PushLedger::Verdict::kDuplicate) {
      outcome_ = Outcome::kDuplicate;
      return Verdict::kSkip;
    }
    if (claim_->verdict == PushLedger::Verdict::kBusy) {
      return Unavailable("push " + std::to_string(request_id_) +
                         " is still being applied from an earlier copy");
    }
    if (claim_->verdict == PushLedger::Verdict::kFull) {
      refused_by_ = Limit::kPushLedgerSenders;
      return LimitExceeded(Limit::kPushLedgerSenders, ledger_.max_senders(),
                           "push " + std::to_string(request_id_) + " from a new sender: every " +
                               "sender the server remembers for exactly-once pushes is active");
    }
  }
  outcome_ = Outcome::kPassed;
  if (!push_.deferred) return Verdict::kApply;
  // Held in memory only, and so is its record.
  Status held = deferred_.Add(push_.clock, push_.trainer, push_.table, keys, push_.gradients,
                              push_.learning_rate);
  if (held.code() == StatusCode::kResourceExhausted) refused_by_ = Limit::kDeferredPushesPerClock;
  RETURN_IF_ERROR(held);
  return Verdict::kSkip;
}

void PushGate::AppendWrites(embedding::RowWrites& batch) {
  if (!claim_ || !ledger_.persistent()) return;
  ledger_.AppendWrites(*claim_, batch);
  logged_ = true;
}

void PushGate::Finish(const Status& applied) {
  if (outcome_ == Outcome::kPassed && claim_) ledger_.Finish(*claim_, applied.ok(), logged_);
}

}  // namespace ember::ps
