// Look-ahead on a server: hints are queued with a bound, prefetched on the partitions the server
// serves only, and released by the push that names them (or before they ran).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "common/wire.h"
#include "embedding/embedding_table.h"
#include "embedding/rocks_store.h"
#include "ps/server/hint_prefetcher.h"
#include "ps/server/shard_service.h"
#include "tests/test_util.h"

namespace ember::ps {
namespace {

constexpr uint32_t kPartitions = 16;
const Peer kTrainer{PeerRole::kTrainer, "trainer-key-trainer-key-trainer-key-1234"};
const Peer kServer{PeerRole::kServer, "server-a-server-a-server-a-server-a-1234"};

TableSpec Spec() {
  TableSpec spec;
  spec.name = "item";
  spec.dim = 4;
  spec.seed = 3;
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.learning_rate = 0.1f;
  return spec;
}

TEST(HintPrefetcherTest, HoldsAtMostItsCapacityAndRunsHintsInArrivalOrder) {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  std::vector<uint64_t> ran;
  HintPrefetcher prefetcher(
      2,
      [&](QueuedHint& hint) {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return open; });
        ran.push_back(hint.id);
        changed.notify_all();
      },
      [](std::chrono::steady_clock::time_point) {}, Millis(50));
  ASSERT_TRUE(prefetcher.Offer({nullptr, 1, {}, {}}));
  // The worker takes the first and waits in it: two more fit, a third does not.
  for (int i = 0; i < 500 && prefetcher.queued() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(prefetcher.queued(), 0u);
  EXPECT_TRUE(prefetcher.Offer({nullptr, 2, {}, {}}));
  EXPECT_TRUE(prefetcher.Offer({nullptr, 3, {}, {}}));
  EXPECT_FALSE(prefetcher.Offer({nullptr, 4, {}, {}}));
  {
    std::unique_lock lock(mutex);
    open = true;
    changed.notify_all();
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(10), [&] { return ran.size() == 3; }));
  }
  EXPECT_EQ(ran, (std::vector<uint64_t>{1, 2, 3}));
}

