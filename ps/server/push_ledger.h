// PushLedger: which pushes a server applied, by (sender, request id), so that a push a client
// resends after a reconnect is applied exactly once.
//
// A client resends the requests it has in flight when its connection to a server comes back
// (ps/client.h), keeping their request ids; a push may have been applied before the connection
// broke, with its answer lost. Every push names its sender (a random id per client) and the
// sender's floor: every request of that sender below it was answered, so none of those will come
// again except as a stale copy. The ledger keeps, per sender, that floor and the ids at or above
// it that were applied. A push below the floor or already recorded is a duplicate: the server
// answers OK and applies nothing. A copy that arrives while another copy of the same request is
// being applied waits for it (bounded), then is a duplicate, or is applied itself when the first
// copy failed.
//
// Bounds: a sender's records span only its requests since its oldest one still in flight (the
// floor moves up with every push), and a sender not heard from for forget_idle_sender (default
// one hour, far beyond any client's request timeout) is forgotten with its records. At most
// max_senders (limits.push_ledger_senders) are known at once: when a new sender comes to a full
// ledger, the senders idle for longer than prune_idle_sender (limits.push_ledger_idle_seconds)
// with no push being applied are forgotten to make room; when none is, the new sender is refused
// (kFull) until one is. A sender that pushes is never forgotten while it stays active, so its
// pushes keep being applied exactly once; a forgotten sender's later pushes are new to the ledger
// (a copy of one of its pushes applied before it went quiet would be applied again, which is why
// the idle time must exceed the clients' request timeout by far).
//
// On disk (when the server logs pushes: a data directory with durability ack or sync), the
// records live in the row store's record family (embedding/rocks_store.h) and are added to the
// very batch that logs the push's rows (AppendWrites), so a kill keeps both or neither:
//   "pushes/a" + sender + request id (16 big-endian bytes)  -> ""   the push was applied
//   "pushes/f" + sender + floor                             -> last seen (int64 seconds, host
//   order), then the public key bound to the sender (none without authentication)
// Records below a floor are deleted in later batches of the same sender; Open() reads the
// records back, keeps the highest floor of each sender and deletes what is stale (records below
// their floor, older floors, senders forgotten or without a floor). Without a store, or for
// deferred (bsp) pushes, whose held gradients are in memory only, the records are in memory only.
//
// Thread-safety: every method may be called from many threads at once. AppendWrites takes the
// ledger's lock under the table's stripe locks; the ledger never calls into a table.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/limits.h"
#include "common/status.h"
#include "common/transport.h"
#include "common/wire.h"
#include "embedding/rocks_store.h"

namespace ember::ps {

struct PushLedgerOptions {
  // A sender not heard from for this long is forgotten, with its records. Must exceed the
  // clients' request timeout by far: a copy of a forgotten sender's push is applied again.
  std::chrono::seconds forget_idle_sender{3600};
  // Senders known at once, and how long one must have been idle to make room for a new one.
  size_t max_senders = Limits{}.push_ledger_senders;
  std::chrono::seconds prune_idle_sender{Limits{}.push_ledger_idle_seconds};
  // Seconds since the epoch (persisted with the records); the wall clock when empty. For tests.
  std::function<int64_t()> now_seconds;
};

class PushLedger {
 public:
  enum class Verdict {
    kApply,      // apply the push, then Finish()
    kDuplicate,  // already applied (or answered): answer OK, apply nothing
    kBusy,       // another copy is still being applied after the wait: answer Unavailable
    kFull,       // a new sender, and max_senders are known and active: refuse the push
    kForeign,    // the sender id is bound to another key: refuse the push
  };
  // One push's turn. Pass it back to AppendWrites and Finish.
  struct Claim {
    Verdict verdict = Verdict::kApply;
    uint64_t sender = 0;
    uint64_t request_id = 0;
  };

  // Reads the records of `store` back (null: memory only). `store` is borrowed and must outlive
  // the ledger. Errors of the store are returned.
  static Result<std::unique_ptr<PushLedger>> Open(embedding::RocksStore* store,
                                                  PushLedgerOptions options = {});

  // Decides on push `request_id` of `sender` (sender.id != 0) from the peer holding `key` (its
  // public key; empty without authentication). A sender id is bound to the first key that
  // pushes as it, for as long as the ledger knows the sender (on disk too): a push naming it
  // from another key is kForeign, so no key can move another's floor or claim its requests.
  // Waits at most `wait` while another copy of the push is being applied. kFull and kForeign
  // change nothing.
  Claim Begin(const wire::PushSender& sender, uint64_t request_id, Millis wait,
              const std::string& key = "");
  // Adds the claim's records (and deletions of stale ones) to the batch that logs the push.
  void AppendWrites(const Claim& claim, embedding::RowWrites& batch);
  // Ends a kApply claim: `applied` records the push (on disk too when `logged`: AppendWrites went
  // into a batch that was written); otherwise a later copy may apply it.
  void Finish(const Claim& claim, bool applied, bool logged);

  // Whether records go to disk (a store was given).
  bool persistent() const { return store_ != nullptr; }
  // Senders known, and records held in memory over all of them (for tests and stats).
  size_t senders() const;
  size_t records() const;
  size_t max_senders() const { return options_.max_senders; }

 private:
  struct Sender {
    uint64_t floor = 0;                     // every request below it was answered
    std::map<uint64_t, bool> applied;       // ids >= floor applied -> whose record is on disk
    std::set<uint64_t> in_progress;         // ids being applied now
    std::vector<uint64_t> stale;            // ids whose disk record awaits deletion
    std::optional<uint64_t> written_floor;  // of the last floor record added to a batch
    int64_t last_seen = 0;                  // seconds since the epoch
    std::string key;                        // the key that pushes as this sender
  };

  PushLedger(embedding::RocksStore* store, PushLedgerOptions options);
  Status Load();
  int64_t NowSeconds() const;
  // Forgets senders idle for too long (at most once a minute); their disk records join orphans_.
  void ForgetIdleSenders(int64_t now);
  // Makes room for a new sender in a full ledger: forgets the senders idle for longer than
  // prune_idle_sender with nothing in progress. Whether there is room now.
  bool MakeRoom(int64_t now);
  // Forgets every sender last seen before `before` with nothing in progress.
  void ForgetSendersSeenBefore(int64_t before);
  // Adds the disk records of `sender` to orphans_.
  void Orphan(uint64_t id, Sender& sender);

  embedding::RocksStore* const store_;  // borrowed; null: memory only
  const PushLedgerOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable finished_;              // an in-progress push finished
  std::unordered_map<uint64_t, Sender> senders_;  // guarded by mutex_
  std::vector<std::string> orphans_;  // disk records to delete in the next batch; under mutex_
  int64_t next_sweep_ = 0;            // guarded by mutex_
};

}  // namespace ember::ps
