// The reader role on a live authenticated cluster on loopback: a reader key looks rows up, reads
// the routing table and the cluster's status, and nothing else (no pull that would create a row,
// no push, no trainer registration); read-only clients, with a reader key or a trainer's, take no
// trainer slot and are not waited for by a bsp run.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "common/rpc_channel.h"
#include "common/wire.h"
#include "local/local_cluster.h"

namespace ember {
namespace {

constexpr uint32_t kDim = 4;

class ReaderRoleTest : public ::testing::Test {
 protected:
  void Start(uint32_t trainer_slots, SyncOptions sync = {}) {
    TableSpec spec;
    spec.name = "item";
    spec.dim = kDim;
    spec.seed = 5;
    local::LocalClusterOptions options;
    options.num_servers = 2;
    options.num_partitions = 8;
    options.authenticate = true;
    options.sync = sync;
    options.policy.limits.trainers = trainer_slots;
    cluster_ = std::make_unique<local::LocalCluster>(std::vector<TableSpec>{spec}, options);
    ASSERT_TRUE(cluster_->status().ok()) << cluster_->status().ToString();
    keys_.resize(64);
    std::iota(keys_.begin(), keys_.end(), 1);
  }
  Result<std::unique_ptr<ps::Client>> Reader(const TransportSecurity& security) {
    ps::ClientOptions options;
    options.name = "reader";
    options.register_timeout = Millis(10'000);
    options.read_only = true;
    options.security = security;
    return cluster_->Connect(std::move(options));
  }
  // What the scheduler answers `request` sent with `security`'s key.
  // (The request's id must be 1.)
  Status AskScheduler(const TransportSecurity& security, Frame request) {
    Context context(1, security);
    RpcChannel channel(context, cluster_->scheduler_endpoint(),
                       cluster_->client_security().scheduler_key);
    auto reply = channel.Call(1, std::move(request), Millis(5'000));
    return reply.ok() ? reply->status : reply.status();
  }

  std::unique_ptr<local::LocalCluster> cluster_;
  std::vector<uint64_t> keys_;
};

TEST_F(ReaderRoleTest, AReaderKeyLooksUpReadsStatusAndChangesNothing) {
  Start(/*trainer_slots=*/4);
  auto trainer = cluster_->Connect("trainer");
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  std::vector<float> pulled(keys_.size() * kDim);
  ASSERT_TRUE((*trainer)->Pull("item", keys_, pulled).Wait().ok());

  auto reader = Reader(cluster_->reader_security());
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_TRUE((*reader)->read_only());
  EXPECT_EQ((*reader)->trainer_id(), wire::kReaderId);
  std::vector<float> looked_up(pulled.size());
  ASSERT_TRUE((*reader)->Lookup("item", keys_, looked_up).Wait().ok());
  EXPECT_EQ(looked_up, pulled);
  EXPECT_TRUE((*reader)->scheduler().GetRouting(Millis(5'000)).ok());
  EXPECT_TRUE((*reader)->scheduler().GetClusterStatus(Millis(5'000)).ok());
  EXPECT_TRUE((*reader)->Stats(Millis(5'000)).ok());

  // Refused by the client before anything is sent...
  const std::vector<float> grads(pulled.size(), 1.0f);
  std::vector<float> out(pulled.size());
  const std::vector<uint64_t> fresh = {1000, 1001};
  EXPECT_EQ((*reader)->Push("item", keys_, grads).Wait().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ((*reader)->Pull("item", fresh, {out.data(), fresh.size() * kDim}).Wait().code(),
            StatusCode::kPermissionDenied);
  // ...and by the servers and the scheduler when a reader key sends it anyway.
  Context context(1, cluster_->reader_security());
  for (size_t i = 0; i < cluster_->num_servers(); ++i) {
    RpcChannel channel(context, cluster_->server(i).endpoint(),
                       cluster_->server_security().own.public_key);
    const uint64_t epoch = (*reader)->routing().epoch;
    std::vector<std::pair<uint64_t, Frame>> writes;
    uint64_t id = channel.NextRequestId();
    writes.emplace_back(id, wire::EncodePull({id, epoch}, "item", fresh));
    id = channel.NextRequestId();
    writes.emplace_back(id, wire::EncodePushSubset({id, epoch}, "item", keys_, grads, kDim, {}, 0,
                                                   RowFormat::kF32, 0, false, {}));
    id = channel.NextRequestId();
    writes.emplace_back(id, wire::EncodeHintSubset({id, epoch}, "item", fresh, {}, {1, 9}, 1000));
    for (auto& [request_id, frame] : writes) {
      auto reply = channel.Call(request_id, std::move(frame), Millis(5'000));
      ASSERT_TRUE(reply.ok()) << reply.status().ToString();
      EXPECT_EQ(reply->status.code(), StatusCode::kPermissionDenied) << reply->status.ToString();
    }
  }
  const Status registered = AskScheduler(cluster_->reader_security(),
                                         wire::EncodeRegisterTrainer({1, 0}, "trainer-x"));
  EXPECT_EQ(registered.code(), StatusCode::kPermissionDenied) << registered.ToString();
  EXPECT_NE(registered.message().find("needs the role trainer"), std::string::npos);
  EXPECT_EQ(AskScheduler(cluster_->reader_security(), wire::EncodeDrain({1, 0}, 0)).code(),
            StatusCode::kPermissionDenied);

  // The rows are as they were, and the fresh keys have none.
  std::vector<float> after(pulled.size());
  ASSERT_TRUE((*trainer)->Lookup("item", keys_, after).Wait().ok());
  EXPECT_EQ(after, pulled);
  std::vector<float> missing(fresh.size() * kDim);
  std::vector<uint8_t> found(fresh.size(), 1);
  ASSERT_TRUE(
      (*reader)->Lookup("item", fresh, missing, MissingRows::kFlag, found).Wait().ok());
  EXPECT_EQ(found, std::vector<uint8_t>(fresh.size(), 0));
}

TEST_F(ReaderRoleTest, ReadOnlyClientsTakeNoTrainerSlot) {
  Start(/*trainer_slots=*/1);
  auto trainer = cluster_->Connect("trainer");
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  // The one slot is taken: another trainer is refused, readers are not (a trainer key's
  // read-only client too).
  auto second = cluster_->Connect("second-trainer");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kResourceExhausted) << second.status().ToString();
  for (int i = 0; i < 3; ++i) {
    auto reader = Reader(i == 0 ? cluster_->trainer_security() : cluster_->reader_security());
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    std::vector<float> rows(keys_.size() * kDim);
    EXPECT_TRUE((*reader)->Lookup("item", keys_, rows).Wait().ok());
  }
  // And the trainer still works.
  std::vector<float> rows(keys_.size() * kDim);
  EXPECT_TRUE((*trainer)->Pull("item", keys_, rows).Wait().ok());
}

TEST_F(ReaderRoleTest, ABspRunDoesNotWaitForReaders) {
  SyncOptions sync;
  sync.mode = SyncMode::kBsp;
  sync.trainers = 1;
  Start(/*trainer_slots=*/4, sync);
  auto reader = Reader(cluster_->reader_security());
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto trainer = cluster_->Connect("trainer");
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  // The only trainer's clocks are granted at once: the reader is no member to wait for.
  for (uint64_t clock = 1; clock <= 3; ++clock) {
    auto grant = (*trainer)->scheduler().ReportClock((*trainer)->trainer_id(), clock,
                                                     Millis(5'000));
    ASSERT_TRUE(grant.ok()) << grant.status().ToString();
  }
}

}  // namespace
}  // namespace ember
