// PushGate: the ownership check comes before the ledger's claim, a copy of an applied push is
// skipped, a deferred push is held instead of applied, and the table hashes each key once for
// the gate and the rows.
#include "ps/server/push_gate.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace ember::ps {
namespace {

const std::string kNoKey;  // pushes without authentication

constexpr uint32_t kPartitions = 16;
constexpr uint64_t kEpoch = 3;
constexpr uint64_t kSender = 0xFEED;

// Two-float rows, SGD.
TableSpec Spec() { return TableSpec{.name = "item", .dim = 2, .seed = 4}; }

// Server 0 of two (partitions 0-7 are its own), with one in-memory table and ledger.
class PushGateTest : public ::testing::Test {
 protected:
  struct Pushed {
    Status status;
    PushGate::Outcome outcome;
  };

  PushGateTest()
      : ownership_(MakeBalancedRouting(kPartitions, {{0, "tcp://a:1"}, {1, "tcp://b:1"}}, kEpoch),
                   0),
        ledger_(PushLedger::Open(nullptr).value()),
        table_(Spec(), kPartitions) {}

  // The first `count` keys from 0 up that server 0 owns (or, with owned false, does not own).
  std::vector<uint64_t> Keys(size_t count, bool owned = true) const {
    std::vector<uint64_t> keys;
    for (uint64_t key = 0; keys.size() < count; ++key) {
      if ((table_.PartitionOf(key) < kPartitions / 2) == owned) keys.push_back(key);
    }
    return keys;
  }
  uint64_t KeyOwned(bool owned) const { return Keys(1, owned)[0]; }

  // Sends a push of `keys` (gradients of 1) from kSender through a gate into the table, and
  // finishes it as ShardService does.
  Pushed Push(uint64_t request_id, const std::vector<uint64_t>& keys, bool deferred = false) {
    const std::vector<float> grads(keys.size() * Spec().dim, 1.0f);
    wire::PushRequest push;
    push.table = Spec().name;
    push.keys = keys;
    push.gradients = grads;
    push.clock = 1;
    push.deferred = deferred;
    push.sender = {kSender, 1};
    PushGate gate(ownership_, *ledger_, deferred_, request_id, push, kNoKey);
    Status status = table_.Push(push.keys, push.gradients, gate);
    if (gate.outcome() == PushGate::Outcome::kPassed) gate.Finish(status);
    return {status, gate.outcome()};
  }

  std::vector<float> Row(uint64_t key) {
    std::vector<float> row(Spec().dim);
    EXPECT_TRUE(table_.Pull(std::vector<uint64_t>{key}, row).ok());
    return row;
  }

  PartitionOwnership ownership_;
  std::unique_ptr<PushLedger> ledger_;
  PushAccumulator deferred_;
  embedding::EmbeddingTable table_;
};

TEST_F(PushGateTest, PushToAPartitionNotOwnedIsRefusedBeforeTheLedgerIsAsked) {
  const uint64_t theirs = KeyOwned(false);
  const Pushed pushed = Push(5, {KeyOwned(true), theirs});
  EXPECT_EQ(pushed.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(pushed.status.message(),
            "key " + std::to_string(theirs) + " of table 'item' is in partition " +
                std::to_string(table_.PartitionOf(theirs)) +
                ", which server 0 does not own at epoch 3");
  EXPECT_EQ(pushed.outcome, PushGate::Outcome::kStopped);
  EXPECT_EQ(ledger_->senders(), 0u) << "a refused push reached the ledger";
  EXPECT_EQ(table_.rows(), 0u);
}

TEST_F(PushGateTest, PushToAPartitionBeingHandedOverIsAskedToRetry) {
  const uint64_t key = KeyOwned(true);
  ownership_.set(table_.PartitionOf(key), PartitionState::kHandedOver);
  const Pushed pushed = Push(5, {key});
  EXPECT_EQ(pushed.status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(pushed.outcome, PushGate::Outcome::kStopped);
  EXPECT_EQ(ledger_->senders(), 0u);
}

// The ownership check comes first: a copy of a push applied here is refused like any push once
// its partition moved (or is moving) away, and skipped as a duplicate while it is served.
TEST_F(PushGateTest, CopyOfAnAppliedPushIsRefusedOnceItsPartitionMoved) {
  const uint64_t key = KeyOwned(true);
  const uint32_t partition = table_.PartitionOf(key);
  ASSERT_TRUE(Push(5, {key}).status.ok());
  const std::vector<float> applied = Row(key);

  ownership_.set(partition, PartitionState::kHandedOver);
  EXPECT_EQ(Push(5, {key}).status.code(), StatusCode::kUnavailable);
  ownership_.set(partition, PartitionState::kNotOwned);
  EXPECT_EQ(Push(5, {key}).status.code(), StatusCode::kFailedPrecondition);

  ownership_.set(partition, PartitionState::kOwned);
  const Pushed copy = Push(5, {key});
  EXPECT_TRUE(copy.status.ok()) << copy.status.ToString();
  EXPECT_EQ(copy.outcome, PushGate::Outcome::kDuplicate);
  EXPECT_EQ(Row(key), applied) << "a copy was applied again";
}

TEST_F(PushGateTest, PushThatFailedToApplyIsAppliedByALaterCopy) {
  const uint64_t key = KeyOwned(true);
  const std::vector<float> grads(Spec().dim, 1.0f);
  wire::PushRequest push;
  push.table = Spec().name;
  push.keys = std::span<const uint64_t>(&key, 1);
  push.gradients = grads;
  push.sender = {kSender, 1};
  {
    PushGate gate(ownership_, *ledger_, deferred_, 5, push, kNoKey);
    ASSERT_TRUE(gate.Check(push.keys, std::vector<uint32_t>{table_.PartitionOf(key)}).ok());
    ASSERT_EQ(gate.outcome(), PushGate::Outcome::kPassed);
    gate.Finish(DataLoss("the disk failed"));
  }
  const Pushed copy = Push(5, {key});
  EXPECT_TRUE(copy.status.ok());
  EXPECT_EQ(copy.outcome, PushGate::Outcome::kPassed);
  EXPECT_EQ(Push(5, {key}).outcome, PushGate::Outcome::kDuplicate);
}

TEST_F(PushGateTest, DeferredPushIsHeldNotApplied) {
  const std::vector<uint64_t> keys = {KeyOwned(true)};
  const Pushed held = Push(8, keys, /*deferred=*/true);
  EXPECT_TRUE(held.status.ok()) << held.status.ToString();
  EXPECT_EQ(held.outcome, PushGate::Outcome::kPassed);
  EXPECT_EQ(table_.rows(), 0u) << "a deferred push reached the rows";
  EXPECT_EQ(deferred_.pending_pushes(), 1u);
  EXPECT_EQ(Push(8, keys, true).outcome, PushGate::Outcome::kDuplicate);
  EXPECT_EQ(deferred_.pending_pushes(), 1u);
  // Its clock applied, a late push of that clock fails to be held, and is not recorded.
  ASSERT_TRUE(deferred_
                  .Apply(1, std::vector<uint32_t>{0}, Combine::kSum,
                         [](const std::string&, std::span<const uint64_t>,
                            std::span<const float>, float) { return Status::Ok(); })
                  .ok());
  const Pushed late = Push(9, keys, true);
  EXPECT_EQ(late.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(late.outcome, PushGate::Outcome::kPassed);
  EXPECT_EQ(Push(9, keys, true).outcome, PushGate::Outcome::kPassed) << "a failed hold was recorded";
}

}  // namespace
}  // namespace ember::ps