TEST(HintPrefetcherTest, ParkedHintsGoBackInOrderAndForgottenOnesNeverRun) {
  std::mutex mutex;
  std::vector<uint64_t> ran;
  HintPrefetcher prefetcher(
      8,
      [&](QueuedHint& hint) {
        std::lock_guard lock(mutex);
        ran.push_back(hint.id);
      },
      [](std::chrono::steady_clock::time_point) {}, Millis(50));
  embedding::EmbeddingTable* const t = nullptr;  // the hints of one table, by id
  prefetcher.Park({t, 1, {}, {}});
  prefetcher.Park({t, 2, {}, {}});
  prefetcher.Park({t, 3, {}, {}});
  EXPECT_TRUE(prefetcher.Forget(t, 2));
  EXPECT_FALSE(prefetcher.Forget(t, 2));
  prefetcher.Unpark();
  for (int i = 0; i < 1000 && prefetcher.hints_run() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::lock_guard lock(mutex);
  EXPECT_EQ(ran, (std::vector<uint64_t>{1, 3}));
}

// A tiered server owning half of the partitions, rows beyond a small budget on disk.
class ServerHintTest : public ::testing::Test {
 protected:
  void SetUp() override {
    embedding::RocksStoreOptions options{dir_.path()};
    options.log_pushes = true;
    auto store = embedding::RocksStore::Open(
        options, {{Spec().name, embedding::EmbeddingTable::PersistedFloatsPerRow(Spec())}});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    budget_ = std::make_unique<embedding::MemoryBudget>(16 * 1024);  // ~800 rows
    ShardStorage storage{store_.get(), budget_.get(), 8 * 1024};
    auto service = ShardService::Create(
        0, {Spec()},
        MakeBalancedRouting(kPartitions, {{0, "tcp://127.0.0.1:1"}, {1, "tcp://127.0.0.1:2"}}, 1),
        storage);
    ASSERT_TRUE(service.ok()) << service.status().ToString();
    service_ = std::move(*service);
    const embedding::EmbeddingTable shape(Spec(), kPartitions);
    const RoutingTable routing = MakeBalancedRouting(
        kPartitions, {{0, "tcp://127.0.0.1:1"}, {1, "tcp://127.0.0.1:2"}}, 1);
    for (uint64_t key = 0; owned_.size() < 4000; ++key) {
      if (routing.owners[shape.PartitionOf(key)] == 0) {
        owned_.push_back(key);
      } else if (not_owned_.size() < 20) {
        not_owned_.push_back(key);
      }
    }
    // Every owned row is created by a push; most of them are evicted to disk.
    ASSERT_TRUE(Push(owned_, 0).ok());
  }
  Status Push(std::span<const uint64_t> keys, uint64_t release_hint,
              const Peer& peer = kTrainer) {
    const std::vector<float> grads(keys.size() * Spec().dim, 0.5f);
    auto reply = wire::DecodeResponse(service_->Handle(
        wire::EncodePushSubset({next_id_++, 1}, "item", keys, grads, Spec().dim, {}, 0,
                               wire::RowFormat::kF32, 0, false, {kSender, next_id_},
                               release_hint),
        peer));
    return reply.ok() ? reply->status : reply.status();
  }
  Status Hint(std::span<const uint64_t> keys, uint64_t hint, const Peer& peer = kTrainer) {
    auto reply = wire::DecodeResponse(service_->Handle(
        wire::EncodeHintSubset({next_id_++, 1}, "item", keys, {}, {hint, kSender}, 30'000), peer));
    return reply.ok() ? reply->status : reply.status();
  }
  TableStats Stats() const { return service_->Stats().tables.at(0); }
  // Waits (bounded) until the prefetch thread pinned `rows`.
  bool PinnedBecomes(uint64_t rows) {
    for (int i = 0; i < 1000; ++i) {
      if (Stats().pinned_rows == rows) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  static constexpr uint64_t kSender = 0x5EED;
  testing::TempDir dir_;
  std::unique_ptr<embedding::RocksStore> store_;
  std::unique_ptr<embedding::MemoryBudget> budget_;
  std::unique_ptr<ShardService> service_;
  std::vector<uint64_t> owned_, not_owned_;
  uint64_t next_id_ = 1;
};

TEST_F(ServerHintTest, AHintPinsItsServedRowsThroughEvictionUntilThePushNamingIt) {
  ASSERT_LT(Stats().resident_rows, owned_.size() / 2) << "the rows should be mostly on disk";
  std::vector<uint64_t> hinted(owned_.begin(), owned_.begin() + 100);
  std::vector<uint64_t> with_foreign = hinted;
  with_foreign.insert(with_foreign.end(), not_owned_.begin(), not_owned_.end());
  const uint64_t rows_before = Stats().rows;
  ASSERT_TRUE(Hint(with_foreign, 7).ok());
  // The keys of partitions this server does not serve are dropped: no row of them appears.
  ASSERT_TRUE(PinnedBecomes(hinted.size())) << "pinned " << Stats().pinned_rows;
  EXPECT_GT(Stats().prefetched_rows, 0u);
  EXPECT_EQ(Stats().rows, rows_before);
  // Pinned rows stay through eviction pressure: pulling them reads nothing from disk.
  std::vector<uint64_t> others(owned_.begin() + 1000, owned_.end());
  ASSERT_TRUE(Push(others, 0).ok());
  const uint64_t misses = Stats().misses;
  auto pulled = wire::DecodeResponse(
      service_->Handle(wire::EncodePull({next_id_++, 1}, "item", hinted), kTrainer));
  ASSERT_TRUE(pulled.ok() && pulled->status.ok());
  EXPECT_EQ(Stats().misses, misses);
  // The push of the batch releases them.
  ASSERT_TRUE(Push(hinted, 7).ok());
  EXPECT_EQ(Stats().pinned_rows, 0u);
  EXPECT_EQ(Stats().pinned_bytes, 0u);
}

TEST_F(ServerHintTest, PinsOfAPartitionThatMovesAwayGoWithItAndLaterHintsOfItAreDropped) {
  std::vector<uint64_t> hinted(owned_.begin(), owned_.begin() + 100);
  ASSERT_TRUE(Hint(hinted, 7).ok());
  ASSERT_TRUE(PinnedBecomes(hinted.size()));
  const embedding::EmbeddingTable shape(Spec(), kPartitions);
  const uint32_t moving = shape.PartitionOf(hinted[0]);
  std::vector<uint64_t> staying, moved;
  for (uint64_t key : hinted) (shape.PartitionOf(key) == moving ? moved : staying).push_back(key);
  service_->Release(moving);  // its move committed: its rows are dropped here
  EXPECT_EQ(Stats().pinned_rows, staying.size());
  // A hint naming it now is answered and pins nothing of it.
  ASSERT_TRUE(Hint(moved, 8).ok());
  ASSERT_TRUE(Hint({staying.data(), 1}, 9).ok());  // runs after it: a marker
  for (int i = 0; i < 1000 && Stats().hinted_keys < hinted.size() + 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(Stats().pinned_rows, staying.size());
  ASSERT_TRUE(Push(staying, 7).ok());
  ASSERT_TRUE(Push({staying.data(), 1}, 9).ok());
  EXPECT_EQ(Stats().pinned_rows, 0u);
  EXPECT_EQ(Stats().pinned_bytes, 0u);
}

TEST_F(ServerHintTest, APushFromAnotherKeyCannotReleaseAHintEvenNamingItsSenderId) {
  const Peer other{PeerRole::kTrainer, "trainer-key-other-other-other-other-1234"};
  std::vector<uint64_t> hinted(owned_.begin(), owned_.begin() + 100);
  ASSERT_TRUE(Hint(hinted, 7).ok());
  ASSERT_TRUE(PinnedBecomes(hinted.size()));
  // The sender id is bound to the first key that pushed as it: the push is refused, and the
  // hint it names is not the other key's to release.
  EXPECT_EQ(Push(hinted, 7, other).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(Stats().pinned_rows, hinted.size());
  ASSERT_TRUE(Push(hinted, 7).ok());
  EXPECT_EQ(Stats().pinned_rows, 0u);
}

TEST_F(ServerHintTest, APushBeforeItsHintRanKeepsTheHintFromPinning) {
  std::vector<uint64_t> hinted(owned_.begin(), owned_.begin() + 50);
  ASSERT_TRUE(Push(hinted, 9).ok());  // its hint is yet to come (or to run)
  ASSERT_TRUE(Hint(hinted, 9).ok());
  ASSERT_TRUE(Hint({owned_.data() + 60, 5}, 10).ok());  // runs after it: a marker
  ASSERT_TRUE(PinnedBecomes(5));
  EXPECT_EQ(Stats().pinned_rows, 5u);
}

TEST_F(ServerHintTest, OnlyTrainersMayHintAndMalformedHintsAreRefused) {
  std::vector<uint64_t> keys(owned_.begin(), owned_.begin() + 10);
  EXPECT_EQ(Hint(keys, 3, kServer).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(Hint(keys, 0).code(), StatusCode::kInvalidArgument);
  auto unknown = wire::DecodeResponse(service_->Handle(
      wire::EncodeHintSubset({next_id_++, 1}, "nope", keys, {}, {4, kSender}, 0), kTrainer));
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->status.code(), StatusCode::kNotFound);
  EXPECT_EQ(Stats().hinted_keys, 0u);
}

}  // namespace
}  // namespace ember::ps
